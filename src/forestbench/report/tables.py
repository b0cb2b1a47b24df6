"""Result tables in the papers' layout (mean ± std per dataset x method, best in bold, marks against the baseline)
and pairwise p-value tables with the thesis sign notation, rendered as CSV, Markdown, LaTeX (booktabs) and HTML.

Best per row and the marks against the baseline follow the readings of config/README.md, "Statistics and
reports" (bold on the displayed means; ``sig_rule="max_std"`` by default). ``sig_rule`` takes ``"max_std"``
(|mean - mean_baseline| > max(std_baseline, std_method)), ``"baseline_std"`` (std_baseline only) or
``"method_std"`` (std_method only). A mark is "+" (better than the baseline) or "-" (worse), direction-aware.
LaTeX underlines marked cells (the papers' notation) and adds the direction as a superscript.
"""
from __future__ import annotations

import html
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from forestbench import stats
from forestbench.report.data import complete_rows

SIG_RULES = ("max_std", "baseline_std", "method_std")


@dataclass
class MeanStdTable:
    metric: str
    higher_is_better: bool
    mean: pd.DataFrame            # datasets x variants, NaN = not run
    std: pd.DataFrame
    n: pd.DataFrame
    baseline: str | None = None
    decimals: int = 3
    sig_rule: str = "max_std"
    undefined: pd.DataFrame | None = None  # datasets x variants: finished repeats whose score is undefined
    partial: pd.DataFrame | None = None    # datasets x variants: True where a run is under way (ranked as not run)
    best: pd.DataFrame = field(init=False)
    mark: pd.DataFrame = field(init=False)
    average_rank: pd.Series | None = field(init=False, default=None)
    n_ranked: int = field(init=False, default=0)

    def __post_init__(self):
        if self.sig_rule not in SIG_RULES:
            raise ValueError(f"unknown sig_rule {self.sig_rule!r}; expected one of {', '.join(SIG_RULES)}")
        if self.baseline is not None and self.baseline not in self.mean.columns:
            raise ValueError(f"baseline {self.baseline!r} is not a variant of this table "
                             f"({', '.join(map(str, self.mean.columns))})")
        shown = self.mean.round(self.decimals)
        oriented = shown if self.higher_is_better else -shown
        row_best = oriented.max(axis=1)
        self.best = oriented.eq(row_best, axis=0) & oriented.notna()
        self.mark = pd.DataFrame("", index=self.mean.index, columns=self.mean.columns)
        if self.baseline is not None:
            base_mean, base_std = self.mean[self.baseline], self.std[self.baseline]
            for v in self.mean.columns:
                if v == self.baseline:
                    continue
                diff = self.mean[v] - base_mean
                if self.sig_rule == "max_std":
                    thr = np.fmax(base_std, self.std[v])
                elif self.sig_rule == "baseline_std":
                    thr = base_std
                else:
                    thr = self.std[v]
                # "more than one std": a difference equal to the std up to float round-off is not marked
                sig = diff.abs() > thr * (1 + 1e-9) + 1e-12
                better = diff > 0 if self.higher_is_better else diff < 0
                self.mark.loc[sig & better, v] = "+"
                self.mark.loc[sig & ~better, v] = "-"
        ranked = self.mean if self.partial is None else self.mean.mask(self.partial.reindex_like(self.mean)
                                                                       .fillna(False).astype(bool))
        complete, _ = complete_rows(ranked)
        if complete.shape[0] >= 1 and complete.shape[1] >= 2:
            self.average_rank = stats.average_ranks(complete.round(self.decimals), self.higher_is_better)
            self.n_ranked = complete.shape[0]

    # --- helpers -------------------------------------------------------------------------------------------------
    @property
    def datasets(self) -> list:
        return list(self.mean.index)

    @property
    def variants(self) -> list:
        return list(self.mean.columns)

    def n_undefined(self, d, v) -> int:
        if self.undefined is None or d not in self.undefined.index or v not in self.undefined.columns:
            return 0
        k = self.undefined.loc[d, v]
        return 0 if pd.isna(k) else int(k)

    def status(self, d, v) -> str:
        """"ok", "undefined" (every finished repeat has an undefined score) or "not run"."""
        if not pd.isna(self.mean.loc[d, v]):
            return "ok"
        return "undefined" if self.n_undefined(d, v) else "not run"

    def missing_cells(self) -> list[tuple[str, str]]:
        return [(str(d), str(v)) for d in self.datasets for v in self.variants if self.status(d, v) == "not run"]

    def undefined_cells(self) -> list[tuple[str, str, int]]:
        """(dataset, variant, number of undefined repeats) of every cell with at least one undefined repeat."""
        return [(str(d), str(v), self.n_undefined(d, v)) for d in self.datasets for v in self.variants
                if self.n_undefined(d, v)]

    def mark_counts(self) -> dict[str, dict[str, int]]:
        return {v: {"+": int((self.mark[v] == "+").sum()), "-": int((self.mark[v] == "-").sum())}
                for v in self.variants if v != self.baseline}

    def _num(self, x: float) -> str:
        return "" if pd.isna(x) else f"{x:.{self.decimals}f}"

    def cell_text(self, d, v) -> str:
        m = self.mean.loc[d, v]
        if pd.isna(m):
            return self.status(d, v)
        s = self.std.loc[d, v]
        k = self.n_undefined(d, v)
        return self._num(m) + ("" if pd.isna(s) else f" ± {self._num(s)}") + (f" ({k} undefined)" if k else "")

    # --- renderers -----------------------------------------------------------------------------------------------
    def to_frame(self) -> pd.DataFrame:
        """Long form, one row per cell: dataset, variant, mean, std, n, best, mark, status."""
        rows = []
        for d in self.datasets:
            for v in self.variants:
                m = self.mean.loc[d, v]
                rows.append({"dataset": d, "variant": v, "metric": self.metric, "mean": m, "std": self.std.loc[d, v],
                             "n": 0 if pd.isna(self.n.loc[d, v]) else int(self.n.loc[d, v]),
                             "best": bool(self.best.loc[d, v]), "mark_vs_baseline": self.mark.loc[d, v],
                             "undefined": self.n_undefined(d, v), "status": self.status(d, v)})
        return pd.DataFrame(rows)

    def to_csv(self) -> str:
        """Long form: one row per (dataset, variant) cell."""
        return self.to_frame().to_csv(index=False)

    def to_wide_frame(self) -> pd.DataFrame:
        """The papers' layout: one row per dataset, columns "<variant> mean", "<variant> std", "<variant> mark"
        (mark: "best" and/or "+"/"-" against the baseline), and a final average-rank row."""
        out = pd.DataFrame({"dataset": self.datasets})
        for v in self.variants:
            out[f"{v} mean"] = self.mean[v].to_numpy()
            out[f"{v} std"] = self.std[v].to_numpy()
            marks = []
            for d in self.datasets:
                parts = ((["best"] if self.best.loc[d, v] else [])
                         + ([self.mark.loc[d, v]] if self.mark.loc[d, v] else []))
                marks.append(" ".join(parts) if not pd.isna(self.mean.loc[d, v]) else self.status(d, v))
            out[f"{v} mark"] = marks
        if self.average_rank is not None:
            rank_row = {"dataset": "avg. rank"}
            rank_row.update({f"{v} mean": self.average_rank[v] for v in self.variants})
            out = pd.concat([out, pd.DataFrame([rank_row])], ignore_index=True)
        return out

    def to_wide_csv(self) -> str:
        return self.to_wide_frame().to_csv(index=False, float_format=f"%.{self.decimals + 3}g")

    def _legend(self) -> str:
        arrow = "higher is better" if self.higher_is_better else "lower is better"
        parts = [f"{self.metric} ({arrow}), mean ± std over repeats; best per row in bold"]
        if self.baseline is not None:
            rule = {"max_std": "max(std of baseline, std of method)", "baseline_std": "the baseline's std",
                    "method_std": "the method's std"}[self.sig_rule]
            parts.append(f"marked: difference from baseline {self.baseline} larger than {rule} "
                         f"(+ better, - worse)")
        if self.average_rank is not None:
            parts.append(f"average rank over the {self.n_ranked} complete dataset(s)")
        return "; ".join(parts)

    def to_markdown(self) -> str:
        head = "| dataset | " + " | ".join(map(str, self.variants)) + " |"
        lines = [f"_{self._legend()}_", "", head, "|" + "---|" * (len(self.variants) + 1)]
        for d in self.datasets:
            cells = []
            for v in self.variants:
                text = self.cell_text(d, v)
                if self.best.loc[d, v]:
                    text = f"**{text}**"
                mark = self.mark.loc[d, v]
                if mark:
                    text += " ↑" if mark == "+" else " ↓"
                cells.append(text)
            lines.append(f"| {d} | " + " | ".join(cells) + " |")
        if self.average_rank is not None:
            lines.append("| avg. rank | " + " | ".join(f"{r:.2f}" for r in self.average_rank[self.variants]) + " |")
        return "\n".join(lines) + "\n"

    def to_latex(self, caption: str | None = None, label: str | None = None) -> str:
        cols = "l" + "c" * len(self.variants)
        out = ["% requires \\usepackage{booktabs}", "\\begin{table}[t]", "\\centering"]
        out.append(f"\\caption{{{latex_escape(caption or self._legend())}}}")
        if label:
            out.append(f"\\label{{{label}}}")
        out += [f"\\begin{{tabular}}{{{cols}}}", "\\toprule",
                "Dataset & " + " & ".join(latex_escape(str(v)) for v in self.variants) + " \\\\", "\\midrule"]
        for d in self.datasets:
            cells = []
            for v in self.variants:
                m = self.mean.loc[d, v]
                if pd.isna(m):
                    cells.append("undefined" if self.status(d, v) == "undefined" else "--")
                    continue
                s = self.std.loc[d, v]
                num = self._num(m)
                if self.best.loc[d, v]:
                    num = f"\\textbf{{{num}}}"
                text = num + ("" if pd.isna(s) else f" $\\pm$ {self._num(s)}")
                mark = self.mark.loc[d, v]
                if mark:
                    text = f"\\underline{{{text}}}$^{{{'+' if mark == '+' else '-'}}}$"
                cells.append(text)
            out.append(latex_escape(str(d)) + " & " + " & ".join(cells) + " \\\\")
        if self.average_rank is not None:
            out.append("\\midrule")
            out.append("Avg. rank & " + " & ".join(f"{r:.2f}" for r in self.average_rank[self.variants]) + " \\\\")
        out += ["\\bottomrule", "\\end{tabular}", "\\end{table}"]
        return "\n".join(out) + "\n"

    def to_html(self) -> str:
        rows = ["<table class='results'>", f"<caption>{html.escape(self._legend())}</caption>",
                "<thead><tr><th>dataset</th>" + "".join(f"<th>{html.escape(str(v))}</th>" for v in self.variants)
                + "</tr></thead><tbody>"]
        for d in self.datasets:
            cells = []
            for v in self.variants:
                text = html.escape(self.cell_text(d, v))
                cls = []
                if pd.isna(self.mean.loc[d, v]):
                    cls.append("undefined" if self.status(d, v) == "undefined" else "missing")
                if self.best.loc[d, v]:
                    text = f"<b>{text}</b>"
                mark = self.mark.loc[d, v]
                if mark:
                    cls.append("better" if mark == "+" else "worse")
                    text = f"<u>{text}</u>{'&#8593;' if mark == '+' else '&#8595;'}"
                attr = f" class='{' '.join(cls)}'" if cls else ""
                cells.append(f"<td{attr}>{text}</td>")
            rows.append(f"<tr><th>{html.escape(str(d))}</th>" + "".join(cells) + "</tr>")
        if self.average_rank is not None:
            rows.append("<tr class='rank'><th>avg. rank</th>"
                        + "".join(f"<td>{r:.2f}</td>" for r in self.average_rank[self.variants]) + "</tr>")
        rows.append("</tbody></table>")
        return "\n".join(rows) + "\n"


