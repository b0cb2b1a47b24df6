"""Permutation importance on the out-of-bag rows ("mean decrease accuracy", Breiman 2001; lecture slides).

For every tree b: its loss e_b on its out-of-bag rows, then, for each feature j, the loss e_bj on the same rows with
column j permuted among them; D_bj = e_bj − e_b. The importance of j is the mean of D_bj over the trees (and over
``n_repeats`` permutations), its spread the standard deviation of the D_bj. Every tree is judged only on rows it
did not see, so the importance measures what the forest uses to generalise: a feature with no information gets
≈ 0 even when the trees split on it, and exactly 0 when no tree uses it.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.utils import Bunch

__all__ = ["oob_permutation_importance"]


def _error_rate(y_true, y_pred):
    if y_pred.shape[1] == 1:
        return float(np.mean((y_pred[:, 0] >= 0.5) != (y_true[:, 0] >= 0.5)))
    return float(np.mean(y_pred.argmax(axis=1) != y_true.argmax(axis=1)))


def _mse(y_true, y_pred):
    return float(np.mean((y_true - y_pred) ** 2))


LOSSES = {"error_rate": _error_rate, "mse": _mse}


def oob_permutation_importance(forest, X, y, *, loss="error_rate", n_repeats=1, random_state=None) -> Bunch:
    """Out-of-bag permutation importance of every feature of a fitted bootstrap forest.

    ``forest``: a :class:`RandomForestRegressor` / :class:`ExtraTreesRegressor` of forestbench fitted with
    ``bootstrap=True`` on ``X``, ``y`` (the same rows in the same order: the out-of-bag rows of each tree are
    regenerated from its bootstrap stream). ``loss``: ``"error_rate"`` (class scores: 0/1 labels thresholded at 0.5,
    or one score column per class and the arg-max), ``"mse"``, or a callable ``loss(y_true, y_pred)`` on 2-D arrays
    (lower is better). Returns a Bunch with ``importances`` (n_features, n_trees × n_repeats), ``importances_mean``
    and ``importances_std``, as scikit-learn's ``permutation_importance``.
    """
    if not getattr(forest, "bootstrap", False) or not hasattr(forest, "estimators_"):
        raise ValueError("oob_permutation_importance needs a forest fitted with bootstrap=True")
    loss_fn = LOSSES.get(loss) if isinstance(loss, str) else loss
    if loss_fn is None or not callable(loss_fn):
        raise ValueError(f"loss must be one of {sorted(LOSSES)} or a callable, got {loss!r}")
    if not (isinstance(n_repeats, (int, np.integer)) and n_repeats >= 1):
        raise ValueError(f"n_repeats must be a positive int, got {n_repeats!r}")
    X = np.ascontiguousarray(X.toarray() if sp.issparse(X) else X, dtype=np.float32)
    y = y.toarray() if sp.issparse(y) else np.asarray(y, dtype=np.float64)
    y = y.reshape(len(y), -1)
    n, p = X.shape
    if len(y) != n:
        raise ValueError(f"X has {n} rows but y has {len(y)}")
    if p != forest.n_features_in_:
        raise ValueError(f"X has {p} features but the forest was fitted on {forest.n_features_in_}")
    rng = np.random.default_rng(random_state)
    d = y.shape[1]
    drops = []
    for i in range(len(forest.estimators_)):
        rows = np.flatnonzero(forest._tree_weights(n, forest._streams[i], None) == 0)
        if rows.size < 2:
            continue
        Xo, yo = forest._check_X_predict(X[rows]), y[rows]
        base = loss_fn(yo, np.asarray(forest._tree_predict(i, Xo)).reshape(rows.size, d))
        for _ in range(n_repeats):
            tree_drops = np.empty(p)
            for j in range(p):
                Xp = Xo.copy()
                Xp[:, j] = Xp[rng.permutation(rows.size), j]
                Xp = forest._check_X_predict(Xp)
                tree_drops[j] = loss_fn(yo, np.asarray(forest._tree_predict(i, Xp)).reshape(rows.size, d)) - base
            drops.append(tree_drops)
    if not drops:
        raise ValueError("no tree has two or more out-of-bag rows: too few rows or trees for an out-of-bag estimate")
    importances = np.column_stack(drops)
    return Bunch(importances=importances, importances_mean=importances.mean(axis=1),
                 importances_std=importances.std(axis=1))
