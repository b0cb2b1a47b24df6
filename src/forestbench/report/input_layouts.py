"""One tree-growing problem in several input layouts (thesis ch.8): same trees, times, depth, crossover density.

The variants of such an experiment differ only by ``input_layout`` (dense ``c`` / ``fortran``, sparse ``csc``),
so every (dataset, repeat) must have grown the same tree in every layout: the run records carry a structural
fingerprint of the fitted tree (``tree_sha256``) and :func:`fingerprint_mismatches` lists the fits where they
differ. The rest reduces the fits to per-(dataset, layout) medians and quartiles, the time ratios of thesis Tables
8.2/8.3 (dense / sparse: above 1 means the sparse layout is faster), the density where the sparse layout stops
winning (Figs 8.2/8.3), and the comparison of both with the published numbers.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from forestbench.errors import ConfigError

__all__ = ["LAYOUT", "QUANTITIES", "REFERENCE_METHOD", "compare_published", "crossovers", "fingerprint_mismatches",
           "fit_rows", "layout_summary", "published", "sweep_figure", "time_ratios"]

LAYOUT = "param.input_layout"
# our layout -> the method_id of the thesis tables (config/reference/thesis_table_8_2.csv, 8_3)
REFERENCE_METHOD = {"c": "dense_c", "fortran": "dense_fortran", "csc": "sparse_csc"}
QUANTITIES = ("fit_wall_s", "predict_wall_s", "max_depth")


def fit_rows(scores: pd.DataFrame, layout: str = LAYOUT) -> pd.DataFrame:
    """One row per fit (the time and model columns repeat on every metric row of a record)."""
    rows = scores[scores["step"].isna()] if "step" in scores.columns else scores
    if rows.empty:
        return rows
    if layout not in rows.columns:
        raise ConfigError(f"column {layout!r} is not in the scores table: the variants must set input_layout")
    rows = rows.drop_duplicates(["dataset", "variant", "repeat"]).copy()
    rows["layout"] = rows[layout].astype(str)
    for col in QUANTITIES + ("input_density",):
        if col in rows.columns:
            rows[col] = pd.to_numeric(rows[col], errors="coerce")
    return rows


def fingerprint_mismatches(rows: pd.DataFrame) -> pd.DataFrame:
    """(dataset, repeat) whose layouts grew different trees, or whose record has no fingerprint."""
    cols = ["dataset", "repeat", "layouts", "n_distinct", "problem"]
    if rows.empty:
        return pd.DataFrame(columns=cols)
    if "tree_sha256" not in rows.columns:
        rows = rows.assign(tree_sha256=np.nan)
    out = []
    for (dataset, repeat), grp in rows.groupby(["dataset", "repeat"], sort=True):
        missing = grp[grp["tree_sha256"].isna()]
        if len(missing):
            out.append({"dataset": dataset, "repeat": int(repeat), "layouts": ", ".join(missing["layout"]),
                        "n_distinct": np.nan, "problem": "no tree fingerprint in the run record"})
            continue
        distinct = grp["tree_sha256"].nunique()
        if distinct > 1:
            groups = grp.groupby("tree_sha256")["layout"].apply(lambda s: "+".join(sorted(s)))
            out.append({"dataset": dataset, "repeat": int(repeat), "layouts": " vs ".join(groups),
                        "n_distinct": int(distinct), "problem": "different trees"})
    return pd.DataFrame(out, columns=cols)


def layout_summary(rows: pd.DataFrame) -> pd.DataFrame:
    """Per (dataset, layout): repeats, median density and, for each quantity, median / 25% / 75% quantiles."""
    if rows.empty:
        return pd.DataFrame(columns=["dataset", "layout", "n", "input_density"])
    records = []
    for (dataset, layout), grp in rows.groupby(["dataset", "layout"], sort=False):
        rec = {"dataset": dataset, "layout": layout, "n": int(len(grp)),
               "input_density": float(grp["input_density"].median()) if "input_density" in grp else np.nan}
        for q in QUANTITIES:
            values = grp[q].dropna() if q in grp else pd.Series(dtype=float)
            rec[f"{q}_median"] = float(values.median()) if len(values) else np.nan
            rec[f"{q}_q25"] = float(values.quantile(0.25)) if len(values) else np.nan
            rec[f"{q}_q75"] = float(values.quantile(0.75)) if len(values) else np.nan
        records.append(rec)
    return pd.DataFrame(records)


def time_ratios(summary: pd.DataFrame, time: str = "fit_wall_s", sparse: str = "csc",
                dense: tuple[str, ...] = ("fortran", "c")) -> pd.DataFrame:
    """Per dataset: the ratio of median times dense / sparse for each dense layout (> 1: sparse is faster)."""
    cols = ["dataset", "input_density"] + [f"{d}_over_{sparse}" for d in dense]
    if summary.empty:
        return pd.DataFrame(columns=cols)
    wide = summary.pivot(index="dataset", columns="layout", values=f"{time}_median")
    density = summary.groupby("dataset", sort=False)["input_density"].median()
    out = pd.DataFrame({"dataset": list(dict.fromkeys(summary["dataset"]))})
    out["input_density"] = out["dataset"].map(density)
    for d in dense:
        ok = d in wide.columns and sparse in wide.columns
        out[f"{d}_over_{sparse}"] = out["dataset"].map(wide[d] / wide[sparse]) if ok else np.nan
    return out[cols]


def crossovers(summary: pd.DataFrame, time: str = "fit_wall_s", sparse: str = "csc",
               dense: str = "fortran") -> list[float]:
    """Densities where the sparse layout's median time crosses the dense layout's, going up in density.

    Between two consecutive densities where the sign of log(t_sparse / t_dense) changes, the crossing is
    interpolated linearly in log density. An upward crossing (sparse stops winning) is positive, a downward one
    (sparse starts winning again) is returned negated so the two can be told apart.
    """
    if summary.empty:
        return []
    wide = summary.pivot_table(index="input_density", columns="layout", values=f"{time}_median", aggfunc="median")
    if sparse not in wide.columns or dense not in wide.columns:
        return []
    ratio = np.log(wide[sparse] / wide[dense]).dropna().sort_index()
    x, y = np.log(ratio.index.to_numpy(float)), ratio.to_numpy(float)
    out = []
    for i in range(len(y) - 1):
        if y[i] == 0:
            out.append(float(np.exp(x[i])) if y[i + 1] > 0 else -float(np.exp(x[i])))
        elif y[i] * y[i + 1] < 0:
            at = float(np.exp(x[i] + (x[i + 1] - x[i]) * (-y[i]) / (y[i + 1] - y[i])))
            out.append(at if y[i] < 0 else -at)
    return out


def published(reference_dir: Path, times_table: str | None, density_table: str | None,
              datasets: dict | None = None) -> pd.DataFrame:
    """The published per-dataset numbers: density (Table 8.1) and dense / sparse time ratios (Tables 8.2/8.3).

    fortran/sparse is the ratio the thesis prints (computed before rounding); c/sparse is derived from the printed
    times. ``datasets`` maps our dataset names to the tables' dataset_id."""
    from forestbench.report.reference_tables import load_reference

    back = {str(v): str(k) for k, v in (datasets or {}).items()}
    out: dict[str, dict] = {}
    if density_table:
        path = Path(reference_dir) / f"{density_table}.csv"
        if not path.exists():
            raise ConfigError(f"reference table {density_table!r}: {path} does not exist")
        ref = pd.read_csv(path, dtype=str, keep_default_na=False)
        if not {"dataset_id", "metric", "value"} <= set(ref.columns):
            raise ConfigError(f"reference table {path} lacks a dataset_id, metric or value column")
        for r in ref[ref["metric"] == "input_density"].itertuples(index=False):
            out.setdefault(back.get(r.dataset_id, r.dataset_id), {})["paper_density"] = pd.to_numeric(
                r.value, errors="coerce")
    if times_table:
        ref = load_reference(reference_dir, times_table)
        for dataset_id, grp in ref.groupby("dataset_id", sort=False):
            cell = out.setdefault(back.get(dataset_id, dataset_id), {})
            values = {r.method_id: pd.to_numeric(r.value, errors="coerce") for r in grp.itertuples(index=False)}
            cell["paper_fortran_over_csc"] = values.get("fortran_over_sparse", np.nan)
            c, s = values.get(REFERENCE_METHOD["c"], np.nan), values.get(REFERENCE_METHOD["csc"], np.nan)
            cell["paper_c_over_csc"] = c / s if not (pd.isna(c) or pd.isna(s)) and s > 0 else np.nan
    frame = pd.DataFrame.from_dict(out, orient="index").rename_axis("dataset").reset_index()
    for col in ("paper_density", "paper_fortran_over_csc", "paper_c_over_csc"):
        if col not in frame.columns:
            frame[col] = np.nan
    return frame


