"""The `layers` report of cascade estimators: selected layer counts, overall and per reading of the pruning score."""
from __future__ import annotations

import numpy as np
import pandas as pd

from forestbench.report.experiment import build_experiment_report


def test_layers_report_tabulates_the_layer_count_of_every_reading(tmp_path):
    rows = []
    for variant, counts in (("X_OS", {"train": (1, 1), "oob": (4, 6)}), ("X_TE", {"train": (1, 1), "oob": (2, 3)})):
        for repeat in range(2):
            rows.append({"experiment": "dte", "dataset": "yeast", "method": "deep_tree_ensemble", "variant": variant,
                         "repeat": repeat, "seed": repeat, "metric": "micro_auc", "value": 0.8, "step": np.nan,
                         "higher_is_better": True, "fit_wall_s": 1.0, "fit_cpu_s": 1.0, "extra.n_layers": 1,
                         "extra.n_layers_built": 10, "extra.train_layer_1": 1.0, "extra.train_layer_2": 1.0,
                         **{f"extra.n_layers_{r}": c[repeat] for r, c in counts.items()}})
    csv = tmp_path / "scores.csv"
    pd.DataFrame(rows).to_csv(csv, index=False)
    cfg = {"description": "cascade", "source": "DTE", "datasets": ["yeast"], "metrics": ["micro_auc"],
           "reports": [{"kind": "layers", "metric": "micro_auc"}]}
    build_experiment_report(csv, "dte", cfg, tmp_path / "reference", tmp_path / "out")
    text = (tmp_path / "out" / "report.md").read_text()
    assert "each reading of the pruning score" in text
    # the readings' table: one row per (dataset, variant), the mean over the repeats; n_layers_built is no reading
    lines = [line for line in text.splitlines() if line.startswith("|")]
    start = next(i for i, line in enumerate(lines) if "oob" in line)
    header = [c.strip() for c in lines[start].strip("|").split("|")]
    assert header == ["dataset", "variant", "oob", "train"]
    body = {tuple(c.strip() for c in line.strip("|").split("|"))[1]: [float(c) for c in line.strip("|").split("|")[2:]]
            for line in lines[start + 2:start + 4]}
    assert body == {"X_OS": [5.0, 1.0], "X_TE": [2.5, 1.0]}


def test_runs_that_keep_every_layer_give_each_readings_test_score_beside_the_published_one(tmp_path):
    """Staged test scores (one per kept layer) turn each reading's layer count into the test score it would
    report: repeat 0 of X_OS selects layer 1 (train) and 3 (oob), whose test scores are 0.81 and 0.83."""
    rows = []
    base = {"experiment": "dte", "dataset": "yeast", "method": "deep_tree_ensemble", "variant": "X_OS",
            "metric": "micro_auc", "higher_is_better": True, "fit_wall_s": 1.0, "fit_cpu_s": 1.0}
    for repeat, (train, oob) in enumerate([(1, 3), (2, 4)]):
        curve = [0.81, 0.82, 0.83, 0.84] if repeat == 0 else [0.71, 0.72, 0.73, 0.74]
        rows.append({**base, "repeat": repeat, "seed": repeat, "value": curve[train - 1], "step": np.nan,
                     "extra.n_layers": train, "extra.n_layers_built": 4, "extra.n_layers_train": train,
                     "extra.n_layers_oob": oob, "extra.train_layer_1": 1.0})
        rows += [{**base, "repeat": repeat, "seed": repeat, "value": v, "step": step}
                 for step, v in enumerate(curve, start=1)]
    # a run whose record holds the test scores of layers 1 and 2 only: its oob layer (3) has none and is left out
    rows.append({**base, "repeat": 2, "seed": 2, "value": 0.61, "step": np.nan, "extra.n_layers": 1,
                 "extra.n_layers_built": 4, "extra.n_layers_train": 1, "extra.n_layers_oob": 3,
                 "extra.train_layer_1": 1.0})
    rows += [{**base, "repeat": 2, "seed": 2, "value": v, "step": step} for step, v in ((1, 0.61), (2, 0.62))]
    csv = tmp_path / "scores.csv"
    pd.DataFrame(rows).to_csv(csv, index=False)
    ref = tmp_path / "reference"
    ref.mkdir()
    pd.DataFrame([{"table": "T9", "dataset": "yeast", "dataset_id": "yeast", "method": "X_OS", "method_id": "x_os",
                   "metric": "micro_auc", "higher_is_better": "true", "value": 0.827, "std": "",
                   "mean_layers": 8.89}]).to_csv(ref / "t9.csv", index=False)
    cfg = {"description": "cascade", "source": "DTE", "datasets": ["yeast"], "metrics": ["micro_auc"],
           "reports": [{"kind": "layers", "metric": "micro_auc",
                        "published": [{"table": "t9", "methods": {"X_OS": "x_os", "X_OS-other": "x_os"}}]}]}
    build_experiment_report(csv, "dte", cfg, ref, tmp_path / "out")
    table = pd.read_csv(next((tmp_path / "out" / "tables").glob("*_readings.csv")))
    got = {r.reading: (r.layers, r.test_micro_auc, r.runs) for r in
           table.rename(columns={"test micro_auc": "test_micro_auc"}).itertuples()}
    assert got == {"oob": (3.5, 0.785, 2), "train": (round(4 / 3, 4), round((0.81 + 0.72 + 0.61) / 3, 4), 3)}
    assert "1 (run, reading) pair(s) left out of the third table" in (tmp_path / "out" / "report.md").read_text()
    assert set(table["published"]) == {0.827} and set(table["published layers"]) == {8.89}
    # two of our variants mapped to one published method: each gets its cell (only X_OS ran here)
    from forestbench.report.experiment import _published_layers

    class _Ctx:
        reference_dir = ref
    published = _published_layers(_Ctx(), cfg["reports"][0], "micro_auc")
    assert sorted(published["variant"]) == ["X_OS", "X_OS-other"] and set(published["published"]) == {0.827}


