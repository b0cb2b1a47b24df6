"""Hyper-parameter selection as configuration: the ``tune:`` block of a method entry, its candidates and its
validation folds. Pure configuration and index logic (no estimator is imported), shared by the planner, the
in-job selection (``forestbench.workflow.selection``) and the workflow's candidate-chunk jobs.

A ``tune:`` block (schema: ``workflow/schemas/config.schema.yaml``)::

    tune:
      grid: {learning_rate: [0.1, 0.01], max_leaf_nodes: [2, 8]}  # Cartesian product of the lists
      n_candidates: 20            # optional: a seeded random subset of the grid (kept in grid order)
      validation: {holdout: 0.2}  # or {kfold: 5}; folds are stratified for single-label classification
      metric: macro_r2            # a metric of forestbench.metrics (its direction is known); default: the
                                  # experiment's first metric
      staged: n_estimators        # choose this parameter from the staged validation scores of one fit
      refit: true                 # refit the selected parameters on the whole training part (default)
      mode: inner                 # inner: one job (GridSearchCV semantics); dag: candidate chunk jobs
      chunk: 10                   # candidates per chunk job (mode dag)
      budget:                     # optional time budget per candidate, in multiples of a reference time T
        multiple: 100             # one fit of a candidate may cost at most 100 x T ...
        reference: {method: gbmort, params: {max_leaf_nodes: 2}}  # ... T = seconds of one stage of this
                                  # reference, measured once per dataset; each candidate's cap on the staged
                                  # parameter is stored in the variant's budget.json (reruns reuse it)
        per_stage: average        # a stage's time: a 10-stage fit / 10 (average, set-up included), the
                                  # CPU clock over stages 2-30 of one fit (marginal: the stages' own work only),
                                  # or scikit-learn's trees fitting one stage's regression targets
                                  # (sklearn_trees: the boosting paper's implementation as the clock), or
                                  # those trees plus the stage's per-output work timed on forestbench's loop
                                  # (sklearn_trees_plus_outputs)

Validation rows are drawn from the training rows of the split only; the test rows never reach selection.
"""
from __future__ import annotations

import hashlib
import itertools
import json
import os

import numpy as np

from forestbench.errors import ConfigError, DataError

#: how a budget times a stage (``forestbench.workflow.selection.seconds_per_stage``)
PER_STAGE = ("average", "marginal", "sklearn_trees", "sklearn_trees_plus_outputs")
#: the readings that time a stage's trees by scikit-learn's (``forestbench.workflow.selection.sklearn_stage_seconds``)
SKLEARN_CLOCKS = ("sklearn_trees", "sklearn_trees_plus_outputs")
#: set to 1 to recompute every stored candidate and budget measurement of DAG tuning instead of reusing them
#: (``forestbench.workflow.dag_selection``); the workflow sets it for ``--forcerun tune``, ``--forcerun budget``,
#: ``--forceall``
RECOMPUTE_VARIABLE = "FORESTBENCH_RECOMPUTE_TUNING"


def recompute_requested() -> bool:
    return os.environ.get(RECOMPUTE_VARIABLE, "").strip() not in ("", "0")


def request_recompute() -> None:
    """Ask the tuning jobs started from this process (they inherit its environment) to recompute stored results."""
    os.environ[RECOMPUTE_VARIABLE] = "1"


DEFAULTS = {"validation": {"holdout": 0.2}, "refit": True, "mode": "inner", "chunk": 10, "staged": None,
            "n_candidates": None, "budget": None}
#: at most this many stages of a staged fit are scored during selection (all of them when there are fewer;
#: otherwise every stage up to 100, then log-spaced stages and the last one)
MAX_SCORED_STAGES = 1000


