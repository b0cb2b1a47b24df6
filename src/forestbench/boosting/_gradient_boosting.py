"""Multi-output gradient tree boosting (Joly, Wehenkel & Geurts, "Gradient tree boosting with random output
projections"; thesis ch. 6): st-gbrt / br-gbrt, gbmort, gbrt-rpo, gbrt-relabel-rpo and the artificial-gbrt oracle of
the friedman1 study.

All share one compiled loop (:mod:`forestbench.boosting._loop`): initial constant per output, negative
gradient, a best-first regression tree from the forestbench kernel (``max_leaf_nodes`` leaves, ``max_features``
candidate features per node), a step length rho per output, shrinkage by the learning rate.

Where the papers leave room (loss definitions, initial constants, step lengths, projections, st-gbrt's order),
the choice is documented in config/README.md, "Gradient tree boosting"; what the code exposes:

- ``loss``: ``"square"``, ``"absolute"`` (one step length per output, a weighted-median line search) and
  ``"logistic"`` (labels coded -1/+1). ``predict`` returns the scores f for the regression losses and the
  probabilities 1 / (1 + exp(-2 f)) for the logistic loss (``decision_function`` gives f). A label column that is
  all 0 or all 1 starts from n+ / n- clipped to [1 / (2n), 2n], so scores stay finite.
- ``line_search`` (logistic loss, minimised to 1e-12 relative precision on its slope): ``"newton"`` (default)
  takes Newton steps kept inside the sign-change bracket, bisecting when a step leaves it (one pass over the
  samples per step, about 3 passes); ``"brent"`` runs Brent's root finder from the Newton point (about 7 passes).
  Either is bounded: a step moves no score by more than 53 ln 2 (before the learning rate), where the loss would
  keep falling along it (a step that separates an output's labels has its minimum at infinity).
  ``stage_bounded_steps_`` counts, per stage, the outputs whose step the bound decided.
- Projections (gbrt-rpo, gbrt-relabel-rpo) use the families of :mod:`forestbench.projections` (``subsample``,
  ``gaussian``, ``rademacher``, ``achlioptas``, ``sparse`` with s = sqrt(d)); gbrt-rpo's single row's scale is
  absorbed by rho.
- st-gbrt: ``n_estimators`` counts trees *per output*; one stage (``staged_predict``) is one round of d trees.

Trees: ``tree_builder="presort"`` (default) grows each tree from feature orders computed once per fit (X does not
change between iterations), choosing exactly the splits the forestbench kernel's best splitter would choose (with
``max_features`` well below p it finds a node's rows in the orders of the drawn features only, the same trees at a
cost that grows with k rather than p: ``tree/_presort.pyx``, layouts);
``"kernel"`` calls the kernel's own builder every iteration (it re-sorts the node's values at every node).
``count_constant_features``: with ``max_features`` below p, a node scores ``max_features`` non-constant features
(the default) or, when true, ``max_features`` drawn ones, constant features included, drawing on only until one
non-constant feature is scored (scikit-learn's trees, on which the papers' boosting ran).

Fitted records: ``stage_n_trees_`` (cumulative number of trees after each stage), ``stage_fit_seconds_``
(cumulative fit wall seconds), ``stage_fit_cpu_seconds_`` (the same in CPU seconds of the process: both count
the fit's one-off set-up in the first stage), ``stage_bounded_steps_`` (line searches of each stage decided by the
logistic step bound), ``train_loss_`` (training loss before the first and after every stage, when
``monitor_train_loss=True``), ``stage_tree_cpu_seconds_`` (cumulative CPU seconds spent growing the trees, when
``monitor_tree_time=True``: the stage's clock less this is its per-output work, gradient, projection, line search
and score update).
"""
from __future__ import annotations

import numbers

import numpy as np
import scipy.sparse as sp
from scipy.special import expit
from sklearn.base import BaseEstimator, MultiOutputMixin, RegressorMixin, _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_array, check_is_fitted, validate_data

from forestbench._target_scale import power_of_two_scale

__all__ = [
    "STGradientBoostingRegressor",
    "GBMORTRegressor",
    "GBRTRPORegressor",
    "GBRTRelabelRPORegressor",
    "ArtificialGBRTRegressor",
]

