"""Hyper-parameter selection spread over workflow jobs: candidate chunks, then one selection per split.

A variant tuned with ``tune.mode: dag`` gets, per (dataset, repeat), one ``tune`` job per chunk of candidates
(``run_chunk``), one ``select`` job (``select``) and its ``fit`` job, which fits the selected parameters as the
in-job selection would (``forestbench.workflow.runner``): on the whole training part, or with ``refit: false`` on the
fit rows of the holdout. The chunks score candidates with the same functions as the in-job
``forestbench.workflow.selection.GridSelection``, on the same validation folds (seeded by the run's seed), so both modes
select the same parameters.

Every finished candidate is also stored on its own under the variant's ``candidates/`` folder, named by its
fingerprint: its parameters, the method's fixed parameters, the validation set-up, the seed, the training rows,
the checksums of the prepared data and of the split manifest, and the versions of the numerical packages
(``forestbench.workflow.records.CODE_PACKAGES``). A killed chunk job, or a grid that gains candidates, recomputes only
the candidates without a stored result of the same fingerprint; changed data or packages recompute everything. A stored
file that is not a complete result for its candidate is recomputed (and named on standard error). With
``FORESTBENCH_RECOMPUTE_TUNING=1`` in the environment (the workflow sets it for ``--forcerun tune``,
``--forcerun budget`` and ``--forceall``) nothing stored is reused.

The budget job stores its timings the same way, keyed by the same kind of fingerprint, under
``budget-measurements/`` of the dataset's tuning folder (``results/tuning/<experiment>/<dataset>/``), which the
budget jobs of all its variants share: the reference time T is measured once per dataset and split, and every
variant's caps are drawn against that one T (the first budget job to store it wins; one that measured it meanwhile
takes the stored figure). A grid that gains a candidate measures only that candidate; the other caps stay the same,
and so do their stored candidates. Timings are CPU seconds of the process (the workflow runs budget jobs on one
thread), so that what else runs on the machine does not move the caps.
"""
from __future__ import annotations

import hashlib
import json
import math
import sys
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from forestbench.workflow import tuning
from forestbench._io import write_json, write_json_if_absent
from forestbench.errors import DataError
from forestbench.workflow.methods import get_method, load_plugins
from forestbench.workflow.records import code_versions
from forestbench.workflow.selection import (MEASURED_CLOCK, REFERENCE_REPEATS, capped, choose, evaluate_candidate,
                                           output_stage_seconds, seconds_per_stage, sklearn_stage_seconds,
                                           stage_cap, summary)
from forestbench.workflow.tuning import folds_of, recompute_requested  # noqa: F401 - folds_of used here and re-exported
from forestbench.workflow.variants import RUN_PARAMETERS

def estimator_params(params: dict | None) -> dict:
    """A variant's parameters without the run parameters (input layouts), which are not the estimator's."""
    return {k: v for k, v in (params or {}).items() if k not in RUN_PARAMETERS}


def training_part(spec: dict, prepared, split_file):
    """``(X_train, Y_fit, Y_train, train_rows, test_rows, task, data)`` of a run specification, as the fit job sees
    them; ``data`` holds the checksums of the prepared file and of the split manifest."""
    from forestbench.datasets.splits import load_split
    from forestbench.datasets.store import load_dataset, read_header
    from forestbench.workflow.runner import _rows, with_layout

    ds = load_dataset(prepared, expected_shape=spec.get("expected_shape"))
    train, test, split_info = load_split(split_file, int(spec["repeat"]))
    data = {"prepared_sha256": read_header(prepared)["content_sha256"], "split_sha256": split_info["split_sha256"]}
    method = get_method(spec["method"])
    layout = spec.get("params", {}).get("input_layout")
    X_train = with_layout(_rows(ds.X, train), layout)
    Y_train = _rows(ds.Y, train)
    Y_fit = Y_train.toarray() if sp.issparse(Y_train) and not method.sparse_y else Y_train
    if not sp.issparse(Y_fit) and Y_fit.ndim == 2 and Y_fit.shape[1] == 1:
        Y_fit = Y_fit.ravel()
    return X_train, Y_fit, Y_train, train, test, ds.task, data


def _key(what: dict) -> str:
    return hashlib.sha256(json.dumps(what, sort_keys=True, default=str).encode()).hexdigest()[:24]


