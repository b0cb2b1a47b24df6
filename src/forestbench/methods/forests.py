"""forestbench's own tree estimators (Cython kernel): multi-output, split targets, sparse label matrices."""
from forestbench.methods import register

register("decision_tree", "forestbench.tree:DecisionTreeRegressor", sparse_y=True,
         description="forestbench DecisionTreeRegressor (multi-output, split targets, sparse labels)")
register("random_forest", "forestbench.ensemble:RandomForestRegressor", sparse_y=True,
         description="forestbench RandomForestRegressor, optionally on random output projections (thesis ch.5)")
register("extra_trees", "forestbench.ensemble:ExtraTreesRegressor", sparse_y=True,
         description="forestbench ExtraTreesRegressor, optionally on random output projections (thesis ch.5)")
register("extra_tree", "forestbench.tree:ExtraTreeRegressor", sparse_y=True,
         description="forestbench ExtraTreeRegressor (one extremely randomised tree, multi-output)")
