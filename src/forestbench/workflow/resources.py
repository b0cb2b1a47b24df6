"""Resource requests (memory, wall time, threads) of the workflow's jobs, as pure functions of a dataset's shape.

The Snakemake rules call these from their ``resources:`` callables, e.g.
``mem_mb=lambda wc, attempt: resources.mem_mb(n, p, d, attempt, n_estimators=100)``, so that on a cluster every job
asks for what its dataset needs, and a job killed for memory or time (SLURM states OUT_OF_MEMORY / TIMEOUT) is
resubmitted by ``--retries`` with ``attempt`` times the first request.

The models below are deliberately simple, stated, upper-bound-ish estimates; ``forestbench plan`` uses the same
runtime model when no run records exist yet, and recorded times otherwise; a fit's requests also cover what its
own earlier runs recorded (mean wall time, largest peak resident memory).

Memory model (MB, before the safety factor)::

    BASE_MB                                   interpreter, numpy/scipy/scikit-learn, the Snakemake job step
  + inputs    dense: 12 bytes per cell        float64 original + float32 copy the tree builders work on
              sparse: 2 x 12 bytes per stored value (CSR + CSC copies, value + index)
  + outputs   16 bytes per (sample, output)   float64 targets and one working copy
  + trees     n_estimators x nodes x (NODE_BYTES + 8 * d * n_classes)
              nodes = 2 n / min_samples_leaf (a fully grown tree); the leaf values dominate for many outputs,
              which is exactly the cost the output projections remove

Runtime model (seconds, one thread)::

    C_FIT * n_estimators * k * n * log2(n) * (1 + d / D_HALF)       k = candidate features per split

``C_FIT`` and ``D_HALF`` were measured with scikit-learn's RandomForestRegressor (sort-based splitter, the slower
of random forests and extra trees) on a 2-core machine: C = 0.9e-7 to 1.1e-7 s, and the cost grew from d=1 to
d=64 as 1 + d/32.  Sparse inputs replace ``k`` by the stored values per row it reaches, and add
``SPARSE_NODE_FEATURE_S`` per candidate feature and node (each one drawn is scanned in the node).  Prediction is
charged as
``PREDICT_FRACTION`` of the fit.  A depth or leaf cap (stumps, boosting) replaces ``log2 n`` by the capped number
of levels; an output projection charges the split search for ``q`` outputs instead of ``d``.

Check against published times (thesis section 5.3.5, delicious, n=12920, p=500, d=983, 100 trees, k=22): the thesis
measured 3348 s for the plain forest and 236 / 311 / 1088 s with Gaussian projections q = 1 / 25 / 250; the model
gives 1847 / 60 / 104 / 513 s, i.e. 1.8x to 4x less (the thesis machine is from 2014, and the model ignores fixed
per-tree costs). The runtime request's safety factor (3x) and the ``attempt`` scaling of retries cover that gap;
``forestbench plan`` prefers recorded times as soon as some runs exist.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from forestbench._label_layout import grows_sparse

#: memory of a fit process before it touches data: Python, numpy, scipy, scikit-learn, forestbench and the
#: Snakemake job step that SLURM runs around it (RSS measured ~350 MB; rounded up)
BASE_MB = 500
#: bytes per tree node besides its leaf values (feature, threshold, children, impurity, counts)
NODE_BYTES = 64
#: seconds per (tree x candidate feature x sample x log2 samples), one thread, sort-based splitter
C_FIT = 1.5e-7
#: outputs at which the per-split impurity bookkeeping doubles the cost of a split
D_HALF = 32.0
#: outputs a dense split search would scan for the cost of the sparse criterion per label of a row, as this model
#: charges the sparse inputs of those sets (1 % density) with scikit-learn's rule for constant features: our random
#: forest on the original labels of delicious (12 920 rows, 983 labels, 19 per row, 100 trees) took 80 s of CPU,
#: 6.4 outputs per label, and 161 s with our rule (5.5 with SPARSE_CONSTANT_RULE_FACTOR); of corel5k (4 500 rows,
#: 374 labels, 3.5 per row) 6.6 s, 2.7 per label
SPARSE_CRITERION_COST = 6.0
#: sparse inputs, seconds per (candidate feature x node x (1 + outputs / D_HALF)) per tree: what every feature drawn
#: at a node costs besides the stored values it holds there (its values in the node found and scanned, even where
#: few fall). The stored values alone (``stored_per_row``) cap k at a few features and charged every k alike: our
#: random forest on the real delicious (12 920 rows, 500 word indicators at 3.7 %, scikit-learn's rule for
#: constant features) took 0.35 / 1.21 / 5.6 s of CPU per tree at k = 22 / 100 / 500 on the labels and 0.10 / 0.88
#: at k = 22 / 500 on 14 Gaussian projections, which the model charged 0.14-0.27x at k = 500; with this term and
#: ``OUR_D_HALF`` it charges the 14 configurations of tests/data/forest_sparse_inputs_measured_cpu.json 1.3-3.0x.
#: Per node, not per row: a stump of every feature costs three nodes' worth.
SPARSE_NODE_FEATURE_S = 9e-8
#: our kernel's split search (``forestbench.tree``), whose multi-output sweep batches its per-output sums: the
#: outputs at which that work doubles a split's cost, and the dense outputs one stored label of a CSR label matrix
#: costs as many (``SPARSE_CRITERION_COST`` scaled with it, so that the labels' charge stays where it was fitted).
#: On the real delicious (tests/data/forest_sparse_inputs_measured_cpu.json) D_HALF charged 250 and 983 dense
#: Gaussian projections 5.8x and 5.7x of their CPU (2.4x and 2.0x now); on corel5k (same probe, 10 trees, k = 22)
#: the original labels, q = 1 and q = d = 374 are charged 3.3x, 7.4x and 3.3x. The archived forests of Tables
#: 5.1-5.2 calibrate nothing here: most were grown by earlier, slower builds (corel5k's took 10x the probe's time)
OUR_D_HALF = 96.0
OUR_SPARSE_CRITERION_COST = SPARSE_CRITERION_COST * OUR_D_HALF / D_HALF
#: our kernel's ``C_FIT`` on sparse inputs: seconds per (tree x stored value reached x sample x level). Its CSC split
#: search visits only a node's stored values of a feature, where ``C_FIT`` was measured on scikit-learn's sorts of
#: dense columns. Fitted at the registry's input density (the plan's; the probe and its test had read the default
#: 1 %, which charged delicious' 18 stored values a row as 5, so the plan charged 3-4x what the test checked):
#: ``benchmarks/forest_cost_probe.py`` on delicious and corel5k (tests/data/forest_sparse_inputs_measured_cpu.json)
#: is charged 1.2-3.5x of its CPU, the archived §5.3.5 forests (timing_5_3_5, 100 trees, q = 1 / 25 / 250 and the
#: original labels) 1.0-1.7x; with ``C_FIT`` they were 2.9-8.6x and 2.9-4.6x. Table 5.1-5.2's archived corel5k
#: forests, grown by an earlier, slower build, take 4x this charge; a rerun takes the probe's time
OUR_SPARSE_C_FIT = 0.3 * C_FIT
#: our forests' rule for constant features (``count_constant_features: false``, k non-constant features scored per
#: node) on sparse inputs, where most features are constant in a small node, against scikit-learn's rule, on which
#: ``C_FIT`` was measured: Table 5.2's extra-trees (our rule) took 2.0-2.5x the fit time of Table 5.1's random
#: forests (scikit-learn's rule) on bibtex, corel5k, delicious, enron and medical, 0.6-1.2x on the dense-input sets
SPARSE_CONSTANT_RULE_FACTOR = 2.3
#: prediction time as a fraction of the fit time
PREDICT_FRACTION = 0.25
#: staged tuning scores the validation rows after each of up to ``tuning.MAX_SCORED_STAGES`` stages of every
#: candidate. One scored stage costs SCORE_CALL_S plus, per (validation row x output), SCORE_ENTRY_S of its metric
#: (the ranking measures) or SCORE_ENTRY_OTHER_S (the others). Measured per call (`benchmarks/bench_metrics.py`
#: and the metrics alone, one run under load): LRAP 0.1 ms on 78 x 6, 16-23 ns per entry from 159 to 983 labels at
#: 2-4 % positives (53-79 ns at 10 %); macro-r² and aRRMSE 0.03-0.05 ms on small blocks, 6.5-8.4 ns per entry on
#: large ones. LRAP from ``metrics.LRAP_COMPILED_MIN_LABELS`` labels on counts its ranks in a compiled pass,
#: SCORE_ENTRY_LRAP_COMPILED_S per entry: 2.4 / 2.9 / 9.5 ns on bibtex-, corel5k- and delicious-sized validation
#: blocks (2.4 / 3.5 / 19 positive labels a row; one run under load). The staged prediction itself is not charged.
SCORE_CALL_S = 1e-4
SCORE_ENTRY_S = 25e-9
SCORE_ENTRY_LRAP_COMPILED_S = 10e-9
SCORE_ENTRY_OTHER_S = 8e-9
RANKING_METRICS = frozenset({"lrap", "lrap_all_rows", "ranking_loss", "coverage_error", "one_error"})
#: start-up of a job (interpreter, imports, loading the data and split, writing the record), seconds: a
#: ``python -m forestbench fit`` of a 50-tree forest on linnerud (fit + predict 0.03 s) took 2.1-3.0 s of wall time
#: (1.9-2.4 s of CPU) on a shared 2-core machine; rounded up (it was 20 s, which charged the 406 jobs of the Table
#: 6.1 friedman1-chain run 2.3 core-hours of start-up when the whole run took 2.1 core-hours of CPU).
STARTUP_S = 3.0
#: the time request of a job is this multiple of its estimate (model, or the mean of matching run records)
RUNTIME_MARGIN = 3.0
#: the memory request of a job is this multiple of its modelled peak
MEM_MARGIN = 1.5
#: default partition limits: a request beyond them is capped there and flagged (``forestbench plan`` lists them,
#: the DAG build warns). 256 GB is a large general-purpose node, 48 h a common MaxTime of a standard partition.
#: Override with the environment variables FORESTBENCH_MAX_MEM_MB and FORESTBENCH_MAX_RUNTIME_MIN (read when the
#: Snakefile is parsed and by ``forestbench plan``), or plan's ``--max-mem-gb`` / ``--max-hours``.
DEFAULT_MAX_MEM_MB = 256 * 1024
DEFAULT_MAX_RUNTIME_MIN = 48 * 60
#: default density assumed for sparse inputs whose density is unknown
DEFAULT_DENSITY = 0.01
#: stored values per row assumed for sparse inputs of unknown density: at most this many (text-like data)
DEFAULT_SPARSE_ROW_NNZ = 500
#: a dataset whose dense float64 inputs would exceed this is taken as sparse (the store keeps such data sparse)
DENSE_LIMIT_BYTES = 2**31
#: requests are rounded up to these units
MEM_UNIT_MB = 100
#: parallel efficiency of tree-level parallelism (joblib over trees)
PARALLEL_EFFICIENCY = 0.8


def _check_shape(n: int, p: int, d: int) -> None:
    for name, value in (("n (samples)", n), ("p (features)", p), ("d (outputs)", d)):
        if not isinstance(value, (int,)) or isinstance(value, bool) or value < 1:
            raise ValueError(f"resources: {name} must be a positive integer, got {value!r}")


def _check_attempt(attempt: int) -> None:
    if not isinstance(attempt, int) or isinstance(attempt, bool) or attempt < 1:
        raise ValueError(f"resources: attempt must be an integer >= 1, got {attempt!r}")


def _round_up(value: float, unit: int) -> int:
    return int(math.ceil(value / unit) * unit)


def stored_per_row(p: int, sparse: bool = False, density: float | None = None) -> float:
    """Stored input values per sample: ``p`` when dense, ``p * density`` (at least 1) when sparse; an unknown
    density means 1% of ``p`` but at most ``DEFAULT_SPARSE_ROW_NNZ``."""
    if not sparse:
        return float(p)
    if density is None:
        return max(1.0, min(p * DEFAULT_DENSITY, float(DEFAULT_SPARSE_ROW_NNZ)))
    if not 0.0 < density <= 1.0:
        raise ValueError(f"resources: density must be in (0, 1], got {density!r}")
    return max(1.0, p * density)


def data_mb(n: int, p: int, d: int, sparse: bool = False, density: float | None = None) -> float:
    """Memory of one dataset held for fitting (inputs with their working copies, outputs), in MB."""
    _check_shape(n, p, d)
    if sparse:
        x_bytes = 2 * 12 * n * stored_per_row(p, True, density)
    else:
        x_bytes = 12.0 * n * p
    y_bytes = 16.0 * n * d
    return (x_bytes + y_bytes) / 2**20


def tree_nodes(n: int, min_samples_leaf: int = 1, max_depth: int | None = None,
               max_leaf_nodes: int | None = None) -> float:
    """Upper bound on the nodes of one tree: ``2 n / min_samples_leaf``, fewer when the depth or leaves are capped."""
    if min_samples_leaf < 1:
        raise ValueError("resources: min_samples_leaf must be >= 1")
    nodes = 2.0 * n / min_samples_leaf
    if max_depth is not None:
        nodes = min(nodes, 2.0 ** (min(int(max_depth), 1000) + 1) - 1)  # capped: 2.0**(2**63) overflows
    if max_leaf_nodes is not None:
        nodes = min(nodes, 2.0 * int(max_leaf_nodes) - 1)
    return max(nodes, 1.0)


def tree_levels(n: int, max_depth: int | None = None, max_leaf_nodes: int | None = None) -> float:
    """Levels over which a tree builder sorts/scans the samples: ``log2 n``, fewer when depth or leaves are capped."""
    levels = math.log2(max(n, 2))
    if max_depth is not None:
        levels = min(levels, max(1, int(max_depth)))
    if max_leaf_nodes is not None:
        levels = min(levels, max(1, int(max_leaf_nodes) - 1))
    return levels


def forest_mb(n: int, d: int, n_estimators: int, n_classes: int = 1, min_samples_leaf: int = 1, *,
              max_depth: int | None = None, max_leaf_nodes: int | None = None,
              labels_per_row: float | None = None) -> float:
    """Memory of a forest of ``n_estimators`` trees (``tree_nodes`` nodes each) with ``d`` outputs.

    ``labels_per_row``: the trees store their leaf values sparsely (a 0/1 label matrix grown as CSR,
    ``forestbench._label_layout``); a row's labels then enter one leaf of a tree, so a tree's leaf values hold at
    most ``n x labels_per_row`` stored values of 12 bytes (value and index)."""
    if n_estimators < 0:
        raise ValueError(f"resources: n_estimators must be >= 0, got {n_estimators!r}")
    if n_classes < 1:
        raise ValueError("resources: n_classes must be >= 1")
    nodes = tree_nodes(n, min_samples_leaf, max_depth, max_leaf_nodes)
    values = nodes * 8.0 * d * n_classes
    if labels_per_row is not None:
        values = min(values, n * labels_per_row * 12.0 + nodes * 4.0)
    return n_estimators * (nodes * NODE_BYTES + values) / 2**20


def need_mb(n: int, p: int, d: int, sparse: bool = False, *, density: float | None = None, n_estimators: int = 0,
            n_classes: int = 1, min_samples_leaf: int = 1, max_depth: int | None = None,
            max_leaf_nodes: int | None = None) -> float:
    """Modelled peak memory in MB (no safety factor, no rounding): base + data + forest."""
    _check_shape(n, p, d)
    return BASE_MB + data_mb(n, p, d, sparse, density) + forest_mb(
        n, d, n_estimators, n_classes, min_samples_leaf, max_depth=max_depth, max_leaf_nodes=max_leaf_nodes)


def mem_mb(
    n: int,
    p: int,
    d: int,
    attempt: int = 1,
    sparse: bool = False,
    *,
    density: float | None = None,
    n_estimators: int = 0,
    n_classes: int = 1,
    min_samples_leaf: int = 1,
    max_depth: int | None = None,
    max_leaf_nodes: int | None = None,
    safety: float = 1.5,
    min_mb: int = 1000,
    cap_mb: int | None = None,
) -> int:
    """Memory request in MB for a job holding an ``n x p`` dataset with ``d`` outputs (and a forest, if any).

    ``attempt`` multiplies the request (retry after OUT_OF_MEMORY gets more); ``cap_mb`` bounds it (a cluster's
    node size). Pass ``n_estimators=0`` for jobs that only read and write data (prepare, split).
    """
    _check_attempt(attempt)
    need = need_mb(n, p, d, sparse, density=density, n_estimators=n_estimators, n_classes=n_classes,
                   min_samples_leaf=min_samples_leaf, max_depth=max_depth, max_leaf_nodes=max_leaf_nodes)
    request = max(min_mb, _round_up(need * safety, MEM_UNIT_MB)) * attempt
    if cap_mb is not None:
        request = min(request, int(cap_mb))
    return int(request)


def fit_seconds(
    n: int,
    p: int,
    d: int,
    n_estimators: int,
    *,
    max_features: int | float | None = None,
    sparse: bool = False,
    density: float | None = None,
    max_depth: int | None = None,
    max_leaf_nodes: int | None = None,
    d_half: float = D_HALF,
    c_fit: float = C_FIT,
) -> float:
    """Modelled single-thread wall time of fitting ``n_estimators`` trees (see the module docstring); a depth or
    leaf cap replaces ``log2 n`` by the capped number of levels (``tree_levels``). ``d_half``: the outputs at which
    the split search's per-output work doubles its cost (``D_HALF``; ``OUR_D_HALF`` for our kernel). ``c_fit``: the
