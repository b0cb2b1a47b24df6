"""Reports name the variants of grids as the planner does, and never import estimators."""
import subprocess
import sys

import pandas as pd

from forestbench.report import build_experiment_report
from forestbench.workflow.variants import variant_names


def test_reports_do_not_import_estimators():
    code = ("import sys, forestbench.report, forestbench.report.cli; "
            "bad = [m for m in sys.modules if m.startswith(('forestbench.tree', 'forestbench.forest', "
            "'forestbench.workflow.methods', 'forestbench.workflow.runner'))]; print(bad); sys.exit(1 if bad else 0)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_grid_variants_are_expanded_in_the_table(tmp_path):
    methods = [{"name": "rf", "method": "random_forest"},
               {"name": "rf-q{n_components}", "method": "random_forest", "grid": {"n_components": [1, "ln_d"]}}]
    assert variant_names("e", methods) == ["rf", "rf-q1", "rf-qln_d"]
    rows = [{"experiment": "e", "dataset": "d", "method": "random_forest", "variant": v, "repeat": r, "seed": 0,
             "step": None, "metric": "lrap", "value": 0.5 + 0.01 * r + 0.1 * i, "higher_is_better": True}
            for i, v in enumerate(["rf", "rf-q1"]) for r in range(3)]
    scores = tmp_path / "scores.csv"
    pd.DataFrame(rows).to_csv(scores, index=False)
    cfg = {"datasets": ["d"], "methods": methods, "metrics": ["lrap"],
           "reports": [{"kind": "table", "metric": "lrap", "baseline": "rf"}]}
    build_experiment_report(scores, "e", cfg, tmp_path / "noref", tmp_path / "out")
    table = next((tmp_path / "out" / "tables").glob("*_table_lrap.md")).read_text()
    assert "rf-q{n_components}" not in table
    assert "rf-qln_d" in table and "not run" in table  # the grid point that did not run is named as missing
