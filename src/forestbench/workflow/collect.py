"""Gather run records into the tidy scores table of an experiment.

One row per (experiment, dataset, variant, repeat, metric); timing, model size and memory are repeated on each
metric row, resolved parameters become ``param.<name>`` columns, the package versions of the run's provenance
``package.<name>`` columns. Works on whatever records exist, so a table can be
built while jobs are still running.

A table never mixes configurations. Given what the current configuration expects of each run (:func:`expected_runs`,
written by the workflow to ``results/<experiment>/expected_runs.json``), a record is kept only when its fingerprint
(``forestbench.workflow.records.fingerprint_of``) matches: the same resolved run specification (parameters, tuning,
metrics, seed, protocol, threads), the same prepared data and split checksums as the files now in ``data/``, and, among
the records of one table, the same versions of ``forestbench.workflow.records.CODE_PACKAGES`` (when records of several
versions exist, those of the running environment are kept). The other records are superseded: they are left out of the
table and named, with the reason, in the collect log; the report then lists their cells as not run. Rerunning their jobs
(a run without ``select``, or ``--forcerun fit`` after a package upgrade) brings them back.
"""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from forestbench._io import atomic_path, read_json, write_json
from forestbench.datasets.splits import n_splits_of
from forestbench.errors import ConfigError, DataError
from forestbench.workflow.records import CODE_PACKAGES, code_versions, config_sha256, fingerprint_of

COLUMNS = ["experiment", "dataset", "method", "variant", "repeat", "seed", "step", "n_trees", "stage_fit_s",
           "metric", "value", "undefined_reason", "higher_is_better", "validation_score", "fit_wall_s", "fit_cpu_s",
           "predict_wall_s", "predict_cpu_s", "n_nodes",
           "model_bytes", "max_depth", "tree_sha256", "input_density", "peak_rss_mb", "n_train", "n_test",
           "split_sha256", "n_splits", "slurm_job_id", "host"]
# columns added after tables were first archived: a table collected before lacks them (read as empty)
ADDED_COLUMNS = ("n_splits",)
REQUIRED_COLUMNS = [c for c in COLUMNS if c not in ADDED_COLUMNS]


def read_record(path: str | Path) -> dict:
    """A run record; a ``.gz`` one is read as the archive keeps it (gzip-compressed, ``forestbench.archive``)."""
    path = Path(path)
    try:
        return read_json(path)
    except (OSError, EOFError, ValueError) as exc:   # gzip.BadGzipFile is an OSError
        advice = ("restore it from git (git checkout -- <file>) or delete it and refit its run" if path.suffix == ".gz"
                  else "delete it and rerun its job")
        raise DataError(f"run record {path} is unreadable ({exc}); {advice}") from exc


def _param(value):
    return json.dumps(value) if isinstance(value, (list, dict)) else value


def _protocol_splits(record: dict) -> int | None:
    """The number of splits of the protocol the record's split came from (what a complete cell has), or None for
    a record that does not name its protocol."""
    protocol = (record.get("data") or {}).get("protocol")
    if not isinstance(protocol, dict):
        return None
    try:
        return n_splits_of(protocol)
    except (ConfigError, TypeError, ValueError):
        return None


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
        "n_splits": _protocol_splits(record),
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


def _checked_record(path, experiment: str | None) -> dict:
    record = read_record(path)
    if not isinstance(record, dict):
        raise DataError(f"run record {path} is not a JSON object; delete it and rerun its job")
    missing = [k for k in REQUIRED_KEYS if k not in record]
    if missing:
        raise DataError(f"run record {path} lacks the key(s) {', '.join(missing)}; delete it and rerun its job")
    if experiment is not None and record["experiment"] != experiment:
        raise DataError(f"run record {path} belongs to experiment {record['experiment']!r}, not {experiment!r}")
    return record


def run_key(dataset: str, variant: str, repeat: int) -> str:
    return f"{dataset}/{variant}/{int(repeat)}"


