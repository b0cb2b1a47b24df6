"""One experiment's report: the configured tables and figures, the reproduction table, the list of cells not run.

The general report kinds are defined and registered here (``@report_kind``, registry in
:mod:`forestbench.report.kinds`); importing this module imports every module that defines a kind, so
``REPORT_KINDS`` is complete once it is imported.
"""
from __future__ import annotations

import html
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd

from forestbench._io import write_json
from forestbench.errors import ConfigError, DataError
from forestbench.report import figures, input_layouts, reproduction, tables
from forestbench.report import paired  # noqa: F401  (defines and registers the paired kind)
from forestbench.report import teaching  # noqa: F401  (defines and registers the oob_curve kind)
from forestbench.report.data import (TIME_COLUMNS, add_variant_group, complete_rows, final_rows, load_scores,
                                     metric_direction, mixed_versions, ordered_unique, package_versions,
                                     score_matrix, summarise, versions_text, without_partial)
from forestbench.report.kinds import MANIFEST, REPORT_KINDS, Context, ReportFn, Section, report_kind
from forestbench.report.verdicts import verdict_counts, verdict_text
from forestbench.workflow.variants import variant_names

__all__ = ["MANIFEST", "REPORT_KINDS", "Context", "ReportFn", "Section", "against_curve_table",
           "build_experiment_report", "experiment_claims", "missing_cells", "report_kind", "selection_sections",
           "sweep_claims", "sweep_matches_table"]


def _short(items: list[str], limit: int = 20) -> str:
    """A readable list for a note; the full lists are in the "Cells not run" section and the manifest."""
    shown = ", ".join(items[:limit])
    return shown + (f" ... and {len(items) - limit} more (see 'Cells not run')" if len(items) > limit else "")


def _require(spec: dict, key: str, where: str):
    if key not in spec or spec[key] in (None, ""):
        raise ConfigError(f"{where}: missing key {key!r}")
    return spec[key]


def _direction(ctx: Context, metric: str, spec: dict) -> bool:
    return metric_direction(ctx.scores, metric, spec.get("higher_is_better"))


# --- report kinds ------------------------------------------------------------------------------------------------
@report_kind("table")
def _table(ctx: Context, spec: dict, slug: str) -> Section:
    """``metric``, optional ``baseline`` (a variant), ``decimals`` (3), ``sig_rule`` (``max_std`` | ``baseline_std``
    | ``method_std``). Mean ± std per dataset x variant, best per row in bold, cells more than one std from the
    baseline marked, average-rank row; CSV (long form), Markdown, LaTeX (booktabs)."""
    metric = str(spec["metric"])
    summary = summarise(ctx.scores, metric)
    ranked, partial = without_partial(summary)
    datasets, variants = ctx.datasets_for(spec), ctx.variants_for(spec)
    hib = _direction(ctx, metric, spec)
    baseline = spec.get("baseline")
    if baseline is not None and str(baseline) not in variants:
        variants = [str(baseline)] + variants
    table = tables.MeanStdTable(metric, hib, score_matrix(summary, datasets, variants),
                                score_matrix(summary, datasets, variants, "std"),
                                score_matrix(summary, datasets, variants, "n"),
                                baseline=None if baseline is None else str(baseline),
                                decimals=int(spec.get("decimals", 3)), sig_rule=str(spec.get("sig_rule", "max_std")),
                                undefined=score_matrix(summary, datasets, variants, "undefined"),
                                partial=score_matrix(summary, datasets, variants).notna()
                                & score_matrix(ranked, datasets, variants).isna())
    base = ctx.out_dir / "tables" / slug
    sec = Section("table", f"{metric}: mean ± std per dataset" + (f" (baseline {baseline})" if baseline else ""))
    sec.files = {"CSV": ctx.write(base.with_suffix(".csv"), table.to_wide_csv()),
                 "CSV (one row per cell)": ctx.write(base.with_name(base.name + "_cells.csv"), table.to_csv()),
                 "Markdown": ctx.write(base.with_suffix(".md"), table.to_markdown()),
                 "LaTeX": ctx.write(base.with_suffix(".tex"), table.to_latex(label=f"tab:{ctx.experiment}:{metric}"))}
    sec.html, sec.markdown = table.to_html(), table.to_markdown()
    missing = table.missing_cells()
    if missing:
        sec.notes.append(f"{len(missing)} cell(s) not run: " + _short([f"{d}/{v}" for d, v in missing]))
    if partial:
        sec.notes.append(f"{len(partial)} cell(s) under way (fewer repeats than their protocol's splits), shown with "
                         "their partial mean and left out of the average ranks: " + _short(partial))
    undefined = table.undefined_cells()
    if undefined:
        sec.notes.append(f"{len(undefined)} cell(s) with undefined scores (recorded as null, reason in the run "
                         "records' undefined_scores): " + _short([f"{d}/{v} ({k} repeat(s))" for d, v, k in undefined]))
    if baseline is not None:
        sec.data["marks_vs_baseline"] = table.mark_counts()
    return sec


def _iman_davenport_text(info: dict) -> str:
    f, p = info.get("iman_davenport"), info.get("iman_davenport_p_value")
    if f is None or p is None or not (math.isfinite(f) and math.isfinite(p)):
        return "Iman–Davenport F undefined (every dataset ranks the variants in the same order)"
    return f"Iman–Davenport F = {f:.3f}, p = {p:.3g}"


@report_kind("cd_diagram")
def _cd_diagram(ctx: Context, spec: dict, slug: str) -> Section:
    """``metric``, ``alpha`` (0.05), ``label`` (added to the title, to tell apart two diagrams of one metric over
    other variants). Friedman test + Nemenyi CD over the datasets where every variant ran; PDF + PNG and a ranks
    CSV."""
    metric = str(spec["metric"])
    alpha = float(spec.get("alpha", 0.05))
    label = f" ({spec['label']})" if spec.get("label") else ""
    hib = _direction(ctx, metric, spec)
    summary, partial = without_partial(summarise(ctx.scores, metric))
    matrix = score_matrix(summary, ctx.datasets_for(spec), ctx.variants_for(spec))
    sec = Section("cd_diagram", f"{metric}: critical-difference diagram (Friedman + Nemenyi, α = {alpha}){label}")
    if partial:
        sec.notes.append(f"partial cells (a run under way), counted as not run: {_short(partial)}")
    ran = matrix.dropna(axis=1, how="all")
    if ran.shape[1] < matrix.shape[1]:
        sec.notes.append("variant(s) with no result, left out: "
                         + ", ".join(map(str, matrix.columns.difference(ran.columns))))
    complete, dropped = complete_rows(ran)
    if dropped:
        sec.notes.append(f"dataset(s) left out because not every variant ran all repeats: {_short(dropped)}")
    if complete.shape[0] < 2 or complete.shape[1] < 2:
        sec.notes.append(f"not enough results for a CD diagram (need 2 variants on 2 complete datasets; have "
                         f"{complete.shape[1]} variant(s), {complete.shape[0]} complete dataset(s))")
        return sec
    fig, info = figures.cd_diagram(complete, hib, alpha, title=f"{ctx.experiment}: {metric}{label}")
    base = ctx.out_dir / "figures" / slug
    pdf, png = figures.save_figure(fig, base)
    ctx.written += [pdf, png]
    ranks = pd.DataFrame({"variant": list(info["average_ranks"]), "average_rank": list(info["average_ranks"].values())})
    ranks = ranks.sort_values("average_rank", kind="stable")
    summary_lines = [f"Friedman χ² = {info['friedman_statistic']:.3f}, p = {info['friedman_p_value']:.3g}; "
                     + _iman_davenport_text(info) + "; "
                     f"Nemenyi CD = {info['critical_difference']:.3f} at α = {alpha} (k = {info['n_methods']}, "
                     f"N = {info['n_datasets']})"]
    csv = ranks.assign(critical_difference=info["critical_difference"], friedman_p_value=info["friedman_p_value"],
                       n_datasets=info["n_datasets"], alpha=alpha).to_csv(index=False)
    sec.files = {"PDF": pdf, "PNG": png, "ranks CSV": ctx.write(base.with_suffix(".csv"), csv)}
    sec.images = [png]
    sec.notes += summary_lines
    sec.data = info
    sec.markdown = "| variant | average rank |\n|---|---|\n" + "".join(
        f"| {r.variant} | {r.average_rank:.3f} |\n" for r in ranks.itertuples())
    sec.html = "<table class='ranks'><thead><tr><th>variant</th><th>average rank</th></tr></thead><tbody>" + "".join(
        f"<tr><td>{html.escape(str(r.variant))}</td><td>{r.average_rank:.3f}</td></tr>" for r in ranks.itertuples()
    ) + "</tbody></table>\n"
    return sec


