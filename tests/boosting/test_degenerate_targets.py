"""Targets and optional inputs at the edges: targets whose squares overflow float64, checked shapes before any
compiled loop runs (eval_set, the loop's own entry points), the task given by the workflow instead of guessed from
y's values, constant targets and sparse y."""
from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st

from forestbench.boosting import _loop as _boosting_loop
from forestbench.boosting._losses import line_search
from forestbench.boosting._gradient_boosting import (
    GBMORTRegressor,
    GBRTRelabelRPORegressor,
    GBRTRPORegressor,
    STGradientBoostingRegressor,
)
from forestbench.compression._compressed_trees import CompressedExtraTreesRegressor
from forestbench.deep._cascade import DeepTreeEnsemble
from forestbench.peers._dte_competitors import (
    EnsembleOfRegressorChains,
    MultiLabelDeepForest,
    RandomForestExtraTrees,
)
from forestbench.workflow.methods import get_method

BOOSTING = [GBMORTRegressor, STGradientBoostingRegressor, GBRTRPORegressor, GBRTRelabelRPORegressor]


@pytest.fixture(scope="module")
def data():
    rng = np.random.RandomState(0)
    X = rng.rand(60, 4).astype(np.float32)
    Y = np.c_[2 * X[:, 0] + rng.rand(60), np.sin(3 * X[:, 1]), X[:, 2] - X[:, 3]]
    return X, Y


def _small(kind):
    if kind == "cet":
        return CompressedExtraTreesRegressor(8, t=0.5, random_state=0)
    if kind == "cet_cv":
        return CompressedExtraTreesRegressor(8, cv=3, max_t=0.5, random_state=0)
    if kind == "dte":
        return DeepTreeEnsemble("X_TE", n_estimators=5, max_layers=2, pca_fractions=(0.2,), random_state=0)
    if kind == "dte_os":
        return DeepTreeEnsemble("X_OS", n_estimators=5, max_layers=2, os_folds=3, random_state=0)
    if kind == "dte_rf_et":
        return RandomForestExtraTrees(n_estimators=5, random_state=0)
    if kind == "dte_erc":
        return EnsembleOfRegressorChains(n_chains=2, random_state=0)
    return kind(8, random_state=0)


# ------------------------------------------------------------------------------------------------- huge targets
def test_power_of_two_scale():
    from forestbench._target_scale import SAFE_MAX, power_of_two_scale

    assert power_of_two_scale(np.array([1.0, -3e76])) == 1.0
    assert power_of_two_scale(np.zeros((0, 2))) == 1.0
    s = power_of_two_scale(np.array([1.0, -1.3e154]))
    assert math.frexp(s)[0] == 0.5 and 0.5 <= 1.3e154 / s < 1.0   # a power of two bringing max |y| to [0.5, 1)
    assert SAFE_MAX < 1.3e154


@pytest.mark.parametrize("kind", BOOSTING + ["cet", "dte", "dte_rf_et", "dte_erc"],
                         ids=lambda k: getattr(k, "__name__", k))
@pytest.mark.parametrize("factor", [2.0 ** 512, 2.0 ** 1000])   # about 1.3e154 and 1.1e301
def test_huge_targets_predict_the_scaled_model(data, kind, factor):
    """|y| past 1.3e154 used to give all-NaN predictions; the fit on y * 2**k now predicts 2**k times the fit on y
    (power-of-two scaling is exact), on the same scale as y and finite."""
    X, Y = data
    base = _small(kind).fit(X, Y).predict(X)
    big = _small(kind).fit(X, Y * factor).predict(X)
    assert np.isfinite(big).all()
    np.testing.assert_array_equal(big / factor, base)


@pytest.mark.parametrize("cls", BOOSTING, ids=lambda c: c.__name__)
def test_huge_targets_staged_and_records_in_units_of_y(data, cls):
    X, Y = data
    factor = 2.0 ** 600
    a = cls(6, random_state=0, monitor_train_loss=True).fit(X, Y, eval_set=(X[:20], Y[:20]))
    b = cls(6, random_state=0, monitor_train_loss=True).fit(X * 1, Y * factor, eval_set=(X[:20], Y[:20] * factor))
    for pa, pb in zip(a.staged_predict(X[:10]), b.staged_predict(X[:10])):
        np.testing.assert_allclose(pb / factor, pa, rtol=1e-12)
    np.testing.assert_allclose(b.init_ / factor, a.init_, rtol=1e-12)
    np.testing.assert_allclose(b.train_scores_ / factor, a.train_scores_, rtol=1e-12)
    np.testing.assert_allclose(b.eval_macro_r2_, a.eval_macro_r2_, rtol=1e-10)
    assert np.isinf(b.train_loss_).all()   # half squared errors of ~1e180 overflow in the units of y: said as inf


