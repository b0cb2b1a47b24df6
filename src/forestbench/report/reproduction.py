"""Our numbers beside the published ones, cell by cell.

For each reference cell (dataset, method) of the configured metric: our mean ± std, the paper's value ± std, the
difference ours - paper and that difference in units of the published std. A cell is out of tolerance when
|difference| / published std > ``tolerance_std``. When the paper prints no std the difference is reported in raw
units and the cell is judged against ``tolerance_abs`` if the configuration gives one, otherwise it is left
unjudged ("no published std"). Cells we have not run are listed as "not run". Printed "mean" rows (DTE tables) are
summaries, not cells, and are left out.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from forestbench.errors import ConfigError

STATUS_OK = "ok"
STATUS_OUT = "OUT OF TOLERANCE"
STATUS_NOT_RUN = "not run"
STATUS_UNDEFINED = "undefined"
STATUS_NO_STD = "no published std"
STATUS_NO_VALUE = "no published value"

COLUMNS = ["dataset", "dataset_id", "variant", "method_id", "metric", "paper_printed", "paper_value", "paper_std", "ours_mean",
           "ours_std", "n_repeats", "difference", "difference_in_std", "status", "reference_note"]


@dataclass
class Reproduction:
    table: str
    metric: str
    tolerance_std: float
    tolerance_abs: float | None
    frame: pd.DataFrame
    notes: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        c = self.frame["status"].value_counts()
        return {"cells": int(len(self.frame)), "run": int((self.frame["status"] != STATUS_NOT_RUN).sum()),
                "undefined": int(c.get(STATUS_UNDEFINED, 0)),
                "within_tolerance": int(c.get(STATUS_OK, 0)), "out_of_tolerance": int(c.get(STATUS_OUT, 0)),
                "not_run": int(c.get(STATUS_NOT_RUN, 0)), "no_published_std": int(c.get(STATUS_NO_STD, 0)),
                "no_published_value": int(c.get(STATUS_NO_VALUE, 0))}

    def not_run(self) -> list[tuple[str, str]]:
        rows = self.frame[self.frame["status"] == STATUS_NOT_RUN]
        return list(zip(rows["dataset"], rows["variant"]))

    def to_csv(self) -> str:
        return self.frame.to_csv(index=False)

    def summary_text(self) -> str:
        c = self.counts()
        return (f"{c['cells']} published cells of {self.table} ({self.metric}): {c['run']} run, "
                f"{c['within_tolerance']} within {self.tolerance_std:g} published std"
                + (f" (or {self.tolerance_abs:g} where no std is printed)" if self.tolerance_abs is not None else "")
                + f", {c['out_of_tolerance']} out of tolerance, {c['no_published_std']} without published std, "
                f"{c['not_run']} not run" + (f", {c['undefined']} undefined" if c["undefined"] else ""))

    def _rows(self):
        for r in self.frame.itertuples(index=False):
            ours = "" if pd.isna(r.ours_mean) else f"{r.ours_mean:.3f}" + (
                "" if pd.isna(r.ours_std) else f" ± {r.ours_std:.3f}")
            paper = r.paper_printed
            diff = "" if pd.isna(r.difference) else _signed(r.difference, 3)
            dstd = "" if pd.isna(r.difference_in_std) else _signed(r.difference_in_std, 2)
            yield r, ours, paper, diff, dstd

    def to_markdown(self) -> str:
        lines = [f"**Reproduction of {self.table}** ({self.metric}): {self.summary_text()}.", ""]
        lines += [f"- {n}" for n in self.notes]
        lines += ["", "| dataset | variant (paper method) | ours | paper | ours − paper | in paper std | status |",
                  "|---|---|---|---|---|---|---|"]
        for r, ours, paper, diff, dstd in self._rows():
            status = {STATUS_OUT: "**✗ OUT OF TOLERANCE**", STATUS_OK: "✓ ok", STATUS_NOT_RUN: "_not run_"}.get(
                r.status, r.status)
            lines.append(f"| {r.dataset} | {r.variant} ({r.method_id}) | {ours} | {paper} | {diff} | {dstd} | "
                         f"{status} |")
        missing = self.not_run()
        if missing:
            lines += ["", f"Cells not yet run ({len(missing)}):", ""]
            lines += [f"- {d} / {v}" for d, v in missing]
        return "\n".join(lines) + "\n"

    def to_html(self) -> str:
        import html
        esc = html.escape
        parts = [f"<p class='legend'>{esc(self.summary_text())}</p>"]
        parts += [f"<p class='note'>{esc(n)}</p>" for n in self.notes]
        parts.append("<table class='reproduction'><thead><tr><th>dataset</th><th>variant (paper method)</th>"
                     "<th>ours</th><th>paper</th><th>ours − paper</th><th>in paper std</th><th>status</th>"
                     "</tr></thead><tbody>")
        for r, ours, paper, diff, dstd in self._rows():
            cls = {STATUS_OUT: "out", STATUS_OK: "ok", STATUS_NOT_RUN: "missing"}.get(r.status, "other")
            shown = "✗ " + r.status if r.status == STATUS_OUT else ("✓ ok" if r.status == STATUS_OK else r.status)
            parts.append(f"<tr class='{cls}'><td>{esc(str(r.dataset))}</td><td>{esc(str(r.variant))} "
                         f"({esc(str(r.method_id))})</td><td>{esc(ours)}</td><td>{esc(paper)}</td><td>{esc(diff)}</td>"
                         f"<td>{esc(dstd)}</td><td>{esc(shown)}</td></tr>")
        parts.append("</tbody></table>")
        return "\n".join(parts) + "\n"


KIND_COLUMNS = {
    "results": {"dataset_id", "method_id", "metric", "value", "std"},
    "pvalues": {"row_method_id", "col_method_id", "p_value", "sign", "test", "metric"},
    "cd": {"row_type", "method_id", "average_rank", "value"},
    "grid": {"method_id", "metric", "value", "n_estimators", "max_depth"},  # cells indexed by parameters (slides)
}


def read_reference(reference_dir: Path, table: str) -> tuple[pd.DataFrame, str]:
    """The reference CSV as strings, and its kind: "results", "pvalues" or "cd"."""
    path = Path(reference_dir) / f"{table}.csv"
    if not path.exists():
        raise ConfigError(f"reference table {table!r}: {path} does not exist")
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    for kind, needed in KIND_COLUMNS.items():
        if needed <= set(frame.columns):
            return frame, kind
    raise ConfigError(f"reference table {path} is neither a results, a p-value, a critical-difference nor a parameter-grid table "
                      f"(columns: {', '.join(frame.columns)})")


def _entry(ref_cfg, experiment: str) -> tuple[str, str, str]:
    """A ``reference:`` entry's place in the config, table and metric, after checking it has the required keys."""
    where = f"experiments.{experiment}.reference"
    if not isinstance(ref_cfg, dict):
        raise ConfigError(f"{where} must be a mapping, got {type(ref_cfg).__name__}")
    for key in ("table", "metric", "methods"):
        if key not in ref_cfg:
            raise ConfigError(f"{where}: missing key {key!r}")
    return where, str(ref_cfg["table"]), str(ref_cfg["metric"])