@report_kind("pvalues")
def _pvalues(ctx: Context, spec: dict, slug: str) -> Section:
    """``metric``, ``test`` (``wilcoxon`` | ``ttest``), ``over`` (``datasets`` | ``repeats``; default datasets for
    Wilcoxon, repeats for the t-test, as in the thesis), ``correction`` (none | ``holm``; default none, as the
    published tables), ``alpha``. '>' / '<' sign notation, row versus column."""
    metric = str(spec["metric"])
    test = str(spec.get("test", "wilcoxon"))
    if test not in ("wilcoxon", "ttest"):
        raise ConfigError(f"pvalues report: test must be 'wilcoxon' or 'ttest', got {test!r}")
    hib = _direction(ctx, metric, spec)
    table = tables.pvalue_table(ctx.scores, metric, hib, test, spec.get("over"), spec.get("correction"),
                                float(spec.get("alpha", 0.05)), ctx.variants_for(spec), ctx.datasets_for(spec))
    base = ctx.out_dir / "tables" / slug
    sec = Section("pvalues", f"{metric}: pairwise {'Wilcoxon signed-rank' if test == 'wilcoxon' else 'paired t-test'}"
                  " p-values")
    sec.files = {"CSV": ctx.write(base.with_suffix(".csv"), table.to_csv()),
                 "Markdown": ctx.write(base.with_suffix(".md"), table.to_markdown()),
                 "LaTeX": ctx.write(base.with_suffix(".tex"), table.to_latex())}
    sec.html, sec.markdown = table.to_html(), table.to_markdown()  # both carry the table's notes
    return sec


def _line_figure(ctx: Context, sec: Section, slug: str, fig_fn, rows: pd.DataFrame, *args) -> Section:
    if rows.empty:
        sec.notes.append("no results yet for this figure")
        return sec
    fig = fig_fn(rows, *args)
    pdf, png = figures.save_figure(fig, ctx.out_dir / "figures" / slug)
    ctx.written += [pdf, png]
    sec.files.update({"PDF": pdf, "PNG": png})       # beside any table file the kind wrote before its figure
    sec.images = [png]
    return sec


def _with_hue(ctx: Context, rows: pd.DataFrame, hue: str | None, x: str | None) -> pd.DataFrame:
    if hue == "variant_group" and "variant_group" not in rows.columns and not rows.empty:
        rows = add_variant_group(rows, ctx.scores, x)
    if hue and hue not in rows.columns and not rows.empty:
        raise ConfigError(f"hue column {hue!r} is not in the scores table of {ctx.experiment}")
    if hue and hue != "variant_group" and x in rows.columns and not rows.empty:
        # a curve without the hue parameter (RF on the original outputs swept over k beside the q curves of Figs
        # 5.2-5.3) is one line, named as its variants' group is (rf-k*), not one line per variant
        without = rows[hue].isna() & rows[x].notna()
        if without.any():
            rows = rows.copy()
            rows[hue] = rows[hue].astype(object)
            rows.loc[without, hue] = add_variant_group(rows[without], ctx.scores, x)["variant_group"]
    return rows


def _placed(sec: Section, rows: pd.DataFrame, x: str) -> pd.DataFrame:
    """Rows with a value of ``x``: a variant without that parameter (e.g. the baseline of a sweep) has no place on
    the axis and is named in a note."""
    if rows.empty or x not in rows.columns or not rows[x].isna().any():
        return rows
    unplaced = ordered_unique(rows.loc[rows[x].isna(), "variant"])
    sec.notes.append(f"left out (no {x.removeprefix('param.')}): {_short(unplaced)}")
    return rows[rows[x].notna()]


#: how a sweep's ``matches`` measure a point's distance to its baseline (see :func:`_sweep`)
SWEEP_BANDS = ("combined", "baseline")


def _sweep_rows(ctx: Context, spec: dict) -> tuple[str, str, pd.DataFrame]:
    """A sweep spec's metric, swept column and the final scores it keeps (the report and its claims read these)."""
    metric, x = str(spec["metric"]), str(_require(spec, "x", "sweep report"))
    rows = ctx.restrict(final_rows(ctx.scores, metric), spec)
    if not rows.empty and x not in rows.columns:
        raise ConfigError(f"sweep report: column {x!r} is not in the scores table of {ctx.experiment}")
    return metric, x, rows


@report_kind("sweep")
def _sweep(ctx: Context, spec: dict, slug: str) -> Section:
    """``metric``, ``x`` (a ``param.<name>`` column), ``hue`` (default ``variant_group``: the method plus its
    parameters other than ``x`` that vary). Mean ± std over repeats, one panel per dataset; variants without the
    swept parameter are left out (and named in a note).

    ``matches: [{curve, baseline, claimed}]`` adds a table of the ``x`` from which each curve matches its baseline,
    beside the value a text claims: ``curve`` is the prefix of the curve's variant names (``tree-gaussian-q``),
    ``baseline`` a variant without ``x`` (``tree``). A point matches when its mean over repeats is within
    ``tolerance_std`` (default 1) standard deviations of the baseline's mean, or within ``tolerance_abs`` (default
    0) of it; the curve matches from the smallest ``x`` whose point and every larger one match. The claim agrees
    when that ``x`` is within a factor ``factor`` (default 2) of ``claimed``. The standard deviation is
    ``band: combined`` (default) sqrt(s_b^2 + s_x^2), of the baseline's repeats and the point's, the spread of the
    difference of one repeat of each, so a deterministic baseline (a tree without bootstrap) still has a band; or
    ``band: baseline``, s_b alone.

    ``against_curve: {baseline, curves, more_robust, beats_best}`` checks a text's claims on curves swept over the
    same ``x`` as a baseline curve (thesis Figs 5.2-5.3: forests on Gaussian output projections against the forest
    on the original outputs, LRAP against k): see :func:`against_curve_table`."""
    metric, x, rows = _sweep_rows(ctx, spec)
    hue = spec.get("hue", "variant_group")
    sec = Section("sweep", f"{metric} against {x.removeprefix('param.')}")
    baselines = None
    if spec.get("against_curve"):
        _attach_table(ctx, sec, slug, "against_curve", *against_curve_table(ctx, spec, rows, x, metric))
    if spec.get("matches"):
        _attach_table(ctx, sec, slug, "matches", *sweep_matches_table(ctx, spec, rows, x, metric))
        # the baselines the curves are matched against are drawn as horizontal lines, not left out
        named = [str(m["baseline"]) for m in spec["matches"]]
        if not rows.empty:
            baselines = rows[rows["variant"].isin(named) & rows[x].isna()]
            if not baselines.empty:
                sec.notes.append("horizontal lines (mean ± std over repeats): "
                                 + _short(ordered_unique(baselines["variant"])))
                rows = rows.drop(baselines.index)
    rows = _with_hue(ctx, _placed(sec, rows, x), hue, x)
    if baselines is not None and not baselines.empty:
        return _line_figure(ctx, sec, slug, figures.sweep_plot, rows, x, metric, hue, baselines)
    return _line_figure(ctx, sec, slug, figures.sweep_plot, rows, x, metric, hue)


