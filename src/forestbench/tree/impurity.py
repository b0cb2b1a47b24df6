"""Node impurities of CART in plain numpy: the reference definitions the lecture slides use.

The tree kernel grows regression trees only; its criterion is the node variance of the (split) targets, averaged over
the outputs. On one-hot class indicators that variance summed over the outputs is exactly the Gini impurity
Σ p(1 − p), so a forest of our regression trees on one-hot labels is a Gini classification forest. Entropy and
misclassification have no kernel criterion: the functions below define them (and Gini), for the teaching examples
and as the oracle of the kernel's variance-as-Gini identity.
"""
from __future__ import annotations

import numpy as np


def _proportions(counts) -> np.ndarray:
    c = np.asarray(counts, dtype=np.float64).ravel()
    if c.size == 0 or np.any(c < 0) or not np.all(np.isfinite(c)) or c.sum() <= 0:
        raise ValueError(f"class counts must be non-negative, finite and not all zero, got {counts!r}")
    return c / c.sum()


def entropy(counts, base: float = 2.0) -> float:
    """−Σ p log p over the class proportions of ``counts``, with 0 log 0 = 0 (log base 2 by default: bits)."""
    p = _proportions(counts)
    p = p[p > 0]
    return float(-(p * np.log(p)).sum() / np.log(base)) + 0.0


def gini(counts) -> float:
    """Σ p (1 − p): the probability of a mistake when the label is guessed at random with the node's proportions."""
    p = _proportions(counts)
    return float((p * (1.0 - p)).sum())


def misclassification(counts) -> float:
    """1 − max p: the error rate of predicting the node's majority class."""
    return float(1.0 - _proportions(counts).max())


def variance(y) -> float:
    """The regression impurity: (1/|n|) Σ (y_i − ȳ)², averaged over the columns of a 2-D ``y``."""
    y = np.asarray(y, dtype=np.float64)
    y = y.reshape(len(y), -1)
    return float(((y - y.mean(axis=0)) ** 2).mean(axis=0).mean())
