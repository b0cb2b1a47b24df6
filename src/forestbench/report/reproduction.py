"""Our numbers beside the published ones, cell by cell.

For each reference cell (dataset, method) of the configured metric: our mean ± std, the paper's value ± std, the
difference ours - paper and that difference in units of the published std. A cell is out of tolerance when
|difference| / published std > ``tolerance_std``. When the paper prints no std the difference is reported in raw
units (and relative to the published value) and the cell is judged against ``tolerance_abs`` (or the relative
``tolerance_rel``) if the configuration
gives one, otherwise it is left unjudged ("no published std"). Cells we have not run are listed as "not run".
Printed "mean" rows (DTE tables) are summaries, not cells, and are left out. An entry with ``protocol: reduced``
(the experiment runs fewer trees, splits or no tuning) judges nothing: its computed cells are "comparison only".

The statuses and the comparison tables live in :mod:`forestbench.report.verdicts`, the reading and checking of the
reference tables in :mod:`forestbench.report.reference_tables`; their public names are re-exported here.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from forestbench.errors import ConfigError
from forestbench.report.reference_tables import (KIND_COLUMNS, PROTOCOLS, _entry, _mapping, cells_tables,
                                                 check_reference, check_references, entry_protocol, load_reference,
                                                 read_reference)
from forestbench.report.teaching import compare_grid
from forestbench.report.verdicts import (COLUMNS, STATUS_COMPARISON, STATUS_DISAGREE, STATUS_NO_STD, STATUS_PARTIAL,
                                         STATUS_NO_VALUE, STATUS_NOT_RUN, STATUS_OK, STATUS_OUT, STATUS_TOO_FEW,
                                         STATUS_UNDEFINED, Protocol, Reproduction, StatComparison)

__all__ = ["COLUMNS", "KIND_COLUMNS", "PROTOCOLS", "STATUS_COMPARISON", "STATUS_DISAGREE", "STATUS_NO_STD",
           "STATUS_NO_VALUE", "STATUS_NOT_RUN", "STATUS_OK", "STATUS_OUT", "STATUS_TOO_FEW", "STATUS_UNDEFINED",
           "Protocol", "Reproduction", "StatComparison", "check_reference", "check_references", "compare",
           "compare_any", "compare_grid", "compare_pvalues", "compare_ranks", "entry_protocol", "load_reference",
           "read_reference"]

def _short_list(items: list[str], limit: int = 8) -> str:
    return ", ".join(items[:limit]) + (f", ... ({len(items) - limit} more)" if len(items) > limit else "")




def compare(summary: pd.DataFrame, ref_cfg: dict, reference_dir: Path, experiment: str,
            datasets: list | None = None) -> Reproduction:
    """Compare ``summary`` (dataset, variant, mean, std, n for the reference metric) with the reference table.

    With ``datasets`` (the experiment's own list) only the published cells of those datasets are listed: an
    experiment that runs one row of a table is not reported as missing the others."""
    from forestbench.report.data import full_repeats

    where, table, metric = _entry(ref_cfg, experiment)
    methods: dict = ref_cfg["methods"] or {}
    if not isinstance(methods, dict) or not methods:
        raise ConfigError(f"{where}.methods must map our variants to reference method_id values")
    tolerance_std = float(ref_cfg.get("tolerance_std", 1.0))
    tolerance_abs = ref_cfg.get("tolerance_abs")
    tolerance_abs = None if tolerance_abs is None else float(tolerance_abs)
    tolerance_rel = ref_cfg.get("tolerance_rel")
    tolerance_rel = None if tolerance_rel is None else float(tolerance_rel)
    if tolerance_abs is not None and tolerance_rel is not None:
        raise ConfigError(f"{where}: give tolerance_abs or tolerance_rel, not both")
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
    # the repeats a complete cell has (a cell with fewer is a run under way, whose mean is not that of the published
    # protocol's splits)
    full = {} if summary.empty else dict(zip(zip(summary["dataset"], summary["variant"]), full_repeats(summary)))
    partial = []
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
            diff_rel = diff / abs(paper_value) if not pd.isna(diff) and paper_value != 0 else np.nan
            if pd.isna(mean):
                status = STATUS_UNDEFINED if n_undefined else STATUS_NOT_RUN
            elif n + n_undefined < full.get((dataset, variant), 0):
                status = STATUS_PARTIAL
                partial.append(f"{dataset} / {variant} ({n + n_undefined} of {full[dataset, variant]})")
            elif pd.isna(paper_value):
                status = STATUS_NO_VALUE
            elif not pd.isna(diff_std):
                status = STATUS_OK if abs(diff_std) <= tolerance_std else STATUS_OUT
            elif not pd.isna(paper_std) and paper_std == 0:
                status = STATUS_OK if diff == 0 else STATUS_OUT
            elif tolerance_abs is not None:
                status = STATUS_OK if abs(diff) <= tolerance_abs else STATUS_OUT
            elif tolerance_rel is not None and not pd.isna(diff_rel):
                status = STATUS_OK if abs(diff_rel) <= tolerance_rel else STATUS_OUT
            else:
                status = STATUS_NO_STD
            rows.append({"dataset": dataset, "dataset_id": r.dataset_id, "variant": variant,
                         "method_id": r.method_id, "metric": metric,
                         "paper_printed": r.value + (f" ± {r.std}" if r.std else ""), "paper_value": paper_value,
                         "paper_std": paper_std, "ours_mean": mean, "ours_std": std, "n_repeats": n,
                         "difference": diff, "difference_relative": diff_rel, "difference_in_std": diff_std,
                         "status": status, "reference_note": r.note if "note" in ref.columns else ""})
    frame = pd.DataFrame(rows, columns=COLUMNS)
    if partial:
        notes.append(f"{len(partial)} cell(s) have fewer repeats than the others and are shown unjudged: "
                     + _short_list(partial))
    if (frame["paper_std"].isna() & frame["ours_mean"].notna() & frame["paper_value"].notna()).any():
        notes.append("the paper prints no std for some cells: their difference is given in raw units and "
                     "relative to the published value, unjudged"
                     + (f" (judged against tolerance_abs = {tolerance_abs:g})" if tolerance_abs is not None else
                        f" (judged against tolerance_rel = {tolerance_rel:g} of the published value)"
                        if tolerance_rel is not None else ""))
    protocol = entry_protocol(ref_cfg, where)
    return Reproduction(table, metric, tolerance_std, tolerance_abs, protocol.apply(frame), notes, protocol,
                        tolerance_rel)



# --- published statistics: pairwise p-value tables and critical-difference figures -------------------------------
def compare_pvalues(scores: pd.DataFrame, ref: pd.DataFrame, ref_cfg: dict, experiment: str,
                    reference_dir: Path | None = None) -> StatComparison:
    """Published pairwise p-values (thesis Tables 6.2/6.4/6.7/6.9) beside ours, same test, no correction.

    A row agrees when our sign notation equals the paper's: both significant at alpha in the same direction, or
    both not significant (the papers print a sign only when p < 0.05).

    A test over datasets (Wilcoxon) printed for more datasets than we ran is not what a partial run can be held
    to. With ``cells: <results table>`` (the published table whose means the test paired) the published means of
    exactly the datasets where every mapped variant of ours ran are tested again, and our signs are judged against
    those; the printed p-values (every published dataset) are shown beside, not judged. Whenever the datasets
    tested are too few for the test to reach alpha at all (Wilcoxon: fewer than 6 at 0.05), the rows are shown
    and left unjudged, since both sides can only be "not significant".
    """
    from forestbench import stats
    from forestbench.report.data import complete_rows, metric_direction, score_matrix, summarise, without_partial
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
    cells = cells_tables(ref_cfg, where)
    cells_table = " + ".join(cells) if cells else None
    if cells_table is not None and test != "wilcoxon":
        raise ConfigError(f"{where}.cells: only a test over datasets (Wilcoxon) re-tests published cells; {table} "
                          "tests repeats within each dataset")
    dataset_map = {str(v): str(k) for k, v in (ref_cfg.get("datasets") or {}).items()}
    ref = ref[ref["row_method_id"].isin(to_variant) & ref["col_method_id"].isin(to_variant)]
    blocks_ds = [dataset_map.get(d, d) for d in dict.fromkeys(ref["dataset_id"]) if d]
    hib = metric_direction(scores, ours_metric, None)
    variants = list(dict.fromkeys(to_variant.values()))
    retested = None                       # the published cells' own test over the datasets we compare
    notes_cells: list[str] = []
    if cells_table is not None:
        if reference_dir is None:
            raise ConfigError(f"{where}: cells needs the reference folder")
        published, pub_higher = _published_matrix(reference_dir, cells, metric, where)
        missing_ids = sorted(set(to_variant) - set(published.columns))
        if missing_ids:
            raise ConfigError(f"{where}.cells: {cells_table} has no {metric} cells of {', '.join(missing_ids)}")
        summary, _ = without_partial(summarise(scores, ours_metric))
        complete, _ = complete_rows(score_matrix(summary, None, variants))
        by_variant = {v: mid for mid, v in to_variant.items()}
        to_pub = {str(k): str(v) for k, v in (ref_cfg.get("datasets") or {}).items()}
        ours_c, pub_c, unpublished = _with_published_cells(complete, published, {by_variant[v]: v for v in variants},
                                                           to_pub)
        blocks_ds = [str(d) for d in ours_c.index]
        if len(blocks_ds) >= 2:
            retested = stats.pairwise_test(pub_c, test, pub_higher, None, alpha)
        notes_cells.append(f"the published means of {cells_table} tested again over the {len(blocks_ds)} dataset(s) "
                           f"we compare ({', '.join(blocks_ds) or 'none'}) are what our signs are judged against; "
                           "the printed p-values (every published dataset) are shown beside, not judged")
        if unpublished:
            notes_cells.append(f"datasets left out (a compared method has no published cell): "
                               f"{_short_list(unpublished)}")
    ours = pvalue_table(scores, ours_metric, hib, test, None, None, alpha, variants, blocks_ds or None)
    if cells_table is not None and retested is None:
        ours.blocks = []                  # fewer than 2 datasets with published cells: nothing to compare
    by_block = {b.title: b for b in ours.blocks}
    too_few = set()
    for b in ours.blocks:
        if stats.smallest_p_value(test, b.n_units) >= alpha:
            too_few.add(b.title)
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
        printed_p, printed_sign = pd.to_numeric(r.p_value, errors="coerce"), r.sign or ""
        paper_p, paper_sign = printed_p, printed_sign
        if cells_table is not None:
            paper_p = np.nan if retested is None else float(retested.p_values.loc[rv, cv])
            paper_sign = "" if retested is None else retested.signs.loc[rv, cv]
        if p is None:
            status = STATUS_NOT_RUN
        elif block.title in too_few:
            status = STATUS_TOO_FEW
        else:
            status = STATUS_OK if sign == paper_sign else STATUS_DISAGREE
        rows.append({"block": block_name, "item": f"{rv} vs {cv}", "row_variant": rv, "col_variant": cv,
                     "printed_p": printed_p, "printed_sign": printed_sign, "paper_p": paper_p,
                     "paper_sign": paper_sign, "ours_p": np.nan if p is None else p,
                     "ours_sign": "" if sign is None else sign, "status": status})
    frame = pd.DataFrame(rows, columns=["block", "item", "row_variant", "col_variant", "printed_p", "printed_sign",
                                        "paper_p", "paper_sign", "ours_p", "ours_sign", "status"])
    notes = list(ours.notes) + notes_cells + [
        f"our {test} p-values are uncorrected, like the published table; a row agrees when the sign notation at "
        f"α = {alpha} is the same"]
    if too_few:
        floor = ", ".join(f"{b.title}: smallest attainable p {stats.smallest_p_value(test, b.n_units):.3g}"
                          for b in ours.blocks if b.title in too_few)
        notes.append(f"unjudged: the {test} test cannot reach α = {alpha} on so few paired units ({floor})")
    if cells_table is not None:
        cols = [("block", "block"), ("row vs column", "item"), ("table p (all published)", "printed_p"),
                ("table sign", "printed_sign"), ("paper p, re-tested", "paper_p"),
                ("paper sign, re-tested", "paper_sign"), ("ours p", "ours_p"), ("ours sign", "ours_sign")]
        what = f"pairwise p-values (cells of {cells_table} re-tested)"
    else:
        cols = [("block", "block"), ("row vs column", "item"), ("paper p", "paper_p"), ("paper sign", "paper_sign"),
                ("ours p", "ours_p"), ("ours sign", "ours_sign")]
        what = "pairwise p-values"
    return StatComparison(table, metric, what, frame, cols, notes)


def compare_ranks(scores: pd.DataFrame, ref: pd.DataFrame, ref_cfg: dict, experiment: str,
                  reference_dir: Path | None = None) -> StatComparison:
    """A published critical-difference figure (average ranks, Friedman p, CD) beside ours.

    Average ranks agree within ``tolerance_rank`` (default 0.5); the Friedman p-values agree when both are on the
    same side of alpha; the CDs agree to the two printed decimals. Ranks are computed over the mapped variants only,
    on the datasets where all of them ran.

    With ``cells: <results table>`` (the published table the figure ranks) the figure's own numbers, which rank
    every published method over every published dataset, are not what a partial run can be held to: average
    ranks depend on the set of methods and datasets compared. The published cells are then re-ranked over exactly
    the methods we ran and the datasets where all of them ran (and are published), and our ranks are judged
    against those (see :func:`_compare_reranked`).
    """
    from forestbench import stats
    from forestbench.report.data import (complete_rows, metric_direction, score_matrix, summarise,
                                         without_partial)

    where = f"experiments.{experiment}.reference"
    table, metric = str(ref_cfg["table"]), str(ref_cfg["metric"])
    alpha = float(ref_cfg.get("alpha", 0.05))
    tol = float(ref_cfg.get("tolerance_rank", 0.5))
    ranks_ref = ref[ref["row_type"] == "average_rank"]
    to_variant = _mapping(ref_cfg, where, set(ranks_ref["method_id"]))
    if ref_cfg.get("cells") is not None:
        if reference_dir is None:
            raise ConfigError(f"{where}: cells needs the reference folder")
        return _compare_reranked(scores, ref_cfg, where, Path(reference_dir), ranks_ref, to_variant, alpha, tol)
    notes = []
    if len(to_variant) < len(ranks_ref):
        notes.append(f"only {len(to_variant)} of the {len(ranks_ref)} published methods are mapped: average ranks "
                     "depend on the set of methods compared, so they are not comparable")
    variants = list(dict.fromkeys(to_variant.values()))
    summary, partial = without_partial(summarise(scores, metric))
    matrix = score_matrix(summary, None, variants)
    complete, dropped = complete_rows(matrix)
    ok = complete.shape[0] >= 2 and complete.shape[1] >= 2
    if dropped:
        notes.append(f"datasets left out (not every variant ran all repeats): {', '.join(dropped)}")
    if partial:
        notes.append(f"partial cells, counted as not run: {_short_list(partial)}")
    res = stats.friedman_test(complete, metric_direction(scores, metric, None)) if ok else None
    cd = stats.nemenyi_critical_difference(len(variants), complete.shape[0], alpha) if ok else np.nan
    rows = []

    friedman_too_few = ok and stats.smallest_p_value("friedman", complete.shape[0], complete.shape[1]) >= alpha

    def add(item, paper, ours, status_fn):
        status = STATUS_NOT_RUN if pd.isna(ours) else STATUS_OK if status_fn(paper, ours) else STATUS_DISAGREE
        if item == "Friedman p" and friedman_too_few and status != STATUS_NOT_RUN:
            status = STATUS_TOO_FEW
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


def _published_matrix(reference_dir: Path, cells: list[str], metric: str, where: str) -> tuple[pd.DataFrame, bool]:
    """dataset_id x method_id of the published values of ``metric`` in the results table(s) ``cells`` (printed
    'mean' rows left out), and whether higher is better."""
    name = " + ".join(cells)
    pub = pd.concat([load_reference(reference_dir, c) for c in cells], ignore_index=True)
    pub = pub[(pub["metric"] == metric) & (pub["dataset"].str.lower() != "mean")]
    if pub.empty:
        raise ConfigError(f"{where}.cells: metric {metric!r} not in reference table {name}")
    directions = set(pub["higher_is_better"].str.lower())
    if len(directions) != 1 or not directions <= {"true", "false"}:
        raise ConfigError(f"{where}.cells: {name} must give one higher_is_better (true / false) for "
                          f"{metric}, found {', '.join(sorted(directions))}")
    values = pd.to_numeric(pub["value"], errors="coerce")
    matrix = (pub.assign(value=values).pivot_table(index="dataset_id", columns="method_id", values="value",
                                                   aggfunc="first"))
    return matrix.astype(float), directions == {"true"}


def _with_published_cells(complete: pd.DataFrame, published: pd.DataFrame, to_variant: dict[str, str],
                          dataset_map: dict[str, str]) -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
    """Our complete datasets (rows of ``complete``) that have a published cell for every method of ``to_variant``
    (method_id -> our variant), the published cells of those datasets with our variant names, and the datasets
    left out for want of a published cell. ``dataset_map``: our dataset -> the table's dataset_id."""
    pub_rows = published.reindex(index=[dataset_map.get(str(d), str(d)) for d in complete.index],
                                 columns=list(to_variant))
    has_cells = ~pub_rows.isna().any(axis=1).to_numpy()
    unpublished = [str(d) for d, ok in zip(complete.index, has_cells) if not ok]
    ours_c = complete[has_cells]
    pub_c = pub_rows[has_cells].set_axis(list(ours_c.index), axis=0).set_axis(list(to_variant.values()), axis=1)
    return ours_c, pub_c, unpublished


def _compare_reranked(scores: pd.DataFrame, ref_cfg: dict, where: str, reference_dir: Path, ranks_ref: pd.DataFrame,
                      to_variant: dict[str, str], alpha: float, tol: float) -> StatComparison:
    """Our average ranks beside the published cells of ``cells`` re-ranked over the same methods and datasets.

    Compared: the mapped variants that ran on at least one dataset (a method that never runs, e.g. one without an
    implementation, is listed as not run instead of emptying the comparison), on the datasets where every one of
    them ran and the published table has all of their cells. One row per published method (the figure's own rank
    beside, for reference), and the Friedman p of both matrices at ``alpha``, judged by side. The critical
    difference is not a row: it depends only on the number of methods and datasets, so it is the same for both.
    """
    from forestbench import stats
    from forestbench.report.data import (complete_rows, metric_direction, score_matrix, summarise,
                                         without_partial)

    table, metric = str(ref_cfg["table"]), str(ref_cfg["metric"])
    cells = cells_tables(ref_cfg, where)
    cells_table = " + ".join(cells)
    dataset_map = {str(k): str(v) for k, v in (ref_cfg.get("datasets") or {}).items()}
    published, pub_higher = _published_matrix(reference_dir, cells, metric, where)
    missing_ids = sorted(set(to_variant) - set(published.columns))
    if missing_ids:
        raise ConfigError(f"{where}.cells: {cells_table} has no {metric} cells of {', '.join(missing_ids)}")
    summary, partial = without_partial(summarise(scores, metric))
    ran = set(summary.loc[summary["mean"].notna(), "variant"].astype(str))
    compared = {mid: v for mid, v in to_variant.items() if v in ran}
    never = [v for v in to_variant.values() if v not in ran]
    ours = score_matrix(summary, None, list(compared.values()))
    complete, dropped = complete_rows(ours)
    ours_c, pub_c, unpublished = _with_published_cells(complete, published, compared, dataset_map)
    n, k = ours_c.shape
    ok = n >= 2 and k >= 2
    ours_res = stats.friedman_test(ours_c, metric_direction(scores, metric, pub_higher)) if ok else None
    pub_res = stats.friedman_test(pub_c, pub_higher) if ok else None

    rows = []
    for r in ranks_ref.itertuples(index=False):
        if r.method_id not in to_variant:
            continue
        v = to_variant[r.method_id]
        paper = float(pub_res.average_ranks[v]) if ok and v in compared.values() else np.nan
        mine = float(ours_res.average_ranks[v]) if ok and v in compared.values() else np.nan
        status = STATUS_NOT_RUN if pd.isna(mine) else STATUS_OK if abs(mine - paper) <= tol else STATUS_DISAGREE
        rows.append({"block": "average rank", "item": v, "figure": float(r.average_rank), "paper": paper,
                     "ours": mine, "difference": mine - paper, "status": status})
    p_paper, p_ours = (pub_res.p_value, ours_res.p_value) if ok else (np.nan, np.nan)
    p_status = (STATUS_NOT_RUN if not ok else
                STATUS_TOO_FEW if stats.smallest_p_value("friedman", n, k) >= alpha else
                STATUS_OK if (p_paper < alpha) == (p_ours < alpha) else STATUS_DISAGREE)
    rows.append({"block": "Friedman p", "item": "Friedman p", "figure": np.nan, "paper": p_paper, "ours": p_ours,
                 "difference": np.nan, "status": p_status})
    frame = pd.DataFrame(rows, columns=["block", "item", "figure", "paper", "ours", "difference", "status"])

    notes = [f"the published cells of {cells_table} re-ranked over the methods and datasets we compare; the "
             "figure's own ranks (every published method and dataset) are shown beside, not judged"]
    if never:
        notes.append(f"not run on any dataset, hence left out of the ranking: {', '.join(never)}")
    if dropped:
        notes.append(f"datasets left out (not every compared variant ran all repeats): {_short_list(dropped)}")
    if partial:
        notes.append(f"partial cells, counted as not run: {_short_list(partial)}")
    if unpublished:
        notes.append(f"datasets left out (a compared method has no published cell): {_short_list(unpublished)}")
    if ok:
        cd = stats.nemenyi_critical_difference(k, n, alpha)
        notes.append(f"{k} methods over {n} dataset(s) ({', '.join(map(str, ours_c.index))}); rank tolerance "
                     f"{tol:g}; Friedman p judged by its side of alpha = {alpha:g}; critical difference {cd:.3f} "
                     "for both (it depends only on the numbers of methods and datasets)")
    cols = [("quantity", "block"), ("variant / item", "item"), ("figure (all published)", "figure"),
            ("paper, re-ranked", "paper"), ("ours", "ours"), ("ours − paper", "difference")]
    return StatComparison(table, metric, f"critical-difference statistics (cells of {cells_table} re-ranked)", frame,
                          cols, notes)


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
                datasets: list | None = None, protocol_name: str = ""):
    """Dispatch on the kind of the reference table: results, pairwise p-values, a CD figure or a parameter grid.
    ``datasets`` (the experiment's) restricts a results table to their cells; ``protocol_name`` (the experiment's
    ``protocol``) is stated beside the published protocol. Under ``protocol: reduced`` nothing is judged."""
    result = _compare_kind(scores, ref_cfg, reference_dir, experiment, datasets)
    where = f"experiments.{experiment}.reference"
    repeats = int(scores["repeat"].nunique()) if "repeat" in scores.columns and len(scores) else 0
    result.protocol = entry_protocol(ref_cfg, where, protocol_name, repeats)
    result.frame = result.protocol.apply(result.frame)
    return result


def _compare_kind(scores: pd.DataFrame, ref_cfg: dict, reference_dir: Path, experiment: str,
                  datasets: list | None = None):
    where, table, _ = _entry(ref_cfg, experiment)
    ref, kind = read_reference(reference_dir, table)
    if kind == "results":
        return compare(_our_summary(scores, ref_cfg, where), ref_cfg, reference_dir, experiment, datasets)
    if kind == "pvalues":
        return compare_pvalues(scores, ref, ref_cfg, experiment, reference_dir)
    if kind == "grid":
        return compare_grid(scores, ref, ref_cfg, experiment)
    return compare_ranks(scores, ref, ref_cfg, experiment, reference_dir)

