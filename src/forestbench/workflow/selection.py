"""Hyper-parameter selection on held-out training rows, with ``GridSearchCV`` semantics.

``GridSelection`` is a meta-estimator: ``fit(X, Y)`` scores every candidate on validation folds drawn from the rows
it is given (the training part of a split: test rows never reach it), keeps the best mean validation score (ties:
the first candidate in grid order), then refits the best parameters on all the rows (``refit=True``). With
``staged="n_estimators"`` an estimator that has ``staged_predict`` is fitted once per candidate and fold, and
``n_estimators`` is chosen as the best prefix of the staged ensemble (thesis ch.6: "n_iter is selected on the
validation set"): the mean staged curve over the folds is maximised, then the model is refit with that number of
stages.

The workflow uses the same functions for its candidate-chunk jobs (``evaluate_candidate``) and for the selection
job that merges them (``choose``), so a selection inside one job and one spread over the DAG agree.
"""
from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, MetaEstimatorMixin, clone

from forestbench.workflow import tuning
from forestbench.errors import ConfigError
from forestbench.metrics import get_metric


def _rows(M, idx):
    return M[idx] if not sp.issparse(M) else sp.csr_matrix(M)[idx]


def _as_2d(Y):
    Y = np.asarray(Y.toarray() if sp.issparse(Y) else Y, dtype=np.float64)
    return Y[:, None] if Y.ndim == 1 else Y


# the clock of the budgets' timings (stored in their fingerprints, so that a change of clock re-measures)
MEASURED_CLOCK = "process_cpu"
# stages of one timed fit: a budget's seconds per stage are a fit of this many stages divided by it
PROBE_STAGES = 10


#: how a budget times one stage (``tune.budget.per_stage``): ``average``, a fit of PROBE_STAGES stages divided by
#: PROBE_STAGES, so the fit's one-off set-up (the presorted builder's sort of X, the index of its two-valued
#: features) is spread over the probe's stages; ``marginal``, the stages' own work only, read off the CPU clock of
#: one fit of MARGINAL_STAGES stages between the end of its first stage and the end of its last; ``sklearn_trees``,
#: scikit-learn's decision trees fitting the regression targets of one stage (``sklearn_stage_seconds``);
#: ``sklearn_trees_plus_outputs``, those trees plus the stage's per-output work in forestbench's loop
#: (``output_stage_seconds``)
PER_STAGE = tuning.PER_STAGE
MARGINAL_STAGES = 3 * PROBE_STAGES
#: timed fits per measurement of a budget job: of the reference T, of each candidate (their median counts)
REFERENCE_REPEATS = 5
CANDIDATE_REPEATS = 3


def seconds_per_stage(make, params: dict, X, Y, staged: str, probe_stages: int = PROBE_STAGES,
                      repeats: int = CANDIDATE_REPEATS, per_stage: str = "average") -> float:
    """Median seconds per stage of ``make(params)`` on (X, Y), in CPU time of the process: the fit's own work,
    which other jobs on the machine do not inflate as they inflate wall time (a stump stage of gbmort on birds'
    training part: 4.1 ms of wall in a budget job beside two long fits and a test run on two cores, 1.6-1.7 ms of
    wall and 1.15 ms of CPU beside the two fits alone). For the single-threaded fits that budgets time, CPU and
    wall agree on an idle machine.

    ``per_stage="average"``: a fit of ``probe_stages`` stages divided by ``probe_stages``, its one-off set-up
    included. ``"marginal"``: a fit of ``3 * probe_stages`` stages whose estimator records the process' CPU clock
    after every stage (``stage_fit_cpu_seconds_``, as forestbench's boosting does); the clock's advance from the
    end of the first stage to the end of the last, over the stages between, is the cost of one more stage with the
    set-up left out (on scene's fit rows the set-up of gbmort's presorted trees is about 17 ms, 1.7 ms of each of
    the 10 stages that ``average`` times, where a stump stage on sqrt(p) features costs 0.2 ms). An estimator
    without that record is timed by two fits, of ``3 * probe_stages`` and of ``probe_stages`` stages, whose
    difference is divided by the stages between them; a repeat whose difference is not positive counts the longer
    fit's average. (The difference of two fits spreads widely: the set-up's own variation is of the order of 20
    stages of a stump; the one-fit clock has none of it.)"""
    if per_stage not in PER_STAGE:
        raise ConfigError(f"tune.budget.per_stage must be one of {', '.join(PER_STAGE)}, not {per_stage!r}")
    if per_stage in tuning.SKLEARN_CLOCKS:
        raise ConfigError(f"tune.budget.per_stage {per_stage} times scikit-learn's trees on a stage's targets "
                          "(sklearn_stage_seconds), not a fit of the method itself")

    def fit(stages: int):
        est = make({**params, staged: stages})
        t0 = time.process_time()
        est.fit(X, Y)
        return est, time.process_time() - t0

    times = []
    long_stages = 3 * probe_stages
    for _ in range(repeats):
        if per_stage == "average":
            times.append(fit(probe_stages)[1] / probe_stages)
            continue
        est, long = fit(long_stages)
        clock = getattr(est, "stage_fit_cpu_seconds_", None)
        if clock is not None and len(clock) == long_stages:
            times.append(max(float(clock[-1] - clock[0]), 0.0) / (long_stages - 1))
            continue
        extra = (long - fit(probe_stages)[1]) / (long_stages - probe_stages)
        times.append(extra if extra > 0 else long / long_stages)
    return float(np.median(times))