def _split_part(spec: dict, train: np.ndarray, data: dict) -> dict:
    """The part of a fingerprint that names the rows and the code: data checksums, training rows, seed, packages."""
    return {"data": data, "train": hashlib.sha256(np.ascontiguousarray(train, dtype=np.int64).tobytes()).hexdigest(),
            "seed": spec["seed"], "code": code_versions(), "plugins": spec.get("plugins"),
            "layout": spec.get("params", {}).get("input_layout")}


def _cache_key(spec: dict, params: dict, train: np.ndarray, data: dict) -> str:
    fixed = estimator_params(spec.get("params"))
    # a candidate a method revision names is keyed by it too (the keys of the others are unchanged)
    revision = get_method(spec["method"]).revision_of({**fixed, **params})
    return _key({"params": params, "method": spec["method"], "fixed": fixed,
                 "validation": spec["tune"]["validation"], "metric": spec["tune"]["metric"],
                 "staged": spec["tune"]["staged"], **_split_part(spec, train, data),
                 **({"revision": revision} if revision else {})})


def _number(value) -> bool:
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool))


def invalid_candidate(doc, params: dict, key: str, staged: str | None) -> str | None:
    """Why a stored candidate result cannot be reused for ``params`` (None when it can)."""
    if not isinstance(doc, dict):
        return f"it is a JSON {type(doc).__name__}, not an object"
    if doc.get("fingerprint") != key:
        return "its fingerprint differs (made from other data, parameters or package versions)"
    if doc.get("params") != params:
        return f"it holds the parameters {doc.get('params')!r}, not {params!r}"
    if "score" not in doc or not _number(doc["score"]):
        return "it has no validation score"
    if not isinstance(doc.get("fold_scores"), list) or not all(map(_number, doc["fold_scores"])):
        return "it has no fold scores"
    if not _number(doc.get("fit_seconds")) or doc.get("fit_seconds") is None:
        return "it has no fit time"
    if staged:
        stages, curve = doc.get("stages"), doc.get("curve")
        if not isinstance(doc.get("best_stage"), int) or isinstance(doc.get("best_stage"), bool) \
                or not isinstance(stages, list) or not isinstance(curve, list) or len(stages) != len(curve):
            return "it has no staged validation curve"
    return None


def _stored(path: Path, check) -> dict | None:
    """The stored document at ``path`` when ``check(doc)`` accepts it; otherwise None, and the file is removed
    (named on standard error: a torn write, a hand edit, another fingerprint)."""
    if recompute_requested() or not path.exists():
        return None
    try:
        doc = json.loads(path.read_text())
        why = check(doc)
    except (OSError, ValueError) as exc:
        why = f"it is unreadable ({exc})"
    if why is None:
        return doc
    print(f"stored result {path} is not reused: {why}; recomputing it", file=sys.stderr)
    path.unlink(missing_ok=True)
    return None


