"""The method registry: a name maps to an estimator factory; experiments give parameters and grids.

Adding a method is one entry here (no new rule): ``register("name", factory, sparse_y=...)`` where
``factory(**params)`` returns an object with ``fit(X, Y)`` and ``predict(X)`` giving one score column per output.
``random_state`` is set from the run's seed when the estimator accepts it.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from forestbench.errors import ConfigError


@dataclass(frozen=True)
class MethodSpec:
    name: str
    factory: Callable[..., Any]
    sparse_y: bool  # the estimator accepts a scipy-sparse label matrix
    description: str


METHODS: dict[str, MethodSpec] = {}

# Methods that experiments may already name but that are not implemented yet: their variants are left out of the
# plan and reported by name (``Plan.pending``), so the full reproduction's DAG builds while they are being written.
PLANNED: dict[str, str] = {}


def register(name: str, factory: Callable[..., Any], sparse_y: bool = False, description: str = "") -> None:
    METHODS[name] = MethodSpec(name, factory, sparse_y, description)


def plan_method(name: str, why: str) -> None:
    """Declare a method that is named by experiments but not implemented yet."""
    if name not in METHODS:
        PLANNED[name] = why


def is_planned(name: str) -> bool:
    return name in PLANNED and name not in METHODS


def get_method(name: str) -> MethodSpec:
    try:
        return METHODS[name]
    except KeyError:
        hint = f"; it is planned but not implemented yet ({PLANNED[name]})" if name in PLANNED else ""
        raise ConfigError(f"unknown method {name!r}{hint} (known: {', '.join(sorted(METHODS))})") from None


def build_estimator(name: str, params: dict, seed: int | None):
    spec = get_method(name)
    params = dict(params)
    accepted = inspect.signature(spec.factory).parameters
    if seed is not None and "random_state" in accepted and "random_state" not in params:
        params["random_state"] = seed
    try:
        return spec.factory(**params)
    except TypeError as exc:
        raise ConfigError(f"method {name!r}: invalid parameters {sorted(params)}: {exc}") from None


def _lazy_class(cls_path: str):
    """A factory for the class at ``cls_path``, imported on first use (planning needs only its signature)."""
    module, cls = cls_path.rsplit(".", 1)

    def factory(**params):
        import importlib
        return getattr(importlib.import_module(module), cls)(**params)

    factory.__signature__ = inspect.signature(
        getattr(__import__(module, fromlist=[cls]), cls))
    return factory


# forestbench's own estimators (Cython tree kernel): sparse label matrices are used as they are
register("decision_tree", _lazy_class("forestbench.tree.DecisionTreeRegressor"), sparse_y=True,
         description="forestbench DecisionTreeRegressor (multi-output, split targets, sparse labels)")
register("random_forest", _lazy_class("forestbench.ensemble.RandomForestRegressor"), sparse_y=True,
         description="forestbench RandomForestRegressor, optionally on random output projections (thesis ch.5)")
register("extra_trees", _lazy_class("forestbench.ensemble.ExtraTreesRegressor"), sparse_y=True,
         description="forestbench ExtraTreesRegressor, optionally on random output projections (thesis ch.5)")

# scikit-learn's estimators: the correctness oracle and the speed baseline
register("sklearn_random_forest", _lazy_class("sklearn.ensemble.RandomForestRegressor"),
         description="scikit-learn RandomForestRegressor (multi-output, dense Y)")
register("sklearn_extra_trees", _lazy_class("sklearn.ensemble.ExtraTreesRegressor"),
         description="scikit-learn ExtraTreesRegressor (multi-output, dense Y)")
register("sklearn_decision_tree", _lazy_class("sklearn.tree.DecisionTreeRegressor"),
         description="scikit-learn DecisionTreeRegressor (multi-output, dense Y)")



class ClassifierScores:
    """Wrap a scikit-learn classifier so that ``predict`` returns one score column per class (class ids 0..K-1):
    class probabilities when available, else a one-hot of the predicted class."""

    def __init__(self, classifier):
        self.classifier = classifier

    def fit(self, X, y):
        y = np.asarray(y).ravel().astype(int)
        self.n_classes_ = int(y.max()) + 1
        self.classifier.fit(X, y)
        return self

    def predict(self, X):
        classes = self.classifier.classes_.astype(int)
        if hasattr(self.classifier, "predict_proba"):
            part = self.classifier.predict_proba(X)
        else:
            predicted = self.classifier.predict(X).astype(int)
            part = (predicted[:, None] == classes[None, :]).astype(float)
        scores = np.zeros((part.shape[0], self.n_classes_))
        scores[:, classes] = part
        return scores

    @property
    def estimators_(self):
        return getattr(self.classifier, "estimators_", [])

    @property
    def tree_(self):
        return self.classifier.tree_


def _sklearn_classifier(cls_path: str):
    inner = _lazy_class(cls_path)

    def factory(**params):
        return ClassifierScores(inner(**params))

    factory.__signature__ = inner.__signature__
    return factory


for _name, _path in {
    "sklearn_random_forest_classifier": "sklearn.ensemble.RandomForestClassifier",
    "sklearn_extra_trees_classifier": "sklearn.ensemble.ExtraTreesClassifier",
    "sklearn_decision_tree_classifier": "sklearn.tree.DecisionTreeClassifier",
    "sklearn_adaboost": "sklearn.ensemble.AdaBoostClassifier",
    "sklearn_knn": "sklearn.neighbors.KNeighborsClassifier",
    "sklearn_bernoulli_nb": "sklearn.naive_bayes.BernoulliNB",
    "sklearn_multinomial_nb": "sklearn.naive_bayes.MultinomialNB",
    "sklearn_sgd": "sklearn.linear_model.SGDClassifier",
    "sklearn_linear_svc": "sklearn.svm.LinearSVC",
    "sklearn_ridge_classifier": "sklearn.linear_model.RidgeClassifier",
}.items():
    register(_name, _sklearn_classifier(_path), sparse_y=False,
             description=f"scikit-learn {_path.rsplit('.', 1)[1]} (class scores)")
register("sklearn_lasso", _lazy_class("sklearn.linear_model.Lasso"), description="scikit-learn Lasso")
register("sklearn_bagging", _lazy_class("sklearn.ensemble.BaggingRegressor"), description="scikit-learn BaggingRegressor")

# named by config/thesis.yaml, implemented by later issues
for _name, _why in {
    "st_gbrt": "single-target gradient boosting, thesis ch.6",
    "gbmort": "multi-output gradient boosting with one shared tree per step, thesis ch.6",
    "gbrt_rpo": "gradient boosting on random projections of the residuals, thesis ch.6",
    "gbrt_relabel_rpo": "gradient boosting on projected residuals with relabelled leaves, thesis ch.6",
    "artificial_gbrt": "the optimal artificial strategy of the friedman1 study, thesis ch.6",
    "st_random_forest": "one random forest per output (binary relevance), thesis ch.6",
    "compressed_extra_trees": "l1-compressed extra-trees (rET), thesis ch.7",
    "deep_tree_ensemble": "deep tree-ensembles with tree embeddings, DTE paper",
    "dte_competitor": "a competitor of the DTE paper (MLP, ERC, DSTARS, ML-kNN, RAkEL, ECC, MLDF) with no "
                      "implementation in forestbench",
}.items():
    plan_method(_name, _why)
