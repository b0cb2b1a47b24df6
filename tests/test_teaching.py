"""The lecture slides' teaching problems: their data, the fish tree, out-of-bag importance, the slides' table."""
import numpy as np
import pandas as pd
import pytest

from forestbench.datasets.embedded import fish, fish_samples, slides_sine, slides_sine_function
from forestbench.errors import ConfigError
from forestbench.tree.impurity import entropy


# --------------------------------------------------------------------------------- the bagging / forest problem
def test_slides_training_set_is_the_slides_draw():
    ds = slides_sine(n_test=1000, n_test_sets=3)
    train, test = ds.given_splits[0]
    x, y = ds.X[train, 0].astype(float), ds.Y[train, 0]
    np.testing.assert_allclose(x, np.linspace(0, 2, 70), atol=1e-6)
    # the slides' scripts: RandomState(1), 80 + 16 discarded uniforms, then N(0, sqrt(0.7)) noise
    rng = np.random.RandomState(1)
    rng.rand(80, 1), rng.rand(16)
    expected = (1 - np.linspace(0, 2, 70) / 2) * np.sin(8 * np.linspace(0, 2, 70)) + rng.normal(0, np.sqrt(0.7), 70)
    np.testing.assert_array_equal(y, expected)
    assert ds.meta["bayes_risk"] == 0.7


def test_slides_test_sets_are_fresh_and_have_the_stated_noise():
    ds = slides_sine(n_test=200_000, n_test_sets=2)
    (tr0, te0), (tr1, te1) = ds.given_splits
    np.testing.assert_array_equal(tr0, tr1)            # one fixed training set ...
    assert len(te0) == len(te1) == 200_000 and not set(te0) & set(te1)   # ... and disjoint fresh test sets
    x = ds.X[te0, 0].astype(np.float64)
    assert 0 <= x.min() and x.max() <= 2 and abs(x.mean() - 1) < 0.01
    resid = ds.Y[te0, 0] - slides_sine_function(x)
    # variance 0.7 (not sd 0.7): the Bayes predictor's test MSE is the Bayes risk
    assert np.mean(resid ** 2) == pytest.approx(0.7, abs=0.01)
    assert not np.allclose(ds.Y[te0[:100], 0], ds.Y[te1[:100], 0])


def test_redrawn_training_noise_and_bad_parameters():
    ds = slides_sine(n_test=10, n_test_sets=2, training_noise="redrawn")
    (tr0, te0), (tr1, te1) = ds.given_splits
    assert len(tr0) == 70 and not set(tr0) & set(tr1)
    assert not np.allclose(ds.Y[tr0, 0], ds.Y[tr1, 0])
    np.testing.assert_array_equal(ds.X[tr0], ds.X[tr1])
    with pytest.raises(ConfigError, match="training_noise"):
        slides_sine(training_noise="fresh")


def test_our_bagging_matches_sklearn_on_the_slides_problem():
    """One bagged deep tree and ten depth-3 trees, ours and scikit-learn's, over 12 seeds: the mean test MSEs agree
    within Monte-Carlo error (they use different random streams, so only in distribution)."""
    from sklearn.ensemble import BaggingRegressor, RandomForestRegressor as SkForest

    from forestbench.forest import RandomForestRegressor

    ds = slides_sine(n_test=1, n_test_sets=1)
    tr, _ = ds.given_splits[0]
    X, y = ds.X[tr], ds.Y[tr, 0]
    xt = np.random.default_rng(9).uniform(0, 2, 20_000).astype(np.float32)[:, None]
    f = slides_sine_function(xt[:, 0].astype(float))

    def risk(model):   # excess risk + Bayes risk: the test MSE without the test-noise Monte-Carlo error
        return 0.7 + np.mean((model.predict(xt) - f) ** 2)

    for ours_kw, sk in [({"n_estimators": 1}, lambda s: BaggingRegressor(n_estimators=1, random_state=s)),
                        ({"n_estimators": 10, "max_depth": 3},
                         lambda s: SkForest(n_estimators=10, max_depth=3, random_state=s))]:
        a = np.array([risk(RandomForestRegressor(max_features=1.0, random_state=s, **ours_kw).fit(X, y))
                      for s in range(12)])
        b = np.array([risk(sk(100 + s).fit(X, y)) for s in range(12)])
        se = np.sqrt(a.var(ddof=1) / 12 + b.var(ddof=1) / 12)
        assert abs(a.mean() - b.mean()) < 3 * se, (ours_kw, a.mean(), b.mean(), se)


