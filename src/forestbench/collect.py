"""Gather run records into the tidy scores table of an experiment.

One row per (experiment, dataset, variant, repeat, metric); timing, model size and memory are repeated on each
metric row, resolved parameters become ``param.<name>`` columns and the scalars of an estimator's ``run_info_()``
``extra.<key>`` columns. Works on whatever records exist, so a table can be
built while jobs are still running.
"""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from forestbench._io import atomic_path
from forestbench.errors import DataError

COLUMNS = ["experiment", "dataset", "method", "variant", "repeat", "seed", "step", "metric", "value",
           "higher_is_better", "fit_wall_s", "fit_cpu_s", "predict_wall_s", "predict_cpu_s", "n_nodes",
           "model_bytes", "peak_rss_mb", "n_train", "n_test", "split_sha256", "slurm_job_id", "host"]


def read_record(path: str | Path) -> dict:
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise DataError(f"run record {path} is unreadable ({exc}); delete it and rerun its job") from exc


def _param(value):
    return json.dumps(value) if isinstance(value, (list, dict)) else value


def _extra_columns(extra: dict) -> dict:
    """``extra.<key>`` columns from an estimator's ``run_info_()``: its numeric and text scalars (nested values
    such as the selection trace stay in the record)."""
    out = {}
    for key, value in extra.items():
        if value is None or isinstance(value, (bool, int, float, str)):
            out[f"extra.{key}"] = value
    return out


def record_rows(record: dict) -> list[dict]:
    prov = record.get("provenance", {})
    base = {
        "experiment": record["experiment"], "dataset": record["dataset"], "method": record["method"],
        "variant": record["variant"], "repeat": record["repeat"], "seed": record.get("seed"), "step": None,
        "fit_wall_s": record.get("fit_wall_s"), "fit_cpu_s": record.get("fit_cpu_s"),
        "predict_wall_s": record.get("predict_wall_s"), "predict_cpu_s": record.get("predict_cpu_s"),
        "n_nodes": record.get("model", {}).get("n_nodes"), "model_bytes": record.get("model", {}).get("bytes"),
        "peak_rss_mb": record.get("peak_rss_mb"), "n_train": record.get("n_train"), "n_test": record.get("n_test"),
        "split_sha256": record.get("data", {}).get("split_sha256"),
        "slurm_job_id": (prov.get("slurm") or {}).get("SLURM_JOB_ID"), "host": prov.get("host"),
        **{f"param.{k}": _param(v) for k, v in record.get("params", {}).items()},
        **_extra_columns(record.get("extra") or {}),
    }
    rows = []
    for metric, value in record["scores"].items():
        hib = record["higher_is_better"][metric]
        rows.append({**base, "metric": metric, "value": value, "higher_is_better": hib})
        for step, staged in (record.get("staged_scores", {}).get(metric) or {}).items():
            rows.append({**base, "metric": metric, "value": staged, "higher_is_better": hib, "step": int(step)})
    return rows


def collect(record_paths: list[str | Path], experiment: str | None = None) -> pd.DataFrame:
    rows = []
    for path in sorted(map(str, record_paths)):
        record = read_record(path)
        if experiment is not None and record["experiment"] != experiment:
            raise DataError(f"run record {path} belongs to experiment {record['experiment']!r}, not {experiment!r}")
        rows.extend(record_rows(record))
    frame = pd.DataFrame(rows)
    if frame.empty:
        return pd.DataFrame(columns=COLUMNS)
    params = sorted(c for c in frame.columns if c.startswith("param."))
    extras = sorted(c for c in frame.columns if c.startswith("extra."))
    frame = frame[COLUMNS + params + extras]
    return frame.sort_values(["dataset", "variant", "repeat", "metric", "step"], na_position="first",
                             kind="stable").reset_index(drop=True)


def find_records(results_dir: str | Path, experiment: str) -> list[Path]:
    return sorted(Path(results_dir, "runs", experiment).glob("*/*/repeat-*.json"))


def write_scores(frame: pd.DataFrame, out: str | Path) -> Path:
    with atomic_path(out) as tmp:
        frame.to_csv(tmp, index=False)
    return Path(out)

