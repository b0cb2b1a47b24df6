"""Linear models used with forests: the FS_eps (monotone Lasso) path on sparse lifted designs and the Lasso
baseline of thesis Table 7.1."""
from forestbench.linear._lasso import LassoCVBaseline
from forestbench.linear._stagewise import ForwardStagewisePath, column_scaling_factors, forward_stagewise_path

__all__ = ["ForwardStagewisePath", "forward_stagewise_path", "column_scaling_factors", "LassoCVBaseline"]
