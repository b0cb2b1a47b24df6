# Datasets: prepare the canonical .npz, then draw the splits of a protocol.


rule prepare:
    input:
        raw=raw_inputs,  # download.smk: the verified raw files of a downloaded dataset (none for embedded ones)
        entry=registry_entry,  # common.smk: the dataset's registry entry, rewritten only when it changes
    output:
        "data/prepared/{dataset}.npz",
    conda:
        "../../envs/forestbench.yaml"
    log:
        "results/logs/prepare/{dataset}.log",
    resources:
        mem_mb=data_mem_mb,
        runtime=data_runtime,
    params:
        raw_dir=raw_root_of,
    shell:
        "python -m forestbench prepare {wildcards.dataset} --entry {input.entry} --raw-dir {params.raw_dir:q} "
        "--out {output} > {log} 2>&1 || python -m forestbench.workflow.joblog {log} $?"


rule split:
    input:
        "data/prepared/{dataset}.npz",
    output:
        npz="data/splits/{dataset}/{protocol}.npz",
        manifest="data/splits/{dataset}/{protocol}.json",
    conda:
        "../../envs/forestbench.yaml"
    log:
        "results/logs/split/{dataset}/{protocol}.log",
    resources:
        mem_mb=data_mem_mb,
        runtime=data_runtime,
    params:
        protocol=protocol_json,
    shell:
        "python -m forestbench split {wildcards.dataset} --prepared {input} "
        "--protocol {params.protocol:q} --out {output.npz} > {log} 2>&1 || python -m forestbench.workflow.joblog {log} $?"
