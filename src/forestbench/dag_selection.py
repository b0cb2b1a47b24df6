"""Hyper-parameter selection spread over workflow jobs: candidate chunks, then one selection per split.

A variant tuned with ``tune.mode: dag`` gets, per (dataset, repeat), one ``tune`` job per chunk of candidates
(``run_chunk``), one ``select`` job (``select``) and its ``fit`` job, which refits the selected parameters on the
whole training part (``forestbench.runner``). The chunks score candidates with the same functions as the in-job
``forestbench.selection.GridSelection``, on the same validation folds (seeded by the run's seed), so both modes
select the same parameters.

Every finished candidate is also stored on its own under the variant's ``candidates/`` folder, named by a hash of
its parameters and of the split: a killed chunk job, or a grid that gains candidates, recomputes only the
candidates without a stored result.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from forestbench import tuning
from forestbench._io import write_json
from forestbench.errors import DataError
from forestbench.methods import get_method, load_plugins
from forestbench.selection import budget_caps, capped, choose, evaluate_candidate, seconds_per_stage, summary


def training_part(spec: dict, prepared, split_file):
    """``(X_train, Y_fit, Y_train, train_rows, test_rows, task)`` of a run specification, as the fit job sees them."""
    from forestbench.datasets.splits import load_split
    from forestbench.datasets.store import load_dataset
    from forestbench.runner import _rows, with_layout

    ds = load_dataset(prepared, expected_shape=spec.get("expected_shape"))
    train, test, _ = load_split(split_file, int(spec["repeat"]))
    method = get_method(spec["method"])
    layout = spec.get("params", {}).get("input_layout")
    X_train = with_layout(_rows(ds.X, train), layout)
    Y_train = _rows(ds.Y, train)
    Y_fit = Y_train.toarray() if sp.issparse(Y_train) and not method.sparse_y else Y_train
    if not sp.issparse(Y_fit) and Y_fit.ndim == 2 and Y_fit.shape[1] == 1:
        Y_fit = Y_fit.ravel()
    return X_train, Y_fit, Y_train, train, test, ds.task


def folds_of(spec: dict, n_train: int, train: np.ndarray, test: np.ndarray, y=None):
    """Validation folds (positions in the training part), checked never to reach a test row."""
    folds = tuning.validation_folds(n_train, spec["tune"]["validation"], int(spec["seed"]), y)
    for fit_rows, val_rows in folds:
        if np.intersect1d(train[val_rows], test).size or np.intersect1d(train[fit_rows], test).size:
            raise DataError(f"{spec['experiment']}/{spec['dataset']}: selection rows overlap the test rows of "
                            f"split {spec['repeat']}; the split file is inconsistent")
    return folds


def _cache_key(spec: dict, params: dict, train: np.ndarray) -> str:
    what = {"params": params, "method": spec["method"], "fixed": spec.get("params", {}),
            "validation": spec["tune"]["validation"], "metric": spec["tune"]["metric"],
            "staged": spec["tune"]["staged"], "seed": spec["seed"],
            "train": hashlib.sha256(np.ascontiguousarray(train).tobytes()).hexdigest()}
    return hashlib.sha256(json.dumps(what, sort_keys=True, default=str).encode()).hexdigest()[:24]


def read_budget(path) -> dict:
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise DataError(f"budget file {path} is unreadable ({exc}); delete it and rerun 'budget'") from None


def run_budget(spec: dict, prepared, split_file, out) -> dict:
    """Measure the reference time T (one stage of the reference method) and every candidate's seconds per stage
    on the training part of this split, and write each candidate's stage cap to ``out`` (the budget artifact)."""
    load_plugins(spec.get("plugins"))
    tune = spec["tune"]
    method = get_method(spec["method"])
    X, Y, _, _, _, task = training_part(spec, prepared, split_file)
    staged = tune["staged"]
    reference = tune["budget"]["reference"]
    ref_method = get_method(reference["method"])
    T = seconds_per_stage(lambda p: ref_method.build(p, spec.get("seed"), task), reference["params"], X, Y, staged,
                          repeats=5)
    fixed = {k: v for k, v in spec.get("params", {}).items() if k != "input_layout"}
    caps = budget_caps(lambda p: method.build({**fixed, **p}, spec.get("seed"), task), spec["candidates"], X, Y,
                       staged, tune["budget"]["multiple"], T, int(fixed.get(staged) or 100))
    doc = {"reference_seconds": T, "multiple": tune["budget"]["multiple"], "reference": reference, "caps": caps,
           "dataset": spec["dataset"], "variant": spec["variant"], "measured_on": spec.get("host")}
    write_json(out, doc)
    return doc


def run_chunk(spec: dict, prepared, split_file, out, cache_dir, budget: dict | None = None) -> dict:
    """Score the chunk's candidates (reusing stored ones) and write the chunk file ``out``."""
    load_plugins(spec.get("plugins"))
    method = get_method(spec["method"])
    X, Y, Y_train, train, test, task = training_part(spec, prepared, split_file)
    y_strat = np.asarray(Y).ravel() if task in ("binary", "multiclass") else None
    folds = folds_of(spec, X.shape[0], train, test, y_strat)
    fixed = {k: v for k, v in spec.get("params", {}).items() if k != "input_layout"}
    tune = spec["tune"]

    def make(params):
        return method.build({**fixed, **params}, spec.get("seed"), task)

    caps = budget["caps"] if budget else None
    results, reused = [], 0
    for params in spec["candidates"]:
        params = capped(params, caps, tune["staged"])
        path = Path(cache_dir) / f"{_cache_key(spec, params, train)}.json"
        if path.exists():
            try:
                results.append(json.loads(path.read_text()))
                reused += 1
                continue
            except ValueError:
                path.unlink()  # a torn file from another writer: recompute
        result = evaluate_candidate(make, params, X, Y, folds, tune["metric"], tune["staged"],
                                    y_metric=Y_train)
        write_json(path, result)
        results.append(result)
    doc = {"experiment": spec["experiment"], "dataset": spec["dataset"], "variant": spec["variant"],
           "repeat": spec["repeat"], "chunk": spec["chunk"], "results": results, "reused": reused}
    write_json(out, doc)
    return doc


def select(spec: dict, chunk_files, out) -> dict:
    """Merge the chunk files of one (dataset, variant, repeat) in chunk order and write the selection ``out``."""
    docs = []
    for path in chunk_files:
        try:
            doc = json.loads(Path(path).read_text())
            docs.append((int(doc["chunk"]), doc["results"]))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise DataError(f"tuning chunk {path} is unreadable ({exc}); delete it and rerun its job") from None
    results = [r for _, part in sorted(docs, key=lambda item: item[0]) for r in part]
    tune = spec["tune"]
    best = choose(results, tune["metric"], tune["staged"])
    doc = {"params": best["params"], "score": best["score"],
           "selection": summary(results, best["params"], best["score"], tune["metric"], tune["staged"])}
    write_json(out, doc)
    return best


def read_selected(path) -> dict:
    try:
        doc = json.loads(Path(path).read_text())
        return {"params": doc["params"], **doc["selection"]} | {"best_params": doc["params"],
                                                                 "best_score": doc["score"]}
    except (OSError, ValueError, KeyError) as exc:
        raise DataError(f"selection file {path} is unreadable ({exc}); delete it and rerun 'select'") from None
