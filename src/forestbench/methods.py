"""The method registry: a name maps to an estimator factory; experiments give parameters and grids.

Adding a method is one entry here (no new rule): ``register("name", factory, sparse_y=...)`` where
``factory(**params)`` returns an object with ``fit(X, Y)`` and ``predict(X)`` giving one score column per output.
``random_state`` is set from the run's seed when the estimator accepts it.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Callable

from forestbench.errors import ConfigError


@dataclass(frozen=True)
class MethodSpec:
    name: str
    factory: Callable[..., Any]
    sparse_y: bool  # the estimator accepts a scipy-sparse label matrix
    description: str


METHODS: dict[str, MethodSpec] = {}


def register(name: str, factory: Callable[..., Any], sparse_y: bool = False, description: str = "") -> None:
    METHODS[name] = MethodSpec(name, factory, sparse_y, description)


def get_method(name: str) -> MethodSpec:
    try:
        return METHODS[name]
    except KeyError:
        raise ConfigError(f"unknown method {name!r} (known: {', '.join(sorted(METHODS))})") from None


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


def _sklearn(cls_path: str):
    module, cls = cls_path.rsplit(".", 1)

    def factory(**params):
        import importlib
        return getattr(importlib.import_module(module), cls)(**params)

    factory.__signature__ = inspect.signature(
        getattr(__import__(module, fromlist=[cls]), cls))
    return factory


# scikit-learn's estimators: the correctness oracle and the speed baseline
register("sklearn_random_forest", _sklearn("sklearn.ensemble.RandomForestRegressor"),
         description="scikit-learn RandomForestRegressor (multi-output, dense Y)")
register("sklearn_extra_trees", _sklearn("sklearn.ensemble.ExtraTreesRegressor"),
         description="scikit-learn ExtraTreesRegressor (multi-output, dense Y)")
register("sklearn_decision_tree", _sklearn("sklearn.tree.DecisionTreeRegressor"),
         description="scikit-learn DecisionTreeRegressor (multi-output, dense Y)")
