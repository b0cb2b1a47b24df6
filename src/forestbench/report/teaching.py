"""The lecture slides' bagging / random-forest table: our cells beside the slide values, and the slides' claims.

The slides print one test MSE per (model, number of trees B, max depth) cell, without a standard deviation, each
from one unseeded model on one test set. A cell of ours is the mean ± sample sd over repeats (model seeds, each
scored on its own fresh test set); the slide value is judged against it: within ``tolerance_std`` (default 3) of our
sd. Beside it: an independent rerun's mean ± sd when the configuration gives one (``rerun``), and our variants against
their oracle twins of the same experiment (``oracle``: scikit-learn on the same data and test sets) by a paired
z-score of the per-repeat differences.

The robust claims of the slides are then checked on our numbers (``claims``):

1. the test MSE exceeds the Bayes risk in every run;
2. bagging's test MSE falls steeply from B = 1 to B = 10 and then plateaus: at least 75 % of the fall from the
   smallest to the largest B happens by B = 10, and the means for B >= 10 lie within a band narrower than a
   quarter of that first fall;
3. shallow (depth-3) forests beat fully grown bagging: every shallow-forest mean is below every bagging mean, by
   more than three standard errors;
4. a random forest of one depth-30 tree is one bagged fully grown tree: the two means agree within three standard
   errors of their paired difference (identical runs when the seeds are shared and depth 30 does not bind).

The report kind ``oob_curve`` (out-of-bag and test error against the number of trees) is defined here too.
Reports read run records only (the scores table); nothing here imports an estimator.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from forestbench.errors import ConfigError
from forestbench.report.kinds import Context, Section, report_kind
from forestbench.report.verdicts import STATUS_DISAGREE, STATUS_NOT_RUN, STATUS_OK, STATUS_OUT, StatComparison

GRID_COLUMNS = {"method_id", "metric", "value", "n_estimators", "max_depth"}

_COLUMNS = ["block", "item", "slide", "rerun", "ours", "n_repeats", "difference", "in_our_std", "status", "note"]


def _values(scores: pd.DataFrame, metric: str, dataset: str | None) -> dict[str, pd.Series]:
    """Final scores of ``metric`` per variant, indexed by repeat."""
    rows = scores[(scores["metric"] == metric) & scores["step"].isna() & scores["value"].notna()]
    if dataset is not None:
        rows = rows[rows["dataset"] == dataset]
    return {str(v): g.set_index("repeat")["value"].astype(float).sort_index() for v, g in rows.groupby("variant")}


def _mean_sd(s: pd.Series | None) -> tuple[float, float, int]:
    if s is None or s.empty:
        return math.nan, math.nan, 0
    return float(s.mean()), float(s.std(ddof=1)) if len(s) > 1 else math.nan, int(len(s))


def _fmt(mean: float, sd: float) -> str:
    if math.isnan(mean):
        return ""
    return f"{mean:.3f}" + ("" if math.isnan(sd) else f" ± {sd:.3f}")


def _cell_key(value) -> tuple[str, int | None, int | None]:
    if isinstance(value, str):
        return value, None, None
    if not isinstance(value, dict) or "method_id" not in value:
        raise ConfigError("reference.methods: each entry must be a method_id or a mapping with method_id, "
                          f"n_estimators, max_depth; got {value!r}")
    depth = value.get("max_depth")
    return str(value["method_id"]), value.get("n_estimators"), None if depth is None else int(depth)


def _as_int(text: str) -> int | None:
    text = str(text).strip()
    return int(float(text)) if text else None


def _paired(a: pd.Series | None, b: pd.Series | None) -> tuple[float, float, int]:
    """Mean paired difference a - b over the repeats both have, and its standard error."""
    if a is None or b is None:
        return math.nan, math.nan, 0
    both = a.index.intersection(b.index)
    d = (a.loc[both] - b.loc[both]).to_numpy()
    if len(d) < 2:
        return (float(d.mean()) if len(d) else math.nan), math.nan, len(d)
    return float(d.mean()), float(d.std(ddof=1) / np.sqrt(len(d))), len(d)


def _welch_se(a: pd.Series, b: pd.Series) -> float:
    return float(np.sqrt(a.var(ddof=1) / len(a) + b.var(ddof=1) / len(b)))


def compare_grid(scores: pd.DataFrame, ref: pd.DataFrame, ref_cfg: dict, experiment: str) -> StatComparison:
    """Our cells beside a reference table indexed by (method_id, n_estimators, max_depth), with the claims checked."""
    where = f"experiments.{experiment}.reference"
    table, metric = str(ref_cfg["table"]), str(ref_cfg["metric"])
    tol = float(ref_cfg.get("tolerance_std", 3.0))
    notes = []
    published = sorted(set(ref["metric"]))
    if metric in published:
        ref = ref[ref["metric"] == metric]
    elif len(published) == 1:
        notes.append(f"the table's metric {published[0]!r} is compared with our {metric!r}")
    else:
        raise ConfigError(f"{where}: no cell of {table} has metric {metric!r} (it has {', '.join(published)})")
    datasets = {str(v): str(k) for k, v in (ref_cfg.get("datasets") or {}).items()}
    methods = ref_cfg.get("methods") or {}
    if not isinstance(methods, dict) or not methods:
        raise ConfigError(f"{where}.methods must map our variants to reference cells")
    index = {}
    for r in ref.itertuples(index=False):
        index[(str(r.method_id), _as_int(r.n_estimators), _as_int(r.max_depth))] = r
    rerun = ref_cfg.get("rerun") or {}
    values = _values(scores, metric, None)
    rows = []
    bayes = set()
    for variant, cell in methods.items():
        key = _cell_key(cell)
        if key not in index:
            raise ConfigError(f"{where}.methods.{variant}: no cell {key} in {table} (cells: {sorted(index)})")
        r = index[key]
        dataset = datasets.get(str(r.dataset_id), str(r.dataset_id))
        v = _values(scores, metric, dataset).get(str(variant))
        mean, sd, n = _mean_sd(v)
        slide = float(r.value)
        if hasattr(r, "bayes_risk") and str(r.bayes_risk).strip():
            bayes.add(float(r.bayes_risk))
        diff = mean - slide if n else math.nan
        z = diff / sd if n > 1 and sd > 0 else math.nan
        status = STATUS_NOT_RUN if n == 0 else (STATUS_OK if abs(z) <= tol else STATUS_OUT) if not math.isnan(z) \
            else STATUS_NOT_RUN
        rr = rerun.get(variant)
        depth = "fully grown" if key[2] is None else f"depth {key[2]}"
        rows.append({"block": "cell", "item": f"{variant} ({key[0]}, B = {key[1]}, {depth})", "slide": slide,
                     "rerun": _fmt(float(rr[0]), float(rr[1])) if rr else "", "ours": _fmt(mean, sd),
                     "n_repeats": n, "difference": diff, "in_our_std": z, "status": status,
                     "note": str(getattr(r, "note", ""))})
    notes.append(f"a slide value is a single run (one unseeded model, one test set); it is judged against our mean ± "
                 f"sd over repeats: within {tol:g} of our sd")
    if rerun:
        notes.append("'rerun': an independent rerun of the slides' scikit-learn scripts on the same training data "
                     "(mean ± sd over 30 model seeds), shown for comparison, not judged")
    n_test = pd.to_numeric(scores.get("n_test", pd.Series(dtype=float)), errors="coerce").dropna()
    bayes_risk = next(iter(bayes)) if len(bayes) == 1 else None
    means = [m for m in pd.to_numeric(pd.Series([r["ours"].split(" ")[0] for r in rows]), errors="coerce")
             if not math.isnan(m)]
    if bayes_risk is not None and not n_test.empty and means:
        s2, n_t = bayes_risk, int(n_test.median())
        excess = [max(m - s2, 0.0) for m in (min(means), max(means))]
        mc = [math.sqrt(2 * s2 ** 2 + 4 * s2 * e) / math.sqrt(n_t) for e in excess]
        notes.append(f"each repeat is scored on its own {n_t} fresh test points: the Monte-Carlo sd of one repeat's "
                     f"MSE, sqrt(2σ⁴ + 4σ²e)/√n for Gaussian noise of variance σ² = {s2:g} and excess risk e, is "
                     f"{mc[0]:.4f}–{mc[1]:.4f} over our cells (e = {excess[0]:.3f}–{excess[1]:.3f}); it is part of "
                     "our sd (the slides' 10⁶ points: about 0.0015)")
    for variant, twin in (ref_cfg.get("oracle") or {}).items():
        a, b = values.get(str(variant)), values.get(str(twin))
        d, se, n = _paired(a, b)
        z = d / se if n > 1 and se > 0 else math.nan
        status = STATUS_NOT_RUN if a is None or b is None else (
            STATUS_OK if (abs(z) <= tol if not math.isnan(z) else d == 0) else STATUS_DISAGREE)
        rows.append({"block": "oracle", "item": f"{variant} vs {twin}", "slide": math.nan, "rerun": "",
                     "ours": f"{_fmt(*_mean_sd(a)[:2])} vs {_fmt(*_mean_sd(b)[:2])}", "n_repeats": n,
                     "difference": d, "in_our_std": z, "status": status,
                     "note": "paired over repeats (same training data and test set, other random streams); "
                             f"'in our std' is the difference over its standard error, agreement within {tol:g}"})
    claims = ref_cfg.get("claims")
    if claims:
        rows += check_claims(values, claims, bayes_risk, cells=[str(v) for v in methods])
    frame = pd.DataFrame(rows, columns=_COLUMNS)
    cols = [("block", "block"), ("cell / check", "item"), ("slide", "slide"), ("rerun", "rerun"),
            ("ours", "ours"), ("n", "n_repeats"), ("ours − slide", "difference"), ("in our sd", "in_our_std"),
            ("detail", "note")]
    return StatComparison(table, metric, "slide cells and claims", frame, cols, notes)


def _claim(item: str, ok: bool | None, detail: str) -> dict:
    status = STATUS_NOT_RUN if ok is None else STATUS_OK if ok else STATUS_DISAGREE
    return {"block": "claim", "item": item, "slide": math.nan, "rerun": "", "ours": "", "n_repeats": 0,
            "difference": math.nan, "in_our_std": math.nan, "status": status, "note": detail}


def check_claims(values: dict[str, pd.Series], claims: dict, bayes_risk: float | None,
                 cells: list[str] | None = None) -> list[dict]:
    """The slides' four robust claims on our per-variant scores (see the module docstring); the first one is checked
    on every run of ``cells`` (default: the variants the claims name)."""
    out = []
    bagging = [str(v) for v in claims.get("bagging") or []]
    shallow = [str(v) for v in claims.get("shallow_forests") or []]
    deep = claims.get("single_deep_tree")
    named = bagging + shallow + ([str(deep)] if deep else []) + list(cells or [])
    have = {v: values[v] for v in named if v in values and not values[v].empty}

    # (1) above the Bayes risk in every run
    if bayes_risk is None:
        out.append(_claim("test MSE > Bayes risk in every run", None, "the reference gives no single Bayes risk"))
    elif not have:
        out.append(_claim(f"test MSE > Bayes risk {bayes_risk:g} in every run", None, "no run yet"))
    else:
        low = min(float(s.min()) for s in have.values())
        n = sum(len(s) for s in have.values())
        out.append(_claim(f"test MSE > Bayes risk {bayes_risk:g} in every run", low > bayes_risk,
                          f"smallest of {n} runs: {low:.4f}"))

    # (2) bagging: a steep fall to B = 10, then a plateau
    means = {v: float(have[v].mean()) for v in bagging if v in have}
    item = "bagging: steep fall from the smallest B to B = 10, then a plateau"
    if len(bagging) < 3 or len(means) < len(bagging):
        out.append(_claim(item, None, "needs every bagging cell (at least 3)"))
    else:
        first, ten, last = means[bagging[0]], means[bagging[1]], means[bagging[-1]]
        fall, total = first - ten, first - last
        band = max(means[v] for v in bagging[1:]) - min(means[v] for v in bagging[1:])
        share = fall / total if total > 0 else math.nan
        ok = total > 0 and share >= 0.75 and band < 0.25 * fall
        level = f"; plateau {last - bayes_risk:.3f} above the Bayes risk" if bayes_risk is not None else ""
        out.append(_claim(item, ok, f"{share:.0%} of the fall {bagging[0]} → {bagging[-1]} ({total:.3f}) happens by "
                                    f"{bagging[1]}; later means span {band:.3f}{level}"))

    # (3) shallow forests beat fully grown bagging
    item = "depth-3 forests beat fully grown bagging"
    if not shallow or not bagging or any(v not in have for v in shallow + bagging):
        out.append(_claim(item, None, "needs every shallow-forest and bagging cell"))
    else:
        gaps = [(float(have[b].mean() - have[s].mean()) / _welch_se(have[b], have[s]), b, s)
                for b in bagging for s in shallow]
        z, b, s = min(gaps)
        worst_gap = float(have[b].mean() - have[s].mean())
        out.append(_claim(item, z > 3, f"smallest margin: {b} − {s} = {worst_gap:.3f} ({z:.1f} standard errors)"))

    # (4) one depth-30 tree = one bagged deep tree
    item = "one depth-30 tree ≈ one bagged fully grown tree"
    if not deep or not bagging or str(deep) not in have or bagging[0] not in have:
        out.append(_claim(item, None, "needs both single-tree cells"))
    else:
        d, se, n = _paired(have[str(deep)], have[bagging[0]])
        if n > 1 and se == 0 and d == 0:
            out.append(_claim(item, True, f"identical in all {n} paired runs: same seeds, and depth 30 does not "
                                          "bind on 70 training points"))
        elif n > 1:
            out.append(_claim(item, abs(d) <= 3 * se, f"{deep} − {bagging[0]} = {d:+.3f} ± {se:.3f} (paired, {n} "
                                                      "repeats)"))
        else:
            out.append(_claim(item, None, "fewer than 2 paired repeats"))
    return out


# --- out-of-bag error against the number of trees ----------------------------------------------------------------
def oob_table(scores: pd.DataFrame, metric: str, x: str, oob: str) -> pd.DataFrame:
    """Per (dataset, x): mean ± sd of the test ``metric`` and of the out-of-bag column ``oob`` over repeats, and
    the mean paired difference out-of-bag − test with its standard error."""
    rows = scores[(scores["metric"] == metric) & scores["step"].isna() & scores["value"].notna()]
    cols = ["dataset", x, "n", "test_mean", "test_sd", "oob_mean", "oob_sd", "difference", "difference_se"]
    if rows.empty or oob not in rows.columns:
        return pd.DataFrame(columns=cols)
    out = []
    for (dataset, xv), g in rows.groupby(["dataset", x], sort=True):
        g = g[pd.to_numeric(g[oob], errors="coerce").notna()]
        if g.empty:
            continue
        test, est = g["value"].astype(float).to_numpy(), pd.to_numeric(g[oob]).to_numpy(dtype=float)
        d = est - test
        n = len(d)
        out.append({"dataset": dataset, x: xv, "n": n, "test_mean": test.mean(),
                    "test_sd": test.std(ddof=1) if n > 1 else math.nan, "oob_mean": est.mean(),
                    "oob_sd": est.std(ddof=1) if n > 1 else math.nan, "difference": d.mean(),
                    "difference_se": d.std(ddof=1) / math.sqrt(n) if n > 1 else math.nan})
    return pd.DataFrame(out, columns=cols)


@report_kind("oob_curve")
def _oob_curve(ctx: Context, spec: dict, slug: str) -> Section:
    """``metric`` (the test score), ``x`` (a ``param.`` column, e.g. the number of trees), ``oob`` (the run
    records' out-of-bag column, default ``extra.oob_mse``): both against x, and a table of their gap."""
    metric, x = str(spec["metric"]), str(spec["x"])
    oob = str(spec.get("oob", "extra.oob_mse"))
    from forestbench.report import figures      # plotting is imported only when a figure is drawn

    sec = Section("oob_curve", f"out-of-bag and test {metric} against {x.removeprefix('param.')}")
    rows = ctx.restrict(ctx.scores[(ctx.scores["metric"] == metric) & ctx.scores["step"].isna()], spec)
    if rows.empty or oob not in rows.columns:
        sec.notes.append(f"no results with an out-of-bag column {oob!r} yet")
        return sec
    table = oob_table(rows, metric, x, oob)
    base = ctx.out_dir / "tables" / slug
    lines = [f"| dataset | {x.removeprefix('param.')} | n | test {metric} | out-of-bag | out-of-bag − test |",
             "|---|---|---|---|---|---|"]
    for r in table.itertuples(index=False):
        lines.append(f"| {r[0]} | {r[1]} | {r.n} | "
                     f"{_fmt(r.test_mean, r.test_sd)} | {_fmt(r.oob_mean, r.oob_sd)} | "
                     f"{r.difference:+.3f} ± {r.difference_se:.3f} |")
    sec.markdown = "\n".join(lines) + "\n"
    sec.html = "<pre>" + sec.markdown + "</pre>"
    sec.files = {"CSV": ctx.write(base.with_suffix(".csv"), table.to_csv(index=False)),
                 "Markdown": ctx.write(base.with_suffix(".md"), sec.markdown)}
    long = pd.concat([rows.assign(estimate=f"test {metric}"),
                      rows.assign(estimate="out-of-bag", value=pd.to_numeric(rows[oob], errors="coerce"))])
    long = long[long["value"].notna()]
    fig = figures._facet_line_plot(long, x, "value", "estimate", metric, x.removeprefix("param."))
    pdf, png = figures.save_figure(fig, ctx.out_dir / "figures" / slug)
    ctx.written += [pdf, png]
    sec.files.update({"PDF": pdf, "PNG": png})
    sec.images = [png]
    sec.notes.append("out-of-bag error: each training row predicted by the trees whose bootstrap left it out "
                     "(rows no tree left out are skipped); '±' on the gap is the standard error of the mean "
                     "paired difference over repeats")
    return sec