def _attach_table(ctx: Context, sec: Section, slug: str, name: str, table: pd.DataFrame, note: str) -> None:
    """A claims table of a sweep (``matches``, ``against_curve``) as CSV and Markdown files, in the section's text,
    with its note."""
    base_path = ctx.out_dir / "tables" / f"{slug}_{name}"
    label = name.replace("_", "-")
    sec.files.update({f"{label} CSV": ctx.write(base_path.with_suffix(".csv"), table.to_csv(index=False)),
                      f"{label} Markdown": ctx.write(base_path.with_suffix(".md"), table.to_markdown(index=False))})
    sec.html += table.to_html(index=False, escape=True)
    sec.markdown = "\n\n".join(filter(None, [sec.markdown, table.to_markdown(index=False)]))
    sec.notes.append(note)


def sweep_matches_table(ctx: Context, spec: dict, rows: pd.DataFrame, x: str, metric: str) -> tuple[
        pd.DataFrame, str]:
    """The ``matches`` table of a sweep report (see :func:`_sweep`) and its note; ``rows`` are the final scores of
    ``metric`` the report keeps."""
    where = "sweep report matches"
    tol_std, tol_abs = float(spec.get("tolerance_std", 1.0)), float(spec.get("tolerance_abs", 0.0))
    factor = float(spec.get("factor", 2.0))
    band = str(spec.get("band", "combined"))
    if tol_std < 0 or tol_abs < 0 or factor < 1:
        raise ConfigError(f"{where}: tolerance_std and tolerance_abs must be >= 0 and factor >= 1")
    if band not in SWEEP_BANDS:
        raise ConfigError(f"{where}: band must be one of {', '.join(SWEEP_BANDS)}, got {band!r}")
    out = []
    for item in spec["matches"]:
        if not isinstance(item, dict) or not {"curve", "baseline"} <= set(item):
            raise ConfigError(f"{where}: each entry needs curve (a variant-name prefix) and baseline (a variant), "
                              f"got {item!r}")
        curve, baseline = str(item["curve"]), str(item["baseline"])
        claimed = item.get("claimed")
        for dataset in ctx.datasets_for(spec):
            part = rows[rows["dataset"] == dataset]
            base = part.loc[part["variant"] == baseline, "value"]
            points = part[part["variant"].str.startswith(curve) & part[x].notna()]
            row = {"dataset": dataset, "curve": curve + "*", "baseline": baseline, "claimed": claimed,
                   "baseline mean": np.nan, "baseline std": np.nan, "points": 0, "matches from": None,
                   "verdict": "not run"}
            if not base.empty and not points.empty:
                by_x = points.assign(**{x: pd.to_numeric(points[x])}).groupby(x)["value"]
                mean, spread = by_x.mean().sort_index(), by_x.std(ddof=1).sort_index().fillna(0.0)
                b_mean, b_std = float(base.mean()), float(base.std(ddof=1)) if len(base) > 1 else 0.0
                std = np.sqrt(b_std ** 2 + spread ** 2) if band == "combined" else b_std
                close = (mean - b_mean).abs() <= np.maximum(tol_std * std, tol_abs)
                # the smallest x from which every point matches (None when the largest does not)
                tail = close[::-1].cummin()[::-1]
                first = tail[tail].index.min() if tail.any() else None
                row.update({"baseline mean": b_mean, "baseline std": b_std, "points": int(len(mean)),
                            "matches from": None if first is None else float(first)})
                if claimed is None:
                    row["verdict"] = "no claim"
                elif first is None:
                    row["verdict"] = "never matches"
                else:
                    ok = float(claimed) / factor <= float(first) <= float(claimed) * factor
                    row["verdict"] = "agrees" if ok else "differs"
            out.append(row)
    what = "sqrt(baseline std^2 + the point's std^2)" if band == "combined" else "std of its baseline's repeats"
    note = (f"matches: the {x.removeprefix('param.')} from which each curve's mean {metric} stays within "
            f"{tol_std:g} x {what}" + (f" (or {tol_abs:g})" if tol_abs else "")
            + f", beside the claimed value (agrees within a factor {factor:g})")
    return pd.DataFrame(out), note


#: the claims an ``against_curve`` entry of a sweep checks (see :func:`against_curve_table`)
SWEEP_CURVE_CLAIMS = ("more_robust", "beats_best")


def _curve_summary(summary: pd.DataFrame, points: pd.DataFrame, x: str, expected: list[str],
                   hib: bool) -> dict | None:
    """Best and last point of one curve of one dataset (None while a point the configuration runs is missing or
    partial): ``summary`` has the curve's cells (partial means NaN), ``points`` its rows with ``x``."""
    cells = summary.set_index("variant")
    if not expected or any(v not in cells.index or pd.isna(cells.loc[v, "mean"]) for v in expected):
        return None
    at = points.drop_duplicates("variant").set_index("variant")[x].astype(float)
    frame = pd.DataFrame({"x": at.reindex(expected), "mean": cells.loc[expected, "mean"].astype(float),
                          "std": cells.loc[expected, "std"].astype(float).fillna(0.0)}).sort_values("x")
    best = frame["mean"].idxmax() if hib else frame["mean"].idxmin()
    last = frame.index[-1]
    sign = 1.0 if hib else -1.0
    return {"best x": float(frame.loc[best, "x"]), "best mean": float(frame.loc[best, "mean"]),
            "best std": float(frame.loc[best, "std"]), "last x": float(frame.loc[last, "x"]),
            "last mean": float(frame.loc[last, "mean"]),
            # how much the curve has lost from its best point by the largest x (>= 0, in the metric's units)
            "loss at last x": sign * float(frame.loc[best, "mean"] - frame.loc[last, "mean"])}


def against_curve_table(ctx: Context, spec: dict, rows: pd.DataFrame, x: str, metric: str) -> tuple[
        pd.DataFrame, str]:
    """The ``against_curve`` table of a sweep report and its note: per dataset, each curve (``curves``:
    variant-name prefixes, e.g. ``rf-gaussian-q1-k``) beside a ``baseline`` curve (a prefix too, ``rf-k``) swept
    over the same ``x``, or beside a baseline variant without ``x`` (``rf``: a variant's exact name), whose one
    point is its best.

    Two claims of a text reading such a figure are checked, each where the entry states it (true or false):

    - ``more_robust``: the curve loses less than the baseline from its best point to the largest ``x`` ("more
      robust with respect to over-fitting as k increases"). The loss is the best mean minus the mean at the largest
      ``x`` (in the metric's better direction, so >= 0); the claim holds when the curve's loss is smaller.
    - ``beats_best``: the curve's best point beats the baseline's best point ("it is not really possible to improve
      over baseline Random Forests by tuning jointly input and output randomization"): better when its mean exceeds
      the baseline's best by more than ``tolerance_std`` (default 1) x sqrt(s_c^2 + s_b^2) of the two points'
      repeats, worse when below by as much, level otherwise. ``beats_best: true`` agrees when better, ``false``
      when level or worse.

    A curve or baseline with a point still missing or partial (fewer repeats than its protocol's splits) is
    "unjudged": a best point read off part of a curve is not the curve's."""
    where = "sweep report against_curve"
    item = spec["against_curve"]
    if not isinstance(item, dict) or "baseline" not in item or not item.get("curves"):
        raise ConfigError(f"{where}: needs baseline (a variant-name prefix) and curves (a list of prefixes), "
                          f"got {item!r}")
    unknown = sorted(set(item) - {"baseline", "curves", "tolerance_std", *SWEEP_CURVE_CLAIMS})
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)} (claims: {', '.join(SWEEP_CURVE_CLAIMS)})")
    claims = {k: item[k] for k in SWEEP_CURVE_CLAIMS if k in item}
    if any(not isinstance(v, bool) for v in claims.values()):
        raise ConfigError(f"{where}: {', '.join(SWEEP_CURVE_CLAIMS)} take true or false, got {claims!r}")
    tol_std = float(item.get("tolerance_std", 1.0))
    if tol_std < 0:
        raise ConfigError(f"{where}: tolerance_std must be >= 0")
    baseline = str(item["baseline"])
    curves = [str(c) for c in (item["curves"] if isinstance(item["curves"], list) else [item["curves"]])]
    hib = _direction(ctx, metric, spec)
    summary, _ = without_partial(summarise(ctx.scores, metric))
    wanted = ctx.variants_for(spec)

    # a baseline that names a variant is one point, drawn as a horizontal line (RF on the original outputs, whose
    # curve has no q); a prefix names a curve
    flat = baseline in wanted
    if flat and "more_robust" in claims:
        raise ConfigError(f"{where}: more_robust compares two curves' losses over {x}; the baseline {baseline!r} "
                          "is a single variant (name a variant-name prefix)")

    def one(dataset: str, prefix: str, single: bool = False) -> dict | None:
        expected = [prefix] if single else [v for v in wanted if v.startswith(prefix)]
        part = summary[(summary["dataset"] == dataset) & summary["variant"].isin(expected)]
        points = rows[(rows["dataset"] == dataset) & rows["variant"].isin(expected)
                      & (rows[x].notna() | single)]
        return _curve_summary(part, points, x, expected, hib)

    out = []
    for dataset in ctx.datasets_for(spec):
        base = one(dataset, baseline, single=flat)
        if base is not None:
            out.append({"dataset": dataset, "curve": baseline if flat else baseline + "*", "role": "baseline",
                        **base})
        for curve in curves:
            got = one(dataset, curve)
            row = {"dataset": dataset, "curve": curve + "*", "role": "curve"}
            if got is None or base is None:
                row.update({f"{k} verdict": "unjudged" for k in claims})
                out.append(row)
                continue
            row.update(got)
            sign = 1.0 if hib else -1.0
            diff = sign * (got["best mean"] - base["best mean"])
            band = tol_std * math.hypot(got["best std"], base["best std"])
            row["best vs baseline best"] = "better" if diff > band else "worse" if diff < -band else "level"
            row["more robust"] = got["loss at last x"] < base["loss at last x"]
            if "more_robust" in claims:
                row["more_robust verdict"] = "agrees" if row["more robust"] == claims["more_robust"] else "differs"
            if "beats_best" in claims:
                beats = row["best vs baseline best"] == "better"
                row["beats_best verdict"] = "agrees" if beats == claims["beats_best"] else "differs"
            out.append(row)
    name = x.removeprefix("param.")
    stated = ", ".join(f"{k}: {str(v).lower()}" for k, v in claims.items()) or "none"
    shown = baseline if flat else baseline + "*"
    note = (f"against {shown}: each curve's loss from its best {name} to the largest {name} beside the "
            f"baseline's (more robust when smaller), and its best point against the baseline's best "
            f"(better or worse beyond {tol_std:g} x sqrt(s_c^2 + s_b^2), level otherwise); claims: {stated}")
    return pd.DataFrame(out), note