def latex_escape(text: str) -> str:
    repl = {"\\": "\\textbackslash{}", "&": "\\&", "%": "\\%", "$": "\\$", "#": "\\#", "_": "\\_", "{": "\\{",
            "}": "\\}", "~": "\\textasciitilde{}", "^": "\\textasciicircum{}", "±": "$\\pm$",
            "<": "\\textless{}", ">": "\\textgreater{}"}
    return "".join(repl.get(ch, ch) for ch in text)


def format_p(p: float) -> str:
    """p-values as the thesis prints them: two decimals down to 0.01, then one significant digit."""
    if pd.isna(p):
        return ""
    if p >= 0.01:
        return f"{p:.2f}"
    if p >= 0.001:
        return f"{p:.3f}"
    if p == 0:
        return "0"
    return f"{p:.0e}"


@dataclass
class PValueBlock:
    title: str                    # e.g. "over 21 datasets" or a dataset name
    p_values: pd.DataFrame
    signs: pd.DataFrame
    n_units: int


@dataclass
class PValueTable:
    metric: str
    test: str
    correction: str | None
    alpha: float
    blocks: list[PValueBlock]
    notes: list[str] = field(default_factory=list)

    def _test_name(self) -> str:
        name = {"wilcoxon": "Wilcoxon signed-rank test", "ttest": "Student's paired t-test"}[self.test]
        corr = ", Holm-corrected" if self.correction == "holm" else ""
        return f"{name}{corr} on {self.metric}; '>' row better than column, '<' worse (shown when p < {self.alpha})"

    def to_frame(self) -> pd.DataFrame:
        rows = []
        for b in self.blocks:
            for r in b.p_values.index:
                for c in b.p_values.columns:
                    if r == c:
                        continue
                    rows.append({"block": b.title, "test": self.test, "correction": self.correction or "none",
                                 "metric": self.metric, "row_variant": r, "col_variant": c,
                                 "p_value": b.p_values.loc[r, c], "sign": b.signs.loc[r, c], "n_pairs": b.n_units})
        return pd.DataFrame(rows, columns=["block", "test", "correction", "metric", "row_variant", "col_variant",
                                           "p_value", "sign", "n_pairs"])

    def to_csv(self) -> str:
        return self.to_frame().to_csv(index=False)

    def _cell(self, b: PValueBlock, r, c) -> tuple[str, str, bool]:
        """(formatted p, sign, significant) of one cell."""
        if r == c:
            return "", "", False
        p = b.p_values.loc[r, c]
        return format_p(p), b.signs.loc[r, c], bool(not pd.isna(p) and p < self.alpha)

    def _md_cell(self, b, r, c) -> str:
        p, sign, sig = self._cell(b, r, c)
        text = p + (f" ({sign})" if sign else "")
        return f"**{text}**" if sig else text

    def _tex_cell(self, b, r, c) -> str:
        p, sign, sig = self._cell(b, r, c)
        text = (f"\\textbf{{{p}}}" if sig else p) + (f" (${sign}$)" if sign else "")
        return text

    def _html_cell(self, b, r, c) -> str:
        p, sign, sig = self._cell(b, r, c)
        text = (f"<b>{p}</b>" if sig else p) + (f" ({html.escape(sign)})" if sign else "")
        return text

    def to_markdown(self) -> str:
        lines = [f"_{self._test_name()}_", ""]
        lines += [f"- {n}" for n in self.notes]
        for b in self.blocks:
            names = list(b.p_values.columns)
            lines += ["", f"**{b.title}** ({b.n_units} pairs)", "",
                      "| | " + " | ".join(map(str, names)) + " |", "|" + "---|" * (len(names) + 1)]
            for r in names:
                lines.append(f"| {r} | " + " | ".join(self._md_cell(b, r, c) for c in names) + " |")
        return "\n".join(lines) + "\n"

    def to_latex(self) -> str:
        out = ["% requires \\usepackage{booktabs}"]
        for b in self.blocks:
            names = list(b.p_values.columns)
            out += ["\\begin{table}[t]", "\\centering",
                    f"\\caption{{{latex_escape(self._test_name() + ' -- ' + b.title)}}}",
                    f"\\begin{{tabular}}{{l{'c' * len(names)}}}", "\\toprule",
                    " & " + " & ".join(latex_escape(str(n)) for n in names) + " \\\\", "\\midrule"]
            for r in names:
                cells = [self._tex_cell(b, r, c) for c in names]
                out.append(latex_escape(str(r)) + " & " + " & ".join(cells) + " \\\\")
            out += ["\\bottomrule", "\\end{tabular}", "\\end{table}", ""]
        return "\n".join(out)

    def to_html(self) -> str:
        parts = [f"<p class='legend'>{html.escape(self._test_name())}</p>"]
        parts += [f"<p class='note'>{html.escape(n)}</p>" for n in self.notes]
        for b in self.blocks:
            names = list(b.p_values.columns)
            parts.append(f"<table class='pvalues'><caption>{html.escape(b.title)} ({b.n_units} pairs)</caption>")
            parts.append("<thead><tr><th></th>" + "".join(f"<th>{html.escape(str(n))}</th>" for n in names)
                         + "</tr></thead><tbody>")
            for r in names:
                cells = "".join(f"<td>{self._html_cell(b, r, c)}</td>" for c in names)
                parts.append(f"<tr><th>{html.escape(str(r))}</th>{cells}</tr>")
            parts.append("</tbody></table>")
        return "\n".join(parts) + "\n"


