"""scikit-learn's estimator checks on forestbench's DecisionTreeRegressor and ExtraTreeRegressor.

All checks pass (the parameter constraints are tested in
test_estimator_layer.py); the only one not run is
check_array_api_input, which scikit-learn itself skips unless SCIPY_ARRAY_API
is set (the kernel works on numpy / scipy arrays only).
"""
from sklearn.utils.estimator_checks import parametrize_with_checks

from forestbench.tree import DecisionTreeRegressor, ExtraTreeRegressor


@parametrize_with_checks([DecisionTreeRegressor(random_state=0),
                          DecisionTreeRegressor(splitter="random", max_features="sqrt",
                                                random_state=0),
                          ExtraTreeRegressor(random_state=0)])
def test_sklearn_compatible(estimator, check):
    check(estimator)
