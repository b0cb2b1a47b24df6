"""The paired report kind: a variant against its twin on the same splits."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from forestbench.errors import ConfigError
from forestbench.report import REPORT_KINDS
from forestbench.report.kinds import Context
from forestbench.report.paired import paired_table


def _scores(cells):
    """cells: {(dataset, variant): [(repeat, value, pca_fraction), ...]}, aRRMSE (lower is better)."""
    rows = [{"experiment": "e", "dataset": d, "method": "m", "variant": v, "repeat": r, "metric": "arrmse",
             "value": x, "higher_is_better": False, "step": np.nan, "extra.pca_fraction": f}
            for (d, v), runs in cells.items() for r, x, f in runs]
    return pd.DataFrame(rows)


SCORES = _scores({
    ("a", "X_TE"): [(0, 0.50, 0.2), (1, 0.60, 0.05), (2, 0.70, 1.0)],
    ("a", "X_TE-pca0.05"): [(0, 0.55, 0.05), (1, 0.60, 0.05), (2, 0.65, 0.05)],
    ("b", "X_TE"): [(0, 1.00, 0.2), (1, 2.00, 0.2)],                 # repeat 2 still running
    ("b", "X_TE-pca0.05"): [(0, 1.50, 0.05), (1, 1.50, 0.05), (2, 9.00, 0.05)],
    ("c", "X_TE-pca0.05"): [(0, 1.00, 0.05)],                       # no twin: no row
})


def test_paired_table_by_hand():
    table = paired_table(SCORES, "arrmse", {"X_TE": "X_TE-pca0.05"}, False, extra=["extra.pca_fraction"])
    assert list(table["dataset"]) == ["a", "b"]
    a, b = table.iloc[0], table.iloc[1]
    # a: 0.5 / 0.6 / 0.7 against 0.55 / 0.6 / 0.65: one better, one tie, one worse (lower is better)
    assert a["splits"] == 3 and a["mean"] == pytest.approx(0.6) and a["mean_against"] == pytest.approx(0.6)
    assert (a["better"], a["worse"], a["ties"]) == (1, 1, 1) and a["difference"] == pytest.approx(0.0)
    assert a["extra.pca_fraction"] == "0.05: 1, 0.2: 1, 1: 1"
    # b: only the two splits both finished (the twin's 9.0 of split 2 is left out)
    assert (b["splits"], b["unpaired"], a["unpaired"]) == (2, 1, 0)
    assert b["mean"] == pytest.approx(1.5) and b["mean_against"] == pytest.approx(1.5)
    assert (b["better"], b["worse"], b["ties"]) == (1, 1, 0) and b["extra.pca_fraction"] == "0.2: 2"
    # higher is better flips better and worse, not the difference
    up = paired_table(SCORES, "arrmse", {"X_TE": "X_TE-pca0.05"}, True).iloc[0]
    assert (up["better"], up["worse"]) == (1, 1) and up["difference"] == pytest.approx(0.0)
    rel = paired_table(SCORES[SCORES["dataset"] == "b"].assign(
        value=lambda f: np.where(f["variant"] == "X_TE", 1.2, 1.5)), "arrmse", {"X_TE": "X_TE-pca0.05"}, False)
    assert rel.iloc[0]["difference_relative"] == pytest.approx(-0.2) and rel.iloc[0]["better"] == 2


def test_paired_kind_writes_its_table_and_checks_its_pairs(tmp_path):
    ctx = Context("e", {}, SCORES, tmp_path, ["a", "b", "c"], ["X_TE", "X_TE-pca0.05"])
    sec = REPORT_KINDS["paired"](ctx, {"metric": "arrmse", "pairs": {"X_TE": "X_TE-pca0.05"},
                                       "extra": ["extra.pca_fraction"]}, "01_paired_arrmse")
    written = pd.read_csv(sec.files["CSV"])
    assert list(written["dataset"]) == ["a", "b"] and "extra.pca_fraction" in written.columns
    assert any("b / X_TE (2 of 3)" in n for n in sec.notes) and not any("a / X_TE" in n for n in sec.notes)
    with pytest.raises(ConfigError, match="X_OS"):
        REPORT_KINDS["paired"](ctx, {"metric": "arrmse", "pairs": {"X_OS": "X_TE"}}, "x")
    with pytest.raises(ConfigError, match="pairs must map"):
        REPORT_KINDS["paired"](ctx, {"metric": "arrmse", "pairs": []}, "x")