# ------------------------------------------------------------------------------------------- checked shapes
@pytest.mark.parametrize("cls", BOOSTING, ids=lambda c: c.__name__)
@pytest.mark.parametrize("case, match", [
    ("one_column", "y_val has shape"),
    ("five_columns", "y_val has shape"),
    ("long_1d", "y_val has shape"),
    ("rows", "y_val has shape"),
    ("nan", "NaN"),
    ("triple", "pair"),
    ("single", "pair"),
])
def test_eval_set_is_checked_before_the_loop(data, cls, case, match):
    X, Y = data
    Xv, Yv = X[:10], Y[:10]
    eval_set = {"one_column": (Xv, Yv[:, :1]), "five_columns": (Xv, np.ones((10, 5))),
                "long_1d": (Xv, np.ones(30)), "rows": (Xv, Yv[:7]), "nan": (Xv, np.full((10, 3), np.nan)),
                "triple": (Xv, Yv, None), "single": (Xv,)}[case]
    with pytest.raises(ValueError, match=match):
        cls(3, random_state=0).fit(X, Y, eval_set=eval_set)


@pytest.mark.parametrize("d", [1, 3])
@given(rows=st.integers(0, 12), shape=st.sampled_from(["1d", "2d", "3d"]), cols=st.integers(0, 5),
       special=st.sampled_from([None, np.nan, np.inf, 1e300]), layout=st.sampled_from(["array", "list", "csr"]))
def test_eval_set_fuzz_fits_with_matching_shapes_or_refuses(d, rows, shape, cols, special, layout):
    """Any y_val either has X_val's rows and the training outputs (and is scored) or is refused with a
    ValueError / TypeError: never read past its end."""
    rng = np.random.RandomState(0)
    X = rng.rand(30, 3).astype(np.float32)
    Y = rng.rand(30, d)
    Xv = rng.rand(8, 3).astype(np.float32)
    Yv = rng.rand(*{"1d": (rows,), "2d": (rows, cols), "3d": (rows, cols, 2)}[shape])
    if special is not None and Yv.size:
        Yv.flat[0] = special
    if layout == "list":
        Yv = Yv.tolist()
    elif layout == "csr" and shape == "2d":
        Yv = sp.csr_matrix(Yv)
    model = GBMORTRegressor(3, random_state=0)
    try:
        model.fit(X, Y if d > 1 else Y[:, 0], eval_set=(Xv, Yv))
    except (ValueError, TypeError):
        return
    dense = np.asarray(Yv.toarray() if sp.issparse(Yv) else Yv, dtype=float)
    assert dense.shape in ((8, d),) + (((8,),) if d == 1 else ())
    assert np.isfinite(dense).all()
    assert model.eval_sse_.shape == (3, d)   # inf when a y_val of 1e300 is squared: said as it is


def test_eval_set_of_a_one_output_model_takes_1d_or_one_column(data):
    X, Y = data
    a = GBMORTRegressor(4, random_state=0).fit(X, Y[:, 0], eval_set=(X[:10], Y[:10, 0]))
    b = GBMORTRegressor(4, random_state=0).fit(X, Y[:, 0], eval_set=(X[:10], sp.csr_matrix(Y[:10, :1])))
    np.testing.assert_array_equal(a.eval_sse_, b.eval_sse_)


def test_the_compiled_loop_refuses_mismatched_shapes(data):
    """The compiled entry points check their arrays themselves (no caller can make them read out of bounds)."""
    X, Y = data
    Xf = np.asfortranarray(X)
    args = (Xf, Y, Y.mean(axis=0), "mort", "square", 3, 0.1, 4, 4, "subsample", 1, 1, 2)
    with pytest.raises(ValueError, match="Y_val"):
        _boosting_loop.boost(*args, False, True, Xf[:10], Y[:10, :1])
    with pytest.raises(ValueError, match="X_val"):
        _boosting_loop.boost(*args, False, True, Xf[:10, :2], Y[:10])
    with pytest.raises(ValueError, match="F0"):
        _boosting_loop.boost(Xf, Y, Y.mean(axis=0)[:2], *args[3:])
    with pytest.raises(ValueError, match="Y has shape"):
        _boosting_loop.boost(Xf, Y[:30], *args[2:])
    with pytest.raises(ValueError, match="max_features"):
        _boosting_loop.boost(*args[:8], 9, *args[9:])
    model = GBMORTRegressor(3, random_state=0).fit(X, Y)
    m = model._model
    arrays = (m["left"], m["right"], m["feature"], m["threshold"], m["leaf_index"], m["node_ptr"], m["leaf_ptr"],
              m["values"], m["coef"], m["output"], 0)
    F = np.zeros((5, 3))
    with pytest.raises(ValueError, match="columns"):
        _boosting_loop.predict_add(np.zeros((5, 1), dtype=np.float32), *arrays, 0, model.n_trees_, F)
    with pytest.raises(ValueError, match="rows"):
        _boosting_loop.predict_add(X[:6], *arrays, 0, model.n_trees_, F)
    with pytest.raises(ValueError, match="tree range"):
        _boosting_loop.predict_add(X[:5], *arrays, 0, model.n_trees_ + 1, F)
    with pytest.raises(ValueError, match="length"):
        line_search("square", np.ones(5), np.ones(5), np.ones(2))


def test_competitor_refuses_rows_mismatch(data):
    X, _ = data
    Y = (np.random.RandomState(1).rand(50, 3) > 0.5).astype(float)
    with pytest.raises(ValueError, match="60 rows but y has 50"):
        MultiLabelDeepForest(max_layers=1, random_state=0).fit(X, Y)


