# Collect the run records of an experiment into its tidy scores table, then summarise it.


rule collect:
    input:
        records_of,
    output:
        "results/{experiment}/scores.csv",
    log:
        "results/logs/collect/{experiment}.log",
    resources:
        mem_mb=light_mem_mb,
        runtime=light_runtime,
    shell:
        "{PYTHON} -m forestbench collect {wildcards.experiment} --records {input} --out {output} > {log} 2>&1"


rule summary:
    input:
        "results/{experiment}/scores.csv",
    output:
        "results/{experiment}/summary.md",
    log:
        "results/logs/summary/{experiment}.log",
    resources:
        mem_mb=light_mem_mb,
        runtime=light_runtime,
    shell:
        "{PYTHON} -m forestbench summary {input} --out {output} > {log} 2>&1"
