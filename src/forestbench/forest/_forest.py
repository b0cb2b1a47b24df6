"""Random forests and extremely randomized trees grown on random projections of the output space.

Joly, Geurts & Wehenkel (ECML-PKDD 2014) / Joly's thesis ch. 5. Every tree chooses its splits on the projected
outputs ``Z = Y Φᵀ`` (the kernel's ``split_targets``) while its leaves hold means of the original outputs ``Y``; the
prediction is the average of the trees' leaf means, so there is no decoding step.

The readings where the sources are ambiguous (``leaf_labels``, ``projection_sharing``, projection before the
bootstrap) are documented in config/README.md, "Forests on random output projections", and the sample-weight rule
under "Tree kernel". What the code does with them:

- ``leaf_labels="full"``: after growing a tree on its bootstrap sample, the learning rows are routed with
  ``apply`` and the leaf means written with ``Tree.set_leaf_values``. A leaf always holds at least the in-bag
  samples that created it, so it is never empty.
- The bootstrap enters as integer counts multiplied into the trees' ``sample_weight``.
- ``projection="pca"`` is computed once and shared whatever ``projection_sharing`` says.
- **Seeds.** ``random_state`` seeds a ``numpy.random.SeedSequence``; its first child draws the shared ``Φ``, child
  ``1 + i`` is split into three streams for tree ``i``: bootstrap, ``Φ_i`` and the tree's own ``random_state``. The
  bootstrap and the tree seeds therefore do not depend on ``projection_sharing`` or on the projection family, so a
  shared forest equals a per-tree forest whose trees all draw the shared ``Φ``, and the same seed gives the same
  forest for any ``n_jobs``.
- **max_features** defaults to ``"sqrt"`` (k = √p, the thesis default for both RF and ET).

Cost note: a split score costs O(q) per sample move on a dense ``Z`` and O(non-zeros of the row) on a sparse one.
A sparse label matrix ``Y`` grown without projection therefore already uses the kernel's sparse criterion; a dense
family (Gaussian, Rademacher, Hadamard, PCA) makes ``Z`` dense, so it pays off only when q is below the number of
labels per row times the sparse criterion's overhead (see benchmarks/bench_projections.py). ``"subsample"`` and the
sparse families keep ``Z`` sparse when it is sparse enough (:func:`forestbench.projections.project_outputs`). A random
output subspace splits on the 0/1 pattern of its ``Φ``, without its common scale sqrt(d / q)
(:func:`forestbench.projections.split_projection`), so that on 0/1 labels, however given, its ``Z`` is a sparse 0/1
matrix grown as CSR like the labels themselves (``labels_for_growth``: the same tree to the bit as the dense
criterion on that ``Z``).
"""
from __future__ import annotations

import os
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from numbers import Integral

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, MultiOutputMixin, RegressorMixin, _fit_context
from sklearn.metrics import r2_score
from sklearn.utils._param_validation import Interval, RealNotInt, StrOptions
from sklearn.utils.validation import check_is_fitted

from forestbench.projections import (
    _NAMED_COMPONENTS,
    PROJECTION_KINDS,
    ParameterError,
    make_projection,
    project_outputs,
    resolve_n_components,
    split_projection,
)
from forestbench._label_layout import grows_sparse
from forestbench.tree import DecisionTreeRegressor
from forestbench.tree._classes import (TREE_PARAMETER_CONSTRAINTS, check_X, check_targets, label_sums_stay_exact,
                                       labels_for_growth, validate_fit_data)

__all__ = ["RandomForestRegressor", "ExtraTreesRegressor"]

_SHARING = ("per_tree", "shared")
_LEAF_LABELS = ("inbag", "full")
_PREDICT_BLOCK = 2048  # test rows per prediction task


def _n_threads(n_jobs, n_tasks):
    if n_jobs is None or n_jobs == 0:
        n = 1
    elif n_jobs < 0:
        n = max(1, (os.cpu_count() or 1) + 1 + n_jobs)
    else:
        n = int(n_jobs)
    return max(1, min(n, n_tasks))


