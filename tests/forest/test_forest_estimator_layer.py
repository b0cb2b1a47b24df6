"""The forests' estimator layer on the real kernel: scikit-learn's ``sample_weight`` semantics (against scikit-learn's
forests and trees), one input validation per ensemble, and ``leaf_labels="full"`` through ``Tree.set_leaf_values``."""
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.ensemble import ExtraTreesRegressor as SkExtraTrees
from sklearn.ensemble import RandomForestRegressor as SkRandomForest
from sklearn.metrics import r2_score
from sklearn.tree import DecisionTreeRegressor as SkTree

from forestbench.forest import ExtraTreesRegressor, RandomForestRegressor, _forest
from forestbench.tree import Tree, _classes


def _friedman(n, seed):
    from sklearn.datasets import make_friedman1

    return make_friedman1(n_samples=n, noise=0.5, random_state=seed)


@pytest.mark.parametrize("Forest, SkForest", [(RandomForestRegressor, SkRandomForest),
                                              (ExtraTreesRegressor, SkExtraTrees)])
def test_normalised_weights_score_like_sklearn(Forest, SkForest):
    X, y = _friedman(600, 0)
    Xt, yt = _friedman(600, 1)
    w = np.random.RandomState(2).uniform(0.2, 1.0, size=len(X))
    w /= w.sum()  # normalised: sums to 1
    kw = dict(n_estimators=30, max_features=0.5, min_samples_leaf=2)
    ours = Forest(random_state=0, **kw).fit(X, y, sample_weight=w)
    ref = SkForest(random_state=0, **kw).fit(X, y, sample_weight=w)
    leaves = [t.get_n_leaves() for t in ours.estimators_]
    assert min(leaves) > 50  # real trees, not single leaves
    r2, r2_ref = r2_score(yt, ours.predict(Xt)), r2_score(yt, ref.predict(Xt))
    assert r2 > 0.6 and abs(r2 - r2_ref) < 0.05, (r2, r2_ref)


@pytest.mark.parametrize("Forest", [RandomForestRegressor, ExtraTreesRegressor])
@pytest.mark.parametrize("leaf_labels", ["inbag", "full"])
def test_scaling_all_weights_changes_nothing(Forest, leaf_labels):
    X, y = _friedman(300, 3)
    w = np.random.RandomState(4).uniform(0.5, 2.0, size=len(X))
    kw = dict(n_estimators=5, max_features=3, min_samples_leaf=3, min_samples_split=8, leaf_labels=leaf_labels,
              random_state=1)
    base = Forest(**kw).fit(X, y, sample_weight=w)
    for scale in (2.0 ** -12, 1.0 / w.sum()):
        scaled = Forest(**kw).fit(X, y, sample_weight=w * scale)
        for a, b in zip(base.estimators_, scaled.estimators_):
            np.testing.assert_array_equal(a.tree_.feature, b.tree_.feature)
            np.testing.assert_array_equal(a.tree_.threshold, b.tree_.threshold)
            np.testing.assert_array_equal(a.tree_.n_node_samples, b.tree_.n_node_samples)
        np.testing.assert_array_equal(base.apply(X), scaled.apply(X))
        np.testing.assert_allclose(scaled.predict(X), base.predict(X), rtol=1e-12, atol=1e-12)


def test_bootstrap_trees_are_sklearn_trees_on_counts_times_weights():
    """Each tree of the forest is scikit-learn's tree given the weights (bootstrap counts x sample_weight): the
    min_samples_* rules count distinct in-bag rows, the weights only enter impurities and leaf values."""
    X, y = _friedman(400, 5)
    w = np.random.RandomState(6).uniform(0.5, 2.0, size=len(X))
    forest = RandomForestRegressor(n_estimators=3, max_features=None, min_samples_leaf=6, random_state=2)
    forest.fit(X, y, sample_weight=w / w.sum())
    for i, tree in enumerate(forest.estimators_):
        weight = forest._tree_weights(len(X), forest._streams[i], w / w.sum())
        assert np.any(weight > 1.0 / len(X)) and np.any(weight == 0)  # duplicates and out-of-bag rows
        ref = SkTree(min_samples_leaf=6, random_state=0).fit(X.astype(np.float32), y, sample_weight=weight)
        assert tree.tree_.node_count == ref.tree_.node_count > 30
        np.testing.assert_array_equal(tree.tree_.feature, ref.tree_.feature)
        np.testing.assert_array_equal(tree.tree_.n_node_samples, ref.tree_.n_node_samples)
        np.testing.assert_allclose(tree.predict(X), ref.predict(X), rtol=1e-9)
        leaves = tree.tree_.children_left < 0
        assert tree.tree_.n_node_samples[leaves].min() >= 6


