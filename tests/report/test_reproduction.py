"""Our numbers beside the published ones."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from forestbench.errors import ConfigError
from forestbench.report import reproduction
from forestbench.report.data import load_scores, summarise

from conftest import EXPERIMENT_CFG, MISSING, OFF_CELL, REFERENCE_DIR


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
                      "no_published_std": 0, "no_published_value": 0}
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


def test_reference_copy_is_complete_and_unchanged():
    shared = REFERENCE_DIR.parents[1].parent / "shared" / "reference"
    ours = sorted(p.name for p in REFERENCE_DIR.iterdir())
    assert len([n for n in ours if n.endswith(".csv")]) == 34 and "README.md" in ours
    if shared.is_dir():  # the read-only source exists on the development machine only
        for name in ours:
            assert (shared / name).read_bytes() == (REFERENCE_DIR / name).read_bytes(), name
