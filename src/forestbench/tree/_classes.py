"""Public estimator of the tree kernel and the fitted ``Tree`` object."""
from __future__ import annotations

import numbers
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data, _check_sample_weight

from forestbench.tree import _tree

__all__ = ["DecisionTreeRegressor", "Tree"]

_INT32_MAX = np.iinfo(np.int32).max


class Tree:
    """A fitted tree: node arrays plus a leaves-only value store.

    Node arrays (length ``node_count``): ``children_left``, ``children_right``
    (-1 at leaves), ``feature`` and ``threshold`` (-2 at leaves; a sample goes
    left iff ``x[feature] <= threshold``), ``impurity`` (variance of the split
    targets), ``n_node_samples``, ``weighted_n_node_samples`` and
    ``leaf_index`` (row of the leaf in the value store, -1 for split nodes).

    ``leaf_values`` holds one row per leaf: a dense ``(n_leaves, n_outputs)``
    float64 array, or a ``scipy.sparse.csr_array`` storing only the non-zero
    means when the leaf targets were sparse. ``value`` is a compatibility
    property that densifies on demand to scikit-learn's ``(node_count,
    n_outputs, 1)`` layout; split nodes get the weighted mean of their
    children, i.e. the mean of the leaf targets over the node.
    """

    def __init__(self, n_features, n_outputs, arrays):
        self.n_features = int(n_features)
        self.n_outputs = int(n_outputs)
        self.children_left = arrays["children_left"]
        self.children_right = arrays["children_right"]
        self.feature = arrays["feature"]
        self.threshold = arrays["threshold"]
        self.impurity = arrays["impurity"]
        self.n_node_samples = arrays["n_node_samples"]
        self.weighted_n_node_samples = arrays["weighted_n_node_samples"]
        self.leaf_index = arrays["leaf_index"]
        self.leaf_values = arrays["leaf_values"]
        self.max_depth = int(arrays["max_depth"])

    # -- structure -----------------------------------------------------------------------------
    @property
    def node_count(self):
        return int(self.children_left.shape[0])

    @property
    def capacity(self):
        return self.node_count

    @property
    def n_leaves(self):
        return int(self.leaf_values.shape[0])

    @property
    def leaf_nodes(self):
        """Node ids of the leaves, in the order of the rows of ``leaf_values``."""
        nodes = np.empty(self.n_leaves, dtype=np.intp)
        is_leaf = self.leaf_index >= 0
        nodes[self.leaf_index[is_leaf]] = np.flatnonzero(is_leaf)
        return nodes

    @property
    def sparse_leaf_values(self):
        return sp.issparse(self.leaf_values)

    @property
    def nbytes(self):
        """Bytes held by all arrays of the tree (nodes and leaf values)."""
        total = sum(a.nbytes for a in (self.children_left, self.children_right, self.feature,
                                       self.threshold, self.impurity, self.n_node_samples,
                                       self.weighted_n_node_samples, self.leaf_index))
        lv = self.leaf_values
        if sp.issparse(lv):
            total += lv.data.nbytes + lv.indices.nbytes + lv.indptr.nbytes
        else:
            total += lv.nbytes
        return int(total)

    @property
    def value(self):
        """Dense ``(node_count, n_outputs, 1)`` node means (computed on demand, not stored)."""
        d = self.n_outputs
        values = np.zeros((self.node_count, d), dtype=np.float64)
        is_leaf = self.leaf_index >= 0
        lv = self.leaf_values
        rows = lv[self.leaf_index[is_leaf]]
        values[is_leaf] = rows.toarray() if sp.issparse(rows) else rows
        w = self.weighted_n_node_samples
        # children always have larger ids than their parent: fill bottom-up
        for node in range(self.node_count - 1, -1, -1):
            left = self.children_left[node]
            if left >= 0:
                right = self.children_right[node]
                values[node] = (w[left] * values[left] + w[right] * values[right]) / w[node]
        return values[:, :, np.newaxis]

    def set_leaf_values(self, leaf_node_ids, values):
        """Overwrite the values of the given leaves (e.g. a boosting line search).

        ``leaf_node_ids``: node ids of leaves; ``values``: array of shape
        ``(len(leaf_node_ids), n_outputs)`` or ``(len(leaf_node_ids),)`` when
        ``n_outputs == 1``. A sparse store stays sparse (zeros are dropped).
        """
        ids = np.asarray(leaf_node_ids, dtype=np.intp).ravel()
        vals = np.asarray(values, dtype=np.float64)
        if vals.ndim == 1:
            vals = vals.reshape(-1, 1) if self.n_outputs == 1 else vals.reshape(1, -1)
        if vals.shape != (ids.shape[0], self.n_outputs):
            raise ValueError(f"values must have shape ({ids.shape[0]}, {self.n_outputs}), "
                             f"got {vals.shape}")
        if np.any((ids < 0) | (ids >= self.node_count)):
            raise ValueError("leaf_node_ids out of range")
        rows = self.leaf_index[ids]
        if np.any(rows < 0):
            raise ValueError("leaf_node_ids contains split nodes, not leaves")
        if sp.issparse(self.leaf_values):
            lil = self.leaf_values.tolil()
            lil[rows] = vals
            new = sp.csr_array(lil)
            new.eliminate_zeros()
            new.sort_indices()
            self.leaf_values = new
        else:
            self.leaf_values[rows] = vals

    # -- traversal -----------------------------------------------------------------------------
    def apply(self, X):
        """Leaf node id of each row; X float32 dense (any layout) or CSR."""
        if sp.issparse(X):
            X = sp.csr_array(X)
            return _tree.apply_csr(self.children_left, self.children_right, self.feature,
                                   self.threshold, np.ascontiguousarray(X.data, np.float32),
                                   np.ascontiguousarray(X.indices, np.int32),
                                   np.ascontiguousarray(X.indptr, np.int32),
                                   X.shape[0], X.shape[1])
        return _tree.apply_dense(self.children_left, self.children_right, self.feature,
                                 self.threshold, X)

    def predict(self, X):
        """Dense float64 ``(n_samples, n_outputs)`` leaf values."""
        rows = self.leaf_index[self.apply(X)]
        out = self.leaf_values[rows]
        if sp.issparse(out):
            out = out.toarray()
        return np.asarray(out, dtype=np.float64)

    def decision_path(self, X):
        """CSR indicator ``(n_samples, node_count)`` of the nodes each row goes through."""
        leaves = self.apply(X)
        parent = np.full(self.node_count, -1, dtype=np.intp)
        internal = np.flatnonzero(self.children_left >= 0)
        parent[self.children_left[internal]] = internal
        parent[self.children_right[internal]] = internal
        indptr, indices = _tree.path_to_leaves(parent, leaves, self.max_depth)
        data = np.ones(indices.shape[0], dtype=np.intp)
        return sp.csr_matrix((data, indices, indptr), shape=(leaves.shape[0], self.node_count))


