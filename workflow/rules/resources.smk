# Resource requests of every rule, from the dataset's registry shape, the variant's parameters and Snakemake's
# `attempt` (a job retried after OUT_OF_MEMORY / TIMEOUT asks `attempt` times more). Models: forestbench.workflow.resources.
import sys

from forestbench.workflow import resources as fbres
from forestbench.datasets.registry import get_entry as _registry_entry


def _shape(dataset):
    return _registry_entry(PLAN.registry, dataset).get("shape")


def _sparse(dataset):
    return fbres.is_sparse_entry(_registry_entry(PLAN.registry, dataset))


_COSTS = {}  # (experiment, dataset, variant) -> variant_cost, computed once per Snakemake process


def _costs(wildcards):
    # the method's own cost hook (forestbench.workflow.methods), with the tuning work of a tuned variant, on the rows a fit
    # sees (the protocol's training part), as `forestbench plan` charges it. The same for every repeat, chunk,
    # attempt and resource of a variant, and a tuned variant's sums over its whole grid: computed once (without the
    # cache it was half of the thesis dry run's CPU time, benchmarks/bench_dag.py)
    key = (wildcards.experiment, wildcards.dataset, wildcards.variant)
    if key not in _COSTS:
        from forestbench.workflow.plan import training_shape, variant_cost

        exp = PLAN.experiments[wildcards.experiment]
        variant = exp.variant(wildcards.variant)
        shape = training_shape(_shape(wildcards.dataset), PLAN.protocol_spec(wildcards.dataset, exp.protocol))
        task = _registry_entry(PLAN.registry, wildcards.dataset).get("task")
        _COSTS[key] = variant_cost(exp, variant, shape, _sparse(wildcards.dataset), task)
    return _COSTS[key]


# Partition limits (forestbench.workflow.resources.Limits; environment variables FORESTBENCH_MAX_MEM_MB and
# FORESTBENCH_MAX_RUNTIME_MIN, defaults 256 GB and 48 h): a request beyond them is capped there, with a warning
# naming the job, rather than submitted for SLURM to refuse or to keep pending forever.
_LIMITS = fbres.limits_from_env()
_LIMITS_NAMED = "the partition limits (FORESTBENCH_MAX_MEM_MB, FORESTBENCH_MAX_RUNTIME_MIN)"
# Locally, every job holds its mem_mb request from a pool, this machine's physical memory unless `--resources
# mem_mb=N` sets another, so that fits whose requests together exceed it never start side by side (two DTE cascades
# on enron peak at 13-17 GB each). Snakemake lowers a request above the pool to the pool, so such a job runs with
# nothing else holding memory; the cap below does the same and says so, naming the job. Cluster executors submit
# every job with its own request.
if workflow.local_exec:
    if "mem_mb" not in workflow.global_resources:
        workflow.register_resource("mem_mb", fbres.machine_memory_mb())
    _pool = workflow.global_resources["mem_mb"]
    _LIMITS = fbres.local_limits(_LIMITS, getattr(_pool, "value", _pool))
    _LIMITS_NAMED += " and the local memory pool (this machine's memory, or --resources mem_mb)"
_WARNED = set()
_RECORDED = {}  # (experiment, dataset, variant) -> RecordedFit, read once per Snakemake process


def _recorded(wildcards):
    # the fit's own earlier run records with the same parameters and rows (forestbench.workflow.plan): the time request
    # covers RUNTIME_MARGIN x their mean wall time, and the memory request MEM_MARGIN x their largest peak, as well
    # as the model's estimates, as `forestbench plan` charges them
    from forestbench.workflow.plan import recorded_fit, training_shape

    key = (wildcards.experiment, wildcards.dataset, wildcards.variant)
    if key in _RECORDED:
        return _RECORDED[key]
    exp = PLAN.experiments[wildcards.experiment]
    shape = _shape(wildcards.dataset)
    fit_shape = training_shape(shape, PLAN.protocol_spec(wildcards.dataset, exp.protocol))
    rows = fit_shape.get("n") if fit_shape is not shape and fit_shape else None
    _RECORDED[key] = recorded_fit("results", exp, wildcards.dataset, exp.variant(wildcards.variant), rows)
    return _RECORDED[key]


