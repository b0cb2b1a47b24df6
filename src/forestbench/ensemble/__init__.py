"""Tree ensembles on the forestbench tree kernel, with optional random projections of the output space."""
from forestbench.ensemble._forest import ExtraTreesRegressor, RandomForestRegressor

__all__ = ["RandomForestRegressor", "ExtraTreesRegressor"]
