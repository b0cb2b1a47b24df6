"""Forests on projected outputs: invariants and numpy oracles (run on the kernel and on a contract stand-in)."""
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.metrics import label_ranking_average_precision_score
from sklearn.utils._param_validation import InvalidParameterError

from forestbench.forest import ExtraTreesRegressor, RandomForestRegressor, _forest
from forestbench.projections import PROJECTION_KINDS, make_projection, project_outputs

from .conftest import leaf_means

FORESTS = [RandomForestRegressor, ExtraTreesRegressor]


def lrap(Y, scores):
    keep = Y.sum(axis=1) > 0  # the papers: test rows without labels are dropped
    return label_ranking_average_precision_score(Y[keep], scores[keep])


def assert_same_forest(a, b, X):
    np.testing.assert_array_equal(a.apply(X), b.apply(X))
    np.testing.assert_array_equal(a.predict(X), b.predict(X))


# ---------------------------------------------------------------------------------------- Algorithm 5.1 vs 5.2
@pytest.mark.parametrize("Forest", FORESTS)
def test_shared_equals_per_tree_drawing_the_same_phi(Forest, tree_class, multilabel, monkeypatch):
    X, Y, Xt, _ = multilabel
    params = dict(n_estimators=6, output_projection="gaussian", n_components=2, random_state=5)
    shared = Forest(projection_sharing="shared", **params).fit(X, Y)
    phi = shared.projection_
    assert phi.shape == (2, Y.shape[1])
    assert all(shared.tree_projection(i) is phi for i in range(6))

    free = Forest(projection_sharing="per_tree", **params).fit(X, Y)
    assert not np.array_equal(free.tree_projection(0), free.tree_projection(1))
    assert not np.array_equal(free.predict(Xt), shared.predict(Xt))  # the test below can fail

    calls = []

    def same_phi(kind, n_components, n_outputs, random_state=None, Y=None, **options):
        calls.append(kind)
        return phi

    monkeypatch.setattr(_forest, "make_projection", same_phi)
    forced = Forest(projection_sharing="per_tree", **params).fit(X, Y)
    assert calls == ["gaussian"] * 6  # every tree drew its own (identical) matrix
    assert_same_forest(forced, shared, Xt)


# ------------------------------------------------------------------------------------ identity == no projection
@pytest.mark.parametrize("Forest", FORESTS)
@pytest.mark.parametrize("sparse_y", [False, True])
def test_identity_projection_grows_the_baseline_forest(Forest, sparse_y, tree_class, multilabel):
    X, Y, Xt, _ = multilabel
    Yfit = sp.csr_matrix(Y) if sparse_y else Y
    identity = sp.eye_array(Y.shape[1], format="csr") if sparse_y else np.eye(Y.shape[1])
    base = Forest(n_estimators=5, random_state=3).fit(X, Yfit)
    ident = Forest(n_estimators=5, random_state=3, output_projection=identity).fit(X, Yfit)
    assert_same_forest(base, ident, Xt)
    # a q = d subsample (a permutation of the outputs) grows the same trees as well
    perm = Forest(n_estimators=5, random_state=3, output_projection="subsample", n_components=1.0).fit(X, Yfit)
    np.testing.assert_allclose(perm.predict(Xt), base.predict(Xt), atol=1e-12)


# ------------------------------------------------------------------------------------ relabelling oracle (one tree)
@pytest.mark.parametrize("splitter", ["best", "random"])
def test_split_targets_then_relabel_equals_tree_on_z_relabelled_by_apply(splitter, tree_class, multilabel):
    X, Y, Xt, _ = multilabel
    Z = project_outputs(Y, make_projection("gaussian", 3, Y.shape[1], random_state=0))
    w = np.random.default_rng(1).integers(0, 3, size=len(X)).astype(float)
    kw = dict(splitter=splitter, max_features=4, random_state=7)
    grown = tree_class(**kw).fit(X, Y, sample_weight=w, split_targets=Z)
    on_z = tree_class(**kw).fit(X, Z, sample_weight=w)
    np.testing.assert_array_equal(grown.apply(Xt), on_z.apply(Xt))
    oracle = leaf_means(on_z.apply(X), Y, w, on_z.tree_.node_count)
    np.testing.assert_allclose(grown.predict(Xt), oracle[on_z.apply(Xt)], rtol=1e-12, atol=1e-12)
    # sparse Y and sparse Z give the same tree (a 0/1 label selection keeps the arithmetic exact, so sparse and
    # dense criteria cannot break ties differently through rounding)
    select = sp.csr_matrix(np.eye(Y.shape[1])[[0, 3, 5]])
    Zs = project_outputs(sp.csr_matrix(Y), select, dense_threshold=1.0)
    assert sp.issparse(Zs)
    a = tree_class(**kw).fit(X, sp.csr_matrix(Y), sample_weight=w, split_targets=Zs)
    b = tree_class(**kw).fit(X, Y, sample_weight=w, split_targets=Zs.toarray())
    np.testing.assert_array_equal(a.apply(Xt), b.apply(Xt))
    np.testing.assert_allclose(a.predict(Xt), b.predict(Xt), rtol=1e-12, atol=1e-12)


