"""One score column per class for scikit-learn single-label classifiers (the workflow's metrics read scores)."""
from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, clone


class ClassifierScores(BaseEstimator):
    """Wrap a scikit-learn classifier so that ``predict`` returns one score column per class (class ids 0..K-1):
    class probabilities when available, else a one-hot of the predicted class."""

    def __init__(self, classifier):
        self.classifier = classifier

    def set_params(self, **params):
        """Parameters other than ``classifier`` are the wrapped classifier's (so that selection can tune them)."""
        own = {k: params.pop(k) for k in list(params) if k == "classifier"}
        super().set_params(**own)
        if params:
            self.classifier.set_params(**params)
        return self

    def fit(self, X, y):
        y = np.asarray(y).ravel().astype(int)
        self.n_classes_ = int(y.max()) + 1
        self.classifier_ = clone(self.classifier).fit(X, y)
        return self

    def predict(self, X):
        classes = self.classifier_.classes_.astype(int)
        if hasattr(self.classifier_, "predict_proba"):
            part = self.classifier_.predict_proba(X)
        else:
            predicted = self.classifier_.predict(X).astype(int)
            part = (predicted[:, None] == classes[None, :]).astype(float)
        scores = np.zeros((part.shape[0], self.n_classes_))
        scores[:, classes] = part
        return scores

    @property
    def estimators_(self):
        return getattr(self.classifier_, "estimators_", [])

    @property
    def tree_(self):
        return self.classifier_.tree_
