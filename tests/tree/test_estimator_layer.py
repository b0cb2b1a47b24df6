"""The public estimator layer of the tree kernel.

scikit-learn's parameter validation (constraints + ``_fit_context``), the one
target validator shared with the forests, ``ExtraTreeRegressor``, the
relabelling hook ``Tree.set_leaf_values``, scikit-learn's ``sample_weight``
semantics and the ensembles' entry point ``_fit_validated``.
"""
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.tree import DecisionTreeRegressor as SkTree
from sklearn.tree import ExtraTreeRegressor as SkExtraTree
from sklearn.utils._param_validation import InvalidParameterError

import forestbench.tree
from forestbench.tree import DecisionTreeRegressor, ExtraTreeRegressor
from forestbench.tree import _classes


def _data(n=300, p=5, d=1, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.uniform(-1, 1, size=(n, p))
    Y = np.c_[[np.sin(3 * X[:, k % p]) + X[:, (k + 1) % p] ** 2 + 0.1 * rng.randn(n) for k in range(d)]].T
    return X, (Y[:, 0] if d == 1 else Y)


def _same_structure(a, b):
    ta, tb = a.tree_, b.tree_
    return (ta.node_count == tb.node_count and np.array_equal(ta.children_left, tb.children_left)
            and np.array_equal(ta.feature, tb.feature) and np.array_equal(ta.threshold, tb.threshold))


# ------------------------------------------------------------------------------------------ parameter validation
BAD = [("splitter", "worst"), ("max_depth", 0), ("max_depth", 2.5), ("min_samples_split", 1),
       ("min_samples_split", 1.5), ("min_samples_leaf", 0), ("min_samples_leaf", 1.0),
       ("max_features", 0), ("max_features", 1.5), ("max_features", "sqrtt"), ("max_leaf_nodes", 1),
       ("min_impurity_decrease", -1.0), ("weighted_counts", "yes"), ("count_constant_features", 2),
       ("random_state", -1), ("random_state", "seed")]


@pytest.mark.parametrize("Est", [DecisionTreeRegressor, ExtraTreeRegressor])
@pytest.mark.parametrize("name, value", BAD)
def test_bad_parameters_raise_sklearn_error_naming_them(Est, name, value):
    X, y = _data(n=50)
    est = Est(**{name: value})
    pattern = f"The '{name}' parameter of {Est.__name__} must be"
    with pytest.raises(InvalidParameterError, match=pattern):
        est._validate_params()  # without data: what the workflow checks before any job
    with pytest.raises(InvalidParameterError, match=pattern):
        est.fit(X, y)


def test_validation_cache_never_accepts_an_invalid_value():
    X, y = _data(n=60)
    est = DecisionTreeRegressor(max_depth=3).fit(X, y)  # a valid set, now remembered
    for bad in (0, 3.0, np.float64(3.0), "3"):  # same value, other types included
        with pytest.raises(InvalidParameterError, match="max_depth"):
            est.set_params(max_depth=bad).fit(X, y)
    est.set_params(max_depth=np.int64(3)).fit(X, y)  # an integer of another type is valid
    assert est.get_depth() == 3
    # unhashable / instance values are validated every time
    DecisionTreeRegressor(random_state=np.random.RandomState(0)).fit(X, y)


def test_data_dependent_checks_stay_in_fit():
    X, y = _data(n=60, p=5)
    est = DecisionTreeRegressor(max_features=6)
    est._validate_params()  # valid without data
    with pytest.raises(ValueError, match=r"max_features=6 must be in \[1, n_features=5\]"):
        est.fit(X, y)
    # huge integer limits are valid and clamped for the kernel (no overflow traceback)
    big = DecisionTreeRegressor(max_depth=2**63, max_leaf_nodes=2**63, min_samples_split=2**40).fit(X, y)
    assert big.tree_.node_count == 1
    assert DecisionTreeRegressor(max_depth=2**63).fit(X, y).get_n_leaves() == 60


# ------------------------------------------------------------------------------------------ ExtraTreeRegressor
def test_extra_tree_regressor_is_exported_with_sklearn_defaults():
    assert forestbench.tree.ExtraTreeRegressor is ExtraTreeRegressor
    ours, sk = ExtraTreeRegressor().get_params(), SkExtraTree().get_params()
    common = set(ours) & set(sk)
    assert {"splitter", "max_features", "max_depth", "min_samples_split", "min_samples_leaf",
            "max_leaf_nodes", "min_impurity_decrease", "random_state"} <= common
    assert {k: ours[k] for k in common} == {k: sk[k] for k in common}
    assert ours["splitter"] == "random" and ours["max_features"] == 1.0


def test_extra_tree_regressor_grows_one_random_tree():
    from sklearn.datasets import make_friedman1

    X, y = make_friedman1(n_samples=300, random_state=0)
    et = ExtraTreeRegressor(random_state=3).fit(X, y)
    same = DecisionTreeRegressor(splitter="random", max_features=1.0, random_state=3).fit(X, y)
    assert _same_structure(et, same)
    np.testing.assert_array_equal(et.predict(X), same.predict(X))
    # fully grown on distinct outputs: n - 1 test nodes, training points interpolated
    assert int((et.tree_.children_left >= 0).sum()) == 299
    np.testing.assert_allclose(et.predict(X), y, atol=1e-12)
    # random thresholds: another seed gives another tree, the best splitter is not used
    assert not _same_structure(et, ExtraTreeRegressor(random_state=4).fit(X, y))
    assert not _same_structure(et, DecisionTreeRegressor(max_features=1.0, random_state=3).fit(X, y))
    assert clone(et).get_params() == et.get_params()


# ------------------------------------------------------------------------------------------ targets
def test_check_targets_accepts_every_target_format():
    rng = np.random.RandomState(0)
    Y = (rng.rand(40, 6) < 0.3) * rng.rand(40, 6)
    ref, one_d = _classes.check_targets(Y, 40)
    assert not one_d and ref.flags.c_contiguous and ref.dtype == np.float64
    for fmt in (sp.csr_matrix, sp.csc_matrix, sp.coo_matrix, sp.csr_array, sp.csc_array, sp.coo_array):
        T, one_d = _classes.check_targets(fmt(Y), 40)
        assert sp.issparse(T) and T.format == "csr" and not one_d
        assert T.indices.dtype == np.int32 and T.has_canonical_format
        np.testing.assert_array_equal(T.toarray(), Y)
    # duplicated COO entries are summed
    dup = sp.coo_array(([1.0, 2.0], ([0, 0], [1, 1])), shape=(40, 6))
    assert _classes.check_targets(dup, 40)[0].toarray()[0, 1] == 3.0
    y1, one_d = _classes.check_targets(list(Y[:, 0]), 40)
    assert one_d and y1.shape == (40, 1)
    # Fortran or integer input becomes C float64
    assert _classes.check_targets(np.asfortranarray(Y.astype(np.int64)), 40)[0].flags.c_contiguous


@pytest.mark.parametrize("y, match", [
    (np.zeros((40, 2, 2)), r"y must be 1-D or 2-D, got shape \(40, 2, 2\)"),
    (np.zeros((39, 2)), r"y has shape \(39, 2\): 39 rows, but X has 40 rows"),
    (sp.csr_matrix((41, 2)), r"y has shape \(41, 2\): 41 rows, but X has 40 rows"),
    (np.zeros((40, 0)), r"y has shape \(40, 0\): no output columns"),
    (np.r_[np.zeros(39), np.nan], "y contains NaN or infinity"),
    (sp.csr_matrix(np.r_[np.zeros((39, 2)), [[np.inf, 0]]]), "y contains NaN or infinity"),
])
def test_target_errors_name_the_shape_in_tree_and_forest(y, match):
    from forestbench.forest import RandomForestRegressor

    X = np.random.RandomState(0).rand(40, 3)
    with pytest.raises(ValueError, match=match):
        DecisionTreeRegressor().fit(X, y)
    with pytest.raises(ValueError, match=match):  # the same validator in the forests
        RandomForestRegressor(n_estimators=2).fit(X, y)
    with pytest.raises(ValueError, match=match.replace("y ", "split_targets ", 1)):
        DecisionTreeRegressor().fit(X, np.zeros(40), split_targets=y)


# ------------------------------------------------------------------------------------------ input fast path
def test_short_input_path_matches_check_array():
    X, y = _data(n=80)
    ref = DecisionTreeRegressor(random_state=0).fit(X.astype(np.float32), y)
    for Xv in (X, np.asfortranarray(X), X.astype(np.float32), X.tolist(), X[:, ::1][::1].copy(order="F"),
               np.repeat(X, 2, axis=1)[:, ::2]):  # the last one is strided: full path
        est = DecisionTreeRegressor(random_state=0).fit(Xv, y)
        assert _same_structure(est, ref)
        np.testing.assert_array_equal(est.predict(Xv), ref.predict(X))
    bad = X.copy()
    bad[3, 2] = np.nan
    with pytest.raises(ValueError, match="Input X contains NaN"):
        DecisionTreeRegressor().fit(bad, y)
    with pytest.raises(ValueError, match="Input X contains NaN"):
        ref.predict(bad)
    big = X.copy()
    big[0, 0] = 1e300  # finite in float64, infinite in the kernel's float32
    with pytest.raises(ValueError, match="infinity or a value too large"):
        DecisionTreeRegressor().fit(big, y)
    with pytest.raises(ValueError, match="expecting 5 features"):
        ref.predict(X[:, :4])


def test_feature_names_survive_the_short_path():
    pd = pytest.importorskip("pandas")
    X, y = _data(n=60)
    df = pd.DataFrame(X, columns=list("abcde"))
    est = DecisionTreeRegressor(random_state=0).fit(df, y)
    assert list(est.feature_names_in_) == list("abcde")
    with pytest.warns(UserWarning, match="does not have valid feature names"):
        est.predict(X)
    est.fit(X, y)  # refit on an array forgets the names
    assert not hasattr(est, "feature_names_in_")


# ------------------------------------------------------------------------------------------ set_leaf_values
def _targets(kind, y):
    binary = (y > np.median(y)).astype(float).reshape(-1, 1)
    return sp.csr_matrix(binary) if kind == "sparse" else y


@pytest.mark.parametrize("store", ["dense", "sparse"])
def test_set_leaf_values_partial_and_full(store):
    X, y = _data(n=200)
    est = DecisionTreeRegressor(max_depth=4, random_state=0).fit(X, _targets(store, y))
    t = est.tree_
    assert t.sparse_leaf_values == (store == "sparse")
    leaves = t.leaf_nodes
    before = est.predict(X).copy()
    # a part of the leaves, in a shuffled order; one new value is zero (dropped from a sparse store)
    part = leaves[[3, 0, 5]]
    new = np.array([[2.5], [0.0], [-1.0]])
    t.set_leaf_values(part, new)
    assert t.sparse_leaf_values == (store == "sparse")
    if t.sparse_leaf_values:
        assert np.all(t.leaf_values.data != 0) and t.leaf_values.has_sorted_indices
    reached = est.apply(X)
    pred = est.predict(X)
    for leaf, value in zip(part, new[:, 0]):
        np.testing.assert_array_equal(pred[reached == leaf].ravel(), value)
    untouched = ~np.isin(reached, part)
    np.testing.assert_array_equal(pred[untouched], before[untouched])
    # every leaf at once, 1-D values, and sparse values
    values = np.arange(1.0, leaves.size + 1)
    t.set_leaf_values(leaves, values)
    np.testing.assert_array_equal(est.predict(X).ravel(), values[np.searchsorted(leaves, reached)])
    t.set_leaf_values(leaves[::-1], sp.csr_matrix(values[::-1].reshape(-1, 1)))
    np.testing.assert_array_equal(est.predict(X).ravel(), values[np.searchsorted(leaves, reached)])
    assert est.model_bytes_ == t.nbytes


def test_set_leaf_values_multi_output_sparse_store():
    rng = np.random.RandomState(0)
    X = rng.rand(150, 4)
    Y = sp.csr_matrix((rng.rand(150, 30) < 0.1).astype(float))
    est = DecisionTreeRegressor(max_depth=3, random_state=0).fit(X, Y)
    t = est.tree_
    leaves = t.leaf_nodes
    vals = sp.random(leaves.size, 30, density=0.2, random_state=1, format="csr")
    t.set_leaf_values(leaves, vals)
    assert t.sparse_leaf_values and t.leaf_values.indices.dtype == np.int32
    np.testing.assert_array_equal(est.predict(X), vals.toarray()[np.searchsorted(leaves, est.apply(X))])


@pytest.mark.parametrize("store", ["dense", "sparse"])
def test_set_leaf_values_rejects_bad_input(store):
    X, y = _data(n=200)
    est = DecisionTreeRegressor(max_depth=3, random_state=0).fit(X, _targets(store, y))
    t = est.tree_
    leaves = t.leaf_nodes
    cases = [
        (([0], [1.0]), r"split nodes, not leaves: \[0\]"),
        (([t.node_count], [1.0]), "out of range"),
        (([-1], [1.0]), "out of range"),
        ((leaves[:2], [1.0]), r"shape \(len\(leaf_node_ids\), n_outputs\) = \(2, 1\), got shape \(1, 1\)"),
        ((leaves[:1], [[1.0, 2.0]]), r"got shape \(1, 2\)"),
        (([leaves[0], leaves[0]], [1.0, 2.0]), "repeated"),
        ((leaves[:1], [np.nan]), "NaN or infinity"),
        (([float(leaves[0])], [1.0]), "integer node ids"),
        (([[leaves[0]]], [1.0]), "1-D"),
    ]
    before = est.predict(X)
    for (ids, values), match in cases:
        with pytest.raises(ValueError, match=match):
            t.set_leaf_values(ids, values)
    np.testing.assert_array_equal(est.predict(X), before)  # nothing changed by a refused call


# ------------------------------------------------------------------------------------------ sample_weight semantics
@pytest.mark.parametrize("Est, Sk", [(DecisionTreeRegressor, SkTree), (ExtraTreeRegressor, None)])
def test_normalised_weights_grow_the_same_tree(Est, Sk):
    """scikit-learn's semantics: counts for min_samples_*, weights for impurity and values."""
    X, y = _data(n=300, seed=2)
    w = np.random.RandomState(1).uniform(0.5, 2.0, size=300)
    kw = dict(min_samples_leaf=12, min_samples_split=30, random_state=0)  # large nodes: no exact ties
    raw = Est(**kw).fit(X, y, sample_weight=w)
    norm = Est(**kw).fit(X, y, sample_weight=w / w.sum())       # sums to 1
    pow2 = Est(**kw).fit(X, y, sample_weight=w * 2.0 ** -20)    # exact scaling
    assert raw.tree_.node_count > 15  # not a single leaf
    for other in (norm, pow2):
        assert _same_structure(raw, other)
        np.testing.assert_allclose(other.predict(X), raw.predict(X), rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(pow2.tree_.n_node_samples, raw.tree_.n_node_samples)
    if Sk is not None:  # the same tree as scikit-learn's, on normalised weights too
        ref = Sk(**kw).fit(X.astype(np.float32), y, sample_weight=w / w.sum())
        assert raw.tree_.node_count == ref.tree_.node_count
        np.testing.assert_array_equal(norm.tree_.feature, ref.tree_.feature)
        np.testing.assert_array_equal(norm.tree_.n_node_samples, ref.tree_.n_node_samples)
        np.testing.assert_array_equal(norm.apply(X), ref.apply(X.astype(np.float32)))


def test_weighted_counts_true_keeps_the_duplicate_semantics():
    X, y = _data(n=300, seed=2)
    w = np.full(300, 1.0 / 300)
    assert DecisionTreeRegressor(weighted_counts=True).fit(X, y, sample_weight=w).tree_.node_count == 1
    assert DecisionTreeRegressor().fit(X, y, sample_weight=w).get_n_leaves() == 300


# ------------------------------------------------------------------------------------------ the ensembles' hook
@pytest.mark.parametrize("sparse", [False, True])
def test_fit_validated_equals_fit(sparse):
    X, Y = _data(n=200, d=3, seed=4)
    Xin = sp.csr_matrix(X) if sparse else X
    w = np.random.RandomState(0).randint(0, 3, size=200).astype(float)
    Z = Y @ np.random.RandomState(1).randn(3, 2)
    est = DecisionTreeRegressor(max_features=2, random_state=5)
    ref = clone(est).fit(Xin, Y, sample_weight=w, split_targets=Z)
    Xv, Yv, Zv, wv, one_d = _classes.validate_fit_data(clone(est), Xin, Y, w, Z)
    assert (Xv.format == "csc") if sparse else (Xv.dtype == np.float32)
    hooked = clone(est)._fit_validated(Xv, Yv, Zv, wv, y_one_d=one_d)
    assert _same_structure(hooked, ref)
    np.testing.assert_array_equal(hooked.predict(X), ref.predict(X))
    assert hooked.n_features_in_ == 5


def test_fit_validated_skips_every_check(monkeypatch):
    """The hook neither validates parameters nor converts inputs: it is the ensembles' path."""
    X, y = _data(n=100)
    Xv, Y, _, _, _ = _classes.validate_fit_data(DecisionTreeRegressor(), X, y)
    calls = []
    for name in ("check_X", "check_targets", "validate_fit_data", "check_sample_weight"):
        original = getattr(_classes, name)
        monkeypatch.setattr(_classes, name, lambda *a, _o=original, _n=name, **k: calls.append(_n) or _o(*a, **k))
    monkeypatch.setattr(DecisionTreeRegressor, "_validate_params",
                        lambda self: calls.append("_validate_params"))
    DecisionTreeRegressor(max_depth=2)._fit_validated(Xv, Y)
    assert calls == []
    DecisionTreeRegressor(max_depth=2).fit(X, y)
    assert calls == ["_validate_params", "validate_fit_data", "check_X", "check_targets"]
