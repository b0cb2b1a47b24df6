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


def _k_scores(tmp_path, curves, repeats=3):
    """Scores of curves {prefix: {k: mean}} swept over max_features, each repeat at mean - 0.001, mean, mean + 0.001
    (std 0.001); a mean of None leaves that point with one repeat fewer (a cell under way)."""
    rows = []
    base = {"experiment": "fig", "dataset": "delicious", "metric": "lrap", "step": np.nan, "higher_is_better": True,
            "fit_wall_s": 1.0, "fit_cpu_s": 1.0, "method": "random_forest"}
    for prefix, points in curves.items():
        for k, mean in points.items():
            done = repeats if mean is not None else repeats - 1
            for repeat in range(done):
                value = (mean if mean is not None else 0.3) + 0.001 * (repeat - 1)
                rows.append({**base, "variant": f"{prefix}{k}", "repeat": repeat, "seed": repeat, "value": value,
                             "param.max_features": k})
    csv = tmp_path / "scores.csv"
    pd.DataFrame(rows).to_csv(csv, index=False)
    return csv


def _against(tmp_path, csv, entry):
    cfg = {"description": "k study", "source": "thesis", "datasets": ["delicious"], "metrics": ["lrap"],
           "reports": [{"kind": "sweep", "metric": "lrap", "x": "param.max_features", "against_curve": entry}]}
    build_experiment_report(csv, "fig", cfg, tmp_path / "reference", tmp_path / "out")
    return pd.read_csv(tmp_path / "out" / "tables" / "01_sweep_lrap_max_features_against_curve.csv")


def test_against_curve_checks_robustness_to_large_k_and_the_best_point_against_the_baselines(tmp_path):
    # the baseline peaks at k = 10 (0.35) and loses 0.03 by k = 100; q1 loses nothing but peaks lower (worse);
    # q7 peaks higher (better) but loses 0.07; q14 peaks level with the baseline (0.3505: within one combined std)
    csv = _k_scores(tmp_path, {"rf-k": {1: 0.30, 10: 0.35, 100: 0.32},
                               "rf-q1-k": {1: 0.31, 10: 0.34, 100: 0.34},
                               "rf-q7-k": {1: 0.33, 10: 0.37, 100: 0.30},
                               "rf-q14-k": {1: 0.33, 10: 0.3505, 100: 0.349}})
    got = _against(tmp_path, csv, {"baseline": "rf-k", "curves": ["rf-q1-k", "rf-q7-k", "rf-q14-k"],
                                   "more_robust": True, "beats_best": False}).set_index("curve")
    assert got.loc["rf-k*", "role"] == "baseline"
    assert got.loc["rf-k*", "best x"] == 10 and got.loc["rf-k*", "loss at last x"] == pytest.approx(0.03)
    q1, q7, q14 = got.loc["rf-q1-k*"], got.loc["rf-q7-k*"], got.loc["rf-q14-k*"]
    assert q1["loss at last x"] == pytest.approx(0.0) and bool(q1["more robust"])
    assert q1["best vs baseline best"] == "worse"
    assert (q1["more_robust verdict"], q1["beats_best verdict"]) == ("agrees", "agrees")
    assert q7["loss at last x"] == pytest.approx(0.07) and not bool(q7["more robust"])
    assert q7["best vs baseline best"] == "better"
    assert (q7["more_robust verdict"], q7["beats_best verdict"]) == ("differs", "differs")
    assert q14["best vs baseline best"] == "level" and q14["beats_best verdict"] == "agrees"
    assert "claims: more_robust: true, beats_best: false" in (tmp_path / "out" / "report.md").read_text()
    # the other reading of the text (Fig 5.2's): a better best point agrees, a level one does not
    other = _against(tmp_path, csv, {"baseline": "rf-k", "curves": ["rf-q7-k", "rf-q14-k"],
                                     "beats_best": True}).set_index("curve")
    assert other.loc["rf-q7-k*", "beats_best verdict"] == "agrees"
    assert other.loc["rf-q14-k*", "beats_best verdict"] == "differs"
    assert "more_robust verdict" not in other.columns


