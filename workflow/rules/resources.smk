# Resource requests of every rule, from the dataset's registry shape, the variant's parameters and Snakemake's
# `attempt` (a job retried after OUT_OF_MEMORY / TIMEOUT asks `attempt` times more). Models: forestbench.resources.
from forestbench import resources as fbres
from forestbench.datasets.registry import get_entry as _registry_entry


def _shape(dataset):
    return _registry_entry(PLAN.registry, dataset).get("shape")


def _sparse(dataset):
    return fbres.is_sparse_entry(_registry_entry(PLAN.registry, dataset))


def _costs(wildcards):
    # the method's own cost hook (forestbench.methods), with the tuning work of a tuned variant
    from forestbench.plan import variant_cost

    exp = PLAN.experiments[wildcards.experiment]
    variant = exp.variant(wildcards.variant)
    return variant_cost(exp, variant, _shape(wildcards.dataset), _sparse(wildcards.dataset))


def _fit_requests(wildcards, attempt, which=0):
    exp = PLAN.experiments[wildcards.experiment]
    return fbres.fit_requests(
        _shape(wildcards.dataset),
        exp.variant(wildcards.variant).params,
        attempt,
        cost=_costs(wildcards)[which],
        threads=exp.threads,
        sparse=_sparse(wildcards.dataset),
    )


def tune_mem_mb(wildcards, attempt):
    return _fit_requests(wildcards, attempt, 1)["mem_mb"]


def tune_runtime(wildcards, attempt):
    return _fit_requests(wildcards, attempt, 1)["runtime"]


def fit_mem_mb(wildcards, attempt):
    return _fit_requests(wildcards, attempt)["mem_mb"]


def fit_runtime(wildcards, attempt):
    return _fit_requests(wildcards, attempt)["runtime"]


def fit_threads(wildcards):
    # fixed by the configuration (experiment `threads`, else the global `threads`), never by the machine, so
    # that timings are comparable; the fit command pins the BLAS/OpenMP pools to the same number
    return PLAN.experiments[wildcards.experiment].threads


def fit_slurm_extra(wildcards):
    # timing experiments get whole nodes on a cluster (ignored when running locally)
    return "--exclusive" if PLAN.experiments[wildcards.experiment].config.get("timing") else None


def data_mem_mb(wildcards, attempt):
    return fbres.data_requests(_shape(wildcards.dataset), attempt, sparse=_sparse(wildcards.dataset))["mem_mb"]


def data_runtime(wildcards, attempt):
    return fbres.data_requests(_shape(wildcards.dataset), attempt, sparse=_sparse(wildcards.dataset))["runtime"]


def light_mem_mb(wildcards, attempt):
    return 1000 * attempt


def light_runtime(wildcards, attempt):
    return 10 * attempt
