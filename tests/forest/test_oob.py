"""Out-of-bag estimates of our forests, with scikit-learn's forest as the oracle."""
import itertools
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.ensemble import RandomForestRegressor as SkForest
from sklearn.metrics import mean_squared_error, r2_score

from forestbench.forest import ExtraTreesRegressor, RandomForestRegressor, _forest


def _one_d(n=80, seed=0):
    rng = np.random.default_rng(seed)
    x = np.sort(rng.uniform(0, 2, n))
    y = (1 - x / 2) * np.sin(8 * x) + rng.normal(0, 0.5, n)
    return x[:, None], y


def _with_sklearn_bootstrap(monkeypatch, sk_forest, n):
    """Make our forest draw, for tree i, exactly the bootstrap sample of scikit-learn's tree i."""
    counter = itertools.count()

    class IndexedStreams(_forest._TreeStreams):
        __slots__ = ("index",)

        def __init__(self, seq):
            super().__init__(seq)
            self.index = next(counter)

    draws = [np.bincount(rows, minlength=n).astype(float) for rows in sk_forest.estimators_samples_]

    def tree_weights(self, n_rows, streams, sample_weight):
        assert sample_weight is None and n_rows == n
        return draws[streams.index]

    monkeypatch.setattr(_forest, "_TreeStreams", IndexedStreams)
    monkeypatch.setattr(_forest._BaseProjectionForest, "_tree_weights", tree_weights)


@pytest.mark.parametrize("max_depth", [None, 3])
def test_oob_prediction_equals_sklearn_for_the_same_bootstrap_draws(monkeypatch, max_depth):
    X, y = _one_d()
    sk = SkForest(n_estimators=25, max_depth=max_depth, oob_score=True, random_state=3).fit(X, y)
    _with_sklearn_bootstrap(monkeypatch, sk, len(y))
    ours = RandomForestRegressor(n_estimators=25, max_depth=max_depth, max_features=1.0, oob_score=True,
                                 random_state=0).fit(X, y)
    # one feature, distinct inputs: the same weighted sample grows the same tree in both implementations
    np.testing.assert_allclose(ours.predict(X), sk.predict(X), rtol=1e-12, atol=1e-12)
    assert ours.oob_prediction_.shape == sk.oob_prediction_.shape == (len(y),)
    np.testing.assert_allclose(ours.oob_prediction_, sk.oob_prediction_, rtol=1e-12, atol=1e-12)
    assert ours.oob_score_ == pytest.approx(sk.oob_score_, rel=1e-12)


def test_oob_by_hand_multioutput_sparse_and_callable():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(120, 5))
    Y = (X[:, :3] + rng.normal(0, 0.5, (120, 3)) > 0).astype(float)
    forest = RandomForestRegressor(n_estimators=30, max_features=1.0, oob_score=mean_squared_error,
                                   random_state=4).fit(X, sp.csr_matrix(Y))
    # the oracle: average, for each row, the trees whose bootstrap left it out
    pred, count = np.zeros_like(Y), np.zeros(len(Y))
    for i, tree in enumerate(forest.estimators_):
        out = forest._tree_weights(len(Y), forest._streams[i], None) == 0
        pred[out] += tree.predict(X[out].astype(np.float32))
        count[out] += 1
    assert count.min() > 0
    pred /= count[:, None]
    assert forest.oob_prediction_.shape == (120, 3)
    np.testing.assert_allclose(forest.oob_prediction_, pred, rtol=1e-12)
    assert forest.oob_score_ == pytest.approx(mean_squared_error(Y, pred))
    info = forest.run_info_()
    assert info["oob_coverage"] == 1.0 and info["oob_mse"] == pytest.approx(np.mean((Y - pred) ** 2))


def test_too_few_trees_warn_and_give_zero_as_sklearn():
    X, y = _one_d(60)
    with pytest.warns(UserWarning, match="Some inputs do not have OOB scores"):
        forest = RandomForestRegressor(n_estimators=1, oob_score=True, random_state=0).fit(X, y)
    inbag = forest._tree_weights(60, forest._streams[0], None) > 0
    assert np.all(forest.oob_prediction_[inbag] == 0)
    assert np.all(forest.oob_prediction_[~inbag] == forest.estimators_[0].predict(X[~inbag].astype(np.float32)).ravel())
    assert forest.oob_score_ == pytest.approx(r2_score(y, forest.oob_prediction_))
    assert forest.run_info_()["oob_coverage"] == pytest.approx(np.mean(~inbag))


def test_oob_error_estimates_the_test_error():
    from sklearn.datasets import make_friedman1

    X, y = make_friedman1(n_samples=2600, noise=1.0, random_state=0)
    forest = RandomForestRegressor(n_estimators=100, max_features=1.0, oob_score=True, random_state=0,
                                   n_jobs=2).fit(X[:600], y[:600])
    test = mean_squared_error(y[600:], forest.predict(X[600:]))
    oob = mean_squared_error(y[:600], forest.oob_prediction_)
    # the out-of-bag error is a slightly pessimistic estimate (trees of ~63 % of the rows) of the test error
    assert 0.85 * test < oob < 1.4 * test
    assert forest.oob_score_ == pytest.approx(r2_score(y[:600], forest.oob_prediction_))


@pytest.mark.parametrize("make", [lambda: RandomForestRegressor(n_estimators=3, bootstrap=False, oob_score=True),
                                  lambda: ExtraTreesRegressor(n_estimators=3, oob_score=True)])
def test_oob_without_bootstrap_is_an_error_as_sklearn(make):
    X, y = _one_d(30)
    with pytest.raises(ValueError, match="Out of bag estimation only available if bootstrap=True"):
        make().fit(X, y)


def test_bad_oob_parameters():
    X, y = _one_d(30)
    with pytest.raises(ValueError, match="oob_score"):
        RandomForestRegressor(n_estimators=3, oob_score="yes").fit(X, y)
    with pytest.raises(ValueError, match="leaf_labels='inbag'"):
        RandomForestRegressor(n_estimators=3, oob_score=True, leaf_labels="full").fit(X, y)


def test_oob_attributes_follow_the_last_fit():
    X, y = _one_d(40)
    forest = RandomForestRegressor(n_estimators=10, oob_score=True, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        forest.fit(X, y)
    assert hasattr(forest, "oob_score_") and hasattr(forest, "oob_prediction_")
    forest.set_params(oob_score=False).fit(X, y)
    assert not hasattr(forest, "oob_score_") and not hasattr(forest, "oob_prediction_")
    assert forest.run_info_() == {}
    # the out-of-bag bookkeeping does not change the forest itself
    plain = RandomForestRegressor(n_estimators=10, random_state=0).fit(X, y)
    np.testing.assert_array_equal(plain.predict(X), forest.predict(X))
