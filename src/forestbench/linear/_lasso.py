"""The linear Lasso baseline of thesis Table 7.1, on the original (whitened) features.

The thesis reports the Lasso's error and its complexity (the number of selected input features) but neither the
solver nor how its regularisation was chosen. Here: inputs and outputs are whitened, scikit-learn's ``LassoCV``
(``MultiTaskLassoCV`` for several outputs) chooses the penalty by ``cv``-fold cross-validation on the training set,
as t* is chosen for rET. A binary target is regressed as a 0/1 label and ``predict`` returns the score on the 0/1
scale (threshold 0.5), as the compressed forest does.
"""
from __future__ import annotations

from numbers import Integral

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin, _fit_context
from sklearn.linear_model import LassoCV, MultiTaskLassoCV
from sklearn.model_selection import KFold
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted, validate_data

__all__ = ["LassoCVBaseline"]


def _types(constraints):
    """The numeric types an ``Interval`` constraint list accepts."""
    return {getattr(c, "type", None) for c in constraints}


class LassoCVBaseline(RegressorMixin, BaseEstimator):
    """Lasso on whitened inputs and outputs, penalty chosen by K-fold CV; complexity = selected features.

    Parameters
    ----------
    cv : int >= 2, default 10
    n_alphas : int, default 100
        Penalties on scikit-learn's log grid.
    max_iter : int, default 10000
    random_state : int, RandomState or None
        Shuffles the folds.

    Attributes
    ----------
    coef_ : (n_features,) or (n_outputs, n_features) coefficients on the original input scale.
    intercept_ : float or (n_outputs,)
    alpha_ : chosen penalty (on whitened data).
    n_selected_features_ : inputs with a non-zero coefficient.
    """

    _parameter_constraints = {
        "cv": [Interval(Integral, 2, None, closed="left")],
        "n_alphas": [Interval(Integral, 1, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
    }

    def __init__(self, cv=10, *, n_alphas=100, max_iter=10000, random_state=None):
        self.cv = cv
        self.n_alphas = n_alphas
        self.max_iter = max_iter
        self.random_state = random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        tags.target_tags.single_output = True
        return tags

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        X, y = validate_data(self, X, y, dtype=np.float64, multi_output=True, y_numeric=True)
        one_d = y.ndim == 1
        Y = y.reshape(y.shape[0], -1)
        x_mean, x_std = X.mean(axis=0), X.std(axis=0)
        x_std = np.where(x_std > 0, x_std, 1.0)
        y_mean, y_std = Y.mean(axis=0), Y.std(axis=0)
        y_std = np.where(y_std > 0, y_std, 1.0)
        Xw = (X - x_mean) / x_std
        Yw = (Y - y_mean) / y_std
        folds = KFold(self.cv, shuffle=True, random_state=self.random_state)
        cls = LassoCV if Y.shape[1] == 1 else MultiTaskLassoCV
        # scikit-learn >= 1.7 takes the grid size as ``alphas``; older versions as ``n_alphas``
        grid = {"n_alphas": self.n_alphas} if "n_alphas" in cls._parameter_constraints and \
            Integral not in _types(cls._parameter_constraints.get("alphas", [])) else {"alphas": self.n_alphas}
        model = cls(cv=folds, max_iter=self.max_iter, **grid)
        if Y.shape[1] == 1:
            model.fit(Xw, Yw[:, 0])
            coef = model.coef_.reshape(1, -1)
        else:
            model.fit(Xw, Yw)
            coef = model.coef_
        W = coef * (y_std[:, None] / x_std[None, :])
        b = y_mean + y_std * np.atleast_1d(model.intercept_) - W @ x_mean
        self.alpha_ = float(model.alpha_)
        self.coef_ = W[0] if one_d else W
        self.intercept_ = float(b[0]) if one_d else b
        self.n_selected_features_ = int(np.count_nonzero(np.any(coef != 0, axis=0)))
        self._y_one_d = one_d
        return self

    def predict(self, X):
        check_is_fitted(self, "coef_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        W = np.atleast_2d(self.coef_)
        out = X @ W.T + np.atleast_1d(self.intercept_)[None, :]
        return out.ravel() if self._y_one_d else out

    def run_info_(self):
        check_is_fitted(self, "coef_")
        return {"lasso_selected_features": self.n_selected_features_, "lasso_alpha": self.alpha_}
