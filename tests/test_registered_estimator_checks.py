"""scikit-learn's estimator checks on every estimator class that the method registry names inside forestbench.

One instance per class, at its defaults but for a few trees and folds (so the module stays fast). Every check that
fails is listed in ``EXPECTED_FAILURES`` with its reason (by name, or by the id of one variant of a check that runs
several times), and xfail is strict: a listed check that starts passing fails here until it is taken off the list.
The forests and the trees are checked in their own modules (listed in ``CHECKED_ELSEWHERE``); the wrappers of
XGBoost, LightGBM and CatBoost only where their library is installed. About 80 s on a loaded 2-core machine.
"""
from __future__ import annotations

import functools
import importlib.util

import pytest
from sklearn.utils.estimator_checks import estimator_checks_generator

from forestbench.workflow import methods
from forestbench.boosting._gradient_boosting import (ArtificialGBRTRegressor, GBMORTRegressor, GBRTRelabelRPORegressor,
                                            GBRTRPORegressor, STGradientBoostingRegressor)
from forestbench.peers._boosting_libraries import (CatBoostMulti, LightGBMPerOutput, SklearnGBRTPerOutput,
                                                  XGBoostMultiOutputTree, XGBoostOneOutputPerTree)
from forestbench.compression._compressed_trees import CompressedExtraTreesRegressor
from forestbench.deep._cascade import DeepTreeEnsemble
from forestbench.peers._dte_competitors import (EnsembleOfClassifierChains, EnsembleOfRegressorChains,
                                                   MultiLabelDeepForest, RakelOverlapping, RandomForestExtraTrees,
                                                   TunedMLkNN, TunedMLP)
from forestbench.forest._single_target import SingleTargetForestRegressor
from forestbench.linear import LassoCVBaseline
from forestbench.peers._sklearn_compositions import TreeAdaBoostClassifier

# checked by tests/forest/test_sklearn_api.py and tests/tree/test_tree_estimator_checks.py
CHECKED_ELSEWHERE = {"forestbench.forest:RandomForestRegressor", "forestbench.forest:ExtraTreesRegressor",
                     "forestbench.tree:DecisionTreeRegressor", "forestbench.tree:ExtraTreeRegressor"}
# wrapper class -> the library it needs
PEER_LIBRARIES = {XGBoostMultiOutputTree: "xgboost", XGBoostOneOutputPerTree: "xgboost",
                  LightGBMPerOutput: "lightgbm", CatBoostMulti: "catboost"}

INSTANCES = [
    GBMORTRegressor(n_estimators=5, random_state=0),
    STGradientBoostingRegressor(n_estimators=5, random_state=0),
    GBRTRPORegressor(n_estimators=5, random_state=0),
    GBRTRelabelRPORegressor(n_estimators=5, random_state=0),
    ArtificialGBRTRegressor(n_estimators=5, random_state=0),
    SklearnGBRTPerOutput(n_estimators=5, random_state=0),
    XGBoostMultiOutputTree(n_estimators=5, random_state=0),
    XGBoostOneOutputPerTree(n_estimators=5, random_state=0),
    LightGBMPerOutput(n_estimators=5, random_state=0),
    CatBoostMulti(n_estimators=20, learning_rate=0.5, random_state=0),  # fewer rounds underfit check_regressors_train
    CompressedExtraTreesRegressor(n_estimators=5, cv=3, random_state=0),
    # task given: with task="auto" a single 0/1 column (the checks' binary targets) is read as multi-label data
    DeepTreeEnsemble(n_estimators=4, max_layers=2, pca_fractions=(1,), pca_validation=2, os_folds=2,
                     task="regression", random_state=0),
    RandomForestExtraTrees(n_estimators=5, random_state=0),
    MultiLabelDeepForest(first_n_estimators=4, step_n_estimators=2, max_n_estimators=8, cv=2, max_layers=2,
                         random_state=0),
    EnsembleOfRegressorChains(n_chains=2, random_state=0),
    EnsembleOfClassifierChains(n_chains=2, random_state=0),
    TunedMLP(neurons=(20,), depths=(1,), cv=2, random_state=0),
    TunedMLkNN(k_values=(3,), s_values=(1.0,), cv=2, random_state=0),
    RakelOverlapping(random_state=0),
    SingleTargetForestRegressor(n_estimators=5, random_state=0),
    LassoCVBaseline(cv=3, n_alphas=10, random_state=0),
    TreeAdaBoostClassifier(n_estimators=5, random_state=0),
]
INSTANCES = [e for e in INSTANCES
             if type(e) not in PEER_LIBRARIES or importlib.util.find_spec(PEER_LIBRARIES[type(e)])]

REQUIRES_Y = {"check_requires_y_none": "fit(X, None) fails in the target validation with a message that does not "
                                       "say y is required"}