def first_stage_residuals(Y) -> np.ndarray:
    """The negative gradient a boosting fit's first stage grows its trees on: the outputs less their means (the
    square loss from its constant start; the logistic loss from its log-odds start gives the same), ``n x d``."""
    Y = _as_2d(Y)
    return Y - Y.mean(axis=0)


#: the tree parameters of a candidate that scikit-learn's trees are given under ``per_stage: sklearn_trees``; the
#: learning rate and the loss do not change the first stage's trees (``first_stage_residuals``)
SKLEARN_TREE_PARAMS = ("max_leaf_nodes", "max_features")


def sklearn_stage_key(params: dict, staged: str) -> dict:
    """What a stage timed by scikit-learn's trees depends on: the tree parameters, and the method's other
    parameters but the learning rate, the loss and the staged count (a projection's kind and size)."""
    return {"params": {k: v for k, v in params.items()
                       if k not in SKLEARN_TREE_PARAMS and k not in ("learning_rate", "loss", staged)},
            "tree": {k: params[k] for k in SKLEARN_TREE_PARAMS if k in params}}


def sklearn_stage_seconds(X, targets: list, params: dict, seed: int | None = None,
                          repeats: int = CANDIDATE_REPEATS) -> float:
    """Median CPU seconds of scikit-learn's ``DecisionTreeRegressor`` fitting every regression target of one stage
    (``targets``, the method's ``stage_targets``) with the candidate's ``max_leaf_nodes`` and ``max_features``: the
    clock of a stage in the boosting paper's implementation, whose trees were scikit-learn 0.16's, sorting the
    node's samples on every candidate feature (as scikit-learn's trees still do). X is given to the trees as its
    gradient boosting gives it to them: dense float32 in C order, checked once (``check_input=False``)."""
    from sklearn.tree import DecisionTreeRegressor

    X = np.ascontiguousarray(X.toarray() if sp.issparse(X) else X, dtype=np.float32)
    Zs = [np.ascontiguousarray(Z.toarray() if sp.issparse(Z) else Z, dtype=np.float64) for Z in targets]
    tree = {k: params[k] for k in SKLEARN_TREE_PARAMS if params.get(k) is not None}
    times = []
    for _ in range(repeats):
        t0 = time.process_time()
        for Z in Zs:
            DecisionTreeRegressor(**tree, random_state=seed).fit(X, Z, check_input=False)
        times.append(time.process_time() - t0)
    return float(np.median(times))


#: what a stage's per-output work does not depend on: the features drawn per split and the learning rate change
#: the trees and the step sizes, not the passes over the n x d outputs (the gradient, the projection of it, the
#: line search per leaf and output, the update of the scores)
OUTPUT_FREE_PARAMS = ("max_features", "learning_rate")
#: how the per-output work is measured: one feature per split and the kernel's own tree builder (it sorts the
#: node's rows on that feature alone) keep the trees' share of the probe small. The presorted builder then
#: partitioned every feature's order at every split: on corel5k (499 inputs, 374 outputs) br-gbrt's 8-leaf probe
#: took 38 s of it for 6 stages (1.0 s with the kernel), and the per-output work after such partitions read
#: 1.4-1.9x higher at 8 leaves (the same at 2), the orders it moves having left the caches. Its gather layout
#: (k << p) has since removed that cost; the probe stays on the kernel so that archived measurements and new ones
#: are of one probe
OUTPUT_PROBE = {"max_features": 1, "learning_rate": 0.1, "tree_builder": "kernel"}


