"""Fit, predict and score one method configuration on one split of one dataset, and write its run record.

This is what one ``fit`` job of the workflow does; it knows nothing of Snakemake. Everything it needs comes in a
resolved run specification (a plain dict, stored in the record):
``{experiment, dataset, variant, method, params, metrics, repeat, seed, threads, expected_shape}``.
"""
from __future__ import annotations

import hashlib
import pickle
import resource
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from forestbench.datasets.splits import load_split
from forestbench.datasets.store import load_dataset, read_header
from forestbench.errors import ConfigError
from forestbench.workflow.methods import get_method, load_plugins
from forestbench.metrics import get_metric, score_all
from forestbench.workflow.records import write_record
from forestbench.workflow.variants import RUN_PARAMETERS  # noqa: F401  (re-exported: run parameters are not the estimator's)


def _rows(M, idx):
    idx = np.asarray(idx)
    if idx.shape[0] == M.shape[0] and np.array_equal(idx, np.arange(M.shape[0])):
        return M  # every row in order (train = test = all rows): no copy
    return M[idx] if not sp.issparse(M) else M.tocsr()[idx] if M.format != "csr" else M[idx]


LAYOUTS = ("c", "fortran", "csc", "csr")


def check_layout(layout, what: str = "input_layout") -> None:
    if layout is not None and layout not in LAYOUTS:
        raise ConfigError(f"{what} must be one of {', '.join(LAYOUTS)}; not {layout!r}")


def predict_layout_of(params: dict) -> str | None:
    """The layout X_test is given in: ``predict_layout`` if set, else the fit layout, except that a tree fitted on
    CSC predicts from CSR (thesis Sec. 8.2: CSR is the layout made for row-wise traversal)."""
    layout = params.get("input_layout")
    check_layout(layout)
    pred = params.get("predict_layout", "csr" if layout == "csc" else layout)
    check_layout(pred, "predict_layout")
    return pred


def with_layout(X, layout: str | None):
    """X in the memory layout a timing experiment asks for: dense ``c`` / ``fortran`` (float32), ``csc`` or ``csr``."""
    check_layout(layout)
    if layout is None:
        return X
    if layout in ("c", "fortran"):
        dense = X.toarray() if sp.issparse(X) else X
        order = "C" if layout == "c" else "F"
        return np.asarray(dense, dtype=np.float32, order=order)
    out = sp.csc_matrix(X) if layout == "csc" else sp.csr_matrix(X)
    if out.dtype != np.float32:
        out = out.astype(np.float32)
    return out


def input_density(X) -> float:
    """Fraction of non-zero entries of X (explicitly stored zeros are not counted)."""
    size = float(X.shape[0]) * float(X.shape[1])
    if size == 0:
        return float("nan")
    nnz = int(np.count_nonzero(X.data)) if sp.issparse(X) else int(np.count_nonzero(X))
    return nnz / size


def _trees(model) -> list:
    if hasattr(model, "tree_"):
        return [model]
    if hasattr(model, "estimators_"):
        return [e for e in np.ravel(np.asarray(model.estimators_, dtype=object)) if hasattr(e, "tree_")]
    return []


def tree_fingerprint(model) -> str | None:
    """sha256 of the structure of the fitted tree(s): children, split features, thresholds and node sample counts,
    tree after tree. Two fits grew the same trees iff their fingerprints are equal (leaf values are left out: they
    are means accumulated in a layout-dependent order and may differ in the last bit)."""
    trees = _trees(model)
    if not trees:
        return None
    h = hashlib.sha256()
    for t in trees:
        tree = t.tree_
        for name, dtype in (("children_left", np.int64), ("children_right", np.int64), ("feature", np.int64),
                            ("threshold", np.float64), ("n_node_samples", np.int64)):
            h.update(np.ascontiguousarray(getattr(tree, name), dtype=dtype).tobytes())
    return h.hexdigest()


def _timed(func, *args):
    wall, cpu = time.perf_counter(), time.process_time()
    out = func(*args)
    return out, time.perf_counter() - wall, time.process_time() - cpu


def model_size(model) -> dict:
    """Number of tree nodes (summed over an ensemble) and the model's size in bytes."""
    trees = _trees(model)
    n_nodes = int(sum(t.tree_.node_count for t in trees)) if trees else getattr(model, "n_nodes_", None)
    n_bytes = getattr(model, "model_bytes_", None)
    if n_bytes is None:
        n_bytes = len(pickle.dumps(model, protocol=pickle.HIGHEST_PROTOCOL))
    max_depth = max((int(t.tree_.max_depth) for t in trees), default=None)
    return {"n_nodes": n_nodes, "bytes": int(n_bytes), "max_depth": max_depth,
            "tree_sha256": tree_fingerprint(model)}


