"""The lecture slides' impurity definitions and worked examples, and our tree kernel's criterion against them.

The kernel is regression-only (node variance, averaged over outputs); entropy, Gini and misclassification are the
reference functions of ``forestbench.tree.impurity``. The kernel is tied to them through the identity
"variance of one-hot class indicators, summed over the classes = Gini impurity".
"""
import itertools
import math

import numpy as np
import pytest

from forestbench.tree import DecisionTreeRegressor
from forestbench.tree.impurity import entropy, gini, misclassification, variance


def test_fish_root_split_entropies_as_printed_on_the_slide():
    # root [311 tuna, 289 salmon] -> [23, 266] and [288, 23]; the slide prints 0.999, 0.401 and 0.381 (log base 2)
    assert round(entropy([311, 289]), 3) == 0.999
    assert round(entropy([23, 266]), 3) == 0.401
    assert round(entropy([288, 23]), 3) == 0.381
    # in nats they would read 0.692 / 0.278 / 0.264: the slide's numbers are bits
    assert round(entropy([311, 289], base=math.e), 3) == 0.692
    # the split is informative: the weighted child entropy is far below the parent's
    children = (289 * entropy([23, 266]) + 311 * entropy([288, 23])) / 600
    assert entropy([311, 289]) - children == pytest.approx(0.608, abs=1e-3)


@pytest.mark.parametrize("n_classes", [2, 3, 5])
def test_extreme_values_of_the_impurities(n_classes):
    uniform, pure = [7] * n_classes, [0] * (n_classes - 1) + [9]
    assert entropy(uniform) == pytest.approx(math.log2(n_classes))   # maximum: log L
    assert entropy(pure) == 0.0                                       # minimum, with 0 log 0 = 0
    assert gini(uniform) == pytest.approx(1 - 1 / n_classes)
    assert gini(pure) == 0.0
    assert misclassification(uniform) == pytest.approx(1 - 1 / n_classes)
    assert misclassification(pure) == 0.0
    # any other distribution lies strictly in between
    mixed = list(range(1, n_classes + 1))
    for h in (entropy, gini, misclassification):
        assert h(pure) < h(mixed) < h(uniform)


def test_gini_is_the_error_of_guessing_by_the_proportions():
    counts = [5, 3, 2]
    p = np.array(counts) / 10
    # the true label ~ p, the guess ~ p independently: P(guess != label) by enumeration
    error = sum(p[a] * p[b] for a, b in itertools.product(range(3), repeat=2) if a != b)
    assert gini(counts) == pytest.approx(error)
    assert misclassification(counts) == pytest.approx(1 - 0.5)
    assert gini(counts) == pytest.approx(1 - (p ** 2).sum())


def test_bad_counts_are_refused():
    for bad in ([], [0, 0], [-1, 3], [np.nan, 1]):
        with pytest.raises(ValueError, match="class counts"):
            entropy(bad)


def test_kernel_node_impurity_is_the_slides_regression_impurity():
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(40, 2))
    y = np.sin(6 * X[:, 0]) + rng.normal(0, 0.3, 40)
    tree = DecisionTreeRegressor(max_depth=2, random_state=0).fit(X, y)
    t = tree.tree_
    assert t.impurity[0] == pytest.approx(variance(y))       # H(n) = 1/|n| sum (y - mean)^2 at the root
    leaves = tree.apply(X.astype(np.float32))
    for node in np.unique(leaves):
        assert t.impurity[node] == pytest.approx(variance(y[leaves == node]), abs=1e-12)


def test_kernel_variance_on_one_hot_labels_is_gini():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(90, 3))
    c = (X[:, 0] > 0).astype(int) + (X[:, 1] > 0.5).astype(int)     # three classes
    Y = np.eye(3)[c]
    tree = DecisionTreeRegressor(max_depth=3, random_state=0).fit(X, Y)
    t = tree.tree_
    leaves = tree.apply(X.astype(np.float32))
    # the kernel averages the per-output variances: times the number of classes, it is the Gini impurity
    assert 3 * t.impurity[0] == pytest.approx(gini(np.bincount(c, minlength=3)))
    for node in np.unique(leaves):
        counts = np.bincount(c[leaves == node], minlength=3)
        assert 3 * t.impurity[node] == pytest.approx(gini(counts), abs=1e-12)
    # and the root split is the Gini-best one: no other threshold on any feature lowers the weighted Gini more
    left = X[:, t.feature[0]] <= t.threshold[0]
    best = left.mean() * gini(np.bincount(c[left], minlength=3)) + (~left).mean() * gini(
        np.bincount(c[~left], minlength=3))
    for j in range(3):
        for s in np.unique(X[:, j].astype(np.float32))[:-1]:
            m = X[:, j].astype(np.float32) <= s
            other = m.mean() * gini(np.bincount(c[m], minlength=3)) + (~m).mean() * gini(
                np.bincount(c[~m], minlength=3))
            assert other >= best - 1e-12
