"""Input validation shared by the deep tree-ensemble and the competitors of the DTE paper."""
from __future__ import annotations

import scipy.sparse as sp
from sklearn.utils.validation import validate_data

# The cascade joins X with dense feature blocks (tree embeddings, output-space predictions) in every layer, and the
# competitors' libraries densify or copy X anyway, so a sparse X (medical's and enron's word indicators are stored
# sparse) is made dense once, here. The DTE paper's datasets hold at most a few thousand rows and inputs (medical:
# 978 x 1449, 5.7 MB as float32), so the dense copy is small beside the forests.
_SPARSE_FORMATS = ("csr", "csc", "coo")


def validate_dense(estimator, X, *, reset, dtype, **kwargs):
    """``validate_data`` that accepts a sparse ``X`` and returns it as a dense array of ``dtype`` (the same values:
    predictions for a sparse X equal those for its dense copy)."""
    X = validate_data(estimator, X, reset=reset, dtype=dtype, accept_sparse=_SPARSE_FORMATS, **kwargs)
    return X.toarray(order="C") if sp.issparse(X) else X   # C order, as a dense X: BLAS sums in the same order
