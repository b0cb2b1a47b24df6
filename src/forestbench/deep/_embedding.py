"""Tree embeddings of the deep tree-ensembles paper (Nakano, Pliakos & Vens, DTE paper Sec. 3.2, Eq. 1).

A fitted forest turns every row into the sparse indicator of all the nodes (internal nodes and leaves, roots
included) its path goes through, concatenated over the trees. The embedding then

1. drops the node columns reached by more than a fraction ``p`` of the training rows (the roots and the nodes
   near them carry no information about a row),
2. weights the remaining columns by ``w_j = 1 / (ln|c_j| + e)`` where ``|c_j|`` is the number of training rows
   reaching node ``j`` (DTE paper Eq. 1; natural log),
3. projects the weighted matrix on its first principal components after centring it.

The principal components are computed without ever densifying the (rows x nodes) matrix: when there are fewer
training rows than kept nodes, from the eigen-decomposition of the centred Gram matrix ``Xc Xc^T`` (rows x rows,
the "dual" form of PCA), otherwise from the centred covariance ``Xc^T Xc`` (nodes x nodes). Both are exact and give
the scores scikit-learn's ``PCA`` gives on the densified centred matrix, up to the sign of each component. In the
Gram form the fitted transform keeps the training indicator matrix and the (rows x components) coefficient matrix
instead of the (nodes x components) loading matrix, which would be far larger for forests of fully grown trees.

The dense products and the eigen-solver run on one BLAS thread (:func:`_single_blas_thread`): multi-threaded BLAS
sums in an order that depends on its thread count, so the embedding (and every prediction after it) would depend on
the machine; and on a loaded machine BLAS threads contend with the forests' threads (the eigen-solve of a 1066 x 1066
Gram matrix took 4-27 s with two BLAS threads under load against 0.6 s with one). The cascade's parallelism is in
its forests (``n_jobs``).

:func:`forest_node_indicator` is the only place that builds the indicator matrix; it runs the tree package's compiled
traversal.
"""
from __future__ import annotations

import copy
import numbers

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from scipy.linalg.blas import dgemm

from forestbench.deep._gram import add_indicator_cross_products, dense_columns, select_columns
from forestbench.projections import ParameterError
from forestbench.tree.indicator import forest_node_indicator as _tree_node_indicator

__all__ = ["forest_node_indicator", "TreeEmbedding", "n_components_for"]

_BLAS_CONTROLLER = None


def _single_blas_thread():
    """Context manager limiting the BLAS libraries loaded in the process to one thread."""
    global _BLAS_CONTROLLER
    from threadpoolctl import ThreadpoolController

    if _BLAS_CONTROLLER is None:   # scanning the loaded libraries costs milliseconds: once per process
        _BLAS_CONTROLLER = ThreadpoolController()
    return _BLAS_CONTROLLER.limit(limits=1, user_api="blas")


def forest_node_indicator(trees, X):
    """CSR ``(n_rows, total nodes)`` 0/1 indicator of the nodes each row of ``X`` goes through, the trees' node
    blocks side by side in the order of ``trees``, row indices sorted: the compiled flat-forest traversal of
    :func:`forestbench.tree.indicator.forest_node_indicator` (the same matrix as the trees' ``decision_path``
    blocks stacked, 2-4x faster on yeast's embedding forests)."""
    return _tree_node_indicator(trees, X)


def n_components_for(fraction, n_rows, n_nodes):
    """Number of principal components for a grid value: the int ``1`` means one component, a float ``f`` in
    (0, 1] means ``max(1, round(f * min(n_rows, n_nodes)))`` (DTE paper Sec. 4.1.3)."""
    rank = max(1, min(n_rows, n_nodes))
    if isinstance(fraction, numbers.Integral) and not isinstance(fraction, bool):
        if fraction != 1:
            raise ParameterError(f"a PCA size given as an int must be 1 (one component), got {fraction!r}; give a "
                                 f"fraction in (0, 1] of min(rows, nodes) otherwise")
        return 1
    f = float(fraction)
    if not (0.0 < f <= 1.0):
        raise ParameterError(f"PCA fraction must lie in (0, 1], got {fraction!r}")
    return int(min(rank, max(1, round(f * rank))))


