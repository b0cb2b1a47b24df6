"""Tree ensembles on the forestbench tree kernel, with optional random projections of the output space."""
from forestbench.ensemble._forest import ExtraTreesRegressor, RandomForestRegressor
from forestbench.ensemble._importance import oob_permutation_importance

__all__ = ["RandomForestRegressor", "ExtraTreesRegressor", "oob_permutation_importance"]