LOSSES = ("square", "absolute", "logistic")
LOOP_PROJECTIONS = ("subsample", "gaussian", "rademacher", "achlioptas", "sparse")
_KIND = {"mort": 0, "relabel": 0, "rpo": 1, "st": 2}


def _loop():
    from forestbench.boosting import _loop

    return _loop


def _seeds(random_state):
    rng = np.random.RandomState(random_state) if not isinstance(random_state, np.random.RandomState) \
        else random_state
    return [int(s) for s in rng.randint(1, 2 ** 62, size=2, dtype=np.int64)]


def _resolve_max_features(max_features, p):
    if max_features is None:
        return p
    if isinstance(max_features, str):
        k = int(np.sqrt(p)) if max_features == "sqrt" else int(np.log2(p))
    elif isinstance(max_features, numbers.Integral):
        if max_features > p:
            raise ValueError(f"max_features={max_features} must be <= n_features={p}")
        k = int(max_features)
    else:
        k = int(max_features * p)
    return max(1, min(p, k))


def initial_constants(loss, Y):
    """Per-output constant minimising the loss (Y already coded -1/+1 for the logistic loss)."""
    if loss == "square":
        return Y.mean(axis=0)
    if loss == "absolute":
        return np.median(Y, axis=0)
    n = Y.shape[0]
    n_pos = (Y > 0).sum(axis=0).astype(float)
    ratio = np.clip(n_pos / np.maximum(n - n_pos, 0.0).clip(min=1e-300), 1.0 / (2 * n), 2.0 * n)
    return 0.5 * np.log(ratio)


