"""Verdicts on published numbers: the cell statuses, and the comparison tables that carry them (counts, the
summary line, CSV / Markdown / HTML).

A cell is *judged* (✓ within tolerance / ✗ out of tolerance, agrees / disagrees) only when the experiment ran the
published protocol. Under a reduced protocol (``protocol: reduced`` in the reference entry: fewer trees, splits or
no tuning) every computed cell is shown with its difference but has the status "comparison only": a reduced run
missing the published value says nothing about the reproduction.

This module imports nothing else of the report package, so every module may import it.
"""
from __future__ import annotations

import html
import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

STATUS_OK = "ok"
STATUS_OUT = "OUT OF TOLERANCE"
STATUS_DISAGREE = "DISAGREES"
STATUS_NOT_RUN = "not run"
STATUS_UNDEFINED = "undefined"
STATUS_NO_STD = "no published std"
STATUS_NO_VALUE = "no published value"
STATUS_COMPARISON = "comparison only"
# a cell with fewer repeats than the experiment's other cells (a run still under way): shown, not judged
STATUS_PARTIAL = "partial, unjudged"
# a test computed on too few datasets to call any difference significant at alpha (its smallest attainable p is at
# or above alpha): shown, not judged, since agreeing with a published "not significant" would say nothing
STATUS_TOO_FEW = "too few datasets, unjudged"
# statuses a cell computed under the published protocol can get, which a reduced protocol turns into a comparison
JUDGED = (STATUS_OK, STATUS_OUT, STATUS_DISAGREE, STATUS_NO_STD)
# the judged cells' second share, stated beside the configured tolerance rule (in published std)
WIDE_STD = 2.0

COLUMNS = ["dataset", "dataset_id", "variant", "method_id", "metric", "paper_printed", "paper_value", "paper_std",
           "ours_mean", "ours_std", "n_repeats", "difference", "difference_relative", "difference_in_std", "status",
           "reference_note"]


@dataclass
class Protocol:
    """The protocol the experiment ran beside the one the published numbers come from (a reference entry's
    ``protocol`` / ``published_protocol`` / ``run_protocol``, and the run's own protocol name and repeats)."""
    reduced: bool = False
    published: str = ""        # how the published numbers were obtained, as the entry states it
    run: str = ""              # what this experiment runs instead (a reduced protocol)
    name: str = ""             # the experiment's split protocol (experiments.<E>.protocol)
    repeats: int = 0           # repeats recorded in the scores table

    def text(self) -> str:
        ran = f"`{self.name}`" if self.name else "the configured one"
        ran += f" ({self.repeats} repeat(s) recorded)" if self.repeats else " (nothing recorded yet)"
        if self.run:
            ran += f": {self.run}"
        published = self.published or "not stated in the configuration"
        verdict = ("reduced protocol: cells are shown as comparisons, not judged" if self.reduced else
                   "the published protocol: cells are judged")
        return f"Protocol run: {ran}. Published protocol: {published}. Reading: {verdict}."

    def comparison_status(self) -> str:
        return STATUS_COMPARISON + (f" (reduced protocol: {self.run})" if self.run else " (reduced protocol)")

    def apply(self, frame: pd.DataFrame) -> pd.DataFrame:
        """Under a reduced protocol, turn every judged status into "comparison only"."""
        if self.reduced and len(frame):
            frame = frame.copy()
            frame.loc[frame["status"].isin(JUDGED), "status"] = STATUS_COMPARISON
        return frame


def _signed(x: float, decimals: int) -> str:
    """``x`` with an explicit sign; a value that rounds to zero prints as +0.000, never -0.000."""
    text = f"{x:+.{decimals}f}"
    return "+" + text[1:] if float(text) == 0 else text


def _status_text(status: str, protocol: Protocol | None, markdown: bool) -> str:
    if status == STATUS_OK:
        return "✓ ok"
    if status == STATUS_NOT_RUN:
        return "_not run_" if markdown else status
    if status == STATUS_COMPARISON:
        return protocol.comparison_status() if protocol is not None else status
    if status in (STATUS_OUT, STATUS_DISAGREE):
        return f"**✗ {status}**" if markdown else f"✗ {status}"
    return status


def _css(status: str) -> str:
    return {STATUS_OUT: "out", STATUS_DISAGREE: "out", STATUS_OK: "ok", STATUS_NOT_RUN: "missing",
            STATUS_COMPARISON: "comparison"}.get(status, "other")