class TreeEmbedding:
    """Node-indicator embedding of a fitted forest: filter, weight, centred PCA (see the module docstring).

    Parameters
    ----------
    max_node_fraction : float in (0, 1]
        ``p``: node columns reached by more than this fraction of the training rows are dropped.
    weight_offset : float > 0
        ``e`` of Eq. 1, ``w = 1 / (ln|c| + e)``.
    n_components : int 1 or float in (0, 1]
        PCA size (see :func:`n_components_for`).
    solver : "auto", "gram" or "covariance"
        ``auto`` takes the smaller of the two eigen-problems.
    solve_components : None, int 1 or float in (0, 1]
        PCA size the eigen-problem is solved for (None: ``n_components``); the embedding keeps the first
        ``n_components`` of them. Candidates of a PCA-size search that share it get identical leading components,
        so one solve at the largest size serves them all (:meth:`truncated`).
    """

    def __init__(self, max_node_fraction=0.95, weight_offset=1.0, n_components=0.2, solver="auto",
                 solve_components=None):
        self.max_node_fraction = max_node_fraction
        self.weight_offset = weight_offset
        self.n_components = n_components
        self.solver = solver
        self.solve_components = solve_components

    # ------------------------------------------------------------------------------------------- indicator
    def fit_indicator(self, M):
        """Choose the kept columns and their weights from the training indicator ``M`` (CSR); return the
        filtered, weighted training matrix."""
        p = float(self.max_node_fraction)
        if not (0.0 < p <= 1.0):
            raise ParameterError(f"max_node_fraction must lie in (0, 1], got {self.max_node_fraction!r}")
        if not (self.weight_offset > 0):
            raise ParameterError(f"weight_offset must be > 0, got {self.weight_offset!r}")
        n = M.shape[0]
        counts = np.asarray(M.sum(axis=0)).ravel()
        keep = (counts > 0) & (counts <= p * n)
        if not keep.any():  # degenerate (e.g. stumps on constant data): keep the least frequent node
            keep[np.argmin(np.where(counts > 0, counts, np.inf))] = True
        self.kept_columns_ = np.flatnonzero(keep)
        self.weights_ = 1.0 / (np.log(counts[self.kept_columns_]) + float(self.weight_offset))
        self.n_nodes_in_ = M.shape[1]
        return self._weighted(M)

    def _weighted(self, M):
        """The kept columns of ``M`` (renumbered), each scaled by its weight, as CSR whose rows list their nodes in
        decreasing column order. That order fixes the order of the Gram kernel's additions, so it is part of the
        embedding's bits: it is the order the first implementation (a sparse product with the diagonal of
        weights) produced, kept so that every embedding equals what the archived runs computed."""
        if not M.has_sorted_indices:
            M = M.sorted_indices()
        # one pass: each row's kept nodes from the last to the first, renumbered, value times the node's weight
        return _columns(M, self.kept_columns_, scale=self.weights_, reverse=True)

    # ------------------------------------------------------------------------------------------------- PCA
    def fit_transform(self, M, keep_solution=False):
        """Fit on the training indicator ``M`` (rows x all nodes) and return the training scores.

        With ``keep_solution`` the eigen-solution (at ``solve_components``) is kept, so that :meth:`truncated`
        can derive the embedding of any smaller PCA size without solving again."""
        with _single_blas_thread():
            W = self.fit_indicator(M)
            n, c = W.shape
            k = n_components_for(self.n_components, n, c)
            k_solve = k if self.solve_components is None else max(
                k, n_components_for(self.solve_components, n, c))
            self.mean_ = np.asarray(W.mean(axis=0)).ravel()
            self._solve(W, k_solve)
            scores = self._select(k)
        if not keep_solution:
            del self._solution
        return scores

    def truncated(self, n_components):
        """The embedding with the first components of a fit made with ``keep_solution=True``, and its training
        scores: identical to a fit with this ``n_components`` and the same ``solve_components``."""
        if not hasattr(self, "_solution"):
            raise ParameterError("truncated() needs an embedding fitted with keep_solution=True")
        n, c = self._solution[1].shape[0], self.kept_columns_.size
        k = n_components_for(n_components, n, c)
        if k > self._solution[3].shape[1]:
            raise ParameterError(f"{k} components asked, the kept solution has {self._solution[3].shape[1]}")
        other = copy.copy(self)
        other.n_components = n_components
        with _single_blas_thread():
            scores = other._select(k)
        del other._solution
        return other, scores

    def _solve(self, W, k):
        """The ``k`` leading eigenpairs (sign-fixed) of the centred Gram or covariance matrix of ``W``."""
        n, c = W.shape
        solver = self.solver
        if solver == "auto":
            solver = "gram" if n <= c else "covariance"
        if solver not in ("gram", "covariance"):
            raise ParameterError(f"solver must be 'auto', 'gram' or 'covariance', got {self.solver!r}")
        self.solver_ = solver
        if solver == "gram":
            self._train = W
            self._train_mean_dot = np.asarray(W @ self.mean_).ravel()   # row i: <w_i, mu>
            self._loadings = None
            G = self._centred_gram(W)
            vals, vecs = _top_eigh(G.copy(), k)
            self._solution = ("gram", G, vals, _fix_signs(vecs))
        else:
            C = (W.T @ W).toarray()
            C -= n * np.outer(self.mean_, self.mean_)
            vals, vecs = _top_eigh(C, k)
            # the same sign convention as the Gram form: the largest |score| of each component is positive
            flip = _sign_flip(np.asarray(W @ vecs) - self.mean_ @ vecs)
            self._train = None
            self._solution = ("covariance", W, vals, vecs * flip)

    def _select(self, k):
        """Keep the first ``k`` components of the solution; return the training scores. Every operation is per
        component, so the result does not depend on how many components were solved for."""
        kind, A, vals, vecs = self._solution
        vals, vecs = vals[:k], np.ascontiguousarray(vecs[:, :k])
        self.n_components_ = k
        n = A.shape[0]
        if kind == "gram":
            s = np.sqrt(np.clip(vals, 0.0, None))
            # new rows: (m - mu) Xc^T U / s ; keep the training matrix and U / s instead of the loadings
            safe = np.where(s > 0, s, 1.0)
            self._coef = np.where(s > 0, 1.0, 0.0) * vecs / safe
            # training scores U s, computed exactly as transform() computes them, so that replaying the
            # training rows through transform() gives bit-identical features
            scores = A @ self._coef
        else:
            self._loadings = vecs
            scores = np.asarray(A @ self._loadings) - self.mean_ @ self._loadings
        self.explained_variance_ = np.clip(vals, 0.0, None) / max(n - 1, 1)
        return scores

    def transform(self, M):
        """Scores of new rows given their indicator ``M`` (rows x all nodes, same forest)."""
        if M.shape[1] != self.n_nodes_in_:
            raise ParameterError(f"indicator has {M.shape[1]} node columns, the embedding was fitted on "
                                 f"{self.n_nodes_in_}")
        W = self._weighted(M)
        with _single_blas_thread():
            if self._loadings is not None:
                return np.asarray(W @ self._loadings) - self.mean_ @ self._loadings
            return self._centred_gram(W) @ self._coef

    def _centred_gram(self, W):
        """``(W - mu)(T - mu)^T`` for the training matrix ``T``, without densifying either matrix."""
        K = _cross_products(W, self._train, self.weights_)           # <m, x_i>
        K -= np.asarray(W @ self.mean_).ravel()[:, None]                # - <m, mu>
        K -= self._train_mean_dot[None, :]                              # - <x_i, mu>
        K += float(self.mean_ @ self.mean_)                             # + <mu, mu>
        return K

    @property
    def nbytes(self):
        total = self.mean_.nbytes + self.weights_.nbytes + self.kept_columns_.nbytes
        if self._loadings is not None:
            return total + self._loadings.nbytes
        T = self._train
        return total + self._coef.nbytes + T.data.nbytes + T.indices.nbytes + T.indptr.nbytes