def check_references(experiments: dict, reference_dir: Path) -> None:
    """:func:`check_reference` for every ``reference:`` entry (a mapping or a list of them) of ``experiments``."""
    cache: dict = {}
    for name, cfg in experiments.items():
        refs = cfg.get("reference")
        for ref_cfg in refs if isinstance(refs, list) else ([refs] if refs else []):
            check_reference(ref_cfg, reference_dir, name, cache, cfg.get("datasets"))


def check_reference(ref_cfg, reference_dir: Path, experiment: str, cache: dict | None = None,
                    datasets: list | None = None) -> None:
    """Check one ``reference:`` entry against its table before any job runs: the table exists, has the metric,
    and has every method_id the entry maps to (the report would otherwise fail only after the fits); a results
    table must share a dataset with the experiment's ``datasets`` (through the entry's ``datasets`` mapping), or
    every cell would be reported "not run". ``cache`` keeps tables read once across entries."""
    where, table, metric = _entry(ref_cfg, experiment)
    cache = {} if cache is None else cache
    if table not in cache:
        cache[table] = read_reference(reference_dir, table)
    ref, kind = cache[table]
    if kind == "cd":
        _mapping(ref_cfg, where, set(ref.loc[ref["row_type"] == "average_rank", "method_id"]))
        return
    if kind == "grid":
        return          # cells indexed by parameters, with their own metric rule: forestbench.report.teaching
    ref = ref[ref["metric"] == metric]
    if ref.empty:
        raise ConfigError(f"{where}: metric {metric!r} not in reference table {table}")
    if kind == "pvalues":
        _mapping(ref_cfg, where, set(ref["row_method_id"]) | set(ref["col_method_id"]))
    else:
        _mapping(ref_cfg, where, set(ref["method_id"]))
        dataset_map = ref_cfg.get("datasets") or {}
        if kind == "results" and isinstance(dataset_map, dict):
            unknown_ds = sorted(set(map(str, dataset_map.values())) - set(ref["dataset_id"]))
            if unknown_ds:
                raise ConfigError(f"{where}.datasets: dataset_id(s) {', '.join(unknown_ds)} not in {table}")
            if datasets:
                ours = {str(dataset_map.get(d, d)) for d in datasets}
                if not ours & set(ref["dataset_id"]):
                    raise ConfigError(f"{where}: {table} has none of the experiment's datasets "
                                      f"({', '.join(map(str, datasets))}); map them with `datasets:` "
                                      "(ours -> the table's dataset_id)")