def _map(fn, items, n_threads):
    """``list(map(fn, items))``, on ``n_threads`` threads when > 1 (the kernel releases the GIL); order is kept."""
    if n_threads <= 1:
        return [fn(item) for item in items]
    with ThreadPoolExecutor(max_workers=n_threads) as pool:
        return list(pool.map(fn, items))


def _seed_sequence(random_state):
    if isinstance(random_state, np.random.SeedSequence):
        return np.random.SeedSequence(random_state.entropy, spawn_key=random_state.spawn_key)
    if random_state is None:
        return np.random.SeedSequence()
    if isinstance(random_state, np.random.RandomState):
        return np.random.SeedSequence(int(random_state.randint(0, 2**31 - 1)))
    if isinstance(random_state, np.random.Generator):
        return np.random.SeedSequence(int(random_state.integers(0, 2**63 - 1)))
    return np.random.SeedSequence(int(random_state))  # a non-negative int (checked by the constraints)


class _TreeStreams:
    """The three independent random streams of one tree (see the module docstring): the children 0 (bootstrap),
    1 (projection) and 2 (the tree's seed) of its seed sequence, exactly what ``seq.spawn(3)`` gives. A child is
    built when first used: a tree grown without bootstrap or per-tree projection never pays for those two (each
    costs about as much as a small tree's split search on a few dozen rows)."""

    __slots__ = ("_seq", "_bootstrap", "_projection", "tree_seed")

    def __init__(self, seq):
        if seq.n_children_spawned:
            raise ValueError("a tree's seed sequence must not have spawned children before")
        self._seq = seq
        self._bootstrap = self._projection = None
        self.tree_seed = int(self._child(2).generate_state(1, dtype=np.uint32)[0] & 0x7FFFFFFF)

    def _child(self, i):
        seq = self._seq
        return np.random.SeedSequence(seq.entropy, spawn_key=seq.spawn_key + (i,), pool_size=seq.pool_size)

    @property
    def bootstrap(self):
        if self._bootstrap is None:
            self._bootstrap = self._child(0)
        return self._bootstrap

    @property
    def projection(self):
        if self._projection is None:
            self._projection = self._child(1)
        return self._projection


