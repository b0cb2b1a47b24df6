"""Public estimator of the tree kernel and the fitted ``Tree`` object."""
from __future__ import annotations

import math
import numbers
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, RegressorMixin, _fit_context
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, RealNotInt, StrOptions
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from forestbench import _label_layout
from forestbench.tree import _tree

__all__ = ["DecisionTreeRegressor", "ExtraTreeRegressor", "Tree", "TREE_PARAMETER_CONSTRAINTS",
           "check_targets", "validate_fit_data"]

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
        """Overwrite the values of some (or all) leaves; the hook for relabelling a grown tree.

        Used by the forests' ``leaf_labels="full"`` (leaf means over the whole
        learning set) and meant for a boosting line search (one optimal value
        per leaf).

        Parameters
        ----------
        leaf_node_ids : array-like of int, shape (m,)
            Node ids (as returned by ``apply``) of distinct leaves.
        values : array-like or scipy sparse, shape (m, n_outputs)
            The new leaf values, row ``i`` for ``leaf_node_ids[i]``; a 1-D
            array of length ``m`` is accepted when ``n_outputs == 1``. Must be
            finite.

        A sparse store (the tree was grown on sparse targets) stays sparse,
        with zeros dropped; a dense store stays dense. Leaves not listed keep
        their values. Raises ``ValueError`` (naming the offending ids or
        shape) for ids that are out of range, repeated or not leaves, and for
        values of the wrong shape or not finite.
        """
        ids = np.asarray(leaf_node_ids)
        if ids.ndim != 1:
            raise ValueError(f"leaf_node_ids must be 1-D, got shape {ids.shape}")
        if ids.size and ids.dtype.kind not in "iu":
            raise ValueError(f"leaf_node_ids must be integer node ids, got dtype {ids.dtype}")
        ids = ids.astype(np.intp, copy=False)
        m, d = ids.shape[0], self.n_outputs
        if sp.issparse(values):
            vals = sp.csr_array(values, dtype=np.float64)
            vals_data = vals.data
        else:
            vals = np.asarray(values, dtype=np.float64)
            if vals.ndim == 1 and d == 1:
                vals = vals.reshape(-1, 1)
            vals_data = vals
        if vals.shape != (m, d):
            raise ValueError(f"values must have shape (len(leaf_node_ids), n_outputs) = ({m}, {d}), "
                             f"got shape {vals.shape}")
        if not np.all(np.isfinite(vals_data)):
            raise ValueError("values contains NaN or infinity")
        bad = ids[(ids < 0) | (ids >= self.node_count)]
        if bad.size:
            raise ValueError(f"leaf_node_ids out of range [0, {self.node_count}): {bad[:5].tolist()}")
        rows = self.leaf_index[ids]
        if np.any(rows < 0):
            raise ValueError(f"leaf_node_ids contains split nodes, not leaves: {ids[rows < 0][:5].tolist()}")
        if np.unique(rows).shape[0] != m:
            raise ValueError("leaf_node_ids contains repeated ids")
        lv = self.leaf_values
        if sp.issparse(lv):
            n_leaves = lv.shape[0]
            keep = np.ones(n_leaves, dtype=bool)
            keep[rows] = False
            kept = np.flatnonzero(keep)
            # disjoint row selections: kept rows of the old store + the new rows at their places
            select_old = sp.csr_array((np.ones(kept.size), (kept, kept)), shape=(n_leaves, n_leaves))
            place_new = sp.csr_array((np.ones(m), (rows, np.arange(m))), shape=(n_leaves, m))
            new = sp.csr_array(select_old @ lv + place_new @ sp.csr_array(vals))
            new.eliminate_zeros()
            new.sort_indices()
            idx_dtype = lv.indices.dtype
            self.leaf_values = sp.csr_array((new.data, new.indices.astype(idx_dtype, copy=False),
                                             new.indptr.astype(idx_dtype, copy=False)), shape=lv.shape)
        else:
            lv[rows] = vals.toarray() if sp.issparse(vals) else vals

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


