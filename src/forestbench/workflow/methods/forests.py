"""forestbench's own tree estimators (Cython kernel): multi-output, split targets, sparse label matrices."""
from forestbench.workflow.methods import register
from forestbench.workflow.resources import OUR_D_HALF, OUR_SPARSE_C_FIT, OUR_SPARSE_CRITERION_COST, forest_cost


def our_forest_cost(n, p, d, params, *, sparse=False, density=None, label_density=None):
    """Our forests: the forest model with our kernel's per-output cost (``OUR_D_HALF``) and sparse split search
    (``OUR_SPARSE_C_FIT``), and our estimators' default rule for constant features (``count_constant_features:
    false``) unless the variant sets it."""
    return forest_cost(n, p, d, {"count_constant_features": False, **(params or {})}, sparse=sparse,
                       density=density, label_density=label_density, d_half=OUR_D_HALF,
                       label_cost=OUR_SPARSE_CRITERION_COST, sparse_c_fit=OUR_SPARSE_C_FIT)


def single_tree_cost(n, p, d, params, *, sparse=False, density=None, label_density=None):
    """One tree: the forest model with one tree."""
    return our_forest_cost(n, p, d, {**(params or {}), "n_estimators": 1}, sparse=sparse, density=density,
                           label_density=label_density)


register("decision_tree", "forestbench.tree:DecisionTreeRegressor", sparse_y=True, cost=single_tree_cost,
         description="forestbench DecisionTreeRegressor (multi-output, split targets, sparse labels)")
register("random_forest", "forestbench.forest:RandomForestRegressor", sparse_y=True, cost=our_forest_cost,
         description="forestbench RandomForestRegressor, optionally on random output projections (thesis ch.5)")
register("extra_trees", "forestbench.forest:ExtraTreesRegressor", sparse_y=True, cost=our_forest_cost,
         description="forestbench ExtraTreesRegressor, optionally on random output projections (thesis ch.5)")
register("extra_tree", "forestbench.tree:ExtraTreeRegressor", sparse_y=True, cost=single_tree_cost,
         description="forestbench ExtraTreeRegressor (one extremely randomised tree, multi-output)")