def _fit_requests(wildcards, attempt, which=0):
    exp = PLAN.experiments[wildcards.experiment]
    recorded = _recorded(wildcards) if which == 0 else None
    request = fbres.fit_requests(
        _shape(wildcards.dataset),
        exp.variant(wildcards.variant).params,
        attempt,
        cost=_costs(wildcards)[which],
        threads=exp.threads,
        sparse=_sparse(wildcards.dataset),
        recorded_s=recorded.wall_s if recorded else None,
        recorded_mb=recorded.peak_mb if recorded else None,
    )
    kind = "fit" if which == 0 else "tune"
    return _capped(f"{kind} {wildcards.experiment}/{wildcards.dataset}/{wildcards.variant}", attempt, request)


def _capped(label, attempt, request):
    over = _LIMITS.exceeded(request)
    if over and (label, attempt) not in _WARNED:
        _WARNED.add((label, attempt))
        print(f"forestbench: {label} attempt {attempt}: {'; '.join(over)}, capped at {_LIMITS_NAMED}; "
              "`python -m forestbench plan` lists every such job (`--max-mem-gb` for a local pool)", file=sys.stderr)
    return _LIMITS.cap(request)


_BUDGETS = {}  # (experiment, dataset, variant) -> budget_cost, computed once per Snakemake process


def budget_runtime(wildcards, attempt):
    # the budget job times the reference and every candidate of the grid (forestbench.workflow.plan.budget_cost):
    # on enron, st-gbrt's 490 candidates of 53 trees a stage take tens of minutes, where one chunk takes a few
    key = (wildcards.experiment, wildcards.dataset, wildcards.variant)
    if key not in _BUDGETS:
        from forestbench.workflow.plan import budget_cost, training_shape

        exp = PLAN.experiments[wildcards.experiment]
        shape = training_shape(_shape(wildcards.dataset), PLAN.protocol_spec(wildcards.dataset, exp.protocol))
        task = _registry_entry(PLAN.registry, wildcards.dataset).get("task")
        _BUDGETS[key] = budget_cost(exp, exp.variant(wildcards.variant), shape, _sparse(wildcards.dataset), task)
    exp = PLAN.experiments[wildcards.experiment]
    request = fbres.fit_requests(_shape(wildcards.dataset), exp.variant(wildcards.variant).params, attempt,
                                 cost=_BUDGETS[key], threads=exp.threads, sparse=_sparse(wildcards.dataset))
    budget = _capped(f"budget {'/'.join(key)}", attempt, request)["runtime"]
    return max(budget, tune_runtime(wildcards, attempt))


def tune_mem_mb(wildcards, attempt):
    return _fit_requests(wildcards, attempt, 1)["mem_mb"]


def tune_runtime(wildcards, attempt):
    return _fit_requests(wildcards, attempt, 1)["runtime"]


def fit_mem_mb(wildcards, attempt):
    return _fit_requests(wildcards, attempt)["mem_mb"]


def fit_runtime(wildcards, attempt):
    return _fit_requests(wildcards, attempt)["runtime"]


def fit_attempt(wildcards, attempt):
    # the attempt number reaches the command (and the run record) through a resource
    return attempt


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


def _data_requests(wildcards, attempt):
    request = fbres.data_requests(_shape(wildcards.dataset), attempt, sparse=_sparse(wildcards.dataset))
    return _capped(f"data job of {wildcards.dataset}", attempt, request)


def data_mem_mb(wildcards, attempt):
    return _data_requests(wildcards, attempt)["mem_mb"]


def data_runtime(wildcards, attempt):
    return _data_requests(wildcards, attempt)["runtime"]


def light_mem_mb(wildcards, attempt):
    return 1000 * attempt


def light_runtime(wildcards, attempt):
    return 10 * attempt