# ------------------------------------------------------------------------------------------------ parameters
#: Constraints (scikit-learn's ``_param_validation`` language) of the tree-growing parameters, shared by the
#: trees and the forests so that both accept exactly the same values.
TREE_PARAMETER_CONSTRAINTS = {
    "splitter": [StrOptions({"best", "random"})],
    "max_depth": [Interval(Integral, 1, None, closed="left"), None],
    "min_samples_split": [Interval(Integral, 2, None, closed="left"),
                          Interval(RealNotInt, 0.0, 1.0, closed="right")],
    "min_samples_leaf": [Interval(Integral, 1, None, closed="left"),
                         Interval(RealNotInt, 0.0, 1.0, closed="neither")],
    "max_features": [Interval(Integral, 1, None, closed="left"),
                     Interval(RealNotInt, 0.0, 1.0, closed="right"),
                     StrOptions({"sqrt", "log2"}), None],
    "max_leaf_nodes": [Interval(Integral, 2, None, closed="left"), None],
    "min_impurity_decrease": [Interval(Real, 0.0, None, closed="left")],
    "random_state": ["random_state"],
}

_VALIDATED_PARAMS = {}  # (class, ((type, value), ...)) of parameter sets that passed validation
_VALIDATED_PARAMS_MAX = 1024


class _CachedParamValidationMixin:
    """``_validate_params`` that remembers the parameter sets it accepted.

    scikit-learn's validation costs tens of microseconds per ``fit``, as much
    as growing a stump; many small trees are fitted with the same parameters.
    A set of hashable parameter values (compared with their exact types) that
    passed once is accepted again without re-running the checks; any other
    set (unhashable values such as matrices, or never seen) is validated in
    full. Invalid sets are never stored, so the errors are scikit-learn's.
    """

    def _validate_params(self):
        cls = type(self)
        try:
            key = (cls, tuple((type(v), v) for v in map(self.__getattribute__, cls._parameter_constraints)))
            if key in _VALIDATED_PARAMS:
                return
        except TypeError:  # an unhashable value: always validate
            key = None
        super()._validate_params()
        if key is not None:
            if len(_VALIDATED_PARAMS) >= _VALIDATED_PARAMS_MAX:
                _VALIDATED_PARAMS.clear()
            _VALIDATED_PARAMS[key] = True


# ------------------------------------------------------------------------------------------------ input data
def check_targets(y, n_samples, *, name="y"):
    """The one validator of regression targets, shared by the tree and the forests.

    Accepts a 1-D or 2-D array-like or any scipy sparse matrix / array (CSR,
    CSC, COO, ...). Returns ``(T, one_d)``: ``T`` is a C-contiguous float64
    ``(n_samples, n_outputs)`` array, or a canonical CSR array (float64,
    int32 sorted indices, duplicates summed) when ``y`` is sparse; ``one_d``
    tells that ``y`` was 1-D. Errors name ``name`` and the offending shape.
    """
    if sp.issparse(y):
        t = sp.csr_array(y, dtype=np.float64)
        if t.ndim != 2:
            raise ValueError(f"{name} must be 2-D when sparse, got shape {t.shape}")
        if not t.has_canonical_format:
            t = t.copy()
            t.sum_duplicates()
        if t.nnz > _INT32_MAX:
            raise ValueError(f"{name} has too many non-zeros ({t.nnz}) for int32 indices")
        t = sp.csr_array((t.data, t.indices.astype(np.int32, copy=False),
                          t.indptr.astype(np.int32, copy=False)), shape=t.shape)
        one_d = False
        data = t.data
    else:
        t = np.asarray(y, dtype=np.float64)
        one_d = t.ndim == 1
        if one_d:
            t = t.reshape(-1, 1)
        elif t.ndim != 2:
            raise ValueError(f"{name} must be 1-D or 2-D, got shape {t.shape}")
        t = np.ascontiguousarray(t)
        data = t
    if t.shape[0] != n_samples:
        raise ValueError(f"{name} has shape {t.shape}: {t.shape[0]} rows, but X has {n_samples} rows")
    if t.shape[1] == 0:
        raise ValueError(f"{name} has shape {t.shape}: no output columns")
    if not np.isfinite(data.sum()) and not np.all(np.isfinite(data)):
        raise ValueError(f"{name} contains NaN or infinity")
    return t, one_d


def label_sums_stay_exact(shape, sample_weight=None):
    """Whether every sum the criterion takes over a 0/1 matrix of ``shape`` (rows, outputs) grown with these
    weights is an integer exact in float64, so that the sparse criterion adds to the same bits as the dense one:
    the weights are integers (or ``None``) and outputs x (rows x the largest weight)^2 stays below 2^53 (a
    forest's bootstrap counts sum to the rows)."""
    if sample_weight is not None and not np.array_equal(sample_weight, np.floor(sample_weight)):
        return False
    weight_bound = shape[0] * (1.0 if sample_weight is None else float(np.max(sample_weight, initial=1.0)))
    return shape[1] * weight_bound ** 2 <= 2.0 ** 53