def test_layer_curves_are_written_as_means_over_the_repeats_and_spread_is_checked(tmp_path):
    """The curves' CSV (the numbers of the figure): per dataset, variant, set and layer the mean, std and count
    over the repeats; ``spread: none`` draws the mean curves alone, an unknown spread names itself."""
    import pytest

    from forestbench.errors import ConfigError

    base = {"experiment": "dte", "dataset": "genbase", "method": "deep_tree_ensemble", "variant": "X_TE",
            "metric": "micro_auc", "higher_is_better": True, "fit_wall_s": 1.0, "fit_cpu_s": 1.0}
    rows = []
    for repeat, (curve, train) in enumerate([((0.90, 0.94), (0.99, 1.0)), ((0.80, 0.86), (0.97, 0.98))]):
        rows.append({**base, "repeat": repeat, "seed": repeat, "value": curve[1], "step": np.nan,
                     "extra.n_layers": 2, "extra.train_layer_1": train[0], "extra.train_layer_2": train[1]})
        rows += [{**base, "repeat": repeat, "seed": repeat, "value": v, "step": s} for s, v in enumerate(curve, 1)]
    csv = tmp_path / "scores.csv"
    pd.DataFrame(rows).to_csv(csv, index=False)
    cfg = {"description": "cascade", "source": "DTE", "datasets": ["genbase"], "metrics": ["micro_auc"],
           "reports": [{"kind": "layers", "metric": "micro_auc", "spread": "none"}]}
    build_experiment_report(csv, "dte", cfg, tmp_path / "reference", tmp_path / "out")
    curves = pd.read_csv(next((tmp_path / "out" / "tables").glob("*_curves.csv")))
    got = {(r.set, r.layer): (r.mean, r.std, r.runs) for r in curves.itertuples()}
    assert got == {("test", 1): (0.85, round(np.std([0.9, 0.8], ddof=1), 4), 2),
                   ("test", 2): (0.9, round(np.std([0.94, 0.86], ddof=1), 4), 2),
                   ("training", 1): (0.98, round(np.std([0.99, 0.97], ddof=1), 4), 2),
                   ("training", 2): (0.99, round(np.std([1.0, 0.98], ddof=1), 4), 2)}
    assert "curves CSV" in (tmp_path / "out" / "report.md").read_text()
    cfg["reports"] = [{"kind": "layers", "metric": "micro_auc", "spread": "se"}]
    with pytest.raises(ConfigError, match="spread must be 'sd'.*got 'se'"):
        build_experiment_report(csv, "dte", cfg, tmp_path / "reference", tmp_path / "out2")