def _short_list(items: list[str], limit: int = 8) -> str:
    return ", ".join(items[:limit]) + (f", ... ({len(items) - limit} more)" if len(items) > limit else "")


def _signed(x: float, decimals: int) -> str:
    """``x`` with an explicit sign; a value that rounds to zero prints as +0.000, never -0.000."""
    text = f"{x:+.{decimals}f}"
    return "+" + text[1:] if float(text) == 0 else text


def load_reference(reference_dir: Path, table: str) -> pd.DataFrame:
    """A results reference table (value ± std per dataset and method)."""
    frame, kind = read_reference(reference_dir, table)
    if kind != "results":
        raise ConfigError(f"reference table {table!r} is not a results table (it is a {kind} table)")
    return frame


def compare(summary: pd.DataFrame, ref_cfg: dict, reference_dir: Path, experiment: str,
            datasets: list | None = None) -> Reproduction:
    """Compare ``summary`` (dataset, variant, mean, std, n for the reference metric) with the reference table.

    With ``datasets`` (the experiment's own list) only the published cells of those datasets are listed: an
    experiment that runs one row of a table is not reported as missing the others."""
    where, table, metric = _entry(ref_cfg, experiment)
    methods: dict = ref_cfg["methods"] or {}
    if not isinstance(methods, dict) or not methods:
        raise ConfigError(f"{where}.methods must map our variants to reference method_id values")
    tolerance_std = float(ref_cfg.get("tolerance_std", 1.0))
    tolerance_abs = ref_cfg.get("tolerance_abs")
    tolerance_abs = None if tolerance_abs is None else float(tolerance_abs)
    dataset_map: dict = ref_cfg.get("datasets") or {}
    ref = load_reference(reference_dir, table)
    ref = ref[ref["metric"] == metric]
    if ref.empty:
        raise ConfigError(f"{where}: metric {metric!r} not in reference table {table}")
    unknown = sorted(set(map(str, methods.values())) - set(ref["method_id"]))
    if unknown:
        raise ConfigError(f"{where}.methods: method_id(s) {', '.join(unknown)} not in {table} "
                          f"(available: {', '.join(sorted(set(ref['method_id'])))})")
    notes = []
    summaries = ref["dataset"].str.lower() == "mean"
    if summaries.any():
        notes.append("the reference's printed 'mean' rows are summaries and are not compared")
        ref = ref[~summaries]
    ref_to_ours_dataset = {str(v): str(k) for k, v in dataset_map.items()}
    unknown_ds = sorted(set(ref_to_ours_dataset) - set(ref["dataset_id"]))
    if unknown_ds:
        raise ConfigError(f"{where}.datasets: dataset_id(s) {', '.join(unknown_ds)} not in {table}")
    if datasets:
        wanted = {str(dataset_map.get(d, d)) for d in datasets}
        others = sorted(set(ref["dataset_id"]) - wanted)
        if others:
            notes.append(f"the published cells of {len(others)} dataset(s) this experiment does not run are not "
                         f"listed ({_short_list(others)})")
            ref = ref[ref["dataset_id"].isin(wanted)]
    method_to_variant = {}
    for variant, method_id in methods.items():
        method_to_variant.setdefault(str(method_id), []).append(str(variant))
    ours = summary.set_index(["dataset", "variant"]) if not summary.empty else None
    rows = []
    for r in ref.itertuples(index=False):
        if r.method_id not in method_to_variant:
            continue
        dataset = ref_to_ours_dataset.get(r.dataset_id, r.dataset_id)
        paper_value = pd.to_numeric(r.value, errors="coerce")
        paper_std = pd.to_numeric(r.std, errors="coerce")
        for variant in method_to_variant[r.method_id]:
            mean = std = np.nan
            n = n_undefined = 0
            if ours is not None and (dataset, variant) in ours.index:
                cell = ours.loc[(dataset, variant)]
                mean, std, n = float(cell["mean"]), float(cell["std"]), int(cell["n"])
                n_undefined = int(cell["undefined"]) if "undefined" in cell.index else 0
            diff = mean - paper_value if not (pd.isna(mean) or pd.isna(paper_value)) else np.nan
            diff_std = diff / paper_std if not pd.isna(diff) and not pd.isna(paper_std) and paper_std > 0 else np.nan
            if pd.isna(mean):
                status = STATUS_UNDEFINED if n_undefined else STATUS_NOT_RUN
            elif pd.isna(paper_value):
                status = STATUS_NO_VALUE
            elif not pd.isna(diff_std):
                status = STATUS_OK if abs(diff_std) <= tolerance_std else STATUS_OUT
            elif not pd.isna(paper_std) and paper_std == 0:
                status = STATUS_OK if diff == 0 else STATUS_OUT
            elif tolerance_abs is not None:
                status = STATUS_OK if abs(diff) <= tolerance_abs else STATUS_OUT
            else:
                status = STATUS_NO_STD
            rows.append({"dataset": dataset, "dataset_id": r.dataset_id, "variant": variant,
                         "method_id": r.method_id, "metric": metric,
                         "paper_printed": r.value + (f" ± {r.std}" if r.std else ""), "paper_value": paper_value,
                         "paper_std": paper_std, "ours_mean": mean, "ours_std": std, "n_repeats": n,
                         "difference": diff, "difference_in_std": diff_std, "status": status,
                         "reference_note": r.note if "note" in ref.columns else ""})
    frame = pd.DataFrame(rows, columns=COLUMNS)
    if (frame["paper_std"].isna() & frame["ours_mean"].notna() & frame["paper_value"].notna()).any():
        notes.append("the paper prints no std for some cells: their difference is given in raw units, unjudged"
                     + ("" if tolerance_abs is None else f" (judged against tolerance_abs = {tolerance_abs:g})"))
    return Reproduction(table, metric, tolerance_std, tolerance_abs, frame, notes)