# ------------------------------------------------------------------------------------- the task, not a guess
def test_two_valued_regression_target_stays_on_its_scale(data):
    X, _ = data
    y = np.where(X[:, 0] > 0.5, 7.0, 3.0)
    model = CompressedExtraTreesRegressor(8, t=1.0, random_state=0).fit(X, y)
    assert model.loss_ == "squared" and model.classes_ is None
    pred = model.predict(X)
    assert pred.min() >= 3.0 - 1e-9 and pred.max() <= 7.0 + 1e-9 and pred.mean() > 3.5


def test_workflow_sets_the_task_from_the_dataset():
    ret, dte = get_method("compressed_extra_trees"), get_method("deep_tree_ensemble")
    assert ret.build({}, 0, "regression").loss == "squared"
    assert ret.build({}, 0, "binary").loss == "zero_one"
    assert ret.build({"loss": "squared"}, 0, "binary").loss == "squared"   # a variant's own value is kept
    assert ret.build({}, 0).loss == "auto"
    assert dte.build({}, 0, "multioutput_regression").task == "regression"
    assert dte.build({}, 0, "multilabel").task == "multilabel"
    assert ret.params_for_task("binary", {"loss": "squared"}) == {}


def test_runner_passes_the_dataset_task(monkeypatch, tmp_path):
    """A regression dataset whose target takes two values is fitted as regression by the fit job."""
    from forestbench.workflow import runner
    from forestbench.datasets.store import Dataset

    rng = np.random.RandomState(0)
    X = rng.rand(80, 3).astype(np.float32)
    y = np.where(X[:, 0] > 0.5, 7.0, 3.0)
    ds = Dataset(name="two_valued", X=X, Y=y, task="regression")
    monkeypatch.setattr(runner, "read_header", lambda path: {"content_sha256": "x", "shape": [80, 3, 1]})
    monkeypatch.setattr(runner, "load_dataset", lambda path, expected_shape=None: ds)
    monkeypatch.setattr(runner, "load_split", lambda path, repeat: (np.arange(60), np.arange(60, 80), {}))
    spec = {"experiment": "e", "dataset": "two_valued", "variant": "ret", "method": "compressed_extra_trees",
            "params": {"n_estimators": 5, "t": 1.0}, "metrics": ["mse"], "repeat": 0, "seed": 0}
    record = runner.run(spec, "unused.npz", "unused_split.npz", tmp_path / "rec.json")
    assert record["scores"]["mse"] < 4.0   # on the 0/1 scale the error against {3, 7} would be > 4
    assert record["task_params"] == {"loss": "squared"}


# -------------------------------------------------------------------------------------- constant and sparse y
@pytest.mark.parametrize("kind", ["cet", "cet_cv", "dte", "dte_os"])
@pytest.mark.parametrize("value", [0.0, -2.0, 3.0])
def test_constant_target_predicts_the_constant(data, kind, value):
    X, _ = data
    model = _small(kind)
    if kind.startswith("dte"):
        model.set_params(task="regression")   # one 0/1 column is no multi-label data: the workflow says regression
    pred = model.fit(X, np.full(60, value)).predict(X[:7])
    np.testing.assert_array_equal(pred, np.full(7, value))


def test_dte_fits_with_one_constant_output(data):
    X, Y = data
    Y = Y.copy()
    Y[:, 1] = 2.5
    model = _small("dte").fit(X, Y)
    np.testing.assert_array_equal(model.predict(X)[:, 1], 2.5)
    assert np.isfinite(model.layer_scores_).all()


def test_dte_multilabel_with_a_single_label_value(data):
    X, _ = data
    model = DeepTreeEnsemble("X", n_estimators=4, max_layers=2, task="multilabel", random_state=0)
    pred = model.fit(X, np.zeros((60, 3))).predict(X[:5])
    np.testing.assert_array_equal(pred, 0.0)
    assert model.n_layers_ == 1


def test_zero_one_loss_with_one_class_says_so(data):
    X, _ = data
    with pytest.raises(ValueError, match="two classes.*single value"):
        CompressedExtraTreesRegressor(5, t=1.0, loss="zero_one").fit(X, np.full(60, 3.0))


@pytest.mark.parametrize("kind", ["cet", "dte"])
def test_sparse_y_is_densified(data, kind):
    X, _ = data
    Y = (np.random.RandomState(2).rand(60, 3) > 0.6).astype(float)
    dense = _small(kind).fit(X, Y).predict(X)
    for fmt in (sp.csr_matrix, sp.csc_matrix):
        np.testing.assert_array_equal(_small(kind).fit(X, fmt(Y)).predict(X), dense)
    extra = {"task": "regression"} if kind == "dte" else {}   # one 0/1 column is no multi-label data
    one = _small(kind).set_params(**extra).fit(X, sp.csr_matrix(Y[:, :1])).predict(X)
    np.testing.assert_array_equal(one, _small(kind).set_params(**extra).fit(X, Y[:, :1]).predict(X))
