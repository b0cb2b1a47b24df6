"""Boosting libraries as peers of the thesis ch. 6 family, behind one scikit-learn interface.

Every wrapper takes ``n_estimators`` (boosting rounds; per output for the per-output wrappers), ``learning_rate``,
``max_leaf_nodes`` (XGBoost ``max_leaves`` with loss-guided growth, LightGBM ``num_leaves``, scikit-learn
``max_leaf_nodes``; CatBoost grows symmetric trees, so ``depth = ceil(log2(max_leaf_nodes))``), ``loss``
(``"square"`` for regression, ``"logistic"`` for multi-label 0/1 targets, where ``predict`` returns label
probabilities), ``n_jobs`` (library threads; default 1 so that timings are single-threaded) and ``random_state``.
The libraries are imported when a model is fitted (optional extra ``peers``).
"""
from __future__ import annotations

import math
import numbers

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, MultiOutputMixin, RegressorMixin, _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

__all__ = ["XGBoostMultiOutputTree", "XGBoostOneOutputPerTree", "CatBoostMulti", "LightGBMPerOutput",
           "SklearnGBRTPerOutput"]


def _require(module):
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise ImportError(f"{module} is not installed: install forestbench's optional extra 'peers'") from None


class _Peer(MultiOutputMixin, RegressorMixin, BaseEstimator):
    _parameter_constraints: dict = {
        "n_estimators": [Interval(numbers.Integral, 1, None, closed="left")],
        "learning_rate": [Interval(numbers.Real, 0.0, 1.0, closed="right")],
        "max_leaf_nodes": [Interval(numbers.Integral, 2, None, closed="left")],
        "loss": [StrOptions({"square", "logistic"})],
        "n_jobs": [Interval(numbers.Integral, 1, None, closed="left")],
        "random_state": [None, numbers.Integral],
    }

    def __init__(self, n_estimators=100, *, learning_rate=0.1, max_leaf_nodes=8, loss="square", n_jobs=1,
                 random_state=None):
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.max_leaf_nodes = max_leaf_nodes
        self.loss = loss
        self.n_jobs = n_jobs
        self.random_state = random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    def _seed(self):
        return 0 if self.random_state is None else int(self.random_state) % (2 ** 31)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        if sp.issparse(y):
            y = y.toarray()
        X, Y = validate_data(self, X, y, dtype=np.float32, accept_sparse=["csr"], multi_output=True,
                             y_numeric=True)
        Y = np.asarray(Y, dtype=np.float64)
        self._y_1d = Y.ndim == 1
        Y = Y.reshape(Y.shape[0], -1)
        if self.loss == "logistic" and not np.all(np.isin(Y, (0.0, 1.0))):
            raise ValueError("loss='logistic' needs 0/1 labels in y")
        self.n_outputs_ = Y.shape[1]
        self._fit(X, Y)
        return self

    def predict(self, X):
        check_is_fitted(self, "n_outputs_")
        X = validate_data(self, X, reset=False, dtype=np.float32, accept_sparse=["csr"])
        P = np.asarray(self._predict(X), dtype=np.float64).reshape(X.shape[0], -1)
        return P[:, 0] if self._y_1d else P


class _XGBoost(_Peer):
    _strategy = "multi_output_tree"

    def _fit(self, X, Y):
        xgb = _require("xgboost")
        kw = dict(n_estimators=self.n_estimators, learning_rate=self.learning_rate, tree_method="hist",
                  grow_policy="lossguide", max_leaves=self.max_leaf_nodes, max_depth=0,
                  multi_strategy=self._strategy, n_jobs=self.n_jobs, random_state=self._seed(), reg_lambda=0.0,
                  min_child_weight=0.0)
        if self.loss == "logistic":
            self.model_ = xgb.XGBClassifier(objective="binary:logistic", **kw)
        else:
            self.model_ = xgb.XGBRegressor(objective="reg:squarederror", **kw)
        self.model_.fit(X, Y if Y.shape[1] > 1 else Y[:, 0])

    def _predict(self, X):
        if self.loss == "logistic":
            return self.model_.predict_proba(X)
        return self.model_.predict(X)


