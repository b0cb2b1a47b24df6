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