def labels_for_growth(Y, sample_weight=None):
    """``Y`` (validated by :func:`check_targets`) in the layout the kernel grows on fastest with the same result:
    a 0/1 label matrix with few labels per row as canonical CSR (:mod:`forestbench._label_layout`: the same trees
    to the bit, faster, leaf values stored sparsely), anything else unchanged. ``sample_weight`` are the weights the
    trees are grown with (``None``, or checked finite and non-negative); non-integer weights keep ``Y`` dense."""
    if sp.issparse(Y) or not _label_layout.grows_sparse(Y.shape[1], 0.0):
        return Y
    if not label_sums_stay_exact(Y.shape, sample_weight):
        return Y
    nonzero = Y != 0
    if not _label_layout.grows_sparse(Y.shape[1], np.count_nonzero(nonzero) / Y.size) or not np.all(Y[nonzero] == 1):
        return Y
    return check_targets(sp.csr_array(Y), Y.shape[0])[0]


def _fast_dense(X):
    """A float32 C- or Fortran-contiguous version of a plain, finite 2-D float ndarray; ``None`` when the
    input needs scikit-learn's full ``check_array`` (other types or dtypes, empty, NaN/inf, strided)."""
    if type(X) is not np.ndarray or X.ndim != 2 or X.dtype.char not in "fd" or X.size == 0:
        return None
    if not (X.flags.c_contiguous or X.flags.f_contiguous):
        return None
    X32 = X.astype(np.float32, order="K", copy=False)
    if not np.isfinite(X32.sum()):  # NaN, inf or values beyond float32 range: full check and its error
        return None
    return X32


def _clean_compressed(X):
    """Canonical CSC/CSR for the kernel: float32 data, int32 sorted indices, no duplicates, no stored zeros."""
    if X.nnz > _INT32_MAX:
        raise ValueError(f"X has too many non-zeros ({X.nnz}) for int32 indices")
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


def check_X(estimator, X, *, reset, for_fit):
    """Validate ``X`` for the kernel and record (``reset=True``) or check ``n_features_in_``.

    Returns float32 C/Fortran-contiguous dense data (layout kept), or canonical
    CSC (``for_fit``) / CSR (prediction) data. A plain finite float ndarray
    takes a short path with the same outcome; everything else goes through
    scikit-learn's ``validate_data``.
    """
    X32 = _fast_dense(X)
    if X32 is not None:
        if reset:
            if "feature_names_in_" in estimator.__dict__:
                del estimator.feature_names_in_
            estimator.n_features_in_ = X32.shape[1]
            return X32
        if ("feature_names_in_" not in estimator.__dict__
                and estimator.__dict__.get("n_features_in_") == X32.shape[1]):
            return X32
    X = validate_data(estimator, X, reset=reset, dtype=np.float32,
                      accept_sparse=["csc", "csr", "coo"] if for_fit else ["csc", "csr"],
                      order=None, ensure_min_samples=1)
    if sp.issparse(X):
        fmt = "csc" if for_fit else "csr"
        if X.format != fmt:  # CSR/COO -> CSC for fitting, CSC -> CSR for prediction (one copy)
            X = sp.csc_array(X) if for_fit else sp.csr_array(X)
        return _clean_compressed(X)
    if not (X.flags.c_contiguous or X.flags.f_contiguous):
        X = np.ascontiguousarray(X)
    return X


def check_sample_weight(sample_weight, X):
    """C-contiguous float64 non-negative finite weights of shape ``(n_samples,)`` with a positive entry."""
    n = X.shape[0]
    sw = sample_weight
    if not (type(sw) is np.ndarray and sw.dtype == np.float64 and sw.shape == (n,) and sw.flags.c_contiguous):
        sw = np.ascontiguousarray(_check_sample_weight(sample_weight, X, dtype=np.float64))
    if not np.isfinite(sw.sum()) and not np.all(np.isfinite(sw)):
        raise ValueError("sample_weight contains NaN or infinity")
    if np.any(sw < 0):
        raise ValueError("sample_weight must be non-negative")
    if not np.any(sw > 0):
        raise ValueError("sample_weight has no positive entry (all weights are zero)")
    return sw


