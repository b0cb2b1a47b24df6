"""Fit, predict and score one method configuration on one split of one dataset, and write its run record.

This is what one ``fit`` job of the workflow does; it knows nothing of Snakemake. Everything it needs comes in a
resolved run specification (a plain dict, stored in the record):
``{experiment, dataset, variant, method, params, metrics, repeat, seed, threads, expected_shape}``.
"""
from __future__ import annotations

import pickle
import resource
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from forestbench.datasets.splits import load_split
from forestbench.datasets.store import load_dataset, read_header
from forestbench.errors import ConfigError
from forestbench.methods import build_estimator, get_method
from forestbench.metrics import get_metric, score_all
from forestbench.records import write_record


def _rows(M, idx):
    return M[idx] if not sp.issparse(M) else M.tocsr()[idx] if M.format != "csr" else M[idx]


# parameters of a run that are not estimator parameters
RUN_PARAMETERS = ("input_layout",)


def with_layout(X, layout: str | None):
    """X in the memory layout a timing experiment asks for: dense ``c`` / ``fortran`` (float32), ``csc`` or ``csr``."""
    if layout is None:
        return X
    if layout in ("c", "fortran"):
        dense = X.toarray() if sp.issparse(X) else X
        order = "C" if layout == "c" else "F"
        return np.asarray(dense, dtype=np.float32, order=order)
    if layout in ("csc", "csr"):
        return sp.csc_matrix(X) if layout == "csc" else sp.csr_matrix(X)
    raise ConfigError(f"input_layout must be one of c, fortran, csc, csr; not {layout!r}")


def _timed(func, *args):
    wall, cpu = time.perf_counter(), time.process_time()
    out = func(*args)
    return out, time.perf_counter() - wall, time.process_time() - cpu


def model_size(model) -> dict:
    """Number of tree nodes (summed over an ensemble) and the model's size in bytes."""
    trees = []
    if hasattr(model, "tree_"):
        trees = [model]
    elif hasattr(model, "estimators_"):
        trees = [e for e in np.ravel(np.asarray(model.estimators_, dtype=object)) if hasattr(e, "tree_")]
    n_nodes = int(sum(t.tree_.node_count for t in trees)) if trees else getattr(model, "n_nodes_", None)
    n_bytes = getattr(model, "model_bytes_", None)
    if n_bytes is None:
        n_bytes = len(pickle.dumps(model, protocol=pickle.HIGHEST_PROTOCOL))
    return {"n_nodes": n_nodes, "bytes": int(n_bytes)}


def run(spec: dict, prepared: str | Path, split_file: str | Path, out: str | Path, extra: dict | None = None) -> dict:
    from threadpoolctl import threadpool_limits

    header = read_header(prepared)
    ds = load_dataset(prepared, expected_shape=spec.get("expected_shape"))
    train, test, split_info = load_split(split_file, int(spec["repeat"]))
    method = get_method(spec["method"])
    metrics = [m for m in map(get_metric, spec["metrics"]) if m.applies_to(ds.task)]

    params = dict(spec.get("params", {}))
    layout = params.pop("input_layout", None)
    X_train, X_test = with_layout(_rows(ds.X, train), layout), with_layout(_rows(ds.X, test), layout)
    Y_train, Y_test = _rows(ds.Y, train), _rows(ds.Y, test)
    Y_fit = Y_train
    if sp.issparse(Y_fit) and not method.sparse_y:
        Y_fit = Y_fit.toarray()
    if not sp.issparse(Y_fit) and Y_fit.ndim == 2 and Y_fit.shape[1] == 1:
        Y_fit = Y_fit.ravel()

    estimator = build_estimator(spec["method"], params, spec.get("seed"))
    with threadpool_limits(limits=int(spec.get("threads", 1))):
        _, fit_wall, fit_cpu = _timed(estimator.fit, X_train, Y_fit)
        Y_pred, pred_wall, pred_cpu = _timed(estimator.predict, X_test)
    Y_pred = np.asarray(Y_pred, dtype=np.float64)
    if Y_pred.ndim == 1:
        Y_pred = Y_pred[:, None]

    scores, undefined = score_all(metrics, Y_test, Y_pred, Y_train,
                                  context=f"{spec['dataset']}/{spec['variant']} repeat {spec['repeat']}")
    record = {
        "spec": spec,
        "experiment": spec["experiment"], "dataset": spec["dataset"], "variant": spec["variant"],
        "method": spec["method"], "params": spec.get("params", {}), "repeat": int(spec["repeat"]),
        "seed": spec.get("seed"),
        "scores": scores, "undefined_scores": undefined,
        "higher_is_better": {m.name: m.higher_is_better for m in metrics},
        "fit_wall_s": fit_wall, "fit_cpu_s": fit_cpu, "predict_wall_s": pred_wall, "predict_cpu_s": pred_cpu,
        "model": model_size(estimator),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
        "n_train": int(len(train)), "n_test": int(len(test)),
        "data": {"prepared_sha256": header["content_sha256"], "shape": header["shape"], **split_info},
        "job": extra or {},
    }
    write_record(out, record)
    return record