cost per sample, level and candidate feature (or stored value reached) of a tree (``C_FIT``; ``OUR_SPARSE_C_FIT``
for our kernel on sparse inputs).

    ``max_features``: candidate features per split, as a count (int) or a fraction of ``p`` (float); None = all.
    """
    _check_shape(n, p, d)
    if n_estimators < 1:
        raise ValueError(f"resources: n_estimators must be >= 1, got {n_estimators!r}")
    width = stored_per_row(p, sparse, density)
    if max_features is None:
        k, drawn = width, float(p)
    elif isinstance(max_features, float):
        if not 0.0 < max_features <= 1.0:
            raise ValueError(f"resources: fractional max_features must be in (0, 1], got {max_features!r}")
        k, drawn = max(1.0, max_features * width), max(1.0, max_features * p)
    else:
        k = float(min(max(1, int(max_features)), width)) if width >= 1 else 1.0
        drawn = float(min(max(1, int(max_features)), p))
    per_output = 1.0 + d / d_half
    seconds = c_fit * n_estimators * k * n * tree_levels(n, max_depth, max_leaf_nodes) * per_output
    if sparse:
        seconds += (SPARSE_NODE_FEATURE_S * n_estimators * drawn * tree_nodes(n, 1, max_depth, max_leaf_nodes)
                    * per_output)
    return seconds


def job_seconds(
    n: int,
    p: int,
    d: int,
    n_estimators: int,
    *,
    threads: int = 1,
    repeats: int = 1,
    **model,
) -> float:
    """Modelled wall time of one fit job: start-up, then ``repeats`` x (fit + predict) on ``threads`` threads."""
    if threads < 1 or repeats < 1:
        raise ValueError("resources: threads and repeats must be >= 1")
    one = fit_seconds(n, p, d, n_estimators, **model) * (1.0 + PREDICT_FRACTION)
    speedup = 1.0 if threads == 1 else max(1.0, threads * PARALLEL_EFFICIENCY)
    return STARTUP_S + repeats * one / speedup


def runtime_min(
    n: int,
    p: int,
    d: int,
    n_estimators: int,
    attempt: int = 1,
    *,
    threads: int = 1,
    repeats: int = 1,
    safety: float = 3.0,
    min_minutes: int = 5,
    cap_minutes: int | None = None,
    **model,
) -> int:
    """Wall-time request in minutes (Snakemake's ``runtime`` resource) for fitting and predicting one run.

    Three times the modelled time, at least ``min_minutes``, times ``attempt`` (retry after TIMEOUT gets more),
    at most ``cap_minutes``. Extra keywords (``max_features``, ``sparse``, ``density``) go to the time model.
    """
    _check_attempt(attempt)
    seconds = job_seconds(n, p, d, n_estimators, threads=threads, repeats=repeats, **model)
    request = max(int(min_minutes), int(math.ceil(seconds * safety / 60.0))) * attempt
    if cap_minutes is not None:
        request = min(request, int(cap_minutes))
    return int(request)


def data_runtime_min(n: int, p: int, d: int, attempt: int = 1, *, sparse: bool = False,
                     density: float | None = None, min_minutes: int = 5) -> int:
    """Wall-time request for data jobs (prepare, split): parsing/writing at a pessimistic 20 MB/s, x ``attempt``."""
    _check_attempt(attempt)
    seconds = STARTUP_S + data_mb(n, p, d, sparse, density) / 20.0
    return max(int(min_minutes), int(math.ceil(seconds * 3.0 / 60.0))) * attempt


def threads(
    n: int,
    p: int,
    d: int,
    n_estimators: int,
    *,
    fixed: int | None = None,
    max_threads: int = 4,
    target_minutes: float = 30.0,
    **model,
) -> int:
    """Threads for a fit job: ``fixed`` when given (timing experiments pin it), else the fewest threads (at most
    ``max_threads``) that bring the modelled job under ``target_minutes``; small jobs get one thread."""
    if fixed is not None:
        if int(fixed) < 1:
            raise ValueError(f"resources: fixed thread count must be >= 1, got {fixed!r}")
        return int(fixed)
    if max_threads < 1:
        raise ValueError(f"resources: max_threads must be >= 1, got {max_threads!r}")
    for t in range(1, int(max_threads) + 1):
        if job_seconds(n, p, d, n_estimators, threads=t, **model) <= target_minutes * 60.0:
            return t
    return int(max_threads)


# ---------------------------------------------------------------------------------------------------------------
# From the registry and the method parameters to requests (what the Snakemake rules call)

#: shape assumed for a dataset whose registry entry gives none (or nulls): generous, so the first attempt of an
#: unknown dataset is unlikely to be killed; the run records then show what it really needed
UNKNOWN_SHAPE = {"n": 50_000, "p": 1_000, "d": 50}
#: scikit-learn's default forest size, used when a variant does not set n_estimators
DEFAULT_N_ESTIMATORS = 100


def shape_of(shape: dict | None) -> tuple[int, int, int]:
    """``(n, p, d)`` from a registry ``shape`` mapping; missing or null entries take ``UNKNOWN_SHAPE``."""
    shape = shape or {}
    return tuple(int(shape.get(k) or UNKNOWN_SHAPE[k]) for k in ("n", "p", "d"))  # type: ignore[return-value]


def label_density(shape: dict | None) -> float | None:
    """Share of non-zero labels of a multi-label set, from its registry shape's ``labels_per_row`` and ``d``; None
    when the registry does not give it."""
    shape = shape or {}
    per_row, d = shape.get("labels_per_row"), shape.get("d")
    return float(per_row) / int(d) if per_row and d else None


def input_density(shape: dict | None) -> float | None:
    """Share of non-zero inputs of a dataset with sparse inputs, from its registry shape's ``input_density``; None
    when the registry does not give it (the cost hooks then assume ``DEFAULT_DENSITY``). For dense two-valued
    inputs the registry may give the share of entries holding their column's rarer value (genbase): the boosting
    model charges its split search by it (``methods/boosting.py``), the other hooks read it only for sparse sets."""
    value = (shape or {}).get("input_density")
    return float(value) if value else None


def candidate_features(max_features, p: int) -> int:
    """Candidate features per split for a scikit-learn style ``max_features`` (None, "sqrt", "log2", int, float)."""
    if max_features is None or max_features == "auto":
        return p
    if max_features == "sqrt":
        return max(1, int(math.sqrt(p)))
    if max_features == "log2":
        return max(1, int(math.log2(p))) if p > 1 else 1
    if isinstance(max_features, bool):
        raise ValueError(f"resources: max_features must not be a boolean, got {max_features!r}")
    if isinstance(max_features, float):
        if not 0.0 < max_features <= 1.0:
            raise ValueError(f"resources: fractional max_features must be in (0, 1], got {max_features!r}")
        return max(1, int(max_features * p))
    if isinstance(max_features, int):
        return max(1, min(max_features, p))
    raise ValueError(f"resources: unknown max_features {max_features!r}")


def _projects(params: dict) -> bool:
    """Whether a variant grows its trees on projected outputs (``output_projection`` set to a projection)."""
    return params.get("output_projection") not in (None, "none", "identity")


def split_outputs(params: dict, d: int) -> int:
    """Outputs the split search works on: ``q`` when the variant projects its outputs (``output_projection`` with
    ``n_components``, resolved by ``forestbench.projections``), else ``d``. Leaves still hold ``d`` values."""
    if not _projects(params) or params.get("n_components") is None:
        return d
    from forestbench.projections import resolve_n_components

    try:
        return max(1, int(resolve_n_components(params["n_components"], d)))
    except Exception:  # an invalid value is the fit's error to report, not the scheduler's
        return d


@dataclass(frozen=True)
class Cost:
    """What a method's cost hook returns for one variant on one dataset shape."""

    fit_seconds: float  # modelled single-thread wall seconds of fit + predict
    model_mb: float  # memory of the fitted model, MB (the data and the interpreter are charged separately)
    scoring_seconds: float = 0.0  # the part of fit_seconds that staged tuning spends scoring (not fitting)


def forest_cost(n: int, p: int, d: int, params: dict, *, sparse: bool = False,
                density: float | None = None, label_density: float | None = None, d_half: float = D_HALF,
                label_cost: float = SPARSE_CRITERION_COST, sparse_c_fit: float = C_FIT) -> Cost:
    """The cost hook of tree ensembles (the default of the method registry).

    ``n_estimators`` defaults to 100 (scikit-learn); ``max_features`` as scikit-learn reads it; ``min_samples_leaf``
    shrinks the trees; ``max_depth`` / ``max_leaf_nodes`` cap them. Multi-output leaves are charged for every output
    (an upper bound); with an output projection the split search is charged for ``q`` outputs (``split_outputs``).
    ``label_density`` (the share of non-zero labels of a multi-label set, from the registry's ``labels_per_row``):
    a label matrix the trees grow as CSR (``forestbench._label_layout``) charges its leaves by their stored values
    and the split search ``SPARSE_CRITERION_COST`` outputs per label of a row (of the q labels a random output
    subspace keeps, when it projects them). ``d_half``, ``label_cost`` and ``sparse_c_fit`` (``c_fit`` of
    ``fit_seconds`` on sparse inputs) are the kernel's constants: scikit-learn's by default.
    """
    n_estimators = max(1, _positive_int(params.get("n_estimators")) or DEFAULT_N_ESTIMATORS)
    leaf = _positive_int(params.get("min_samples_leaf")) or 1
    caps = {"max_depth": _positive_int(params.get("max_depth")),
            "max_leaf_nodes": _positive_int(params.get("max_leaf_nodes"))}
    k = candidate_features(params.get("max_features", 1.0), p)
    outputs = split_outputs(params, d)
    labels_per_row = None
    if label_density is not None and grows_sparse(d, label_density):
        labels_per_row = label_density * d
        if not _projects(params):
            outputs = max(1, min(d, math.ceil(label_cost * labels_per_row)))
        elif params.get("output_projection") == "subsample" and grows_sparse(outputs, label_density):
            # a random output subspace of such labels splits on a 0/1 Z of q of them, grown as CSR
            # (``forestbench.projections.split_projection``); every other projection's Z is dense (q = d too)
            outputs = max(1, min(outputs, math.ceil(label_cost * label_density * outputs)))
    seconds = fit_seconds(n, p, outputs, n_estimators, max_features=k, sparse=sparse,
                          density=density, d_half=d_half, c_fit=sparse_c_fit if sparse else C_FIT,
                          **caps) * (1.0 + PREDICT_FRACTION)
    if sparse and params.get("count_constant_features") is False:
        seconds *= SPARSE_CONSTANT_RULE_FACTOR
    return Cost(seconds, forest_mb(n, d, n_estimators, 1, leaf, labels_per_row=labels_per_row, **caps))


#: one scikit-learn ``DecisionTreeRegressor`` grown best-first to ``max_leaf_nodes`` leaves, as the budgets'
#: scikit-learn clocks time a boosting stage (``sklearn_tree_seconds``). Fitted (least squares on the log of the
#: ratio) on 198 fits over the training parts of the eleven obtainable Table 6.5 sets at 2, 4 and 8 leaves, k = sqrt(p),
#: 0.2 p and p, one output and all d (``tests/data/sklearn_tree_measured_cpu.json``): within 0.35-5.8x of each,
#: median 0.94x; over-charged most where nodes soon hold only constant columns (genbase at 8 leaves on every
#: feature). ``forest_cost``, whose trees are fully grown, charged the same fits 1.5-400x (corel5k's gbmort stump on
#: all 374 outputs 5.3 s for 42 ms measured). Per evaluated node, each of the k candidate features is sorted
#: (n log2 n on continuous inputs, about n on two-valued ones) and its rows moved through the criterion (every row
#: times the outputs on continuous inputs; the rows of the rarer value, ``input_density``, on two-valued ones, as
#: scikit-learn's criterion moves the shorter side), and the node's sums are taken once over its rows and outputs;
#: the nodes evaluated add 1 + levels * log2(leaves) passes over the rows; fixed: the fit call's own overhead
SK_TREE_FIXED = 2.8e-4
SK_TREE_SORT = 5.1e-9
SK_TREE_CRITERION = 7.6e-10
SK_TREE_SORT_BINARY = 3.7e-9
SK_TREE_CRITERION_BINARY = 1.0e-9
SK_TREE_NODE = 5.9e-9
SK_TREE_LEVELS = 0.71


def sklearn_tree_seconds(n: int, p: int, width: int, params: dict, density: float | None = None) -> float:
    """Modelled CPU seconds of one scikit-learn regression tree on ``n`` rows, ``p`` features and ``width``
    targets with ``params``' ``max_leaf_nodes`` (None: fully grown, n leaves) and ``max_features`` (None: p); on
    two-valued inputs when ``density`` is given (the registry's ``input_density``). See ``SK_TREE_FIXED``."""
    leaves = _positive_int(params.get("max_leaf_nodes")) or max(n, 2)
    k = candidate_features(params.get("max_features"), p)
    passes = 1.0 + SK_TREE_LEVELS * math.log2(max(leaves, 2))
    if density is not None:
        per_node = SK_TREE_SORT_BINARY * k * n + SK_TREE_CRITERION_BINARY * k * n * width * density
    else:
        per_node = SK_TREE_SORT * k * n * math.log2(max(n, 2)) + SK_TREE_CRITERION * k * n * width
    return SK_TREE_FIXED + passes * (per_node + SK_TREE_NODE * n * width)


#: one forest per 0/1 label (br-rf / st-rf on multi-label sets, ``forestbench.forest.SingleTargetForestRegressor``):
#: a fully grown tree on one label stops at pure nodes, so it holds far fewer than ``2 n`` nodes. Its nodes, fitted
#: as ``a * m**b * n**c`` over m = n * min(f, 1 - f), the rows of the label's rarer value (f its frequency): 100-tree
#: forests on 30 labels of delicious, bibtex, enron and corel5k (12 920 / 4 880 / 1 123 / 4 500 training rows,
#: frequencies 0-54 %) and the archived Table 6.5 forests of six sets (tests/data/label_forest_measured_cpu.json),
#: within 0.5-2.5x of each, up to 8.5x of labels that a few features decide (delicious' rare labels hold 276 nodes
#: a tree where ``tree_nodes`` says 25 840); with the root added, so that it is concave in the frequency
LABEL_TREE_NODES = (0.0508, 0.58, 0.71)
#: seconds of one such tree, fit and prediction: LABEL_LEVEL_S per (candidate feature x training row x level,
#: log2 of its nodes + 1), LABEL_NODE_S per (candidate feature x node) and LABEL_ROW_S per stored input value. Fitted
#: on the same measurements (CPU seconds, taken beside two other jobs) and doubled. With the nodes above, the model
#: charges the measured forests 0.7-7.7x their CPU (median 1.4x; delicious' labels 0.7-1.8x, its whole br-rf fit
#: 41 min where its probed labels sum to about 40; labels that one feature decides, as genbase's and a 13 % label
#: of bibtex, 3.4x and 7.7x); charged as fully grown regression trees they were 6-285x (median 52x)
LABEL_LEVEL_S = 3.5e-9
LABEL_NODE_S = 6.5e-7
LABEL_ROW_S = 1.5e-9


def label_tree_nodes(n: int, frequency: float) -> float:
    """Nodes of one fully grown tree fitted on ``n`` rows to a 0/1 label of the given frequency: the root plus
    ``LABEL_TREE_NODES``' law (a label without its rarer value grows a root alone), at most ``2 n - 1``. Concave in
    the frequency, as a mean frequency's charge must be to bound the labels'."""
    a, b, c = LABEL_TREE_NODES
    rarer = n * min(frequency, 1.0 - frequency)
    return min(2.0 * n - 1.0, 1.0 + a * rarer ** b * n ** c)


def label_forest_cost(n: int, p: int, params: dict, frequency: float, *, sparse: bool = False,
                      density: float | None = None) -> Cost:
    """Fit + predict seconds and model MB of one random forest on a 0/1 label of the given frequency (see
    ``LABEL_TREE_NODES``). ``n_estimators`` defaults to 100, ``max_features`` as scikit-learn reads it."""
    if not 0.0 <= frequency <= 1.0:
        raise ValueError(f"resources: a label frequency must be in [0, 1], got {frequency!r}")
    n_estimators = max(1, _positive_int(params.get("n_estimators")) or DEFAULT_N_ESTIMATORS)
    k = candidate_features(params.get("max_features", 1.0), p)
    nodes = label_tree_nodes(n, frequency)
    per_tree = (LABEL_LEVEL_S * k * n * math.log2(1.0 + nodes) + LABEL_NODE_S * k * nodes
                + LABEL_ROW_S * n * stored_per_row(p, sparse, density))
    leaves = max(1, math.ceil((nodes + 1.0) / 2.0))
    return Cost(n_estimators * per_tree, forest_mb(n, 1, n_estimators, max_leaf_nodes=leaves))


#: trees (fully grown, every feature a candidate) charged to a method registered without a cost hook whose variant
#: sets no ``n_estimators``: about ten times log2(n) passes over the data, more than a linear model, naive Bayes or
#: a single tree needs, a tenth of a default forest
UNKNOWN_METHOD_TREES = 10


def default_cost(n: int, p: int, d: int, params: dict, *, sparse: bool = False,
                 density: float | None = None) -> Cost:
    """The cost hook of a method registered without one (``forestbench.workflow.methods.register(..., cost=None)``):
    conservative but bounded. A variant that sets ``n_estimators`` is taken for a tree ensemble of that size
    (``forest_cost``); otherwise ``UNKNOWN_METHOD_TREES`` fully grown trees on every feature."""
    params = dict(params or {})
    if _positive_int(params.get("n_estimators")) is None:
        params["n_estimators"] = UNKNOWN_METHOD_TREES
    return forest_cost(n, p, d, params, sparse=sparse, density=density)


def staged_score_seconds(rows: int, d: int, metric: str) -> float:
    """Seconds of one scored stage of staged tuning: the metric on ``rows`` validation rows of ``d`` outputs."""
    from forestbench.metrics import LRAP_COMPILED_MIN_LABELS

    if metric in ("lrap", "lrap_all_rows") and d >= LRAP_COMPILED_MIN_LABELS:
        per_entry = SCORE_ENTRY_LRAP_COMPILED_S
    else:
        per_entry = SCORE_ENTRY_S if metric in RANKING_METRICS else SCORE_ENTRY_OTHER_S
    return SCORE_CALL_S + per_entry * rows * max(d, 1)


def cost_job_seconds(cost: Cost, *, threads: int = 1, repeats: int = 1) -> float:
    """Wall time of one fit job from a method's cost: start-up, then ``repeats`` x (fit + predict) on
    ``threads`` threads (tree-level parallel efficiency ``PARALLEL_EFFICIENCY``)."""
    if threads < 1 or repeats < 1:
        raise ValueError("resources: threads and repeats must be >= 1")
    speedup = 1.0 if threads == 1 else max(1.0, threads * PARALLEL_EFFICIENCY)
    return STARTUP_S + repeats * cost.fit_seconds / speedup


def fit_requests(shape: dict | None, params: dict | None, attempt: int = 1, *, cost=None, threads: int = 1,
                 repeats: int = 1, sparse: bool = False, density: float | None = None,
                 recorded_s: float | None = None, recorded_mb: float | None = None) -> dict:
    """``{"mem_mb", "runtime"}`` of one fit job from the dataset's registry shape and the variant's parameters.

    ``cost`` is the method's cost hook (``forestbench.workflow.methods.MethodSpec.cost``; default ``forest_cost``), or
    an already computed ``Cost``. ``recorded_s``: the job's wall time measured by earlier runs (start-up included),
    which the request covers too when it exceeds the model; ``recorded_mb``: the largest peak resident memory of those
    runs, likewise. Memory: ``MEM_MARGIN`` x the larger of (base + data + model) and ``recorded_mb``, at least
    1000 MB; time: ``RUNTIME_MARGIN`` x the larger of the modelled and the recorded job, at least 5 minutes; both
    times ``attempt``. Partition limits (``Limits.cap``) are applied by the caller.
    """
    _check_attempt(attempt)
    n, p, d = shape_of(shape)
    if density is None:
        density = input_density(shape)
    if not isinstance(cost, Cost):
        cost = (cost or forest_cost)(n, p, d, params or {}, sparse=sparse, density=density)
    need = BASE_MB + data_mb(n, p, d, sparse, density) + cost.model_mb
    if recorded_mb is not None:
        need = max(need, float(recorded_mb))
    seconds = cost_job_seconds(cost, threads=threads, repeats=repeats)
    if recorded_s is not None:
        seconds = max(seconds, float(recorded_s))
    return {
        "mem_mb": max(1000, _round_up(need * MEM_MARGIN, MEM_UNIT_MB)) * attempt,
        "runtime": max(5, int(math.ceil(seconds * RUNTIME_MARGIN / 60.0))) * attempt,
    }


@dataclass(frozen=True)
class Limits:
    """What one SLURM job may ask for: a request beyond is capped here (and flagged), since SLURM would refuse it or
    leave it pending forever."""

    mem_mb: int = DEFAULT_MAX_MEM_MB
    runtime_min: int = DEFAULT_MAX_RUNTIME_MIN

    def __post_init__(self):
        for name in ("mem_mb", "runtime_min"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"resources: partition limit {name} must be a positive integer, got {value!r}")

    def cap(self, request: dict) -> dict:
        """``request`` with ``mem_mb`` and ``runtime`` at most the limits."""
        return dict(request, mem_mb=min(int(request["mem_mb"]), self.mem_mb),
                    runtime=min(int(request["runtime"]), self.runtime_min))

    def exceeded(self, request: dict) -> list[str]:
        """What of ``request`` is beyond the limits, as readable phrases (empty when it fits)."""
        out = []
        if int(request["mem_mb"]) > self.mem_mb:
            out.append(f"mem_mb {int(request['mem_mb'])} > {self.mem_mb}")
        if int(request["runtime"]) > self.runtime_min:
            out.append(f"runtime {int(request['runtime'])} min > {self.runtime_min} min")
        return out


def limits_from_env(environ=None) -> Limits:
    """The partition limits: FORESTBENCH_MAX_MEM_MB and FORESTBENCH_MAX_RUNTIME_MIN when set, else the defaults."""
    import os

    environ = os.environ if environ is None else environ
    values = {}
    for key, name, default in (("FORESTBENCH_MAX_MEM_MB", "mem_mb", DEFAULT_MAX_MEM_MB),
                               ("FORESTBENCH_MAX_RUNTIME_MIN", "runtime_min", DEFAULT_MAX_RUNTIME_MIN)):
        raw = environ.get(key)
        if raw in (None, ""):
            values[name] = default
            continue
        try:
            values[name] = int(raw)
        except ValueError:
            raise ValueError(f"environment variable {key}={raw!r}: expected a positive integer") from None
        if values[name] < 1:
            raise ValueError(f"environment variable {key}={raw!r}: expected a positive integer")
    return Limits(**values)


def machine_memory_mb() -> int:
    """This machine's physical memory in MB: the pool a local run's jobs hold their ``mem_mb`` requests from."""
    import psutil

    return int(psutil.virtual_memory().total // 2**20)


def local_limits(limits: Limits, pool_mb: int | None) -> Limits:
    """``limits`` with the memory cap lowered to a local run's memory pool: a job asking more than the pool is capped
    at it (as Snakemake constrains it), and so runs with nothing else holding memory."""
    if pool_mb is None:
        return limits
    return Limits(mem_mb=max(1, min(limits.mem_mb, int(pool_mb))), runtime_min=limits.runtime_min)


def _positive_int(value) -> int | None:
    """An integer parameter >= 1, else None (fractions, strings and booleans are left to the estimator)."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value
    return None


def is_sparse_entry(entry: dict | None) -> bool:
    """Whether a registry entry's inputs are (kept) sparse. The registry has no explicit flag, so this reads the
    signs it has: an SVMlight file or a file/loader named "sparse", "sparse" in the notes, or dense inputs that would
    exceed ``DENSE_LIMIT_BYTES``. A heuristic: a wrong guess costs a retry (too little) or idle memory (too much)."""
    if not entry:
        return False
    source = entry.get("source") or {}
    if "sparse" in str(source.get("loader", "")).lower():
        return True
    for spec in source.get("files") or []:
        if spec.get("format") == "svmlight" or "sparse" in str(spec.get("name", "")).lower():
            return True
    if "sparse" in str(entry.get("notes", "")).lower():
        return True
    shape = entry.get("shape") or {}
    n, p = shape.get("n"), shape.get("p")
    return bool(n and p and 8.0 * n * p > DENSE_LIMIT_BYTES)


def data_requests(shape: dict | None, attempt: int = 1, *, sparse: bool = False,
                  density: float | None = None) -> dict:
    """``{"mem_mb", "runtime"}`` of a data job (prepare, split) of a dataset with this registry shape."""
    n, p, d = shape_of(shape)
    return {"mem_mb": mem_mb(n, p, d, attempt, sparse, density=density),
            "runtime": data_runtime_min(n, p, d, attempt, sparse=sparse, density=density)}


def thread_environment(threads: int) -> dict[str, str]:
    """Environment variables that pin the BLAS/OpenMP pools to ``threads`` (set before Python starts, so that
    timings of different jobs use the same number of threads; threadpoolctl enforces the same limit inside)."""
    if int(threads) < 1:
        raise ValueError(f"resources: threads must be >= 1, got {threads!r}")
    value = str(int(threads))
    return {name: value for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
