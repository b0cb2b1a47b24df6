"""Run-info of the compressed forest reaches the scores table (extra.<key> columns) and the Table 7.1 reproduction
(one "error" reference compared with a different metric per dataset)."""
import json

import numpy as np
import pandas as pd
import pytest

from forestbench.workflow.collect import collect
from forestbench.errors import ConfigError
from forestbench.workflow.methods import get_method, is_planned
from forestbench.report.data import final_rows, summarise
from forestbench.report.reproduction import STATUS_OK, compare_any


def _record(dataset, variant, repeat, scores, extra=None):
    return {"experiment": "t71", "dataset": dataset, "method": variant, "variant": variant, "repeat": repeat,
            "seed": repeat, "scores": scores, "higher_is_better": {k: False for k in scores}, "params": {},
            "model": {"n_nodes": 10, "bytes": 100}, **({"extra": extra} if extra else {})}


@pytest.fixture
def scores(tmp_path):
    records = []
    for r in range(3):
        records.append(_record("friedman1", "et", r, {"normalized_mse": 0.20 + 0.01 * r}))
        records.append(_record("friedman1", "ret", r, {"normalized_mse": 0.18 + 0.01 * r},
                               {"et_test_nodes": 29900, "ret_test_nodes": 800 + 100 * r,
                                "compression_factor": 29900 / (800 + 100 * r), "selection": {"nested": [1]},
                                "note": "text"}))
        records.append(_record("two_norm", "ret", r, {"error_rate": 0.06 + 0.01 * r},
                               {"et_test_nodes": 4800, "ret_test_nodes": 500, "compression_factor": 9.6}))
    paths = []
    for k, rec in enumerate(records):
        path = tmp_path / f"{k}.json"
        path.write_text(json.dumps(rec))
        paths.append(path)
    return collect(paths)


def test_run_info_scalars_become_extra_columns(scores):
    assert {"extra.et_test_nodes", "extra.ret_test_nodes", "extra.compression_factor", "extra.note"} <= \
        set(scores.columns)
    assert "extra.selection" not in scores.columns  # nested values stay in the record
    rows = final_rows(scores, "extra.ret_test_nodes")
    assert len(rows) == 6  # one per fit, not one per metric row
    summary = summarise(scores, "extra.ret_test_nodes").set_index(["dataset", "variant"])
    assert summary.loc[("friedman1", "ret"), "mean"] == pytest.approx(900)
    assert np.isnan(summarise(scores, "extra.ret_test_nodes").query("variant == 'et'")["mean"]).all()


def test_table_7_1_reference_compares_error_per_dataset_metric(scores, tmp_path):
    ref_dir = tmp_path / "ref"
    ref_dir.mkdir()
    pd.DataFrame([
        {"table": "T", "dataset": "Friedman1", "dataset_id": "friedman1", "method": "rET", "method_id": "ret",
         "metric": "error", "higher_is_better": False, "value": "0.18593", "std": "", "note": ""},
        {"table": "T", "dataset": "Two-norm", "dataset_id": "two_norm", "method": "rET", "method_id": "ret",
         "metric": "error", "higher_is_better": False, "value": "0.06707", "std": "", "note": ""},
        {"table": "T", "dataset": "Friedman1", "dataset_id": "friedman1", "method": "ET/rET",
         "method_id": "et_over_ret", "metric": "compression_factor", "higher_is_better": True, "value": "34",
         "std": "", "note": ""},
    ]).to_csv(ref_dir / "t71.csv", index=False)
    cfg = {"table": "t71", "metric": "error", "ours": {"friedman1": "normalized_mse", "two_norm": "error_rate"},
           "methods": {"ret": "ret"}, "tolerance_abs": 0.05}
    rep = compare_any(scores, cfg, ref_dir, "t71")
    frame = rep.frame.set_index("dataset_id")
    assert frame.loc["friedman1", "ours_mean"] == pytest.approx(0.19)
    assert frame.loc["two_norm", "ours_mean"] == pytest.approx(0.07)
    assert set(frame["status"]) == {STATUS_OK}  # within tolerance_abs of 0.18593 and 0.06707
    factor = compare_any(scores, {"table": "t71", "metric": "compression_factor", "ours": "extra.compression_factor",
                                  "methods": {"ret": "et_over_ret"}}, ref_dir, "t71")
    expected = np.mean([29900 / 800, 29900 / 900, 29900 / 1000])
    assert factor.frame["ours_mean"].iloc[0] == pytest.approx(expected)
    with pytest.raises(ConfigError, match="ours"):
        compare_any(scores, {**cfg, "ours": ["normalized_mse"]}, ref_dir, "t71")


def test_compressed_extra_trees_is_registered_not_planned():
    spec = get_method("compressed_extra_trees")
    assert not is_planned("compressed_extra_trees")
    assert spec.supports("run_info_")
    cost = spec.cost_of(300, 10, 1, {"n_estimators": 100, "max_features": 1.0})
    fixed = spec.cost_of(300, 10, 1, {"n_estimators": 100, "max_features": 1.0, "t": 3.0})
    assert cost.fit_seconds > 5 * fixed.fit_seconds  # 10-fold CV grows 10 more forests
    with pytest.raises(ConfigError, match="'t'"):
        spec.check_params({"t": -1.0})
    with pytest.raises(ConfigError, match="'epsilon'"):
        spec.check_params({"epsilon": 0})
    assert get_method("lasso_cv").supports("run_info_")
