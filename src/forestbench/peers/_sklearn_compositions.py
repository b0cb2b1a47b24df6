"""Small scikit-learn compositions that the configurations tune by name."""
from __future__ import annotations

from numbers import Integral, Real

from sklearn.ensemble import AdaBoostClassifier
from sklearn.tree import DecisionTreeClassifier
from sklearn.utils._param_validation import Interval, StrOptions


class TreeAdaBoostClassifier(AdaBoostClassifier):
    """AdaBoost over decision trees whose ``max_depth``, ``min_samples_split`` and ``max_features`` are parameters
    of the ensemble itself, so that a grid can tune them (thesis Table 8.4 tunes the trees' ``min_samples_split``
    and ``max_features``). ``max_depth=1`` (stumps) is scikit-learn's default base learner."""

    _parameter_constraints = {
        **{k: v for k, v in AdaBoostClassifier._parameter_constraints.items() if k != "estimator"},
        "max_depth": [Interval(Integral, 1, None, closed="left"), None],
        "min_samples_split": [Interval(Integral, 2, None, closed="left"), Interval(Real, 0, 1, closed="right")],
        "max_features": [Interval(Integral, 1, None, closed="left"), Interval(Real, 0, 1, closed="right"),
                         StrOptions({"sqrt", "log2"}), None],
    }

    def __init__(self, n_estimators=50, *, learning_rate=1.0, max_depth=1, min_samples_split=2, max_features=None,
                 random_state=None):
        super().__init__(n_estimators=n_estimators, learning_rate=learning_rate, random_state=random_state)
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.max_features = max_features

    def fit(self, X, y, sample_weight=None):
        self.estimator = DecisionTreeClassifier(max_depth=self.max_depth, min_samples_split=self.min_samples_split,
                                                max_features=self.max_features)
        return super().fit(X, y, sample_weight)