# ------------------------------------------------------------------------------------ forest = mean of leaf means
@pytest.mark.parametrize("leaf_labels", ["inbag", "full"])
def test_forest_prediction_is_mean_of_original_output_leaf_means(leaf_labels, tree_class, multilabel):
    X, Y, Xt, _ = multilabel
    forest = RandomForestRegressor(n_estimators=4, output_projection="achlioptas", n_components=3,
                                   leaf_labels=leaf_labels, random_state=11).fit(X, Y)
    n = len(X)
    expected = np.zeros((len(Xt), Y.shape[1]))
    for i, tree in enumerate(forest.estimators_):
        w = forest._tree_weights(n, forest._streams[i], None) if leaf_labels == "inbag" else None
        table = leaf_means(tree.apply(X), Y, w, tree.tree_.node_count)
        expected += table[tree.apply(Xt)]
    expected /= 4
    np.testing.assert_allclose(forest.predict(Xt), expected, rtol=1e-12, atol=1e-12)
    if leaf_labels == "full":
        inbag = clone(forest).set_params(leaf_labels="inbag").fit(X, Y)
        np.testing.assert_array_equal(inbag.apply(Xt), forest.apply(Xt))  # same structures
        assert not np.allclose(inbag.predict(Xt), forest.predict(Xt))  # different leaf labels


def test_bootstrap_weights_are_integer_counts(multilabel, tree_class):
    X, Y, _, _ = multilabel
    forest = RandomForestRegressor(n_estimators=3, random_state=0).fit(X, Y)
    for i in range(3):
        w = forest._tree_weights(len(X), forest._streams[i], None)
        assert w.sum() == len(X) and np.array_equal(w, np.round(w))
        assert 0.5 < np.count_nonzero(w) / len(X) < 0.75  # about 1 - 1/e distinct rows in bag
    et = ExtraTreesRegressor(n_estimators=2, random_state=0).fit(X, Y)
    assert et._tree_weights(len(X), et._streams[0], None) is None


def test_extra_trees_full_equals_inbag_without_bootstrap(multilabel, tree_class):
    X, Y, Xt, _ = multilabel
    a = ExtraTreesRegressor(n_estimators=4, random_state=2, output_projection="gaussian", n_components=2).fit(X, Y)
    b = clone(a).set_params(leaf_labels="full").fit(X, Y)
    assert_same_forest(a, b, Xt)


# ----------------------------------------------------------------------------------------- sparse label matrices
@pytest.mark.parametrize("kind", [None, *PROJECTION_KINDS])
@pytest.mark.parametrize("leaf_labels", ["inbag", "full"])
def test_sparse_y_gives_the_same_forest_as_dense_y(kind, leaf_labels, tree_class, multilabel):
    X, Y, Xt, _ = multilabel
    params = dict(n_estimators=3, output_projection=kind, n_components=4, leaf_labels=leaf_labels, random_state=4)
    dense = RandomForestRegressor(**params).fit(X, Y)
    sparse = RandomForestRegressor(**params).fit(X, sp.csr_matrix(Y))
    np.testing.assert_array_equal(dense.apply(Xt), sparse.apply(Xt))
    np.testing.assert_allclose(dense.predict(Xt), sparse.predict(Xt), rtol=1e-12, atol=1e-12)
    P = dense.predict(Xt)
    assert P.shape == (len(Xt), Y.shape[1]) and P.min() >= 0 and P.max() <= 1


