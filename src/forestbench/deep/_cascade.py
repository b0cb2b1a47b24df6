"""Deep tree-ensembles for multi-output prediction (Nakano, Pliakos & Vens, Pattern Recognition 2022; "DTE paper").

A cascade of layers. Every layer holds one random forest (RF) and one extra-trees (ET) of multi-output trees of the
forestbench kernel. What each layer's two prediction forests see depends on the variant (DTE paper Sec. 3.1):

=========  ==========================================================================================
variant    features of the layer's prediction RF (the ET gets the same with the RF embedding instead)
=========  ==========================================================================================
X_TE       X ++ tree embedding of the *ET* embedding forest (feature cross-over)
TE         tree embedding of the ET embedding forest only
X_OS       X ++ output-space features (out-of-fold predictions of an inner K-fold CV)
X_OS_TE    X ++ tree embedding of the ET embedding forest ++ output-space features
X          X only: no new features (with ``max_layers=1`` this is the paper's RF+ET baseline)
=========  ==========================================================================================

Tree embeddings come from separate embedding forests fitted on a random half of the training rows
(:mod:`forestbench.deep._embedding`); output-space (OS) features come from 2K separate forests of an inner
K-fold CV. Up to ``max_layers`` layers are built, then the cascade is pruned to the layer with the best training
score (micro-AUC for multi-label data, aRRMSE for regression). ``predict`` replays layers 1..L* and averages the
RF and ET of layer L*.

The choices the paper leaves open are documented once, in config/README.md ("Deep tree-ensembles", labels
D1-D13); the code refers to them by label:

- D1 lineage: layer L+1's embedding and output-space forests read the features of layer L's prediction forest of
  the same kind (RF or ET); new blocks replace the previous layer's.
- D2 ``embedding_sample``, D5 ``max_node_fraction``, D6 ``weight_offset``, D7 ``pca_fractions`` (component count
  in :func:`forestbench.deep._embedding.n_components_for`), D8 ``os_folds`` / ``os_n_estimators``,
  D10 ``pruning_score``, D12 ``pca_validation``, D13 ``n_layers_``.
- D3: regression targets are standardised before fitting and mapped back after predicting.
- D4: every training row goes through the embedding forests and fits the PCA; new rows are projected with it.
- Targets at the edges (constant outputs, |y| above 2**256, a sparse y): config/README.md, "Targets at the edges".
"""
from __future__ import annotations

import numbers
import time

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, MultiOutputMixin, RegressorMixin, _fit_context
from sklearn.utils._available_if import available_if
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from forestbench.deep._embedding import TreeEmbedding, forest_node_indicator, n_components_for
from forestbench.deep._inputs import validate_dense
from forestbench._target_scale import power_of_two_scale
from forestbench.projections import ParameterError

__all__ = ["DeepTreeEnsemble", "VARIANTS", "layer_seed", "as_seed_sequence"]

VARIANTS = {  # variant -> (uses X, uses tree embeddings, uses output-space features)
    "X_TE": (True, True, False),
    "TE": (False, True, False),
    "X_OS": (True, False, True),
    "X_OS_TE": (True, True, True),
    "X": (True, False, False),
}
PAPER_PCA_FRACTIONS = (1, 0.01, 0.05, 0.2, 0.4, 0.6, 0.8, 0.95)

_clock = time.perf_counter   # the clock of fit_time_split_ (benchmarks/bench_deep.py swaps in CPU time)

# stream numbers inside one layer's seed sequence
_PRED_RF, _PRED_ET, _EMB_RF, _EMB_ET, _EMB_SAMPLE, _OS_SPLIT, _OS_BASE = range(7)


def as_seed_sequence(random_state):
    """A ``numpy.random.SeedSequence`` from None, a non-negative int, a RandomState, a Generator or a
    SeedSequence."""
    if isinstance(random_state, np.random.SeedSequence):
        return random_state
    if random_state is None:
        return np.random.SeedSequence()
    if isinstance(random_state, np.random.RandomState):
        return np.random.SeedSequence(int(random_state.randint(0, 2**31 - 1)))
    if isinstance(random_state, np.random.Generator):
        return np.random.SeedSequence(int(random_state.integers(0, 2**63 - 1)))
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool) and random_state >= 0:
        return np.random.SeedSequence(int(random_state))
    raise ParameterError(f"random_state must be None, a non-negative int, a RandomState, a Generator or a "
                         f"SeedSequence, got {random_state!r}")


