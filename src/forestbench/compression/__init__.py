"""l1-compressed extra-trees (rET, thesis ch.7): an extra-trees forest whose node indicator is re-weighted and pruned
by an l1-penalised linear model over its nodes."""
from forestbench.compression._compressed_trees import CompressedExtraTreesRegressor

__all__ = ["CompressedExtraTreesRegressor"]