# --------------------------------------------------------------------------------------- accuracy vs baseline
@pytest.mark.parametrize("Forest", FORESTS)
def test_gaussian_with_q_at_least_d_is_close_to_baseline(Forest, tree_class):
    """q = 4d Gaussian projections (JL: split scores nearly preserved) give the baseline's accuracy: mean LRAP over
    3 seeds on 500 test rows within 0.01 (seed-to-seed spread of either forest is about 0.005 here)."""
    from sklearn.datasets import make_multilabel_classification

    X, Y = make_multilabel_classification(n_samples=1000, n_features=12, n_classes=9, n_labels=3, random_state=0)
    X, Y = X.astype(float), Y.astype(float)
    Xl, Yl, Xt, Yt = X[:500], Y[:500], X[500:], Y[500:]

    def mean_lrap(**kw):
        return np.mean([lrap(Yt, Forest(n_estimators=40, random_state=s, **kw).fit(Xl, Yl).predict(Xt))
                        for s in range(3)])

    base = mean_lrap()
    big = mean_lrap(output_projection="gaussian", n_components=4 * Y.shape[1])
    assert base > 0.7  # the problem is learnable
    assert abs(big - base) < 0.01, (base, big)


# ------------------------------------------------------------------------------------------ determinism, API
def test_same_seed_same_forest_for_any_n_jobs(tree_class, multilabel):
    X, Y, Xt, _ = multilabel
    params = dict(n_estimators=6, output_projection="gaussian", n_components=2, random_state=9)
    a = RandomForestRegressor(n_jobs=1, **params).fit(X, Y)
    b = RandomForestRegressor(n_jobs=2, **params).fit(X, Y)
    assert_same_forest(a, b, Xt)
    c = RandomForestRegressor(**{**params, "random_state": 10}).fit(X, Y)
    assert not np.array_equal(a.predict(Xt), c.predict(Xt))


def test_attributes_and_sizes(tree_class, multilabel):
    X, Y, Xt, _ = multilabel
    f = RandomForestRegressor(n_estimators=3, output_projection="gaussian", n_components="ln_d",
                              random_state=0).fit(X, Y)
    assert f.n_components_ == 2 and f.n_outputs_ == 9 and f.n_features_in_ == 12
    assert f.n_nodes_ == sum(t.tree_.node_count for t in f.estimators_)
    assert f.model_bytes_ == sum(t.model_bytes_ for t in f.estimators_) > 0
    assert f.projection_ is None and f.tree_projection(0).shape == (2, 9)
    assert f.projection_time_ >= 0
    assert f.apply(Xt).shape == (len(Xt), 3)
    full = clone(f).set_params(leaf_labels="full").fit(X, Y)  # relabelled in place: no extra storage
    assert full.model_bytes_ == sum(t.model_bytes_ for t in full.estimators_)
    assert clone(f).get_params()["output_projection"] == "gaussian"


def test_one_d_target(tree_class, multilabel):
    X, Y, Xt, _ = multilabel
    f = RandomForestRegressor(n_estimators=3, random_state=0).fit(X, Y[:, 0])
    assert f.predict(Xt).shape == (len(Xt),)


@pytest.mark.parametrize(
    "params, match",
    [({"projection_sharing": "both"}, "projection_sharing"), ({"leaf_labels": "oob"}, "leaf_labels"),
     ({"output_projection": "fourier"}, "output_projection"), ({"n_estimators": 0}, "n_estimators"),
     ({"n_estimators": -5}, "n_estimators"), ({"n_estimators": "five"}, "n_estimators"),
     ({"max_features": 0}, "max_features"), ({"max_features": "sqrtt"}, "max_features"),
     ({"max_features": 1.5}, "max_features"), ({"min_samples_leaf": 0}, "min_samples_leaf"),
     ({"bootstrap": "yes"}, "bootstrap"), ({"projection_params": 3}, "projection_params"),
     ({"output_projection": "gaussian", "n_components": 0}, "n_components"),
     ({"output_projection": "gaussian", "n_components": "ln"}, "n_components"),
     ({"random_state": -1}, "random_state")],
)
def test_bad_parameters_are_named_by_scikit_learn_validation(params, match, tree_class, multilabel):
    X, Y, _, _ = multilabel
    params = {"n_estimators": 2, **params}  # never mutate the shared parametrize dict
    for Forest in FORESTS:
        est = Forest(**params)
        with pytest.raises(InvalidParameterError, match=f"'{match}' parameter of {Forest.__name__}"):
            est._validate_params()  # what the workflow runs before any job, without data
        with pytest.raises(InvalidParameterError, match=f"'{match}' parameter of {Forest.__name__}"):
            est.fit(X, Y)