#: how the verdicts of a sweep's claims tables count in :func:`sweep_claims`
CLAIM_VERDICTS = {"agrees": "agrees", "differs": "differs", "never matches": "differs", "not run": "unjudged",
                  "unjudged": "unjudged"}


def sweep_claims(ctx: Context) -> list[dict]:
    """The verdicts of every claim the experiment's sweep reports check, one dict per (report, claim, dataset,
    curve): ``claim`` (``matches``: the x from which a curve matches its baseline, beside the claimed x;
    ``more_robust`` / ``beats_best`` of ``against_curve``) and ``verdict`` (agrees, differs, unjudged). A
    ``matches`` entry without a claimed value is no claim and is left out. Nothing is written."""
    out = []
    for spec in ctx.cfg.get("reports") or []:
        if not isinstance(spec, dict) or spec.get("kind") != "sweep":
            continue
        metric, x, rows = _sweep_rows(ctx, spec)
        if spec.get("matches"):
            table, _ = sweep_matches_table(ctx, spec, rows, x, metric)
            for row in table.to_dict(orient="records"):
                if row["claimed"] is not None and not pd.isna(row["claimed"]):    # an entry without a claim
                    out.append({"claim": "matches", "dataset": row["dataset"], "curve": row["curve"],
                                "verdict": CLAIM_VERDICTS[row["verdict"]]})
        if spec.get("against_curve"):
            table, _ = against_curve_table(ctx, spec, rows, x, metric)
            for row in table.to_dict(orient="records"):
                for claim in SWEEP_CURVE_CLAIMS:
                    verdict = row.get(f"{claim} verdict")
                    if row["role"] == "curve" and isinstance(verdict, str):
                        out.append({"claim": claim, "dataset": row["dataset"], "curve": row["curve"],
                                    "verdict": CLAIM_VERDICTS[verdict]})
    return out


@report_kind("timing")
def _timing(ctx: Context, spec: dict, slug: str) -> Section:
    """``x``, ``time`` (``fit_wall_s`` | ``fit_cpu_s`` | ``predict_wall_s`` | ``predict_cpu_s``), ``hue``; log time
    axis (log x when numeric and spanning more than a decade). ``published: {variant: seconds}`` with ``baseline``
    (a variant) adds a table of the median times and of the ratios baseline / variant beside the published ones,
    since ratios, unlike seconds, carry over between machines; ``published_ratios: {variant: ratio}`` gives the
    published ratios baseline / variant directly, for a text that states a speed-up without its seconds."""
    x = str(_require(spec, "x", "timing report"))
    time = str(spec.get("time", "fit_wall_s"))
    if time not in TIME_COLUMNS:
        raise ConfigError(f"timing report: time must be one of {', '.join(TIME_COLUMNS)}, got {time!r}")
    hue = spec.get("hue", "variant_group")
    sec = Section("timing", f"{time} against {x.removeprefix('param.')} (log scale)")
    rows = ctx.scores[ctx.scores["step"].isna()]
    if spec.get("metric"):
        rows = rows[rows["metric"] == str(spec["metric"])]
    # the time columns repeat on every metric row of a fit: keep one row per fit
    rows = ctx.restrict(rows, spec).drop_duplicates(["dataset", "variant", "repeat"])
    if not rows.empty:
        for col in (x, time):
            if col not in rows.columns:
                raise ConfigError(f"timing report: column {col!r} is not in the scores table of {ctx.experiment}")
        rows = rows[rows[time].notna() & (rows[time] > 0)]
    # every timed variant, the baseline too, which may have no place on the x axis
    if spec.get("published") or spec.get("published_ratios"):
        _published_times(sec, rows, spec, time)
    if not rows.empty:
        rows = _placed(sec, rows, x)
    rows = _with_hue(ctx, rows, hue, x)
    return _line_figure(ctx, sec, slug, figures.timing_plot, rows, x, time, hue)


def _published_times(sec: Section, rows: pd.DataFrame, spec: dict, time: str) -> None:
    baseline = spec.get("baseline")
    if spec.get("published") and spec.get("published_ratios"):
        raise ConfigError("timing report: give published (seconds) or published_ratios, not both")
    key = "published" if spec.get("published") else "published_ratios"
    given = spec[key]
    if not isinstance(given, dict) or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 for v in given.values()):
        raise ConfigError(f"timing report: {key} must map variants to positive "
                          f"{'seconds' if key == 'published' else 'ratios'}, got {given!r}")
    if key == "published":
        if baseline not in given:
            raise ConfigError(f"timing report: baseline {baseline!r} must be one of the published variants "
                              f"({', '.join(given)})")
        published = {variant: (seconds, given[baseline] / seconds) for variant, seconds in given.items()}
    else:
        if not baseline or baseline in given:
            raise ConfigError(f"timing report: published_ratios needs a baseline variant that is not one of its "
                              f"keys (the ratios are baseline / variant), got {baseline!r}")
        published = {baseline: (None, 1.0), **{variant: (None, ratio) for variant, ratio in given.items()}}
    medians = rows.groupby("variant")[time].median() if not rows.empty else pd.Series(dtype=float)
    runs = rows.groupby("variant").size() if not rows.empty else pd.Series(dtype=int)
    ours_base = medians.get(baseline)
    lines = [f"| variant | fits | ours, median {time} | ours, {baseline} / variant | published s | "
             f"published, {baseline} / variant |", "|---|---|---|---|---|---|"]
    for variant, (seconds, published_ratio) in published.items():
        ours = medians.get(variant)
        ratio = ours_base / ours if ours is not None and ours_base is not None and ours > 0 else None
        lines.append(f"| {variant} | {int(runs.get(variant, 0))} | {_fmt(ours) or 'not run'} | {_fmt(ratio)} | "
                     f"{_fmt(seconds, '.4g')} | {_fmt(published_ratio)} |")
        sec.data[f"ratio_{variant}"] = None if ratio is None else float(ratio)
    sec.markdown = (f"Median {time} per variant beside the published times; the ratios divide {baseline}'s time "
                    "by each variant's (above 1: the variant is faster).\n\n" + "\n".join(lines))
    sec.html = "<pre>" + html.escape(sec.markdown) + "</pre>"


