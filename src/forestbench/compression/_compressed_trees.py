"""l1-compressed extremely randomized trees ("rET", thesis ch. 7; Joly, Schnitzler, Geurts & Wehenkel, ESANN 2012).

An Extra-Trees forest lifts every sample into the binary space of its nodes (root, internal nodes and leaves of
all trees). Incremental forward stagewise regression (FS_eps, the monotone Lasso) selects and weights a few of those
node indicators; the l1 budget ``t`` is chosen by K-fold cross-validation over the whole stored path. The forest is
then *rebuilt*: a test node is kept iff one of its descendants has a non-zero weight, a kept node without such
descendants becomes a leaf, each leaf holds the sum of the weights along its root path (output scale restored), and
trees left without any weight vanish into the constant. The result is a smaller forest that predicts exactly the
sparse linear model of Eq. 7.2 (thesis Algorithm 7.1).

The choices where the thesis is silent (column scaling, whitening, binary classification, the CV for t*, seeds,
multi-output, huge and sparse targets) are documented in config/README.md, "l1-compressed extra-trees" and
"Targets at the edges". What the code exposes:

- ``column_scaling`` (see :mod:`forestbench.linear._stagewise`); zero-variance columns are never selected.
- ``loss="zero_one"`` (binary only): the forest and the path regress the indicator of the second class and
  ``predict`` returns the score on that 0/1 scale; more than two classes, or a single one, is an error.
  ``loss="auto"`` picks the 0-1 loss only for labels that are already 0/1 (or bool) or are not numbers (e.g. two
  strings); any other numeric target, {3, 7} and constant ones included, is regressed on its own scale.
- With targets rescaled by a power of two (max |y| above 2**256), ``path_`` is in the scaled units and ``coef_`` /
  ``intercept_`` in those of y.
- Seeds: an integer ``random_state`` is passed unchanged to the final forest; the folds and the fold forests draw
  from a separate ``SeedSequence([random_state, ...])``.
- Multi-output: the CV loss is the mean squared error averaged over the whitened outputs.
"""
from __future__ import annotations

import time
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, MultiOutputMixin, RegressorMixin, _fit_context
from sklearn.model_selection import KFold, StratifiedKFold
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, RealNotInt, StrOptions
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import check_is_fitted, validate_data

from forestbench._target_scale import power_of_two_scale
from forestbench.linear._stagewise import COLUMN_SCALINGS, forward_stagewise_path

__all__ = ["CompressedExtraTreesRegressor"]


