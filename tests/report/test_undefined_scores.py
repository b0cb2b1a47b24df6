"""Undefined scores (null in the run record, with a reason) reach the tables as "undefined", never as "not run"."""
from __future__ import annotations

import copy
import json

import numpy as np
import pandas as pd
import pytest

from forestbench._io import write_json
from forestbench.workflow.collect import collect
from forestbench.errors import DataError
from forestbench.report import build_experiment_report

from report_fixtures import EXPERIMENT_CFG, REFERENCE_DIR, make_scores

UNDEF = ("genbase", "rf")  # every repeat undefined
PARTLY = ("yeast", "rf")   # one repeat of three undefined


def _record(tmp_path, repeat, score, reason=None, dataset="d", variant="v"):
    rec = {"experiment": "e", "dataset": dataset, "method": "m", "variant": variant, "repeat": repeat,
           "scores": {"macro_r2": score, "mse": 1.0}, "higher_is_better": {"macro_r2": True, "mse": False}}
    if reason:
        rec["undefined_scores"] = {"macro_r2": reason}
    path = tmp_path / "runs" / "e" / dataset / variant / f"repeat-{repeat}.json"
    write_json(path, rec)
    return path


def test_collect_keeps_undefined_scores_with_their_reason(tmp_path):
    paths = [_record(tmp_path, 0, 0.5), _record(tmp_path, 1, None, "every one of the 1 test output(s) is constant")]
    frame = collect(paths, experiment="e")
    row = frame[(frame["metric"] == "macro_r2") & (frame["repeat"] == 1)].iloc[0]
    assert np.isnan(row["value"]) and "constant" in row["undefined_reason"]
    ok = frame[(frame["metric"] == "macro_r2") & (frame["repeat"] == 0)].iloc[0]
    assert ok["value"] == 0.5 and pd.isna(ok["undefined_reason"])


def test_collect_names_a_record_with_missing_keys(tmp_path):
    """Before: a KeyError traceback."""
    path = tmp_path / "runs" / "e" / "d" / "v" / "repeat-0.json"
    write_json(path, {"experiment": "e", "dataset": "d", "variant": "v", "repeat": 0, "scores": {"mse": 1.0}})
    with pytest.raises(DataError, match=r"repeat-0\.json lacks the key\(s\) method, higher_is_better"):
        collect([path], experiment="e")
    write_json(path, {"experiment": "e", "dataset": "d", "method": "m", "variant": "v", "repeat": 0,
                      "scores": {"mse": 1.0}, "higher_is_better": {}})
    with pytest.raises(DataError, match=r"repeat-0\.json is malformed"):
        collect([path], experiment="e")


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    root = tmp_path_factory.mktemp("undef")
    scores = make_scores()
    lrap = scores["metric"] == "lrap"
    final = scores["step"].isna()
    cell = lambda d, v: (scores["dataset"] == d) & (scores["variant"] == v)  # noqa: E731
    scores.loc[lrap & final & cell(*UNDEF), "value"] = np.nan
    scores.loc[lrap & final & cell(*PARTLY) & (scores["repeat"] == 2), "value"] = np.nan
    scores.to_csv(root / "scores.csv", index=False)
    out = root / "report"
    build_experiment_report(root / "scores.csv", "table_5_1", copy.deepcopy(EXPERIMENT_CFG), REFERENCE_DIR, out)
    return out


def test_undefined_cells_are_shown_as_undefined_not_as_not_run(report):
    """Before: a finished job with an undefined (NaN) score was listed as "not run"."""
    md = (report / "report.md").read_text()
    manifest = json.loads((report / "manifest.json").read_text())
    missing = {(m["dataset"], m["variant"]) for m in manifest["missing_cells"] if m["metric"] == "lrap"}
    assert UNDEF not in missing
    table = next(p for p in report.rglob("*lrap*_cells.csv"))

    cells = pd.read_csv(table).set_index(["dataset", "variant"])
    assert cells.loc[UNDEF, "status"] == "undefined" and cells.loc[UNDEF, "undefined"] == 3
    assert cells.loc[PARTLY, "status"] == "ok" and cells.loc[PARTLY, "n"] == 2
    assert "| undefined |" in md or " undefined |" in md
    assert "(1 undefined)" in md
    assert "cell(s) with undefined scores" in md
    repro = next(p for p in report.rglob("*reproduction*.csv"))
    rows = pd.read_csv(repro).set_index(["dataset", "variant"])
    assert rows.loc[UNDEF, "status"] == "undefined"