class _BaseBoosting(MultiOutputMixin, RegressorMixin, BaseEstimator):
    _algorithm = "mort"
    _y_scale = 1.0   # power of two the regression targets were divided by (see _fit_coded)

    _parameter_constraints: dict = {
        "n_estimators": [Interval(numbers.Integral, 1, None, closed="left")],
        "learning_rate": [Interval(numbers.Real, 0.0, 1.0, closed="right")],
        "loss": [StrOptions(set(LOSSES))],
        "max_leaf_nodes": [Interval(numbers.Integral, 2, None, closed="left")],
        "max_features": [
            None,
            Interval(numbers.Integral, 1, None, closed="left"),
            Interval(numbers.Real, 0.0, 1.0, closed="right"),
            StrOptions({"sqrt", "log2"}),
        ],
        "random_state": ["random_state"],
        "monitor_train_loss": ["boolean"],
        "monitor_tree_time": ["boolean"],
        "tree_builder": [StrOptions({"presort", "kernel"})],
        "line_search": [StrOptions({"newton", "brent"})],
        "count_constant_features": ["boolean"],
    }

    def __init__(self, n_estimators=100, *, learning_rate=0.1, loss="square", max_leaf_nodes=8,
                 max_features=None, random_state=None, monitor_train_loss=False, tree_builder="presort",
                 line_search="newton", count_constant_features=False, monitor_tree_time=False):
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.loss = loss
        self.max_leaf_nodes = max_leaf_nodes
        self.max_features = max_features
        self.random_state = random_state
        self.monitor_train_loss = monitor_train_loss
        self.tree_builder = tree_builder
        self.line_search = line_search
        self.count_constant_features = count_constant_features
        self.monitor_tree_time = monitor_tree_time

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    # -- input checks --------------------------------------------------------------------------------------------
    def _check_X(self, X, reset):
        X = validate_data(self, X, reset=reset, dtype=np.float32, accept_sparse=["csr", "csc"],
                          ensure_all_finite=True)
        if sp.issparse(X):
            X = X.toarray()
        return np.asarray(X, dtype=np.float32)

    def _check_XY(self, X, Y):
        if sp.issparse(Y):
            Y = Y.toarray()
        X, Y = validate_data(self, X, Y, dtype=np.float32, accept_sparse=["csr", "csc"], multi_output=True,
                             y_numeric=True, ensure_all_finite=True)
        if sp.issparse(X):
            X = X.toarray()
        X = np.asarray(X, dtype=np.float32)
        Y = np.asarray(Y, dtype=np.float64)
        self._y_1d = Y.ndim == 1
        if Y.ndim == 1:
            Y = Y[:, None]
        if not np.all(np.isfinite(Y)):
            raise ValueError("Input y contains NaN or infinity")
        return X, Y

    def _check_eval_set(self, eval_set, d):
        """``(X_val, y_val)`` checked like the training data: X_val with the training columns, y_val numeric,
        finite, with X_val's rows and the training outputs (1-D or one column when y had one output)."""
        if not (isinstance(eval_set, (tuple, list)) and len(eval_set) == 2):
            raise ValueError(f"eval_set must be a pair (X_val, y_val), got {type(eval_set).__name__}"
                             + (f" of length {len(eval_set)}" if isinstance(eval_set, (tuple, list)) else ""))
        Xv = np.asfortranarray(self._check_X(eval_set[0], reset=False))
        yv = eval_set[1]
        if sp.issparse(yv):
            yv = yv.toarray()
        Yv = check_array(yv, ensure_2d=False, dtype=np.float64, ensure_all_finite=True, ensure_min_samples=0,
                         input_name="eval_set y_val")
        shape = Yv.shape
        if Yv.ndim == 1 and d == 1:
            Yv = Yv[:, None]
        if Yv.ndim != 2 or Yv.shape != (Xv.shape[0], d):
            raise ValueError(f"eval_set: y_val has shape {shape}, expected ({Xv.shape[0]}, {d}): X_val's "
                             f"{Xv.shape[0]} rows and the {d} output(s) of the training y")
        return Xv, Yv

    def _code_targets(self, Y):
        if self.loss != "logistic":
            return Y
        values = np.unique(Y)
        if not (np.all(np.isin(values, (0.0, 1.0))) or np.all(np.isin(values, (-1.0, 1.0)))):
            raise ValueError(
                f"loss='logistic' needs binary labels (0/1 or -1/+1) in y; got values {values[:5].tolist()}"
                + ("..." if values.size > 5 else ""))
        return np.where(Y > 0, 1.0, -1.0)

    # -- fitting ---------------------------------------------------------------------------------------------------
    def _loop_options(self, d):
        return "subsample", 1

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, eval_set=None):
        """Fit on X (n, p) and y (n, d); ``n_estimators`` iterations (per output for st-gbrt).

        ``eval_set=(X_val, y_val)``: the loop also scores these rows after every stage (compiled, no prediction
        pass afterwards) and stores the per-output sum of squared errors of the scores in ``eval_sse_``
        (n_stages, d) and the staged macro-r2 in ``eval_macro_r2_`` (square and absolute losses).
        """
        X, Y = self._check_XY(X, y)
        val = None
        if eval_set is not None:
            Xv, Yv = self._check_eval_set(eval_set, Y.shape[1])
            val = (Xv, self._code_targets(Yv))
        self._fit_coded(X, self._code_targets(Y), val)
        return self

    def _fit_coded(self, X, Yc, val=None):
        n, p = X.shape
        d = Yc.shape[1]
        self.n_outputs_ = d
        self.max_features_ = _resolve_max_features(self.max_features, p)
        projection, q = self._loop_options(d)
        # targets whose squares overflow are fitted divided by a power of two (exact; undone on predict)
        scale = 1.0 if self.loss == "logistic" else power_of_two_scale(Yc)
        if scale != 1.0:
            Yc = Yc / scale
            val = None if val is None else (val[0], val[1] / scale)
        self._y_scale = scale
        init = initial_constants(self.loss, Yc)
        tree_seed, proj_seed = _seeds(self.random_state)
        res = _loop().boost(np.asfortranarray(X), Yc, init, self._algorithm, self.loss,
                            int(self.n_estimators), float(self.learning_rate), int(self.max_leaf_nodes),
                            int(self.max_features_), projection, int(q), tree_seed, proj_seed,
                            bool(self.monitor_train_loss), self.tree_builder == "presort",
                            None if val is None else val[0], None if val is None else val[1],
                            self.line_search == "brent", bool(self.count_constant_features),
                            bool(self.monitor_tree_time))
        # the public init_, scores and losses are in the units of y (squared errors may overflow to inf there)
        square_scale = scale * scale
        loss_scale = square_scale if self.loss == "square" else scale
        self.init_ = init * scale
        if val is not None:
            sse = res["val_sse"]
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):   # a y_val far past y may overflow
                sst = ((val[1] - val[1].mean(axis=0)) ** 2).sum(axis=0)
                self.eval_macro_r2_ = np.mean(1.0 - sse / sst, axis=1)
                self.eval_sse_ = sse * square_scale
        res.pop("val_sse")
        self.train_scores_ = res.pop("train_scores") * scale
        self.stage_fit_seconds_ = res.pop("stage_seconds")
        self.stage_fit_cpu_seconds_ = res.pop("stage_cpu_seconds")
        self.stage_bounded_steps_ = res.pop("bounded_steps")
        tree_cpu = res.pop("stage_tree_cpu_seconds")
        if self.monitor_tree_time:
            self.stage_tree_cpu_seconds_ = tree_cpu
        loss_path = res.pop("train_loss")
        if self.monitor_train_loss:
            with np.errstate(over="ignore"):
                self.train_loss_ = loss_path * loss_scale
        self._model = res
        per_stage = d if self._algorithm == "st" else 1
        self.n_stages_ = int(self.n_estimators)
        self.stage_n_trees_ = per_stage * np.arange(1, self.n_stages_ + 1, dtype=np.int64)
        self.n_trees_ = int(res["node_ptr"].shape[0] - 1)

    # -- prediction ------------------------------------------------------------------------------------------------
    def _trees_per_stage(self):
        return self.n_outputs_ if self._algorithm == "st" else 1

    def _add_trees(self, X, F, t0, t1):
        m = self._model
        _loop().predict_add(X, m["left"], m["right"], m["feature"], m["threshold"], m["leaf_index"],
                            m["node_ptr"], m["leaf_ptr"], m["values"], m["coef"], m["output"],
                            _KIND[self._algorithm], t0, t1, F)

    def _raw_init(self, n):
        return np.tile(self.init_ / self._y_scale, (n, 1)).astype(np.float64)

    def _unscale(self, F):
        """Scores in the units of y (the trees were fitted on y / ``_y_scale``, a power of two: exact)."""
        return F if self._y_scale == 1.0 else F * self._y_scale

    def _output(self, F):
        if self.loss == "logistic":
            F = expit(2.0 * F)   # 1 / (1 + exp(-2 f)) without overflow warnings for very negative scores
        return F[:, 0] if self._y_1d else F

    def decision_function(self, X):
        """Raw scores f(x) (n, d)."""
        check_is_fitted(self, "_model")
        X = np.asfortranarray(self._check_X(X, reset=False))
        F = self._raw_init(X.shape[0])
        self._add_trees(X, F, 0, self.n_trees_)
        return self._unscale(F)

    def predict(self, X):
        """One score column per output (probabilities for the logistic loss)."""
        return self._output(self.decision_function(X))

    def staged_decision_function(self, X):
        check_is_fitted(self, "_model")
        X = np.asfortranarray(self._check_X(X, reset=False))
        F = self._raw_init(X.shape[0])
        k = self._trees_per_stage()
        for stage in range(self.n_stages_):
            self._add_trees(X, F, stage * k, (stage + 1) * k)
            yield self._unscale(F.copy())

    def staged_predict(self, X):
        """Yield the prediction after each stage (one iteration; one round of d trees for st-gbrt)."""
        for F in self.staged_decision_function(X):
            yield self._output(F)

    # -- records ---------------------------------------------------------------------------------------------------
    @property
    def n_nodes_(self):
        check_is_fitted(self, "_model")
        return int(self._model["left"].shape[0])

    @property
    def model_bytes_(self):
        check_is_fitted(self, "_model")
        return int(sum(a.nbytes for a in self._model.values()) + self.init_.nbytes)

    def run_info_(self):
        check_is_fitted(self, "_model")
        info = {"n_trees": self.n_trees_, "n_nodes": self.n_nodes_, "model_mb": self.model_bytes_ / 2 ** 20}
        if self.loss == "logistic":
            info["bounded_steps"] = int(self.stage_bounded_steps_.sum())
        return info