# --- published statistics: pairwise p-value tables and critical-difference figures -------------------------------
STATUS_DISAGREE = "DISAGREES"


@dataclass
class StatComparison:
    """Our test results beside a published p-value table or CD figure; one row per published number."""
    table: str
    metric: str
    what: str
    frame: pd.DataFrame
    columns: list[tuple[str, str]]        # (header, column) shown in Markdown / HTML
    notes: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        st = self.frame["status"]
        return {"cells": int(len(st)), "run": int((st != STATUS_NOT_RUN).sum()), "agree": int((st == STATUS_OK).sum()),
                "disagree": int(st.isin([STATUS_DISAGREE, STATUS_OUT]).sum()), "not_run": int((st == STATUS_NOT_RUN).sum())}

    def not_run(self) -> list[tuple]:
        return [tuple(r) for r in self.frame.loc[self.frame["status"] == STATUS_NOT_RUN, ["block", "item"]].to_numpy()]

    def summary_text(self) -> str:
        c = self.counts()
        return (f"{c['cells']} published {self.what} of {self.table} ({self.metric}): {c['run']} computed, "
                f"{c['agree']} agree, {c['disagree']} disagree, {c['not_run']} not run")

    def to_csv(self) -> str:
        return self.frame.to_csv(index=False)

    def _cells(self, r) -> list[str]:
        out = []
        for _, col in self.columns:
            v = getattr(r, col)
            if isinstance(v, float):
                if pd.isna(v):
                    v = ""
                elif col == "difference":
                    v = _signed(v, 3)
                else:
                    v = f"{v:.3g}" if abs(v) < 0.01 and v != 0 else f"{v:.3f}"
            out.append(str(v))
        return out

    def to_markdown(self) -> str:
        lines = [f"**Reproduction of {self.table}** ({self.what}, {self.metric}): {self.summary_text()}.", ""]
        lines += [f"- {n}" for n in self.notes]
        heads = [h for h, _ in self.columns] + ["status"]
        lines += ["", "| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)]
        for r in self.frame.itertuples(index=False):
            status = {STATUS_OK: "✓ ok", STATUS_NOT_RUN: "_not run_"}.get(r.status, f"**✗ {r.status}**")
            lines.append("| " + " | ".join(self._cells(r) + [status]) + " |")
        return "\n".join(lines) + "\n"

    def to_html(self) -> str:
        import html
        esc = html.escape
        parts = [f"<p class='legend'>{esc(self.summary_text())}</p>"]
        parts += [f"<p class='note'>{esc(n)}</p>" for n in self.notes]
        parts.append("<table class='reproduction'><thead><tr>" + "".join(f"<th>{esc(h)}</th>" for h, _ in self.columns)
                     + "<th>status</th></tr></thead><tbody>")
        for r in self.frame.itertuples(index=False):
            cls = {STATUS_OK: "ok", STATUS_NOT_RUN: "missing"}.get(r.status, "out")
            shown = {STATUS_OK: "✓ ok", STATUS_NOT_RUN: STATUS_NOT_RUN}.get(r.status, "✗ " + r.status)
            parts.append(f"<tr class='{cls}'>" + "".join(f"<td>{esc(c)}</td>" for c in self._cells(r))
                         + f"<td>{esc(shown)}</td></tr>")
        parts.append("</tbody></table>")
        return "\n".join(parts) + "\n"


def _mapping(ref_cfg: dict, where: str, available: set[str]) -> dict[str, str]:
    """reference method_id -> our variant, checked against the ids the reference table has."""
    methods = ref_cfg.get("methods") or {}
    if not isinstance(methods, dict) or not methods:
        raise ConfigError(f"{where}.methods must map our variants to reference method_id values")
    unknown = sorted(set(map(str, methods.values())) - available)
    if unknown:
        raise ConfigError(f"{where}.methods: method_id(s) {', '.join(unknown)} not in {ref_cfg['table']} "
                          f"(available: {', '.join(sorted(available))})")
    out: dict[str, str] = {}
    for variant, method_id in methods.items():
        out.setdefault(str(method_id), str(variant))
    return out


def compare_pvalues(scores: pd.DataFrame, ref: pd.DataFrame, ref_cfg: dict, experiment: str) -> StatComparison:
    """Published pairwise p-values (thesis Tables 6.2/6.4/6.7/6.9) beside ours, same test, no correction.

    A row agrees when our sign notation equals the paper's: both significant at alpha in the same direction, or
    both not significant (the papers print a sign only when p < 0.05).
    """
    from forestbench.report.data import metric_direction
    from forestbench.report.tables import pvalue_table

    where = f"experiments.{experiment}.reference"
    table, metric = str(ref_cfg["table"]), str(ref_cfg["metric"])
    alpha = float(ref_cfg.get("alpha", 0.05))
    ref = ref[ref["metric"] == metric]
    if ref.empty:
        raise ConfigError(f"{where}: metric {metric!r} not in reference table {table}")
    ours_metric = ref_cfg.get("ours", metric)     # the table's metric label may differ from our metric's name
    if not isinstance(ours_metric, str):
        raise ConfigError(f"{where}.ours must be one metric name for a p-value table")
    to_variant = _mapping(ref_cfg, where, set(ref["row_method_id"]) | set(ref["col_method_id"]))
    test_text = " ".join(set(ref["test"])).lower()
    test = "wilcoxon" if "wilcoxon" in test_text else "ttest" if "t-test" in test_text else None
    if test is None:
        raise ConfigError(f"{where}: cannot tell the test of {table} from its 'test' column ({test_text!r})")
    dataset_map = {str(v): str(k) for k, v in (ref_cfg.get("datasets") or {}).items()}
    ref = ref[ref["row_method_id"].isin(to_variant) & ref["col_method_id"].isin(to_variant)]
    blocks_ds = [dataset_map.get(d, d) for d in dict.fromkeys(ref["dataset_id"]) if d]
    hib = metric_direction(scores, ours_metric, None)
    ours = pvalue_table(scores, ours_metric, hib, test, None, None, alpha, list(dict.fromkeys(to_variant.values())),
                        blocks_ds or None)
    by_block = {b.title: b for b in ours.blocks}
    rows = []
    for r in ref.itertuples(index=False):
        block_name = dataset_map.get(r.dataset_id, r.dataset_id) if r.dataset_id else "over datasets"
        rv, cv = to_variant[r.row_method_id], to_variant[r.col_method_id]
        if test == "wilcoxon":
            block = ours.blocks[0] if ours.blocks else None
        else:
            block = by_block.get(block_name)
        p = sign = None
        if block is not None and rv in block.p_values.index and cv in block.p_values.columns:
            p, sign = float(block.p_values.loc[rv, cv]), block.signs.loc[rv, cv]
        paper_sign = r.sign or ""
        status = STATUS_NOT_RUN if p is None else (STATUS_OK if sign == paper_sign else STATUS_DISAGREE)
        rows.append({"block": block_name, "item": f"{rv} vs {cv}", "row_variant": rv, "col_variant": cv,
                     "paper_p": pd.to_numeric(r.p_value, errors="coerce"), "paper_sign": paper_sign,
                     "ours_p": np.nan if p is None else p, "ours_sign": "" if sign is None else sign,
                     "status": status})
    frame = pd.DataFrame(rows, columns=["block", "item", "row_variant", "col_variant", "paper_p", "paper_sign",
                                        "ours_p", "ours_sign", "status"])
    notes = list(ours.notes) + [f"our {test} p-values are uncorrected, like the published table; a row agrees when"
                                f" the sign notation at α = {alpha} is the same"]
    cols = [("block", "block"), ("row vs column", "item"), ("paper p", "paper_p"), ("paper sign", "paper_sign"),
            ("ours p", "ours_p"), ("ours sign", "ours_sign")]
    return StatComparison(table, metric, "pairwise p-values", frame, cols, notes)


def compare_ranks(scores: pd.DataFrame, ref: pd.DataFrame, ref_cfg: dict, experiment: str) -> StatComparison:
    """A published critical-difference figure (average ranks, Friedman p, CD) beside ours.

    Average ranks agree within ``tolerance_rank`` (default 0.5); the Friedman p-values agree when both are on the
    same side of alpha; the CDs agree to the two printed decimals. Ranks are computed over the mapped variants only,
    on the datasets where all of them ran.
    """
    from forestbench import stats
    from forestbench.report.data import complete_rows, metric_direction, score_matrix, summarise

    where = f"experiments.{experiment}.reference"
    table, metric = str(ref_cfg["table"]), str(ref_cfg["metric"])
    alpha = float(ref_cfg.get("alpha", 0.05))
    tol = float(ref_cfg.get("tolerance_rank", 0.5))
    ranks_ref = ref[ref["row_type"] == "average_rank"]
    to_variant = _mapping(ref_cfg, where, set(ranks_ref["method_id"]))
    notes = []
    if len(to_variant) < len(ranks_ref):
        notes.append(f"only {len(to_variant)} of the {len(ranks_ref)} published methods are mapped: average ranks "
                     "depend on the set of methods compared, so they are not comparable")
    variants = list(dict.fromkeys(to_variant.values()))
    matrix = score_matrix(summarise(scores, metric), None, variants)
    complete, dropped = complete_rows(matrix)
    ok = complete.shape[0] >= 2 and complete.shape[1] >= 2
    if dropped:
        notes.append(f"datasets left out (not every variant ran): {', '.join(dropped)}")
    res = stats.friedman_test(complete, metric_direction(scores, metric, None)) if ok else None
    cd = stats.nemenyi_critical_difference(len(variants), complete.shape[0], alpha) if ok else np.nan
    rows = []

    def add(item, paper, ours, status_fn):
        status = STATUS_NOT_RUN if pd.isna(ours) else STATUS_OK if status_fn(paper, ours) else STATUS_DISAGREE
        diff = np.nan if pd.isna(ours) or item == "Friedman p" else ours - paper  # p-values: compared by side of alpha
        rows.append({"block": "average rank" if item in variants else item, "item": item, "paper": paper,
                     "ours": ours, "difference": diff, "status": status})

    for r in ranks_ref.itertuples(index=False):
        if r.method_id in to_variant:
            v = to_variant[r.method_id]
            ours = float(res.average_ranks[v]) if ok else np.nan
            add(v, float(r.average_rank), ours, lambda p, o: abs(o - p) <= tol)
    for r in ref[ref["row_type"] == "friedman_p"].itertuples(index=False):
        if r.value:
            add("Friedman p", float(r.value), res.p_value if ok else np.nan, lambda p, o: (p < alpha) == (o < alpha))
    for r in ref[ref["row_type"] == "critical_distance"].itertuples(index=False):
        if r.value:
            add("critical difference", float(r.value), cd, lambda p, o: round(o, 2) == round(p, 2))
    frame = pd.DataFrame(rows, columns=["block", "item", "paper", "ours", "difference", "status"])
    if ok:
        notes.append(f"ours over {complete.shape[0]} complete dataset(s); rank tolerance {tol:g}")
    cols = [("quantity", "block"), ("variant / item", "item"), ("paper", "paper"), ("ours", "ours"),
            ("ours − paper", "difference")]
    return StatComparison(table, metric, "critical-difference statistics", frame, cols, notes)


def _our_summary(scores: pd.DataFrame, ref_cfg: dict, where: str) -> pd.DataFrame:
    """Our summary for a reference: the metric ``ours`` names (default: the reference's own metric id), or one
    metric per dataset when ``ours`` maps datasets to metrics (a table whose "error" is a different metric per
    dataset)."""
    from forestbench.report.data import summarise

    ours = ref_cfg.get("ours", ref_cfg["metric"])
    if isinstance(ours, str):
        return summarise(scores, ours)
    if not isinstance(ours, dict) or not ours:
        raise ConfigError(f"{where}.ours must be a metric name or a mapping dataset -> metric")
    parts = [s[s["dataset"] == str(ds)] for ds, metric in ours.items() for s in [summarise(scores, str(metric))]]
    return pd.concat(parts, ignore_index=True) if parts else summarise(scores, str(ref_cfg["metric"]))


def compare_any(scores: pd.DataFrame, ref_cfg: dict, reference_dir: Path, experiment: str,
                datasets: list | None = None):
    """Dispatch on the kind of the reference table: results, pairwise p-values or a CD figure. ``datasets`` (the
    experiment's) restricts a results table to their cells."""
    where, table, _ = _entry(ref_cfg, experiment)
    ref, kind = read_reference(reference_dir, table)
    if kind == "results":
        return compare(_our_summary(scores, ref_cfg, where), ref_cfg, reference_dir, experiment, datasets)
    if kind == "pvalues":
        return compare_pvalues(scores, ref, ref_cfg, experiment)
    if kind == "grid":
        from forestbench.report.teaching import compare_grid
        return compare_grid(scores, ref, ref_cfg, experiment)
    return compare_ranks(scores, ref, ref_cfg, experiment)