def _child(seq, *keys):
    return np.random.SeedSequence(seq.entropy, spawn_key=tuple(seq.spawn_key) + tuple(keys))


def layer_seed(root, layer, stream):
    """Seed of stream ``stream`` of layer ``layer`` (1-based) of the cascade grown from ``root``. The RF+ET
    baseline uses the streams of layer 1, so it equals a one-layer cascade without new features."""
    return _child(root, 0, layer, stream)


def _forest(kind, n_estimators, max_features, seed, n_jobs):
    from forestbench.forest._forest import ExtraTreesRegressor, RandomForestRegressor

    cls = RandomForestRegressor if kind == "rf" else ExtraTreesRegressor
    return cls(n_estimators=n_estimators, max_features=max_features, random_state=seed, n_jobs=n_jobs)


def _predict2d(forest, X):
    P = forest.predict(X)
    return P.reshape(X.shape[0], -1)


def layer_score(task, Y, P, Y_train=None):
    """Training score of a layer: micro-AUC (multi-label, higher is better) or minus aRRMSE (regression), so
    that higher is always better.

    Targets that do not define the score rank every layer alike, so they score 0 instead of failing the fit: a
    label matrix holding a single value (micro-AUC needs both), and for aRRMSE the outputs whose values all equal
    the reference mean (constant outputs), which are left out of the average (0 when no output is left)."""
    from forestbench.metrics import arrmse, micro_auc

    Y = np.asarray(Y)
    if task == "multilabel":
        if Y.size == 0 or Y.min() == Y.max():
            return 0.0
        return micro_auc(Y, P)
    ref = Y if Y_train is None else np.asarray(Y_train)
    Y2, P2, R2 = (a.reshape(a.shape[0], -1) for a in (Y, np.asarray(P), ref))
    defined = ((Y2 - R2.mean(axis=0)) ** 2).sum(axis=0) > 0
    if not defined.any():
        return 0.0
    if defined.all():
        return -arrmse(Y2, P2, R2)
    return -arrmse(Y2[:, defined], P2[:, defined], R2[:, defined])


class _Layer:
    """The fitted models of one layer: embedding forests with their embeddings, OS fold models, prediction
    forests (``None`` when discarded)."""

    def __init__(self):
        self.embedders = None      # {"rf": (forest, TreeEmbedding), "et": (...)}
        self.os_models = None      # [(rf_k, et_k), ...]
        self.os_fit_rows = None    # training rows of each fold model
        self.os_train = None       # out-of-fold OS block of the training rows
        self.pred_rf = None
        self.pred_et = None

    def features(self, X, inp_rf, inp_et, has_x):
        blocks_rf, blocks_et = ([X], [X]) if has_x else ([], [])
        if self.embedders is not None:
            (f_rf, e_rf), (f_et, e_et) = self.embedders["rf"], self.embedders["et"]
            F_rf = e_rf.transform(forest_node_indicator(f_rf.estimators_, inp_rf))
            F_et = e_et.transform(forest_node_indicator(f_et.estimators_, inp_et))
            blocks_rf.append(F_et)   # cross-over
            blocks_et.append(F_rf)
        if self.os_models is not None:
            OS = sum(0.5 * (_predict2d(rf, inp_rf) + _predict2d(et, inp_et)) for rf, et in self.os_models)
            OS /= len(self.os_models)
            blocks_rf.append(OS)
            blocks_et.append(OS)
        return _concat(blocks_rf), _concat(blocks_et)

    def predict(self, feats_rf, feats_et):
        return 0.5 * (_predict2d(self.pred_rf, feats_rf) + _predict2d(self.pred_et, feats_et))


