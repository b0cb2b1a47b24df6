"""Tests of forestbench.tree.DecisionTreeRegressor.

Oracles: scikit-learn's DecisionTreeRegressor on tie-free data, invariance
between input layouts / target formats, duplication of rows for integer
weights, and direct recomputation of leaf means and node ranges.
"""
import pickle
import threading

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.tree import DecisionTreeRegressor as SkTree

from forestbench.tree import DecisionTreeRegressor


def _data(n=400, p=6, d=1, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.uniform(-1, 1, size=(n, p)).astype(np.float32)
    Y = np.empty((n, d))
    for k in range(d):
        Y[:, k] = np.sin(3 * X[:, k % p]) + X[:, (k + 1) % p] ** 2 * (k + 1) + 0.1 * rng.randn(n)
    return X, (Y[:, 0] if d == 1 else Y)


def _sparse_data(n=300, p=10, d=3, density=0.3, seed=0):
    """X with zeros, negatives and positives (exercises the CSC blocks)."""
    rng = np.random.RandomState(seed)
    X = rng.randn(n, p).astype(np.float32)
    X[rng.rand(n, p) > density] = 0.0
    Y = np.c_[X[:, 0] - X[:, 1], (X[:, 2] > 0) * 1.0, X[:, 3] ** 2][:, :d] + 0.05 * rng.randn(n, d)
    return X, Y


def assert_same_tree(a, b, value_atol=1e-10, check_impurity=True):
    ta, tb = a.tree_, b.tree_
    assert ta.node_count == tb.node_count
    np.testing.assert_array_equal(ta.children_left, tb.children_left)
    np.testing.assert_array_equal(ta.children_right, tb.children_right)
    np.testing.assert_array_equal(ta.feature, tb.feature)
    # thresholds equal to float32 precision
    np.testing.assert_allclose(ta.threshold, tb.threshold, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(np.asarray(ta.value), np.asarray(tb.value), rtol=0, atol=value_atol)
    if check_impurity:
        np.testing.assert_allclose(ta.impurity, tb.impurity, rtol=1e-7, atol=1e-10)
    np.testing.assert_allclose(ta.weighted_n_node_samples, tb.weighted_n_node_samples)


# --------------------------------------------------------------------------- sklearn oracle
@pytest.mark.parametrize("d", [1, 4])
@pytest.mark.parametrize("params", [dict(min_samples_leaf=20),
                                    dict(min_samples_leaf=20, max_depth=3),
                                    dict(min_samples_leaf=15, min_samples_split=60)])
def test_same_tree_as_sklearn(d, params):
    X, y = _data(d=d, seed=d)
    ours = DecisionTreeRegressor(**params).fit(X, y)
    ref = SkTree(random_state=0, **params).fit(X, y)
    assert ours.tree_.node_count > 7
    assert_same_tree(ours, ref)
    np.testing.assert_allclose(ours.predict(X), ref.predict(X), rtol=0, atol=1e-10)
    np.testing.assert_array_equal(ours.apply(X), ref.apply(X))
    np.testing.assert_array_equal(ours.decision_path(X).toarray(), ref.decision_path(X).toarray())
    np.testing.assert_allclose(ours.feature_importances_, ref.feature_importances_, atol=1e-10)
    assert ours.get_depth() == ref.get_depth()
    assert ours.get_n_leaves() == ref.get_n_leaves()
    assert ours.predict(X).shape == ref.predict(X).shape


@pytest.mark.parametrize("d", [2, 14, 1024, 1025])   # the fused multi-output sweep (2-1024 outputs), the general path
def test_multi_output_trees_with_bootstrap_weights_equal_sklearn(d):
    X, Y = _data(n=400, p=5, d=d, seed=d)
    w = np.random.RandomState(d).poisson(1.0, size=400).astype(float)   # bootstrap-like integer counts, zeros too
    ours = DecisionTreeRegressor(min_samples_leaf=5, weighted_counts=False).fit(X, Y, sample_weight=w)
    ref = SkTree(min_samples_leaf=5, random_state=0).fit(X, Y, sample_weight=w)
    assert ours.tree_.node_count > 40
    assert_same_tree(ours, ref)


@pytest.mark.parametrize("layout", ["dense", "csc"])
@pytest.mark.parametrize("d", [3, 14])
def test_multi_output_sweep_skipping_light_sides_equals_sklearn(d, layout):
    """weighted_counts=True rejects positions by their sides' weight sums, after the left sums are updated: the
    fused sweep's batches of pending candidates (and the running sums kept beside them) must still grow sklearn's
    tree on the duplicated rows, dense or CSC."""
    X, _ = _sparse_data(n=400, p=8, d=1, density=0.4, seed=d)
    rng = np.random.RandomState(d)
    Y = np.tanh(X @ rng.randn(8, d)) + 0.05 * rng.randn(400, d)
    w = rng.randint(0, 4, size=400)
    Xin = sp.csc_matrix(X) if layout == "csc" else X
    ours = DecisionTreeRegressor(weighted_counts=True, min_samples_leaf=15).fit(Xin, Y, sample_weight=w)
    ref = SkTree(random_state=0, min_samples_leaf=15).fit(np.repeat(X, w, axis=0), np.repeat(Y, w, axis=0))
    assert ours.tree_.node_count > 15
    assert_same_tree(ours, ref, value_atol=1e-9, check_impurity=False)


@pytest.mark.parametrize("layout", ["dense", "csc"])
def test_multi_output_sweep_over_a_large_block_of_equal_values(layout):
    """A feature whose values are mostly 0: the sweep's first position lies past the middle of the node, where the
    left sums are rebuilt from the total minus the rows on the right; every layout grows sklearn's tree."""
    X, Y = _sparse_data(n=400, p=6, d=3, density=0.25, seed=3)
    Xin = sp.csc_matrix(X) if layout == "csc" else X
    ours = DecisionTreeRegressor(min_samples_leaf=5, weighted_counts=False).fit(Xin, Y)
    ref = SkTree(min_samples_leaf=5, random_state=0).fit(X, Y)
    assert ours.tree_.node_count > 15
    assert_same_tree(ours, ref, value_atol=1e-9)


def test_same_tree_as_sklearn_with_weights_sklearn_counts():
    X, y = _data(seed=3)
    w = np.random.RandomState(0).uniform(0.5, 2.0, size=X.shape[0])
    ours = DecisionTreeRegressor(min_samples_leaf=20, weighted_counts=False).fit(X, y, sample_weight=w)
    ref = SkTree(min_samples_leaf=20, random_state=0).fit(X, y, sample_weight=w)
    assert_same_tree(ours, ref)


@pytest.mark.parametrize("max_leaf_nodes", [2, 3, 8, 15])
def test_best_first_same_as_sklearn(max_leaf_nodes):
    X, y = _data(d=2, seed=5)
    ours = DecisionTreeRegressor(max_leaf_nodes=max_leaf_nodes, min_samples_leaf=20).fit(X, y)
    ref = SkTree(max_leaf_nodes=max_leaf_nodes, min_samples_leaf=20, random_state=0).fit(X, y)
    assert ours.get_n_leaves() == max_leaf_nodes
    assert_same_tree(ours, ref)
    np.testing.assert_array_equal(ours.decision_path(X).toarray(), ref.decision_path(X).toarray())
    np.testing.assert_array_equal(ours.apply(X), ref.apply(X))


@pytest.mark.parametrize("splitter", ["best", "random"])
@pytest.mark.parametrize("max_leaf_nodes", [2, 10, 57])
def test_max_leaf_nodes_exact(splitter, max_leaf_nodes):
    X, y = _data(n=300, seed=1)
    est = DecisionTreeRegressor(splitter=splitter, max_leaf_nodes=max_leaf_nodes,
                                max_features=3, random_state=0).fit(X, y)
    assert est.get_n_leaves() == max_leaf_nodes
    t = est.tree_
    assert t.node_count == 2 * max_leaf_nodes - 1
    # more leaves than the data allows: stops at the fully grown tree
    full = DecisionTreeRegressor(max_leaf_nodes=10_000).fit(X[:40], y[:40])
    assert full.get_n_leaves() == 40


# --------------------------------------------------------------------------- layouts
@pytest.mark.parametrize("splitter", ["best", "random"])
@pytest.mark.parametrize("max_features", [None, 3, 0.5, "sqrt"])
@pytest.mark.parametrize("max_leaf_nodes", [None, 20])
def test_c_fortran_csc_identical(splitter, max_features, max_leaf_nodes):
    X, Y = _sparse_data(seed=2)
    kw = dict(splitter=splitter, max_features=max_features, max_leaf_nodes=max_leaf_nodes,
              random_state=7)
    c = DecisionTreeRegressor(**kw).fit(np.ascontiguousarray(X), Y)
    f = DecisionTreeRegressor(**kw).fit(np.asfortranarray(X), Y)
    s = DecisionTreeRegressor(**kw).fit(sp.csc_matrix(X), Y)
    r = DecisionTreeRegressor(**kw).fit(sp.csr_matrix(X), Y)
    assert c.tree_.node_count == (39 if max_leaf_nodes else c.tree_.node_count) and c.tree_.node_count > 30
    for other in (f, s, r):
        assert_same_tree(c, other, value_atol=1e-12, check_impurity=False)
    for Xp in (X, np.asfortranarray(X), sp.csr_matrix(X), sp.csc_matrix(X)):
        np.testing.assert_array_equal(c.apply(Xp), c.apply(X))
        np.testing.assert_allclose(s.predict(Xp), c.predict(X), atol=1e-12)


def test_csc_binary_search_and_mapping_paths():
    """Large sparse columns with small nodes use the binary search extraction,
    the root uses the mapping scan: fully grown CSC tree == dense tree."""
    rng = np.random.RandomState(4)
    n, p = 1500, 5
    X = rng.randn(n, p).astype(np.float32)
    X[rng.rand(n, p) < 0.2] = 0.0   # dense-ish columns: nnz_j ~ 1200 >> small nodes
    y = rng.randn(n)
    dense = DecisionTreeRegressor(random_state=0).fit(X, y)
    csc = DecisionTreeRegressor(random_state=0).fit(sp.csc_matrix(X), y)
    assert dense.tree_.node_count > 1000
    assert_same_tree(dense, csc, value_atol=1e-12, check_impurity=False)


def test_layout_is_kept():
    X, y = _data()
    Xf = np.asfortranarray(X)
    est = DecisionTreeRegressor()
    assert np.shares_memory(est._validate_X(Xf, reset=True, for_fit=True), Xf)
    assert np.shares_memory(est._validate_X(X, reset=True, for_fit=True), X)
    assert est._validate_X(np.asfortranarray(X, dtype=np.float64), reset=True,
                           for_fit=True).flags.f_contiguous
    est = DecisionTreeRegressor(max_depth=2).fit(Xf, y)
    assert est.tree_.node_count == 7
    # float64 input is converted to float32; explicit zeros in CSC are ignored
    Xs = sp.csc_matrix(X)
    Xs.data[::7] = 0.0
    a = DecisionTreeRegressor(random_state=0).fit(Xs, y)
    b = DecisionTreeRegressor(random_state=0).fit(Xs.toarray(), y)
    assert_same_tree(a, b, value_atol=1e-12, check_impurity=False)


# --------------------------------------------------------------------------- targets
@pytest.mark.parametrize("splitter", ["best", "random"])
def test_sparse_y_equals_dense_y(splitter):
    rng = np.random.RandomState(0)
    n, d = 300, 60
    X = rng.rand(n, 8).astype(np.float32)
    Y = (rng.rand(n, d) < 0.08).astype(np.float64)
    Y[:, 0] = X[:, 0] > 0.5
    Y[:, 1] = X[:, 1] * (X[:, 2] > 0.3)     # real values too
    kw = dict(splitter=splitter, max_features=5, random_state=3)
    dense = DecisionTreeRegressor(**kw).fit(X, Y)
    sparse = DecisionTreeRegressor(**kw).fit(X, sp.csr_matrix(Y))
    assert sparse.tree_.sparse_leaf_values and not dense.tree_.sparse_leaf_values
    assert dense.tree_.node_count > 100
    assert_same_tree(dense, sparse, value_atol=1e-12, check_impurity=False)
    np.testing.assert_allclose(sparse.tree_.impurity, dense.tree_.impurity, atol=1e-9)
    np.testing.assert_allclose(sparse.predict(X), dense.predict(X), atol=1e-12)
    assert sparse.model_bytes_ < dense.model_bytes_
    # sparse Z with dense Y, and dense Z with sparse Y
    a = DecisionTreeRegressor(**kw).fit(X, Y, split_targets=sp.csr_matrix(Y))
    b = DecisionTreeRegressor(**kw).fit(X, sp.csr_matrix(Y), split_targets=Y)
    assert_same_tree(dense, a, value_atol=1e-12, check_impurity=False)
    assert_same_tree(dense, b, value_atol=1e-12, check_impurity=False)


def test_split_targets_equal_y_is_default():
    X, Y = _data(d=3)
    for splitter in ("best", "random"):
        a = DecisionTreeRegressor(splitter=splitter, random_state=1).fit(X, Y)
        b = DecisionTreeRegressor(splitter=splitter, random_state=1).fit(X, Y, split_targets=Y.copy())
        assert_same_tree(a, b, value_atol=0)


def test_split_targets_choose_splits_leaves_use_y():
    X, Y = _data(d=3, seed=2)
    rng = np.random.RandomState(0)
    Z = Y @ rng.randn(3, 2)                  # a random projection of the outputs
    est = DecisionTreeRegressor(min_samples_leaf=10).fit(X, Y, split_targets=Z)
    on_z = DecisionTreeRegressor(min_samples_leaf=10).fit(X, Z)
    np.testing.assert_array_equal(est.tree_.feature, on_z.tree_.feature)
    np.testing.assert_array_equal(est.tree_.threshold, on_z.tree_.threshold)
    np.testing.assert_allclose(est.tree_.impurity, on_z.tree_.impurity)
    leaves = est.apply(X)
    pred = est.predict(X)
    assert pred.shape == Y.shape
    for leaf in np.unique(leaves):
        np.testing.assert_allclose(pred[leaves == leaf][0], Y[leaves == leaf].mean(axis=0), atol=1e-12)


def test_sparse_leaf_values_memory():
    """Fully grown on many sparse labels: sparse leaf store is far smaller."""
    rng = np.random.RandomState(0)
    n, d = 400, 500
    X = rng.rand(n, 5).astype(np.float32)
    Y = sp.random(n, d, density=0.01, random_state=0, format="csr")
    Y.data[:] = 1.0
    est = DecisionTreeRegressor(random_state=0).fit(X, Y)
    t = est.tree_
    assert t.n_leaves > 100
    dense_leaf_bytes = t.n_leaves * d * 8
    assert est.model_bytes_ < dense_leaf_bytes / 5
    assert est.model_bytes_ == t.nbytes
    value = t.value
    assert value.shape == (t.node_count, d, 1)
    np.testing.assert_allclose(value[0, :, 0], np.asarray(Y.mean(axis=0)).ravel(), atol=1e-12)


# --------------------------------------------------------------------------- weights
@pytest.mark.parametrize("splitter", ["best", "random"])
def test_integer_weights_equal_duplication(splitter):
    """weighted_counts=True: the min_samples_* rules compare with weight sums, so integer weights are duplicates."""
    X, y = _data(n=300, d=2, seed=4)
    w = np.random.RandomState(1).randint(0, 4, size=X.shape[0])
    kw = dict(splitter=splitter, min_samples_leaf=20, min_samples_split=45, random_state=0)
    weighted = DecisionTreeRegressor(weighted_counts=True, **kw).fit(X, y, sample_weight=w)
    dup = DecisionTreeRegressor(**kw).fit(np.repeat(X, w, axis=0), np.repeat(y, w, axis=0))
    assert weighted.tree_.node_count > 7
    assert_same_tree(weighted, dup, value_atol=1e-10)
    np.testing.assert_allclose(weighted.predict(X), dup.predict(X), atol=1e-10)


def test_zero_weights_drop_samples():
    X, y = _data(n=200)
    w = np.ones(200)
    w[::3] = 0
    a = DecisionTreeRegressor(random_state=0).fit(X, y, sample_weight=w)
    b = DecisionTreeRegressor(random_state=0).fit(X[w > 0], y[w > 0])
    assert_same_tree(a, b, value_atol=1e-12)


# --------------------------------------------------------------------------- random splitter
def test_random_thresholds_inside_node_range():
    X, Y = _sparse_data(n=400, seed=6)
    est = DecisionTreeRegressor(splitter="random", max_features=4, random_state=0).fit(X, Y)
    t = est.tree_
    path = est.decision_path(X).tocsc()
    internal = np.flatnonzero(t.children_left >= 0)
    assert internal.size > 50
    for node in internal:
        rows = path[:, [node]].nonzero()[0]
        vals = X[rows, t.feature[node]]
        assert vals.min() <= t.threshold[node] < vals.max()
        assert rows.size == t.n_node_samples[node]


def test_extra_tree_fully_grown_friedman1():
    # thesis Table 7.1: a fully grown ET on 300 distinct-output samples has 299 test nodes
    from sklearn.datasets import make_friedman1
    X, y = make_friedman1(n_samples=300, random_state=0)
    est = DecisionTreeRegressor(splitter="random", random_state=0).fit(X, y)
    assert int((est.tree_.children_left >= 0).sum()) == 299
    np.testing.assert_allclose(est.predict(X), y, atol=1e-12)


def test_max_features_and_determinism():
    X, y = _data(p=10)
    a = DecisionTreeRegressor(max_features=2, random_state=5).fit(X, y)
    b = DecisionTreeRegressor(max_features=2, random_state=5).fit(X, y)
    c = DecisionTreeRegressor(max_features=2, random_state=6).fit(X, y)
    assert_same_tree(a, b, value_atol=0)
    assert not (a.tree_.node_count == c.tree_.node_count
                and np.array_equal(a.tree_.feature, c.tree_.feature))
    np.random.seed(0)
    d = DecisionTreeRegressor(max_features=2, random_state=5).fit(X, y)
    assert_same_tree(a, d, value_atol=0)


def test_constant_features_are_not_counted():
    """max_features=1 with 9 constant features: the informative one is still found."""
    rng = np.random.RandomState(0)
    X = np.zeros((200, 10), dtype=np.float32)
    X[:, 7] = rng.rand(200)
    y = (X[:, 7] > 0.5) * 1.0
    for splitter in ("best", "random"):
        est = DecisionTreeRegressor(splitter=splitter, max_features=1, random_state=0).fit(X, y)
        assert est.tree_.feature[0] == 7
        np.testing.assert_allclose(est.predict(X), y)


def test_threads_give_same_trees():
    X, Y = _sparse_data(n=500, seed=8)
    kw = dict(splitter="random", max_features=3)
    expected = [DecisionTreeRegressor(random_state=s, **kw).fit(X, Y) for s in range(4)]
    got = [None] * 4

    def work(s):
        got[s] = DecisionTreeRegressor(random_state=s, **kw).fit(X, Y)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    for e, g in zip(expected, got):
        assert_same_tree(e, g, value_atol=0)


# --------------------------------------------------------------------------- API
def test_pickle_roundtrip():
    X, Y = _data(d=2)
    for y in (Y, sp.csr_matrix((Y > 0.5).astype(float))):
        est = DecisionTreeRegressor(max_depth=6, random_state=0).fit(X, y)
        clone = pickle.loads(pickle.dumps(est))
        np.testing.assert_array_equal(clone.predict(X), est.predict(X))
        assert clone.model_bytes_ == est.model_bytes_


def test_set_leaf_values():
    X, y = _data(d=1)
    for target in (y, sp.csr_matrix((y > 0.5).astype(float).reshape(-1, 1))):
        est = DecisionTreeRegressor(max_depth=3).fit(X, target)
        leaves = est.tree_.leaf_nodes
        new = np.arange(1, leaves.size + 1, dtype=float)
        est.tree_.set_leaf_values(leaves, new)
        pred = est.predict(X)
        lookup = dict(zip(leaves, new))
        np.testing.assert_array_equal(pred.ravel(), [lookup[leaf] for leaf in est.apply(X)])
    with pytest.raises(ValueError, match="split nodes"):
        est.tree_.set_leaf_values([0], [1.0])


def test_1d_and_2d_outputs_shape():
    X, y = _data()
    assert DecisionTreeRegressor(max_depth=2).fit(X, y).predict(X).shape == (X.shape[0],)
    assert DecisionTreeRegressor(max_depth=2).fit(X, y[:, None]).predict(X).shape == (X.shape[0], 1)


@pytest.mark.parametrize("bad", [dict(splitter="worst"), dict(max_features=0), dict(max_features=1.5),
                                 dict(min_samples_split=1), dict(min_samples_leaf=0),
                                 dict(max_leaf_nodes=1), dict(max_depth=0)])
def test_bad_parameters(bad):
    X, y = _data(n=50)
    with pytest.raises(ValueError):
        DecisionTreeRegressor(**bad).fit(X, y)


def test_bad_inputs():
    X, y = _data(n=50)
    with pytest.raises(ValueError, match="rows"):
        DecisionTreeRegressor().fit(X, y, split_targets=np.zeros((49, 2)))
    with pytest.raises(ValueError):
        DecisionTreeRegressor().fit(X, y[:40])
    est = DecisionTreeRegressor(max_depth=2).fit(X, y)
    with pytest.raises(ValueError):
        est.predict(X[:, :3])


# --------------------------------------------------------------------------- CSC extraction
def test_mapping_array_thesis_example():
    from forestbench.tree._partitioner import _extract_for_test
    L = [9, 1, 5, 3, 2, 7, 4, 8, 6, 0]
    X = sp.csc_matrix((10, 1), dtype=np.float32)     # empty column: L is left as is
    samples, mapping, _, _, _ = _extract_for_test(X, L, 0, 10, 0, 0.1)
    np.testing.assert_array_equal(samples, L)
    np.testing.assert_array_equal(mapping, [9, 1, 4, 3, 6, 2, 8, 5, 7, 0])


@pytest.mark.parametrize("switch", [0.0, 1e12])
def test_extract_nnz_blocks(switch):
    """Both extraction paths give the negative | zero | positive block structure,
    keep the mapping invariant and leave the node's multiset of samples unchanged."""
    from forestbench.tree._partitioner import _extract_for_test
    rng = np.random.RandomState(0)
    n = 60
    dense = rng.randn(n, 4).astype(np.float32)
    dense[rng.rand(n, 4) < 0.5] = 0
    X = sp.csc_matrix(dense)
    for trial in range(20):
        L = rng.permutation(n)
        start, end = sorted(rng.choice(n + 1, 2, replace=False))
        f = trial % 4
        samples, mapping, Xf, end_neg, start_pos = _extract_for_test(X, L, start, end, f, switch)
        np.testing.assert_array_equal(mapping[samples], np.arange(n))
        assert sorted(samples[start:end]) == sorted(L[start:end])
        np.testing.assert_array_equal(samples[:start], L[:start])
        np.testing.assert_array_equal(samples[end:], L[end:])
        col = dense[:, f]
        assert np.all(col[samples[start:end_neg]] < 0)
        assert np.all(col[samples[end_neg:start_pos]] == 0)
        assert np.all(col[samples[start_pos:end]] > 0)
        np.testing.assert_array_equal(Xf[start:end_neg], col[samples[start:end_neg]])
        np.testing.assert_array_equal(Xf[start_pos:end], col[samples[start_pos:end]])


def test_count_constant_features_rules():
    rng = np.random.RandomState(0)
    X = rng.rand(300, 12).astype(np.float32)
    X[:, 6:] = 0.0                                  # 6 constant features
    y = X[:, 0] + X[:, 1] * X[:, 2] + 0.01 * rng.randn(300)
    for splitter in ("best", "random"):
        a = DecisionTreeRegressor(splitter=splitter, min_samples_leaf=10, random_state=0).fit(X, y)
        b = DecisionTreeRegressor(splitter=splitter, min_samples_leaf=10, count_constant_features=True,
                                  random_state=0).fit(X, y)
        # all features scored, no ties: same tree (the visiting orders differ)
        if splitter == "best":
            assert_same_tree(a, b, value_atol=1e-12)
        for rule in (False, True):
            est = DecisionTreeRegressor(splitter=splitter, max_features=2, count_constant_features=rule,
                                        random_state=0).fit(X, y)
            used = set(est.tree_.feature[est.tree_.feature >= 0])
            assert used <= set(range(6))
            np.testing.assert_allclose(est.predict(X), y, atol=1e-12)  # still fully grown