def _side(x: float) -> str:
    return "" if pd.isna(x) else ("sparse faster" if x > 1 else "dense faster" if x < 1 else "equal")


def compare_published(ratios: pd.DataFrame, paper: pd.DataFrame, datasets: list[str]) -> pd.DataFrame:
    """Our ratios and densities beside the published ones, one row per dataset (ours or the paper's)."""
    frame = pd.DataFrame({"dataset": list(dict.fromkeys(list(datasets) + list(paper["dataset"])))})
    frame = frame.merge(ratios, on="dataset", how="left").merge(paper, on="dataset", how="left")
    for d in ("fortran", "c"):
        ours, theirs = frame.get(f"{d}_over_csc"), frame[f"paper_{d}_over_csc"]
        if ours is None:
            frame[f"{d}_over_csc"] = ours = pd.Series(np.nan, index=frame.index)
        frame[f"{d}_agrees"] = [
            "" if pd.isna(o) or pd.isna(t) else ("yes" if _side(o) == _side(t) else "NO")
            for o, t in zip(ours, theirs)]
    return frame


def sweep_figure(rows: pd.DataFrame, quantities: list[str], crossover: dict | None = None,
                 title: str = ""):
    """One panel per quantity against the measured input density (log x), one line per layout: the median over
    repeats with the inter-quartile band, the repeats as dots. ``crossover``: {label: density} drawn as lines."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    from forestbench.report.figures import _style

    layouts = list(dict.fromkeys(rows["layout"]))
    labels = {"fit_wall_s": "fit time (s)", "predict_wall_s": "predict time (s; csc fits predict from CSR)",
              "max_depth": "maximum depth"}
    with _style():
        fig, axes = plt.subplots(1, len(quantities), figsize=(4.6 * len(quantities), 3.8), squeeze=False)
        colors = dict(zip(layouts, sns.color_palette("colorblind", len(layouts))))
        markers = dict(zip(layouts, "osD^v<>"))
        for ax, q in zip(axes[0], quantities):
            for layout in layouts:
                grp = rows[(rows["layout"] == layout) & rows[q].notna() & rows["input_density"].notna()]
                if grp.empty:
                    continue
                stats = grp.groupby("input_density")[q].quantile([0.25, 0.5, 0.75]).unstack()
                x = stats.index.to_numpy(float)
                ax.scatter(grp["input_density"], grp[q], s=6, alpha=0.25, color=colors[layout])
                ax.fill_between(x, stats[0.25], stats[0.75], alpha=0.25, color=colors[layout], linewidth=0)
                ax.plot(x, stats[0.5], marker=markers[layout], color=colors[layout], label=layout)
            for name, at in (crossover or {}).items():
                if at and at > 0:
                    ax.axvline(at, linestyle=":" if "thesis" in name else "--", color="grey", linewidth=1)
            ax.set_xscale("log")
            if q != "max_depth":
                ax.set_yscale("log")
            ax.set_xlabel("input density")
            ax.set_ylabel(labels.get(q, q))
        axes[0][0].legend(title="layout", fontsize=9)
        if title:
            fig.suptitle(title)
        fig.tight_layout()
    return fig