def _fmt(x, spec: str = ".3g") -> str:
    return "" if x is None or pd.isna(x) else format(float(x), spec)


@report_kind("layouts")
def _layouts(ctx: Context, spec: dict, slug: str) -> Section:
    """The same trees grown from several input layouts (thesis ch.8; variants differ by ``input_layout``):
    fingerprint check, medians, dense / sparse time ratios beside the published ones, the density sweep figure and
    its crossover density.

    ``time`` (``fit_wall_s``), ``sparse`` (``csc``), ``dense`` (``fortran``: the layout the crossover is taken
    against), ``figure`` (quantities among ``fit_wall_s``, ``predict_wall_s``, ``max_depth``; ``[]`` for none),
    ``crossover_reference`` (a published crossover density, drawn beside ours), ``on_mismatch`` (``fail`` |
    ``flag``), ``reference`` (``times``: a Table 8.2/8.3 CSV, ``densities``: the Table 8.1 CSV, ``datasets``: our
    name -> dataset_id). Fails (or flags) when the layouts of a (dataset, repeat) grew different trees (record
    field ``tree_sha256``); the figure is drawn against the measured density (log x, median and inter-quartile band
    per layout, repeats as dots)."""
    time = str(spec.get("time", "fit_wall_s"))
    if time not in TIME_COLUMNS:
        raise ConfigError(f"layouts report: time must be one of {', '.join(TIME_COLUMNS)}, got {time!r}")
    on_mismatch = str(spec.get("on_mismatch", "fail"))
    if on_mismatch not in ("fail", "flag"):
        raise ConfigError(f"layouts report: on_mismatch must be 'fail' or 'flag', got {on_mismatch!r}")
    quantities = [str(q) for q in spec.get("figure", input_layouts.QUANTITIES) or []]
    unknown = sorted(set(quantities) - set(input_layouts.QUANTITIES))
    if unknown:
        raise ConfigError(f"layouts report: figure quantities must be among {', '.join(input_layouts.QUANTITIES)}, "
                          f"not {', '.join(unknown)}")
    sparse, dense = str(spec.get("sparse", "csc")), str(spec.get("dense", "fortran"))
    sec = Section("layouts", f"input layouts: identical trees, {time} and depth per layout")
    rows = ctx.restrict(input_layouts.fit_rows(ctx.scores, str(spec.get("layout", input_layouts.LAYOUT))), spec)
    base = ctx.out_dir / "tables" / slug
    # 1. the same tree in every layout
    bad = input_layouts.fingerprint_mismatches(rows)
    sec.data["fingerprint_mismatches"] = bad.to_dict(orient="records")
    sec.files["fingerprint mismatches CSV"] = ctx.write(base.with_name(base.name + "_mismatches.csv"),
                                                        bad.to_csv(index=False))
    if len(bad):
        listing = "; ".join(f"{r.dataset} repeat {r.repeat}: {r.problem} ({r.layouts})" for r in bad.itertuples())
        if on_mismatch == "fail":
            raise DataError(f"experiment {ctx.experiment}: the input layouts did not grow identical trees: "
                            f"{listing}")
        sec.notes.append(f"**IDENTICAL-TREE CHECK FAILED** for {len(bad)} (dataset, repeat): {listing}")
    elif not rows.empty:
        n_groups = rows.groupby(["dataset", "repeat"]).ngroups
        sec.notes.append(f"identical trees: every one of the {n_groups} (dataset, repeat) grew the same tree "
                         f"(structural sha256) in each of its layouts ({', '.join(dict.fromkeys(rows['layout']))})")
    if rows.empty:
        sec.notes.append("no results yet")
        return sec
    # 2. medians, quartiles, ratios
    summary = input_layouts.layout_summary(rows)
    ratios = input_layouts.time_ratios(summary, time, sparse)
    sec.files["per-layout CSV"] = ctx.write(base.with_name(base.name + "_summary.csv"), summary.to_csv(index=False))
    ref = spec.get("reference") or {}
    paper = input_layouts.published(ctx.reference_dir or Path("config/reference"), ref.get("times"),
                              ref.get("densities"), ref.get("datasets")) if ref else None
    table = input_layouts.compare_published(ratios, paper, list(ratios["dataset"])) if paper is not None else ratios
    if paper is not None:
        table = table[table["dataset"].isin(ctx.datasets_for(spec)) | table["fortran_over_csc"].notna()]
    sec.files["ratios CSV"] = ctx.write(base.with_name(base.name + "_ratios.csv"), table.to_csv(index=False))
    heads = ["dataset", "density"] + (["paper density"] if paper is not None else []) + [
        f"{d}/{sparse}" + (" (paper)" if paper is not None else "") for d in ("fortran", "c")]
    lines = ["| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)]
    for r in table.itertuples(index=False):
        cells = [str(r.dataset), _fmt(r.input_density, ".4g")]
        if paper is not None:
            cells.append(_fmt(r.paper_density, ".4g"))
        for d in ("fortran", "c"):
            ours = _fmt(getattr(r, f"{d}_over_{sparse}"), ".2f")
            if paper is not None:
                theirs = _fmt(getattr(r, f"paper_{d}_over_csc"), ".2f") or "N/A"
                agree = getattr(r, f"{d}_agrees")
                ours = f"{ours or 'not run'} ({theirs})" + (" **✗**" if agree == "NO" else "")
            cells.append(ours)
        lines.append("| " + " | ".join(cells) + " |")
    sec.markdown = (f"Ratios of median {time} (dense / {sparse}; above 1: {sparse} is faster)"
                    + (", ours (paper); ✗: the other layout wins in the paper" if paper is not None else "")
                    + ".\n\n" + "\n".join(lines))
    sec.html = "<pre>" + html.escape(sec.markdown) + "</pre>"
    if paper is not None:
        for d in ("fortran", "c"):
            col = table[f"{d}_agrees"]
            judged = col[col != ""]
            sec.data[f"{d}_over_{sparse}_agree"] = int((judged == "yes").sum())
            sec.data[f"{d}_over_{sparse}_compared"] = int(len(judged))
            if len(judged):
                sec.notes.append(f"{d}/{sparse}: the faster layout agrees with the paper on "
                                 f"{int((judged == 'yes').sum())} of {len(judged)} dataset(s)")
    # 3. crossover density and the sweep figure
    cross = input_layouts.crossovers(summary, time, sparse, dense)
    sec.data["crossovers"] = cross
    published_at = spec.get("crossover_reference")
    up = [c for c in cross if c > 0]
    if summary["input_density"].nunique() > 1:
        text = (f"{sparse} stops beating {dense} ({time}, medians) at density ≈ {up[0]:.3g}" if up else
                f"{sparse} and {dense} ({time}, medians) do not cross in the measured density range")
        if published_at is not None:
            text += f" (thesis: ≈ {float(published_at):g})"
        sec.notes.append(text)
    if quantities:
        marks = {"ours": up[0] if up else None}
        if published_at is not None:
            marks["thesis"] = float(published_at)
        fig = input_layouts.sweep_figure(rows, quantities, marks, title=ctx.experiment)
        pdf, png = figures.save_figure(fig, ctx.out_dir / "figures" / slug)
        ctx.written += [pdf, png]
        sec.files.update({"PDF": pdf, "PNG": png})
        sec.images = [png]
    return sec


@report_kind("convergence")
def _convergence(ctx: Context, spec: dict, slug: str) -> Section:
    """``metric``, ``hue`` (``variant``); staged scores against ``x``: ``step`` (default), ``n_trees`` or
    ``stage_fit_s`` (cumulative fit seconds); ``logx: true`` for a log axis."""
    metric = str(spec["metric"])
    hue = spec.get("hue", "variant")
    x = str(spec.get("x", "step"))
    if x not in figures.CONVERGENCE_X:
        raise ConfigError(f"convergence report: x must be one of {', '.join(figures.CONVERGENCE_X)}, got {x!r}")
    sec = Section("convergence", f"{metric} against the {figures.CONVERGENCE_X[x]}")
    rows = ctx.scores[(ctx.scores["metric"] == metric) & ctx.scores["step"].notna() & ctx.scores["value"].notna()]
    if x in rows.columns:
        rows = rows[rows[x].notna()]
    rows = _with_hue(ctx, ctx.restrict(rows, spec), hue, None)
    rows = stage_positions(rows, x)
    return _line_figure(ctx, sec, slug, figures.convergence_plot, rows, metric, hue, x, bool(spec.get("logx")))


def stage_positions(rows: pd.DataFrame, x: str) -> pd.DataFrame:
    """Each stage of a variant at one place on the ``x`` axis: the mean over its repeats. The cumulative fit time
    of a stage differs from repeat to repeat, and a line through every repeat's points in the order of their times
    zigzags between repeats (Figs 6.1-6.4 against time); the stage's scores are then averaged at that one place,
    with their spread over the repeats, as they are against the stage itself."""
    if x == "step" or rows.empty:
        return rows
    rows = rows.copy()
    rows[x] = rows.groupby(["dataset", "variant", "step"], sort=False)[x].transform("mean")
    return rows


def _reading_scores(finals: pd.DataFrame, test: pd.DataFrame, readings: list[str]) -> tuple[pd.DataFrame, int]:
    """Per run and reading of the pruning score: the layer count it selects (``extra.n_layers_<reading>``) and the
    test score of that layer (the staged row of that step; runs that keep every layer have one per layer), and
    how many (run, reading) pairs of runs with staged rows lack the score of their selected layer."""
    staged = {(d, v, int(rep), int(step)): float(value) for d, v, rep, step, value
              in zip(test["dataset"], test["variant"], test["repeat"], test["step"], test["value"])}
    with_staged = {key[:3] for key in staged}
    rows, lacking = [], 0
    for col in readings:
        for d, v, rep, layers in zip(finals["dataset"], finals["variant"], finals["repeat"], finals[col]):
            if pd.isna(layers) or (d, v, int(rep)) not in with_staged:
                continue
            score = staged.get((d, v, int(rep), int(layers)))
            if score is None:
                lacking += 1
                continue
            rows.append({"dataset": d, "variant": v, "repeat": int(rep), "reading": col.removeprefix("extra.n_layers_"),
                         "layers": float(layers), "test": score})
    return pd.DataFrame(rows, columns=["dataset", "variant", "repeat", "reading", "layers", "test"]), lacking


def _published_layers(ctx: Context, spec: dict, metric: str) -> pd.DataFrame:
    """The published score and layer count (``mean_layers``) of each (dataset, variant) from the reference tables
    of ``spec['published']`` (a list of {table, methods: {our variant: method_id}})."""
    rows = []
    for i, entry in enumerate(spec.get("published") or []):
        if not isinstance(entry, dict) or "table" not in entry or not isinstance(entry.get("methods"), dict):
            raise ConfigError(f"layers report: published[{i}] must be {{table: ..., methods: {{variant: "
                              f"method_id}}}}, got {entry!r}")
        frame, _ = reproduction.read_reference(ctx.reference_dir or Path("config/reference"), str(entry["table"]))
        frame = frame[frame["metric"] == metric]
        for r in frame.itertuples():
            # several of our variants may stand for one published method (selected and fixed PCA fraction)
            for variant in (k for k, v in entry["methods"].items() if str(v) == r.method_id):
                rows.append({"dataset": r.dataset_id, "variant": variant,
                             "published": float(r.value) if r.value else float("nan"),
                             "published layers": float(r.mean_layers) if getattr(r, "mean_layers", "") else
                             float("nan")})
    return pd.DataFrame(rows, columns=["dataset", "variant", "published", "published layers"])


@report_kind("layers")
def _layers(ctx: Context, spec: dict, slug: str) -> Section:
    """Cascade estimators (deep tree-ensembles): the training score of every built layer (``extra.train_layer_<L>``
    columns) beside the test score of every layer (staged rows of ``metric``), means over repeats, plus a table of
    the selected layer counts (``extra.n_layers``). Runs that keep every layer (staged test scores) also give, per
    reading of the pruning score, the layers it selects and the test score there; ``published: [{table, methods}]``
    puts the paper's score and layer count beside them. The curves' means, stds and counts go to a CSV;
    ``spread: none`` draws the mean curves alone (as the DTE paper's Figure 6), ``sd`` (default) adds ± std bars."""
    metric = str(spec["metric"])
    sec = Section("layers", f"{metric} per layer: training (dashed) and test (solid) curves")
    scores = ctx.restrict(ctx.scores, spec)
    finals = scores[(scores["metric"] == metric) & scores["step"].isna()]
    train_cols = sorted((c for c in finals.columns if c.startswith("extra.train_layer_")),
                        key=lambda c: int(c.rsplit("_", 1)[1]))
    rows = []
    for col in train_cols:
        layer = int(col.rsplit("_", 1)[1])
        part = finals[finals[col].notna()]
        rows += [{"dataset": r.dataset, "variant": r.variant, "layer": layer, "value": float(r[col]),
                  "set": "training"} for _, r in part.iterrows()]
    test = scores[(scores["metric"] == metric) & scores["step"].notna() & scores["value"].notna()]
    rows += [{"dataset": r.dataset, "variant": r.variant, "layer": int(r.step), "value": float(r.value),
              "set": "test"} for _, r in test.iterrows()]
    if "extra.n_layers" in finals.columns and finals["extra.n_layers"].notna().any():
        chosen = finals[finals["extra.n_layers"].notna()]
        table = (chosen.groupby(["dataset", "variant"], sort=False)["extra.n_layers"].mean().unstack("variant")
                 .round(2))
        sec.html = table.to_html(escape=True)
        sec.markdown = table.to_markdown()
        sec.notes.append("table: mean selected layer count over repeats (the published tables' superscripts)")
    # the layer count every reading of "best on the training data" selects on the same layers (config/README.md, D10)
    readings = sorted(c for c in finals.columns if c.startswith("extra.n_layers_") and c != "extra.n_layers_built")
    if readings and finals[readings].notna().any().any():
        chosen = finals[finals[readings].notna().any(axis=1)]
        table = (chosen.groupby(["dataset", "variant"], sort=False)[readings].mean().round(2)
                 .rename(columns=lambda c: c.removeprefix("extra.n_layers_")).reset_index())
        sec.html = (sec.html or "") + table.to_html(index=False, escape=True)
        sec.markdown = "\n\n".join(filter(None, [sec.markdown, table.to_markdown(index=False)]))
        sec.notes.append("second table: mean layer count each reading of the pruning score selects on the same "
                         "layers (train: resubstitution, oob: out-of-bag, oof: out-of-fold; config/README.md, D10)")
        per_run, lacking = _reading_scores(finals, test, readings)
        if lacking:
            sec.notes.append(f"{lacking} (run, reading) pair(s) left out of the third table: their run records lack "
                             "the test score of the selected layer (stages recorded before every layer was kept)")
        if not per_run.empty:
            by = per_run.groupby(["dataset", "variant", "reading"], sort=False)
            table = by[["layers", "test"]].mean().join(by.size().rename("runs")).reset_index()
            table = table.rename(columns={"test": f"test {metric}"})
            published = _published_layers(ctx, spec, metric)
            if not published.empty:
                table = table.merge(published, on=["dataset", "variant"], how="left")
            table = table.round(4)
            base = ctx.out_dir / "tables" / f"{slug}_readings"
            sec.files.update({"readings CSV": ctx.write(base.with_suffix(".csv"), table.to_csv(index=False)),
                              "readings Markdown": ctx.write(base.with_suffix(".md"),
                                                             table.to_markdown(index=False))})
            sec.html += table.to_html(index=False, escape=True)
            sec.markdown += "\n\n" + table.to_markdown(index=False)
            sec.notes.append(f"third table: per reading, the mean selected layer count and the mean test {metric} "
                             "of the selected layer (runs that keep every layer)"
                             + (", beside the published score and layer count" if not published.empty else ""))
    frame = pd.DataFrame(rows, columns=["dataset", "variant", "layer", "value", "set"])
    spread = str(spec.get("spread", "sd"))
    if spread not in ("sd", "none"):
        raise ConfigError(f"layers report of {ctx.experiment}: spread must be 'sd' (mean ± std over the repeats) "
                          f"or 'none' (the mean curve alone), got {spec.get('spread')!r}")
    if not frame.empty:
        # the numbers behind the figure: per curve and layer, the mean, std and count over the repeats
        by = frame.groupby(["dataset", "variant", "set", "layer"])["value"]
        curves = by.agg(mean="mean", std="std", runs="size").reset_index().round(4)
        sec.files["curves CSV"] = ctx.write(ctx.out_dir / "tables" / f"{slug}_curves.csv", curves.to_csv(index=False))
    return _line_figure(ctx, sec, slug, figures.layer_curves_plot, frame, metric, spread == "sd")


def selection_sections(ctx: Context, selection: pd.DataFrame) -> list[Section]:
    """For tuned variants: the selected parameters (per dataset and variant, over the repeats) and the validation
    curves (the selected candidate's staged curve, or every candidate's score in grid order)."""
    if selection.empty:
        return []
    finals = selection[selection["stage"].isna()]
    chosen = finals[finals["selected"].astype(str).str.lower() == "true"]
    rows = []
    for (dataset, variant), part in chosen.groupby(["dataset", "variant"], sort=False):
        counts = part["params"].value_counts()
        best = finals[(finals["dataset"] == dataset) & (finals["variant"] == variant)]
        rows.append({"dataset": dataset, "variant": variant,
                     "selected (repeats)": "; ".join(f"{p} ({n}/{part['repeat'].nunique()})"
                                                     for p, n in counts.items()),
                     "validation score": f"{part['score'].mean():.4g}",
                     "candidates": int(best["candidate"].nunique())})
    table = pd.DataFrame(rows)
    sec = Section("selection", "Selected hyper-parameters (validation on held-out training rows)")
    base = ctx.out_dir / "tables" / "selection"
    sec.files = {"CSV": ctx.write(base.with_suffix(".csv"), table.to_csv(index=False)),
                 "Markdown": ctx.write(base.with_suffix(".md"), table.to_markdown(index=False))}
    sec.html = table.to_html(index=False, escape=True)
    sec.markdown = table.to_markdown(index=False)
    sec.notes.append("the selected grid point of each repeat, with the staged parameter at its best stage; "
                     "candidates are scored on validation rows drawn from the training part only")
    out = [sec]
    metric = str(finals["metric"].iloc[0]) if len(finals) else "score"
    curves = selection[selection["stage"].notna() & (selection["selected"].astype(str).str.lower() == "true")]
    fig = Section("selection", "Validation curves of the selected candidates")
    if not curves.empty:
        curves = curves.assign(stage=curves["stage"].astype(float))
        out.append(_line_figure(ctx, fig, "selection_curves", figures.validation_curve_plot, curves, "stage",
                                metric, "variant", True))
    else:
        grid_rows = finals.assign(candidate=finals["candidate"].astype(int))
        out.append(_line_figure(ctx, fig, "selection_curves", figures.validation_curve_plot, grid_rows,
                                "candidate", metric, "variant", False))
    return out


# --- the experiment report ---------------------------------------------------------------------------------------
def _names(obj, keys=("variant", "label", "name", "id")) -> list[str]:
    """Labels from a config list of strings or mappings, or from the keys of a mapping."""
    if obj is None:
        return []
    if isinstance(obj, dict):
        return [str(k) for k in obj]
    out = []
    for item in obj:
        if isinstance(item, dict):
            for key in keys:
                if key in item:
                    out.append(str(item[key]))
                    break
        else:
            out.append(str(item))
    return out


def _expected(cfg: dict, scores: pd.DataFrame, experiment: str = "") -> tuple[list[str], list[str]]:
    """Datasets and variants of the experiment: configured and referenced ones first, then whatever ran."""
    ref = cfg.get("reference") or {}
    refs = ref if isinstance(ref, list) else [ref]
    datasets = _names(cfg.get("datasets"), ("name", "dataset", "id"))
    variants = _names(cfg.get("variants")) + variant_names(experiment, cfg.get("methods") or [])
    for r in refs:
        if isinstance(r, dict):
            variants += [str(v) for v in (r.get("methods") or {})]
    return ordered_unique(datasets + list(scores["dataset"])), ordered_unique(variants + list(scores["variant"]))


def _slug(index: int, spec: dict) -> str:
    parts = [f"{index + 1:02d}", str(spec.get("kind"))]
    for key in ("metric", "x", "time", "test"):
        if spec.get(key):
            parts.append(str(spec[key]).removeprefix("param."))
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", "_".join(parts))


def _reference_datasets(cfg: dict, reference_dir: Path, experiment: str) -> list[str]:
    ref = cfg.get("reference")
    refs = ref if isinstance(ref, list) else ([ref] if ref else [])
    out = []
    for r in refs:
        if not isinstance(r, dict) or "table" not in r:
            continue
        table, kind = reproduction.read_reference(reference_dir, str(r["table"]))
        if kind != "results":
            continue
        if r.get("metric"):
            table = table[table["metric"] == str(r["metric"])]
        back = {str(v): str(k) for k, v in (r.get("datasets") or {}).items()}
        out += [back.get(d, d) for d in table.loc[table["dataset"].str.lower() != "mean", "dataset_id"]]
    return ordered_unique(out)


def missing_cells(scores: pd.DataFrame, metrics: list[str], datasets: list[str], variants: list[str]) -> list[dict]:
    """Every expected (dataset, variant, metric) with no final score."""
    out = []
    ran = set(scores["dataset"]) if not scores.empty else set()
    for metric in metrics:
        # a finished job whose score is undefined (null) has a result: it is reported as undefined, not missing
        rows = scores[(scores["metric"] == metric) & scores["step"].isna()]
        have = set(zip(rows["dataset"], rows["variant"]))
        scored = set(rows["dataset"])
        # a dataset that ran but never got this metric is of a task the metric does not apply to (e.g. accuracy
        # on a regression set of a mixed experiment): its cells are not missing
        out += [{"dataset": d, "variant": v, "metric": metric}
                for d in datasets if d in scored or d not in ran for v in variants if (d, v) not in have]
    return out


def _context(scores: pd.DataFrame, experiment_name: str, experiment_cfg: dict, reference_dir: Path,
             out_dir: Path) -> Context:
    ref_datasets = _reference_datasets(experiment_cfg, reference_dir, experiment_name)
    datasets, variants = _expected(experiment_cfg, scores, experiment_name)
    datasets = ordered_unique(ref_datasets + datasets) if not experiment_cfg.get("datasets") else datasets
    return Context(experiment_name, experiment_cfg, scores, out_dir, datasets, variants, reference_dir=reference_dir)


def experiment_claims(scores_csv: Path, experiment_name: str, experiment_cfg: dict,
                      reference_dir: Path) -> list[dict]:
    """:func:`sweep_claims` of an experiment's scores table, as its report judges them; nothing is written."""
    scores = load_scores(scores_csv, experiment_name)
    return sweep_claims(_context(scores, experiment_name, experiment_cfg, reference_dir, Path(".")))


def build_experiment_report(scores_csv: Path, experiment_name: str, experiment_cfg: dict, reference_dir: Path,
                            out_dir: Path, selection_csv: Path | None = None) -> list[Path]:
    """Write the tables, figures, reproduction comparison, report.md and manifest.json of one experiment.

    Works with whatever records exist: a missing or partial scores table gives a report that lists every cell not
    run. Returns the paths written.
    """
    if not isinstance(experiment_cfg, dict):
        raise ConfigError(f"experiments.{experiment_name} must be a mapping, got {type(experiment_cfg).__name__}")
    out_dir, reference_dir = Path(out_dir), Path(reference_dir)
    # Snakemake deletes the declared output (the manifest) before the job; report.md marks an earlier build too
    earlier_report = (out_dir / MANIFEST).exists() or (out_dir / "report.md").exists()
    scores = load_scores(scores_csv, experiment_name)
    ctx = _context(scores, experiment_name, experiment_cfg, reference_dir, out_dir)
    datasets, variants = ctx.datasets, ctx.variants
    specs = experiment_cfg.get("reports") or []
    if not isinstance(specs, list):
        raise ConfigError(f"experiments.{experiment_name}.reports must be a list")
    # validate every report spec and compare with every reference before writing anything
    for i, spec in enumerate(specs):
        where = ctx.where(i)
        if not isinstance(spec, dict):
            raise ConfigError(f"{where} must be a mapping")
        kind = spec.get("kind")
        if kind not in REPORT_KINDS:
            raise ConfigError(f"{where}.kind: unknown report kind {kind!r} (known: {', '.join(sorted(REPORT_KINDS))})")
        if kind not in ("timing", "layouts"):
            _require(spec, "metric", where)
        for key in ("x",) if kind in ("sweep", "timing") else ():
            _require(spec, key, where)
            if not scores.empty and str(spec[key]) not in scores.columns:
                raise ConfigError(f"{where}.{key}: column {spec[key]!r} is not in the scores table {scores_csv}")
    ref_cfg = experiment_cfg.get("reference")
    comparisons = []
    for r in ref_cfg if isinstance(ref_cfg, list) else ([ref_cfg] if ref_cfg else []):
        if not isinstance(r, dict):
            raise ConfigError(f"experiments.{experiment_name}.reference must be a mapping")
        comparisons.append(reproduction.compare_any(scores, r, reference_dir, experiment_name,
                                                    experiment_cfg.get("datasets"),
                                                    str(experiment_cfg.get("protocol") or "")))
    sections: list[Section] = []
    for i, spec in enumerate(specs):
        try:
            sections.append(REPORT_KINDS[spec["kind"]](ctx, spec, _slug(i, spec)))
        except ConfigError as exc:
            raise ConfigError(f"{ctx.where(i)}: {exc}") from exc
    if selection_csv is not None and Path(selection_csv).exists() and Path(selection_csv).stat().st_size:
        sections += selection_sections(ctx, pd.read_csv(selection_csv))
    # reproduction against the published numbers
    repro_sections = []
    for j, rep in enumerate(comparisons):
        base = out_dir / ("reproduction" if j == 0 else f"reproduction_{j + 1}")
        what = getattr(rep, "what", "published scores")
        sec = Section("reproduction", f"Reproduction of {rep.table} ({what}, {rep.metric})")
        sec.files = {"CSV": ctx.write(base.with_suffix(".csv"), rep.to_csv()),
                     "Markdown": ctx.write(base.with_suffix(".md"), rep.to_markdown())}
        sec.html, sec.markdown = rep.to_html(), rep.to_markdown()  # both carry the notes
        sec.data = {**rep.counts(), "summary": rep.summary_text(), "protocol": rep.protocol.text()}
        chance = rep.chance() if hasattr(rep, "chance") else None
        if chance is not None:      # the rule's misses by chance alone (verdicts.Reproduction.chance)
            sec.data["chance"] = chance
        repro_sections.append(sec)
    metrics = [str(m) for m in experiment_cfg.get("metrics") or []] or ordered_unique(
        str(s["metric"]) for s in specs if isinstance(s, dict) and s.get("metric"))
    missing = missing_cells(scores, metrics, datasets, variants)
    all_sections = sections + repro_sections
    report_md = out_dir / "report.md"
    versions = package_versions(scores)
    verdict = verdict_counts([s.data for s in repro_sections])
    header = _header_lines(experiment_cfg, comparisons, versions, verdict)
    ctx.write(report_md, _markdown(experiment_name, experiment_cfg, scores, all_sections, missing, out_dir, header))
    manifest = {
        "experiment": experiment_name, "description": str(experiment_cfg.get("description", "")),
        "scores": str(scores_csv), "n_rows": int(len(scores)), "datasets": datasets, "variants": variants,
        "metrics": metrics, "missing_cells": missing, "report_md": "report.md",
        "protocol": str(experiment_cfg.get("protocol") or ""), "verdict": verdict,
        "protocols": [s.data["protocol"] for s in repro_sections],
        "versions": versions, "mixed_versions": mixed_versions(versions),
        "sections": [{"kind": s.kind, "title": s.title, "notes": s.notes,
                      "files": {k: _rel(p, out_dir) for k, p in s.files.items()},
                      "images": [_rel(p, out_dir) for p in s.images],
                      "html": s.html, "data": s.data} for s in all_sections],
    }
    write_json(out_dir / MANIFEST, manifest)
    ctx.written.append(out_dir / MANIFEST)
    if earlier_report:
        _remove_stale(out_dir, ctx.written)
    return ctx.written


def _remove_stale(out_dir: Path, written: list[Path]) -> None:
    """Files an earlier report of this directory wrote and this one did not (a reference entry or report spec
    since removed) would stay beside the new ones, unlisted and out of date: remove them, and emptied folders."""
    keep = {Path(p).resolve() for p in written}
    for path in sorted(out_dir.rglob("*"), key=lambda p: len(p.parts), reverse=True):
        if path.is_file() and path.resolve() not in keep:
            path.unlink()
        elif path.is_dir() and not any(path.iterdir()):
            path.rmdir()


def _rel(path: Path, base: Path) -> str:
    return Path(path).relative_to(base).as_posix()


def _header_lines(cfg: dict, comparisons: list, versions: dict, verdict: dict) -> list[str]:
    lines = []
    if comparisons:
        lines.append(f"**Published numbers**: {verdict_text(verdict)}.")
        lines += [f"- {rep.table}: {rep.protocol.text()}" for rep in comparisons]
    else:
        lines.append(f"**Published numbers**: none configured (protocol run: `{cfg.get('protocol', '')}`).")
    lines.append("")
    if versions:
        lines.append(f"**Package versions** (run records): {versions_text(versions)}.")
        mixed = mixed_versions(versions)
        if mixed:
            lines.append(f"**Warning: mixed versions**: the records of this experiment come from different "
                         f"versions of {', '.join(mixed)}; rerun the older fits before comparing them.")
    else:
        lines.append("**Package versions**: not recorded in the scores table.")
    return lines + [""]


def _markdown(name: str, cfg: dict, scores: pd.DataFrame, sections: list[Section], missing: list[dict],
              out_dir: Path, header: list[str] = ()) -> str:
    lines = [f"# Experiment {name}", ""]
    if cfg.get("description"):
        lines += [str(cfg["description"]).strip(), ""]
    lines += list(header)
    if scores.empty:
        lines += ["**Not run yet**: no scores recorded.", ""]
    else:
        lines += [f"{len(scores)} score rows; {scores['dataset'].nunique()} dataset(s), "
                  f"{scores['variant'].nunique()} variant(s), {scores['repeat'].nunique()} repeat(s).", ""]
    for s in sections:
        lines += [f"## {s.title}", ""]
        if s.files:
            lines += ["Files: " + ", ".join(f"[{k}]({_rel(p, out_dir)})" for k, p in s.files.items()), ""]
        lines += [f"![{s.title}]({_rel(p, out_dir)})\n" for p in s.images]
        lines += [f"- {n}" for n in s.notes] + ([""] if s.notes else [])
        if s.markdown:
            lines += [s.markdown, ""]
    lines += ["## Cells not run", ""]
    if missing:
        lines += [f"{len(missing)} (dataset, variant, metric) cell(s) have no result yet:", ""]
        lines += [f"- {m['dataset']} / {m['variant']} / {m['metric']}" for m in missing]
    else:
        lines.append("None: every expected cell has a result.")
    return "\n".join(lines) + "\n"