def normalise(tune: dict, *, where: str, metrics: list[str]) -> dict:
    """The ``tune`` block with its defaults filled in, checked; errors name ``where`` (experiment and variant)."""
    if not isinstance(tune, dict):
        raise ConfigError(f"{where}: tune must be a mapping")
    out = {**DEFAULTS, **tune}
    grid = out.get("grid")
    if not isinstance(grid, dict) or not grid:
        raise ConfigError(f"{where}: tune.grid must name at least one parameter with a list of values")
    for key, values in grid.items():
        if not isinstance(values, list) or not values:
            raise ConfigError(f"{where}: tune.grid.{key} must be a non-empty list of values")
    validation = out["validation"]
    if not isinstance(validation, dict) or len(validation) != 1 or set(validation) - {"holdout", "kfold"}:
        raise ConfigError(f"{where}: tune.validation must be {{holdout: fraction}} or {{kfold: K}}, "
                          f"not {validation!r}")
    if "holdout" in validation:
        h = validation["holdout"]
        if isinstance(h, bool) or not isinstance(h, (int, float)) or not 0.0 < float(h) < 1.0:
            raise ConfigError(f"{where}: tune.validation.holdout must be a fraction in (0, 1), not {h!r}")
    else:
        k = validation["kfold"]
        if isinstance(k, bool) or not isinstance(k, int) or k < 2:
            raise ConfigError(f"{where}: tune.validation.kfold must be an integer >= 2, not {k!r}")
    from forestbench.metrics import get_metric

    out["metric"] = out.get("metric") or metrics[0]
    try:
        get_metric(out["metric"])
    except Exception as exc:
        raise ConfigError(f"{where}: tune.metric: {exc}") from None
    if out["mode"] not in ("inner", "dag"):
        raise ConfigError(f"{where}: tune.mode must be 'inner' or 'dag', not {out['mode']!r}")
    for key in ("n_candidates", "chunk"):
        value = out[key]
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise ConfigError(f"{where}: tune.{key} must be an integer >= 1, not {value!r}")
    if out["staged"] is not None and out["staged"] in grid:
        raise ConfigError(f"{where}: tune.staged {out['staged']!r} is chosen from staged scores; "
                          "it cannot also be a grid key")
    budget = out["budget"]
    if budget is not None:
        multiple = budget.get("multiple") if isinstance(budget, dict) else None
        reference = budget.get("reference") if isinstance(budget, dict) else None
        if isinstance(multiple, bool) or not isinstance(multiple, (int, float)) or multiple <= 0:
            raise ConfigError(f"{where}: tune.budget.multiple must be a positive number, not {multiple!r}")
        if not isinstance(reference, dict) or not isinstance(reference.get("method"), str):
            raise ConfigError(f"{where}: tune.budget.reference must name the reference method "
                              "({method: name, params: {...}}) whose one stage is the time unit T")
        per_stage = budget.get("per_stage", "average")
        if per_stage not in PER_STAGE:
            raise ConfigError(f"{where}: tune.budget.per_stage must be one of {', '.join(PER_STAGE)}, not "
                              f"{per_stage!r}")
        out["budget"] = {"multiple": float(multiple),
                         "reference": {"method": reference["method"], "params": dict(reference.get("params") or {})},
                         # the default is left out, so that the specifications of budgets timed before it existed
                         # stay what they were
                         **({} if per_stage == "average" else {"per_stage": per_stage})}
    if budget is not None and not out["staged"]:
        raise ConfigError(f"{where}: tune.budget caps the staged parameter; set tune.staged (e.g. n_estimators)")
    if not out["refit"] and "kfold" in validation:
        raise ConfigError(f"{where}: tune.refit: false keeps the model fitted without the validation rows, "
                          "which k-fold validation does not define; use a holdout or refit: true")
    return out


def candidates(tune: dict, seed: int) -> list[dict]:
    """The candidate parameter sets, in grid order (a seeded random subset when ``n_candidates`` is set)."""
    grid = tune["grid"]
    keys = list(grid)
    points = [dict(zip(keys, values)) for values in itertools.product(*(grid[k] for k in keys))]
    n = tune.get("n_candidates")
    if n is not None and n < len(points):
        keep = np.sort(np.random.default_rng(seed).choice(len(points), size=n, replace=False))
        points = [points[i] for i in keep]
    return points