def output_stage_key(params: dict, staged: str) -> dict:
    """What a stage's per-output work depends on (``output_stage_seconds``): the candidate's parameters but
    ``OUTPUT_FREE_PARAMS`` and the staged count (the loss, the leaves, a projection's kind and size)."""
    return {k: v for k, v in params.items() if k not in OUTPUT_FREE_PARAMS and k != staged}


def output_stage_seconds(make, params: dict, X, Y, staged: str, repeats: int = CANDIDATE_REPEATS) -> float:
    """Median CPU seconds of one stage's per-output work in forestbench's boosting loop, under ``per_stage:
    sklearn_trees_plus_outputs``: the part of a stage that is not its trees (gradient, projection, line search
    and score update, O(n d) per stage whatever the trees), which a stage of the paper's implementation pays too.
    One fit of ``MARGINAL_STAGES`` stages with the candidate's ``output_stage_key`` parameters, ``OUTPUT_PROBE``
    (one feature per split, the kernel's tree builder) and ``monitor_tree_time``: the clock's advance from the end
    of its first stage to the end of its last less the trees' growth over the same stages, over the stages
    between. The trees' share counts what the tree builder
    computes, the leaf values over all d outputs of gbmort's and gbrt-relabel-rpo's trees included (scikit-learn's
    gbmort tree computes them too; the relabelling of a projected tree's leaves is so left out of both readings);
    the two clock reads per tree (about 0.2 us each) count as output work."""
    times = []
    for _ in range(repeats):
        est = make({**output_stage_key(params, staged), **OUTPUT_PROBE, staged: MARGINAL_STAGES,
                    "monitor_tree_time": True})
        est.fit(X, Y)
        clock = getattr(est, "stage_fit_cpu_seconds_", None)
        trees = getattr(est, "stage_tree_cpu_seconds_", None)
        if clock is None or trees is None or len(clock) != MARGINAL_STAGES or len(trees) != MARGINAL_STAGES:
            raise ConfigError(f"{type(est).__name__} records no per-stage CPU of its fit and of its trees "
                              "(stage_fit_cpu_seconds_, stage_tree_cpu_seconds_ with monitor_tree_time=True): "
                              "tune.budget.per_stage sklearn_trees_plus_outputs cannot time its per-output work")
        work = float(clock[-1] - clock[0]) - float(trees[-1] - trees[0])
        times.append(max(work, 0.0) / (MARGINAL_STAGES - 1))
    return float(np.median(times))


def budget_caps(make, candidates: list[dict], X, Y, staged: str, budget: float, reference_seconds: float,
                default_stages: int, per_stage: str = "average") -> dict[str, dict]:
    """Per candidate (by ``tuning.candidate_id``): the cap on ``staged`` so that one fit costs at most
    ``budget x reference_seconds`` (the reference time T of one iteration), from this candidate's measured seconds
    per stage. Measured once and stored (the workflow's budget file), so that reruns elsewhere select alike."""
    return {tuning.candidate_id(params): stage_cap(params, seconds_per_stage(make, params, X, Y, staged,
                                                                             per_stage=per_stage),
                                                   staged, budget, reference_seconds, default_stages)
            for params in candidates}


def stage_cap(params: dict, per_stage: float, staged: str, budget: float, reference_seconds: float,
              default_stages: int) -> dict:
    """One candidate's entry of the budget file: the most stages of ``staged`` that fit in
    ``budget x reference_seconds`` at ``per_stage`` seconds each (at least 1, at most the configured count)."""
    limit = int(params.get(staged) or default_stages)
    cap = max(1, min(limit, int(budget * reference_seconds / max(per_stage, 1e-12))))
    return {"params": params, "seconds_per_stage": per_stage, "n_stages_max": cap}


def _compiled_curve(est, metric: str, X_fit, Y_fit, X_val, Y_val) -> np.ndarray | None:
    """Fit ``est`` and return its staged validation curve computed inside its own fit loop, when it offers one
    (``fit(X, Y, eval_set=(X_val, Y_val))`` filling ``eval_sse_``, as the boosting estimators do) for a metric it
    determines exactly (``macro_r2`` with non-constant validation outputs, ``mse``) and raw scores that are the
    predictions (not the logistic loss). Else None, and the caller scores ``staged_predict``."""
    import inspect

    if metric not in ("macro_r2", "mse") or getattr(est, "loss", None) == "logistic":
        return None
    try:
        if "eval_set" not in inspect.signature(est.fit).parameters:
            return None
    except (TypeError, ValueError):
        return None
    Yv = _as_2d(Y_val)
    sst = ((Yv - Yv.mean(axis=0)) ** 2).sum(axis=0)
    if metric == "macro_r2" and not np.all(sst > 0):
        return None
    est.fit(X_fit, Y_fit, eval_set=(X_val, Yv))
    sse = np.asarray(getattr(est, "eval_sse_", None), dtype=float)
    if sse.ndim != 2 or sse.shape[1] != Yv.shape[1]:
        return None
    if metric == "mse":
        return sse.sum(axis=1) / Yv.size
    return np.mean(1.0 - sse / sst, axis=1)


