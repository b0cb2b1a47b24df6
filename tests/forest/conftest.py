"""Fixtures for the forest tests: every forest test runs on the real tree kernel and on a small
scikit-learn based stand-in that follows the kernel's contract (used ONLY here, to test the forest logic on its own).
"""
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.tree import DecisionTreeRegressor as _SkTree

from forestbench.forest import _forest


class _ContractStore:
    """The part of the kernel's ``Tree`` the forest uses (``apply``, ``predict``, ``set_leaf_values``,
    ``node_count``) over a fitted scikit-learn tree and a numpy table of node values."""

    def __init__(self, sk_tree, value):
        self._sk = sk_tree
        self.value_ = value

    @property
    def node_count(self):
        return self._sk.tree_.node_count

    def apply(self, X):
        return self._sk.apply(X)

    def predict(self, X):
        return self.value_[self.apply(X)]

    def set_leaf_values(self, leaf_node_ids, values):
        values = values.toarray() if sp.issparse(values) else np.asarray(values, dtype=float)
        assert np.all(self._sk.tree_.children_left[leaf_node_ids] == -1)
        self.value_[leaf_node_ids] = values


class SklearnContractTree:
    """The kernel contract (``fit(X, y, sample_weight, split_targets)``, the ensembles' hook ``_fit_validated``,
    ``predict``, ``apply``, ``tree_``, ``model_bytes_``) on top of scikit-learn's tree: grow on the split targets,
    then relabel every leaf with the weighted mean of ``y`` (numpy, via ``apply``)."""

    def __init__(self, splitter="best", max_features=None, max_depth=None, min_samples_split=2,
                 min_samples_leaf=1, max_leaf_nodes=None, weighted_counts=False, count_constant_features=False,
                 random_state=None):
        assert not weighted_counts  # scikit-learn's tree counts rows, as the forests ask
        # scikit-learn's tree always counts constant features towards max_features: the forest logic tested with
        # this stand-in does not depend on the rule, which the kernel's own tests cover
        self._tree = _SkTree(splitter=splitter, max_features=max_features, max_depth=max_depth,
                             min_samples_split=min_samples_split, min_samples_leaf=min_samples_leaf,
                             max_leaf_nodes=max_leaf_nodes, random_state=random_state)

    def fit(self, X, y, sample_weight=None, split_targets=None):
        y = y.toarray() if sp.issparse(y) else np.asarray(y, dtype=float)
        z = y if split_targets is None else split_targets
        z = z.toarray() if sp.issparse(z) else z
        self._tree.fit(X, z, sample_weight=sample_weight)
        value = leaf_means(self._tree.apply(X), y, sample_weight, self._tree.tree_.node_count)
        self.tree_ = _ContractStore(self._tree, value)
        self.model_bytes_ = value.nbytes + 40 * self.tree_.node_count
        return self

    def _fit_validated(self, X, Y, Z=None, sample_weight=None, *, y_one_d=False):
        return self.fit(X, Y, sample_weight=sample_weight, split_targets=Z)

    def apply(self, X):
        return self._tree.apply(X)

    def predict(self, X):
        return self.tree_.predict(X)


def leaf_means(leaves, y, weight, n_nodes):
    """numpy oracle: weighted mean of the rows of y in every leaf (zero rows for nodes without samples)."""
    y = y.toarray() if sp.issparse(y) else np.asarray(y, dtype=float)
    w = np.ones(len(leaves)) if weight is None else np.asarray(weight, dtype=float)
    sums = np.zeros((n_nodes, y.shape[1]))
    np.add.at(sums, leaves, w[:, None] * y)
    mass = np.bincount(leaves, weights=w, minlength=n_nodes)
    out = np.zeros_like(sums)
    ok = mass > 0
    out[ok] = sums[ok] / mass[ok, None]
    return out


def kernel_tree_class():
    try:
        from forestbench.tree import DecisionTreeRegressor
    except ImportError as exc:  # reported in the -ra summary, never silent
        pytest.skip(f"tree kernel (forestbench.tree) not importable: {exc}")
    return DecisionTreeRegressor


@pytest.fixture(params=["kernel", "sklearn_contract"])
def tree_class(request, monkeypatch):
    cls = kernel_tree_class() if request.param == "kernel" else SklearnContractTree
    monkeypatch.setattr(_forest, "DecisionTreeRegressor", cls)
    return cls


@pytest.fixture(scope="session")
def multilabel():
    """A small synthetic multi-label problem: X (240, 12), Y (240, 9) in {0, 1}, test part (120, ...)."""
    from sklearn.datasets import make_multilabel_classification

    X, Y = make_multilabel_classification(n_samples=360, n_features=12, n_classes=9, n_labels=3,
                                          random_state=0)
    return X[:240].astype(float), Y[:240].astype(float), X[240:].astype(float), Y[240:].astype(float)
