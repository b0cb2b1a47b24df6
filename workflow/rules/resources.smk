# Resource requests of every rule, from the dataset's registry shape, the variant's parameters and Snakemake's
# `attempt` (a job retried after OUT_OF_MEMORY / TIMEOUT asks `attempt` times more). Models: forestbench.resources.
from forestbench import resources as fbres
from forestbench.datasets.registry import get_entry as _registry_entry


def _shape(dataset):
    return _registry_entry(PLAN.registry, dataset).get("shape")


def _sparse(dataset):
    return fbres.is_sparse_entry(_registry_entry(PLAN.registry, dataset))


def _costs(wildcards):
    # the method's own cost hook (forestbench.methods), with the tuning work of a tuned variant, on the rows a fit
    # sees (the protocol's training part), as `forestbench plan` charges it
    from forestbench.plan import training_shape, variant_cost

    exp = PLAN.experiments[wildcards.experiment]
    variant = exp.variant(wildcards.variant)
    shape = training_shape(_shape(wildcards.dataset), PLAN.protocol_spec(wildcards.dataset, exp.protocol))
    return variant_cost(exp, variant, shape, _sparse(wildcards.dataset))


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


def _timing(wildcards):
    return bool(PLAN.experiments[wildcards.experiment].config.get("timing"))


def fit_timing_slot(wildcards):
    # 1 for the fit jobs of a timing experiment: locally only one slot exists (see the Snakefile), so they run alone
    return 1 if _timing(wildcards) else 0


def fit_priority(wildcards):
    # timing experiments: repeat-major order, so that a drift of the machine's load over the run hits every variant
    # (layout) of a repeat alike instead of one variant's repeats all at once
    return -int(wildcards.repeat) if _timing(wildcards) else 0


def data_mem_mb(wildcards, attempt):
    return fbres.data_requests(_shape(wildcards.dataset), attempt, sparse=_sparse(wildcards.dataset))["mem_mb"]


def data_runtime(wildcards, attempt):
    return fbres.data_requests(_shape(wildcards.dataset), attempt, sparse=_sparse(wildcards.dataset))["runtime"]


def light_mem_mb(wildcards, attempt):
    return 1000 * attempt


def light_runtime(wildcards, attempt):
    return 10 * attempt