def evaluate_candidate(make, params: dict, X, Y, folds, metric: str, staged: str | None = None,
                       n_stages: int | None = None, y_metric=None) -> dict:
    """Validation score of one candidate: ``make(params) -> estimator``; ``folds`` from
    ``tuning.validation_folds``. Returns ``{"params", "score", "fold_scores", "fit_seconds"}`` plus, when staged,
    ``{"best_stage", "stages", "curve"}`` (the mean staged curve over the folds at the scored stages)."""
    m = get_metric(metric)
    sign = 1.0 if m.higher_is_better else -1.0
    Y_metric = _as_2d(Y if y_metric is None else y_metric)
    fold_scores, curves, fit_seconds = [], [], 0.0
    stages = None
    for fit_rows, val_rows in folds:
        est = make(dict(params))
        X_val, Y_val, Y_fit = _rows(X, val_rows), Y_metric[val_rows], Y_metric[fit_rows]
        t0 = time.perf_counter()
        compiled = _compiled_curve(est, metric, _rows(X, fit_rows), _rows(Y, fit_rows), X_val, Y_val) \
            if staged else None
        if compiled is None:
            est.fit(_rows(X, fit_rows), _rows(Y, fit_rows))
        fit_seconds += time.perf_counter() - t0
        if compiled is not None:
            total = len(compiled)
            stages = tuning.scored_stages(total)
            curves.append(compiled[stages - 1])
        elif staged:
            if not hasattr(est, "staged_predict"):
                raise ConfigError(f"tune.staged: the estimator {type(est).__name__} has no staged_predict")
            total = n_stages or int(params.get(staged) or getattr(est, staged))
            stages = tuning.scored_stages(total)
            wanted, curve = set(stages.tolist()), []
            for i, pred in enumerate(est.staged_predict(X_val), start=1):
                if i in wanted:
                    curve.append(m(Y_val, _as_2d(pred), Y_fit))
            stages = stages[: len(curve)]
            curves.append(np.asarray(curve, dtype=float))
        else:
            fold_scores.append(float(m(Y_val, _as_2d(est.predict(X_val)), Y_fit)))
    out = {"params": dict(params), "fit_seconds": fit_seconds}
    if staged:
        length = min(len(c) for c in curves)
        mean = np.mean([c[:length] for c in curves], axis=0)
        finite = np.where(np.isfinite(mean), sign * mean, -np.inf)
        best = int(np.argmax(finite))
        out.update(best_stage=int(stages[best]), stages=stages[:length].tolist(), curve=mean.tolist(),
                   score=float(mean[best]), fold_scores=[float(c[best]) for c in curves])
    else:
        out.update(score=float(np.mean(fold_scores)), fold_scores=fold_scores)
    return out


def capped(params: dict, caps: dict | None, staged: str | None) -> dict:
    """``params`` with the staged parameter set to its budget cap, when a cap is known for this candidate."""
    if not caps or not staged:
        return dict(params)
    cap = caps.get(tuning.candidate_id(params))
    if cap is None:
        raise ConfigError(f"tune.budget: no stage cap for candidate {params}; rerun the budget job")
    return {**params, staged: int(cap["n_stages_max"])}


def choose(results: list[dict], metric: str, staged: str | None = None) -> dict:
    """The best of ``evaluate_candidate`` results (ties: the first in candidate order), as
    ``{"params", "score", "index"}``; with ``staged``, ``params[staged]`` is the best stage."""
    if not results:
        raise ConfigError("tune: no candidate was evaluated")
    sign = 1.0 if get_metric(metric).higher_is_better else -1.0
    scores = [_score(r["score"]) for r in results]
    keys = [sign * s if np.isfinite(s) else -np.inf for s in scores]
    index = int(np.argmax(keys))  # every score undefined: the first candidate, as for ties
    best = results[index]
    params = dict(best["params"])
    if staged:
        params[staged] = int(best["best_stage"])
    return {"params": params, "score": scores[index], "index": index}


