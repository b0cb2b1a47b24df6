# Raw files of the downloaded datasets (registry entries with source.kind: download).
# One job per raw file: an interrupted run keeps the files already verified and fetches only the missing ones.
# Each job streams to a temporary file, checks the sha256 (registry or config/datasets.lock.yaml) and renames it
# into <raw cache>/<dataset>/<file> (data/raw, or $FORESTBENCH_RAW); nothing partial is left behind. Unavailable datasets (no public source, no
# local_path) are never requested; common.smk prints their names.
# fetch and fetch_all are local rules (common.smk): compute nodes of many clusters have no network, so under a
# SLURM profile the Snakemake process on the login node runs them itself and submits only what comes after.


def local_source_of(wildcards):
    """For a dataset supplied by local_path: data/registry/<dataset>.local.json, the sha256 of its local files,
    rewritten only when their content changes, so that an edited local file reruns its fetch and everything built
    from it. Built once, by the Snakemake process: a local file that differs from the sha256 recorded in the lock
    file stops the run here, before any job, with the command that accepts it."""
    entry = PLAN.registry.get(wildcards.dataset)
    if entry is None or not entry.get("local_path") or entry["source"]["kind"] != "download":
        return []
    path = os.path.join("data", "registry", f"{wildcards.dataset}.local.json")
    if not _MAIN:
        return [path]
    if wildcards.dataset not in _LOCAL_SIGNATURES:
        from forestbench.datasets.download import ShaLock, local_signature
        from forestbench.errors import ForestbenchError

        try:
            _LOCAL_SIGNATURES[wildcards.dataset] = str(
                local_signature(wildcards.dataset, entry, ShaLock(), registry=_REGISTRY_PATH)
            )
        except ForestbenchError as exc:
            raise WorkflowError(str(exc))
    return [_LOCAL_SIGNATURES[wildcards.dataset]]


_LOCAL_SIGNATURES = {}
_REGISTRY_PATH = config.get("datasets_registry", "config/datasets.yaml")


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
        raw_dir=lambda wildcards, output: os.path.dirname(os.path.dirname(output[0])),
    retries: 0  # the downloader retries with back-off itself
    shell:
        "python -m forestbench datasets --registry {params.registry} --raw-dir {params.raw_dir:q} "
        "fetch {wildcards.dataset} --file {wildcards.filename} > {log} 2>&1 || python -m forestbench.joblog {log} $?"


rule fetch_all:
    """Download and verify the raw files of every available dataset of the registry (`snakemake fetch_all`)."""
    input:
        all_raw_files(),
