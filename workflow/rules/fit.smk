# One job per (experiment, dataset, variant, repeat). On a cluster the SLURM profile puts these jobs in group "fit"
# (`groups: [fit=fit]`) and `group-components: [fit=N]` bundles N of them into one SLURM job. The group is set by
# the profile, not here, because a grouped rule cannot be submitted as a SLURM array (workflow/profiles/slurm-array).


rule fit:
    input:
        unpack(selected_of_job),  # tune.smk: the selected parameters of a DAG-tuned variant
        prepared="data/prepared/{dataset}.npz",
        split=split_of_job,
    output:
        "results/runs/{experiment}/{dataset}/{variant}/repeat-{repeat}.json",
    conda:
        "../../envs/forestbench.yaml"
    log:
        "results/logs/fit/{experiment}/{dataset}/{variant}/repeat-{repeat}.log",
    params:
        spec=run_spec_json,
        selected=selected_arg,
    threads: fit_threads
    # timing experiments run repeat by repeat: every variant (input layout, ...) of repeat r before repeat r + 1
    priority: fit_priority
    resources:
        attempt=fit_attempt,
        mem_mb=fit_mem_mb,
        runtime=fit_runtime,
        slurm_extra=fit_slurm_extra,
        timing_slot=fit_timing_slot,
    shell:
        "OMP_NUM_THREADS={threads} OPENBLAS_NUM_THREADS={threads} MKL_NUM_THREADS={threads} "
        "python -m forestbench fit --spec {params.spec:q} --prepared {input.prepared} --split {input.split} "
        "--attempt {resources.attempt} --mem-mb {resources.mem_mb} {params.selected} --out {output} "
        "> {log} 2>&1 || python -m forestbench.workflow.joblog {log} $?"
