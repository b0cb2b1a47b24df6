"""Reading the tidy scores table and reducing it to the per-(dataset, variant) summaries the reports show.

The standard deviation over repeats is the sample one (``ddof=1``; config/README.md, "Statistics and reports"); a
single repeat has std NaN, shown as missing. Staged rows (``step`` not empty) are convergence
curves and are kept apart from the final scores.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from forestbench.errors import DataError

REQUIRED_COLUMNS = ("experiment", "dataset", "method", "variant", "repeat", "metric", "value", "higher_is_better")
TIME_COLUMNS = ("fit_wall_s", "fit_cpu_s", "predict_wall_s", "predict_cpu_s")
PACKAGE_PREFIX = "package."        # package.<name>: the version a fit ran with (run record provenance)

_TRUE = {"true", "1", "yes", "t", "y"}
_FALSE = {"false", "0", "no", "f", "n"}


def _to_bool(series: pd.Series, path: str) -> pd.Series:
    def convert(v):
        if isinstance(v, (bool, np.bool_)):
            return bool(v)
        if isinstance(v, (int, float, np.integer, np.floating)) and not pd.isna(v):
            return bool(v)
        text = str(v).strip().lower()
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
        raise DataError(f"{path}: column higher_is_better has value {v!r}, expected true/false")
    return series.map(convert).astype(bool)


def empty_scores() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=object) for c in REQUIRED_COLUMNS + ("step",)})


def load_scores(path: str | Path, experiment: str | None = None) -> pd.DataFrame:
    """Read ``scores.csv`` (the run records' tidy table) and check its columns.

    A missing file gives an empty table (a report can be built before anything ran); a malformed one a DataError
    naming the file and the problem. Rows of other experiments are dropped when ``experiment`` is given.
    """
    path = Path(path)
    if not path.exists():
        return empty_scores()
    try:
        header = pd.read_csv(path, nrows=0).columns
        # versions stay text: "1.10" is not the number 1.1
        frame = pd.read_csv(path, keep_default_na=True,
                            dtype={c: str for c in header if str(c).startswith(PACKAGE_PREFIX)})
    except pd.errors.EmptyDataError:
        return empty_scores()
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: cannot parse scores table: {exc}") from exc
    missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
    if missing:
        raise DataError(f"{path}: scores table lacks column(s) {', '.join(missing)}")
    if "step" not in frame.columns:
        frame["step"] = np.nan
    frame["value"] = pd.to_numeric(frame["value"], errors="coerce")
    frame["step"] = pd.to_numeric(frame["step"], errors="coerce")
    for col in TIME_COLUMNS:
        if col in frame.columns:
            frame[col] = pd.to_numeric(frame[col], errors="coerce")
    frame["higher_is_better"] = _to_bool(frame["higher_is_better"], str(path))
    for col in ("experiment", "dataset", "method", "variant", "metric"):
        frame[col] = frame[col].astype(str)
    if experiment is not None:
        frame = frame[frame["experiment"] == experiment]
    return frame.reset_index(drop=True)


def metric_direction(scores: pd.DataFrame, metric: str, default: bool | None = None) -> bool:
    """``higher_is_better`` of ``metric`` as recorded; a metric recorded both ways is an error."""
    rows = scores.loc[scores["metric"] == metric, "higher_is_better"]
    values = set(bool(v) for v in rows.unique())
    if len(values) > 1:
        raise DataError(f"metric {metric!r} is recorded both as higher- and as lower-is-better")
    if values:
        return values.pop()
    if default is None:
        return True
    return bool(default)


def final_rows(scores: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Rows of ``metric`` that are final scores (not staged). ``extra.<key>`` names a run-info column: one row per
    fit that recorded it, its value in ``value``."""
    if metric.startswith("extra.") and metric in scores.columns:
        rows = scores[scores["step"].isna()].drop_duplicates(["dataset", "variant", "repeat"])
        rows = rows.assign(metric=metric, value=pd.to_numeric(rows[metric], errors="coerce"))
        return rows[rows["value"].notna()]
    rows = scores[(scores["metric"] == metric) & scores["step"].isna()]
    return rows[rows["value"].notna()]


SUMMARY_COLUMNS = ["dataset", "variant", "mean", "std", "n", "undefined"]


def summarise(scores: pd.DataFrame, metric: str, ddof: int = 1) -> pd.DataFrame:
    """Mean, std and number of repeats per (dataset, variant) of ``metric``: columns dataset, variant, mean, std, n,
    and ``undefined``, the number of finished repeats whose score is undefined (recorded as null: e.g. r² of a
    constant test target). A cell whose repeats are all undefined has mean NaN, n 0 and undefined > 0, which the
    reports show as "undefined" rather than "not run"."""
    if metric.startswith("extra.") and metric in scores.columns:
        final = final_rows(scores, metric)  # a run-info column: fits that did not record it are left out
    else:
        final = scores[(scores["metric"] == metric) & scores["step"].isna()]
    rows = final[final["value"].notna()]
    undefined = final[final["value"].isna()].groupby(["dataset", "variant"], sort=False).size()
    if rows.empty and undefined.empty:
        return pd.DataFrame(columns=SUMMARY_COLUMNS)
    if rows.empty:
        out = pd.DataFrame(columns=["dataset", "variant", "mean", "n", "std"])
    else:
        grouped = rows.groupby(["dataset", "variant"], sort=False)["value"]
        out = grouped.agg(mean="mean", n="count").reset_index()
        out["std"] = grouped.std(ddof=ddof).to_numpy()
    if not undefined.empty:
        undefined = undefined.rename("undefined").reset_index()
        out = out.merge(undefined, on=["dataset", "variant"], how="outer", sort=False)
    else:
        out["undefined"] = 0
    out["undefined"] = out["undefined"].fillna(0).astype(int)
    out["n"] = out["n"].fillna(0).astype(int)
    out["mean"] = out["mean"].astype(float)
    out["std"] = out["std"].astype(float)
    columns = list(SUMMARY_COLUMNS)
    if "n_splits" in final.columns and final["n_splits"].notna().any():
        # the repeats the configuration runs, which tell a complete cell from one under way (see full_repeats)
        splits = (pd.to_numeric(final["n_splits"], errors="coerce").groupby([final["dataset"], final["variant"]])
                  .max().rename("n_splits").reset_index())
        out = out.merge(splits, on=["dataset", "variant"], how="left", sort=False)
        columns.append("n_splits")
    return out[columns].reset_index(drop=True)


def ordered_unique(values) -> list:
    seen: dict = {}
    for v in values:
        seen.setdefault(v, None)
    return list(seen)


def score_matrix(summary: pd.DataFrame, datasets: list[str] | None = None, variants: list[str] | None = None,
                 value: str = "mean") -> pd.DataFrame:
    """datasets x variants table of ``value`` (NaN for cells not run), in the given (or first-seen) order."""
    datasets = datasets if datasets is not None else ordered_unique(summary["dataset"])
    variants = variants if variants is not None else ordered_unique(summary["variant"])
    if summary.empty:
        return pd.DataFrame(np.nan, index=pd.Index(datasets, name="dataset"),
                            columns=pd.Index(variants, name="variant"))
    wide = summary.pivot(index="dataset", columns="variant", values=value)
    return wide.reindex(index=datasets, columns=variants).rename_axis(index="dataset", columns="variant").astype(float)


def _finished(summary: pd.DataFrame) -> pd.Series:
    """Finished repeats per cell of ``summary``, undefined scores counted."""
    undefined = summary["undefined"] if "undefined" in summary.columns else 0
    return (summary["n"] + undefined).astype(int)


def full_repeats(summary: pd.DataFrame) -> pd.Series:
    """Per cell of ``summary``, the repeats a complete cell has (a cell with fewer is a run under way, whose mean
    is not that of the protocol's splits): the repeats the configuration runs, as ``collect`` tabulates them
    (``n_splits``), else the most any cell has finished (tables collected before ``n_splits`` existed)."""
    if summary.empty or "n" not in summary.columns:
        return pd.Series(0, index=summary.index, dtype=int)
    most = int(_finished(summary).max())
    if "n_splits" not in summary.columns:
        return pd.Series(most, index=summary.index, dtype=int)
    return pd.to_numeric(summary["n_splits"], errors="coerce").fillna(most).astype(int)


def without_partial(summary: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """``summary`` with the mean of every partial cell (fewer repeats than :func:`full_repeats`) set to NaN, so that
    rankings over datasets treat it as not run, and the partial cells as "dataset / variant (n of full)"."""
    if summary.empty:
        return summary, []
    done, full = _finished(summary), full_repeats(summary)
    mask = summary["mean"].notna() & (done < full)
    partial = [f"{r.dataset} / {r.variant} ({d} of {f})"
               for r, d, f in zip(summary[mask].itertuples(index=False), done[mask], full[mask])]
    out = summary.copy()
    out.loc[mask, "mean"] = np.nan
    return out, partial


def complete_rows(matrix: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """Datasets with every variant present, and the names of the incomplete ones that were dropped."""
    mask = matrix.notna().all(axis=1)
    return matrix[mask], [str(d) for d in matrix.index[~mask]]


def param_columns(scores: pd.DataFrame) -> list[str]:
    return [c for c in scores.columns if c.startswith("param.")]


def add_variant_group(rows: pd.DataFrame, scores: pd.DataFrame, x: str | None) -> pd.DataFrame:
    """Add ``variant_group``: the method plus the parameters (other than the swept ``x``) that differ between
    configurations of that method, so that one line of a sweep is one configuration with only ``x`` changing. A
    parameter a configuration leaves unset reads ``default``. When every line of several variants is named by a
    prefix its variant names share (``rf-shared-q1``, ``rf-shared-q2``, ...: the configuration's name template),
    distinct between lines, the line is labelled by it (``rf-shared-q*``), as the sweep's ``matches`` name it."""
    rows = rows.copy()
    params = [c for c in param_columns(scores) if c != x and c in rows.columns]
    labels = rows["method"].astype(str).copy()
    for method, grp in rows.groupby("method", sort=False):
        varying = [c for c in params if grp[c].astype(str).nunique(dropna=False) > 1]
        if not varying:
            continue
        parts = [grp[c].map(lambda v, name=c[len("param."):]: f"{name}={_fmt_param(v)}") for c in varying]
        joined = parts[0]
        for part in parts[1:]:
            joined = joined + ", " + part
        labels.loc[grp.index] = method + " (" + joined + ")"
    rows["variant_group"] = labels
    if "variant" in rows.columns:
        rows["variant_group"] = rows["variant_group"].map(_name_prefixes(rows))
    return rows


def _name_prefixes(rows: pd.DataFrame) -> dict[str, str]:
    """``{label: label}``, or ``{label: "<common prefix of its variant names>*"}`` for every label when each line
    of more than one variant has such a prefix and no two lines share one."""
    import os.path

    names = {label: sorted(set(grp["variant"].astype(str)))
             for label, grp in rows.groupby("variant_group", sort=False)}
    same = {label: label for label in names}
    prefixes = {label: os.path.commonprefix(v) for label, v in names.items() if len(v) > 1}
    if not prefixes or not all(prefixes.values()) or len(set(prefixes.values())) < len(prefixes):
        return same
    single = {v[0] for label, v in names.items() if len(v) == 1}
    if any(p + "*" in single for p in prefixes.values()):
        return same
    return {**same, **{label: prefix + "*" for label, prefix in prefixes.items()}}


def _fmt_param(value) -> str:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return "default"      # the configuration leaves the parameter to the estimator
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def axis_values(series: pd.Series) -> tuple[pd.Series, bool]:
    """Parameter values for a plot axis: numeric when every value parses as a number, else strings."""
    numeric = pd.to_numeric(series, errors="coerce")
    if numeric.notna().all() and len(series):
        return numeric.astype(float), True
    return series.astype(str), False


def package_versions(scores: pd.DataFrame) -> dict[str, dict[str, int]]:
    """The package versions the fits ran with (``package.<name>`` columns, from the run records' provenance):
    package -> {version: number of fits}, a fit being one (dataset, variant, repeat). A fit that did not record a
    package (not installed, or an older record) is counted under "not recorded"."""
    cols = [c for c in scores.columns if c.startswith(PACKAGE_PREFIX)]
    if not cols or scores.empty:
        return {}
    keys = [k for k in ("dataset", "variant", "repeat") if k in scores.columns]
    fits = scores.drop_duplicates(keys) if keys else scores
    out: dict[str, dict[str, int]] = {}
    for col in cols:
        values = fits[col].map(lambda v: "not recorded" if pd.isna(v) or str(v).strip() == "" else str(v))
        counts = values.value_counts(sort=False)
        if set(counts.index) == {"not recorded"} and col != PACKAGE_PREFIX + "forestbench":
            continue        # a package no fit had installed
        out[col[len(PACKAGE_PREFIX):]] = {str(v): int(n) for v, n in sorted(counts.items())}
    return out


def mixed_versions(versions: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    """The packages of :func:`package_versions` whose fits ran with more than one version."""
    return {p: v for p, v in versions.items() if len(v) > 1}


def versions_text(versions: dict[str, dict[str, int]]) -> str:
    """One line: ``numpy 2.1.3, scikit-learn 1.5.2``; a mixed package lists each version with its fit count."""
    parts = []
    for package, found in versions.items():
        if len(found) == 1:
            parts.append(f"{package} {next(iter(found))}")
        else:
            parts.append(f"{package} " + " / ".join(f"{v} ({n} fits)" for v, n in found.items()))
    return ", ".join(parts)