def expected_runs(plan, experiment: str) -> dict:
    """What the configuration expects of every run of ``experiment`` (a ``forestbench.workflow.experiments.Plan``): per
    ``dataset/variant/repeat``, the sha256 of its run specification and the paths of its prepared data and split
    files; per variant, its method and parameters (to name what changed)."""
    exp = plan.experiments[experiment]
    runs = {}
    for job in exp.jobs():
        # canonical JSON of the specification, as the fit job receives it (a JSON round trip leaves it unchanged)
        runs[run_key(job.dataset, job.variant, job.repeat)] = {
            "config_sha256": config_sha256(plan.run_spec(job)), "prepared": plan.prepared_path(job.dataset),
            "split": plan.split_path(job.dataset, exp.protocol)}
    variants = json.loads(json.dumps({v.name: {"method": v.method, "params": v.params}
                                      for v in exp.runnable_variants}, sort_keys=True))
    return {"experiment": experiment, "runs": runs, "variants": variants}


def write_expected(plan, experiment: str, path: str | Path) -> Path:
    """Write :func:`expected_runs` to ``path`` only when its content changes (its modification time then tells the
    workflow when the table must be collected again)."""
    doc = expected_runs(plan, experiment)
    try:
        if json.loads(Path(path).read_text()) == doc:
            return Path(path)
    except (OSError, ValueError):
        pass
    write_json(path, doc)
    return Path(path)


def read_expected(path: str | Path) -> dict:
    try:
        doc = json.loads(Path(path).read_text())
        if not isinstance(doc, dict) or not isinstance(doc.get("runs"), dict):
            raise ValueError("it has no 'runs' mapping")
        return doc
    except (OSError, ValueError) as exc:
        raise DataError(f"expected-runs file {path} is unreadable ({exc}); delete it and rerun") from None


def _current_data(expected_run: dict, cache: dict) -> dict:
    """The checksums of the prepared data and split files the configuration now points at (those that exist)."""
    from forestbench.datasets.splits import manifest_path
    from forestbench.datasets.store import read_header

    out = {}
    for key, path, read in (("prepared_sha256", expected_run.get("prepared"),
                             lambda p: read_header(p)["content_sha256"]),
                            ("split_sha256", expected_run.get("split"),
                             lambda p: json.loads(manifest_path(p).read_text())["sha256"])):
        if not path:
            continue
        if (key, path) not in cache:
            try:
                cache[(key, path)] = read(path)
            except (OSError, ValueError, KeyError, DataError):
                cache[(key, path)] = None  # not built (yet): nothing to compare with
        if cache[(key, path)] is not None:
            out[key] = cache[(key, path)]
    return out


def superseded_reason(record: dict, expected: dict, cache: dict | None = None) -> str | None:
    """Why ``record`` is not a result of the configuration ``expected`` (:func:`expected_runs`) and of the data
    files it points at, or None when it is. Package versions are compared across a table by :func:`current`."""
    want = expected["runs"].get(run_key(record["dataset"], record["variant"], record["repeat"]))
    if want is None:
        return "its dataset, variant or repeat is no longer in the configuration"
    fp = fingerprint_of(record)
    if fp["config_sha256"] != want["config_sha256"]:
        variant = (expected.get("variants") or {}).get(record["variant"]) or {}
        old, new = record.get("params") or {}, variant.get("params")
        if new is not None and old != new:
            changed = sorted(k for k in set(old) | set(new) if old.get(k, "(unset)") != new.get(k, "(unset)"))
            what = ", ".join(f"{k}: {old.get(k, '(unset)')!r} -> {new.get(k, '(unset)')!r}" for k in changed)
            return f"made with other parameters ({what})"
        return "made under another run specification (tuning, metrics, seed, protocol, threads or method)"
    for key, value in _current_data(want, cache if cache is not None else {}).items():
        if fp[key] != value:
            what = "prepared data" if key == "prepared_sha256" else "split"
            return f"made from another {what} ({key} {str(fp[key])[:12]}..., now {value[:12]}...)"
    return None


def _versions(code: dict) -> str:
    return ", ".join(f"{p} {code.get(p)}" for p in CODE_PACKAGES)