def candidate_id(params: dict) -> str:
    """A stable short name of a candidate (its finished result is reused when the grid grows)."""
    return hashlib.sha256(json.dumps(params, sort_keys=True, default=str).encode()).hexdigest()[:16]


def chunks(n_candidates: int, size: int) -> list[range]:
    return [range(i, min(i + size, n_candidates)) for i in range(0, n_candidates, size)]


def validation_folds(n: int, validation: dict, seed: int, y=None) -> list[tuple[np.ndarray, np.ndarray]]:
    """``[(fit_rows, validation_rows)]`` as positions in the training part of ``n`` rows.

    ``holdout: h`` draws ``round(h n)`` validation rows (at least 1, at most n - 1); ``kfold: K`` makes K shuffled
    folds, stratified when ``y`` (single-label class ids) is given and every class has at least K rows.
    """
    if "holdout" in validation:
        n_val = min(n - 1, max(1, int(round(float(validation["holdout"]) * n))))
        if n < 2:
            raise ConfigError(f"tune: a holdout needs at least 2 training rows, the training part has {n}")
        order = np.random.default_rng(seed).permutation(n)
        return [(np.sort(order[n_val:]), np.sort(order[:n_val]))]
    k = int(validation["kfold"])
    if k > n:
        raise ConfigError(f"tune: kfold {k} is larger than the training part ({n} rows)")
    from sklearn.model_selection import KFold, StratifiedKFold

    if y is not None:
        _, counts = np.unique(np.asarray(y), return_counts=True)
        if counts.min() >= k:
            splitter = StratifiedKFold(n_splits=k, shuffle=True, random_state=seed % 2**32)
            return [(a, b) for a, b in splitter.split(np.zeros(n), np.asarray(y))]
    splitter = KFold(n_splits=k, shuffle=True, random_state=seed % 2**32)
    return [(a, b) for a, b in splitter.split(np.zeros(n))]


def scored_stages(n_stages: int, limit: int = MAX_SCORED_STAGES) -> np.ndarray:
    """1-based stages whose validation score selection computes: all of them up to ``limit``, else every stage up
    to 100 and log-spaced stages after it (the last stage always included)."""
    if n_stages <= limit:
        return np.arange(1, n_stages + 1)
    head = np.arange(1, 101)
    tail = np.unique(np.round(np.geomspace(101, n_stages, limit - 100)).astype(int))
    return np.unique(np.concatenate([head, tail, [n_stages]]))


EVERY_STAGE_UP_TO = 20


def record_stages(n_stages: int) -> list[int]:
    """Stages stored in a run record: every one of up to ``EVERY_STAGE_UP_TO`` stages (a cascade's layers, whose
    every test score the layer readings need), else 1, 2, 5, 10, 20, 50, ... and the last one."""
    if n_stages <= EVERY_STAGE_UP_TO:
        return list(range(1, n_stages + 1))
    out, base = [], 1
    while base <= n_stages:
        out += [s for s in (base, 2 * base, 5 * base) if s <= n_stages]
        base *= 10
    if not out or out[-1] != n_stages:
        out.append(n_stages)
    return sorted(set(out))


def training_rows(protocol: dict, shape: dict | None) -> int | None:
    """Rows of the training part a protocol gives a dataset of registry ``shape`` (``datasets.splits``)."""
    from forestbench.datasets.splits import training_rows as rows_of

    return rows_of(protocol, (shape or {}).get("n"))


def folds_of(spec: dict, n_train: int, train: np.ndarray, test: np.ndarray, y=None):
    """Validation folds (positions in the training part), checked never to reach a test row."""
    folds = validation_folds(n_train, spec["tune"]["validation"], int(spec["seed"]), y)
    for fit_rows, val_rows in folds:
        if np.intersect1d(train[val_rows], test).size or np.intersect1d(train[fit_rows], test).size:
            raise DataError(f"{spec['experiment']}/{spec['dataset']}: selection rows overlap the test rows of "
                            f"split {spec['repeat']}; the split file is inconsistent")
    return folds