def _as_float64_targets(name, t, n_samples):
    """Dense C float64 2-D array, or CSR float64 with int32 indices; plus 1-D flag."""
    if sp.issparse(t):
        t = sp.csr_array(t, dtype=np.float64)
        if t.ndim != 2:
            raise ValueError(f"{name} must be 2-D")
        t.sum_duplicates()
        if t.nnz > _INT32_MAX:
            raise ValueError(f"{name} has too many non-zeros for int32 indices")
        t = sp.csr_array((t.data, t.indices.astype(np.int32, copy=False),
                          t.indptr.astype(np.int32, copy=False)), shape=t.shape)
        one_d = False
    else:
        t = np.asarray(t, dtype=np.float64)
        one_d = t.ndim == 1
        if one_d:
            t = t.reshape(-1, 1)
        if t.ndim != 2:
            raise ValueError(f"{name} must be 1-D or 2-D, got shape {t.shape}")
        t = np.ascontiguousarray(t)
    if t.shape[0] != n_samples:
        raise ValueError(f"{name} has {t.shape[0]} rows, X has {n_samples}")
    if t.shape[1] == 0:
        raise ValueError(f"{name} has no columns")
    data = t.data if sp.issparse(t) else t
    if not np.all(np.isfinite(data)):
        raise ValueError(f"{name} contains NaN or infinity")
    return t, one_d


