"""The l1-compressed extra-trees estimator (rET): the rebuilt forest is the sparse linear model, the pruning rule,
cross-validation over t, determinism and bad input."""
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import NotFittedError

from forestbench.datasets.embedded import friedman1, friedman1_multioutput, two_norm
from forestbench.forest import ExtraTreesRegressor
from forestbench.compression._compressed_trees import CompressedExtraTreesRegressor
from forestbench.linear import LassoCVBaseline
from forestbench.tree import _indicator
from forestbench.tree.indicator import forest_node_indicator, tree_node_arrays


@pytest.fixture(scope="module")
def data():
    ds = friedman1(700, 10, seed=11)
    return ds.X[:200], ds.Y[:200, 0], ds.X[200:], ds.Y[200:, 0]


def refit_forest(model, X, y):
    """The forest the estimator compressed (same parameters and seed: see the estimator's seed rule)."""
    return ExtraTreesRegressor(model.n_estimators, max_features=model.max_features,
                               min_samples_split=model.min_samples_split,
                               random_state=model.random_state).fit(X, y.reshape(len(y), -1))


@pytest.mark.parametrize("t", [0.5, 2.0, 6.0])
def test_rebuilt_forest_predicts_the_sparse_linear_model(data, t):
    X, y, Xt, _ = data
    model = CompressedExtraTreesRegressor(20, t=t, random_state=3).fit(X, y)
    forest = refit_forest(model, X, y)
    for rows in (X, Xt):
        linear = model.path_.predict(forest_node_indicator(forest, rows))[:, 0]
        np.testing.assert_allclose(model.predict(rows), linear, rtol=0, atol=1e-9)
    if t < 5:
        assert model.n_steps_ == round(t / 0.01) and model.t_ == pytest.approx(t)
    else:  # the path ends (no step lowers the training error) before reaching t = 6
        assert model.n_steps_ < round(t / 0.01) and model.t_ == pytest.approx(0.01 * model.n_steps_)
    assert model.n_test_nodes_ < model.original_n_test_nodes_
    assert model.model_bytes_ < model.original_flat_bytes_


def test_t_zero_gives_the_constant_model(data):
    X, y, Xt, _ = data
    model = CompressedExtraTreesRegressor(10, t=0.0, random_state=0).fit(X, y)
    np.testing.assert_allclose(model.predict(Xt), y.mean(), rtol=0, atol=1e-12)
    assert model.n_test_nodes_ == 0 and model.n_trees_ == 0
    assert model.run_info_()["compression_factor"] is None


def test_large_t_reproduces_the_linear_training_fit(data):
    X, y, _, _ = data
    small = CompressedExtraTreesRegressor(10, t=1.0, random_state=0).fit(X, y)
    large = CompressedExtraTreesRegressor(10, t=40.0, random_state=0).fit(X, y)
    forest = refit_forest(large, X, y)
    linear = large.path_.predict(forest_node_indicator(forest, X))[:, 0]
    np.testing.assert_allclose(large.predict(X), linear, rtol=0, atol=1e-9)
    err = lambda m: np.mean((m.predict(X) - y) ** 2) / y.var()  # noqa: E731
    assert err(large) < 0.05 < err(small)  # the path fits the training set as t grows


def test_pruning_keeps_exactly_the_ancestors_of_nonzero_nodes(data):
    X, y, _, _ = data
    model = CompressedExtraTreesRegressor(15, t=1.5, random_state=4).fit(X, y)
    forest = refit_forest(model, X, y)
    left, right, _, _, offsets = tree_node_arrays(forest)
    parent, _ = _indicator.parent_depth(left, right, offsets)
    nonzero = np.flatnonzero(np.any(model.coef_ != 0, axis=1))
    kept = set()
    for node in nonzero:  # oracle: walk up from every non-zero node, its strict ancestors are test nodes
        node = parent[node]
        while node >= 0 and node not in kept:
            kept.add(int(node))
            node = parent[node]
    assert model.n_test_nodes_ == len(kept) > 0
    assert model.n_nodes_ == 2 * model.n_test_nodes_ + model.n_trees_  # binary trees
    roots_kept = {int(np.searchsorted(offsets, k, side="right") - 1) for k in kept}
    assert model.n_trees_ == len(roots_kept)
    assert model.original_n_test_nodes_ == int((left >= 0).sum())