def _oob_predict(forest, X):
    """Out-of-bag prediction of a bootstrapped forest of the kernel on its training rows ``X``: each row averages
    the trees whose bootstrap sample left it out (rows in every sample get the whole forest's prediction)."""
    n = X.shape[0]
    acc = np.zeros((n, forest.n_outputs_))
    seen = np.zeros(n)
    for i, tree in enumerate(forest.estimators_):
        out = forest._tree_weights(n, forest._streams[i], None) == 0   # the forest's own bootstrap draw
        if out.any():
            acc[out] += tree.predict(X[out]).reshape(int(out.sum()), -1)
            seen[out] += 1
    missing = seen == 0
    if missing.any():
        acc[missing] = _predict2d(forest, X[missing])
        seen[missing] = 1
    return acc / seen[:, None]


# readings of D10 that cost predictions only (the "oof" reading grows extra forests)
_FREE_READINGS = ("train", "oob")


def _fraction_order(fraction):
    """Sort key of a PCA size: the int 1 (one component) is the smallest."""
    return 0.0 if isinstance(fraction, numbers.Integral) else float(fraction)


def _concat(blocks):
    return np.ascontiguousarray(np.hstack([np.asarray(b, dtype=np.float32) for b in blocks]))


class DeepTreeEnsemble(MultiOutputMixin, RegressorMixin, BaseEstimator):
    """Deep tree-ensemble (DTE paper): a cascade of RF + ET layers with tree-embedding and/or output-space
    features, pruned to the layer with the best training score.

    Parameters
    ----------
    variant : {"X_TE", "TE", "X_OS", "X_OS_TE", "X"}, default "X_TE"
        Features given to each layer (see the module docstring).
    n_estimators : int, default 150
        Trees of every forest (prediction, embedding and OS forests).
    max_layers : int, default 10
        Layers built before pruning.
    max_features : "sqrt", "log2", int, float or None, default "sqrt"
        Candidate features per split of every forest.
    embedding_sample : float in (0, 1], default 0.5
        Fraction of the training rows the embedding forests are fitted on.
    max_node_fraction : float in (0, 1], default 0.95
        ``p``: nodes reached by a larger fraction of the training rows are dropped from the embedding.
    weight_offset : float > 0, default 1.0
        ``e`` of the node weights ``1 / (ln|c| + e)``.
    pca_fractions : sequence, default (1, 0.01, 0.05, 0.2, 0.4, 0.6, 0.8, 0.95)
        PCA sizes tried: the int 1 (one component) or fractions in (0, 1] of min(rows, kept nodes).
    pca_validation : int >= 2 or float in (0, 1), default 5
        How the PCA size is tuned when several are given: inner k-fold CV (int) or a hold-out fraction (float).
    os_folds : int >= 2, default 5
        K of the inner CV producing the output-space features.
    os_n_estimators : int or None, default None
        Trees of the OS fold forests (None: ``n_estimators``).
    task : {"auto", "multilabel", "regression"}, default "auto"
        "auto" treats 0/1 targets as multi-label and anything else as regression. The workflow sets it from the
        dataset's task (the registry's ``task_params``).
    pruning_score : {"train", "oob", "oof"}, default "oob"
        Which reading of "the layer with the best performance on the training dataset" selects the layer (D10; "oob"
        reproduces the paper's layer counts best, config/README.md):
        "train" scores the resubstitution predictions of its RF and ET; "oob" the out-of-bag predictions of its
        RF (fully grown forests score about 1.0 on their own training rows for multi-label data, which leaves
        "train" nothing to choose between); "oof" the out-of-fold predictions of an ``os_folds``-fold CV of an RF
        and an ET on the layer's own features, as a deep forest scores its layers (for the OS variants this CV is
        the next layer's output-space CV, so it costs 2 ``os_folds`` extra forests for the last layer only; for
        the other variants 2 ``os_folds`` forests per layer). Every reading builds the same layers.
    keep_all_layers : bool, default False
        Keep the layers after the selected one (and every layer's prediction forests), so that
        ``staged_predict`` can give the test score of every built layer. ``predict`` still uses ``n_layers_``.
    n_jobs : int or None
        Threads of every forest.
    random_state : None, int, RandomState, Generator or SeedSequence

    Attributes
    ----------
    n_layers_ : int
        Selected number of layers L* (1-based).
    reading_layers_ : dict
        The L* each reading of ``pruning_score`` selects on the same layers: "train" and "oob" always (they cost
        predictions only), "oof" when it is the pruning reading. ``reading_layers_[pruning_score] == n_layers_``.
    layer_scores_ : ndarray of shape (n_layers_built_,)
        Training score of every built layer (micro-AUC for multi-label, aRRMSE for regression).
    n_layers_built_ : int
    pca_fraction_ : the PCA size used (None without embeddings)
    pca_tuning_scores_ : dict {size: validation score} (empty when not tuned)
    n_iter_, stage_n_trees_, stage_fit_seconds_ : the stages of ``staged_predict`` (kept layers), the cumulative
        trees and fit seconds after each
    task_ : "multilabel" or "regression"
    fit_time_split_ : list of dicts, per built layer the seconds spent in embedding forests, path extraction,
        PCA, OS cross-validation, prediction forests and scoring.
    """

    _y_pow2 = 1.0   # power of two the regression targets were divided by (see fit)

    _parameter_constraints = {
        "variant": [StrOptions(set(VARIANTS))],
        "n_estimators": [Interval(numbers.Integral, 1, None, closed="left")],
        "max_layers": [Interval(numbers.Integral, 1, None, closed="left")],
        "max_features": [StrOptions({"sqrt", "log2"}), Interval(numbers.Integral, 1, None, closed="left"),
                         Interval(numbers.Real, 0.0, 1.0, closed="right"), None],
        "embedding_sample": [Interval(numbers.Real, 0.0, 1.0, closed="right")],
        "max_node_fraction": [Interval(numbers.Real, 0.0, 1.0, closed="right")],
        "weight_offset": [Interval(numbers.Real, 0.0, None, closed="neither")],
        "pca_fractions": ["array-like"],
        "pca_validation": [Interval(numbers.Integral, 2, None, closed="left"),
                           Interval(numbers.Real, 0.0, 1.0, closed="neither")],
        "os_folds": [Interval(numbers.Integral, 2, None, closed="left")],
        "os_n_estimators": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "task": [StrOptions({"auto", "multilabel", "regression"})],
        "keep_all_layers": ["boolean"],
        "pruning_score": [StrOptions({"train", "oob", "oof"})],
        "n_jobs": [numbers.Integral, None],
        "random_state": ["random_state", np.random.SeedSequence],
    }

    def __init__(self, variant="X_TE", *, n_estimators=150, max_layers=10, max_features="sqrt",
                 embedding_sample=0.5, max_node_fraction=0.95, weight_offset=1.0,
                 pca_fractions=PAPER_PCA_FRACTIONS, pca_validation=5, os_folds=5, os_n_estimators=None,
                 task="auto", keep_all_layers=False, pruning_score="oob", n_jobs=None, random_state=None):
        self.variant = variant
        self.n_estimators = n_estimators
        self.max_layers = max_layers
        self.max_features = max_features
        self.embedding_sample = embedding_sample
        self.max_node_fraction = max_node_fraction
        self.weight_offset = weight_offset
        self.pca_fractions = pca_fractions
        self.pca_validation = pca_validation
        self.os_folds = os_folds
        self.os_n_estimators = os_n_estimators
        self.task = task
        self.keep_all_layers = keep_all_layers
        self.pruning_score = pruning_score
        self.n_jobs = n_jobs
        self.random_state = random_state

    # ------------------------------------------------------------------------------------------------ checks
    def _validate_params(self):
        """scikit-learn's check of the declared constraints, then each PCA size of ``pca_fractions`` (an
        array-like whose elements the constraints cannot describe), so that a bad size is refused wherever the
        parameters are validated, before any forest is grown."""
        super()._validate_params()
        self._check_fractions()

    def _check_fractions(self):
        fractions = list(np.atleast_1d(np.asarray(self.pca_fractions, dtype=object)))
        if not fractions:
            raise ParameterError("pca_fractions must hold at least one PCA size")
        for f in fractions:
            n_components_for(f, 10, 10)  # raises a ParameterError naming the bad value
        return fractions

    def _check_targets(self, y):
        Y = np.asarray(y.toarray(order="C") if sp.issparse(y) else y, dtype=np.float64)
        one_d = Y.ndim == 1
        if one_d:
            Y = Y.reshape(-1, 1)
        if Y.ndim != 2:
            raise ParameterError(f"y must be 1-D or 2-D, got shape {Y.shape}")
        if not np.all(np.isfinite(Y)):
            raise ParameterError("y contains NaN or infinite values")
        binary = bool(np.all((Y == 0) | (Y == 1)))
        task = self.task
        if task == "auto":
            task = "multilabel" if binary else "regression"
        if task == "multilabel":
            if not binary:
                raise ParameterError("task='multilabel' needs 0/1 targets; y holds other values")
            if Y.shape[1] < 2:
                raise ParameterError(f"multi-label data needs at least 2 label columns, y has shape "
                                     f"{np.shape(y)}; pass task='regression' for a single 0/1 output")
        return Y, one_d, task

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True   # a sparse X is made dense (validate_dense)
        return tags

    # ------------------------------------------------------------------------------------------------- fit
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Build ``max_layers`` layers on ``X`` (n, p) and ``y`` (n, d), then prune to the best training layer."""
        X = validate_dense(self, X, reset=True, dtype=np.float32, ensure_min_samples=2)
        Y, one_d, task = self._check_targets(y)
        if Y.shape[0] != X.shape[0]:
            raise ParameterError(f"X has {X.shape[0]} rows but y has {Y.shape[0]}")
        fractions = self._check_fractions()
        has_x, has_te, has_os = VARIANTS[self.variant]
        if has_os and X.shape[0] < self.os_folds:
            raise ParameterError(f"os_folds={self.os_folds} needs at least as many training rows, got "
                                 f"{X.shape[0]}")
        self.task_ = task
        self._y_one_d = one_d
        self.n_outputs_ = Y.shape[1]
        # regression targets whose squares overflow: the cascade sees y / 2**e (exact), _finish multiplies back
        self._y_pow2 = power_of_two_scale(Y) if task == "regression" else 1.0
        if self._y_pow2 != 1.0:
            Y = Y / self._y_pow2
        if task == "regression":
            self._y_mean = Y.mean(axis=0)
            std = Y.std(axis=0)
            self._y_scale = np.where(std > 0, std, 1.0)
        else:
            self._y_mean = np.zeros(Y.shape[1])
            self._y_scale = np.ones(Y.shape[1])
        Yt = (Y - self._y_mean) / self._y_scale
        root = as_seed_sequence(self.random_state)

        self.pca_tuning_scores_ = {}
        fraction = fractions[0] if has_te else None
        if has_te and len(fractions) > 1:
            fraction = self._tune_fraction(X, Y, Yt, fractions, _child(root, 1))
        self.pca_fraction_ = fraction
        # the other readings of D10 that cost only predictions ("train", "oob") are scored beside the pruning one,
        # so that every run records the layer count each reading would select
        others = {r: [] for r in _FREE_READINGS if r != self.pruning_score}
        layers, scores, times = self._fit_cascade(X, Yt, Y, fraction, root, keep_all=self.keep_all_layers,
                                                  other_readings=others)
        self.layer_scores_ = np.array([s if task == "multilabel" else -s for s in scores])
        self.n_layers_built_ = len(scores)
        self.n_layers_ = int(np.argmax(scores)) + 1
        self.reading_layers_ = {r: int(np.argmax(s)) + 1 for r, s in {**others, self.pruning_score: scores}.items()}
        self.layers_ = layers
        self.fit_time_split_ = times
        # stages of staged_predict (one per kept layer) for the run record
        self.n_iter_ = len(layers)
        per_layer_trees = self.n_estimators * (2 + 2 * has_te) + (2 * self.os_folds * (self.os_n_estimators
                                                                                       or self.n_estimators)
                                                                  if has_os else 0)
        self.stage_n_trees_ = per_layer_trees * np.arange(1, len(layers) + 1)
        self.stage_fit_seconds_ = np.cumsum([sum(t.values()) for t in times])[: len(layers)]
        return self

    def _tune_fraction(self, X, Y, Yt, fractions, seq, share=True):
        """Score every PCA size on inner folds (D12). The candidates of a fold share their random streams, so the
        first layer's fraction-independent work (embedding forests, paths, node filter and weights, the
        eigen-solution at the largest size, the output-space CV) is the same for all of them: with ``share`` it is
        done once per fold and each candidate truncates the eigen-solution (identical to fitting each candidate
        alone with ``solve_fraction`` = the largest size)."""
        n = X.shape[0]
        rng = np.random.default_rng(_child(seq, 0))
        perm = rng.permutation(n)
        v = self.pca_validation
        if isinstance(v, numbers.Integral):
            folds = np.array_split(perm, int(v))
        else:
            n_val = max(1, int(round(float(v) * n)))
            folds = [perm[:n_val]]
        largest = max(fractions, key=_fraction_order)
        vals = {j: [] for j in range(len(fractions))}
        for k, val in enumerate(folds):
            train = np.setdiff1d(np.arange(n), val)
            fold_seq = _child(seq, 1, k)
            first = self._first_layer(X[train], Yt[train], fold_seq, largest) if share else None
            for j, f in enumerate(fractions):
                layers, scores, _ = self._fit_cascade(X[train], Yt[train], Y[train], f, fold_seq, keep_all=False,
                                                      solve_fraction=largest, first=first)
                L = int(np.argmax(scores)) + 1
                P = self._replay(layers, L, X[val]) * self._y_scale + self._y_mean
                vals[j].append(layer_score(self.task_, Y[val], P, Y[train]))
        best, best_score = None, -np.inf
        for j, f in enumerate(fractions):
            score = float(np.mean(vals[j]))
            self.pca_tuning_scores_[f] = score if self.task_ == "multilabel" else -score
            if score > best_score:
                best, best_score = f, score
        return best

    def _embed(self, inp_rf, inp_et, Yt, root, L, fraction, solve_fraction=None, keep_solution=False):
        """Layer ``L``'s embedding forests and tree embeddings: ``(e_rf, e_et, emb_rf, emb_et, F_rf, F_et)`` and
        the seconds of forests, paths and PCA."""
        n = inp_rf.shape[0]
        t0 = _clock()
        rng = np.random.default_rng(layer_seed(root, L, _EMB_SAMPLE))
        m = max(2, int(round(self.embedding_sample * n)))
        sample = np.sort(rng.choice(n, size=min(m, n), replace=False))
        e_rf = _forest("rf", self.n_estimators, self.max_features, layer_seed(root, L, _EMB_RF),
                       self.n_jobs).fit(inp_rf[sample], Yt[sample])
        e_et = _forest("et", self.n_estimators, self.max_features, layer_seed(root, L, _EMB_ET),
                       self.n_jobs).fit(inp_et[sample], Yt[sample])
        t1 = _clock()
        M_rf = forest_node_indicator(e_rf.estimators_, inp_rf)
        M_et = forest_node_indicator(e_et.estimators_, inp_et)
        t2 = _clock()
        emb_rf = TreeEmbedding(self.max_node_fraction, self.weight_offset, fraction, solve_components=solve_fraction)
        emb_et = TreeEmbedding(self.max_node_fraction, self.weight_offset, fraction, solve_components=solve_fraction)
        F_rf = emb_rf.fit_transform(M_rf, keep_solution=keep_solution)
        F_et = emb_et.fit_transform(M_et, keep_solution=keep_solution)
        t3 = _clock()
        return (e_rf, e_et, emb_rf, emb_et, F_rf, F_et), (t1 - t0, t2 - t1, t3 - t2)

    def _os_cv(self, inp_rf, inp_et, Yt, root, L):
        """Layer ``L``'s output-space inner CV: the fold models, their training rows and the out-of-fold block."""
        n = inp_rf.shape[0]
        n_os = self.os_n_estimators or self.n_estimators
        rng = np.random.default_rng(layer_seed(root, L, _OS_SPLIT))
        folds = np.array_split(rng.permutation(n), self.os_folds)
        OS = np.zeros_like(Yt)
        models, fit_rows_of = [], []
        for k, held in enumerate(folds):
            fit_rows = np.sort(np.concatenate([folds[j] for j in range(len(folds)) if j != k]))
            rf = _forest("rf", n_os, self.max_features, layer_seed(root, L, _OS_BASE + 2 * k),
                         self.n_jobs).fit(inp_rf[fit_rows], Yt[fit_rows])
            et = _forest("et", n_os, self.max_features, layer_seed(root, L, _OS_BASE + 2 * k + 1),
                         self.n_jobs).fit(inp_et[fit_rows], Yt[fit_rows])
            OS[held] = 0.5 * (_predict2d(rf, inp_rf[held]) + _predict2d(et, inp_et[held]))
            models.append((rf, et))
            fit_rows_of.append(fit_rows)
        return models, fit_rows_of, OS

    def _first_layer(self, X, Yt, root, solve_fraction):
        """The fraction-independent work of layer 1 (it reads X whatever the PCA size), for the candidates of a
        PCA-size search: embedding forests and embeddings solved at ``solve_fraction``, output-space CV."""
        has_x, has_te, has_os = VARIANTS[self.variant]
        first = {}
        if has_te:
            first["te"] = self._embed(X, X, Yt, root, 1, solve_fraction, solve_fraction, keep_solution=True)[0]
        if has_os:
            first["os"] = self._os_cv(X, X, Yt, root, 1)
        return first

    def _fit_cascade(self, X, Yt, Y, fraction, root, keep_all, solve_fraction=None, first=None,
                     other_readings=None):
        """Fit up to ``max_layers`` layers on targets ``Yt`` (standardised for regression); score each layer on
        ``Y``. Returns the kept layers, the per-layer scores (higher is better) and the time split.

        ``solve_fraction``: PCA size layer 1's eigen-problems are solved for (None: ``fraction``; later layers
        always solve at ``fraction``, their inputs differ between candidates anyway);
        ``first``: layer 1's shared work from :meth:`_first_layer` (same ``root`` and ``solve_fraction``);
        ``other_readings``: {reading: []} of other ``pruning_score`` readings among "train" and "oob", each list
        filled with that reading's score of every layer (they select nothing here)."""
        has_x, has_te, has_os = VARIANTS[self.variant]
        layers, scores, times = [], [], []
        inp_rf = inp_et = X
        pending_os = None
        for L in range(1, self.max_layers + 1):
            t = dict(embedding_forests=0.0, path_extraction=0.0, pca=0.0, os_cv=0.0, prediction_forests=0.0,
                     scoring=0.0)
            layer = _Layer()
            blocks_rf, blocks_et = ([X], [X]) if has_x else ([], [])
            if has_te:
                if L == 1 and first is not None:
                    t0 = _clock()
                    e_rf, e_et, shared_rf, shared_et = first["te"][:4]
                    emb_rf, F_rf = shared_rf.truncated(fraction)
                    emb_et, F_et = shared_et.truncated(fraction)
                    t["pca"] = _clock() - t0
                else:
                    (e_rf, e_et, emb_rf, emb_et, F_rf, F_et), (t["embedding_forests"], t["path_extraction"],
                                                               t["pca"]) = self._embed(
                        inp_rf, inp_et, Yt, root, L, fraction, solve_fraction if L == 1 else None)
                layer.embedders = {"rf": (e_rf, emb_rf), "et": (e_et, emb_et)}
                blocks_rf.append(F_et)   # cross-over
                blocks_et.append(F_rf)
            if has_os:
                t0 = _clock()
                if L == 1 and first is not None:
                    models, fit_rows_of, OS = first["os"]
                elif pending_os is not None:    # computed by the previous layer's "oof" scoring
                    models, fit_rows_of, OS = pending_os
                else:
                    models, fit_rows_of, OS = self._os_cv(inp_rf, inp_et, Yt, root, L)
                pending_os = None
                layer.os_models = models
                layer.os_fit_rows = fit_rows_of     # which training rows grew each fold model
                layer.os_train = OS                 # the out-of-fold block the training rows received
                blocks_rf.append(OS)
                blocks_et.append(OS)
                t["os_cv"] = _clock() - t0
            t0 = _clock()
            feats_rf, feats_et = _concat(blocks_rf), _concat(blocks_et)
            layer.pred_rf = _forest("rf", self.n_estimators, self.max_features, layer_seed(root, L, _PRED_RF),
                                    self.n_jobs).fit(feats_rf, Yt)
            layer.pred_et = _forest("et", self.n_estimators, self.max_features, layer_seed(root, L, _PRED_ET),
                                    self.n_jobs).fit(feats_et, Yt)
            t1 = _clock()
            if self.pruning_score == "oob":
                P = _oob_predict(layer.pred_rf, feats_rf) * self._y_scale + self._y_mean
            elif self.pruning_score == "oof":
                # the output-space CV on this layer's features (the next layer's OS block, with its seeds)
                pending_os = self._os_cv(feats_rf, feats_et, Yt, root, L + 1)
                P = pending_os[2] * self._y_scale + self._y_mean
                if not has_os:
                    pending_os = None
            else:
                P = layer.predict(feats_rf, feats_et) * self._y_scale + self._y_mean
            scores.append(layer_score(self.task_, Y, P))
            for reading, other in (other_readings or {}).items():
                P = _oob_predict(layer.pred_rf, feats_rf) if reading == "oob" else layer.predict(feats_rf, feats_et)
                other.append(layer_score(self.task_, Y, P * self._y_scale + self._y_mean))
            t["prediction_forests"], t["scoring"] = t1 - t0, _clock() - t1
            times.append(t)
            layers.append(layer)
            # only the best layer so far needs its prediction forests (unless every layer is kept)
            best = int(np.argmax(scores))
            if not keep_all:
                for i, lay in enumerate(layers):
                    if i != best:
                        lay.pred_rf = lay.pred_et = None
            inp_rf, inp_et = feats_rf, feats_et
        if not keep_all:
            layers = layers[: int(np.argmax(scores)) + 1]
        return layers, scores, times

    # --------------------------------------------------------------------------------------------- predict
    def _replay(self, layers, n_layers, X, every=False):
        has_x = VARIANTS[self.variant][0]
        inp_rf = inp_et = X
        out = []
        for i in range(n_layers):
            feats_rf, feats_et = layers[i].features(X, inp_rf, inp_et, has_x)
            if every or i == n_layers - 1:
                out.append(layers[i].predict(feats_rf, feats_et))
            inp_rf, inp_et = feats_rf, feats_et
        return out if every else out[-1]

    def _finish(self, P):
        P = P * self._y_scale + self._y_mean
        if self._y_pow2 != 1.0:
            P = P * self._y_pow2
        return P.ravel() if self._y_one_d else P

    def predict(self, X):
        """Average of the RF and ET of the selected layer after replaying layers 1..``n_layers_``: label
        probabilities for multi-label data, target values for regression, shape (n, d) ((n,) for a 1-D y)."""
        check_is_fitted(self, "layers_")
        X = validate_dense(self, X, reset=False, dtype=np.float32)
        return self._finish(self._replay(self.layers_, self.n_layers_, X))

    @available_if(lambda self: bool(self.keep_all_layers))
    def staged_predict(self, X):
        """Prediction of every built layer, layer 1 first (only with ``keep_all_layers=True``)."""
        check_is_fitted(self, "layers_")
        X = validate_dense(self, X, reset=False, dtype=np.float32)
        for P in self._replay(self.layers_, len(self.layers_), X, every=True):
            yield self._finish(P)

    # ---------------------------------------------------------------------------------------------- extras
    @property
    def layer_metric_(self):
        check_is_fitted(self, "layers_")
        return "micro_auc" if self.task_ == "multilabel" else "arrmse"

    def run_info_(self):
        """Run-record extras: the selected layer count, the training score of every built layer, the PCA size
        and the fit time split summed over the layers."""
        check_is_fitted(self, "layers_")
        totals = {}
        for t in self.fit_time_split_:
            for k, v in t.items():
                totals[k] = totals.get(k, 0.0) + v
        return {
            "n_layers": int(self.n_layers_),
            "n_layers_built": int(self.n_layers_built_),
            "layer_metric": self.layer_metric_,
            "layer_scores": [float(s) for s in self.layer_scores_],
            # the layer count each reading of D10 selects on the same layers (the pruning reading's is n_layers)
            **{f"n_layers_{r}": int(n) for r, n in sorted(self.reading_layers_.items())},
            "pca_fraction": None if self.pca_fraction_ is None else (
                int(self.pca_fraction_) if isinstance(self.pca_fraction_, numbers.Integral)
                else float(self.pca_fraction_)),
            "fit_seconds_split": {k: round(v, 4) for k, v in totals.items()},
            # one scalar per layer, so that the tidy scores table gets an extra.train_layer_<L> column
            **{f"train_layer_{i}": float(s) for i, s in enumerate(self.layer_scores_, start=1)},
        }