class DecisionTreeRegressor(RegressorMixin, BaseEstimator):
    """Multi-output regression tree grown by forestbench's Cython kernel.

    Parameters
    ----------
    splitter : {"best", "random"}
        "best": CART, best threshold of each drawn feature. "random":
        Extra-Trees, one threshold uniform in [min, max) of the node's values
        of each drawn feature.
    max_depth : int or None
    min_samples_split : int >= 2 or float in (0, 1]
        The papers' n_min: a node with fewer samples is a leaf.
    min_samples_leaf : int >= 1 or float in (0, 1)
    max_features : int, float, "sqrt", "log2" or None
        Number K of features scored per node, drawn without replacement.
    count_constant_features : bool, default False
        False (Extra-Trees paper, Geurts et al. 2006): K *non-constant*
        features are scored; features found constant in the node are not
        counted and features known constant from an ancestor are never drawn.
        True: scikit-learn's rule, every draw counts (constants included) but
        drawing continues until at least one non-constant feature is scored.
        Identical when K = n_features.
    max_leaf_nodes : int >= 2 or None
        If set, the tree is grown best-first (largest weighted impurity
        decrease first) up to this many leaves; otherwise depth-first.
    min_impurity_decrease : float
    weighted_counts : bool, default True
        With ``sample_weight``, ``min_samples_split`` and ``min_samples_leaf``
        are compared to the *weighted* number of samples (sum of weights), so
        integer weights (bootstrap counts) behave exactly like duplicated
        rows. False gives scikit-learn's convention (they count distinct rows
        with non-zero weight). Without ``sample_weight`` both are the same.
    random_state : int, RandomState or None
        An int seeds the kernel's own xorshift generator directly, so results
        do not depend on numpy's global state.

    Notes
    -----
    ``fit(X, y, sample_weight=None, split_targets=Z)`` chooses splits with the
    multi-output variance of ``Z`` and labels leaves with the means of ``y``.
    ``y`` and ``Z`` may be scipy sparse (stored as CSR); then the criterion
    costs O(non-zeros) per sample move and the leaf values are stored
    sparsely. ``X`` is converted to float32 keeping its C or Fortran layout;
    CSC is used as is (CSR and other sparse formats are converted to CSC for
    fitting); ``predict``/``apply`` take dense or CSR. ``predict`` always
    returns dense float64 ``(n_samples, n_outputs)``, raveled when ``y`` was
    1-D. The model size in bytes is ``model_bytes_``.
    """

    def __init__(self, *, splitter="best", max_depth=None, min_samples_split=2,
                 min_samples_leaf=1, max_features=None, max_leaf_nodes=None,
                 min_impurity_decrease=0.0, weighted_counts=True,
                 count_constant_features=False, random_state=None):
        self.splitter = splitter
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.max_features = max_features
        self.max_leaf_nodes = max_leaf_nodes
        self.min_impurity_decrease = min_impurity_decrease
        self.weighted_counts = weighted_counts
        self.count_constant_features = count_constant_features
        self.random_state = random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.target_tags.multi_output = True
        return tags

    # -- validation ----------------------------------------------------------------------------
    def _validate_X(self, X, reset, for_fit):
        X = validate_data(self, X, reset=reset, dtype=np.float32,
                          accept_sparse=["csc", "csr"] if not for_fit else ["csc", "csr", "coo"],
                          order=None, ensure_min_samples=1)
        if sp.issparse(X):
            if for_fit:
                if X.format != "csc":
                    X = sp.csc_array(X)  # CSR/COO are converted for fitting (one copy)
                X = self._clean_compressed(X)
            else:
                if X.format != "csr":
                    X = sp.csr_array(X)
                X = self._clean_compressed(X)
        elif not (X.flags.c_contiguous or X.flags.f_contiguous):
            X = np.ascontiguousarray(X)
        return X

    @staticmethod
    def _clean_compressed(X):
        if X.nnz > _INT32_MAX:
            raise ValueError("X has too many non-zeros for int32 indices")
        copied = False
        if not X.has_sorted_indices or X.has_canonical_format is False:
            X = X.copy()
            copied = True
            X.sum_duplicates()
            X.sort_indices()
        if np.any(X.data == 0):
            if not copied:
                X = X.copy()
            X.eliminate_zeros()
        cls = sp.csc_array if X.format == "csc" else sp.csr_array
        return cls((np.ascontiguousarray(X.data, dtype=np.float32),
                    X.indices.astype(np.int32, copy=False),
                    X.indptr.astype(np.int32, copy=False)), shape=X.shape)

    def _resolve_max_features(self, n_features):
        mf = self.max_features
        if mf is None:
            return n_features
        if isinstance(mf, str):
            if mf == "sqrt":
                return max(1, int(np.sqrt(n_features)))
            if mf == "log2":
                return max(1, int(np.log2(n_features)))
            raise ValueError(f"max_features must be int, float, 'sqrt', 'log2' or None, got {mf!r}")
        if isinstance(mf, numbers.Integral) and not isinstance(mf, bool):
            if not 1 <= mf <= n_features:
                raise ValueError(f"max_features={mf} must be in [1, n_features={n_features}]")
            return int(mf)
        if isinstance(mf, numbers.Real):
            if not 0.0 < mf <= 1.0:
                raise ValueError(f"max_features={mf} as a float must be in (0, 1]")
            return max(1, int(mf * n_features))
        raise ValueError(f"invalid max_features={mf!r}")

    def _resolve_params(self, n_samples, n_features):
        if self.splitter not in ("best", "random"):
            raise ValueError(f"splitter must be 'best' or 'random', got {self.splitter!r}")
        md = self.max_depth
        if md is None:
            max_depth = np.iinfo(np.int32).max
        elif isinstance(md, numbers.Integral) and not isinstance(md, bool) and md >= 1:
            max_depth = int(md)
        else:
            raise ValueError(f"max_depth must be None or an int >= 1, got {md!r}")
        mss = self.min_samples_split
        if isinstance(mss, numbers.Integral) and not isinstance(mss, bool):
            if mss < 2:
                raise ValueError(f"min_samples_split must be >= 2, got {mss}")
            min_samples_split = int(mss)
        elif isinstance(mss, numbers.Real) and 0.0 < mss <= 1.0:
            min_samples_split = max(2, int(np.ceil(mss * n_samples)))
        else:
            raise ValueError(f"invalid min_samples_split={mss!r}")
        msl = self.min_samples_leaf
        if isinstance(msl, numbers.Integral) and not isinstance(msl, bool):
            if msl < 1:
                raise ValueError(f"min_samples_leaf must be >= 1, got {msl}")
            min_samples_leaf = int(msl)
        elif isinstance(msl, numbers.Real) and 0.0 < msl < 1.0:
            min_samples_leaf = max(1, int(np.ceil(msl * n_samples)))
        else:
            raise ValueError(f"invalid min_samples_leaf={msl!r}")
        min_samples_split = max(min_samples_split, 2 * min_samples_leaf)
        mln = self.max_leaf_nodes
        if mln is None:
            max_leaf_nodes = -1
        elif isinstance(mln, numbers.Integral) and not isinstance(mln, bool) and mln >= 2:
            max_leaf_nodes = int(mln)
        else:
            raise ValueError(f"max_leaf_nodes must be None or an int >= 2, got {mln!r}")
        mid = float(self.min_impurity_decrease)
        if mid < 0:
            raise ValueError("min_impurity_decrease must be >= 0")
        # integers beyond what any tree can reach (a depth of 2**63) act as "no limit" rather than overflowing the
        # kernel's C integers: a tree has at most n_samples leaves and depth n_samples
        cap = np.iinfo(np.int32).max
        return dict(random_split=self.splitter == "random",
                    count_constant_features=bool(self.count_constant_features),
                    max_features=self._resolve_max_features(n_features),
                    max_depth=min(max_depth, cap), min_samples_split=min(min_samples_split, cap),
                    min_samples_leaf=min(min_samples_leaf, cap), min_weight_leaf=0.0,
                    min_impurity_decrease=mid, max_leaf_nodes=min(max_leaf_nodes, cap))

    # -- API -----------------------------------------------------------------------------------
    def fit(self, X, y, sample_weight=None, split_targets=None):
        """Grow the tree on ``split_targets`` (default ``y``), label leaves with ``y``."""
        X = self._validate_X(X, reset=True, for_fit=True)
        n_samples, n_features = X.shape
        if y is None:
            raise ValueError("requires y to be passed, but the target y is None")
        Y, one_d = _as_float64_targets("y", y, n_samples)
        if split_targets is None:
            Z = Y
        else:
            Z, _ = _as_float64_targets("split_targets", split_targets, n_samples)
        if sample_weight is not None:
            sample_weight = _check_sample_weight(sample_weight, X, dtype=np.float64)
            if np.any(sample_weight < 0):
                raise ValueError("sample_weight must be non-negative")
            if not np.any(sample_weight > 0):
                raise ValueError("sample_weight has no positive entry")
            sample_weight = np.ascontiguousarray(sample_weight)
        params = self._resolve_params(n_samples, n_features)
        if sample_weight is not None and self.weighted_counts:
            # counts become weighted: integer weights == duplicated rows
            params["min_weight_leaf"] = float(params["min_samples_leaf"])
            params["min_weight_split"] = float(params["min_samples_split"])
            params["min_samples_leaf"] = 1
            params["min_samples_split"] = 2
        rng = check_random_state(self.random_state)
        if isinstance(self.random_state, numbers.Integral) and not isinstance(self.random_state, bool):
            seed = int(self.random_state) & 0xFFFFFFFFFFFFFFFF
        else:
            seed = int(rng.randint(0, np.iinfo(np.int32).max))
        arrays = _tree.build_tree(X, Y, Z, sample_weight, seed=seed, **params)
        self.tree_ = Tree(n_features, Y.shape[1], arrays)
        self.n_outputs_ = Y.shape[1]
        self._y_one_d = one_d
        self.max_features_ = params["max_features"]
        return self

    def _check_X_predict(self, X):
        check_is_fitted(self, "tree_")
        return self._validate_X(X, reset=False, for_fit=False)

    def apply(self, X):
        """Leaf node id reached by each sample."""
        X = self._check_X_predict(X)
        return self.tree_.apply(X)

    def predict(self, X):
        """Mean leaf targets, dense float64 ``(n, n_outputs)`` (``(n,)`` if y was 1-D)."""
        X = self._check_X_predict(X)
        out = self.tree_.predict(X)
        if self._y_one_d:
            return out.ravel()
        return out

    def decision_path(self, X):
        """CSR indicator matrix ``(n_samples, node_count)`` of the visited nodes."""
        X = self._check_X_predict(X)
        return self.tree_.decision_path(X)

    def get_depth(self):
        check_is_fitted(self, "tree_")
        return self.tree_.max_depth

    def get_n_leaves(self):
        check_is_fitted(self, "tree_")
        return self.tree_.n_leaves

    @property
    def feature_importances_(self):
        """Normalised mean decrease of impurity (of the split targets) per feature."""
        check_is_fitted(self, "tree_")
        t = self.tree_
        imp = np.zeros(t.n_features, dtype=np.float64)
        internal = np.flatnonzero(t.children_left >= 0)
        if internal.size:
            w, i = t.weighted_n_node_samples, t.impurity
            left, right = t.children_left[internal], t.children_right[internal]
            decrease = w[internal] * i[internal] - w[left] * i[left] - w[right] * i[right]
            np.add.at(imp, t.feature[internal], decrease)
            imp /= w[0]
            total = imp.sum()
            if total > 0:
                imp /= total
        return imp

    @property
    def model_bytes_(self):
        """Size of the fitted tree's arrays in bytes."""
        check_is_fitted(self, "tree_")
        return self.tree_.nbytes
