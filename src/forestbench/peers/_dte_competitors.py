"""The competitors of the deep tree-ensembles paper (DTE paper Sec. 4.1.2 and 4.2.2), as scikit-learn estimators
whose ``predict`` returns one score column per output (label probabilities for multi-label data).

- :class:`RandomForestExtraTrees` -- one RF plus one ET of the forestbench kernel, averaged (the "RF+ET" column).
  It draws its seeds exactly as layer 1 of :class:`~forestbench.deep._cascade.DeepTreeEnsemble`, so it equals a
  one-layer cascade without new features.
- :class:`MultiLabelDeepForest` -- MLDF (Yang et al., ECAI 2020) on our forests: one RF and one ET per layer,
  40 trees in the first layer and 20 more per layer up to 100, 5-fold out-of-fold label probabilities appended to
  the inputs, growth stopped after 3 layers without improvement of the chosen measure. The original's
  measure-aware feature reuse is not implemented (no maintained implementation exists to follow).
- :class:`EnsembleOfRegressorChains` (ERC) -- 10 random-order scikit-learn ``RegressorChain`` of regression trees,
  averaged; chains are trained on the true targets.
- :class:`EnsembleOfClassifierChains` (ECC) -- 10 random-order ``ClassifierChain`` of decision trees, label
  probabilities averaged.
- :class:`TunedMLP` -- scikit-learn MLP (ReLU, Adam) with inputs standardised, tuned by an inner 5-fold CV over
  {50, 100} neurons x {1, 2} hidden layers (micro-AUC for multi-label, mean squared error of the standardised
  targets for regression).
- :class:`TunedMLkNN` and :class:`RakelOverlapping` -- ML-kNN (k in {3, 5, 7}, smoothing in {0.5, 0.7, 1.0} by
  inner 5-fold CV) and RAkEL-o (linear SVMs on overlapping label subsets of size 3, 2M models) from
  ``scikit-multilearn-ng`` (an optional dependency).

Inner cross-validation uses scikit-learn's ``GridSearchCV`` with a seeded ``KFold``.
"""
from __future__ import annotations

import numbers
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, MultiOutputMixin, RegressorMixin, _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from forestbench.deep._cascade import _PRED_ET, _PRED_RF, _forest, as_seed_sequence, layer_seed
from forestbench.deep._inputs import validate_dense
from forestbench.metrics import predicted_labels
from forestbench._target_scale import power_of_two_scale
from forestbench.projections import ParameterError

__all__ = ["RandomForestExtraTrees", "MultiLabelDeepForest", "EnsembleOfRegressorChains",
           "EnsembleOfClassifierChains", "TunedMLP", "TunedMLkNN", "RakelOverlapping"]


def _targets(y, *, multilabel=None, n_rows=None):
    """y as float (n, d) and whether it was 1-D; ``n_rows``: the rows of X it must match."""
    Y = np.asarray(y.toarray() if sp.issparse(y) else y, dtype=np.float64)
    one_d = Y.ndim == 1
    if one_d:
        Y = Y.reshape(-1, 1)
    if Y.ndim != 2:
        raise ParameterError(f"y must be 1-D or 2-D, got shape {Y.shape}")
    if n_rows is not None and Y.shape[0] != n_rows:
        raise ParameterError(f"X has {n_rows} rows but y has {Y.shape[0]}")
    if not np.all(np.isfinite(Y)):
        raise ParameterError("y contains NaN or infinite values")
    if multilabel:
        if not np.all((Y == 0) | (Y == 1)):
            raise ParameterError("multi-label competitors need 0/1 targets")
        if Y.shape[1] < 2:
            raise ParameterError(f"multi-label data needs at least 2 label columns, y has {Y.shape[1]}")
    return Y, one_d


def _seed_int(random_state, *keys):
    seq = as_seed_sequence(random_state)
    seq = np.random.SeedSequence(seq.entropy, spawn_key=tuple(seq.spawn_key) + (7,) + keys)
    return int(seq.generate_state(1, dtype=np.uint32)[0] & 0x7FFFFFFF)


