"""Figures: critical-difference diagrams, parameter sweeps, timings on log axes and convergence curves.

All figures use the seaborn "colorblind" palette and, for lines, distinct markers and dashes as well, so they stay
readable in grey-scale print. Each figure is written as PDF (for the paper) and PNG (for the HTML page), atomically.
"""
from __future__ import annotations

import contextlib
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from forestbench import stats  # noqa: E402
from forestbench._io import atomic_path  # noqa: E402
from forestbench.report.data import axis_values  # noqa: E402

from matplotlib.ticker import FuncFormatter, MaxNLocator  # noqa: E402

PALETTE = "colorblind"
_PLAIN = FuncFormatter(lambda v, _: f"{v:g}")
_PLAIN_MINOR = FuncFormatter(lambda v, _: f"{v:g}" if f"{v:.1e}"[0] in "25" else "")
PNG_DPI = 150


@contextlib.contextmanager
def _style():
    with sns.axes_style("whitegrid"), sns.plotting_context("paper", font_scale=1.2), \
            sns.color_palette(PALETTE), plt.rc_context({"pdf.fonttype": 42, "savefig.bbox": "tight"}):
        yield


def save_figure(fig, base: Path) -> list[Path]:
    """Write ``base``.pdf and ``base``.png atomically and close the figure."""
    written = []
    try:
        for fmt in ("pdf", "png"):
            path = base.with_suffix(f".{fmt}")
            with atomic_path(path) as tmp:
                kwargs = {"dpi": PNG_DPI} if fmt == "png" else {}
                fig.savefig(tmp, format=fmt, bbox_inches="tight", metadata=_metadata(fmt), **kwargs)
            written.append(path)
    finally:
        plt.close(fig)
    return written


def _metadata(fmt: str) -> dict:
    # fixed metadata keeps the files byte-stable between identical runs
    if fmt == "pdf":
        return {"CreationDate": None, "Producer": "forestbench"}
    return {"Software": "forestbench"}


def cd_diagram(matrix: pd.DataFrame, higher_is_better: bool, alpha: float = 0.05, title: str = ""):
    """Critical-difference diagram (Demšar 2006) of a complete datasets x variants matrix.

    Ranks: average ranks (1 = best). Bar: Nemenyi CD at ``alpha``. Cliques: groups whose Nemenyi p >= alpha, which
    is the same as average ranks within one CD. Returns (figure, info dict with ranks, CD, Friedman test).
    """
    import scikit_posthocs as sp

    n, k = matrix.shape
    friedman = stats.friedman_test(matrix, higher_is_better)
    cd = stats.nemenyi_critical_difference(k, n, alpha)
    ranks = friedman.average_ranks
    sig = stats.nemenyi_pvalues(matrix, higher_is_better)
    with _style(), sns.axes_style("white"):
        fig, ax = plt.subplots(figsize=(8, 1.6 + 0.32 * k))
        colors = sns.color_palette(PALETTE, k)
        sp.critical_difference_diagram(
            ranks, sig, alpha=alpha, ax=ax, color_palette={str(v): colors[i] for i, v in enumerate(ranks.index)},
            label_fmt_left="{label} ({rank:.2f})", label_fmt_right="({rank:.2f}) {label}",
            crossbar_props={"color": "black", "linewidth": 2.5}, label_props={"fontsize": 10})
        # the CD bar, drawn above the rank axis so that it clears the tick labels
        low, high = ax.get_ylim()
        x0 = float(ranks.min())
        y_bar = 1.6
        ax.plot([x0, x0 + cd], [y_bar, y_bar], color="black", linewidth=1.5, clip_on=False)
        for xe in (x0, x0 + cd):
            ax.plot([xe, xe], [y_bar - 0.15, y_bar + 0.15], color="black", linewidth=1.5, clip_on=False)
        ax.text(x0 + cd / 2, y_bar + 0.25, f"CD = {cd:.2f}", ha="center", va="bottom", fontsize=10)
        ax.set_ylim(low, max(high, y_bar + 1.0))
        heading = f"{title}\n" if title else ""
        ax.set_title(f"{heading}Friedman p = {friedman.p_value:.3g}, Nemenyi CD = {cd:.2f} "
                     f"(α = {alpha}, k = {k}, N = {n})", fontsize=10, pad=4)
    info = {"average_ranks": {str(k_): float(v) for k_, v in ranks.items()}, "critical_difference": cd,
            "friedman_statistic": friedman.statistic, "friedman_p_value": friedman.p_value,
            "iman_davenport": friedman.iman_davenport, "iman_davenport_p_value": friedman.iman_davenport_p_value,
            "n_datasets": n, "n_methods": k, "alpha": alpha}
    return fig, info


