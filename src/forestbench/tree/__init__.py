"""forestbench's own Cython tree-growing kernel (issue 4).

``DecisionTreeRegressor`` follows the scikit-learn estimator API and adds
split targets (grow on Z, label leaves with Y), sparse CSR targets with an
O(nnz) criterion, sparse CSC inputs and a leaves-only (sparse when Y is
sparse) value store. See ``_classes.DecisionTreeRegressor`` for details.
"""
from forestbench.tree._classes import DecisionTreeRegressor, Tree

__all__ = ["DecisionTreeRegressor", "Tree"]
