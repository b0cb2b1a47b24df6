# One job per (experiment, dataset, variant, repeat). On a cluster, --group-components fit=N bundles N of them
# into one submitted job (see workflow/profiles/slurm).


rule fit:
    input:
        prepared="data/prepared/{dataset}.npz",
        split=split_of_job,
    output:
        "results/runs/{experiment}/{dataset}/{variant}/repeat-{repeat}.json",
    log:
        "results/logs/fit/{experiment}/{dataset}/{variant}/repeat-{repeat}.log",
    params:
        spec=run_spec_json,
    group:
        "fit"
    threads: lambda wildcards: PLAN.experiments[wildcards.experiment].threads
    resources:
        # the attempt number reaches the command (and the run record) through a resource
        attempt=lambda wildcards, attempt: attempt,
        mem_mb=lambda wildcards, attempt: 2000 * attempt,
    shell:
        "{PYTHON} -m forestbench fit --spec {params.spec:q} --prepared {input.prepared} --split {input.split} "
        "--attempt {resources.attempt} --mem-mb {resources.mem_mb} --out {output} > {log} 2>&1"
