"""forestbench's own Cython tree-growing kernel.

``DecisionTreeRegressor`` and ``ExtraTreeRegressor`` follow the scikit-learn
estimator API and add split targets (grow on Z, label leaves with Y), sparse
CSR targets with an O(nnz) criterion, sparse CSC inputs and a leaves-only
(sparse when Y is sparse) value store whose leaves can be relabelled with
``Tree.set_leaf_values``. See ``_classes.DecisionTreeRegressor`` for details.
"""
from forestbench.tree._classes import DecisionTreeRegressor, ExtraTreeRegressor, Tree

__all__ = ["DecisionTreeRegressor", "ExtraTreeRegressor", "Tree"]
