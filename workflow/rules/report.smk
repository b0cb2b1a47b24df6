# Collect the run records of an experiment into its tidy scores table, build its report (tables, figures,
# comparison with the published numbers), then the front page linking every experiment.


rule collect:
    input:
        records_of,
        # what the configuration expects of each run: records of a superseded configuration are left out
        expected=expected_runs_of,
    output:
        scores="results/{experiment}/scores.csv",
        selection="results/{experiment}/selection.csv",
    conda:
        "../../envs/forestbench.yaml"
    log:
        "results/logs/collect/{experiment}.log",
    resources:
        mem_mb=light_mem_mb,
        runtime=light_runtime,
    params:
        # every record of the experiment's full plan that exists (inputs are only those selected to run)
        records=all_records_of,
    shell:
        "python -m forestbench collect {wildcards.experiment} --records {params.records} --existing-only "
        "--expected {input.expected} --out {output.scores} --selection-out {output.selection} > {log} 2>&1 || python -m forestbench.workflow.joblog {log} $?"


rule report_experiment:
    input:
        scores="results/{experiment}/scores.csv",
        selection="results/{experiment}/selection.csv",
    output:
        "results/{experiment}/report/manifest.json",
    conda:
        "../../envs/forestbench.yaml"
    log:
        "results/logs/report/{experiment}.log",
    params:
        experiments=experiments_json,
        outdir=subpath(output[0], parent=True),
    resources:
        mem_mb=light_mem_mb,
        runtime=light_runtime,
    shell:
        "python -m forestbench report experiment --scores {input.scores} --selection {input.selection} --experiment {wildcards.experiment} "
        "--experiments-json {params.experiments:q} --reference-dir config/reference --out {params.outdir} "
        "> {log} 2>&1 || python -m forestbench.workflow.joblog {log} $?"


rule report_index:
    input:
        report_manifests,
    output:
        html="results/report/index.html",
        md="results/report/index.md",
    conda:
        "../../envs/forestbench.yaml"
    log:
        "results/logs/report/index.log",
    resources:
        mem_mb=light_mem_mb,
        runtime=light_runtime,
    params:
        experiments=all_experiments_json,
    shell:
        "python -m forestbench report index --experiments-json {params.experiments:q} --results results "
        "--out results/report > {log} 2>&1 || python -m forestbench.workflow.joblog {log} $?"