class XGBoostMultiOutputTree(_XGBoost):
    """XGBoost, one multi-output (vector-leaf) tree per round."""

    _strategy = "multi_output_tree"


class XGBoostOneOutputPerTree(_XGBoost):
    """XGBoost, one single-output tree per output and round."""

    _strategy = "one_output_per_tree"


class CatBoostMulti(_Peer):
    """CatBoost with the multi-output losses MultiRMSE / MultiLogloss (symmetric trees)."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = False  # CatBoost is not given scipy sparse matrices
        return tags

    def _fit(self, X, Y):
        cb = _require("catboost")
        kw = dict(iterations=self.n_estimators, learning_rate=self.learning_rate,
                  depth=max(1, math.ceil(math.log2(self.max_leaf_nodes))), thread_count=self.n_jobs,
                  random_seed=self._seed(), verbose=False, allow_writing_files=False)
        if self.loss == "logistic":
            self.model_ = cb.CatBoostClassifier(loss_function="MultiLogloss", **kw)
        else:
            self.model_ = cb.CatBoostRegressor(loss_function="MultiRMSE" if Y.shape[1] > 1 else "RMSE", **kw)
        self.model_.fit(X, Y.astype(int) if self.loss == "logistic" else Y)

    def _predict(self, X):
        if self.loss == "logistic":
            return self.model_.predict_proba(X)
        return self.model_.predict(X)


class _PerOutput(_Peer):
    """One single-output model per output; a 0/1 column with one class only predicts that class' frequency."""

    def _fit(self, X, Y):
        self.models_ = []
        for j in range(Y.shape[1]):
            y = Y[:, j]
            if self.loss == "logistic" and np.unique(y).size < 2:
                self.models_.append(float(y[0]))
            else:
                self.models_.append(self._one(X, y))

    def _predict(self, X):
        cols = []
        for m in self.models_:
            if isinstance(m, float):
                cols.append(np.full(X.shape[0], m))
            elif self.loss == "logistic":
                cols.append(m.predict_proba(X)[:, 1])
            else:
                cols.append(m.predict(X))
        return np.column_stack(cols)


class LightGBMPerOutput(_PerOutput):
    """LightGBM, one model per output (``min_child_samples=1`` so that small trees match the others')."""

    def _one(self, X, y):
        lgb = _require("lightgbm")
        kw = dict(n_estimators=self.n_estimators, learning_rate=self.learning_rate, num_leaves=self.max_leaf_nodes,
                  n_jobs=self.n_jobs, random_state=self._seed(), min_child_samples=1, min_child_weight=0.0,
                  verbose=-1)
        model = lgb.LGBMClassifier(**kw) if self.loss == "logistic" else lgb.LGBMRegressor(**kw)
        return model.fit(X, y)


class SklearnGBRTPerOutput(_PerOutput):
    """scikit-learn's GradientBoostingRegressor (square loss) or GradientBoostingClassifier (logistic), one per
    output, best-first with ``max_leaf_nodes``."""

    def _one(self, X, y):
        from sklearn.ensemble import GradientBoostingClassifier, GradientBoostingRegressor

        kw = dict(n_estimators=self.n_estimators, learning_rate=self.learning_rate,
                  max_leaf_nodes=self.max_leaf_nodes, max_depth=None, random_state=self._seed())
        if self.loss == "logistic":
            return GradientBoostingClassifier(**kw).fit(X, y.astype(int))
        return GradientBoostingRegressor(loss="squared_error", **kw).fit(X, y)

    def staged_predict(self, X):
        check_is_fitted(self, "n_outputs_")
        X = validate_data(self, X, reset=False, dtype=np.float32)
        gens = [None if isinstance(m, float) else
                (m.staged_predict_proba(X) if self.loss == "logistic" else m.staged_predict(X))
                for m in self.models_]
        for _ in range(self.n_estimators):
            cols = []
            for m, g in zip(self.models_, gens):
                if g is None:
                    cols.append(np.full(X.shape[0], m))
                else:
                    v = next(g)
                    cols.append(v[:, 1] if v.ndim == 2 else v)
            P = np.column_stack(cols)
            yield P[:, 0] if self._y_1d else P