class CompressedExtraTreesRegressor(MultiOutputMixin, RegressorMixin, BaseEstimator):
    """Extra-Trees compressed by an l1-regularised (FS_eps) re-weighting of their node indicators (rET).

    Parameters
    ----------
    n_estimators : int, default 100
        Trees M of the Extra-Trees forest that is compressed.
    max_features : int, float, "sqrt", "log2" or None, default 1.0
        Features K scored per node (1.0 = all: the thesis' K = p).
    min_samples_split : int or float, default 2
        The thesis' n_min (n_min = 1 in the thesis is 2 here: a node with fewer samples is a leaf).
    max_depth : int or None, default None
    bootstrap : bool, default False
        Extra-Trees grow on the whole learning set.
    epsilon : float > 0, default 0.01
        FS_eps step size (thesis: 0.01). The path point after s steps has l1 budget t = s * epsilon.
    t : float >= 0 or None, default None
        l1 budget of the compressed model. None chooses it by ``cv``-fold cross-validation on the training set.
    max_t : float > 0, default 10.0
        Largest budget explored by the cross-validation (the path runs ``round(max_t / epsilon)`` steps).
    cv : int >= 2, default 10
        Folds of the cross-validation over t.
    loss : "auto", "squared" or "zero_one", default "auto"
        CV loss and kind of target. "zero_one": binary classification (score of the second class); "squared":
        regression on the target's own scale; "auto": "zero_one" for 0/1 (or bool) labels and for two non-numeric
        labels, "squared" for every other target (see the module docstring).
    column_scaling : "standardize", "unit_norm" or "none", default "standardize"
        Scaling of the node-indicator columns before FS_eps (all are centred).
    n_jobs : int or None
        Threads used to grow each forest.
    random_state : int, RandomState or None

    Attributes
    ----------
    forest_ : :class:`forestbench.tree.indicator.FlatForest`
        The compressed forest (the only model used by ``predict``).
    t_ : float
        l1 budget used (t* when chosen by cross-validation): ``n_steps_ * epsilon``, smaller than the requested
        budget when the path ended first (a step no longer lowers the training error).
    n_steps_ : int
        FS_eps steps of the final path (``t_ / epsilon`` unless the path stopped early).
    n_test_nodes_, n_nodes_, n_trees_ : test nodes, nodes and trees of the compressed forest.
    original_n_test_nodes_, original_n_nodes_ : test nodes and nodes of the Extra-Trees forest it came from.
    original_model_bytes_, model_bytes_ : bytes of the original forest (forestbench kernel trees) and of the
        compressed forest; ``original_flat_bytes_`` : the original forest in the compressed forest's layout.
    n_nonzero_coef_ : node indicators with a non-zero weight.
    path_ : :class:`forestbench.linear.ForwardStagewisePath` of the final forest.
    cv_t_, cv_losses_ : the budgets explored and their mean CV loss (None when ``t`` is given).
    classes_ : the two classes of a binary target (None for regression).
    """

    _parameter_constraints = {
        "n_estimators": [Interval(Integral, 1, None, closed="left")],
        "max_features": [Interval(Integral, 1, None, closed="left"), Interval(RealNotInt, 0, 1, closed="right"),
                         StrOptions({"sqrt", "log2"}), None],
        "min_samples_split": [Interval(Integral, 2, None, closed="left"),
                              Interval(RealNotInt, 0, 1, closed="right")],
        "max_depth": [Interval(Integral, 1, None, closed="left"), None],
        "bootstrap": ["boolean"],
        "epsilon": [Interval(Real, 0, None, closed="neither")],
        "t": [Interval(Real, 0, None, closed="left"), None],
        "max_t": [Interval(Real, 0, None, closed="neither")],
        "cv": [Interval(Integral, 2, None, closed="left")],
        "loss": [StrOptions({"auto", "squared", "zero_one"})],
        "column_scaling": [StrOptions(set(COLUMN_SCALINGS))],
        "n_jobs": [Integral, None],
        "random_state": ["random_state"],
    }

    def __init__(self, n_estimators=100, *, max_features=1.0, min_samples_split=2, max_depth=None, bootstrap=False,
                 epsilon=0.01, t=None, max_t=10.0, cv=10, loss="auto", column_scaling="standardize", n_jobs=None,
                 random_state=None):
        self.n_estimators = n_estimators
        self.max_features = max_features
        self.min_samples_split = min_samples_split
        self.max_depth = max_depth
        self.bootstrap = bootstrap
        self.epsilon = epsilon
        self.t = t
        self.max_t = max_t
        self.cv = cv
        self.loss = loss
        self.column_scaling = column_scaling
        self.n_jobs = n_jobs
        self.random_state = random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    # ------------------------------------------------------------------------------------------------- helpers
    def _forest(self, seed):
        from forestbench.forest._forest import ExtraTreesRegressor

        return ExtraTreesRegressor(n_estimators=self.n_estimators, max_features=self.max_features,
                                   min_samples_split=self.min_samples_split, max_depth=self.max_depth,
                                   bootstrap=self.bootstrap, n_jobs=self.n_jobs, random_state=seed)

    def _targets(self, y):
        """Float (n, d) targets, the CV loss, the classes of a binary target and whether y was 1-D."""
        y_arr = y.toarray(order="C") if sp.issparse(y) else np.asarray(y)
        if y_arr.ndim not in (1, 2) or y_arr.shape[0] == 0:
            raise ValueError(f"y must be 1-D or 2-D with at least one row, got shape {y_arr.shape}")
        one_d = y_arr.ndim == 1
        if y_arr.ndim == 2 and y_arr.shape[1] == 1:
            y_col = y_arr[:, 0]
        else:
            y_col = y_arr if one_d else None
        kind = type_of_target(y_col) if y_col is not None else "continuous-multioutput"
        numeric = y_arr.dtype.kind in "biuf"
        loss = self.loss
        if loss == "auto":
            # classification only when the labels are already on the 0/1 scale or are not numbers: a numeric
            # target with other values (two-valued or constant ones included) is regressed on its own scale
            zero_one_labels = kind == "binary" and (not numeric or np.array_equal(np.unique(y_col), [0, 1]))
            loss = "zero_one" if zero_one_labels else "squared"
        classes = None
        if loss == "zero_one":
            if y_col is None:
                raise ValueError("loss='zero_one' supports a single binary target; y has "
                                 f"{y_arr.shape[1]} columns")
            classes = np.unique(y_col)
            if classes.shape[0] > 2:
                raise ValueError(f"compressed extra-trees support binary classification only: y has "
                                 f"{classes.shape[0]} classes ({kind}); use a regression target or two classes")
            if classes.shape[0] < 2:
                raise ValueError(f"loss='zero_one' needs two classes in y; it holds the single value "
                                 f"{classes[0]!r} (use loss='squared' to regress a constant target)")
            Y = (y_col == classes[-1]).astype(np.float64).reshape(-1, 1)
        else:
            if not numeric:
                raise ValueError(f"y of type {kind!r} (dtype {y_arr.dtype}) is not a regression target; "
                                 f"a classification target must be binary")
            Y = np.asarray(y_arr, dtype=np.float64).reshape(y_arr.shape[0], -1)
            if not np.all(np.isfinite(Y)):
                raise ValueError("y contains NaN or infinite values")
        return Y, loss, classes, one_d

    def _seeds(self):
        rs = self.random_state
        if isinstance(rs, Integral) and not isinstance(rs, bool):
            base = int(rs)
        else:
            base = int(check_random_state(rs).randint(0, 2**31 - 1))
        side = np.random.SeedSequence([base, 0x7E7])
        split_seq, forests_seq = side.spawn(2)
        split_seed = int(split_seq.generate_state(1)[0] & 0x7FFFFFFF)
        fold_seeds = [int(s) & 0x7FFFFFFF for s in forests_seq.generate_state(self.cv)]
        return base, split_seed, fold_seeds

    def _path(self, forest, X, Y, n_steps):
        from forestbench.tree.indicator import forest_node_indicator

        Z = forest_node_indicator(forest, X)
        return forward_stagewise_path(Z, Y, epsilon=float(self.epsilon), max_steps=int(n_steps),
                                      column_scaling=self.column_scaling)

    # --------------------------------------------------------------------------------------------------- fit
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Grow Extra-Trees on (X, y), choose t by cross-validation (unless ``t`` is given) and compress."""
        from forestbench.tree import _indicator
        from forestbench.tree.indicator import FlatForest, forest_node_indicator, tree_node_arrays

        t_start = time.perf_counter()
        X = validate_data(self, X, dtype=np.float32, accept_sparse=["csr", "csc"], ensure_min_samples=2)
        Y, loss, classes, one_d = self._targets(y)
        if Y.shape[0] != X.shape[0]:
            raise ValueError(f"X has {X.shape[0]} rows but y has {Y.shape[0]}")
        # regression targets whose squares overflow are fitted divided by a power of two (exact, undone below)
        scale = power_of_two_scale(Y) if loss == "squared" else 1.0
        if scale != 1.0:
            Y = Y / scale
        eps = float(self.epsilon)
        base_seed, split_seed, fold_seeds = self._seeds()

        self.cv_t_ = None
        self.cv_losses_ = None
        if self.t is None:
            n_max = int(round(float(self.max_t) / eps))
            if loss == "zero_one":
                counts = np.bincount(Y[:, 0].astype(int), minlength=2)
                if counts.min() < self.cv:
                    raise ValueError(f"cv={self.cv} folds need at least {self.cv} samples of each class; the "
                                     f"smallest class has {counts.min()}")
                splitter = StratifiedKFold(self.cv, shuffle=True, random_state=split_seed)
                folds = list(splitter.split(np.zeros(Y.shape[0]), Y[:, 0]))
            else:
                if Y.shape[0] < 2 * self.cv:
                    raise ValueError(f"cv={self.cv} folds need at least {2 * self.cv} samples, got {Y.shape[0]}")
                folds = list(KFold(self.cv, shuffle=True, random_state=split_seed).split(X))
            curves = np.empty((len(folds), n_max + 1))
            for k, (learn, valid) in enumerate(folds):
                forest = self._forest(fold_seeds[k]).fit(X[learn], Y[learn])
                path = self._path(forest, X[learn], Y[learn], n_max)
                losses = path.losses(forest_node_indicator(forest, X[valid]), Y[valid], loss)
                curves[k, :losses.shape[0]] = losses
                curves[k, losses.shape[0]:] = losses[-1]
            mean = curves.mean(axis=0)
            n_star = int(np.argmin(mean))
            self.cv_t_ = eps * np.arange(n_max + 1)
            self.cv_losses_ = mean
        else:
            n_star = int(round(float(self.t) / eps))
        t_cv = time.perf_counter()

        forest = self._forest(base_seed).fit(X, Y)
        t_forest = time.perf_counter()
        path = self._path(forest, X, Y, n_star)
        w, b = path.linear_model()
        left, right, feature, threshold, offsets = tree_node_arrays(forest)
        nl, nr, nf, nt, value, roots, constant = _indicator.compress_flat_forest(
            left, right, feature, threshold, offsets, np.ascontiguousarray(w))
        intercept = b + constant
        if scale != 1.0:   # back to the units of y
            value, intercept, w, b = value * scale, intercept * scale, w * scale, b * scale
        self.forest_ = FlatForest(nl, nr, nf, nt, value, roots, intercept)
        t_end = time.perf_counter()

        self.path_ = path
        self.n_steps_ = path.n_steps
        self.t_ = eps * path.n_steps  # below the requested budget when the path ended earlier
        self.coef_ = w
        self.intercept_ = b
        self.n_nonzero_coef_ = int(np.count_nonzero(np.any(w != 0, axis=1)))
        self.n_test_nodes_ = self.forest_.n_test_nodes
        self.n_nodes_ = self.forest_.n_nodes
        self.n_trees_ = self.forest_.n_trees
        self.original_n_test_nodes_ = int(np.count_nonzero(left >= 0))
        self.original_n_nodes_ = int(left.shape[0])
        self.original_model_bytes_ = int(forest.model_bytes_)
        self.original_flat_bytes_ = int(FlatForest.from_trees(forest).nbytes)
        self.model_bytes_ = self.forest_.nbytes
        self.classes_ = classes
        self.loss_ = loss
        self.n_outputs_ = Y.shape[1]
        self._y_one_d = one_d
        self.fit_seconds_ = {"cv": t_cv - t_start, "forest": t_forest - t_cv, "compress": t_end - t_forest,
                             "total": t_end - t_start}
        self._latency = self._measure_latency(forest, X)
        return self

    def _measure_latency(self, forest, X, max_rows=512):
        """Predict seconds per sample of the original forest and of the compressed one, on training rows."""
        Xs = X[:max_rows]
        Xs = Xs.toarray() if sp.issparse(Xs) else np.ascontiguousarray(Xs)
        out = {}
        for name, fn in (("et", forest.predict), ("ret", self.forest_.predict)):
            best = np.inf
            for _ in range(3):
                t0 = time.perf_counter()
                fn(Xs)
                best = min(best, time.perf_counter() - t0)
            out[name] = best / Xs.shape[0]
        return out

    # ----------------------------------------------------------------------------------------------- predict
    def predict(self, X):
        """Predictions of the compressed forest: ``(n,)`` for a 1-D target, else ``(n, d)``. For a binary target
        the score of the second class on the 0/1 scale (threshold 0.5)."""
        check_is_fitted(self, "forest_")
        if not (isinstance(X, np.ndarray) and X.dtype == np.float32 and X.ndim == 2
                and X.shape[1] == self.n_features_in_ and X.shape[0] > 0 and np.isfinite(X).all()):
            # the general checks (feature names, conversions, sparse input); a finite float32 array of the right
            # width passes them unchanged, so it skips them (they cost ~0.1 ms per call)
            X = validate_data(self, X, reset=False, dtype=np.float32, accept_sparse=["csr", "csc"])
        out = self.forest_.predict(X)
        return out.ravel() if self._y_one_d else out

    def run_info_(self):
        """Facts of the fit for the run record: test nodes of ET and rET, compression factor, bytes, t*."""
        check_is_fitted(self, "forest_")
        factor = (self.original_n_test_nodes_ / self.n_test_nodes_) if self.n_test_nodes_ else None
        return {
            "et_test_nodes": self.original_n_test_nodes_,
            "ret_test_nodes": self.n_test_nodes_,
            "compression_factor": factor,
            "ret_trees": self.n_trees_,
            "nonzero_coef": self.n_nonzero_coef_,
            "t_star": self.t_,
            "n_steps": self.n_steps_,
            "et_model_bytes": self.original_model_bytes_,
            "et_flat_bytes": self.original_flat_bytes_,
            "ret_model_bytes": self.model_bytes_,
            "et_predict_us_per_sample": 1e6 * self._latency["et"],
            "ret_predict_us_per_sample": 1e6 * self._latency["ret"],
            "cv_seconds": self.fit_seconds_["cv"],
            "compress_seconds": self.fit_seconds_["compress"],
        }