# --------------------------------------------------------------------------------------------- the fish example
def test_fish_data_as_described():
    X, y = fish_samples(n_per_class=4000, seed=1)
    tuna, salmon = X[y == 0], X[y == 1]
    assert X.shape == (8000, 3) and (y == 0).sum() == 4000
    np.testing.assert_allclose(tuna.mean(0), [45, 6, 5], atol=0.2)
    np.testing.assert_allclose(salmon.mean(0), [30, 4, 5], atol=0.2)
    np.testing.assert_allclose(tuna.std(0), [6, 3, 10 / np.sqrt(12)], atol=0.2)
    np.testing.assert_allclose(salmon.std(0), [6, 1, 10 / np.sqrt(12)], atol=0.2)
    assert fish_samples(blurred=False)[0].shape == (800, 2)
    ds = fish()
    assert ds.X.shape == (800, 3) and ds.task == "binary" and ds.meta["feature_names"][2] == "birth_hour"


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fish_depth_one_entropy_tree_splits_on_length_near_37_5(seed):
    """The slide's depth-1 tree: length <= 37.5 (midway between the class means), children ~0.4 bits."""
    from sklearn.model_selection import train_test_split
    from sklearn.tree import DecisionTreeClassifier

    X, y = fish_samples(seed=seed)
    X_train, _, y_train, _ = train_test_split(X, y, random_state=seed)      # 75 %: 600 fish, as on the slide
    assert len(y_train) == 600
    tree = DecisionTreeClassifier(criterion="entropy", max_depth=1, random_state=0).fit(X_train, y_train)
    t = tree.tree_
    assert t.feature[0] == 0 and 35.0 < t.threshold[0] < 40.0
    root = np.bincount(y_train.astype(int), minlength=2)
    left = np.bincount(y_train[X_train[:, 0] <= t.threshold[0]].astype(int), minlength=2)
    right = root - left
    assert left[1] > left[0] and right[0] > right[1]           # salmon (short) left, tuna right
    # our reference entropy reproduces scikit-learn's node impurities, and they are of the slide's size
    for node, counts in zip((0, 1, 2), (root, left, right)):
        assert t.impurity[node] == pytest.approx(entropy(counts), abs=1e-12)
    assert entropy(root) > 0.99 and 0.25 < entropy(left) < 0.6 and 0.25 < entropy(right) < 0.6


def test_our_gini_tree_finds_the_same_root_split():
    from forestbench.tree import DecisionTreeRegressor

    X, y = fish_samples(seed=0)
    tree = DecisionTreeRegressor(max_depth=1, random_state=0).fit(X, np.eye(2)[y.astype(int)])
    assert tree.tree_.feature[0] == 0 and 35.0 < tree.tree_.threshold[0] < 40.0


def test_oob_permutation_importance_on_the_fish():
    from forestbench.forest import RandomForestRegressor, oob_permutation_importance

    X, y = fish_samples(seed=0)
    forest = RandomForestRegressor(n_estimators=60, max_features="sqrt", random_state=0).fit(X, y)
    imp = oob_permutation_importance(forest, X, y, random_state=0)
    assert imp.importances.shape == (3, 60)
    length, weight, hour = imp.importances_mean
    assert length > 0.15 and weight > 0.03            # permuting length or weight costs accuracy out of bag
    assert abs(hour) < 0.02 and abs(hour) < 0.1 * length and hour < weight   # birth hour: about nothing


def test_oob_permutation_importance_is_exactly_zero_for_unused_features():
    from forestbench.forest import RandomForestRegressor, oob_permutation_importance

    X, y = fish_samples(seed=3)
    forest = RandomForestRegressor(n_estimators=20, max_depth=1, max_features=None, random_state=0).fit(X, y)
    assert all(t.tree_.feature[0] == 0 for t in forest.estimators_)     # stumps on length only
    imp = oob_permutation_importance(forest, X, y, loss="mse", n_repeats=2, random_state=0)
    assert imp.importances.shape == (3, 40)
    assert np.all(imp.importances[1:] == 0) and imp.importances_mean[0] > 0


def test_oob_permutation_importance_bad_input():
    from forestbench.forest import ExtraTreesRegressor, RandomForestRegressor, oob_permutation_importance

    X, y = fish_samples(n_per_class=30, seed=0)
    with pytest.raises(ValueError, match="bootstrap=True"):
        oob_permutation_importance(ExtraTreesRegressor(n_estimators=2).fit(X, y), X, y)
    forest = RandomForestRegressor(n_estimators=3, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="loss must be"):
        oob_permutation_importance(forest, X, y, loss="accuracy")
    with pytest.raises(ValueError, match="2 features but the forest was fitted on 3"):
        oob_permutation_importance(forest, X[:, :2], y)