def pvalue_table(scores: pd.DataFrame, metric: str, higher_is_better: bool, test: str = "wilcoxon",
                 over: str | None = None, correction: str | None = None, alpha: float = 0.05,
                 variants: list[str] | None = None, datasets: list[str] | None = None) -> PValueTable:
    """Pairwise p-values of ``test`` between variants.

    ``over="datasets"`` (default for Wilcoxon, as thesis Tables 6.7/6.9) pairs the per-dataset mean scores over the
    datasets where every variant ran; ``over="repeats"`` (default for the t-test, as Tables 6.2/6.4) pairs the
    repeats within each dataset (matched on ``repeat``) and gives one block per dataset.
    """
    from forestbench.report.data import final_rows, score_matrix, summarise, without_partial

    over = over or ("repeats" if test == "ttest" else "datasets")
    if over not in ("datasets", "repeats"):
        raise ValueError(f"over must be 'datasets' or 'repeats', got {over!r}")
    notes: list[str] = []
    blocks: list[PValueBlock] = []
    if over == "datasets":
        summary, partial = without_partial(summarise(scores, metric))
        matrix = score_matrix(summary, datasets, variants)
        complete, dropped = complete_rows(matrix)
        if dropped:
            notes.append(f"datasets left out (not every variant ran all repeats): {', '.join(dropped)}")
        if partial:
            notes.append(f"partial cells (a run under way), counted as not run: {', '.join(partial)}")
        if complete.shape[0] >= 2 and complete.shape[1] >= 2:
            res = stats.pairwise_test(complete, test, higher_is_better, correction, alpha)
            blocks.append(PValueBlock(f"over {complete.shape[0]} datasets", res.p_values, res.signs,
                                      complete.shape[0]))
        else:
            notes.append("not enough complete datasets (need 2) for the test")
    else:
        rows = final_rows(scores, metric)
        variants = variants if variants is not None else list(dict.fromkeys(rows["variant"]))
        for d in datasets if datasets is not None else list(dict.fromkeys(rows["dataset"])):
            sub = rows[rows["dataset"] == d]
            wide = sub.pivot_table(index="repeat", columns="variant", values="value", aggfunc="mean")
            wide = wide.reindex(columns=variants)
            present = wide.dropna(axis=1, how="all")
            if present.shape[1] < wide.shape[1]:
                not_run = wide.columns.difference(present.columns)
                notes.append(f"{d}: variant(s) not run: {', '.join(map(str, not_run))}")
            paired = present.dropna(axis=0, how="any")
            if paired.shape[0] < 2 or paired.shape[1] < 2:
                notes.append(f"{d}: not enough paired repeats (need 2) for the test")
                continue
            res = stats.pairwise_test(paired, test, higher_is_better, correction, alpha)
            blocks.append(PValueBlock(str(d), res.p_values, res.signs, paired.shape[0]))
    return PValueTable(metric, test, correction if correction not in (None, "none") else None, alpha, blocks, notes)