def staged_record(estimator, X_test, Y_test, Y_train, metrics, fit_wall: float) -> dict:
    """``{"staged_scores": {metric: {step: value}}, "staged": {"steps", "n_trees", "fit_seconds"}}``."""
    from forestbench.workflow.tuning import record_stages

    n_stages = _n_stages(estimator)
    wanted = set(record_stages(n_stages)) if n_stages else None
    scores: dict[str, dict[str, float]] = {m.name: {} for m in metrics}
    steps = []
    last = None
    for i, pred in enumerate(estimator.staged_predict(X_test), start=1):
        last = i
        if wanted is not None and i not in wanted:
            continue
        pred = _as_2d_float(pred)
        steps.append(i)
        for m in metrics:
            scores[m.name][str(i)] = _finite_or_none(m(Y_test, pred, Y_train))
    if wanted is None and last is not None:  # the stage count was unknown: keep the log-spaced stages found
        keep = set(record_stages(last))
        steps = [s for s in steps if s in keep]
        scores = {k: {s: v for s, v in vals.items() if int(s) in keep} for k, vals in scores.items()}
    total = last or 1
    n_trees = getattr(estimator, "stage_n_trees_", None)
    seconds = getattr(estimator, "stage_fit_seconds_", None)
    return {
        "staged_scores": scores,
        "staged": {
            "steps": steps,
            "n_trees": [int(n_trees[s - 1]) if n_trees is not None and len(n_trees) >= s else s for s in steps],
            "fit_seconds": [float(seconds[s - 1]) if seconds is not None and len(seconds) >= s
                            else fit_wall * s / total for s in steps],
            "n_stages": total,
        },
    }


def _n_stages(estimator) -> int | None:
    for attr in ("n_estimators_", "n_iter_", "n_estimators"):
        value = getattr(estimator, attr, None)
        if isinstance(value, (int, np.integer)) and value >= 1:
            return int(value)
    return None


def _as_2d_float(Y):
    Y = np.asarray(Y.toarray() if sp.issparse(Y) else Y, dtype=np.float64)
    return Y[:, None] if Y.ndim == 1 else Y


def _finite_or_none(value):
    value = float(value)
    return value if np.isfinite(value) else None


class HoldoutFit:
    """The model a selection keeps with ``refit: false``: the selected estimator fitted on the fit rows of the
    holdout only (the rows the candidates were fitted on), as ``GridSelection(refit=False)`` keeps it."""

    def __init__(self, estimator, fit_rows):
        self.best_estimator_ = estimator
        self.fit_rows = fit_rows

    def fit(self, X, Y):
        from forestbench.workflow.selection import _rows as rows_of

        self.best_estimator_.fit(rows_of(X, self.fit_rows), rows_of(Y, self.fit_rows))
        return self

    def predict(self, X):
        return self.best_estimator_.predict(X)


def _with_selection(estimator, spec: dict, method, task: str, selected: dict | None, budget: dict | None,
                    params: dict, Y_fit, train, test):
    """The estimator to fit: as it is, the DAG-selected parameters fitted as the in-job selection would (refitted
    on the training part, or on the holdout's fit rows with ``refit: false``), or wrapped in an in-job
    ``GridSelection`` (``tune.mode: inner``). ``params`` are the estimator's fixed parameters (no run parameters)."""
    tune = spec.get("tune")
    if not tune:
        return estimator, None
    stratify = task in ("binary", "multiclass")
    if tune["mode"] == "dag":
        if selected is None:
            raise ConfigError(f"{spec['experiment']}/{spec['variant']}: tuned with mode dag, but no --selected "
                              "file was given (the workflow's select rule writes it)")
        chosen = method.build({**params, **selected["params"]}, spec.get("seed"), task)
        if tune["refit"]:
            return chosen, selected
        from forestbench.workflow.tuning import folds_of

        y_strat = np.asarray(Y_fit).ravel() if stratify else None
        (fit_rows, _), = folds_of(spec, len(train), np.asarray(train), np.asarray(test), y_strat)
        return HoldoutFit(chosen, fit_rows), selected
    from forestbench.workflow.selection import GridSelection
    from forestbench.workflow.tuning import candidates

    return GridSelection(estimator, candidates(tune, int(tune.get("seed", 0))), validation=tune["validation"],
                         metric=tune["metric"], staged=tune["staged"], refit=tune["refit"],
                         stage_caps=(budget or {}).get("caps"), stratify=stratify,
                         random_state=spec.get("seed")), None