READ_ONLY_Y = "the boosting kernel needs a writable y: a read-only (memory-mapped) y is refused"
BOOSTING = {
    "check_regressors_train(readonly_memmap=True)": READ_ONLY_Y,
    "check_regressors_train(readonly_memmap=True,X_dtype=float32)": READ_ONLY_Y,
    "check_regressor_data_not_an_array": READ_ONLY_Y,
    "check_regressors_no_decision_function": "decision_function gives the raw additive scores f(x) before the "
                                             "logistic link, as scikit-learn's gradient boosting classifiers do",
}
# the checks that fit on real-valued or one-column targets
NEED_REAL_VALUED_Y = [
    "check_fit_score_takes_y", "check_estimators_overwrite_params", "check_dont_overwrite_parameters",
    "check_estimators_fit_returns_self", "check_readonly_memmap_input", "check_n_features_in_after_fitting",
    "check_positive_only_tag_during_fit", "check_estimators_dtypes", "check_dtype_object",
    "check_pipeline_consistency", "check_estimators_nan_inf", "check_estimators_pickle",
    "check_f_contiguous_array_estimator", "check_regressors_train", "check_regressor_data_not_an_array",
    "check_regressor_multioutput", "check_regressors_no_decision_function", "check_supervised_y_2d",
    "check_regressors_int", "check_methods_sample_order_invariance", "check_methods_subset_invariance",
    "check_fit2d_1feature", "check_dict_unchanged", "check_fit_idempotent", "check_fit_check_is_fitted",
    "check_n_features_in", "check_fit2d_predict1d", "check_estimator_sparse_array", "check_estimator_sparse_matrix",
    "check_estimator_sparse_tag",
]
MULTI_LABEL_ONLY = {name: "multi-label only by design: fits 0/1 label matrices of two or more columns, and the "
                          "check's targets are real-valued or one column" for name in NEED_REAL_VALUED_Y}
ONE_SAMPLE = {"check_fit2d_1sample": "multi-label only by design: one sample is refused as too few label columns' "
                                     "rows, not with the message the check looks for"}
NO_N_ITER = {"check_non_transformer_estimators_n_iter": "has max_iter but no n_iter_ (the iterations of the "
                                                        "selected inner model are not exposed)"}

EXPECTED_FAILURES: dict[type, dict[str, str]] = {
    GBMORTRegressor: BOOSTING, STGradientBoostingRegressor: BOOSTING, GBRTRPORegressor: BOOSTING,
    GBRTRelabelRPORegressor: BOOSTING, ArtificialGBRTRegressor: BOOSTING,
    CatBoostMulti: {
        "check_estimator_sparse_tag": "CSR input is let through to CatBoost, which fails on it inside its library "
                                      "instead of a refusal in the input validation",
        "check_estimator_sparse_array": "CSR input is let through to CatBoost, which fails on it inside its "
                                        "library instead of a refusal in the input validation",
        "check_fit2d_1sample": "CatBoost refuses one sample (all features constant) with its own message",
    },
    CompressedExtraTreesRegressor: {
        **REQUIRES_Y,
        "check_dtype_object": "a y of strings fails in the target validation without the 'Unknown label type' "
                              "message",
    },
    DeepTreeEnsemble: REQUIRES_Y, RandomForestExtraTrees: REQUIRES_Y, EnsembleOfRegressorChains: REQUIRES_Y,
    MultiLabelDeepForest: {**MULTI_LABEL_ONLY, **REQUIRES_Y},
    EnsembleOfClassifierChains: {**MULTI_LABEL_ONLY, **ONE_SAMPLE, **REQUIRES_Y},
    TunedMLkNN: {**MULTI_LABEL_ONLY, **ONE_SAMPLE, **REQUIRES_Y},
    RakelOverlapping: {**MULTI_LABEL_ONLY, **ONE_SAMPLE, **REQUIRES_Y},
    TunedMLP: {**NO_N_ITER, **REQUIRES_Y},
    LassoCVBaseline: NO_N_ITER,
    TreeAdaBoostClassifier: {"check_dont_overwrite_parameters": "fit sets the public attribute 'estimator' (not a "
                                                                "constructor parameter)"},
}


def _check_id(check) -> str:
    """The check's name, with the arguments of a variant: ``check_regressors_train(readonly_memmap=True)``."""
    if isinstance(check, functools.partial):
        args = ",".join(f"{k}={getattr(v, '__name__', v)}" for k, v in check.keywords.items())
        return f"{check.func.__name__}({args})" if args else check.func.__name__
    return check.__name__


def _cases():
    """(estimator, check) params; a check listed by its name or by its variant's id is a strict xfail."""
    cases, seen = [], {}
    for estimator in INSTANCES:
        expected = EXPECTED_FAILURES.get(type(estimator), {})
        for est, check in estimator_checks_generator(estimator, mark=None):
            check_id = _check_id(check)
            seen.setdefault(type(estimator), set()).update({check_id, check_id.split("(")[0]})
            reason = expected.get(check_id) or expected.get(check_id.split("(")[0])
            marks = [pytest.mark.xfail(reason=reason, strict=True)] if reason else []
            cases.append(pytest.param(est, check, id=f"{type(estimator).__name__}-{check_id}", marks=marks))
    return cases, seen


CASES, CHECK_IDS = _cases()


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("estimator, check", CASES)
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_every_registered_forestbench_estimator_is_checked():
    methods._discover()
    checked = {type(e) for e in INSTANCES} | set(PEER_LIBRARIES)
    missing = sorted(spec.estimator for spec in methods.METHODS.values()
                     if spec.estimator.startswith("forestbench.") and spec.estimator not in CHECKED_ELSEWHERE
                     and spec.estimator_class() not in checked)
    assert not missing, f"registered estimators without scikit-learn's checks: {missing}"


def test_expected_failures_name_checks_that_run():
    assert set(EXPECTED_FAILURES) <= {type(e) for e in INSTANCES} | set(PEER_LIBRARIES)
    unknown = {cls.__name__: sorted(set(expected) - CHECK_IDS[cls])
               for cls, expected in EXPECTED_FAILURES.items() if cls in CHECK_IDS and set(expected) - CHECK_IDS[cls]}
    assert not unknown, unknown