def validate_fit_data(estimator, X, y, sample_weight=None, split_targets=None):
    """Validate the inputs of a tree's or a forest's ``fit`` once.

    Returns ``(X, Y, Z, sample_weight, y_one_d)`` in the formats the kernel
    grows on (see :func:`check_X`, :func:`check_targets`); ``Z`` is ``None``
    when no ``split_targets`` are given. Sets ``estimator.n_features_in_``.
    """
    if y is None:
        raise ValueError(f"{type(estimator).__name__} requires y to be passed, but the target y is None")
    X = check_X(estimator, X, reset=True, for_fit=True)
    n = X.shape[0]
    Y, one_d = check_targets(y, n)
    Z = None if split_targets is None else check_targets(split_targets, n, name="split_targets")[0]
    if sample_weight is not None:
        sample_weight = check_sample_weight(sample_weight, X)
    return X, Y, Z, sample_weight, one_d


# ------------------------------------------------------------------------------------------------ estimators
class DecisionTreeRegressor(_CachedParamValidationMixin, RegressorMixin, BaseEstimator):
    """Multi-output regression tree grown by forestbench's Cython kernel.

    Parameters
    ----------
    splitter : {"best", "random"}, default "best"
        "best": CART, best threshold of each drawn feature. "random":
        Extra-Trees, one threshold uniform in [min, max) of the node's values
        of each drawn feature.
    max_depth : int >= 1 or None
    min_samples_split : int >= 2 or float in (0, 1]
        The papers' n_min: a node with fewer samples is a leaf.
    min_samples_leaf : int >= 1 or float in (0, 1)
    max_features : int >= 1, float in (0, 1], "sqrt", "log2" or None
        Number K of features scored per node, drawn without replacement.
        An int larger than the number of features is an error at fit time.
    max_leaf_nodes : int >= 2 or None
        If set, the tree is grown best-first (largest weighted impurity
        decrease first) up to this many leaves; otherwise depth-first.
    min_impurity_decrease : float >= 0
    weighted_counts : bool, default False
        How ``sample_weight`` meets ``min_samples_split`` and
        ``min_samples_leaf``. False (scikit-learn's semantics): the rules
        count the distinct rows with a non-zero weight; weights enter the
        impurities and the leaf values only, so multiplying every weight by
        a constant grows the same tree and normalised weights (summing to 1)
        are fine. True: the rules compare with the *sum of weights*, so
        integer weights behave exactly like duplicated rows (but weights
        summing to less than ``min_samples_split`` give a single leaf).
        Without ``sample_weight`` both are the same.
    count_constant_features : bool, default False
        False (Extra-Trees paper, Geurts et al. 2006): K *non-constant*
        features are scored; features found constant in the node are not
        counted and features known constant from an ancestor are never drawn.
        True: scikit-learn's rule, every draw counts (constants included) but
        drawing continues until at least one non-constant feature is scored.
        Identical when K = n_features.
    random_state : int, RandomState or None
        An int seeds the kernel's own xorshift generator directly, so results
        do not depend on numpy's global state.

    Parameters are checked by scikit-learn's machinery
    (``_parameter_constraints``, errors name the parameter); checks that need
    the data (``max_features`` against the number of features) run in ``fit``.

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

    Hook for ensembles: ``_fit_validated(X, Y, Z=None, sample_weight=None,
    y_one_d=False)`` grows the tree on inputs already checked once for the
    whole ensemble by :func:`validate_fit_data` (float32 dense or canonical
    CSC ``X``, float64 C or canonical CSR ``Y``/``Z``, float64 weights), and
    on parameters the ensemble has validated with the same constraints
    (:data:`TREE_PARAMETER_CONSTRAINTS`). It skips every check, so a forest
    or a boosting loop pays the validation once, not once per tree. The
    grown tree's leaves can then be relabelled with
    :meth:`Tree.set_leaf_values`.
    """

    _parameter_constraints = {
        **TREE_PARAMETER_CONSTRAINTS,
        "weighted_counts": ["boolean"],
        "count_constant_features": ["boolean"],
    }

    def __init__(self, *, splitter="best", max_depth=None, min_samples_split=2,
                 min_samples_leaf=1, max_features=None, max_leaf_nodes=None,
                 min_impurity_decrease=0.0, weighted_counts=False,
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
        return check_X(self, X, reset=reset, for_fit=for_fit)

    def _resolve_max_features(self, n_features):
        mf = self.max_features
        if mf is None:
            return n_features
        if isinstance(mf, str):
            if mf == "sqrt":
                return max(1, int(np.sqrt(n_features)))
            return max(1, int(np.log2(n_features)))  # "log2"
        if isinstance(mf, numbers.Integral):
            if mf > n_features:
                raise ValueError(f"max_features={mf} must be in [1, n_features={n_features}]")
            return int(mf)
        return max(1, int(mf * n_features))

    def _resolve_params(self, n_samples, n_features):
        """Kernel arguments from the (already validated) parameters and the data size."""
        md = self.max_depth
        max_depth = _INT32_MAX if md is None else min(int(md), _INT32_MAX)
        mss = self.min_samples_split
        if isinstance(mss, numbers.Integral):
            min_samples_split = min(int(mss), _INT32_MAX)
        else:
            min_samples_split = max(2, int(math.ceil(mss * n_samples)))
        msl = self.min_samples_leaf
        if isinstance(msl, numbers.Integral):
            min_samples_leaf = min(int(msl), _INT32_MAX)
        else:
            min_samples_leaf = max(1, int(math.ceil(msl * n_samples)))
        min_samples_split = max(min_samples_split, 2 * min_samples_leaf)
        mln = self.max_leaf_nodes
        max_leaf_nodes = -1 if mln is None else min(int(mln), _INT32_MAX)
        return dict(random_split=self.splitter == "random",
                    count_constant_features=bool(self.count_constant_features),
                    max_features=self._resolve_max_features(n_features),
                    max_depth=max_depth, min_samples_split=min_samples_split,
                    min_samples_leaf=min_samples_leaf, min_weight_leaf=0.0,
                    min_impurity_decrease=float(self.min_impurity_decrease),
                    max_leaf_nodes=max_leaf_nodes)

    def _kernel_seed(self):
        rs = self.random_state
        if isinstance(rs, numbers.Integral) and not isinstance(rs, bool):
            return int(rs) & 0xFFFFFFFFFFFFFFFF
        return int(check_random_state(rs).randint(0, _INT32_MAX))

    # -- API -----------------------------------------------------------------------------------
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None, split_targets=None):
        """Grow the tree on ``split_targets`` (default ``y``), label leaves with ``y``."""
        X, Y, Z, sample_weight, one_d = validate_fit_data(self, X, y, sample_weight, split_targets)
        return self._fit_validated(X, labels_for_growth(Y, sample_weight), Z, sample_weight, y_one_d=one_d)

    def _fit_validated(self, X, Y, Z=None, sample_weight=None, *, y_one_d=False):
        """Grow on inputs validated by :func:`validate_fit_data` (the ensembles' entry point, no checks)."""
        n_samples, n_features = X.shape
        params = self._resolve_params(n_samples, n_features)
        if sample_weight is not None and self.weighted_counts:
            # counts become weighted: integer weights == duplicated rows
            params["min_weight_leaf"] = float(params["min_samples_leaf"])
            params["min_weight_split"] = float(params["min_samples_split"])
            params["min_samples_leaf"] = 1
            params["min_samples_split"] = 2
        arrays = _tree.build_tree(X, Y, Y if Z is None else Z, sample_weight, seed=self._kernel_seed(),
                                  **params)
        self.tree_ = Tree(n_features, Y.shape[1], arrays)
        self.n_features_in_ = n_features
        self.n_outputs_ = Y.shape[1]
        self._y_one_d = y_one_d
        self.max_features_ = params["max_features"]
        return self

    def _check_X_predict(self, X):
        if "tree_" not in self.__dict__:
            check_is_fitted(self, "tree_")
        return check_X(self, X, reset=False, for_fit=False)

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


