# Datasets: prepare the canonical .npz, then draw the splits of a protocol.


rule prepare:
    output:
        "data/prepared/{dataset}.npz",
    log:
        "results/logs/prepare/{dataset}.log",
    resources:
        mem_mb=data_mem_mb,
        runtime=data_runtime,
    params:
        registry=config.get("datasets_registry", "config/datasets.yaml"),
    shell:
        "{PYTHON} -m forestbench prepare {wildcards.dataset} --registry {params.registry} "
        "--out {output} > {log} 2>&1"


rule split:
    input:
        "data/prepared/{dataset}.npz",
    output:
        npz="data/splits/{dataset}/{protocol}.npz",
        manifest="data/splits/{dataset}/{protocol}.json",
    log:
        "results/logs/split/{dataset}/{protocol}.log",
    resources:
        mem_mb=data_mem_mb,
        runtime=data_runtime,
    params:
        protocol=protocol_json,
    shell:
        "{PYTHON} -m forestbench split {wildcards.dataset} --prepared {input} "
        "--protocol {params.protocol:q} --out {output.npz} > {log} 2>&1"
