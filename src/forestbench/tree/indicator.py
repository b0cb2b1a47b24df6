"""Node-indicator representation of a fitted forest and a compact "flat forest" model.

:func:`forest_node_indicator` lifts samples into the space of a forest's nodes (thesis Sec. 7.1): column
``offsets[m] + l`` of the result is 1 for the samples that go through node ``l`` of tree ``m``, for every node
(root, internal nodes and leaves). Each row has one non-zero per node on its root-to-leaf path in every tree, so the
matrix is stored as CSR. The traversal and the filling run in Cython (``forestbench.tree._indicator``); Python only
loops over the trees to gather their node arrays.

:class:`FlatForest` stores the node arrays of all trees of a forest end to end (int32 children / features, float64
thresholds and leaf values) and predicts ``intercept + sum over trees of the leaf values`` in one Cython pass. It is
the storage of the l1-compressed forest and, built from an ordinary forest with :meth:`FlatForest.from_trees`, its
like-for-like baseline in benchmarks.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from forestbench.tree import _indicator

__all__ = ["forest_node_indicator", "tree_node_arrays", "FlatForest"]


def _trees_of(forest_or_trees):
    """The fitted node structures (objects with ``children_left`` ... ``threshold``) of a forest or tree list."""
    if hasattr(forest_or_trees, "estimators_"):
        items = forest_or_trees.estimators_
    elif hasattr(forest_or_trees, "tree_") or hasattr(forest_or_trees, "children_left"):
        items = [forest_or_trees]
    elif isinstance(forest_or_trees, (list, tuple)):
        items = forest_or_trees
    else:
        raise TypeError(f"expected a fitted forest (with estimators_), a fitted tree or a list of trees, got "
                        f"{type(forest_or_trees).__name__}; a forest that is not fitted has no estimators_")
    items = list(items.ravel()) if isinstance(items, np.ndarray) else list(items)
    trees = []
    for k, item in enumerate(items):
        tree = getattr(item, "tree_", item)
        if not hasattr(tree, "children_left"):
            raise TypeError(f"tree {k} ({type(item).__name__}) is not fitted: it has no tree_ with node arrays")
        trees.append(tree)
    if not trees:
        raise ValueError("the forest has no trees")
    return trees


def tree_node_arrays(forest_or_trees):
    """Concatenated node arrays of the trees: ``(left, right, feature, threshold, offsets)``.

    ``left``/``right`` hold *local* child ids (-1 at leaves) as intp, ``offsets`` (length M + 1) the first global
    id of each tree, so node ``l`` of tree ``m`` is column ``offsets[m] + l`` of the indicator matrix."""
    trees = _trees_of(forest_or_trees)
    counts = np.array([t.children_left.shape[0] for t in trees], dtype=np.intp)
    offsets = np.zeros(len(trees) + 1, dtype=np.intp)
    np.cumsum(counts, out=offsets[1:])
    left = np.concatenate([np.asarray(t.children_left, dtype=np.intp) for t in trees])
    right = np.concatenate([np.asarray(t.children_right, dtype=np.intp) for t in trees])
    feature = np.concatenate([np.asarray(t.feature, dtype=np.intp) for t in trees])
    threshold = np.concatenate([np.asarray(t.threshold, dtype=np.float64) for t in trees])
    return left, right, feature, threshold, offsets


def float32_thresholds(threshold):
    """Each float64 threshold rounded down to a float32 (the largest float32 <= t). For a float32 input x,
    ``x > t`` holds exactly when ``x > float32_thresholds(t)``: no input value lies strictly between the two, so
    predictions compare in float32 without changing any decision."""
    t = np.asarray(threshold, dtype=np.float64)
    with np.errstate(over="ignore"):
        t32 = t.astype(np.float32)          # beyond the float32 range: +-inf, then stepped down below
    above = t32.astype(np.float64) > t
    t32[above] = np.nextafter(t32[above], np.float32(-np.inf))
    return np.ascontiguousarray(t32)


def _check_X(X, n_features=None):
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float32)
    else:
        X = np.asarray(X, dtype=np.float32)
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D, got shape {X.shape}")
        if not (X.flags.c_contiguous or X.flags.f_contiguous):
            X = np.ascontiguousarray(X)
    if n_features is not None and X.shape[1] < n_features:
        raise ValueError(f"X has {X.shape[1]} features but the forest splits on feature {n_features - 1}")
    return X


def _global_children(left, right, offsets):
    tree_of = np.repeat(np.arange(offsets.shape[0] - 1), np.diff(offsets))
    base = offsets[:-1][tree_of]
    gl = np.where(left >= 0, left + base, -1).astype(np.int32)
    gr = np.where(right >= 0, right + base, -1).astype(np.int32)
    return gl, gr


def forest_node_indicator(forest_or_trees, X, *, return_offsets=False):
    """Node-indicator matrix of ``X`` in a fitted forest: CSR ``(n_samples, total nodes)`` of 0/1 float64.

    ``forest_or_trees``: a fitted forest (anything with ``estimators_``: forestbench's or scikit-learn's), one
    fitted tree, or a list of trees / ``Tree`` objects. Column ``offsets[m] + l`` is node ``l`` of tree ``m``
    (nodes numbered as in ``tree_``); every node counts, root and leaves included. Row indices are sorted. With
    ``return_offsets=True`` the ``(M + 1,)`` offsets array is returned as well.
    """
    trees = _trees_of(forest_or_trees)
    left, right, feature, threshold, offsets = tree_node_arrays(trees)
    X = _check_X(X, int(feature.max()) + 1 if feature.size and feature.max() >= 0 else None)
    n = X.shape[0]
    if sp.issparse(X):
        leaves = np.ascontiguousarray(np.column_stack([np.asarray(t.apply(X), dtype=np.intp) for t in trees])) \
            if n else np.empty((0, len(trees)), dtype=np.intp)
    else:
        gl, gr = _global_children(left, right, offsets)
        roots = offsets[:-1].copy()
        leaves = _indicator.flat_forest_apply(gl, gr, feature.astype(np.int32), threshold, roots, X)
        leaves -= offsets[:-1][None, :]
    parent, depth = _indicator.parent_depth(left, right, offsets)
    indptr, indices = _indicator.fill_indicator(leaves, parent, depth, offsets)
    Z = sp.csr_matrix((np.ones(indices.shape[0], dtype=np.float64), indices, indptr),
                      shape=(n, int(offsets[-1])))
    Z.has_sorted_indices = True
    return (Z, offsets) if return_offsets else Z


class FlatForest:
    """A forest stored as concatenated node arrays; predicts ``intercept + sum_m value[leaf_m(x)]``.

    ``left``/``right``: int32 global child ids (-1 at leaves); ``feature``: int32 (-2 at leaves); ``threshold``:
    float64 (x goes left iff ``x[feature] <= threshold``); ``value``: float64 ``(n_nodes, n_outputs)`` (read at
    leaves only); ``roots``: global id of each tree's root; ``intercept``: ``(n_outputs,)``.
    """

    def __init__(self, left, right, feature, threshold, value, roots, intercept):
        self.left = np.ascontiguousarray(left, dtype=np.int32)
        self.right = np.ascontiguousarray(right, dtype=np.int32)
        self.feature = np.ascontiguousarray(feature, dtype=np.int32)
        self.threshold = np.ascontiguousarray(threshold, dtype=np.float64)
        self.value = np.ascontiguousarray(value, dtype=np.float64)
        if self.value.ndim == 1:
            self.value = self.value.reshape(-1, 1)
        self.roots = np.ascontiguousarray(roots, dtype=np.intp)
        self.intercept = np.ascontiguousarray(np.ravel(intercept), dtype=np.float64)
        if self.intercept.shape[0] != self.value.shape[1]:
            raise ValueError(f"intercept has {self.intercept.shape[0]} outputs, value has {self.value.shape[1]}")
        self._min_features = int(self.feature.max()) + 1 if self.feature.size and self.feature.max() >= 0 else None
        # derived tables of the branch-free descent used by predict (same size as left/right/feature)
        self._child, self._feat = _indicator.descent_tables(self.left, self.right, self.feature)
        self._threshold32 = float32_thresholds(self.threshold)

    @classmethod
    def from_trees(cls, forest_or_trees, scale=None):
        """Flatten an ordinary forest: leaf values are the trees' ``predict`` values times ``scale`` (default
        1/M, the forest average); so ``FlatForest.from_trees(f).predict(X)`` equals ``f.predict(X)``."""
        trees = _trees_of(forest_or_trees)
        left, right, feature, threshold, offsets = tree_node_arrays(trees)
        gl, gr = _global_children(left, right, offsets)
        values = []
        for t in trees:
            v = np.asarray(t.value, dtype=np.float64)
            values.append(v.reshape(v.shape[0], -1))
        value = np.concatenate(values, axis=0)
        scale = 1.0 / len(trees) if scale is None else scale
        return cls(gl, gr, feature, threshold, value * scale, offsets[:-1], np.zeros(value.shape[1]))

    @property
    def n_trees(self):
        return int(self.roots.shape[0])

    @property
    def n_nodes(self):
        return int(self.left.shape[0])

    @property
    def n_test_nodes(self):
        """Number of test (internal) nodes over all trees."""
        return int(np.count_nonzero(self.left >= 0))

    @property
    def n_outputs(self):
        return int(self.value.shape[1])

    @property
    def nbytes(self):
        """Bytes held by the model's arrays."""
        return int(sum(a.nbytes for a in (self.left, self.right, self.feature, self.threshold, self.value,
                                          self.roots, self.intercept)))

    def tree_sizes(self):
        """Number of nodes of each tree."""
        ends = np.append(self.roots[1:], self.n_nodes)
        return ends - self.roots

    def predict(self, X):
        """``(n_samples, n_outputs)`` float64 predictions; X dense or sparse (densified in blocks)."""
        if sp.issparse(X):
            X = sp.csr_matrix(X)
            blocks = [self.predict(X[s:s + 4096].toarray()) for s in range(0, X.shape[0], 4096)]
            return np.vstack(blocks) if blocks else np.empty((0, self.n_outputs))
        X = np.ascontiguousarray(_check_X(X, self._min_features))
        return _indicator.flat_forest_predict(self._child, self._feat, self._threshold32, self.value, self.roots, X,
                                              self.intercept)

    def apply(self, X):
        """Global leaf id of every row in every tree, ``(n_samples, n_trees)``."""
        X = _check_X(X)
        return _indicator.flat_forest_apply(self.left, self.right, self.feature, self.threshold, self.roots, X)