class GBMORTRegressor(_BaseBoosting):
    """gbmort: one multi-output regression tree on the d-dimensional negative gradient per iteration, one step length
    per output (thesis Algorithm 6.1)."""

    _algorithm = "mort"


class STGradientBoostingRegressor(_BaseBoosting):
    """st-gbrt (br-gbrt for multi-label): one single-output gradient boosting model per output, trees fitted
    round-robin; ``n_estimators`` trees per output."""

    _algorithm = "st"


class _ProjectedBoosting(_BaseBoosting):
    _parameter_constraints: dict = {
        **_BaseBoosting._parameter_constraints,
        "output_projection": [StrOptions(set(LOOP_PROJECTIONS))],
        "n_components": [Interval(numbers.Integral, 1, None, closed="left")],
    }

    def __init__(self, n_estimators=100, *, learning_rate=0.1, loss="square", max_leaf_nodes=8,
                 max_features=None, output_projection="subsample", n_components=1, random_state=None,
                 monitor_train_loss=False, tree_builder="presort", line_search="newton",
                 count_constant_features=False, monitor_tree_time=False):
        super().__init__(n_estimators, learning_rate=learning_rate, loss=loss, max_leaf_nodes=max_leaf_nodes,
                         max_features=max_features, random_state=random_state,
                         monitor_train_loss=monitor_train_loss, tree_builder=tree_builder,
                         line_search=line_search, count_constant_features=count_constant_features,
                         monitor_tree_time=monitor_tree_time)
        self.output_projection = output_projection
        self.n_components = n_components

    def _loop_options(self, d):
        return self.output_projection, self.n_components