class _BaseProjectionForest(MultiOutputMixin, RegressorMixin, BaseEstimator):
    """Shared logic of :class:`RandomForestRegressor` and :class:`ExtraTreesRegressor`."""

    _splitter = "best"

    _parameter_constraints = {
        "n_estimators": [Interval(Integral, 1, None, closed="left")],
        **{k: v for k, v in TREE_PARAMETER_CONSTRAINTS.items()
           if k not in ("splitter", "min_impurity_decrease", "random_state")},
        "bootstrap": ["boolean"],
        "oob_score": ["boolean", callable],
        "output_projection": [None, StrOptions(set(PROJECTION_KINDS)), "array-like", "sparse matrix"],
        "n_components": [Interval(Integral, 1, None, closed="left"),
                         Interval(RealNotInt, 0.0, 1.0, closed="right"), StrOptions(set(_NAMED_COMPONENTS))],
        "projection_sharing": [StrOptions(set(_SHARING))],
        "leaf_labels": [StrOptions(set(_LEAF_LABELS))],
        "projection_params": [dict, None],
        "count_constant_features": ["boolean"],
        "n_jobs": [Integral, None],
        "random_state": ["random_state", np.random.Generator, np.random.SeedSequence],
    }

    # ------------------------------------------------------------------------------------------------ validation
    def _resolve_projection(self, n_outputs):
        """``(kind, q)`` for ``n_outputs`` outputs: the checks of the projection parameters that need the data
        (the others are the ``_parameter_constraints``). ``kind`` is None, a family name or the fixed matrix."""
        proj = self.output_projection
        if proj is None:
            return None, None
        if isinstance(proj, str):
            return proj, resolve_n_components(self.n_components, n_outputs)
        # an explicit, fixed matrix: used by every tree
        phi = sp.csr_matrix(proj, dtype=np.float64) if sp.issparse(proj) else np.asarray(proj, dtype=np.float64)
        if phi.ndim != 2 or phi.shape[1] != n_outputs or phi.shape[0] < 1:
            raise ParameterError(f"output_projection matrix has shape {phi.shape}, expected (q, {n_outputs}) "
                                 f"for Y with {n_outputs} outputs")
        return phi, phi.shape[0]

    # ------------------------------------------------------------------------------------------------------ fit
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Grow the forest on inputs ``X`` (n, p) and outputs ``y`` (n, d) or (n,), dense or sparse (e.g. a
        label matrix).

        ``sample_weight`` follows scikit-learn: each tree is grown with the weights ``bootstrap counts x
        sample_weight`` (``sample_weight`` alone without bootstrap), which enter the impurities and the leaf
        values, while ``min_samples_split`` / ``min_samples_leaf`` count the rows with a non-zero weight. So
        normalised weights are fine and scaling every weight by a constant grows the same forest."""
        self._check_oob_params()
        # X, y and the weights are checked once here, never again per tree
        X, Y, _, sample_weight, one_d = validate_fit_data(self, X, y, sample_weight)
        n, d = Y.shape
        kind, q = self._resolve_projection(d)
        if isinstance(self.max_features, Integral) and self.max_features > X.shape[1]:
            raise ValueError(f"max_features={self.max_features} must be in [1, n_features={X.shape[1]}]")
        tree_cls = DecisionTreeRegressor  # a module attribute, looked up at fit time
        tree_params = dict(splitter=self._splitter, max_features=self.max_features, max_depth=self.max_depth,
                           min_samples_split=self.min_samples_split, min_samples_leaf=self.min_samples_leaf,
                           max_leaf_nodes=self.max_leaf_nodes, weighted_counts=False,
                           count_constant_features=self.count_constant_features)
        # the trees grow on a sparse 0/1 label matrix as CSR (same trees, faster); projections read Y as given and
        # their Z gets the same treatment (``_SplitTargets``)
        Y_grow = labels_for_growth(Y, sample_weight)
        full_labels = self.leaf_labels == "full" and self.bootstrap
        X_apply = _for_apply(X) if full_labels else None

        root = _seed_sequence(self.random_state)
        shared_seq, *tree_seqs = root.spawn(1 + self.n_estimators)
        streams = [_TreeStreams(s) for s in tree_seqs]

        options = dict(self.projection_params or {})
        shared_phi = None
        shared_time = 0.0
        if kind is not None and not isinstance(kind, str):  # a fixed matrix given by the user
            shared_phi = kind
        elif kind is not None and (self.projection_sharing == "shared" or kind == "pca"):
            t0 = time.perf_counter()
            shared_phi = make_projection(kind, q, d, random_state=shared_seq, Y=Y, **options)
            shared_time = time.perf_counter() - t0
        shared = None
        if shared_phi is not None:
            t0 = time.perf_counter()
            shared = _SplitTargets(Y, Y_grow, shared_phi, n)
            shared_time += time.perf_counter() - t0

        def grow(i):
            st = streams[i]
            weight = self._tree_weights(n, st, sample_weight)
            t0 = time.perf_counter()
            Z = None
            if kind is not None:
                targets = shared if shared is not None else _SplitTargets(
                    Y, Y_grow, make_projection(kind, q, d, random_state=st.projection, Y=Y, **options), n)
                Z = targets.for_weights(weight)
            proj_time = time.perf_counter() - t0
            tree = tree_cls(random_state=st.tree_seed, **tree_params)
            tree._fit_validated(X, Y_grow, Z, weight, y_one_d=one_d)
            if full_labels:
                _full_set_leaf_values(tree, X_apply, Y_grow, sample_weight)
            return tree, proj_time

        results = _map(grow, range(self.n_estimators), _n_threads(self.n_jobs, self.n_estimators))
        self.estimators_ = [r[0] for r in results]
        self.projection_time_ = shared_time + sum(r[1] for r in results)
        self.projection_ = shared_phi
        self._streams = streams
        self._projection_kind = kind
        self.n_outputs_ = d
        self.n_components_ = q
        self._y_one_d = one_d
        self._compute_oob(X, Y)
        return self

    def _tree_weights(self, n, streams, sample_weight):
        if not self.bootstrap:
            return sample_weight
        rng = np.random.default_rng(streams.bootstrap)
        counts = np.bincount(rng.integers(0, n, size=n), minlength=n).astype(np.float64)
        return counts if sample_weight is None else counts * sample_weight

    def tree_projection(self, i):
        """The projection matrix ``Φ_i`` used to grow tree ``i`` (regenerated from its seed; ``None`` when the
        forest was grown on the original outputs)."""
        self._check_fitted()
        if self._projection_kind is None:
            return None
        if self.projection_ is not None:
            return self.projection_
        return make_projection(self._projection_kind, self.n_components_, self.n_outputs_,
                               random_state=self._streams[i].projection, **dict(self.projection_params or {}))

    # ------------------------------------------------------------------------------------------------- predict
    def _check_fitted(self):
        check_is_fitted(self, "estimators_")

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    def _tree_predict(self, i, X):
        """Tree ``i``'s dense ``(n, d)`` prediction on ``X`` already validated by :meth:`_check_X_predict`."""
        return self.estimators_[i].tree_.predict(X)

    def _check_X_predict(self, X):
        """float32 dense C/Fortran or canonical CSR ``X``, checked once for all the trees."""
        self._check_fitted()
        return check_X(self, X, reset=False, for_fit=False)

    def predict(self, X):
        """Average of the trees' leaf means of the original outputs: an (n, d) float64 array ((n,) if fitted on a
        1-D ``y``). The sum runs over the trees in a fixed order, so the result does not depend on ``n_jobs``."""
        X = self._check_X_predict(X)
        n = X.shape[0]
        out = np.zeros((n, self.n_outputs_), dtype=np.float64)
        blocks = [(s, min(s + _PREDICT_BLOCK, n)) for s in range(0, n, _PREDICT_BLOCK)]

        def run(block):
            s, e = block
            Xb = X[s:e]
            acc = out[s:e]
            for i in range(len(self.estimators_)):
                acc += self._tree_predict(i, Xb).reshape(e - s, self.n_outputs_)
            acc /= len(self.estimators_)

        _map(run, blocks, _n_threads(self.n_jobs, len(blocks)))
        return out.ravel() if self._y_one_d else out

    def apply(self, X):
        """Leaf index of every sample in every tree, shape (n, n_estimators)."""
        X = self._check_X_predict(X)
        return np.column_stack([t.tree_.apply(X) for t in self.estimators_])

    # --------------------------------------------------------------------------------------------- out-of-bag
    # As scikit-learn's forests: ``oob_score=True`` scores the out-of-bag prediction with R² (``r2_score``, averaged
    # uniformly over the outputs), a callable ``oob_score(y_true, y_pred)`` replaces it. A row's out-of-bag prediction
    # averages the trees whose bootstrap left it out (regenerated from each tree's bootstrap stream); a row that every
    # tree drew gets 0 and a warning, as in scikit-learn. ``leaf_labels="full"`` is refused: its leaves are
    # relabelled with every learning row, out-of-bag ones included, so the estimate would not be out of bag.
    def _check_oob_params(self):
        """The checks of ``oob_score`` that involve other parameters (its type is in ``_parameter_constraints``)."""
        oob = self.oob_score
        if oob is not False and not self.bootstrap:
            raise ParameterError("Out of bag estimation only available if bootstrap=True")
        if oob is not False and self.leaf_labels == "full":
            raise ParameterError("oob_score needs leaf_labels='inbag': with leaf_labels='full' every leaf is "
                                 "labelled with the out-of-bag rows too")

    def _compute_oob(self, X, Y):
        """Set ``oob_prediction_`` and ``oob_score_`` when ``oob_score`` is set (called at the end of ``fit``)."""
        for name in ("oob_prediction_", "oob_score_", "_oob_counts", "_oob_mse"):
            self.__dict__.pop(name, None)
        if self.oob_score is False:
            return
        n, d = Y.shape
        Xr = sp.csr_matrix(X) if sp.issparse(X) else X
        pred = np.zeros((n, d), dtype=np.float64)
        counts = np.zeros(n, dtype=np.int64)
        for i in range(len(self.estimators_)):
            rows = np.flatnonzero(self._tree_weights(n, self._streams[i], None) == 0)
            if rows.size:
                Xo = self._check_X_predict(Xr[rows])
                pred[rows] += np.asarray(self._tree_predict(i, Xo)).reshape(rows.size, d)
                counts[rows] += 1
        if np.any(counts == 0):
            warnings.warn("Some inputs do not have OOB scores. This probably means too few trees were used to "
                          "compute any reliable OOB estimates.", UserWarning)
        pred /= np.maximum(counts, 1)[:, None]
        y_true = Y.toarray() if sp.issparse(Y) else Y
        if d == 1:
            pred, y_true = pred.ravel(), y_true.ravel()
        scorer = self.oob_score if callable(self.oob_score) else r2_score
        self.oob_prediction_ = pred
        self.oob_score_ = scorer(y_true, pred)
        self._oob_counts = counts
        covered = counts > 0
        err = (y_true - pred) ** 2
        self._oob_mse = float(np.mean(err[covered])) if covered.any() else float("nan")

    def run_info_(self):
        """Extras for a run record: the out-of-bag score, the out-of-bag MSE over the rows that have an out-of-bag
        prediction, and the fraction of such rows (empty when ``oob_score`` is off)."""
        if not hasattr(self, "oob_prediction_"):
            return {}
        return {"oob_score": float(self.oob_score_), "oob_mse": self._oob_mse,
                "oob_coverage": float(np.mean(self._oob_counts > 0))}

    # ----------------------------------------------------------------------------------------------- model size
    @property
    def n_nodes_(self):
        """Total number of nodes over the trees."""
        self._check_fitted()
        return int(sum(t.tree_.node_count for t in self.estimators_))

    @property
    def model_bytes_(self):
        """Bytes of the fitted model: the trees' own storage (``leaf_labels="full"`` relabels the trees' leaf
        stores in place, so it costs nothing extra)."""
        self._check_fitted()
        return int(sum(int(t.model_bytes_) for t in self.estimators_))


