"""The sweep report's ``matches``: the swept value from which a curve matches its baseline, beside a text's claim."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from forestbench.errors import ConfigError
from forestbench.report.experiment import build_experiment_report


def _scores(tmp_path, curves):
    """Scores of a baseline ``rf`` (three repeats, mean 0.8, std 0.01) and of the given curves {prefix: {q: value}}
    (the same value in every repeat)."""
    rows = []
    base = {"experiment": "fig", "dataset": "delicious", "metric": "lrap", "step": np.nan, "higher_is_better": True,
            "fit_wall_s": 1.0, "fit_cpu_s": 1.0}
    for repeat, v in enumerate([0.79, 0.80, 0.81]):
        rows.append({**base, "method": "random_forest", "variant": "rf", "repeat": repeat, "seed": repeat,
                     "value": v, "param.n_components": np.nan})
    for prefix, points in curves.items():
        for q, v in points.items():
            for repeat in range(3):
                rows.append({**base, "method": "random_forest", "variant": f"{prefix}{q}", "repeat": repeat,
                             "seed": repeat, "value": v, "param.n_components": q})
    csv = tmp_path / "scores.csv"
    pd.DataFrame(rows).to_csv(csv, index=False)
    return csv


def _report(tmp_path, csv, matches, **options):
    cfg = {"description": "sweep", "source": "thesis", "datasets": ["delicious"], "metrics": ["lrap"],
           "reports": [{"kind": "sweep", "metric": "lrap", "x": "param.n_components", "matches": matches,
                        **options}]}
    build_experiment_report(csv, "fig", cfg, tmp_path / "reference", tmp_path / "out")
    return pd.read_csv(tmp_path / "out" / "tables" / "01_sweep_lrap_n_components_matches.csv")


def test_a_curve_matches_from_the_first_value_after_which_every_point_is_within_the_baseline_std(tmp_path):
    # shared: within 0.01 of 0.8 from q = 50 on, though q = 10 already was (a dip at 25 makes it start later);
    # per tree: from q = 25; a curve that never reaches the baseline; a claim of 25 against a match from 100
    csv = _scores(tmp_path, {
        "rf-shared-q": {1: 0.5, 10: 0.795, 25: 0.7, 50: 0.805, 100: 0.8},
        "rf-pertree-q": {1: 0.6, 10: 0.75, 25: 0.792, 50: 0.8, 100: 0.81},
        "rf-low-q": {1: 0.5, 100: 0.7},
        "rf-late-q": {1: 0.5, 25: 0.7, 100: 0.8}})
    got = _report(tmp_path, csv, [{"curve": "rf-shared-q", "baseline": "rf", "claimed": 75},
                                  {"curve": "rf-pertree-q", "baseline": "rf", "claimed": 25},
                                  {"curve": "rf-low-q", "baseline": "rf", "claimed": 25},
                                  {"curve": "rf-late-q", "baseline": "rf", "claimed": 25},
                                  {"curve": "rf-nothing-q", "baseline": "rf", "claimed": 25}]).set_index("curve")
    assert got.loc["rf-shared-q*", "matches from"] == 50 and got.loc["rf-shared-q*", "verdict"] == "agrees"
    assert got.loc["rf-pertree-q*", "matches from"] == 25 and got.loc["rf-pertree-q*", "verdict"] == "agrees"
    assert got.loc["rf-low-q*", "verdict"] == "never matches" and pd.isna(got.loc["rf-low-q*", "matches from"])
    assert got.loc["rf-late-q*", "matches from"] == 100 and got.loc["rf-late-q*", "verdict"] == "differs"
    assert got.loc["rf-nothing-q*", "verdict"] == "not run"
    assert got.loc["rf-shared-q*", "baseline std"] == pytest.approx(0.01)
    assert (tmp_path / "out" / "figures" / "01_sweep_lrap_n_components.png").exists()
    text = (tmp_path / "out" / "report.md").read_text()
    assert "matches: the n_components from which each curve" in text and "01_sweep_lrap_n_components_matches" in text


def test_tolerances_and_bad_entries(tmp_path):
    csv = _scores(tmp_path, {"rf-pertree-q": {1: 0.6, 10: 0.77, 25: 0.792}})
    # an absolute tolerance wider than the std lets q = 10 match; a factor of 1 needs the claim exactly
    got = _report(tmp_path, csv, [{"curve": "rf-pertree-q", "baseline": "rf", "claimed": 10}],
                  tolerance_abs=0.05, factor=1)
    assert got["matches from"].tolist() == [10] and got["verdict"].tolist() == ["agrees"]
    with pytest.raises(ConfigError, match="curve .* and baseline"):
        _report(tmp_path, csv, [{"curve": "rf-pertree-q"}])
    with pytest.raises(ConfigError, match="factor >= 1"):
        _report(tmp_path, csv, [{"curve": "rf-pertree-q", "baseline": "rf"}], factor=0.5)


def test_a_deterministic_baseline_is_matched_within_the_points_own_spread(tmp_path):
    """A tree without bootstrap scores the same on every repeat (std 0): under ``band: combined`` a point matches
    within its own repeats' std, under ``band: baseline`` only an exact mean would."""
    rows = []
    base = {"experiment": "fig", "dataset": "delicious", "metric": "lrap", "step": np.nan, "higher_is_better": True,
            "fit_wall_s": 1.0, "fit_cpu_s": 1.0, "method": "tree"}
    for repeat in range(3):
        rows.append({**base, "variant": "tree", "repeat": repeat, "seed": repeat, "value": 0.2035,
                     "param.n_components": np.nan})
    # q = 10: mean 0.19, std 0.001 (far); q = 75 and 100: mean 0.2025, std 0.0015 (within their own std)
    for q, values in {10: [0.189, 0.19, 0.191], 75: [0.201, 0.2025, 0.204], 100: [0.201, 0.2025, 0.204]}.items():
        for repeat, v in enumerate(values):
            rows.append({**base, "variant": f"tree-gaussian-q{q}", "repeat": repeat, "seed": repeat, "value": v,
                         "param.n_components": q})
    csv = tmp_path / "scores.csv"
    pd.DataFrame(rows).to_csv(csv, index=False)
    matches = [{"curve": "tree-gaussian-q", "baseline": "tree", "claimed": 200}]
    got = _report(tmp_path, csv, matches)
    assert got["baseline std"].tolist() == [0.0]
    assert got["matches from"].tolist() == [75] and got["verdict"].tolist() == ["differs"]
    assert "sqrt(baseline std^2 + the point's std^2)" in (tmp_path / "out" / "report.md").read_text()
    alone = _report(tmp_path, csv, matches, band="baseline")
    assert alone["verdict"].tolist() == ["never matches"]
    with pytest.raises(ConfigError, match="band must be one of combined, baseline"):
        _report(tmp_path, csv, matches, band="curve")