class GBRTRPORegressor(_ProjectedBoosting):
    """gbrt-rpo: per iteration a fresh random 1 x d projection of the negative gradient, a single-output tree on it and
    a d-vector of step lengths (thesis Algorithm 6.2). ``n_components`` must be 1."""

    _algorithm = "rpo"

    def _loop_options(self, d):
        if self.n_components != 1:
            raise ValueError(f"n_components={self.n_components}: gbrt-rpo projects on one dimension "
                             "(n_components=1); use gbrt_relabel_rpo for q > 1")
        return self.output_projection, 1


class GBRTRelabelRPORegressor(_ProjectedBoosting):
    """gbrt-relabel-rpo: a tree grown on q random projections of the negative gradient, its leaves relabelled with
    the mean unprojected gradient (thesis Algorithm 6.3)."""

    _algorithm = "relabel"


class ArtificialGBRTRegressor(_BaseBoosting):
    """The oracle of the friedman1 study (thesis Sec. 6.3.1): it knows the output structure.

    ``strategy="first_output"`` (friedman1-chain) fits one single-output model on the first output and predicts it
    for every output; ``"mean_output"`` (friedman1-group) fits the mean of the outputs; ``"single_target"``
    (friedman1-ind) is st-gbrt (the papers' reading: no restriction to each output's own features).
    """

    _parameter_constraints: dict = {
        **_BaseBoosting._parameter_constraints,
        "strategy": [StrOptions({"first_output", "mean_output", "single_target"})],
    }

    def __init__(self, n_estimators=100, *, strategy="first_output", learning_rate=0.1, loss="square",
                 max_leaf_nodes=8, max_features=None, random_state=None, monitor_train_loss=False,
                 tree_builder="presort", line_search="newton", count_constant_features=False,
                 monitor_tree_time=False):
        super().__init__(n_estimators, learning_rate=learning_rate, loss=loss, max_leaf_nodes=max_leaf_nodes,
                         max_features=max_features, random_state=random_state,
                         monitor_train_loss=monitor_train_loss, tree_builder=tree_builder,
                         line_search=line_search, count_constant_features=count_constant_features,
                         monitor_tree_time=monitor_tree_time)
        self.strategy = strategy

    @property
    def _algorithm(self):
        return "st"

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        X, Y = self._check_XY(X, y)
        self.n_targets_ = Y.shape[1]
        if self.strategy == "first_output":
            target = Y[:, :1]
        elif self.strategy == "mean_output":
            if self.loss == "logistic":
                raise ValueError("strategy='mean_output' averages the outputs: use loss='square' or 'absolute'")
            target = Y.mean(axis=1, keepdims=True)
        else:
            target = Y
        self._fit_coded(X, self._code_targets(target))
        return self

    def decision_function(self, X):
        F = super().decision_function(X)
        return self._replicate(F)

    def staged_decision_function(self, X):
        for F in super().staged_decision_function(X):
            yield self._replicate(F)

    def _replicate(self, F):
        if self.strategy == "single_target":
            return F
        return np.repeat(F, self.n_targets_, axis=1)