# Nodes reached by more than this fraction of the rows go through a dense BLAS product (a few nodes near each
# root): a node reached by c of n rows costs c^2 (c^2 / 2 for a Gram matrix) additions of the kernel, about 1 ns
# each, against 2 n^2 flops of a dense column at some 30 flops per ns. On yeast's embeddings (1600 rows, 50 trees,
# one thread) 1/4 was the fastest of 1/4, 1/2 and "kernel only", by 5-15 %.
_DENSE_NODE_FRACTION = 0.25


def _cross_products(A, B, col_value):
    """Dense ``A @ B.T`` of two CSR matrices with the same columns, where every stored entry of column ``c`` of
    ``B`` equals ``col_value[c]`` (a weighted 0/1 indicator, as every matrix of the embedding is).

    The cost of the product is the sum over columns of (rows of A in the column) x (rows of B in the column),
    dominated by the few nodes near the roots that most rows go through. Those columns are densified and multiplied
    in one BLAS product; the many small nodes go through the indicator kernel
    (:func:`forestbench.deep._gram.add_indicator_cross_products`), which halves its work when ``A`` is ``B``. The
    result depends only on the two matrices, never on whether ``A is B``: the kernel's symmetric path gives the
    full product bit for bit, and the dense part is added after the kernel's in both cases."""
    if A.shape[1] != B.shape[1] or col_value.shape != (B.shape[1],):
        raise ParameterError(f"cross products of matrices with {A.shape[1]} and {B.shape[1]} node columns "
                             f"({col_value.shape[0]} column values)")
    symmetric = A is B
    counts = np.bincount(B.indices, minlength=B.shape[1])
    heavy = counts > _DENSE_NODE_FRACTION * B.shape[0]
    light = np.flatnonzero(~heavy)
    # the light columns, renumbered; column indexing keeps each row's entries in their order, so the kernel adds
    # the same numbers in the same order as on the full matrices
    light_a = _columns(A, light)
    light_b = light_a if symmetric else _columns(B, light)
    light_b = light_b.tocsc()     # row ids sorted within each column
    out = np.zeros((A.shape[0], B.shape[0]))
    add_indicator_cross_products(out, light_a.indptr.astype(np.intp, copy=False),
                                 light_a.indices.astype(np.int32, copy=False), light_a.data,
                                 light_b.indptr.astype(np.intp, copy=False),
                                 light_b.indices.astype(np.int32, copy=False),
                                 np.ascontiguousarray(col_value[light], dtype=np.float64), symmetric)
    if heavy.any():
        # an explicit GEMM in both cases: numpy's ``X @ X.T`` switches to a symmetric rank-k update, whose sums
        # differ in the last bits from the general product transform() takes for the same rows
        cols = np.flatnonzero(heavy)
        heavy_map = _column_map(B.shape[1], cols)
        Bh = dense_columns(*_csr_arrays(B), heavy_map, cols.size)
        Ah = Bh if symmetric else dense_columns(*_csr_arrays(A), heavy_map, cols.size)
        out += dgemm(1.0, Bh.T, Ah.T, trans_a=True).T     # Fortran-order B A^T is C-order A B^T, no copy
    return out


