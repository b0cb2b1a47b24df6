"""The embedding's Gram kernel: dense cross products of weighted node indicators, against scipy's sparse product."""
import numpy as np
import pytest
import scipy.sparse as sp

from forestbench.deep import _embedding
from forestbench.deep._embedding import TreeEmbedding, _cross_products, forest_node_indicator
from forestbench.forest import ExtraTreesRegressor, RandomForestRegressor
from forestbench.projections import ParameterError


def _weighted_indicator(n_rows, n_cols, density, seed):
    """A CSR 0/1 matrix with every column scaled by its own weight (as the embedding's matrices are), with some
    columns reached by most rows so that both the dense and the kernel paths run."""
    rng = np.random.default_rng(seed)
    p = rng.uniform(0, density, size=n_cols)
    p[:5] = rng.uniform(0.3, 0.9, size=5)              # "near-root" columns: over the dense threshold
    M = (rng.random((n_rows, n_cols)) < p).astype(float)
    weights = rng.uniform(0.1, 2.0, size=n_cols)
    return sp.csr_matrix(M * weights), weights


@pytest.mark.parametrize("dense_fraction", [0.25, 2.0])   # with dense columns, and the kernel alone
def test_cross_products_equal_scipy_and_do_not_depend_on_identity(monkeypatch, dense_fraction):
    monkeypatch.setattr(_embedding, "_DENSE_NODE_FRACTION", dense_fraction)
    A, w = _weighted_indicator(70, 400, 0.05, 0)
    B = sp.csr_matrix(_weighted_indicator(45, 400, 0.05, 1)[0].toarray() > 0) * sp.diags(w)
    B = sp.csr_matrix(B)
    np.testing.assert_allclose(_cross_products(A, B, w), (A @ B.T).toarray(), rtol=1e-12, atol=1e-12)
    G = _cross_products(A, A, w)                       # A is A: the kernel's symmetric path
    np.testing.assert_allclose(G, (A @ A.T).toarray(), rtol=1e-12, atol=1e-12)
    assert np.array_equal(G, G.T)
    # a copy of A (the path a replay of the training rows through transform() takes) gives the same bits
    assert np.array_equal(G, _cross_products(A.copy(), A, w))


def test_cross_products_with_empty_rows_and_columns():
    A, w = _weighted_indicator(30, 60, 0.1, 2)
    A = A.tolil()
    A[[0, 7, 29], :] = 0                               # rows reaching none of the kept nodes
    A[:, [3, 40]] = 0
    A = sp.csr_matrix(A)
    A.eliminate_zeros()
    for B in (A, A.copy()):
        np.testing.assert_allclose(_cross_products(A, B, w), (A @ A.T).toarray(), rtol=1e-12, atol=1e-12)


def test_cross_products_refuse_mismatched_columns():
    A, w = _weighted_indicator(10, 20, 0.2, 3)
    B, _ = _weighted_indicator(10, 21, 0.2, 4)
    with pytest.raises(ParameterError, match="20 and 21 node columns"):
        _cross_products(A, B, w)
    with pytest.raises(ParameterError, match="column values"):
        _cross_products(A, A, w[:-1])


