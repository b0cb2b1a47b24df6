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
from forestbench.methods import build_estimator, get_method
from forestbench.metrics import get_metric
from forestbench.records import write_record


def _rows(M, idx):
    idx = np.asarray(idx)
    if idx.shape[0] == M.shape[0] and np.array_equal(idx, np.arange(M.shape[0])):
        return M  # every row in order (train = test = all rows): no copy
    return M[idx] if not sp.issparse(M) else M.tocsr()[idx] if M.format != "csr" else M[idx]


# parameters of a run that are not estimator parameters
RUN_PARAMETERS = ("input_layout", "predict_layout")
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


def run(spec: dict, prepared: str | Path, split_file: str | Path, out: str | Path, extra: dict | None = None) -> dict:
    from threadpoolctl import threadpool_limits

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

    estimator = build_estimator(spec["method"], params, spec.get("seed"))
    with threadpool_limits(limits=int(spec.get("threads", 1))):
        _, fit_wall, fit_cpu = _timed(estimator.fit, X_train, Y_fit)
        Y_pred, pred_wall, pred_cpu = _timed(estimator.predict, X_test)
    Y_pred = np.asarray(Y_pred, dtype=np.float64)
    if Y_pred.ndim == 1:
        Y_pred = Y_pred[:, None]

    scores = {m.name: m(Y_test, Y_pred, Y_train) for m in metrics}
    record = {
        "spec": spec,
        "experiment": spec["experiment"], "dataset": spec["dataset"], "variant": spec["variant"],
        "method": spec["method"], "params": spec.get("params", {}), "repeat": int(spec["repeat"]),
        "seed": spec.get("seed"),
        "scores": scores,
        "higher_is_better": {m.name: m.higher_is_better for m in metrics},
        "fit_wall_s": fit_wall, "fit_cpu_s": fit_cpu, "predict_wall_s": pred_wall, "predict_cpu_s": pred_cpu,
        "model": model_size(estimator),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
        "n_train": int(len(train)), "n_test": int(len(test)),
        "data": {"prepared_sha256": header["content_sha256"], "shape": header["shape"],
                 "input_density": input_density(X_train), "fit_layout": layout, "predict_layout": test_layout,
                 **split_info},
        "job": extra or {},
    }
    write_record(out, record)
    return record