@pytest.mark.parametrize(
    "params, match",
    [({"output_projection": np.ones((2, 3))}, "output_projection matrix has shape"),
     ({"output_projection": "pca", "n_components": 20}, "at most d=9"),
     ({"max_features": 13}, "max_features=13")],
)
def test_data_dependent_parameter_errors_at_fit(params, match, tree_class, multilabel):
    X, Y, _, _ = multilabel
    est = RandomForestRegressor(n_estimators=2, **params)
    est._validate_params()  # valid without the data
    with pytest.raises(ValueError, match=match):
        est.fit(X, Y)


def test_bad_shapes(tree_class, multilabel):
    X, Y, Xt, _ = multilabel
    with pytest.raises(ValueError, match=r"y has shape \(239, 9\): 239 rows, but X has 240 rows"):
        RandomForestRegressor(n_estimators=2).fit(X, Y[:-1])
    f = RandomForestRegressor(n_estimators=2, random_state=0).fit(X, Y)
    with pytest.raises(ValueError, match="features"):
        f.predict(Xt[:, :-1])
    with pytest.raises(ValueError, match="y to be passed"):
        RandomForestRegressor(n_estimators=2).fit(X, None)


# ------------------------------------------------------------------------------- sparse 0/1 labels grown as CSR
def _delicious_like(seed=0, n=600, p=40, d=120):
    rng = np.random.default_rng(seed)
    X = (rng.random((n, p)) < 0.2).astype(np.float64)
    freq = 1.0 / np.arange(1, d + 1) ** 0.8
    Y = (rng.random((n, d)) < freq / freq.sum() * 3).astype(np.float64)  # about 3 labels per row, 2.5 %
    return X, Y


@pytest.mark.parametrize("Forest", FORESTS)
@pytest.mark.parametrize("params", [{}, dict(output_projection="gaussian", n_components=4),
                                    dict(output_projection="gaussian", n_components=4, projection_sharing="shared"),
                                    dict(output_projection="achlioptas", n_components=40),
                                    dict(output_projection="sparse", n_components=120, projection_sharing="shared"),
                                    dict(leaf_labels="full", bootstrap=True)])
def test_dense_sparse_labels_grow_as_csr_with_identical_forests(Forest, params, monkeypatch):
    """A dense 0/1 label matrix with few non-zeros is grown with the sparse criterion (the fast path users get
    without converting anything): the same trees and predictions, to the bit, as the dense criterion."""
    from forestbench import _label_layout
    X, Y = _delicious_like()
    fast = Forest(n_estimators=4, random_state=3, **params).fit(X, Y)
    assert all(sp.issparse(t.tree_.leaf_values) for t in fast.estimators_)  # the CSR path was taken
    monkeypatch.setattr(_label_layout, "SPARSE_LABELS_MAX_DENSITY", 0.0)
    dense = Forest(n_estimators=4, random_state=3, **params).fit(X, Y)
    assert not any(sp.issparse(t.tree_.leaf_values) for t in dense.estimators_)
    assert_same_forest(fast, dense, X)
    assert fast.model_bytes_ < dense.model_bytes_ / 3