class ExtraTreeRegressor(DecisionTreeRegressor):
    """One extremely randomized tree (Geurts et al. 2006), scikit-learn's ``ExtraTreeRegressor``.

    The same estimator as :class:`DecisionTreeRegressor` with the defaults of
    a single extra tree: ``splitter="random"`` (one threshold drawn uniformly
    in [min, max) of the node's values of each candidate feature) and
    ``max_features=1.0`` (every feature is a candidate, the regression
    default of the Extra-Trees paper). Meant to be averaged in ensembles
    (see :class:`forestbench.forest.ExtraTreesRegressor`); alone it
    overfits. All parameters, the split targets and the sparse formats are
    those of :class:`DecisionTreeRegressor`.
    """

    def __init__(self, *, splitter="random", max_depth=None, min_samples_split=2,
                 min_samples_leaf=1, max_features=1.0, max_leaf_nodes=None,
                 min_impurity_decrease=0.0, weighted_counts=False,
                 count_constant_features=False, random_state=None):
        super().__init__(splitter=splitter, max_depth=max_depth, min_samples_split=min_samples_split,
                         min_samples_leaf=min_samples_leaf, max_features=max_features,
                         max_leaf_nodes=max_leaf_nodes, min_impurity_decrease=min_impurity_decrease,
                         weighted_counts=weighted_counts, count_constant_features=count_constant_features,
                         random_state=random_state)