def _positive(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0


def read_budget(path) -> dict:
    """The budget file written by ``run_budget``, checked: an object with a positive ``reference_seconds`` and
    ``multiple`` and a non-empty ``caps`` mapping of candidates to ``{"n_stages_max": integer >= 1, ...}``."""
    def bad(why):
        return DataError(f"budget file {path} {why}; delete it and rerun 'budget'")

    try:
        doc = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise bad(f"is unreadable ({exc})") from None
    if not isinstance(doc, dict):
        raise bad(f"holds a JSON {type(doc).__name__}, not an object with reference_seconds, multiple and caps")
    for key in ("reference_seconds", "multiple"):
        if not _positive(doc.get(key)):
            raise bad(f"has {key} = {doc.get(key)!r}; a positive number is needed")
    caps = doc.get("caps")
    if not isinstance(caps, dict) or not caps:
        raise bad("has no stage caps ('caps' must map every candidate to its cap)")
    for cid, cap in caps.items():
        value = cap.get("n_stages_max") if isinstance(cap, dict) else None
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise bad(f"has n_stages_max = {value!r} for candidate {cid} "
                      f"({cap.get('params') if isinstance(cap, dict) else cap!r}); an integer >= 1 is needed")
    return doc


def _measured(folder: Path, what: dict, measure) -> float:
    """Seconds per stage stored under ``folder`` for the fingerprint ``what``, else measured now and stored. When
    another process stored the same fingerprint while this one measured (two variants' budget jobs timing their
    shared reference at once), its figure is returned instead of this one's, so that both use the same."""
    key = _key(what)
    path = folder / f"{key}.json"

    def check(d):
        return None if isinstance(d, dict) and d.get("fingerprint") == key and _positive(d.get("seconds_per_stage")) \
            else "it is not a measurement of this fingerprint"

    doc = _stored(path, check)
    if doc is not None:
        return float(doc["seconds_per_stage"])
    seconds = float(measure())
    entry = {"fingerprint": key, "seconds_per_stage": seconds, "what": what}
    if recompute_requested():
        write_json(path, entry)  # a forced re-measurement replaces what is stored
        return seconds
    if not write_json_if_absent(path, entry):
        doc = _stored(path, check)
        if doc is not None:
            return float(doc["seconds_per_stage"])
        write_json(path, entry)
    return seconds


def _sklearn_stage_clock(spec: dict, folder: Path, common: dict, X, Y, method, ref_method, fixed: dict, task,
                         timing: str):
    """``(T, stage_seconds)`` of a budget timed by scikit-learn's trees (``per_stage: sklearn_trees``): T is their
    fit of the reference's stage, ``stage_seconds(candidate)`` of the candidate's, each on the regression targets
    the method's ``stage_targets`` gives for the first stage. A candidate is measured by its tree parameters only
    (``SKLEARN_TREE_PARAMS``), so the learning rates and losses of one cell of a grid share one measurement.
    Under ``sklearn_trees_plus_outputs`` each adds the stage's per-output work timed on forestbench's loop
    (``output_stage_seconds``, measured once per ``output_stage_key``: the loss and the leaves of a grid)."""
    from forestbench.errors import ConfigError
    from forestbench.workflow.selection import (CANDIDATE_REPEATS, OUTPUT_PROBE, first_stage_residuals,
                                                output_stage_key, sklearn_stage_key)

    for m in (ref_method, method):
        if m.stage_targets is None:
            raise ConfigError(f"{spec.get('experiment')}/{spec.get('variant')}: tune.budget.per_stage "
                              f"{timing} needs the trees of one stage of method {m.name!r}, which its "
                              "registry entry does not declare (stage_targets)")
    R = first_stage_residuals(Y)
    seed = spec.get("seed")
    staged = spec["tune"]["staged"]
    reference = spec["tune"]["budget"]["reference"]

    def trees(m, params, repeats):
        what = {"sklearn_stage": m.name, **sklearn_stage_key(params, staged), **common}
        return _measured(folder, what, lambda: sklearn_stage_seconds(X, m.stage_targets(params, R, seed), params,
                                                                     seed, repeats=repeats))

    def outputs(m, params, repeats):
        what = {"output_stage": m.name, "params": output_stage_key(params, staged), "probe": OUTPUT_PROBE, **common}
        return _measured(folder, what, lambda: output_stage_seconds(lambda p: m.build(p, seed, task), params, X, Y,
                                                                    staged, repeats=repeats))

    def clock(m, params, repeats):
        seconds = trees(m, params, repeats)
        return seconds + outputs(m, params, repeats) if timing == "sklearn_trees_plus_outputs" else seconds

    T = clock(ref_method, dict(reference["params"]), REFERENCE_REPEATS)
    return T, lambda params: clock(method, {**fixed, **params}, CANDIDATE_REPEATS)


def run_budget(spec: dict, prepared, split_file, out, cache_dir=None) -> dict:
    """Measure the reference time T (one stage of the reference method) and every candidate's seconds per stage
    on the training part of this split, and write each candidate's stage cap to ``out`` (the budget artifact).
    Measurements are stored in ``cache_dir`` (default: ``budget-measurements/`` in the folder above ``out``'s, the
    dataset's tuning folder shared by its variants) and reused when their fingerprint is the same, so that every
    variant's caps use the same T and a grown grid measures only its new candidates."""
    load_plugins(spec.get("plugins"))
    tune = spec["tune"]
    method = get_method(spec["method"])
    X, Y, _, train, _, task, data = training_part(spec, prepared, split_file)
    staged = tune["staged"]
    reference = tune["budget"]["reference"]
    ref_method = get_method(reference["method"])
    folder = Path(cache_dir) if cache_dir is not None else Path(out).parent.parent / "budget-measurements"
    timing = tune["budget"].get("per_stage", "average")
    # the default timing keeps the fingerprints it has always had, so its stored measurements stay valid
    common = {**_split_part(spec, train, data), "clock": MEASURED_CLOCK,
              **({} if timing == "average" else {"per_stage": timing})}
    fixed = estimator_params(spec.get("params"))
    if timing in tuning.SKLEARN_CLOCKS:
        T, stage_seconds = _sklearn_stage_clock(spec, folder, common, X, Y, method, ref_method, fixed, task, timing)
    else:
        T = _measured(folder, {"reference": reference, "staged": staged, **common},
                      lambda: seconds_per_stage(lambda p: ref_method.build(p, spec.get("seed"), task),
                                                reference["params"], X, Y, staged, repeats=REFERENCE_REPEATS,
                                                per_stage=timing))

        def stage_seconds(params):
            def make(p):
                return method.build({**fixed, **p}, spec.get("seed"), task)

            return _measured(folder, {"method": spec["method"], "fixed": fixed, "params": params,
                                      "staged": staged, **common},
                             lambda: seconds_per_stage(make, params, X, Y, staged, per_stage=timing))
    caps = {}
    for params in spec["candidates"]:
        per_stage = stage_seconds(params)
        caps[tuning.candidate_id(params)] = stage_cap(params, per_stage, staged, tune["budget"]["multiple"], T,
                                                      int(fixed.get(staged) or 100))
    doc = {"reference_seconds": T, "multiple": tune["budget"]["multiple"], "reference": reference,
           **({} if timing == "average" else {"per_stage": timing}), "caps": caps,
           "dataset": spec["dataset"], "variant": spec["variant"], "measured_on": spec.get("host")}
    write_json(out, doc)
    return doc


def run_chunk(spec: dict, prepared, split_file, out, cache_dir, budget: dict | None = None) -> dict:
    """Score the chunk's candidates (reusing stored ones of the same fingerprint) and write the chunk file ``out``."""
    load_plugins(spec.get("plugins"))
    method = get_method(spec["method"])
    X, Y, Y_train, train, test, task, data = training_part(spec, prepared, split_file)
    y_strat = np.asarray(Y).ravel() if task in ("binary", "multiclass") else None
    folds = folds_of(spec, X.shape[0], train, test, y_strat)
    fixed = estimator_params(spec.get("params"))
    tune = spec["tune"]
    if tune.get("budget") and budget is None:
        raise DataError(f"{spec['experiment']}/{spec['variant']}: tune.budget needs the budget file (--budget)")

    def make(params):
        return method.build({**fixed, **params}, spec.get("seed"), task)

    caps = budget["caps"] if budget is not None else None
    results, reused = [], 0
    for params in spec["candidates"]:
        params = capped(params, caps, tune["staged"])
        key = _cache_key(spec, params, train, data)
        path = Path(cache_dir) / f"{key}.json"
        stored = _stored(path, lambda doc: invalid_candidate(doc, params, key, tune["staged"]))
        if stored is not None:
            results.append(stored)
            reused += 1
            continue
        result = evaluate_candidate(make, params, X, Y, folds, tune["metric"], tune["staged"],
                                    y_metric=Y_train)
        result["fingerprint"] = key
        write_json(path, result)
        results.append(result)
    doc = {"experiment": spec["experiment"], "dataset": spec["dataset"], "variant": spec["variant"],
           "repeat": spec["repeat"], "chunk": spec["chunk"], "results": results, "reused": reused}
    write_json(out, doc)
    return doc


def select(spec: dict, chunk_files, out) -> dict:
    """Merge the chunk files of one (dataset, variant, repeat) in chunk order and write the selection ``out``."""
    if not chunk_files:
        raise DataError(f"{spec['experiment']}/{spec['dataset']}/{spec['variant']} repeat {spec['repeat']}: no "
                        f"candidate chunk file to select from (a split restored from the archive keeps its "
                        f"selection without its chunks); delete {out} to tune this split again")
    docs = []
    for path in chunk_files:
        try:
            doc = json.loads(Path(path).read_text())
            docs.append((int(doc["chunk"]), list(doc["results"])))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise DataError(f"tuning chunk {path} is unreadable ({exc}); delete it and rerun its job") from None
        for i, result in enumerate(docs[-1][1]):
            why = "it is not an object" if not isinstance(result, dict) else \
                invalid_candidate(result, result.get("params"), result.get("fingerprint"), spec["tune"]["staged"])
            if why:
                raise DataError(f"tuning chunk {path}: result {i} cannot be used ({why}); delete the chunk file and "
                                "rerun its job")
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