@pytest.mark.parametrize("forest_class", [RandomForestRegressor, ExtraTreesRegressor])
def test_training_scores_replay_bit_for_bit_through_transform(forest_class):
    """fit_transform's Gram matrix takes the kernel's symmetric path, transform's the general one: a cascade's
    training features and the features predict() recomputes for the same rows must still be identical."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(300, 6)).astype(np.float32)
    Y = X[:, :3] + 0.1 * rng.normal(size=(300, 3))
    forest = forest_class(8, max_features="sqrt", random_state=0).fit(X, Y)
    M = forest_node_indicator(forest.estimators_, X)
    for fraction in (0.05, 0.5):                        # the Lanczos and the LAPACK eigen-solvers
        emb = TreeEmbedding(0.95, 1.0, fraction, solver="gram")
        Z = emb.fit_transform(M)
        assert np.array_equal(Z, emb.transform(M.copy()))


def test_weighted_indicator_lists_each_row_in_decreasing_node_order():
    """The order of a row's nodes is the order of the Gram kernel's additions, hence part of the embedding's bits:
    it stays the decreasing column order the first implementation gave, with the values of M[:, kept] x weights."""
    rng = np.random.default_rng(7)
    X = rng.normal(size=(200, 5)).astype(np.float32)
    forest = RandomForestRegressor(6, max_features="sqrt", random_state=0).fit(X, X[:, :2])
    M = forest_node_indicator(forest.estimators_, X)
    emb = TreeEmbedding(0.95, 1.0, 0.1)
    W = emb.fit_indicator(M)
    expected = (M[:, emb.kept_columns_] @ sp.diags(emb.weights_)).toarray()
    np.testing.assert_array_equal(W.toarray(), expected)
    assert np.array_equal(W.indptr, M[:, emb.kept_columns_].indptr)
    for i in range(W.shape[0]):
        row = W.indices[W.indptr[i]:W.indptr[i + 1]]
        assert row.size > 0 and np.all(np.diff(row) < 0)
    # an empty row stays empty
    M2 = M.tolil()
    M2[3, :] = 0
    M2 = sp.csr_matrix(M2)
    M2.eliminate_zeros()
    W2 = emb._weighted(M2)
    assert W2.indptr[4] == W2.indptr[3]
    np.testing.assert_array_equal(W2.toarray(), (M2[:, emb.kept_columns_] @ sp.diags(emb.weights_)).toarray())


def test_column_selection_kernels_equal_scipy_indexing():
    """select_columns and dense_columns give scipy's M[:, kept] entry for entry: the same indices and values in the
    same order within each row (unsorted rows stay unsorted), reversed rows on request, and the same dense block."""
    from forestbench.deep._gram import dense_columns, select_columns
    rng = np.random.default_rng(11)
    M = sp.random(40, 90, density=0.2, format="csr", random_state=3)
    M.data = rng.uniform(0.5, 2.0, size=M.nnz)
    for i in range(0, 40, 3):                            # shuffle some rows' entries: no sortedness assumed
        lo, hi = M.indptr[i], M.indptr[i + 1]
        order = rng.permutation(hi - lo)
        M.indices[lo:hi], M.data[lo:hi] = M.indices[lo:hi][order], M.data[lo:hi][order]
    M.has_sorted_indices = False
    kept = np.sort(rng.choice(90, size=37, replace=False))
    colmap = np.full(90, -1, dtype=np.intp)
    colmap[kept] = np.arange(kept.size)
    arrays = (M.indptr.astype(np.intp), M.indices.astype(np.int32), M.data)
    ref = M[:, kept]
    indptr, indices, data = select_columns(*arrays, colmap, np.empty(0), False)
    np.testing.assert_array_equal(indptr, ref.indptr)
    np.testing.assert_array_equal(indices, ref.indices)
    np.testing.assert_array_equal(data, ref.data)
    scale = rng.uniform(0.1, 3.0, size=kept.size)
    indptr, indices, data = select_columns(*arrays, colmap, scale, True)
    for i in range(40):
        lo, hi = ref.indptr[i], ref.indptr[i + 1]
        np.testing.assert_array_equal(indices[lo:hi], ref.indices[lo:hi][::-1])
        np.testing.assert_array_equal(data[lo:hi], ref.data[lo:hi][::-1] * scale[ref.indices[lo:hi][::-1]])
    np.testing.assert_array_equal(dense_columns(*arrays, colmap, kept.size), ref.toarray())


def test_weighted_indicator_does_not_depend_on_stored_order():
    """A training indicator whose rows are stored unsorted is weighted as its sorted copy (decreasing node order)."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(120, 4)).astype(np.float32)
    forest = RandomForestRegressor(5, max_features="sqrt", random_state=0).fit(X, X[:, :2])
    M = forest_node_indicator(forest.estimators_, X)
    emb = TreeEmbedding(0.95, 1.0, 0.1)
    W = emb.fit_indicator(M)
    shuffled = M.copy()
    for i in range(M.shape[0]):
        lo, hi = shuffled.indptr[i], shuffled.indptr[i + 1]
        shuffled.indices[lo:hi] = shuffled.indices[lo:hi][::-1]
    shuffled.has_sorted_indices = False
    W2 = emb._weighted(shuffled)
    for a, b in ((W.indptr, W2.indptr), (W.indices, W2.indices), (W.data, W2.data)):
        np.testing.assert_array_equal(a, b)