# ------------------------------------------------------------------------------------ the slides' table, checked
def _scores(means, sd=0.01, n=30, seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for variant, mean in means.items():
        for r, v in enumerate(mean + sd * rng.standard_normal(n)):
            rows.append({"experiment": "e", "dataset": "slides_sine", "method": "m", "variant": variant, "repeat": r,
                         "metric": "mse", "value": v, "higher_is_better": False, "step": np.nan, "n_test": 100000})
    return pd.DataFrame(rows)


def _ref_cfg():
    bag = {f"bagging-B{b}": {"method_id": "bagging_regression", "n_estimators": b} for b in (1, 10, 20, 50, 100)}
    rf = {f"rf-B{b}-depth{d}": {"method_id": "random_forest_regression", "n_estimators": b, "max_depth": d}
          for b, d in ((1, 3), (1, 30), (10, 3), (50, 3), (20, 5))}
    return {"table": "slides_bagging", "metric": "mse", "datasets": {"slides_sine": "slides_synthetic_regression"},
            "tolerance_std": 3, "methods": {**bag, **rf}, "rerun": {"bagging-B1": [1.188, 0.063]},
            "oracle": {"bagging-B1": "sk-B1"},
            "claims": {"bagging": list(bag), "shallow_forests": ["rf-B10-depth3", "rf-B50-depth3"],
                       "single_deep_tree": "rf-B1-depth30"}}


RERUN = {"bagging-B1": 1.188, "bagging-B10": 0.920, "bagging-B20": 0.900, "bagging-B50": 0.889,
         "bagging-B100": 0.886, "rf-B1-depth3": 0.911, "rf-B1-depth30": 1.188, "rf-B10-depth3": 0.759,
         "rf-B50-depth3": 0.749, "rf-B20-depth5": 0.803, "sk-B1": 1.19}


def _compare(scores):
    from pathlib import Path

    from forestbench.report.reproduction import compare_any

    return compare_any(scores, _ref_cfg(), Path(__file__).parents[1] / "config" / "reference", "e")


def test_slides_table_cells_and_claims_pass_on_the_expected_numbers():
    scores = _scores(RERUN, sd=0.012)
    rep = _compare(scores)
    f = rep.frame.set_index("item")
    cells = rep.frame[rep.frame["block"] == "cell"]
    assert len(cells) == 10 and set(cells["n_repeats"]) == {30}
    # the slide value is judged in units of our sd: the 20-tree bagging slide (0.939) is ~2 sd above 0.900
    b20 = cells[cells["item"].str.startswith("bagging-B20 ")].iloc[0]
    assert b20["slide"] == 0.939 and b20["in_our_std"] < -1 and b20["status"] == "ok"
    claims = rep.frame[rep.frame["block"] == "claim"]
    assert list(claims["status"]) == ["ok"] * 4, claims[["item", "status", "note"]]
    assert f.loc["bagging-B1 vs sk-B1", "status"] == "ok"
    assert "1.188 ± 0.063" in rep.to_markdown()


def test_slides_table_flags_a_far_cell_and_failed_claims():
    wrong = dict(RERUN, **{"bagging-B100": 1.05, "rf-B10-depth3": 0.95, "rf-B1-depth30": 1.40, "sk-B1": 1.40})
    wrong["rf-B1-depth3"] = 0.69                                   # below the Bayes risk
    rep = _compare(_scores(wrong, sd=0.01))
    f = rep.frame.set_index("item")
    assert f.loc[[i for i in f.index if i.startswith("bagging-B100 ")][0], "status"] == "OUT OF TOLERANCE"
    claims = rep.frame[rep.frame["block"] == "claim"].set_index("item")["status"]
    assert (claims == "DISAGREES").all(), claims                  # all four claims fail on these numbers
    assert f.loc["bagging-B1 vs sk-B1", "status"] == "DISAGREES"
    assert rep.counts()["disagree"] >= 6


def test_slides_table_with_nothing_run_and_bad_mapping():
    from forestbench.report.data import empty_scores

    rep = _compare(empty_scores())
    assert (rep.frame["status"] == "not run").all()
    cfg = _ref_cfg()
    cfg["methods"]["bagging-B1"] = {"method_id": "bagging_regression", "n_estimators": 7}
    from pathlib import Path

    from forestbench.report.reproduction import compare_any
    with pytest.raises(ConfigError, match="no cell"):
        compare_any(_scores(RERUN), cfg, Path(__file__).parents[1] / "config" / "reference", "e")


def test_oob_curve_report(tmp_path):
    from forestbench.report import build_experiment_report

    rows = []
    for b, test, oob in ((5, 1.05, 1.30), (50, 0.95, 0.97)):
        for r in range(4):
            rows.append({"experiment": "o", "dataset": "slides_sine_redrawn", "method": "random_forest",
                         "variant": f"bagging-oob-B{b}", "repeat": r, "metric": "mse", "value": test + 0.01 * r,
                         "higher_is_better": False, "param.n_estimators": b, "extra.oob_mse": oob + 0.02 * r})
    pd.DataFrame(rows).to_csv(tmp_path / "scores.csv", index=False)
    cfg = {"datasets": ["slides_sine_redrawn"], "protocol": "oob", "metrics": ["mse"],
           "methods": [{"name": "bagging-oob-B{n_estimators}", "method": "random_forest",
                        "grid": {"n_estimators": [5, 50]}}],
           "reports": [{"kind": "oob_curve", "metric": "mse", "x": "param.n_estimators"}]}
    written = build_experiment_report(tmp_path / "scores.csv", "o", cfg, tmp_path, tmp_path / "report")
    table = pd.read_csv(next(p for p in written if p.name.endswith("oob_curve_mse_n_estimators.csv")))
    assert list(table["param.n_estimators"]) == [5, 50]
    np.testing.assert_allclose(table["difference"], [0.25 + 0.015, 0.02 + 0.015])
    np.testing.assert_allclose(table["test_mean"], [1.065, 0.965])
    assert any(p.suffix == ".png" for p in written)
    assert "out-of-bag − test" in (tmp_path / "report" / "report.md").read_text()
