# Raw files of the downloaded datasets (registry entries with source.kind: download).
# One job per raw file: an interrupted run keeps the files already verified and fetches only the missing ones.
# Each job streams to a temporary file, checks the sha256 (registry or config/datasets.lock.yaml) and renames it
# into <raw cache>/<dataset>/<file> (data/raw, or $FORESTBENCH_RAW); nothing partial is left behind. Unavailable datasets (no public source, no
# local_path) are never requested; common.smk prints their names.
# fetch and fetch_all are local rules (common.smk): compute nodes of many clusters have no network, so under a
# SLURM profile the Snakemake process on the login node runs them itself and submits only what comes after.


rule fetch:
    input:
        local_source_of,
    output:
        os.path.join(RAW_ROOT, "{dataset}", "{filename}"),
    wildcard_constraints:
        filename=r"[^/]+",
    conda:
        "../../envs/forestbench.yaml"
    log:
        "results/logs/fetch/{dataset}/{filename}.log",
    params:
        registry=config.get("datasets_registry", "config/datasets.yaml"),
        raw_dir=raw_root_of,
    retries: 0  # the downloader retries with back-off itself
    shell:
        "python -m forestbench datasets --registry {params.registry} --raw-dir {params.raw_dir:q} "
        "fetch {wildcards.dataset} --file {wildcards.filename} > {log} 2>&1 || python -m forestbench.workflow.joblog {log} $?"


rule fetch_all:
    """Download and verify the raw files of every available dataset of the registry (`snakemake fetch_all`)."""
    input:
        all_raw_files(),
