"""The boosting family in the method registry, the single-target forests and the boosting peers."""
import numpy as np
import pytest

from forestbench.forest._single_target import SingleTargetForestRegressor
from forestbench.errors import ConfigError
from forestbench.workflow.methods import PLANNED, get_method

OURS = ["st_gbrt", "gbmort", "gbrt_rpo", "gbrt_relabel_rpo", "artificial_gbrt", "st_random_forest"]
PEERS = ["xgboost_multi_output_tree", "xgboost_one_output_per_tree", "catboost_multi", "lightgbm_per_output",
         "sklearn_gbrt_per_output"]


def _data(n=120, p=4, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, p)).astype(np.float32)
    Y = np.sin(4 * X[:, :1]) + X[:, -1:] * rng.normal(size=(1, d)) + 0.1 * rng.normal(size=(n, d))
    return X, Y


@pytest.mark.parametrize("name", OURS + PEERS)
def test_registered_not_planned_with_a_cost(name):
    spec = get_method(name)
    assert name not in PLANNED
    cost = spec.cost_of(300, 5, 16, {"n_estimators": 1000, "max_leaf_nodes": 2})
    assert cost.fit_seconds > 0 and cost.model_mb > 0
    # more iterations cost more
    assert spec.cost_of(300, 5, 16, {"n_estimators": 2000, "max_leaf_nodes": 2}).fit_seconds > cost.fit_seconds


@pytest.mark.parametrize("name", ["st_gbrt", "gbmort", "gbrt_rpo", "gbrt_relabel_rpo", "artificial_gbrt"])
def test_boosting_methods_are_staged(name):
    assert get_method(name).supports("staged_predict")


def test_parameters_checked_before_any_job():
    with pytest.raises(ConfigError, match="learning_rate"):
        get_method("gbmort").check_params({"learning_rate": 1.5})
    with pytest.raises(ConfigError, match="loss"):
        get_method("gbrt_rpo").check_params({"loss": "tuned"})
    with pytest.raises(ConfigError, match="strategy"):
        get_method("artificial_gbrt").check_params({"strategy": "chain"})
    get_method("gbrt_relabel_rpo").check_params({"output_projection": "gaussian", "n_components": 5})


def test_rpo_cost_below_gbmort_on_many_outputs():
    params = {"n_estimators": 100, "max_leaf_nodes": 8}
    rpo = get_method("gbrt_rpo").cost_of(12920, 500, 983, params)
    mort = get_method("gbmort").cost_of(12920, 500, 983, params)
    assert rpo.fit_seconds < mort.fit_seconds and rpo.model_mb < mort.model_mb


def test_single_target_forest_is_one_forest_per_output():
    from forestbench.forest import RandomForestRegressor
    X, Y = _data()
    est = SingleTargetForestRegressor(n_estimators=10, max_features=2, random_state=4).fit(X, Y)
    P = est.predict(X)
    assert P.shape == Y.shape and len(est.estimators_) == 3
    seed = est.estimators_[1].random_state
    one = RandomForestRegressor(n_estimators=10, max_features=2, random_state=seed).fit(X, Y[:, 1:2])
    np.testing.assert_allclose(P[:, 1], np.asarray(one.predict(X)).ravel())
    # the same seed gives the same forests with one or two threads
    P2 = SingleTargetForestRegressor(n_estimators=10, max_features=2, random_state=4, n_jobs=2).fit(X, Y).predict(X)
    np.testing.assert_array_equal(P, P2)


def test_single_target_forest_passes_the_constant_feature_rule():
    # sparse binary inputs, where most features are constant in a small node: scikit-learn's rule (constant features
    # drawn count towards k) grows other trees than ours, and every output's forest must get the rule
    from forestbench.forest import RandomForestRegressor
    rng = np.random.default_rng(0)
    X = (rng.random((120, 40)) < 0.05).astype(float)
    Y = (X[:, :3] + (rng.random((120, 3)) < 0.2) > 0).astype(float)
    ours = SingleTargetForestRegressor(n_estimators=5, max_features=3, random_state=2).fit(X, Y)
    sk = SingleTargetForestRegressor(n_estimators=5, max_features=3, count_constant_features=True,
                                     random_state=2).fit(X, Y)
    assert all(f.count_constant_features for f in sk.estimators_)
    assert not any(f.count_constant_features for f in ours.estimators_)
    seed = sk.estimators_[2].random_state
    one = RandomForestRegressor(n_estimators=5, max_features=3, count_constant_features=True,
                                random_state=seed).fit(X, Y[:, 2:3])
    np.testing.assert_array_equal(sk.predict(X)[:, 2], np.asarray(one.predict(X)).ravel())
    assert not np.array_equal(sk.predict(X), ours.predict(X))