class _SplitTargets:
    """The projected outputs ``Z = Y Φᵀ`` one projection gives the trees to split on, in the layout each tree grows
    on fastest with the same result.

    A random output subspace splits on the 0/1 pattern of its ``Φ`` (``split_projection``, without its common
    scale). Of 0/1 labels with few per row, its ``Z`` is then a sparse 0/1 matrix, grown as CSR like the labels
    themselves (``labels_for_growth``: the same tree to the bit, O(non-zeros) per sample move). A sparse ``Φ``
    (subspace, Achlioptas, sparse Rademacher) multiplies the labels' CSR copy instead of the dense labels: both
    products add each output's non-zero terms in the same order (tested to the bit), and this one skips the
    zeros (4x faster for Achlioptas at q = d on delicious). A tree whose weights could make the sparse criterion's
    sums inexact gets the dense ``Z``, built when first needed. Labels given as a sparse matrix keep
    ``project_outputs``' layout, as before. Each layout is built once per projection."""

    def __init__(self, Y, Y_grow, phi, n):
        self._n = n
        self._dense = self._csr = None
        phi = split_projection(phi)
        if sp.issparse(Y):                     # the caller's sparse labels: the product's own layout, always
            self._dense = self._csr = self._checked(project_outputs(Y, phi))
        elif sp.issparse(Y_grow) and sp.issparse(phi):
            Z = self._checked(project_outputs(Y_grow, phi))
            if sp.issparse(Z):
                self._csr = _csr_if_it_grows(Z)
                if self._csr is None:
                    self._dense = np.ascontiguousarray(Z.toarray())
            else:
                self._dense = Z
        else:
            self._dense = self._checked(project_outputs(Y, phi))
            # only a Φ of 0s and 1s can give a 0/1 Z: the others (Gaussian, Rademacher, ...) skip a scan of Z
            grown = labels_for_growth(self._dense) if _zeros_and_ones(phi) else self._dense
            self._csr = grown if grown is not self._dense else None

    def _checked(self, Z):
        return check_targets(Z, self._n, name="projected outputs")[0]

    def for_weights(self, weight):
        """``Z`` for a tree grown with these weights."""
        if self._csr is not None and (self._csr is self._dense or label_sums_stay_exact(self._csr.shape, weight)):
            return self._csr
        if self._dense is None:
            self._dense = np.ascontiguousarray(self._csr.toarray())
        return self._dense


