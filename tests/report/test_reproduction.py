"""Our numbers beside the published ones."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from forestbench.errors import ConfigError
from forestbench.report import reproduction
from forestbench.report.data import load_scores, summarise

from report_fixtures import EXPERIMENT_CFG, MISSING, OFF_CELL, REFERENCE_DIR, thesis_lrap_scores


def test_compare_statuses_and_std_units(scores_csv):
    summary = summarise(load_scores(scores_csv, "table_5_1"), "lrap")
    rep = reproduction.compare(summary, EXPERIMENT_CFG["reference"], REFERENCE_DIR, "table_5_1")
    frame = rep.frame.set_index(["dataset", "variant"])
    assert len(frame) == 24 * 4  # every published cell of the four methods
    off = frame.loc[OFF_CELL]
    assert off["status"] == reproduction.STATUS_OUT
    assert off["difference_in_std"] == pytest.approx(10.0)
    assert off["paper_printed"] == "0.875 ± 0.007"
    ok = frame.loc[("yeast", "rf")]
    assert ok["status"] == reproduction.STATUS_OK and abs(ok["difference"]) < 1e-12
    for cell in MISSING:
        assert frame.loc[cell, "status"] == reproduction.STATUS_NOT_RUN
    assert frame.loc[("bibtex", "rf"), "status"] == reproduction.STATUS_NOT_RUN
    counts = rep.counts()
    assert counts == {"cells": 96, "run": 22, "within_tolerance": 21, "out_of_tolerance": 1, "not_run": 74,
                      "no_published_std": 0, "no_published_value": 0, "undefined": 0, "judged": 22,
                      "judged_with_std": 22, "within_2_std": 21, "comparison_only": 0, "reduced_protocol": 0,
                      "partial": 0}
    md = rep.to_markdown()
    assert "OUT OF TOLERANCE" in md and "- medical / rf-gaussian-q1" in md and "Cells not yet run (74)" in md


def test_tolerance_is_configurable(scores_csv):
    summary = summarise(load_scores(scores_csv, "table_5_1"), "lrap")
    cfg = dict(EXPERIMENT_CFG["reference"], tolerance_std=12.0)
    rep = reproduction.compare(summary, cfg, REFERENCE_DIR, "table_5_1")
    assert rep.counts()["out_of_tolerance"] == 0


def test_no_published_std_reported_in_raw_units():
    # thesis Table 6.3 prints no std for half_macro_r2
    summary = pd.DataFrame({"dataset": ["friedman1_chain"], "variant": ["mort"], "mean": [0.627], "std": [0.01],
                            "n": [5]})
    cfg = {"table": "thesis_table_6_3", "metric": "half_macro_r2", "methods": {"mort": "gbmort"}}
    rep = reproduction.compare(summary, cfg, REFERENCE_DIR, "t63")
    row = rep.frame.set_index(["dataset", "variant"]).loc[("friedman1_chain", "mort")]
    assert row["status"] == reproduction.STATUS_NO_STD
    assert row["difference"] == pytest.approx(0.627 - 0.617)
    assert np.isnan(row["difference_in_std"])
    assert any("no std" in n for n in rep.notes)
    judged = reproduction.compare(summary, dict(cfg, tolerance_abs=0.005), REFERENCE_DIR, "t63")
    assert judged.frame.set_index(["dataset", "variant"]).loc[("friedman1_chain", "mort"), "status"] == \
        reproduction.STATUS_OUT
    # relative: 0.010 / 0.617 = 1.6 % of the published value
    for rel, status in ((0.01, reproduction.STATUS_OUT), (0.02, reproduction.STATUS_OK)):
        judged = reproduction.compare(summary, dict(cfg, tolerance_rel=rel), REFERENCE_DIR, "t63")
        assert judged.frame.set_index(["dataset", "variant"]).loc[("friedman1_chain", "mort"), "status"] == status
        assert f"{rel:.0%} of the published value" in judged.summary_text()
    with pytest.raises(ConfigError, match="tolerance_abs or tolerance_rel, not both"):
        reproduction.compare(summary, dict(cfg, tolerance_rel=0.1, tolerance_abs=0.1), REFERENCE_DIR, "t63")


def test_dataset_mapping_and_mean_rows():
    summary = pd.DataFrame({"dataset": ["wq"], "variant": ["xte"], "mean": [0.9], "std": [np.nan], "n": [1]})
    cfg = {"table": "dte_table_4", "metric": "arrmse", "methods": {"xte": "x_te"},
           "datasets": {"wq": "water_quality"}, "tolerance_abs": 0.5}
    rep = reproduction.compare(summary, cfg, REFERENCE_DIR, "dte4")
    frame = rep.frame
    assert "mean" not in set(frame["dataset_id"])
    assert any("'mean'" in n for n in rep.notes)
    row = frame[frame["dataset"] == "wq"].iloc[0]
    assert row["dataset_id"] == "water_quality" and row["status"] == reproduction.STATUS_OK


def test_a_cell_with_fewer_repeats_than_the_others_is_shown_unjudged():
    """A row still running (sf1 at 2 of 10 folds) is not judged against the published 10-fold mean."""
    summary = pd.DataFrame({"dataset": ["andro", "sf1"], "variant": ["xte", "xte"], "mean": [0.931, 2.0],
                            "std": [0.1, 0.1], "n": [10, 2]})
    cfg = {"table": "dte_table_4", "metric": "arrmse", "methods": {"xte": "x_te"}, "tolerance_rel": 0.1}
    rep = reproduction.compare(summary, cfg, REFERENCE_DIR, "dte4", datasets=["andro", "sf1"])
    status = rep.frame.set_index("dataset")["status"]
    assert status["andro"] == reproduction.STATUS_OK and status["sf1"] == reproduction.STATUS_PARTIAL
    counts = rep.counts()
    assert (counts["run"], counts["judged"], counts["out_of_tolerance"], counts["partial"]) == (2, 1, 0, 1)
    assert any("sf1 / xte (2 of 10)" in note for note in rep.notes)
    # sf1 alone, at 2 of its protocol's 10 folds: told by the split count the run records give
    alone = summary[summary["dataset"] == "sf1"]
    assert reproduction.compare(alone, cfg, REFERENCE_DIR, "dte4").counts()["partial"] == 0    # nothing to tell by
    told = reproduction.compare(alone.assign(n_splits=10), cfg, REFERENCE_DIR, "dte4")
    assert told.counts()["partial"] == 1 and any("sf1 / xte (2 of 10)" in note for note in told.notes)


@pytest.mark.parametrize("cfg,match", [
    ({"table": "no_such_table", "metric": "lrap", "methods": {"a": "rf"}}, "does not exist"),
    ({"table": "thesis_table_5_1", "metric": "nope", "methods": {"a": "rf"}}, "metric 'nope'"),
    ({"table": "thesis_table_5_1", "metric": "lrap", "methods": {"a": "zzz"}}, "zzz"),
    ({"table": "thesis_table_5_1", "metric": "lrap"}, "missing key 'methods'"),
    ({"table": "thesis_table_6_7", "metric": "lrap", "methods": {"a": "rf"}}, "not a results table"),
])
def test_bad_reference_config(cfg, match):
    empty = pd.DataFrame(columns=["dataset", "variant", "mean", "std", "n"])
    with pytest.raises(ConfigError, match=match):
        reproduction.compare(empty, cfg, REFERENCE_DIR, "x")


def test_reference_tables_are_all_present():
    ours = sorted(p.name for p in REFERENCE_DIR.iterdir())
    assert len([n for n in ours if n.endswith(".csv")]) == 34 and "README.md" in ours


def test_compare_cd_figure_6_7():
    scores = thesis_lrap_scores()
    ids = sorted(set(scores["variant"]))
    cfg = {"table": "thesis_figure_6_7_cd", "metric": "lrap", "methods": {i: i for i in ids}}
    rep = reproduction.compare_any(scores, cfg, REFERENCE_DIR, "fig67")
    frame = rep.frame.set_index("item")
    assert (frame["status"] == reproduction.STATUS_OK).all(), frame
    assert frame.loc["critical difference", "ours"] == pytest.approx(2.291, abs=1e-3)
    assert frame.loc["Friedman p", "ours"] == pytest.approx(4.7e-11, rel=0.03)
    assert frame.loc["gbrt_relabel_rpo_gaussian", "difference"] == pytest.approx(0, abs=1e-4)
    assert rep.counts() == {"cells": 10, "run": 10, "agree": 10, "disagree": 0, "not_run": 0, "judged": 10,
                            "comparison_only": 0, "too_few_datasets": 0, "reduced_protocol": 0}
    # a sub-set of the methods: flagged as not comparable
    partial = reproduction.compare_any(scores, dict(cfg, methods={"gbmort": "gbmort", "mo_rf": "mo_rf"}),
                                       REFERENCE_DIR, "fig67")
    assert any("not comparable" in n for n in partial.notes)
    # nothing run: every published number is listed as not run
    empty = reproduction.compare_any(scores.iloc[:0], cfg, REFERENCE_DIR, "fig67")
    assert empty.counts()["not_run"] == 10


def test_compare_wilcoxon_table_6_7():
    scores = thesis_lrap_scores()
    ids = sorted(set(scores["variant"]))
    cfg = {"table": "thesis_table_6_7", "metric": "lrap", "methods": {i: i for i in ids}}
    rep = reproduction.compare_any(scores, cfg, REFERENCE_DIR, "t67")
    assert len(rep.frame) == 56  # both triangles of the 8 x 8 matrix, as printed
    c = rep.counts()
    # the paper tested unrounded scores, yet every sign notation is reproduced from the printed means
    assert c["run"] == 56 and c["agree"] == 56
    row = rep.frame[(rep.frame.row_variant == "br_gbrt") & (rep.frame.col_variant == "gbrt_relabel_rpo_gaussian")]
    assert row.iloc[0]["paper_sign"] == "<" and row.iloc[0]["ours_sign"] == "<"
    assert "✓ ok" in rep.to_markdown() and "DISAGREES" not in rep.to_markdown()


def test_wilcoxon_table_6_7_retests_published_cells_over_the_datasets_run():
    """With ``cells`` the printed Table 6.5 means of the datasets we ran are tested again and our signs judged
    against those; the printed p-values (21 datasets) are shown beside. Fewer than 6 datasets: unjudged."""
    scores = thesis_lrap_scores()
    ids = sorted(set(scores["variant"]))
    cfg = {"table": "thesis_table_6_7", "metric": "lrap", "methods": {i: i for i in ids},
           "cells": ["thesis_table_6_5", "thesis_table_6_6"]}
    # every published dataset, our means the printed ones: the re-test is the printed table's test
    full = reproduction.compare_any(scores, cfg, REFERENCE_DIR, "t67")
    assert full.counts()["agree"] == 56 and (full.frame["paper_sign"] == full.frame["printed_sign"]).all()
    # eight datasets, our means the printed ones: every sign agrees with the re-test, not with the printed table
    eight = ["bibtex", "birds", "cal500", "corel5k", "emotions", "enron", "genbase", "medical"]
    part = reproduction.compare_any(scores[scores["dataset"].isin(eight)], cfg, REFERENCE_DIR, "t67")
    frame = part.frame
    assert part.counts()["agree"] == 56 and part.counts()["too_few_datasets"] == 0
    assert (frame["paper_sign"] != frame["printed_sign"]).any()
    assert (frame["paper_p"] >= 2 / 2 ** 8 - 1e-12).all() and (frame["printed_p"] <= 0.001).any()
    assert "over the 8 dataset(s) we compare" in " ".join(part.notes)
    # ours shifted on one method, so it now loses to every other on all eight datasets: its row disagrees
    shifted = scores[scores["dataset"].isin(eight)].copy()
    shifted.loc[shifted["variant"] == "mo_rf", "value"] -= 0.5
    worse = reproduction.compare_any(shifted, cfg, REFERENCE_DIR, "t67").frame
    mo = worse[worse["row_variant"] == "mo_rf"]
    assert (mo["ours_sign"] == "<").all() and (mo["status"] == reproduction.STATUS_DISAGREE).any()
    # two datasets (emotions, cal500): the test cannot reach 0.05, every row is shown and left unjudged
    two = reproduction.compare_any(scores[scores["dataset"].isin(["emotions", "cal500"])], cfg, REFERENCE_DIR, "t67")
    c = two.counts()
    assert c["run"] == 56 and c["too_few_datasets"] == 56 and c["judged"] == 0
    assert "smallest attainable p 0.5" in " ".join(two.notes)
    # without cells the printed p-values are judged, but two datasets still cannot be
    plain = reproduction.compare_any(scores[scores["dataset"].isin(["emotions", "cal500"])],
                                     {k: v for k, v in cfg.items() if k != "cells"}, REFERENCE_DIR, "t67")
    assert plain.counts()["too_few_datasets"] == 56


def test_pvalue_cells_only_for_a_test_over_datasets():
    methods = ["artificial_gbrt", "st_gbrt", "gbmort", "gbrt_relabel_rpo_subsampled", "gbrt_rpo_subsampled"]
    cfg = {"table": "thesis_table_6_2", "metric": "macro_r2", "methods": {m: m for m in methods},
           "cells": "thesis_table_6_1"}
    with pytest.raises(ConfigError, match="only a test over datasets"):
        reproduction.check_reference(cfg, REFERENCE_DIR, "t62")
    with pytest.raises(ConfigError, match="thesis_table_6_2 tests repeats within each dataset"):
        reproduction.compare_any(thesis_lrap_scores().iloc[:0], cfg, REFERENCE_DIR, "t62")
    bad = {"table": "thesis_table_6_7", "metric": "lrap", "methods": {"mo_rf": "mo_rf", "gbmort": "gbmort"},
           "cells": "thesis_table_6_8"}
    with pytest.raises(ConfigError, match="thesis_table_6_8 has no lrap cells"):
        reproduction.check_reference(bad, REFERENCE_DIR, "t67")


def test_compare_ttest_table_6_2_blocks_per_dataset():
    rng = np.random.default_rng(0)
    methods = ["artificial_gbrt", "st_gbrt", "gbmort", "gbrt_relabel_rpo_subsampled", "gbrt_rpo_subsampled"]
    rows = []
    for d in ("friedman1_chain", "friedman1_group"):
        for i, m in enumerate(methods):
            for r in range(5):
                rows.append({"experiment": "e", "dataset": d, "method": m, "variant": m, "repeat": r,
                             "metric": "macro_r2", "value": 0.8 - 0.02 * i + 0.001 * rng.standard_normal(),
                             "higher_is_better": True, "step": np.nan})
    cfg = {"table": "thesis_table_6_2", "metric": "macro_r2", "methods": {m: m for m in methods}}
    rep = reproduction.compare_any(pd.DataFrame(rows), cfg, REFERENCE_DIR, "t62")
    frame = rep.frame
    assert set(frame.loc[frame.status != reproduction.STATUS_NOT_RUN, "block"]) == {"friedman1_chain",
                                                                                       "friedman1_group"}
    assert (frame.loc[frame.block == "friedman1_ind", "status"] == reproduction.STATUS_NOT_RUN).all()
    # our generated means fall in method order: artificial > st, and the row reading is kept
    first = frame[(frame.block == "friedman1_chain") & (frame.row_variant == "artificial_gbrt")
                  & (frame.col_variant == "st_gbrt")].iloc[0]
    assert first["ours_sign"] == ">" and first["paper_sign"] == ">" and first["status"] == reproduction.STATUS_OK


def test_table_6_4_label_compared_with_our_macro_r2():
    # the published Table 6.4 labels its metric "macro_r2 (all 32 outputs)"; `ours` names our metric
    rng = np.random.default_rng(1)
    methods = ["st_gbrt", "gbmort", "gbrt_relabel_rpo_subsampled", "gbrt_rpo_subsampled"]
    rows = [{"experiment": "e", "dataset": "friedman1_chain_noisy", "method": m, "variant": m, "repeat": r,
             "metric": "macro_r2", "value": 0.7 - 0.03 * i + 0.001 * rng.standard_normal(),
             "higher_is_better": True, "step": np.nan}
            for i, m in enumerate(methods) for r in range(5)]
    cfg = {"table": "thesis_table_6_4", "metric": "macro_r2 (all 32 outputs)", "ours": "macro_r2",
           "methods": {m: m for m in methods}, "datasets": {"friedman1_chain_noisy": "friedman1_chain"}}
    rep = reproduction.compare_any(pd.DataFrame(rows), cfg, REFERENCE_DIR, "t64")
    assert (rep.frame.status != reproduction.STATUS_NOT_RUN).any()
    with pytest.raises(ConfigError, match="metric 'macro_r2' not in reference table thesis_table_6_4"):
        reproduction.check_reference(dict(cfg, metric="macro_r2"), REFERENCE_DIR, "t64")


@pytest.mark.parametrize("config", ["config/config.yaml", "config/thesis.yaml"])
def test_every_shipped_reference_entry_matches_its_table(config):
    # what the DAG build checks (workflow/rules/common.smk): a wrong id or metric fails there, not after the fits
    import yaml
    from pathlib import Path
    root = Path(__file__).resolve().parents[2]
    experiments = yaml.safe_load((root / config).read_text())["experiments"]
    reproduction.check_references(experiments, REFERENCE_DIR)


@pytest.mark.parametrize("entry,match", [
    ({"table": "dte_table_9", "metric": "micro_auc", "methods": {"knn": "ml_knn"}}, "ml_knn not in dte_table_9"),
    ({"table": "dte_table_9", "metric": "auc", "methods": {"rf": "rf_et"}}, "metric 'auc' not in"),
    ({"table": "no_such_table", "metric": "auc", "methods": {"rf": "rf_et"}}, "does not exist"),
    ({"table": "dte_figure_5_cd", "metric": "ranking_loss", "methods": {"x": "x_tee"}}, "x_tee not in"),
])
def test_check_reference_names_the_problem(entry, match):
    with pytest.raises(ConfigError, match=match):
        reproduction.check_references({"exp": {"reference": [entry]}}, REFERENCE_DIR)


def test_check_reference_refuses_a_table_without_the_experiments_datasets():
    entry = {"table": "thesis_table_6_3", "metric": "macro_r2", "methods": {"gbmort": "gbmort"}}
    with pytest.raises(ConfigError, match="has none of the experiment's datasets"):
        reproduction.check_references({"t63": {"datasets": ["friedman1_chain_noisy"], "reference": [entry]}},
                                      REFERENCE_DIR)
    mapped = dict(entry, datasets={"friedman1_chain_noisy": "friedman1_chain"})
    reproduction.check_references({"t63": {"datasets": ["friedman1_chain_noisy"], "reference": [mapped]}},
                                  REFERENCE_DIR)


def _dte4_scores(cells: dict) -> pd.DataFrame:
    rows = [{"experiment": "dte_table_4", "dataset": d, "method": v, "variant": v, "repeat": 0, "metric": "arrmse",
             "value": x, "higher_is_better": False, "step": np.nan} for (d, v), x in cells.items()]
    return pd.DataFrame(rows)


def test_cd_figure_reranks_published_cells_over_what_ran():
    """Figure 4's own ranks cover eight methods on 24 datasets; with ``cells`` the printed Table 4 values are
    re-ranked over the methods that ran, on the datasets where all of them ran. Hand-ranked (lower is better):
    published jura x_te .633 < rf_et .664 < mlp .733 and slump rf_et .851 < x_te .857 < mlp 1, so rf_et 1.5,
    X_TE 1.5, mlp 3; ours ranks rf_et 1/2, X_TE 2/3, mlp 3/1, so 1.5, 2.5, 2."""
    scores = _dte4_scores({("jura", "rf_et"): 0.5, ("jura", "X_TE"): 0.6, ("jura", "mlp"): 0.7,
                           ("slump", "rf_et"): 0.8, ("slump", "X_TE"): 0.9, ("slump", "mlp"): 0.7,
                           ("andro", "rf_et"): 0.9, ("andro", "X_TE"): 0.9})   # andro: mlp missing, left out
    cfg = {"table": "dte_figure_4_cd", "metric": "arrmse", "cells": "dte_table_4",
           "methods": {"rf_et": "rf_et", "X_TE": "x_te", "mlp": "mlp", "dstars": "dstars"}}
    rep = reproduction.compare_any(scores, cfg, REFERENCE_DIR, "dte_table_4")
    frame = rep.frame.set_index("item")
    assert frame.loc["rf_et", "paper"] == pytest.approx(1.5) and frame.loc["rf_et", "ours"] == pytest.approx(1.5)
    assert frame.loc["X_TE", "paper"] == pytest.approx(1.5) and frame.loc["X_TE", "ours"] == pytest.approx(2.5)
    assert frame.loc["mlp", "paper"] == pytest.approx(3.0) and frame.loc["mlp", "ours"] == pytest.approx(2.0)
    assert frame.loc["rf_et", "figure"] == pytest.approx(3.7292)   # the figure's own rank, shown, not judged
    status = frame["status"].to_dict()
    # three methods over two datasets: the Friedman test cannot reach 0.05 (smallest p e^-2), so its row is shown
    # and left unjudged
    assert status == {"X_TE": reproduction.STATUS_DISAGREE, "rf_et": reproduction.STATUS_OK,
                      "dstars": reproduction.STATUS_NOT_RUN, "mlp": reproduction.STATUS_DISAGREE,
                      "Friedman p": reproduction.STATUS_TOO_FEW}
    # chi^2_F = 12 N / (k (k+1)) sum (R_j - 2)^2 with N = 2, k = 3, no ties: 1.0 ours, 3.0 published; 2 dof
    assert frame.loc["Friedman p", "ours"] == pytest.approx(np.exp(-0.5))
    assert frame.loc["Friedman p", "paper"] == pytest.approx(np.exp(-1.5))
    notes = " ".join(rep.notes)
    assert "dstars" in notes and "andro" in notes and "over 2 dataset(s) (jura, slump)" in notes
    assert rep.counts() == {"cells": 5, "run": 4, "agree": 1, "disagree": 2, "not_run": 1, "judged": 3,
                            "comparison_only": 0, "too_few_datasets": 1, "reduced_protocol": 0}
    # our cells equal to the published ones: every rank agrees to the bit
    same = _dte4_scores({(d, v): float(x) for d, v, x in [("jura", "rf_et", .664), ("jura", "X_TE", .633),
                                                           ("jura", "mlp", .733), ("slump", "rf_et", .851),
                                                           ("slump", "X_TE", .857), ("slump", "mlp", 1.0)]})
    exact = reproduction.compare_any(same, cfg, REFERENCE_DIR, "dte_table_4").frame
    ran = exact[~exact["status"].isin([reproduction.STATUS_NOT_RUN, reproduction.STATUS_TOO_FEW])]
    assert (ran["status"] == reproduction.STATUS_OK).all() and (ran["difference"].dropna() == 0).all()
    # fewer than two complete datasets: nothing is judged
    one = reproduction.compare_any(scores[scores["dataset"] == "jura"], cfg, REFERENCE_DIR, "dte_table_4")
    assert one.counts()["judged"] == 0 and one.counts()["not_run"] == 5


def test_cd_figure_leaves_out_datasets_with_cells_under_way():
    """The re-ranked comparison of the last test, with andro now run by every method but one of its cells at 1 of
    2 repeats: andro is left out, and the ranks are those over jura and slump. With the protocol's split count
    tabulated (``n_splits``), a dataset whose every cell is under way is left out too, and a dataset split once
    (a given split) beside datasets split twice is complete."""
    cells = {("jura", "rf_et"): 0.5, ("jura", "X_TE"): 0.6, ("jura", "mlp"): 0.7,
             ("slump", "rf_et"): 0.8, ("slump", "X_TE"): 0.9, ("slump", "mlp"): 0.7,
             ("andro", "rf_et"): 0.9, ("andro", "X_TE"): 0.1, ("andro", "mlp"): 0.5}
    one = _dte4_scores(cells)
    two = pd.concat([one, one.assign(repeat=1)], ignore_index=True)
    scores = two[~((two["dataset"] == "andro") & (two["variant"] == "mlp") & (two["repeat"] == 1))]
    cfg = {"table": "dte_figure_4_cd", "metric": "arrmse", "cells": "dte_table_4",
           "methods": {"rf_et": "rf_et", "X_TE": "x_te", "mlp": "mlp"}}
    rep = reproduction.compare_any(scores, cfg, REFERENCE_DIR, "dte_table_4")
    ours = rep.frame.set_index("item")["ours"]
    assert (ours["rf_et"], ours["X_TE"], ours["mlp"]) == pytest.approx((1.5, 2.5, 2.0))
    notes = " ".join(rep.notes)
    assert "andro / mlp (1 of 2)" in notes and "over 2 dataset(s) (jura, slump)" in notes
    # every andro cell at 1 of 2: without the protocol's split count, the largest count of any cell is the rule
    andro_first = two[(two["dataset"] != "andro") | (two["repeat"] == 0)]
    for frame in (andro_first, andro_first.assign(n_splits=2)):
        notes = " ".join(reproduction.compare_any(frame, cfg, REFERENCE_DIR, "dte_table_4").notes)
        assert "over 2 dataset(s) (jura, slump)" in notes and "andro / X_TE (1 of 2)" in notes
    # andro split once by its protocol (a given split): complete, ranked with the others
    given = andro_first.assign(n_splits=np.where(andro_first["dataset"] == "andro", 1, 2))
    notes = " ".join(reproduction.compare_any(given, cfg, REFERENCE_DIR, "dte_table_4").notes)
    assert "over 3 dataset(s)" in notes and "1 of 2" not in notes


def test_cd_figure_cells_must_hold_the_metric_and_methods():
    cfg = {"table": "dte_figure_4_cd", "metric": "arrmse", "cells": "dte_table_5",
           "methods": {"rf_et": "rf_et", "X_TE": "x_te"}}
    with pytest.raises(ConfigError, match="dte_table_5 has no arrmse cells of rf_et, x_te"):
        reproduction.check_reference(cfg, REFERENCE_DIR, "dte_table_4")
    with pytest.raises(ConfigError, match="metric 'arrmse' not in reference table dte_table_5"):
        reproduction.compare_any(_dte4_scores({("jura", "rf_et"): 0.5}), cfg, REFERENCE_DIR, "dte_table_4")
    with pytest.raises(ConfigError, match="not a results table"):
        reproduction.check_reference(dict(cfg, cells="dte_figure_5_cd"), REFERENCE_DIR, "dte_table_4")