@pytest.mark.parametrize("Forest", FORESTS)
@pytest.mark.parametrize("sharing", ["per_tree", "shared"])
@pytest.mark.parametrize("weights", [None, "fractional"])
def test_a_sparse_0_1_projection_of_dense_labels_grows_as_csr_with_identical_forests(Forest, sharing, weights,
                                                                                     monkeypatch):
    """A random output subspace of dense 0/1 labels is itself a sparse 0/1 matrix: its trees split on it as CSR
    (the O(non-zeros) criterion), to the bit the forest the dense criterion grows on the same Z. Weights that could
    make the sparse sums inexact get the dense Z, and the same forest."""
    from forestbench import _label_layout
    from forestbench.tree import DecisionTreeRegressor

    seen = []
    original = DecisionTreeRegressor._fit_validated

    def spy(self, X, Y, Z=None, sample_weight=None, **kw):
        seen.append(sp.issparse(Z))
        return original(self, X, Y, Z, sample_weight, **kw)

    monkeypatch.setattr(DecisionTreeRegressor, "_fit_validated", spy)
    X, Y = _delicious_like()
    w = None if weights is None else np.random.default_rng(1).uniform(0.5, 2.0, len(X))
    params = dict(n_estimators=4, random_state=5, output_projection="subsample", n_components=80,
                  projection_sharing=sharing)
    fast = Forest(**params).fit(X, Y, sample_weight=w)
    assert seen == [w is None] * 4
    seen.clear()
    monkeypatch.setattr(_label_layout, "SPARSE_LABELS_MAX_DENSITY", 0.0)
    dense = Forest(**params).fit(X, Y, sample_weight=w)
    assert seen == [False] * 4
    assert_same_forest(fast, dense, X)


@pytest.mark.parametrize("Forest", FORESTS)
def test_a_random_output_subspace_grows_the_same_forest_from_dense_and_sparse_labels(Forest):
    """Split on the 0/1 pattern of the subspace, the trees see exact integer sums whether the labels come dense
    (converted) or as CSR: one forest for both layouts."""
    X, Y = _delicious_like(seed=2)
    params = dict(n_estimators=3, random_state=8, output_projection="subsample", n_components=60)
    assert_same_forest(Forest(**params).fit(X, Y), Forest(**params).fit(X, sp.csr_matrix(Y)), X)


@pytest.mark.parametrize("Forest", FORESTS)
def test_a_random_output_subspace_of_every_label_grows_the_forest_of_the_labels(Forest):
    """q = d without replacement selects every label once: split on the 0/1 selection, every candidate's proxy is
    an exact integer sum whatever the column order, so the trees are those of the original outputs."""
    X, Y = _delicious_like(seed=4)
    common = dict(n_estimators=3, random_state=11)
    subspace = Forest(output_projection="subsample", n_components=Y.shape[1], **common).fit(X, Y)
    assert_same_forest(subspace, Forest(**common).fit(X, Y), X)


def test_labels_stay_dense_where_the_sparse_criterion_could_change_a_bit():
    from forestbench.tree._classes import labels_for_growth
    X, Y = _delicious_like()
    assert sp.issparse(labels_for_growth(Y))
    assert sp.issparse(labels_for_growth(Y, np.full(Y.shape[0], 2.0)))  # integer weights keep every sum exact
    for Y_kept, w in [(Y * 0.5, None),                                   # not 0/1
                      (Y, np.full(Y.shape[0], 0.5)),                     # non-integer weights
                      (Y, np.full(Y.shape[0], 2.0 ** 20)),               # sums of squares beyond 2^53
                      (Y[:, :16], None),                                 # too few outputs
                      (np.maximum(Y, np.eye(Y.shape[0], Y.shape[1])[:, ::-1] + (np.arange(Y.shape[1]) < 20)), None)]:
        assert labels_for_growth(Y_kept, w) is Y_kept                    # ^ too dense (20 of 120 columns all 1)


def test_tree_streams_are_the_children_of_the_tree_seed_built_when_used():
    """A tree's bootstrap, projection and seed streams are children 0, 1 and 2 of its seed sequence, as
    ``spawn(3)`` numbers them, whether or not they are built lazily (the archived runs' random draws)."""
    seq = np.random.SeedSequence(123, spawn_key=(4, 2))
    boot, proj, tree = np.random.SeedSequence(123, spawn_key=(4, 2)).spawn(3)
    streams = _forest._TreeStreams(seq)
    assert streams.tree_seed == int(tree.generate_state(1, dtype=np.uint32)[0] & 0x7FFFFFFF)
    for lazy, eager in ((streams.projection, proj), (streams.bootstrap, boot)):
        np.testing.assert_array_equal(lazy.generate_state(4), eager.generate_state(4))
    assert streams.bootstrap is streams.bootstrap          # built once
    spent = np.random.SeedSequence(1)
    spent.spawn(1)
    with pytest.raises(ValueError, match="spawned children"):
        _forest._TreeStreams(spent)