def _zeros_and_ones(phi):
    """Whether every entry of the projection ``phi`` (dense or sparse) is 0 or 1."""
    values = phi.data if sp.issparse(phi) else np.asarray(phi)
    return bool(np.all((values == 0) | (values == 1)))


def _csr_if_it_grows(Z):
    """``Z`` (CSR, canonical) when it is a 0/1 matrix the kernel grows as CSR (``forestbench._label_layout``),
    else ``None``."""
    n, q = Z.shape
    if not grows_sparse(q, Z.nnz / max(1, n * q)) or not np.all(Z.data == 1):
        return None
    return Z


def _for_apply(X):
    """``X`` (validated for fitting) in a layout ``Tree.apply`` reads without a copy: CSR for sparse data."""
    return sp.csr_array(X) if sp.issparse(X) else X


def _full_set_leaf_values(tree, X, Y, sample_weight):
    """Relabel every leaf of ``tree`` with the mean of ``Y`` over the whole learning set (in-bag and out-of-bag
    rows, weighted by ``sample_weight``), through the tree's one relabelling hook ``Tree.set_leaf_values``.

    ``X`` is the learning set as ``Tree.apply`` takes it (dense float32 or CSR). Every leaf holds the in-bag rows
    that created it (rows with a positive weight), so every leaf gets a value."""
    leaves = np.asarray(tree.tree_.apply(X))
    leaf_ids, inverse = np.unique(leaves, return_inverse=True)
    n = leaves.shape[0]
    w = np.ones(n) if sample_weight is None else sample_weight
    member = sp.csr_matrix((w, (inverse, np.arange(n))), shape=(leaf_ids.shape[0], n))
    mass = np.asarray(member.sum(axis=1)).ravel()
    if np.any(mass <= 0):
        raise ParameterError("a leaf has no positive sample weight in the learning set; leaf_labels='full' "
                             "needs positive weights on the rows that grew the tree")
    sums = member @ Y
    if sp.issparse(sums):  # divided, not multiplied by 1 / mass: the same bits as the dense division below
        values = sp.csr_array(sums)
        values.data /= np.repeat(mass, np.diff(values.indptr))
    else:
        values = sums / mass[:, None]
    tree.tree_.set_leaf_values(leaf_ids, values)


