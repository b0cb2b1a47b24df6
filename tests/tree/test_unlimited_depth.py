"""A max_depth beyond any reachable depth means unlimited, in the trees, the forests and the cost model."""
import numpy as np

from forestbench.workflow import resources
from forestbench.forest import RandomForestRegressor
from forestbench.tree import DecisionTreeRegressor


def test_huge_max_depth_means_unlimited():
    """Before: OverflowError from the tree kernel (max_depth=2**63) and from the cost model."""
    rng = np.random.default_rng(0)
    X, y = rng.random((40, 3)), rng.random(40)
    deep = DecisionTreeRegressor(max_depth=2**63, random_state=0).fit(X, y)
    free = DecisionTreeRegressor(random_state=0).fit(X, y)
    np.testing.assert_array_equal(deep.predict(X), free.predict(X))
    RandomForestRegressor(n_estimators=2, max_depth=2**63, random_state=0).fit(X, y)
    assert resources.tree_nodes(100, 1, 2**63) == resources.tree_nodes(100, 1, None)
