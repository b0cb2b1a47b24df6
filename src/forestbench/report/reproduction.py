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
                f"{c['within_tolerance']} within {self.tolerance_std:g} published std, "
                f"{c['out_of_tolerance']} out of tolerance, {c['no_published_std']} without published std, "
                f"{c['not_run']} not run")

    def _rows(self):
        for r in self.frame.itertuples(index=False):
            ours = "" if pd.isna(r.ours_mean) else f"{r.ours_mean:.3f}" + (
                "" if pd.isna(r.ours_std) else f" ± {r.ours_std:.3f}")
            paper = r.paper_printed
            diff = "" if pd.isna(r.difference) else f"{r.difference:+.3f}"
            dstd = "" if pd.isna(r.difference_in_std) else f"{r.difference_in_std:+.2f}"
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


def load_reference(reference_dir: Path, table: str) -> pd.DataFrame:
    path = Path(reference_dir) / f"{table}.csv"
    if not path.exists():
        raise ConfigError(f"reference table {table!r}: {path} does not exist")
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    needed = {"dataset_id", "method_id", "metric", "value", "std"}
    if not needed <= set(frame.columns):
        raise ConfigError(f"reference table {path} is not a results table (needs columns "
                          f"{', '.join(sorted(needed))}; has {', '.join(frame.columns)})")
    return frame


def compare(summary: pd.DataFrame, ref_cfg: dict, reference_dir: Path, experiment: str) -> Reproduction:
    """Compare ``summary`` (dataset, variant, mean, std, n for the reference metric) with the reference table."""
    where = f"experiments.{experiment}.reference"
    if not isinstance(ref_cfg, dict):
        raise ConfigError(f"{where} must be a mapping, got {type(ref_cfg).__name__}")
    for key in ("table", "metric", "methods"):
        if key not in ref_cfg:
            raise ConfigError(f"{where}: missing key {key!r}")
    table, metric = str(ref_cfg["table"]), str(ref_cfg["metric"])
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
            n = 0
            if ours is not None and (dataset, variant) in ours.index:
                cell = ours.loc[(dataset, variant)]
                mean, std, n = float(cell["mean"]), float(cell["std"]), int(cell["n"])
            diff = mean - paper_value if not (pd.isna(mean) or pd.isna(paper_value)) else np.nan
            diff_std = diff / paper_std if not pd.isna(diff) and not pd.isna(paper_std) and paper_std > 0 else np.nan
            if pd.isna(mean):
                status = STATUS_NOT_RUN
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
