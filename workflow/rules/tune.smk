# A tuned variant with a time budget (`tune.budget`) first gets a `budget` job: it measures the reference time T and
# turns the budget into a stage cap per candidate, stored in budget.json and reused by every later run.
# Hyper-parameter selection spread over jobs (method entries with `tune: {mode: dag}`): per (dataset, repeat), one
# `tune` job per chunk of candidates scores them on validation rows of the training part, `select` keeps the best,
# and the variant's fit job refits it (fit.smk). Finished candidates are stored one by one under candidates/, so a
# killed chunk or a grown grid recomputes only what is missing. Tuning with `mode: inner` needs no rule here.


rule budget:
    input:
        prepared="data/prepared/{dataset}.npz",
        split=budget_split,
    output:
        "results/tuning/{experiment}/{dataset}/{variant}/budget.json",
    conda:
        "../../envs/forestbench.yaml"
    log:
        "results/logs/budget/{experiment}/{dataset}/{variant}.log",
    params:
        spec=budget_spec_json,
    threads: fit_threads
    resources:
        mem_mb=tune_mem_mb,
        runtime=budget_runtime,
    shell:
        "OMP_NUM_THREADS={threads} OPENBLAS_NUM_THREADS={threads} MKL_NUM_THREADS={threads} "
        "python -m forestbench budget --spec {params.spec:q} --prepared {input.prepared} --split {input.split} "
        "--out {output} > {log} 2>&1 || python -m forestbench.workflow.joblog {log} $?"


rule tune:
    input:
        unpack(budget_of_chunk),
        prepared="data/prepared/{dataset}.npz",
        split=split_of_job,
    output:
        "results/tuning/{experiment}/{dataset}/{variant}/repeat-{repeat}/chunk-{chunk}.json",
    wildcard_constraints:
        chunk=r"\d+",
    conda:
        "../../envs/forestbench.yaml"
    log:
        "results/logs/tune/{experiment}/{dataset}/{variant}/repeat-{repeat}/chunk-{chunk}.log",
    params:
        spec=tune_spec_json,
        cache=candidates_dir,
        budget=budget_arg,
    threads: fit_threads
    resources:
        mem_mb=tune_mem_mb,
        runtime=tune_runtime,
    shell:
        "OMP_NUM_THREADS={threads} OPENBLAS_NUM_THREADS={threads} MKL_NUM_THREADS={threads} "
        "python -m forestbench tune --spec {params.spec:q} --prepared {input.prepared} --split {input.split} "
        "--cache {params.cache} {params.budget} --out {output} > {log} 2>&1 || python -m forestbench.workflow.joblog {log} $?"


rule select:
    input:
        chunks_of_job,
    output:
        "results/tuning/{experiment}/{dataset}/{variant}/repeat-{repeat}/selected.json",
    conda:
        "../../envs/forestbench.yaml"
    log:
        "results/logs/select/{experiment}/{dataset}/{variant}/repeat-{repeat}.log",
    params:
        spec=run_spec_json,
    resources:
        mem_mb=light_mem_mb,
        runtime=light_runtime,
    shell:
        "python -m forestbench select --spec {params.spec:q} --chunks {input} --out {output} "
        "> {log} 2>&1 || python -m forestbench.workflow.joblog {log} $?"