class RandomForestRegressor(_BaseProjectionForest):
    """Random forest (bootstrap + best split over ``max_features`` random features per node) whose splits are
    chosen on random projections of the outputs.

    Parameters
    ----------
    n_estimators : int, default 100
        Number of trees ``t``.
    max_features : "sqrt", "log2", int, float or None, default "sqrt"
        Features ``k`` drawn at each node (passed to the tree kernel; ``None`` means all ``p``).
    max_depth, min_samples_split, min_samples_leaf, max_leaf_nodes
        Tree pre-pruning, passed to the kernel; ``min_samples_split=2`` is the thesis' ``n_min = 1``.
    bootstrap : bool, default True
        Grow each tree on a bootstrap sample (as integer ``sample_weight`` counts).
    oob_score : bool or callable, default False
        Estimate the generalisation score on the out-of-bag rows (R², or ``oob_score(y_true, y_pred)``); needs
        ``bootstrap=True`` and ``leaf_labels="inbag"``. Sets ``oob_score_`` and ``oob_prediction_``.
    output_projection : None, str or (q, d) matrix, default None
        ``None`` grows on the original outputs. A family name of :mod:`forestbench.projections`
        (``"gaussian"``, ``"rademacher"``, ``"achlioptas"``, ``"sparse"``, ``"subsample"``, ``"hadamard"``,
        ``"pca"``) draws ``Φ``; a dense or sparse matrix is used as a fixed ``Φ`` by every tree.
    n_components : int, float or str, default "ln_d"
        ``q``: an int, a fraction of ``d`` in (0, 1] or ``"ln_d"`` (⌊0.5 + ln d⌋), ``"2ln_d"``, ``"sqrt_d"``.
    projection_sharing : "per_tree" or "shared", default "per_tree"
        Algorithm 5.2 (fresh ``Φ`` per tree) or 5.1 (one ``Φ`` for the forest).
    leaf_labels : "inbag" or "full", default "inbag"
        Which learning samples label the leaves (see the module docstring).
    projection_params : dict or None
        Extra family options: ``density`` for ``"sparse"``, ``with_replacement`` for ``"subsample"``.
    count_constant_features : bool, default False
        How ``max_features`` counts features found constant in a node (passed to the kernel): ``False`` scores
        ``k`` non-constant features (Extra-Trees paper), ``True`` counts every draw as scikit-learn does, so that
        sparse inputs, with many constant features in small nodes, give more randomised trees (config/README.md,
        "Tree kernel").
    n_jobs : int or None
        Threads used to grow the trees and to predict (``-1``: all cores).
    random_state : None, int, RandomState, Generator or SeedSequence

    Attributes
    ----------
    estimators_ : list of kernel trees; ``projection_`` : the shared/fixed ``Φ`` or ``None``;
    ``tree_projection(i)`` : ``Φ_i``; ``n_components_`` : ``q``; ``n_outputs_`` : ``d``;
    ``projection_time_`` : seconds spent drawing ``Φ`` and computing ``Z`` (summed over trees);
    ``n_nodes_``, ``model_bytes_`` : summed over the trees; ``oob_score_``, ``oob_prediction_`` (n,) or (n, d) :
    with ``oob_score``.
    """

    _splitter = "best"

    def __init__(self, n_estimators=100, *, max_features="sqrt", max_depth=None, min_samples_split=2,
                 min_samples_leaf=1, max_leaf_nodes=None, bootstrap=True, oob_score=False, output_projection=None,
                 n_components="ln_d", projection_sharing="per_tree", leaf_labels="inbag", projection_params=None,
                 count_constant_features=False, n_jobs=None, random_state=None):
        self.n_estimators = n_estimators
        self.max_features = max_features
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.max_leaf_nodes = max_leaf_nodes
        self.bootstrap = bootstrap
        self.oob_score = oob_score
        self.output_projection = output_projection
        self.n_components = n_components
        self.projection_sharing = projection_sharing
        self.leaf_labels = leaf_labels
        self.projection_params = projection_params
        self.count_constant_features = count_constant_features
        self.n_jobs = n_jobs
        self.random_state = random_state


class ExtraTreesRegressor(_BaseProjectionForest):
    """Extremely randomized trees (one uniform random cut per candidate feature, no bootstrap by default) whose
    splits are chosen on random projections of the outputs. Parameters as :class:`RandomForestRegressor`; without
    bootstrap, ``leaf_labels`` has no effect (every tree sees the whole learning set)."""

    _splitter = "random"

    def __init__(self, n_estimators=100, *, max_features="sqrt", max_depth=None, min_samples_split=2,
                 min_samples_leaf=1, max_leaf_nodes=None, bootstrap=False, oob_score=False, output_projection=None,
                 n_components="ln_d", projection_sharing="per_tree", leaf_labels="inbag", projection_params=None,
                 count_constant_features=False, n_jobs=None, random_state=None):
        self.n_estimators = n_estimators
        self.max_features = max_features
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.max_leaf_nodes = max_leaf_nodes
        self.bootstrap = bootstrap
        self.oob_score = oob_score
        self.output_projection = output_projection
        self.n_components = n_components
        self.projection_sharing = projection_sharing
        self.leaf_labels = leaf_labels
        self.projection_params = projection_params
        self.count_constant_features = count_constant_features
        self.n_jobs = n_jobs
        self.random_state = random_state