# named sizes of n_components (forestbench.projections), in increasing size for the usual d
_NAMED_SIZES = {"ln_d": "ln d", "2ln_d": "2 ln d", "sqrt_d": "√d"}


def param_value_label(column: str, value) -> str:
    """How a parameter value reads on an axis: ``n_components`` 1.0 (a fraction of d) is "d", 0.5 "0.5 d",
    ``ln_d`` "ln d"; an integer-valued float prints without its ".0"; other values as they are."""
    text = str(value)
    if column.endswith("n_components"):
        if text in _NAMED_SIZES:
            return _NAMED_SIZES[text]
        if "." in text:
            try:
                frac = float(text)
            except ValueError:
                return text
            return "d" if frac == 1.0 else f"{frac:g} d"
        return text
    try:
        number = float(text)
    except ValueError:
        return text
    return str(int(number)) if number.is_integer() and "." in text else text


def _level_order(column: str, values: list[str]) -> list[str]:
    """Categorical axis levels: for ``n_components`` integers, then named sizes, then fractions of d (the order
    of q for the usual d); for other parameters as first seen."""
    if not column.endswith("n_components"):
        return values

    def key(v: str):
        if v in _NAMED_SIZES:
            return (1, list(_NAMED_SIZES).index(v))
        try:
            number = float(v)
        except ValueError:
            return (3, 0)
        return (2, number) if "." in v else (0, number)
    return sorted(values, key=key)


def _facet_line_plot(data: pd.DataFrame, x: str, y: str, hue: str | None, ylabel: str, xlabel: str,
                     logy: bool = False, logx: bool | None = None):
    data = data[data[x].notna()].copy()                     # a row without x has no place on the axis
    datasets = list(dict.fromkeys(data["dataset"]))          # panel and line orders: as first seen in the records
    if hue and data[hue].isna().any():
        # a variant without this parameter (e.g. the baseline of a sweep) is named by its variant, never "nan"
        data[hue] = data[hue].astype(object).where(data[hue].notna(), data["variant"].astype(str))
    if hue:
        data[hue] = data[hue].map(lambda v: param_value_label(hue, v))
    hue_levels = list(dict.fromkeys(data[hue])) if hue else None
    data[x], numeric = axis_values(data[x])
    levels = None
    if numeric:
        data = data.sort_values(x, kind="stable")
    else:
        # a categorical axis: positions 0..k-1 in a meaningful order, labelled by readable values
        levels = _level_order(x, [str(v) for v in dict.fromkeys(data[x])])
        data[x] = data[x].map(str)
        data[x] = data[x].map({v: i for i, v in enumerate(levels)}).astype(float)
        data = data.sort_values(x, kind="stable")
    col_wrap = min(4, len(datasets))
    kw = {}
    if hue:
        kw = {"hue": hue, "style": hue, "hue_order": hue_levels, "style_order": hue_levels, "markers": True,
              "dashes": True, "palette": sns.color_palette(PALETTE, len(hue_levels))}
    with _style():
        grid = sns.relplot(data=data, x=x, y=y, col="dataset", col_wrap=col_wrap, col_order=datasets, kind="line",
                           errorbar="sd", err_style="bars", facet_kws={"sharey": False, "sharex": True},
                           height=2.8, aspect=1.25, marker=None if hue else "o", **kw)
        grid.set_axis_labels(xlabel, ylabel)
        grid.set_titles("{col_name}")
        if hue and grid.legend is not None:
            grid.legend.set_title("variant" if hue == "variant_group" else _label(hue))
        if levels is not None:
            for ax in grid.axes.flat:
                ax.set_xticks(range(len(levels)), [param_value_label(x, v) for v in levels])
                ax.set_xlim(-0.4, len(levels) - 0.6)
        if logy:
            for ax in grid.axes.flat:
                ax.set_yscale("log")
                ax.yaxis.set_major_formatter(_PLAIN)
                ax.yaxis.set_minor_formatter(_PLAIN_MINOR)
                _ensure_tick_labels(ax)
        if logx is None:
            vals = data[x].to_numpy(dtype=float) if numeric else np.array([])
            logx = bool(numeric and len(vals) and np.all(vals > 0) and vals.max() / vals.min() >= 20)
        if logx and numeric:
            for ax in grid.axes.flat:
                ax.set_xscale("log")
                ax.xaxis.set_major_formatter(_PLAIN)
    return grid.figure


def visible_tick_labels(axis) -> list[str]:
    """The non-empty tick labels (major and minor) of a matplotlib axis inside its view interval."""
    lo, hi = sorted(axis.get_view_interval())
    out = []
    for minor in (False, True):
        locs = [v for v in axis.get_ticklocs(minor=minor) if lo <= v <= hi]
        formatter = axis.get_minor_formatter() if minor else axis.get_major_formatter()
        formatter.set_locs(locs)
        out += [t for t in (formatter(v, i) for i, v in enumerate(locs)) if t]
    return out