def current(record_paths: list[str | Path], expected: dict | None, experiment: str | None = None
            ) -> tuple[list[str], list[tuple[str, str]]]:
    """``(kept, superseded)``: the record paths whose results belong to the current configuration, and
    ``(path, reason)`` of the others (see the module docstring). Without ``expected`` only the package versions are
    compared. A table whose records come from several package versions, none of them the running environment's,
    is an error: which one is current cannot be told."""
    cache: dict = {}
    kept, superseded, codes = [], [], {}
    for path in sorted(map(str, record_paths)):
        record = _checked_record(path, experiment)
        why = superseded_reason(record, expected, cache) if expected is not None else None
        if why:
            superseded.append((path, why))
        else:
            kept.append(path)
            codes[path] = fingerprint_of(record)["code"]
    distinct = {json.dumps(c, sort_keys=True) for c in codes.values()}
    if len(distinct) > 1:
        here = code_versions()
        if json.dumps(here, sort_keys=True) not in distinct:
            versions = "; ".join(sorted(map(_versions, map(json.loads, distinct))))
            raise DataError(f"the run records of {experiment or 'this table'} were made with {len(distinct)} "
                            f"different package versions ({versions}), none of them this environment's "
                            f"({_versions(here)}); rerun the fits with one version (snakemake --forcerun fit)")
        for path in list(kept):
            if codes[path] != here:
                kept.remove(path)
                superseded.append((path, f"made with other package versions ({_versions(codes[path])}; the "
                                         f"other records use {_versions(here)})"))
    return kept, sorted(superseded)


def expected_splits(expected: dict) -> dict[tuple[str, str], int]:
    """Per (dataset, variant), the repeats the configuration runs (:func:`expected_runs`): its protocol's splits,
    fewer under ``max_repeats``."""
    counts: dict[tuple[str, str], int] = {}
    for key in expected["runs"]:
        dataset, variant, _ = key.rsplit("/", 2)
        counts[dataset, variant] = counts.get((dataset, variant), 0) + 1
    return counts


def collect(record_paths: list[str | Path], experiment: str | None = None, expected: dict | None = None, *,
            splits: dict[tuple[str, str], int] | None = None, max_repeats: int | None = None) -> pd.DataFrame:
    """The tidy scores table of the records; with ``expected``, superseded records are left out (listed, with the
    reason, in the table's ``attrs["superseded"]``).

    ``n_splits`` (the repeats a complete cell has, which tells a run under way from a finished one) is, per
    (dataset, variant), what ``splits`` gives (default: what ``expected`` runs), else the number of splits of the
    record's protocol, at most ``max_repeats``."""
    superseded = []
    if expected is not None:
        record_paths, superseded = current(record_paths, expected, experiment)
        splits = expected_splits(expected) if splits is None else splits
    rows = []
    for path in sorted(map(str, record_paths)):
        record = _checked_record(path, experiment)
        try:
            rows.extend(record_rows(record))
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise DataError(f"run record {path} is malformed ({type(exc).__name__}: {exc}); delete it and rerun "
                            "its job") from None
    frame = pd.DataFrame(rows)
    if frame.empty:
        frame = pd.DataFrame(columns=COLUMNS)
    else:
        params = sorted(c for c in frame.columns if c.startswith(("param.", "selected.", "extra.", "package.")))
        frame = frame[COLUMNS + params]
        if splits:
            given = pd.Series([splits.get(k) for k in zip(frame["dataset"], frame["variant"])], index=frame.index,
                              dtype="float64")
            frame["n_splits"] = given.fillna(pd.to_numeric(frame["n_splits"], errors="coerce"))
        if max_repeats:
            frame["n_splits"] = pd.to_numeric(frame["n_splits"], errors="coerce").clip(upper=int(max_repeats))
        frame["n_splits"] = frame["n_splits"].astype("Int64")
        frame = frame.sort_values(["dataset", "variant", "repeat", "metric", "step"], na_position="first",
                                  kind="stable").reset_index(drop=True)
    frame.attrs["superseded"] = superseded
    return frame


def find_records(results_dir: str | Path, experiment: str) -> list[Path]:
    return sorted(Path(results_dir, "runs", experiment).glob("*/*/repeat-*.json"))


def write_scores(frame: pd.DataFrame, out: str | Path) -> Path:
    with atomic_path(out) as tmp:
        frame.to_csv(tmp, index=False)
    return Path(out)