def run(spec: dict, prepared: str | Path, split_file: str | Path, out: str | Path, extra: dict | None = None,
        selected: dict | None = None, budget: dict | None = None) -> dict:
    from threadpoolctl import threadpool_limits

    load_plugins(spec.get("plugins"))
    header = read_header(prepared)
    ds = load_dataset(prepared, expected_shape=spec.get("expected_shape"))
    train, test, split_info = load_split(split_file, int(spec["repeat"]))
    method = get_method(spec["method"])
    metrics = [m for m in map(get_metric, spec["metrics"]) if m.applies_to(ds.task)]

    params = dict(spec.get("params", {}))
    test_layout = predict_layout_of(params)
    layout = params.pop("input_layout", None)
    params.pop("predict_layout", None)
    X_train, X_test = with_layout(_rows(ds.X, train), layout), with_layout(_rows(ds.X, test), test_layout)
    Y_train, Y_test = _rows(ds.Y, train), _rows(ds.Y, test)
    Y_fit = Y_train
    if sp.issparse(Y_fit) and not method.sparse_y:
        Y_fit = Y_fit.toarray()
    if not sp.issparse(Y_fit) and Y_fit.ndim == 2 and Y_fit.shape[1] == 1:
        Y_fit = Y_fit.ravel()

    # the dataset's task reaches the estimator (registry task_params) instead of being guessed from y's values
    estimator = method.build(params, spec.get("seed"), ds.task)
    if (spec.get("tune") or {}).get("budget") and budget is None and spec["tune"]["mode"] == "inner":
        raise ConfigError(f"{spec['experiment']}/{spec['variant']}: tune.budget needs the budget file (--budget)")
    estimator, selection = _with_selection(estimator, spec, method, ds.task, selected, budget, params, Y_fit,
                                           train, test)
    with threadpool_limits(limits=int(spec.get("threads", 1))):
        _, fit_wall, fit_cpu = _timed(estimator.fit, X_train, Y_fit)
        Y_pred, pred_wall, pred_cpu = _timed(estimator.predict, X_test)
    Y_pred = _as_2d_float(Y_pred)

    scores, undefined = score_all(metrics, Y_test, Y_pred, Y_train,
                                  context=f"{spec['dataset']}/{spec['variant']} repeat {spec['repeat']}")
    final = getattr(estimator, "best_estimator_", estimator)
    record = {
        "spec": spec,
        "experiment": spec["experiment"], "dataset": spec["dataset"], "variant": spec["variant"],
        "method": spec["method"], "params": spec.get("params", {}), "repeat": int(spec["repeat"]),
        "task_params": method.params_for_task(ds.task, params),
        "seed": spec.get("seed"),
        "scores": scores, "undefined_scores": undefined,
        "higher_is_better": {m.name: m.higher_is_better for m in metrics},
        "fit_wall_s": fit_wall, "fit_cpu_s": fit_cpu, "predict_wall_s": pred_wall, "predict_cpu_s": pred_cpu,
        "model": model_size(final),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
        "n_train": int(len(train)), "n_test": int(len(test)),
        "data": {"prepared_sha256": header["content_sha256"], "shape": header["shape"],
                 "input_density": input_density(X_train), "fit_layout": layout, "predict_layout": test_layout,
                 **split_info},
        "job": extra or {},
    }
    if hasattr(final, "staged_predict"):
        record.update(staged_record(final, X_test, Y_test, Y_train, metrics,
                                    fit_wall if final is estimator else _refit_seconds(estimator, fit_wall)))
    info = {}
    if hasattr(estimator, "run_info_"):
        info.update(estimator.run_info_())
    if final is not estimator and hasattr(final, "run_info_"):
        info.update(final.run_info_())
    if selection is not None:
        info["selection"] = selection
    if "selection" in info:
        record["selected_params"] = info["selection"]["best_params"]
        record["validation_score"] = info["selection"]["best_score"]
    if budget is not None:
        info["budget"] = {"reference_seconds": budget["reference_seconds"], "multiple": budget["multiple"],
                          "n_stages_max": {k: v["n_stages_max"] for k, v in budget["caps"].items()}}
    if info:
        record["extra"] = info
    write_record(out, record)
    return record


def _refit_seconds(selection, total: float) -> float:
    """Fit time of the refitted final model of an in-job selection (the total minus the candidates' fits)."""
    spent = sum(r.get("fit_seconds", 0.0) for r in getattr(selection, "cv_results_", []))
    return max(total - spent, 0.0)
