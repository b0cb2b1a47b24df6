"""Single-target (binary relevance) random forests: one forestbench random forest per output (the st-rf / br-rf
baselines of the gradient-boosting study, thesis Sec. 6.4; Hastie et al.'s defaults, not tuned)."""
from __future__ import annotations

import numbers

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, MultiOutputMixin, RegressorMixin, _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

__all__ = ["SingleTargetForestRegressor"]


class SingleTargetForestRegressor(MultiOutputMixin, RegressorMixin, BaseEstimator):
    """One :class:`forestbench.forest.RandomForestRegressor` per output column.

    Output ``j``'s forest is seeded with the ``j``-th child of ``numpy.random.SeedSequence(random_state)``, so the
    model depends neither on ``n_jobs`` nor on the other outputs. ``n_jobs`` is passed to each forest (threads over
    its trees). ``predict`` returns one column per output (the label frequencies for 0/1 labels).
    ``count_constant_features`` is the forests' rule for features constant in a node
    (:class:`forestbench.forest.RandomForestRegressor`): ``True`` draws as scikit-learn's trees do.
    """

    _parameter_constraints: dict = {
        "n_estimators": [Interval(numbers.Integral, 1, None, closed="left")],
        "max_features": [None, Interval(numbers.Integral, 1, None, closed="left"),
                         Interval(numbers.Real, 0.0, 1.0, closed="right"), StrOptions({"sqrt", "log2"})],
        "max_depth": [None, Interval(numbers.Integral, 1, None, closed="left")],
        "min_samples_split": [Interval(numbers.Integral, 2, None, closed="left")],
        "min_samples_leaf": [Interval(numbers.Integral, 1, None, closed="left")],
        "bootstrap": ["boolean"],
        "count_constant_features": ["boolean"],
        "n_jobs": [None, numbers.Integral],
        "random_state": ["random_state"],
    }

    def __init__(self, n_estimators=100, *, max_features="sqrt", max_depth=None, min_samples_split=2,
                 min_samples_leaf=1, bootstrap=True, count_constant_features=False, n_jobs=None, random_state=None):
        self.n_estimators = n_estimators
        self.max_features = max_features
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.bootstrap = bootstrap
        self.count_constant_features = count_constant_features
        self.n_jobs = n_jobs
        self.random_state = random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        from forestbench.forest._forest import RandomForestRegressor

        if sp.issparse(y):
            y = y.toarray()
        X, Y = validate_data(self, X, y, dtype=np.float32, accept_sparse=["csr", "csc"], multi_output=True,
                             y_numeric=True)
        Y = np.asarray(Y, dtype=np.float64)
        self._y_1d = Y.ndim == 1
        Y = Y.reshape(Y.shape[0], -1)
        seed = self.random_state if isinstance(self.random_state, (numbers.Integral, type(None))) \
            else self.random_state.randint(2 ** 31)
        children = np.random.SeedSequence(seed).spawn(Y.shape[1])
        self.estimators_ = []
        for j, child in enumerate(children):
            forest = RandomForestRegressor(
                n_estimators=self.n_estimators, max_features=self.max_features, max_depth=self.max_depth,
                min_samples_split=self.min_samples_split, min_samples_leaf=self.min_samples_leaf,
                bootstrap=self.bootstrap, count_constant_features=self.count_constant_features, n_jobs=self.n_jobs,
                random_state=int(child.generate_state(1, dtype=np.uint32)[0]))
            self.estimators_.append(forest.fit(X, Y[:, j:j + 1]))
        self.n_outputs_ = Y.shape[1]
        return self

    def predict(self, X):
        check_is_fitted(self, "estimators_")
        X = validate_data(self, X, reset=False, dtype=np.float32, accept_sparse=["csr", "csc"])
        P = np.column_stack([np.asarray(f.predict(X)).reshape(X.shape[0], -1)[:, 0] for f in self.estimators_])
        return P[:, 0] if self._y_1d else P

    @property
    def n_nodes_(self):
        return int(sum(f.n_nodes_ for f in self.estimators_))

    @property
    def model_bytes_(self):
        return int(sum(f.model_bytes_ for f in self.estimators_))