@dataclass
class Reproduction:
    """Our mean ± std beside the published value ± std, one row per published cell (columns ``COLUMNS``)."""
    table: str
    metric: str
    tolerance_std: float
    tolerance_abs: float | None
    frame: pd.DataFrame
    notes: list[str] = field(default_factory=list)
    protocol: Protocol = field(default_factory=Protocol)
    tolerance_rel: float | None = None

    def counts(self) -> dict[str, int]:
        st = self.frame["status"]
        c = st.value_counts()
        judged = st.isin([STATUS_OK, STATUS_OUT])
        dstd = pd.to_numeric(self.frame["difference_in_std"], errors="coerce")
        with_std = judged & dstd.notna()
        return {"cells": int(len(self.frame)), "run": int((st != STATUS_NOT_RUN).sum()),
                "undefined": int(c.get(STATUS_UNDEFINED, 0)),
                "judged": int(judged.sum()),
                "within_tolerance": int(c.get(STATUS_OK, 0)), "out_of_tolerance": int(c.get(STATUS_OUT, 0)),
                "judged_with_std": int(with_std.sum()),
                "within_2_std": int((with_std & (dstd.abs() <= WIDE_STD)).sum()),
                "comparison_only": int(c.get(STATUS_COMPARISON, 0)),
                "not_run": int(c.get(STATUS_NOT_RUN, 0)), "no_published_std": int(c.get(STATUS_NO_STD, 0)),
                "partial": int(c.get(STATUS_PARTIAL, 0)),
                "no_published_value": int(c.get(STATUS_NO_VALUE, 0)),
                "reduced_protocol": int(self.protocol.reduced)}

    def not_run(self) -> list[tuple[str, str]]:
        rows = self.frame[self.frame["status"] == STATUS_NOT_RUN]
        return list(zip(rows["dataset"], rows["variant"]))

    def chance(self) -> dict | None:
        """How many judged cells the std rule would leave out of tolerance by chance alone, were our mean and the
        published one two independent draws of the same protocol: each the mean over the cell's ``n_repeats``
        splits (the published protocol runs as many as ours), with the spread of the two stds shown. A cell's
        difference then has the standard deviation s = sqrt((paper_std^2 + ours_std^2) / n_repeats), and it falls
        outside ``tolerance_std`` published std with probability 2 (1 - Phi(tolerance_std paper_std / s)). Returns
        the judged cells counted, the expected number out, the number out, and the probability of at least that
        many out (the cells independent: a Poisson-binomial tail); None when no judged cell has both stds."""
        if self.protocol.reduced:
            return None
        f = self.frame
        judged = f["status"].isin([STATUS_OK, STATUS_OUT])
        sp = pd.to_numeric(f["paper_std"], errors="coerce")
        so = pd.to_numeric(f["ours_std"], errors="coerce")
        n = pd.to_numeric(f["n_repeats"], errors="coerce")
        usable = judged & (sp > 0) & so.notna() & (n >= 2)
        if not usable.any():
            return None
        probs = []
        for a, b, k in zip(sp[usable], so[usable], n[usable]):
            s = math.sqrt((a * a + b * b) / k)
            probs.append(math.erfc(self.tolerance_std * a / s / math.sqrt(2.0)))
        out = int((f.loc[usable, "status"] == STATUS_OUT).sum())
        dist = np.zeros(len(probs) + 1)
        dist[0] = 1.0
        for i, q in enumerate(probs):          # the count of misses, one cell at a time
            dist[1:i + 2] = dist[1:i + 2] * (1.0 - q) + dist[:i + 1] * q
            dist[0] *= 1.0 - q
        return {"cells": len(probs), "expected_out": float(sum(probs)), "out": out,
                "p_at_least": float(min(1.0, dist[out:].sum()))}

    def chance_text(self) -> str | None:
        c = self.chance()
        if c is None:
            return None
        return (f"Chance: were ours and the published means two draws of the same protocol (each over the cell's "
                f"splits, with the two stds shown), the configured rule would leave {c['expected_out']:.1f} of "
                f"these {c['cells']} judged cells out of tolerance by chance alone; {c['out']} are out "
                f"(probability of at least {c['out']} by chance: {c['p_at_least']:.2g}).")

    def to_csv(self) -> str:
        return self.frame.to_csv(index=False)

    def summary_text(self) -> str:
        c = self.counts()
        rule = f"within {self.tolerance_std:g} published std" + (
            f" (or {self.tolerance_abs:g} where no std is printed)" if self.tolerance_abs is not None else
            f" (or {self.tolerance_rel:.0%} of the published value where no std is printed)"
            if self.tolerance_rel is not None else "")
        text = f"{c['cells']} published cells of {self.table} ({self.metric}): {c['run']} run; "
        if c["judged"]:
            text += f"{c['judged']} judged: {c['within_tolerance']} {rule} (the configured rule), " \
                    f"{c['out_of_tolerance']} out of tolerance"
            if c["judged_with_std"]:
                share = c["within_2_std"] / c["judged_with_std"]
                text += (f"; {c['within_2_std']} of {c['judged_with_std']} ({share:.0%}) within "
                         f"{WIDE_STD:g} published std")
        else:
            text += "none judged"
        if c["comparison_only"]:
            text += f"; {c['comparison_only']} comparison only (reduced protocol)"
        text += f"; {c['no_published_std']} without published std, {c['not_run']} not run"
        return text + (f", {c['undefined']} undefined" if c["undefined"] else "")

    def _rows(self):
        for r in self.frame.itertuples(index=False):
            ours = "" if pd.isna(r.ours_mean) else f"{r.ours_mean:.3f}" + (
                "" if pd.isna(r.ours_std) else f" ± {r.ours_std:.3f}")
            diff = "" if pd.isna(r.difference) else _signed(r.difference, 3)
            if diff and pd.isna(r.paper_std) and not pd.isna(r.difference_relative):
                diff += f" ({r.difference_relative:+.0%})"   # no published std: the relative gap tells the size
            dstd = "" if pd.isna(r.difference_in_std) else _signed(r.difference_in_std, 2)
            yield r, ours, r.paper_printed, diff, dstd

    def to_markdown(self) -> str:
        lines = [f"**Reproduction of {self.table}** ({self.metric}): {self.summary_text()}.", "",
                 f"- {self.protocol.text()}"]
        lines += [f"- {n}" for n in self.notes + [self.chance_text()] if n]
        lines += ["", "| dataset | variant (paper method) | ours | paper | ours − paper | in paper std | status |",
                  "|---|---|---|---|---|---|---|"]
        for r, ours, paper, diff, dstd in self._rows():
            lines.append(f"| {r.dataset} | {r.variant} ({r.method_id}) | {ours} | {paper} | {diff} | {dstd} | "
                         f"{_status_text(r.status, self.protocol, True)} |")
        missing = self.not_run()
        if missing:
            lines += ["", f"Cells not yet run ({len(missing)}):", ""]
            lines += [f"- {d} / {v}" for d, v in missing]
        return "\n".join(lines) + "\n"

    def to_html(self) -> str:
        esc = html.escape
        parts = [f"<p class='legend'>{esc(self.summary_text())}</p>",
                 f"<p class='note protocol'>{esc(self.protocol.text())}</p>"]
        parts += [f"<p class='note'>{esc(n)}</p>" for n in self.notes + [self.chance_text()] if n]
        parts.append("<table class='reproduction'><thead><tr><th>dataset</th><th>variant (paper method)</th>"
                     "<th>ours</th><th>paper</th><th>ours − paper</th><th>in paper std</th><th>status</th>"
                     "</tr></thead><tbody>")
        for r, ours, paper, diff, dstd in self._rows():
            parts.append(f"<tr class='{_css(r.status)}'><td>{esc(str(r.dataset))}</td><td>{esc(str(r.variant))} "
                         f"({esc(str(r.method_id))})</td><td>{esc(ours)}</td><td>{esc(paper)}</td><td>{esc(diff)}</td>"
                         f"<td>{esc(dstd)}</td><td>{esc(_status_text(r.status, self.protocol, False))}</td></tr>")
        parts.append("</tbody></table>")
        return "\n".join(parts) + "\n"