def _score(value) -> float:
    """A validation score as a float: an undefined one (NaN in memory, null once stored as JSON) is NaN."""
    return float("nan") if value is None else float(value)


class GridSelection(MetaEstimatorMixin, BaseEstimator):
    """Select ``estimator``'s parameters among ``grid`` (a mapping of lists, or a list of candidate mappings) on
    validation folds of the rows given to ``fit``.

    Parameters
    ----------
    estimator : estimator, cloned for every fit.
    grid : dict of lists or list of dicts.
    validation : ``{"holdout": h}`` or ``{"kfold": K}`` (stratified for single-label class ids when
        ``stratify=True``).
    metric : name of a ``forestbench.metrics`` metric (scores are one column per output / class).
    staged : parameter chosen from staged validation scores (e.g. ``"n_estimators"``), or None.
    refit : refit the best parameters on all rows (True) or keep them fitted without the validation rows (holdout
        only).
    n_candidates : a seeded random subset of the grid.
    stage_caps : ``{candidate_id: {"n_stages_max": m, ...}}`` from ``budget_caps``: the staged parameter of each
        candidate is capped at ``m`` (a time budget turned into stage counts).
    random_state : seed of the folds and of the candidate subset.

    Fitted attributes: ``best_params_``, ``best_score_``, ``best_index_``, ``best_estimator_``, ``cv_results_``
    (one entry per candidate with its fold scores and, when staged, its validation curve).
    """

    def __init__(self, estimator, grid, *, validation=None, metric="macro_r2", staged=None, refit=True,
                 n_candidates=None, stage_caps=None, stratify=False, random_state=0):
        self.estimator = estimator
        self.grid = grid
        self.validation = validation
        self.metric = metric
        self.staged = staged
        self.refit = refit
        self.n_candidates = n_candidates
        self.stage_caps = stage_caps
        self.stratify = stratify
        self.random_state = random_state

    def _candidates(self):
        if isinstance(self.grid, dict):
            tune = tuning.normalise({"grid": self.grid, "n_candidates": self.n_candidates, "metric": self.metric,
                                     "validation": self.validation or {"holdout": 0.2}, "staged": self.staged,
                                     "refit": self.refit},
                                    where="GridSelection", metrics=[self.metric])
            return tuning.candidates(tune, int(self.random_state or 0))
        return [dict(c) for c in self.grid]

    def _make(self, params):
        return clone(self.estimator).set_params(**params)

    def fit(self, X, Y):
        validation = self.validation or {"holdout": 0.2}
        seed = int(self.random_state or 0)
        n = X.shape[0]
        y_strat = np.asarray(Y).ravel() if self.stratify else None
        folds = tuning.validation_folds(n, validation, seed, y_strat)
        results = []
        for params in self._candidates():
            results.append(evaluate_candidate(self._make, capped(params, self.stage_caps, self.staged), X, Y, folds,
                                              self.metric, self.staged))
        best = choose(results, self.metric, self.staged)
        self.cv_results_ = results
        self.best_params_, self.best_score_, self.best_index_ = best["params"], best["score"], best["index"]
        if self.refit:
            self.best_estimator_ = self._make(self.best_params_).fit(X, Y)
        else:
            fit_rows = folds[0][0]
            self.best_estimator_ = self._make(self.best_params_).fit(_rows(X, fit_rows), _rows(Y, fit_rows))
        return self

    def predict(self, X):
        return self.best_estimator_.predict(X)

    def run_info_(self) -> dict:
        """What the run record keeps of the selection (see ``forestbench.workflow.runner``)."""
        return {"selection": summary(self.cv_results_, self.best_params_, self.best_score_, self.metric,
                                     self.staged)}


def summary(results: list[dict], best_params: dict, best_score: float, metric: str, staged: str | None) -> dict:
    """The record's view of a selection: the selected parameters and score, and every candidate's validation
    score (and a thinned staged curve: 1, 2, 5, 10, ... stages)."""
    candidates = []
    for r in results:
        item = {"params": r["params"], "score": r["score"], "fold_scores": r["fold_scores"]}
        if staged and r.get("stages"):
            keep = set(tuning.record_stages(int(r["stages"][-1])))
            pairs = [(s, v) for s, v in zip(r["stages"], r["curve"]) if s in keep]
            item.update(best_stage=r["best_stage"], curve={str(s): v for s, v in pairs})
        candidates.append(item)
    return {"metric": metric, "staged": staged, "best_params": best_params, "best_score": best_score,
            "n_candidates": len(results), "candidates": candidates}
