"""Gather run records into the tidy scores table of an experiment.

One row per (experiment, dataset, variant, repeat, metric); timing, model size and memory are repeated on each
metric row, resolved parameters become ``param.<name>`` columns, the package versions of the run's provenance
``package.<name>`` columns. Works on whatever records exist, so a table can be
built while jobs are still running.
"""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from forestbench._io import atomic_path
from forestbench.errors import DataError

COLUMNS = ["experiment", "dataset", "method", "variant", "repeat", "seed", "step", "n_trees", "stage_fit_s",
           "metric", "value", "undefined_reason", "higher_is_better", "validation_score", "fit_wall_s", "fit_cpu_s",
           "predict_wall_s", "predict_cpu_s", "n_nodes",
           "model_bytes", "max_depth", "tree_sha256", "input_density", "peak_rss_mb", "n_train", "n_test",
           "split_sha256", "slurm_job_id", "host"]


def read_record(path: str | Path) -> dict:
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise DataError(f"run record {path} is unreadable ({exc}); delete it and rerun its job") from exc


def _param(value):
    return json.dumps(value) if isinstance(value, (list, dict)) else value


def record_rows(record: dict) -> list[dict]:
    prov = record.get("provenance", {})
    base = {
        "experiment": record["experiment"], "dataset": record["dataset"], "method": record["method"],
        "variant": record["variant"], "repeat": record["repeat"], "seed": record.get("seed"), "step": None,
        "fit_wall_s": record.get("fit_wall_s"), "fit_cpu_s": record.get("fit_cpu_s"),
        "predict_wall_s": record.get("predict_wall_s"), "predict_cpu_s": record.get("predict_cpu_s"),
        "n_nodes": record.get("model", {}).get("n_nodes"), "model_bytes": record.get("model", {}).get("bytes"),
        "max_depth": record.get("model", {}).get("max_depth"),
        "tree_sha256": record.get("model", {}).get("tree_sha256"),
        "input_density": record.get("data", {}).get("input_density"),
        "peak_rss_mb": record.get("peak_rss_mb"), "n_train": record.get("n_train"), "n_test": record.get("n_test"),
        "split_sha256": record.get("data", {}).get("split_sha256"),
        "slurm_job_id": (prov.get("slurm") or {}).get("SLURM_JOB_ID"), "host": prov.get("host"),
        "n_trees": None, "stage_fit_s": None, "validation_score": record.get("validation_score"),
        **{f"package.{k}": v for k, v in (prov.get("packages") or {}).items()},   # versions the fit ran with
        **{f"param.{k}": _param(v) for k, v in record.get("params", {}).items()},
        **{f"selected.{k}": _param(v) for k, v in (record.get("selected_params") or {}).items()},
        **{f"extra.{k}": v for k, v in (record.get("extra") or {}).items()
           if v is None or isinstance(v, (bool, int, float, str))},
    }
    staged = record.get("staged") or {}
    per_step = {int(s): (t, f) for s, t, f in zip(staged.get("steps", []), staged.get("n_trees", []),
                                                    staged.get("fit_seconds", []))}
    rows = []
    undefined = record.get("undefined_scores") or {}
    for metric, value in record["scores"].items():
        hib = record["higher_is_better"][metric]
        # an undefined score is null in the record (NaN here) with its reason; older records may hold NaN itself
        reason = undefined.get(metric) if value is None or value != value else None
        if reason is None and (value is None or value != value):
            reason = "undefined (no reason recorded)"
        rows.append({**base, "metric": metric, "value": value, "undefined_reason": reason, "higher_is_better": hib})
        for step, staged_value in (record.get("staged_scores", {}).get(metric) or {}).items():
            n_trees, seconds = per_step.get(int(step), (None, None))
            rows.append({**base, "metric": metric, "value": staged_value, "higher_is_better": hib, "step": int(step),
                         "n_trees": n_trees, "stage_fit_s": seconds,
                         "undefined_reason": None if staged_value is not None and staged_value == staged_value
                         else "undefined"})
    return rows


SELECTION_COLUMNS = ["experiment", "dataset", "variant", "repeat", "candidate", "params", "selected", "stage",
                     "metric", "score"]


def selection_rows(record: dict) -> list[dict]:
    """The validation scores of a tuned run's candidates (one row per candidate, plus one per recorded stage of a
    staged candidate's validation curve)."""
    sel = (record.get("extra") or {}).get("selection")
    if not sel:
        return []
    base = {"experiment": record["experiment"], "dataset": record["dataset"], "variant": record["variant"],
            "repeat": record["repeat"], "metric": sel.get("metric")}
    best = json.dumps(sel.get("best_params"), sort_keys=True)
    rows = []
    for i, cand in enumerate(sel.get("candidates", [])):
        params = dict(cand["params"])
        if sel.get("staged") and cand.get("best_stage") is not None:
            params[sel["staged"]] = cand["best_stage"]
        row = {**base, "candidate": i, "params": json.dumps(params, sort_keys=True),
               "selected": json.dumps(params, sort_keys=True) == best}
        rows.append({**row, "stage": None, "score": cand["score"]})
        for stage, value in (cand.get("curve") or {}).items():
            rows.append({**row, "stage": int(stage), "score": value})
    return rows


def collect_selection(record_paths: list[str | Path]) -> pd.DataFrame:
    rows = []
    for path in sorted(map(str, record_paths)):
        rows.extend(selection_rows(read_record(path)))
    return pd.DataFrame(rows, columns=SELECTION_COLUMNS)


REQUIRED_KEYS = ("experiment", "dataset", "method", "variant", "repeat", "scores", "higher_is_better")


def collect(record_paths: list[str | Path], experiment: str | None = None) -> pd.DataFrame:
    rows = []
    for path in sorted(map(str, record_paths)):
        record = read_record(path)
        if not isinstance(record, dict):
            raise DataError(f"run record {path} is not a JSON object; delete it and rerun its job")
        missing = [k for k in REQUIRED_KEYS if k not in record]
        if missing:
            raise DataError(f"run record {path} lacks the key(s) {', '.join(missing)}; delete it and rerun its job")
        if experiment is not None and record["experiment"] != experiment:
            raise DataError(f"run record {path} belongs to experiment {record['experiment']!r}, not {experiment!r}")
        try:
            rows.extend(record_rows(record))
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise DataError(f"run record {path} is malformed ({type(exc).__name__}: {exc}); delete it and rerun "
                            "its job") from None
    frame = pd.DataFrame(rows)
    if frame.empty:
        return pd.DataFrame(columns=COLUMNS)
    params = sorted(c for c in frame.columns if c.startswith(("param.", "selected.", "extra.", "package.")))
    frame = frame[COLUMNS + params]
    return frame.sort_values(["dataset", "variant", "repeat", "metric", "step"], na_position="first",
                             kind="stable").reset_index(drop=True)


def find_records(results_dir: str | Path, experiment: str) -> list[Path]:
    return sorted(Path(results_dir, "runs", experiment).glob("*/*/repeat-*.json"))


def write_scores(frame: pd.DataFrame, out: str | Path) -> Path:
    with atomic_path(out) as tmp:
        frame.to_csv(tmp, index=False)
    return Path(out)