def test_sklearn_peer_equals_st_gbrt_on_tie_free_data():
    from forestbench.boosting._gradient_boosting import STGradientBoostingRegressor
    from forestbench.peers._boosting_libraries import SklearnGBRTPerOutput
    X, Y = _data(p=1)
    ours = STGradientBoostingRegressor(n_estimators=20, learning_rate=0.2, max_leaf_nodes=3).fit(X, Y)
    peer = SklearnGBRTPerOutput(n_estimators=20, learning_rate=0.2, max_leaf_nodes=3).fit(X, Y)
    np.testing.assert_allclose(ours.predict(X), peer.predict(X), atol=1e-8)
    for a, b in zip(ours.staged_predict(X[:5]), peer.staged_predict(X[:5])):
        np.testing.assert_allclose(a, b, atol=1e-8)


@pytest.mark.parametrize("cls_name,module", [
    ("XGBoostMultiOutputTree", "xgboost"), ("XGBoostOneOutputPerTree", "xgboost"), ("CatBoostMulti", "catboost"),
    ("LightGBMPerOutput", "lightgbm")])
@pytest.mark.parametrize("loss", ["square", "logistic"])
def test_peers_fit_and_learn(cls_name, module, loss):
    pytest.importorskip(module)
    from forestbench.peers import _boosting_libraries as _boosting_peers
    X, Y = _data(n=200)
    if loss == "logistic":
        Y = (Y > np.median(Y, axis=0)).astype(float)
    est = getattr(_boosting_peers, cls_name)(n_estimators=30, learning_rate=0.3, max_leaf_nodes=4,
                                             loss=loss).fit(X, Y)
    P = est.predict(X)
    assert P.shape == Y.shape and np.all(np.isfinite(P))
    if loss == "logistic":
        assert np.all((P >= 0) & (P <= 1))
        assert np.mean((P > 0.5) == (Y > 0.5)) > 0.75
    else:
        assert np.mean((Y - P) ** 2) < 0.5 * np.mean((Y - Y.mean(axis=0)) ** 2)


def test_staged_record_of_a_boosting_fit():
    # the runner's staged scores: the thesis LRAP fixture (0.392) as a first stage, then a real fit whose records
    # carry the cumulative trees (d per stage for st-gbrt) and fit seconds
    from forestbench.boosting._gradient_boosting import STGradientBoostingRegressor
    from forestbench.metrics import get_metric
    from forestbench.workflow.runner import staged_record

    y = np.array([[1, 0, 1, 0, 0], [1, 0, 0, 0, 0]])
    f = np.array([[.75, .6, .1, .8, .15], [.25, .8, .1, .15, .3]])

    class Fixture:
        n_estimators = 1

        def staged_predict(self, X):
            yield f

    rec = staged_record(Fixture(), None, y, y, [get_metric("lrap")], 1.0)
    assert rec["staged_scores"]["lrap"]["1"] == pytest.approx(0.3917, abs=1e-4)

    rng = np.random.default_rng(0)
    X = rng.uniform(size=(150, 5)).astype(np.float32)
    Y = ((X[:, :4] + 0.3 * rng.normal(size=(150, 4))) > 0.5).astype(float)
    est = STGradientBoostingRegressor(n_estimators=30, loss="logistic", max_leaf_nodes=3).fit(X[:100], Y[:100])
    rec = staged_record(est, X[100:], Y[100:], Y[:100], [get_metric("lrap")], 1.0)
    steps = rec["staged"]["steps"]
    assert steps[0] == 1 and steps[-1] == 30
    assert rec["staged"]["n_trees"] == [4 * s for s in steps]
    assert rec["staged"]["fit_seconds"] == [float(est.stage_fit_seconds_[s - 1]) for s in steps]
    assert rec["staged_scores"]["lrap"]["30"] == pytest.approx(get_metric("lrap")(Y[100:], est.predict(X[100:]),
                                                                                   Y[:100]))