def test_against_curve_leaves_a_curve_under_way_unjudged_and_refuses_bad_entries(tmp_path):
    # q1's k = 100 has 2 of 3 repeats: its best and last points are not the protocol's yet; q7 lacks k = 100
    csv = _k_scores(tmp_path, {"rf-k": {1: 0.30, 10: 0.35, 100: 0.32},
                               "rf-q1-k": {1: 0.31, 10: 0.34, 100: None},
                               "rf-q7-k": {1: 0.31, 10: 0.34}})
    cfg_curves = ["rf-q1-k", "rf-q7-k"]
    entry = {"baseline": "rf-k", "curves": cfg_curves, "more_robust": True}
    # the report's variants name every point the configuration runs, as an experiment's methods do
    cfg = {"description": "k study", "source": "thesis", "datasets": ["delicious"], "metrics": ["lrap"],
           "reports": [{"kind": "sweep", "metric": "lrap", "x": "param.max_features", "against_curve": entry,
                        "variants": ["rf-k1", "rf-k10", "rf-k100", "rf-q1-k1", "rf-q1-k10", "rf-q1-k100",
                                     "rf-q7-k1", "rf-q7-k10", "rf-q7-k100"]}]}
    build_experiment_report(csv, "fig", cfg, tmp_path / "reference", tmp_path / "out")
    got = pd.read_csv(tmp_path / "out" / "tables" / "01_sweep_lrap_max_features_against_curve.csv")
    got = got.set_index("curve")
    assert got.loc["rf-q1-k*", "more_robust verdict"] == "unjudged"
    assert got.loc["rf-q7-k*", "more_robust verdict"] == "unjudged"
    with pytest.raises(ConfigError, match="needs baseline"):
        _against(tmp_path, csv, {"curves": cfg_curves})
    with pytest.raises(ConfigError, match="unknown key.*beats_baseline"):
        _against(tmp_path, csv, {"baseline": "rf-k", "curves": cfg_curves, "beats_baseline": False})
    with pytest.raises(ConfigError, match="take true or false"):
        _against(tmp_path, csv, {"baseline": "rf-k", "curves": cfg_curves, "more_robust": "yes"})


def test_against_curve_with_a_baseline_variant_compares_each_curves_best_point_with_its_mean(tmp_path):
    # Fig 5.4's reading: RF on the original outputs (mean 0.8, std 0.01) is one point; a sparse projection peaks
    # at q = 1 above it, a sub-sampled identity never rises above it
    csv = _scores(tmp_path, {"rf-sparse-q": {1: 0.84, 10: 0.82, 100: 0.80},
                             "rf-subsample-q": {1: 0.70, 10: 0.79, 100: 0.80}})
    cfg = {"description": "reductions", "source": "thesis", "datasets": ["delicious"], "metrics": ["lrap"],
           "reports": [{"kind": "sweep", "metric": "lrap", "x": "param.n_components",
                        "against_curve": {"baseline": "rf", "curves": ["rf-sparse-q", "rf-subsample-q"],
                                          "beats_best": True},
                        "matches": [{"curve": "rf-subsample-q", "baseline": "rf"}]}]}
    build_experiment_report(csv, "fig", cfg, tmp_path / "reference", tmp_path / "out")
    got = pd.read_csv(tmp_path / "out" / "tables" / "01_sweep_lrap_n_components_against_curve.csv")
    got = got.set_index("curve")
    assert got.loc["rf", "role"] == "baseline" and got.loc["rf", "best mean"] == pytest.approx(0.8)
    assert got.loc["rf-sparse-q*", "best x"] == 1 and got.loc["rf-sparse-q*", "beats_best verdict"] == "agrees"
    assert got.loc["rf-subsample-q*", "best vs baseline best"] == "level"
    assert got.loc["rf-subsample-q*", "beats_best verdict"] == "differs"
    # a single variant has no loss over q to compare
    cfg["reports"][0]["against_curve"]["more_robust"] = True
    with pytest.raises(ConfigError, match="more_robust compares two curves"):
        build_experiment_report(csv, "fig", cfg, tmp_path / "reference", tmp_path / "out2")


def test_a_curve_without_the_hue_parameter_is_one_line_named_by_its_variants_prefix(tmp_path):
    """Figs 5.2-5.3 colour the curves by q: RF on the original outputs, swept over k too but without a q, is one
    line (rf-k*), not one line per k."""
    from forestbench.report.experiment import _with_hue
    from forestbench.report.kinds import Context

    rows = []
    for variant, q, k in [("rf-k2", np.nan, 2), ("rf-k10", np.nan, 10), ("rf-gaussian-q1-k2", 1, 2),
                          ("rf-gaussian-q1-k10", 1, 10)]:
        rows.append({"dataset": "delicious", "method": "random_forest", "variant": variant, "value": 0.3,
                     "param.n_components": q, "param.max_features": k})
    scores = pd.DataFrame(rows)
    ctx = Context("fig", {}, scores, tmp_path, ["delicious"], list(scores["variant"]))
    got = _with_hue(ctx, scores, "param.n_components", "param.max_features")
    assert got["param.n_components"].tolist() == ["rf-k*", "rf-k*", 1, 1]
    assert scores["param.n_components"].isna().sum() == 2          # the caller's rows are left as they were
