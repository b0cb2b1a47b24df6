"""Property-based tests of the estimators' input validation (Hypothesis): random inputs (shapes, NaN/inf, huge or
tiny values, sparse layouts, dtypes) and random parameter values either fit and predict finite numbers of the right
shape, or raise the scikit-learn input errors (ValueError / TypeError) — never another exception (IndexError,
OverflowError, MemoryError, ...) from deep inside the kernel. Example counts come from the Hypothesis profile."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st

from forestbench.forest import ExtraTreesRegressor, RandomForestRegressor
from forestbench.tree import DecisionTreeRegressor

ESTIMATORS = [DecisionTreeRegressor, RandomForestRegressor, ExtraTreesRegressor]
SPECIAL = [0.0, -0.0, 1.0, np.nan, np.inf, -np.inf, 1e300, -1e300, 3.5e38, 1e-320, 2.0**63]


@st.composite
def inputs(draw):
    n = draw(st.integers(0, 12))
    p = draw(st.integers(0, 4))
    d = draw(st.sampled_from([None, 1, 3]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    X = rng.normal(size=(n, p))
    Y = rng.normal(size=(n,) if d is None else (n, d))
    for A in (X, Y):
        if A.size and draw(st.booleans()):
            A.flat[draw(st.integers(0, A.size - 1))] = draw(st.sampled_from(SPECIAL))
    layout = draw(st.sampled_from(["dense", "float32", "int", "csr", "csc", "fortran", "list", "object"]))
    if layout == "float32":
        X = X.astype(np.float32)
    elif layout == "int":
        X = np.nan_to_num(X, posinf=0, neginf=0).astype(np.int64)
    elif layout in ("csr", "csc"):
        X = (sp.csr_matrix if layout == "csr" else sp.csc_matrix)(np.where(rng.random(X.shape) < 0.5, 0.0, X))
    elif layout == "fortran":
        X = np.asfortranarray(X)
    elif layout == "list":
        X = X.tolist()
    elif layout == "object":
        X = X.astype(object)
        if X.size:
            X.flat[0] = draw(st.sampled_from(["a", None, "1.5"]))
    X_test = X if draw(st.booleans()) else np.zeros((2, draw(st.integers(0, 5))))
    return X, Y, X_test


params = st.fixed_dictionaries({}, optional={
    "max_depth": st.one_of(st.none(), st.integers(-2, 2**64), st.floats(allow_nan=True)),
    "min_samples_split": st.one_of(st.integers(-1, 2**63), st.floats(-1, 2)),
    "min_samples_leaf": st.one_of(st.integers(-1, 2**63), st.floats(-1, 2)),
    "max_features": st.one_of(st.none(), st.integers(-1, 2**63), st.floats(-1, 2), st.sampled_from(
        ["sqrt", "log2", "auto", "sqrtt", "", 1.0])),
    "max_leaf_nodes": st.one_of(st.none(), st.integers(-1, 2**63)),
})
forest_params = st.fixed_dictionaries({}, optional={
    "n_estimators": st.one_of(st.integers(-2, 4), st.floats(0, 3), st.just("five")),
    "bootstrap": st.one_of(st.booleans(), st.just("yes")),
    "random_state": st.one_of(st.none(), st.integers(0, 2**32 - 1), st.integers(-3, -1)),
})


def _check(estimator, X, Y, X_test):
    try:
        estimator.fit(X, Y)
        pred = estimator.predict(X_test)
    except (ValueError, TypeError):
        return
    pred = np.asarray(pred)
    n_out = 1 if np.ndim(Y) == 1 else np.shape(Y)[1]
    assert pred.shape[0] == np.shape(X_test)[0]
    assert pred.size == np.shape(X_test)[0] * n_out
    assert np.isfinite(pred).all()


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
@given(data=inputs(), tree=params)
def test_fit_predict_refuses_or_succeeds(cls, data, tree):
    X, Y, X_test = data
    extra = {"n_estimators": 3} if cls is not DecisionTreeRegressor else {}
    _check(cls(**tree, **extra, random_state=0), X, Y, X_test)


@pytest.mark.parametrize("cls", [RandomForestRegressor, ExtraTreesRegressor], ids=lambda c: c.__name__)
@given(forest=forest_params, tree=params)
def test_forest_parameters_refuse_or_succeed(cls, forest, tree):
    rng = np.random.default_rng(0)
    X, Y = rng.normal(size=(20, 3)), rng.normal(size=(20, 2))
    _check(cls(**{"n_estimators": 3, **forest}, **tree), X, Y, X[:4])