def _ensure_tick_labels(ax) -> None:
    """A log y axis spanning less than a decade may show no labelled tick (no power of ten, no 2 or 5 inside):
    then label a few round values of its range instead."""
    if len(visible_tick_labels(ax.yaxis)) >= 2:
        return
    from matplotlib.ticker import FixedLocator, MaxNLocator, NullFormatter

    lo, hi = sorted(ax.get_ylim())
    ticks = [t for t in MaxNLocator(nbins=4, steps=[1, 2, 2.5, 5, 10]).tick_values(lo, hi) if lo <= t <= hi and t > 0]
    if len(ticks) < 2:
        ticks = [lo, hi]
    ax.yaxis.set_major_locator(FixedLocator(ticks))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:.3g}"))
    ax.yaxis.set_minor_formatter(NullFormatter())


def sweep_plot(rows: pd.DataFrame, x: str, metric: str, hue: str | None, baselines: pd.DataFrame | None = None):
    """Mean ± std (over repeats) of ``metric`` against the swept parameter ``x``, one panel per dataset.
    ``baselines`` (columns dataset, variant, value: a variant without ``x``, one row per repeat) are drawn as
    horizontal lines at their mean over repeats, with a ± std band, labelled by variant."""
    fig = _facet_line_plot(rows, x, "value", hue, metric, _label(x))
    if baselines is not None and not baselines.empty:
        panels = {ax.get_title(): ax for ax in fig.axes if ax.get_title()}
        for (dataset, variant), grp in baselines.groupby(["dataset", "variant"], sort=False):
            ax = panels.get(str(dataset))
            if ax is None:
                continue
            mean = float(grp["value"].mean())
            std = float(grp["value"].std(ddof=1)) if len(grp) > 1 else 0.0
            ax.axhline(mean, color="0.3", linestyle=":", linewidth=1.0, zorder=1)
            if std > 0:
                ax.axhspan(mean - std, mean + std, color="0.5", alpha=0.15, linewidth=0, zorder=0)
            ax.annotate(str(variant), xy=(1.0, mean), xycoords=("axes fraction", "data"), xytext=(-2, 2),
                        textcoords="offset points", ha="right", va="bottom", fontsize=7, color="0.3")
    return fig


def timing_plot(rows: pd.DataFrame, x: str, time: str, hue: str | None):
    """Mean ± std of a time column against ``x``, log time axis (log x too when ``x`` spans over a decade)."""
    return _facet_line_plot(rows, x, time, hue, f"{_label(time)} (log scale)", _label(x), logy=True)


CONVERGENCE_X = {"step": "boosting iteration / stage", "n_trees": "number of trees", "stage_fit_s": "fit time (s)"}


def convergence_plot(rows: pd.DataFrame, metric: str, hue: str = "variant", x: str = "step", logx: bool = False):
    """``metric`` against the stage, the number of trees or the cumulative fit time of staged predictions."""
    return _facet_line_plot(rows, x, "value", hue, metric, CONVERGENCE_X.get(x, x) + (" (log)" if logx else ""),
                            logx=logx)


def layer_curves_plot(rows: pd.DataFrame, metric: str, spread: bool = True):
    """Training and test ``metric`` against the layer of a cascade, one panel per dataset, one colour per variant
    (training dashed, test solid); the mean over repeats, ± std bars with ``spread``. Layers are whole numbers."""
    data = rows   # columns dataset, variant, layer, value and set ("training" or "test")
    datasets = list(dict.fromkeys(data["dataset"]))
    variants = list(dict.fromkeys(data["variant"]))
    with _style():
        grid = sns.relplot(data=data, x="layer", y="value", col="dataset", col_wrap=min(4, len(datasets)),
                           col_order=datasets, kind="line", hue="variant", hue_order=variants, style="set",
                           style_order=["test", "training"], markers=True, errorbar="sd" if spread else None,
                           err_style="bars", palette=sns.color_palette(PALETTE, len(variants)),
                           facet_kws={"sharey": False, "sharex": True}, height=2.8, aspect=1.25)
        grid.set_axis_labels("layer", metric)
        grid.set_titles("{col_name}")
        for ax in grid.axes.flat:
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    return grid.figure


def validation_curve_plot(rows: pd.DataFrame, x: str, metric: str, hue: str = "variant", logx: bool = False):
    """Validation ``metric`` of the selection's candidates: against the stage for a staged selection (the
    selected candidate's curve), else against the candidate's position in the grid."""
    return _facet_line_plot(rows, x, "score", hue, f"validation {metric}", x, logx=logx)


def _label(column: str) -> str:
    return column[len("param."):] if column.startswith("param.") else column