def _count_calls(monkeypatch, module, names):
    calls = []
    for name in names:
        original = getattr(module, name)

        def counting(*args, _original=original, _name=name, **kwargs):
            calls.append(_name)
            return _original(*args, **kwargs)

        monkeypatch.setattr(module, name, counting)
    return calls


@pytest.mark.parametrize("sparse_x", [False, True])
def test_inputs_are_validated_once_per_forest(monkeypatch, sparse_x):
    X, y = _friedman(200, 7)
    X = sp.csr_matrix(X) if sparse_x else X
    # every validation the public tree path runs lives in _classes; the forest imports the entry points
    calls = _count_calls(monkeypatch, _classes, ["check_X", "check_targets", "check_sample_weight"])
    fcalls = _count_calls(monkeypatch, _forest, ["validate_fit_data", "check_X"])
    tree_fit = _count_calls(monkeypatch, _classes.DecisionTreeRegressor, ["fit"])
    forest = RandomForestRegressor(n_estimators=8, random_state=0).fit(X, y, sample_weight=np.ones(200))
    assert fcalls == ["validate_fit_data"]
    assert sorted(calls) == ["check_X", "check_sample_weight", "check_targets"]
    assert tree_fit == []
    del calls[:], fcalls[:]
    forest.predict(X)
    forest.apply(X)
    assert fcalls == ["check_X", "check_X"] and calls == []


@pytest.mark.parametrize("sparse_y", [False, True])
def test_full_leaf_labels_go_through_set_leaf_values(monkeypatch, sparse_y):
    rng = np.random.RandomState(0)
    X = rng.rand(200, 6)
    Y = (rng.rand(200, 12) < 0.2).astype(float)
    Y[:, 0] = X[:, 0] > 0.5
    seen = []
    original = Tree.set_leaf_values

    def recording(self, leaf_node_ids, values):
        seen.append((self, np.asarray(leaf_node_ids).copy()))
        return original(self, leaf_node_ids, values)

    monkeypatch.setattr(Tree, "set_leaf_values", recording)
    Yfit = sp.csr_matrix(Y) if sparse_y else Y
    forest = RandomForestRegressor(n_estimators=4, leaf_labels="full", random_state=3).fit(X, Yfit)
    assert [t for t, _ in seen] == [e.tree_ for e in forest.estimators_]
    for (tree, ids), est in zip(seen, forest.estimators_):
        np.testing.assert_array_equal(np.sort(ids), np.sort(tree.leaf_nodes))  # every leaf relabelled
        assert tree.sparse_leaf_values == sparse_y  # a sparse store stays sparse
        # the tree itself now predicts the full-learning-set means (no side table in the forest)
        leaves = est.apply(X)
        pred = est.predict(X)
        for leaf in np.unique(leaves)[:10]:
            np.testing.assert_allclose(pred[leaves == leaf][0], Y[leaves == leaf].mean(axis=0), atol=1e-12)
    assert not hasattr(forest, "leaf_values_")


@pytest.mark.parametrize("Forest, SkForest", [(RandomForestRegressor, SkRandomForest),
                                              (ExtraTreesRegressor, SkExtraTrees)])
def test_count_constant_features_grows_sklearns_forests_on_sparse_binary_inputs(Forest, SkForest):
    """On sparse binary inputs most features are constant in small nodes. scikit-learn counts those draws towards
    ``max_features`` (more randomised, larger trees); ``count_constant_features=True`` gives its trees, the default
    scores ``k`` non-constant features and grows smaller ones. The trees' sizes tell the rules apart."""
    rng = np.random.RandomState(0)
    X = (rng.rand(400, 300) < 0.03).astype(np.float32)
    W = rng.rand(300, 5) * (rng.rand(300, 5) < 0.05)
    Y = (X @ W + 0.05 * rng.randn(400, 5) > 0.05).astype(float)

    def mean_nodes(forest):
        return np.mean([t.tree_.node_count for t in forest.estimators_])

    kw = dict(n_estimators=60, max_features="sqrt")
    reference = np.mean([mean_nodes(SkForest(random_state=s, **kw).fit(X, Y)) for s in range(2)])
    counted = np.mean([mean_nodes(Forest(random_state=s, count_constant_features=True, **kw).fit(X, Y))
                       for s in range(2)])
    default = np.mean([mean_nodes(Forest(random_state=s, **kw).fit(X, Y)) for s in range(2)])
    assert abs(counted / reference - 1) < 0.03, (counted, reference)
    assert default < 0.95 * reference, (default, reference)