def _csr_arrays(M):
    """``(indptr, indices, data)`` of a CSR matrix in the dtypes of the ``_gram`` kernels (copies only if needed)."""
    return (M.indptr.astype(np.intp, copy=False), M.indices.astype(np.int32, copy=False),
            M.data.astype(np.float64, copy=False))


def _column_map(n_cols, kept):
    """Each of ``n_cols`` columns' position among the sorted ``kept`` ones, -1 for the others."""
    colmap = np.full(n_cols, -1, dtype=np.intp)
    colmap[kept] = np.arange(kept.size)
    return colmap


def _columns(M, kept, scale=None, reverse=False):
    """``M[:, kept]`` (sorted ``kept``), each row's entries in their order or reversed, values times ``scale``."""
    indptr, indices, data = select_columns(*_csr_arrays(M), _column_map(M.shape[1], kept),
                                           np.empty(0) if scale is None else scale, reverse)
    return sp.csr_matrix((data, indices, indptr), shape=(M.shape[0], kept.size))


_ARPACK_MAX_FRACTION = 0.1   # up to this share of the rank, a Lanczos solver beats LAPACK (4x at 5 %)


def _top_eigh(S, k):
    """The ``k`` largest eigenpairs of the symmetric matrix ``S``, largest first (LAPACK for many components,
    ARPACK with a fixed start vector for few; both to machine precision)."""
    m = S.shape[0]
    k = min(k, m)
    if m > 200 and k <= _ARPACK_MAX_FRACTION * m:
        from scipy.linalg.blas import dsymv
        from scipy.sparse.linalg import LinearOperator, eigsh

        # Lanczos spends its time in matrix-vector products, which read the whole matrix each time: the symmetric
        # product reads one triangle (S.T is S in Fortran order, no copy), half the memory traffic of a general
        # one, and makes the operator exactly symmetric (yeast's Gram matrix, 1600 rows: 0.28 s against 0.43 s)
        lower = np.asfortranarray(S.T)
        op = LinearOperator((m, m), matvec=lambda x: dsymv(1.0, lower, np.ravel(x), lower=1), dtype=np.float64)
        vals, vecs = eigsh(op, k=k, which="LA", v0=np.ones(m) / np.sqrt(m), tol=0)
    else:
        vals, vecs = scipy.linalg.eigh(S, subset_by_index=[m - k, m - 1], overwrite_a=True, check_finite=False)
    order = np.argsort(vals)[::-1]
    return vals[order], vecs[:, order]


def _sign_flip(scores):
    """Per component, +1 or -1 so that the entry of largest magnitude is positive (a deterministic convention)."""
    if scores.size == 0:
        return np.ones(scores.shape[1])
    idx = np.argmax(np.abs(scores), axis=0)
    signs = np.sign(scores[idx, np.arange(scores.shape[1])])
    signs[signs == 0] = 1.0
    return signs


def _fix_signs(vecs):
    return vecs * _sign_flip(vecs)