@dataclass
class StatComparison:
    """Our test results beside a published p-value table, CD figure or parameter grid; one row per published
    number (columns block, item, ..., status)."""
    table: str
    metric: str
    what: str
    frame: pd.DataFrame
    columns: list[tuple[str, str]]        # (header, column) shown in Markdown / HTML
    notes: list[str] = field(default_factory=list)
    protocol: Protocol = field(default_factory=Protocol)

    def counts(self) -> dict[str, int]:
        st = self.frame["status"]
        agree, disagree = int((st == STATUS_OK).sum()), int(st.isin([STATUS_DISAGREE, STATUS_OUT]).sum())
        return {"cells": int(len(st)), "run": int((st != STATUS_NOT_RUN).sum()), "judged": agree + disagree,
                "agree": agree, "disagree": disagree, "comparison_only": int((st == STATUS_COMPARISON).sum()),
                "too_few_datasets": int((st == STATUS_TOO_FEW).sum()),
                "not_run": int((st == STATUS_NOT_RUN).sum()), "reduced_protocol": int(self.protocol.reduced)}

    def not_run(self) -> list[tuple]:
        return [tuple(r) for r in self.frame.loc[self.frame["status"] == STATUS_NOT_RUN, ["block", "item"]].to_numpy()]

    def summary_text(self) -> str:
        c = self.counts()
        text = (f"{c['cells']} published {self.what} of {self.table} ({self.metric}): {c['run']} computed; "
                f"{c['judged']} judged: {c['agree']} agree, {c['disagree']} disagree")
        if c["comparison_only"]:
            text += f"; {c['comparison_only']} comparison only (reduced protocol)"
        if c["too_few_datasets"]:
            text += f"; {c['too_few_datasets']} unjudged (too few datasets for the test to reach significance)"
        return text + f"; {c['not_run']} not run"

    def to_csv(self) -> str:
        return self.frame.to_csv(index=False)

    def _cells(self, r) -> list[str]:
        out = []
        for _, col in self.columns:
            v = getattr(r, col)
            if isinstance(v, (float, np.floating)):
                if pd.isna(v):
                    v = ""
                elif col == "difference":
                    v = _signed(v, 3)
                else:
                    v = f"{v:.3g}" if abs(v) < 0.01 and v != 0 else f"{v:.3f}"
            out.append(str(v))
        return out

    def to_markdown(self) -> str:
        lines = [f"**Reproduction of {self.table}** ({self.what}, {self.metric}): {self.summary_text()}.", "",
                 f"- {self.protocol.text()}"]
        lines += [f"- {n}" for n in self.notes]
        heads = [h for h, _ in self.columns] + ["status"]
        lines += ["", "| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)]
        for r in self.frame.itertuples(index=False):
            lines.append("| " + " | ".join(self._cells(r) + [_status_text(r.status, self.protocol, True)]) + " |")
        return "\n".join(lines) + "\n"

    def to_html(self) -> str:
        esc = html.escape
        parts = [f"<p class='legend'>{esc(self.summary_text())}</p>",
                 f"<p class='note protocol'>{esc(self.protocol.text())}</p>"]
        parts += [f"<p class='note'>{esc(n)}</p>" for n in self.notes]
        parts.append("<table class='reproduction'><thead><tr>" + "".join(f"<th>{esc(h)}</th>" for h, _ in self.columns)
                     + "<th>status</th></tr></thead><tbody>")
        for r in self.frame.itertuples(index=False):
            parts.append(f"<tr class='{_css(r.status)}'>" + "".join(f"<td>{esc(c)}</td>" for c in self._cells(r))
                         + f"<td>{esc(_status_text(r.status, self.protocol, False))}</td></tr>")
        parts.append("</tbody></table>")
        return "\n".join(parts) + "\n"


# --- one experiment's verdict, added up over its reference entries (report header, front page) ---------------
VERDICT_KEYS = ("cells", "judged", "within_tolerance", "out_of_tolerance", "judged_with_std", "within_2_std",
                "comparison_only", "no_published_std", "not_run")


def verdict_counts(counts: list[dict]) -> dict[str, int]:
    """The reproduction sections' counts added up; p-value, CD and grid comparisons count "agree" as within
    tolerance and "disagree" as out of it."""
    total = dict.fromkeys(VERDICT_KEYS, 0)
    for c in counts:
        for key in VERDICT_KEYS:
            total[key] += int(c.get(key, 0))
        total["within_tolerance"] += int(c.get("agree", 0))
        total["out_of_tolerance"] += int(c.get("disagree", 0))
        if "judged" not in c:       # counts of an older manifest: every verdict it gave was a judgement
            total["judged"] += sum(int(c.get(k, 0)) for k in ("within_tolerance", "out_of_tolerance", "agree",
                                                                 "disagree"))
    return total


def verdict_text(v: dict) -> str:
    """One line for the front page and the report: judged cells apart from comparisons (reduced protocol)."""
    if not v or not v.get("cells"):
        return "no published numbers to compare with"
    text = (f"{v['judged']} judged cell(s): {v['within_tolerance']} within tolerance (the configured rule), "
            f"{v['out_of_tolerance']} out of tolerance")
    if v.get("judged_with_std"):
        text += (f"; {v['within_2_std']} of {v['judged_with_std']} "
                 f"({v['within_2_std'] / v['judged_with_std']:.0%}) within 2 published std")
    text += f"; {v['comparison_only']} comparison only (reduced protocol)"
    if v.get("no_published_std"):
        text += f"; {v['no_published_std']} unjudged (no published std)"
    return text + f"; {v['not_run']} not run"
