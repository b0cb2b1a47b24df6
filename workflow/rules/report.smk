# Collect the run records of an experiment into its tidy scores table, then summarise it.


rule collect:
    input:
        records_of,
    output:
        "results/{experiment}/scores.csv",
    conda:
        "../../envs/forestbench.yaml"
    log:
        "results/logs/collect/{experiment}.log",
    params:
        # every record of the experiment's full plan that exists (inputs are only those selected to run)
        records=all_records_of,
    shell:
        "python -m forestbench collect {wildcards.experiment} --records {params.records} --existing-only "
        "--out {output} > {log} 2>&1"


rule summary:
    input:
        "results/{experiment}/scores.csv",
    output:
        "results/{experiment}/summary.md",
    conda:
        "../../envs/forestbench.yaml"
    log:
        "results/logs/summary/{experiment}.log",
    shell:
        "python -m forestbench summary {input} --out {output} > {log} 2>&1"
