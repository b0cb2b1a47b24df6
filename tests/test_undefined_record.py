"""A fit whose test rows leave a score undefined: null plus a reason in the record, a warning in the log, strict
JSON, and the other scores intact (before: bare NaN, -inf for macro-r², no warning)."""
import json

import numpy as np

from forestbench.cli import main
from forestbench.datasets.store import Dataset, save_dataset
from forestbench.workflow.experiments import Job, Plan


def test_fit_records_undefined_scores_as_null_with_reason(tmp_path, capsys, repo_root, monkeypatch):
    monkeypatch.chdir(repo_root)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    Y = np.column_stack([X[:, 0] + 0.1 * rng.normal(size=40), np.zeros(40)])  # second output constant
    prepared, split = tmp_path / "linnerud.npz", tmp_path / "split.npz"
    save_dataset(Dataset("linnerud", X, Y, "multioutput_regression"), prepared)
    assert main(["split", "linnerud", "--prepared", str(prepared), "--protocol",
                 json.dumps({"type": "random", "n_train": 30, "n_test": 10}), "--out", str(split)]) == 0
    cfg = {"experiments": {"e": {"datasets": ["linnerud"], "protocol": "demo",
                                 "metrics": ["macro_r2", "normalized_mse", "mse"],
                                 "methods": [{"name": "rf", "method": "sklearn_random_forest",
                                              "params": {"n_estimators": 5}}]}}}
    spec = Plan(cfg).run_spec(Job("e", "linnerud", "rf", 0))
    spec["expected_shape"] = None
    out = tmp_path / "rec.json"
    capsys.readouterr()
    assert main(["fit", "--spec", json.dumps(spec), "--prepared", str(prepared), "--split", str(split),
                 "--out", str(out)]) == 0
    captured = capsys.readouterr()
    text = out.read_text()
    assert "NaN" not in text and "Infinity" not in text
    record = json.loads(text)
    assert record["scores"]["normalized_mse"] is None
    assert "zero variance" in record["undefined_scores"]["normalized_mse"]
    assert np.isfinite(record["scores"]["macro_r2"]) and np.isfinite(record["scores"]["mse"])
    assert set(record["undefined_scores"]) == {"normalized_mse"}
    assert "normalized_mse is undefined" in captured.err
    assert "normalized_mse=undefined" in captured.out
