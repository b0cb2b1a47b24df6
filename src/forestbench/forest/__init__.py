"""Random forests and extra-trees on the forestbench tree kernel, grown on the original outputs or on random
projections of the output space (one projection shared by the forest, or a fresh one per tree), with leaves
labelled in the original output space (thesis ch.5); a forest per output as the single-target baseline."""
from forestbench.forest._forest import ExtraTreesRegressor, RandomForestRegressor
from forestbench.forest._importance import oob_permutation_importance
from forestbench.forest._single_target import SingleTargetForestRegressor

__all__ = ["RandomForestRegressor", "ExtraTreesRegressor", "SingleTargetForestRegressor",
           "oob_permutation_importance"]