class _ScoresMixin(MultiOutputMixin, RegressorMixin):
    """A regressor whose ``predict`` gives one column per output (one score per label for label matrices)."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True   # a sparse X is made dense (validate_dense)
        return tags


# ----------------------------------------------------------------------------------------------------- RF + ET
class RandomForestExtraTrees(_ScoresMixin, BaseEstimator):
    """One random forest and one extra-trees of the forestbench kernel (fully grown, ``max_features`` per split),
    predictions averaged: the DTE paper's "RF+ET" baseline. Regression targets are standardised for fitting,
    as in :class:`DeepTreeEnsemble`."""

    _parameter_constraints = {
        "n_estimators": [Interval(numbers.Integral, 1, None, closed="left")],
        "max_features": [StrOptions({"sqrt", "log2"}), Interval(numbers.Integral, 1, None, closed="left"),
                         Interval(numbers.Real, 0.0, 1.0, closed="right"), None],
        "n_jobs": [numbers.Integral, None],
        "random_state": ["random_state", np.random.SeedSequence],
    }

    def __init__(self, n_estimators=150, *, max_features="sqrt", n_jobs=None, random_state=None):
        self.n_estimators = n_estimators
        self.max_features = max_features
        self.n_jobs = n_jobs
        self.random_state = random_state

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        X = validate_dense(self, X, reset=True, dtype=np.float32)
        Y, self._one_d = _targets(y, n_rows=X.shape[0])
        # targets whose squares overflow are standardised from y / 2**e (exact; predict multiplies back)
        self._y_pow2 = power_of_two_scale(Y)
        if self._y_pow2 != 1.0:
            Y = Y / self._y_pow2
        binary = bool(np.all((Y == 0) | (Y == 1)))
        self._mean = np.zeros(Y.shape[1]) if binary else Y.mean(axis=0)
        std = np.ones(Y.shape[1]) if binary else Y.std(axis=0)
        self._scale = np.where(std > 0, std, 1.0)
        Yt = (Y - self._mean) / self._scale
        root = as_seed_sequence(self.random_state)
        self.rf_ = _forest("rf", self.n_estimators, self.max_features, layer_seed(root, 1, _PRED_RF),
                           self.n_jobs).fit(X, Yt)
        self.et_ = _forest("et", self.n_estimators, self.max_features, layer_seed(root, 1, _PRED_ET),
                           self.n_jobs).fit(X, Yt)
        return self

    def predict(self, X):
        check_is_fitted(self, "rf_")
        X = validate_dense(self, X, reset=False, dtype=np.float32)
        P = 0.5 * (self.rf_.predict(X).reshape(X.shape[0], -1) + self.et_.predict(X).reshape(X.shape[0], -1))
        P = P * self._scale + self._mean
        if self._y_pow2 != 1.0:
            P = P * self._y_pow2
        return P.ravel() if self._one_d else P


# -------------------------------------------------------------------------------------------------------- MLDF
_MLDF_METRICS = ("hamming_loss", "ranking_loss", "one_error", "micro_auc", "micro_average_precision", "lrap")


class MultiLabelDeepForest(_ScoresMixin, BaseEstimator):
    """MLDF (multi-label deep forest) on the forestbench forests (see the module docstring).

    Each layer fits ``cv`` fold models of one RF and one ET on the layer input; the out-of-fold label
    probabilities of the RF and of the ET (2M columns) are appended to X to form the next layer's input, and
    their average scores the layer on ``metric``. Growth stops after ``patience`` layers without improvement
    (or at ``max_layers``); new rows get the average of the fold models of the best layer.
    """

    _parameter_constraints = {
        "metric": [StrOptions(set(_MLDF_METRICS))],
        "first_n_estimators": [Interval(numbers.Integral, 1, None, closed="left")],
        "step_n_estimators": [Interval(numbers.Integral, 0, None, closed="left")],
        "max_n_estimators": [Interval(numbers.Integral, 1, None, closed="left")],
        "cv": [Interval(numbers.Integral, 2, None, closed="left")],
        "patience": [Interval(numbers.Integral, 1, None, closed="left")],
        "max_layers": [Interval(numbers.Integral, 1, None, closed="left")],
        "max_features": [StrOptions({"sqrt", "log2"}), Interval(numbers.Integral, 1, None, closed="left"),
                         Interval(numbers.Real, 0.0, 1.0, closed="right"), None],
        "n_jobs": [numbers.Integral, None],
        "random_state": ["random_state", np.random.SeedSequence],
    }

    def __init__(self, metric="hamming_loss", *, first_n_estimators=40, step_n_estimators=20, max_n_estimators=100,
                 cv=5, patience=3, max_layers=20, max_features="sqrt", n_jobs=None, random_state=None):
        self.metric = metric
        self.first_n_estimators = first_n_estimators
        self.step_n_estimators = step_n_estimators
        self.max_n_estimators = max_n_estimators
        self.cv = cv
        self.patience = patience
        self.max_layers = max_layers
        self.max_features = max_features
        self.n_jobs = n_jobs
        self.random_state = random_state

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        from forestbench.metrics import get_metric

        X = validate_dense(self, X, reset=True, dtype=np.float32, ensure_min_samples=2)
        Y, _ = _targets(y, multilabel=True, n_rows=X.shape[0])
        if X.shape[0] < self.cv:
            raise ParameterError(f"cv={self.cv} needs at least as many training rows, got {X.shape[0]}")
        metric = get_metric(self.metric)
        sign = 1.0 if metric.higher_is_better else -1.0
        root = as_seed_sequence(self.random_state)
        n = X.shape[0]
        inp = X
        layers, scores = [], []
        best, since = -np.inf, 0
        for L in range(1, self.max_layers + 1):
            n_trees = min(self.max_n_estimators, self.first_n_estimators + (L - 1) * self.step_n_estimators)
            rng = np.random.default_rng(layer_seed(root, L, 0))
            folds = np.array_split(rng.permutation(n), self.cv)
            oof_rf, oof_et = np.zeros_like(Y), np.zeros_like(Y)
            models = []
            for k, held in enumerate(folds):
                rows = np.sort(np.concatenate([f for j, f in enumerate(folds) if j != k]))
                rf = _forest("rf", n_trees, self.max_features, layer_seed(root, L, 1 + 2 * k), self.n_jobs)
                et = _forest("et", n_trees, self.max_features, layer_seed(root, L, 2 + 2 * k), self.n_jobs)
                rf.fit(inp[rows], Y[rows])
                et.fit(inp[rows], Y[rows])
                oof_rf[held] = rf.predict(inp[held]).reshape(len(held), -1)
                oof_et[held] = et.predict(inp[held]).reshape(len(held), -1)
                models.append((rf, et))
            score = sign * metric(Y, 0.5 * (oof_rf + oof_et))
            layers.append(models)
            scores.append(sign * score)
            if score > best:
                best, since = score, 0
            else:
                since += 1
                if since >= self.patience:
                    break
            inp = np.ascontiguousarray(np.hstack([X, oof_rf, oof_et]).astype(np.float32))
        self.layer_scores_ = np.array(scores)
        self.n_layers_built_ = len(scores)
        self.n_layers_ = int(np.argmax(sign * self.layer_scores_)) + 1
        self.layers_ = layers[: self.n_layers_]
        return self

    def predict(self, X):
        check_is_fitted(self, "layers_")
        X = validate_dense(self, X, reset=False, dtype=np.float32)
        inp = X
        for i, models in enumerate(self.layers_):
            p_rf = sum(rf.predict(inp).reshape(X.shape[0], -1) for rf, _ in models) / len(models)
            p_et = sum(et.predict(inp).reshape(X.shape[0], -1) for _, et in models) / len(models)
            if i == len(self.layers_) - 1:
                return 0.5 * (p_rf + p_et)
            inp = np.ascontiguousarray(np.hstack([X, p_rf, p_et]).astype(np.float32))

    def run_info_(self):
        check_is_fitted(self, "layers_")
        return {"n_layers": int(self.n_layers_), "n_layers_built": int(self.n_layers_built_),
                "layer_metric": self.metric, "layer_scores": [float(s) for s in self.layer_scores_]}


# --------------------------------------------------------------------------------------------------- ERC / ECC
class EnsembleOfRegressorChains(_ScoresMixin, BaseEstimator):
    """ERC: ``n_chains`` scikit-learn ``RegressorChain`` of fully grown regression trees, each with a random
    target order, predictions averaged. Chains see the true previous targets during training."""

    _parameter_constraints = {
        "n_chains": [Interval(numbers.Integral, 1, None, closed="left")],
        "random_state": ["random_state", np.random.SeedSequence],
    }

    def __init__(self, n_chains=10, *, random_state=None):
        self.n_chains = n_chains
        self.random_state = random_state

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        from sklearn.multioutput import RegressorChain
        from sklearn.tree import DecisionTreeRegressor

        X = validate_dense(self, X, reset=True, dtype=np.float64)
        Y, self._one_d = _targets(y, n_rows=X.shape[0])
        # the chains give the targets to scikit-learn's trees as float32 features: past 2**100 they are scaled by
        # an exact power of two (float32 rounding commutes with it) and the predictions multiplied back
        self._y_pow2 = power_of_two_scale(Y, safe_max=2.0 ** 100)
        if self._y_pow2 != 1.0:
            Y = Y / self._y_pow2
        self.chains_ = []
        for i in range(self.n_chains):
            seed = _seed_int(self.random_state, i)
            chain = RegressorChain(DecisionTreeRegressor(random_state=seed), order="random", random_state=seed)
            self.chains_.append(chain.fit(X, Y))
        return self

    def predict(self, X):
        check_is_fitted(self, "chains_")
        X = validate_dense(self, X, reset=False, dtype=np.float64)
        P = sum(c.predict(X) for c in self.chains_) / len(self.chains_)
        if self._y_pow2 != 1.0:
            P = P * self._y_pow2
        return P.ravel() if self._one_d else P


class EnsembleOfClassifierChains(_ScoresMixin, BaseEstimator):
    """ECC: ``n_chains`` scikit-learn ``ClassifierChain`` of fully grown decision trees with random label
    orders; the chains' label probabilities are averaged. A label constant over the training rows (a rare label of
    medical can miss a whole training fold) has no classifier with two classes: it is predicted as that constant,
    and the chains (their random orders too) run over the other labels."""

    _parameter_constraints = EnsembleOfRegressorChains._parameter_constraints

    def __init__(self, n_chains=10, *, random_state=None):
        self.n_chains = n_chains
        self.random_state = random_state

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        from sklearn.multioutput import ClassifierChain
        from sklearn.tree import DecisionTreeClassifier

        X = validate_dense(self, X, reset=True, dtype=np.float64)
        Y, _ = _targets(y, multilabel=True, n_rows=X.shape[0])
        Y = Y.astype(int)
        self.varying_ = Y.min(axis=0) != Y.max(axis=0)
        self.constant_values_ = Y[0].astype(np.float64)   # used where a label does not vary
        self.chains_ = []
        if not self.varying_.any():
            return self
        Yv = Y[:, self.varying_]
        for i in range(self.n_chains):
            seed = _seed_int(self.random_state, i)
            chain = ClassifierChain(DecisionTreeClassifier(random_state=seed), order="random", random_state=seed)
            self.chains_.append(chain.fit(X, Yv))
        return self

    def predict(self, X):
        check_is_fitted(self, "chains_")
        X = validate_dense(self, X, reset=False, dtype=np.float64)
        P = np.tile(self.constant_values_, (X.shape[0], 1))
        if self.chains_:
            P[:, self.varying_] = sum(np.asarray(c.predict_proba(X)) for c in self.chains_) / len(self.chains_)
        return P


# --------------------------------------------------------------------------------------------------------- MLP
class TunedMLP(_ScoresMixin, BaseEstimator):
    """scikit-learn MLP (ReLU, Adam, standardised inputs; standardised targets for regression) whose hidden layer
    sizes are chosen by an inner ``cv``-fold CV over ``neurons`` x ``depths``."""

    _parameter_constraints = {
        "neurons": ["array-like"],
        "depths": ["array-like"],
        "cv": [Interval(numbers.Integral, 2, None, closed="left")],
        "max_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "task": [StrOptions({"auto", "multilabel", "regression"})],
        "n_jobs": [numbers.Integral, None],
        "random_state": ["random_state", np.random.SeedSequence],
    }

    def __init__(self, neurons=(50, 100), depths=(1, 2), *, cv=5, max_iter=300, task="auto", n_jobs=None,
                 random_state=None):
        self.neurons = neurons
        self.depths = depths
        self.cv = cv
        self.max_iter = max_iter
        self.task = task
        self.n_jobs = n_jobs
        self.random_state = random_state

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        from sklearn.compose import TransformedTargetRegressor
        from sklearn.exceptions import ConvergenceWarning
        from sklearn.metrics import make_scorer, roc_auc_score
        from sklearn.model_selection import GridSearchCV, KFold
        from sklearn.neural_network import MLPClassifier, MLPRegressor
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        X = validate_dense(self, X, reset=True, dtype=np.float64)
        Y, self._one_d = _targets(y, n_rows=X.shape[0])
        binary = bool(np.all((Y == 0) | (Y == 1)))
        task = ("multilabel" if binary and Y.shape[1] > 1 else "regression") if self.task == "auto" else self.task
        if task == "multilabel":
            _targets(Y, multilabel=True)
        self.task_ = task
        seed = _seed_int(self.random_state, 0)
        sizes = [tuple([int(h)] * int(d)) for h in self.neurons for d in self.depths]
        if task == "multilabel":
            model = make_pipeline(StandardScaler(), MLPClassifier(activation="relu", solver="adam",
                                                                  max_iter=self.max_iter, random_state=seed))
            scoring = make_scorer(roc_auc_score, average="micro", response_method="predict_proba")
            Yfit = Y.astype(int)
        else:
            model = TransformedTargetRegressor(
                make_pipeline(StandardScaler(), MLPRegressor(activation="relu", solver="adam",
                                                             max_iter=self.max_iter, random_state=seed)),
                transformer=StandardScaler())
            scoring = "neg_mean_squared_error"
            Yfit = Y
        key = "mlpclassifier__hidden_layer_sizes" if task == "multilabel" \
            else "regressor__mlpregressor__hidden_layer_sizes"
        search = GridSearchCV(model, {key: sizes}, cv=KFold(self.cv, shuffle=True, random_state=seed),
                              scoring=scoring, n_jobs=self.n_jobs, error_score="raise")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            search.fit(X, Yfit)
        self.search_ = search
        self.best_params_ = {"hidden_layer_sizes": search.best_params_[key]}
        return self

    def predict(self, X):
        check_is_fitted(self, "search_")
        X = validate_dense(self, X, reset=False, dtype=np.float64)
        if self.task_ == "multilabel":
            return np.asarray(self.search_.predict_proba(X))
        P = np.asarray(self.search_.predict(X))
        return P.ravel() if self._one_d else P.reshape(X.shape[0], -1)

    def run_info_(self):
        check_is_fitted(self, "search_")
        return {"hidden_layer_sizes": list(self.best_params_["hidden_layer_sizes"])}


# --------------------------------------------------------------------------------------- scikit-multilearn-ng
def _skmultilearn():
    try:
        import skmultilearn  # noqa: F401
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("ML-kNN and RAkEL-o need the optional package scikit-multilearn-ng "
                          "(pip install 'forestbench[peers]')") from exc


class TunedMLkNN(_ScoresMixin, BaseEstimator):
    """ML-kNN from scikit-multilearn-ng, ``k`` and smoothing ``s`` chosen by an inner ``cv``-fold CV on
    micro-AUC.

    ``outputs`` decides what ``predict`` returns: ``"posterior"`` the label posterior probabilities (the scores every
    ranking measure reads), ``"labels"`` those posteriors thresholded at 0.5, as 0/1 (the reading under which the
    DTE paper's ML-kNN ranking loss and micro average precision reproduce; ties of 0/1 outputs then count as
    ranking errors). The model, its tuning and its Hamming loss are the same under both."""

    _parameter_constraints = {
        "k_values": ["array-like"],
        "s_values": ["array-like"],
        "cv": [Interval(numbers.Integral, 2, None, closed="left")],
        "outputs": [StrOptions({"posterior", "labels"})],
        "n_jobs": [numbers.Integral, None],
        "random_state": ["random_state", np.random.SeedSequence],
    }

    def __init__(self, k_values=(3, 5, 7), s_values=(0.5, 0.7, 1.0), *, cv=5, outputs="posterior", n_jobs=None,
                 random_state=None):
        self.k_values = k_values
        self.s_values = s_values
        self.cv = cv
        self.outputs = outputs
        self.n_jobs = n_jobs
        self.random_state = random_state

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        _skmultilearn()
        from skmultilearn.adapt import MLkNN
        from sklearn.metrics import roc_auc_score
        from sklearn.model_selection import KFold

        X = validate_dense(self, X, reset=True, dtype=np.float64)
        Y, _ = _targets(y, multilabel=True, n_rows=X.shape[0])
        Yi = Y.astype(int)
        kf = KFold(self.cv, shuffle=True, random_state=_seed_int(self.random_state, 0))
        results = {}
        for k in self.k_values:
            for s in self.s_values:
                vals = []
                for tr, va in kf.split(X):
                    model = MLkNN(k=int(k), s=float(s)).fit(X[tr], sp.csr_matrix(Yi[tr]))
                    P = _dense(model.predict_proba(X[va]))
                    vals.append(roc_auc_score(Yi[va].ravel(), P.ravel()))
                results[(int(k), float(s))] = float(np.mean(vals))
        self.cv_scores_ = results
        k, s = max(results, key=lambda key: (results[key], -key[0], -key[1]))
        self.best_params_ = {"k": k, "s": s}
        self.model_ = MLkNN(k=k, s=s).fit(X, sp.csr_matrix(Yi))
        return self

    def predict(self, X):
        check_is_fitted(self, "model_")
        X = validate_dense(self, X, reset=False, dtype=np.float64)
        P = _dense(self.model_.predict_proba(X))
        # the labels the Hamming loss of the posteriors reads
        return predicted_labels(P) if self.outputs == "labels" else P

    def run_info_(self):
        check_is_fitted(self, "model_")
        return dict(self.best_params_)


class RakelOverlapping(_ScoresMixin, BaseEstimator):
    """RAkEL-o from scikit-multilearn-ng: ``model_count`` (default 2M) label-powerset linear SVMs on random
    overlapping label subsets of size ``labelset_size``. The score of a label is the fraction of the models
    covering it that vote for it (the library's majority-vote ``predict_proba`` is not available for an SVM
    without probabilities, so the votes are averaged here)."""

    _parameter_constraints = {
        "labelset_size": [Interval(numbers.Integral, 1, None, closed="left")],
        "model_count": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "random_state": ["random_state", np.random.SeedSequence],
    }

    def __init__(self, labelset_size=3, model_count=None, *, random_state=None):
        self.labelset_size = labelset_size
        self.model_count = model_count
        self.random_state = random_state

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        _skmultilearn()
        from skmultilearn.ensemble import RakelO
        from sklearn.svm import LinearSVC

        X = validate_dense(self, X, reset=True, dtype=np.float64)
        Y, _ = _targets(y, multilabel=True, n_rows=X.shape[0])
        m = Y.shape[1]
        count = self.model_count or 2 * m
        size = min(self.labelset_size, m)
        seed = _seed_int(self.random_state, 0)
        import random

        state, py_state = np.random.get_state(), random.getstate()
        np.random.seed(seed)  # the library draws its label subsets from Python's global generator
        random.seed(seed)
        try:
            self.model_ = RakelO(base_classifier=LinearSVC(random_state=seed),
                                 base_classifier_require_dense=[True, True], labelset_size=size,
                                 # the library's random partitioner draws model_count + 1 label subsets
                                 model_count=max(1, count - 1)).fit(X, sp.csr_matrix(Y.astype(int)))
        finally:
            np.random.set_state(state)
            random.setstate(py_state)
        self.n_labels_ = m
        return self

    def predict(self, X):
        check_is_fitted(self, "model_")
        X = validate_dense(self, X, reset=False, dtype=np.float64)
        votes = np.zeros((X.shape[0], self.n_labels_))
        cover = np.zeros(self.n_labels_)
        model = self.model_
        for partition, clf in zip(model.partition_, model.classifiers_):
            part = np.asarray(list(partition), dtype=np.intp)
            votes[:, part] += _dense(clf.predict(X))
            cover[part] += 1
        return votes / np.where(cover > 0, cover, 1)


def _dense(a):
    return np.asarray(a.toarray() if sp.issparse(a) else a, dtype=np.float64)