def test_cross_validation_chooses_the_minimiser_and_is_deterministic(data):
    X, y, Xt, yt = data
    params = dict(n_estimators=10, cv=3, max_t=4.0, random_state=8)
    a = CompressedExtraTreesRegressor(**params).fit(X, y)
    b = CompressedExtraTreesRegressor(**params).fit(X, y)
    np.testing.assert_array_equal(a.predict(Xt), b.predict(Xt))
    assert a.cv_losses_.shape == (401,)
    assert a.t_ == pytest.approx(a.cv_t_[np.argmin(a.cv_losses_)])
    assert a.cv_losses_.min() < a.cv_losses_[0]  # some compression beats the constant model
    assert 0 < a.t_ < 4.0
    info = a.run_info_()
    assert info["t_star"] == a.t_ and info["et_test_nodes"] == a.original_n_test_nodes_
    assert info["compression_factor"] == pytest.approx(a.original_n_test_nodes_ / a.n_test_nodes_)
    c = CompressedExtraTreesRegressor(**{**params, "random_state": 9}).fit(X, y)
    assert not np.array_equal(a.predict(Xt), c.predict(Xt))


def test_binary_target_uses_zero_one_loss_and_scores():
    ds = two_norm(500, 20, seed=2)
    X, y = ds.X[:200], ds.Y[:200, 0].astype(int)
    model = CompressedExtraTreesRegressor(10, cv=3, max_t=2.0, random_state=0).fit(X, y)
    assert model.loss_ == "zero_one"
    np.testing.assert_array_equal(model.classes_, [0, 1])
    scores = model.predict(ds.X[200:])
    error = np.mean((scores >= 0.5) != ds.Y[200:, 0])
    assert error < 0.15
    labels = np.where(y == 1, "b", "a")  # string classes: score of the second class
    model_s = CompressedExtraTreesRegressor(10, t=1.0, random_state=0).fit(X, labels)
    model_i = CompressedExtraTreesRegressor(10, t=1.0, random_state=0).fit(X, y)
    np.testing.assert_allclose(model_s.predict(X), model_i.predict(X))


def test_multi_output_compression_is_exact_and_shares_the_indicator_space():
    ds = friedman1_multioutput("group", n_samples=400, n_outputs=3, seed=0)
    X, Y = ds.X[:200], ds.Y[:200]
    model = CompressedExtraTreesRegressor(10, t=1.0, random_state=0).fit(X, Y)
    forest = refit_forest(model, X, Y)
    pred = model.predict(ds.X[200:])
    assert pred.shape == (200, 3)
    linear = model.path_.predict(forest_node_indicator(forest, ds.X[200:]))
    np.testing.assert_allclose(pred, linear, rtol=0, atol=1e-9)
    assert model.n_test_nodes_ < model.original_n_test_nodes_


@pytest.mark.parametrize("params, match", [
    ({"t": -0.1}, "'t'"),
    ({"epsilon": 0.0}, "'epsilon'"),
    ({"epsilon": -1.0}, "'epsilon'"),
    ({"cv": 1}, "'cv'"),
    ({"column_scaling": "l2"}, "'column_scaling'"),
])
def test_bad_parameters_raise_naming_the_parameter(data, params, match):
    X, y, _, _ = data
    with pytest.raises(ValueError, match=match):
        CompressedExtraTreesRegressor(5, **params).fit(X, y)


def test_more_than_two_classes_is_an_error(data):
    X, _, _, _ = data
    y3 = np.arange(X.shape[0]) % 3
    with pytest.raises(ValueError, match="binary"):
        CompressedExtraTreesRegressor(5, t=1.0, loss="zero_one").fit(X, y3)
    with pytest.raises(ValueError, match="binary"):
        CompressedExtraTreesRegressor(5, t=1.0).fit(X, np.array(["a", "b", "c"])[y3])


def test_unfitted_model_raises(data):
    X, _, _, _ = data
    with pytest.raises(NotFittedError):
        CompressedExtraTreesRegressor(5).predict(X)
    with pytest.raises(NotFittedError):
        CompressedExtraTreesRegressor(5).run_info_()


def test_sparse_inputs_give_the_same_model(data):
    X, y, Xt, _ = data
    dense = CompressedExtraTreesRegressor(5, t=1.0, random_state=1).fit(X, y)
    sparse = CompressedExtraTreesRegressor(5, t=1.0, random_state=1).fit(sp.csr_matrix(X), y)
    np.testing.assert_allclose(sparse.predict(sp.csr_matrix(Xt)), dense.predict(Xt), rtol=0, atol=1e-12)


def test_lasso_baseline_selects_features_and_predicts_its_linear_model(data):
    X, y, Xt, _ = data
    lasso = LassoCVBaseline(cv=5, random_state=0).fit(X, y)
    np.testing.assert_allclose(lasso.predict(Xt), Xt.astype(float) @ lasso.coef_ + lasso.intercept_)
    assert 1 <= lasso.n_selected_features_ <= 10
    assert lasso.run_info_()["lasso_selected_features"] == lasso.n_selected_features_
    # friedman1's five irrelevant inputs: the informative ones carry the largest weights
    assert set(np.argsort(-np.abs(lasso.coef_))[:3]) <= {0, 1, 3, 4}
