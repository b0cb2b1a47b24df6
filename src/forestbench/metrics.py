"""Evaluation measures of the papers, by name, each knowing its direction and what it needs.

Conventions (see config/README.md):
- ``lrap`` drops test samples without any positive label before averaging, as the papers do (scikit-learn would
  score such a row 1.0).
- ``coverage_error`` and ``label_ranking_loss`` follow scikit-learn's definitions over all test rows.
- ``macro_r2`` averages the per-output r^2 with the test-set mean as reference (gradient-boosting paper eq. 26).
- ``arrmse`` uses the training-set mean as the default model (deep tree-ensembles paper eq. 2), computed per split.
- Classification scores from a regression forest are thresholded at 0.5 (binary) or arg-maxed (multi-class).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import scipy.sparse as sp
from sklearn import metrics as skm

from forestbench.errors import ConfigError


def _dense(Y) -> np.ndarray:
    return Y.toarray() if sp.issparse(Y) else np.asarray(Y)


def _2d(a) -> np.ndarray:
    a = _dense(a)
    return a.reshape(-1, 1) if a.ndim == 1 else a


def lrap(Y_true, Y_score) -> float:
    Y_true, Y_score = _2d(Y_true), _2d(Y_score)
    keep = Y_true.sum(axis=1) > 0
    if not keep.any():
        return float("nan")
    return float(skm.label_ranking_average_precision_score(Y_true[keep], Y_score[keep]))


def coverage_error(Y_true, Y_score) -> float:
    return float(skm.coverage_error(_2d(Y_true), _2d(Y_score)))


def label_ranking_loss(Y_true, Y_score) -> float:
    return float(skm.label_ranking_loss(_2d(Y_true), _2d(Y_score)))


def hamming_loss(Y_true, Y_score) -> float:
    return float(np.mean(_2d(Y_true) != (_2d(Y_score) >= 0.5)))


def macro_r2(Y_true, Y_pred) -> float:
    Y_true, Y_pred = _2d(Y_true), _2d(Y_pred)
    ss_res = ((Y_true - Y_pred) ** 2).sum(axis=0)
    ss_tot = ((Y_true - Y_true.mean(axis=0)) ** 2).sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        r2 = 1.0 - ss_res / ss_tot
    return float(np.mean(r2))


def arrmse(Y_true, Y_pred, Y_train) -> float:
    Y_true, Y_pred, Y_train = _2d(Y_true), _2d(Y_pred), _2d(Y_train)
    num = ((Y_true - Y_pred) ** 2).sum(axis=0)
    den = ((Y_true - Y_train.mean(axis=0)) ** 2).sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.mean(np.sqrt(num / den)))


def mse(Y_true, Y_pred) -> float:
    return float(np.mean((_2d(Y_true) - _2d(Y_pred)) ** 2))


def _labels(Y_score) -> np.ndarray:
    S = _2d(Y_score)
    return (S[:, 0] >= 0.5).astype(int) if S.shape[1] == 1 else S.argmax(axis=1)


def _true_labels(Y_true) -> np.ndarray:
    T = _2d(Y_true)
    return T[:, 0].astype(int) if T.shape[1] == 1 else T.argmax(axis=1)


def accuracy(Y_true, Y_score) -> float:
    return float(np.mean(_true_labels(Y_true) == _labels(Y_score)))


def error_rate(Y_true, Y_score) -> float:
    return 1.0 - accuracy(Y_true, Y_score)


@dataclass(frozen=True)
class Metric:
    name: str
    func: Callable
    higher_is_better: bool
    needs_train: bool = False

    def __call__(self, Y_true, Y_pred, Y_train=None) -> float:
        if self.needs_train:
            return self.func(Y_true, Y_pred, Y_train)
        return self.func(Y_true, Y_pred)


METRICS: dict[str, Metric] = {m.name: m for m in [
    Metric("lrap", lrap, True),
    Metric("coverage_error", coverage_error, False),
    Metric("label_ranking_loss", label_ranking_loss, False),
    Metric("hamming_loss", hamming_loss, False),
    Metric("macro_r2", macro_r2, True),
    Metric("arrmse", arrmse, False, needs_train=True),
    Metric("mse", mse, False),
    Metric("accuracy", accuracy, True),
    Metric("error_rate", error_rate, False),
]}


def get_metric(name: str) -> Metric:
    try:
        return METRICS[name]
    except KeyError:
        raise ConfigError(f"unknown metric {name!r} (known: {', '.join(sorted(METRICS))})") from None
