"""The ``paired`` report kind: what one setting changes, variant against variant, on the same splits.

A protocol choice often runs as two variants of one method on the same splits: the DTE cascades with their PCA size
selected by an inner CV (``X_TE``) beside the same cascades at the fixed size 0.05 (``X_TE-pca0.05``). The report's
table shows both columns; this kind puts each pair side by side per dataset, with the difference of their means,
how often the first is better on the same split, and what the first one chose (a run-info column such as
``extra.pca_fraction``), so that a reader sees what the choice changes without recomputing it.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from forestbench.errors import ConfigError
from forestbench.report.data import final_rows, metric_direction
from forestbench.report.kinds import Context, Section, report_kind

COLUMNS = ["dataset", "variant", "against", "splits", "unpaired", "mean", "mean_against", "difference",
           "difference_relative", "better", "worse", "ties"]


def _value_counts(values: pd.Series) -> str:
    """'0.05: 8, 1: 2': how often each value was chosen, most frequent first (ties by value)."""
    counts = values.dropna().map(_fmt).value_counts()
    order = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return ", ".join(f"{value}: {n}" for value, n in order)


def _fmt(value) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return f"{value:g}" if isinstance(value, float) else str(value)


def paired_table(scores: pd.DataFrame, metric: str, pairs: dict[str, str], higher_is_better: bool,
                 datasets: list[str] | None = None, extra: list[str] = ()) -> pd.DataFrame:
    """One row per dataset and pair (variant, against) with both ran: their means over the splits both finished
    (matched on ``repeat``; ``unpaired`` counts the splits only one of them finished, a run under way), the
    difference variant - against (and relative to ``against``), and on how many of those splits the variant scored
    better, worse or the same; each ``extra`` column (a run-info column of scores.csv) as the counts of the
    variant's values over those splits."""
    rows = final_rows(scores, metric)
    out = []
    for dataset in datasets if datasets is not None else list(dict.fromkeys(rows["dataset"])):
        part = rows[rows["dataset"] == dataset]
        for variant, against in pairs.items():
            a = part[part["variant"] == variant].drop_duplicates("repeat").set_index("repeat")
            b = part[part["variant"] == against].drop_duplicates("repeat").set_index("repeat")
            both = a.index.intersection(b.index)
            if both.empty:
                continue
            va, vb = a.loc[both, "value"].astype(float), b.loc[both, "value"].astype(float)
            gain = (va - vb) if higher_is_better else (vb - va)
            mean_a, mean_b = float(va.mean()), float(vb.mean())
            row = {"dataset": dataset, "variant": variant, "against": against, "splits": int(len(both)),
                   "unpaired": int(len(a.index.union(b.index)) - len(both)),
                   "mean": mean_a, "mean_against": mean_b, "difference": mean_a - mean_b,
                   "difference_relative": (mean_a - mean_b) / abs(mean_b) if mean_b else np.nan,
                   "better": int((gain > 0).sum()), "worse": int((gain < 0).sum()), "ties": int((gain == 0).sum())}
            for column in extra:
                row[column] = _value_counts(a.loc[both, column]) if column in a.columns else ""
            out.append(row)
    return pd.DataFrame(out, columns=COLUMNS + list(extra))


@report_kind("paired")
def _paired(ctx: Context, spec: dict, slug: str) -> Section:
    """``metric``, ``pairs`` (variant -> the variant it is compared with, on the same splits), optional ``extra``
    (run-info columns of scores.csv, e.g. ``extra.pca_fraction``, shown as the counts of the first variant's
    values) and ``label``. Per dataset and pair: both means over the splits both finished, their difference
    (absolute and relative), and on how many splits the first is better / worse / tied; CSV and Markdown."""
    metric = str(spec["metric"])
    pairs = spec.get("pairs")
    where = f"experiments.{ctx.experiment}.reports (kind paired)"
    if not isinstance(pairs, dict) or not pairs:
        raise ConfigError(f"{where}: pairs must map a variant to the variant it is compared with")
    pairs = {str(k): str(v) for k, v in pairs.items()}
    unknown = sorted({v for kv in pairs.items() for v in kv} - set(ctx.variants))
    if unknown:
        raise ConfigError(f"{where}: pairs name variant(s) the experiment does not have: {', '.join(unknown)}")
    extra = [str(c) for c in spec.get("extra") or []]
    label = f" ({spec['label']})" if spec.get("label") else ""
    sec = Section("paired", f"{metric}: variant against variant on the same splits{label}")
    hib = metric_direction(ctx.scores, metric, spec.get("higher_is_better"))
    table = paired_table(ctx.scores, metric, pairs, hib, ctx.datasets_for(spec), extra)
    if table.empty:
        sec.notes.append("no dataset where both variants of a pair ran")
        return sec
    shown = table.round(4)
    base = ctx.out_dir / "tables" / slug
    sec.files = {"CSV": ctx.write(base.with_suffix(".csv"), table.to_csv(index=False)),
                 "Markdown": ctx.write(base.with_suffix(".md"), shown.to_markdown(index=False))}
    sec.markdown = shown.to_markdown(index=False)
    sec.html = shown.to_html(index=False, escape=True)
    short = table[table["unpaired"] > 0]
    if not short.empty:
        sec.notes.append("pairs compared on the splits both finished, others left out (a run under way): "
                         + ", ".join(f"{r.dataset} / {r.variant} ({r.splits} of {r.splits + r.unpaired})"
                                     for r in short.itertuples()))
    sec.notes.append(f"difference = {metric} of the variant - {metric} of the one it is compared with, means over "
                     f"the splits both finished; better / worse / ties count those splits "
                     f"({'higher' if hib else 'lower'} is better)")
    sec.data = {"pairs": pairs, "rows": int(len(table))}
    return sec
