"""Evaluation measures of the papers, by name, each knowing its direction and what it needs.

Conventions (see config/README.md):
- ``lrap`` drops test samples without any positive label before averaging, as the papers do (scikit-learn would
  score such a row 1.0).
- ``coverage_error`` and ``ranking_loss`` (label ranking loss) follow scikit-learn's definitions over all test rows.
- ``macro_r2`` averages the per-output r^2 with the test-set mean as reference (gradient-boosting paper eq. 26).
- ``arrmse`` uses the training-set mean as the default model (deep tree-ensembles paper eq. 2), computed per split.
- Classification scores from a regression forest are thresholded at 0.5 (binary) or arg-maxed (multi-class).
- A metric applies to the tasks it is defined for; an experiment mixing tasks scores each dataset with the metrics
  of its task.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import scipy.sparse as sp

from forestbench.errors import ConfigError


def _skm():
    """scikit-learn's metrics, imported on first use (planning reads this registry without scoring anything)."""
    from sklearn import metrics

    return metrics


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
    return float(_skm().label_ranking_average_precision_score(Y_true[keep], Y_score[keep]))


def coverage_error(Y_true, Y_score) -> float:
    return float(_skm().coverage_error(_2d(Y_true), _2d(Y_score)))


def label_ranking_loss(Y_true, Y_score) -> float:
    return float(_skm().label_ranking_loss(_2d(Y_true), _2d(Y_score)))


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


def half_macro_r2(Y_true, Y_pred) -> float:
    """macro-r² over the first half of the outputs: the original outputs of the noisy-output study, whose second
    half are permuted copies (gradient-boosting paper, Table 7)."""
    Y_true, Y_pred = _2d(Y_true), _2d(Y_pred)
    half = Y_true.shape[1] // 2
    return macro_r2(Y_true[:, :half], Y_pred[:, :half])


def one_error(Y_true, Y_score) -> float:
    """Fraction of samples whose top-scored label is not relevant (ties broken by the lowest label index)."""
    Y_true, Y_score = _2d(Y_true), _2d(Y_score)
    top = Y_score.argmax(axis=1)
    return float(np.mean(Y_true[np.arange(len(top)), top] == 0))


def micro_auc(Y_true, Y_score) -> float:
    return float(_skm().roc_auc_score(_2d(Y_true), _2d(Y_score), average="micro"))


def micro_average_precision(Y_true, Y_score) -> float:
    return float(_skm().average_precision_score(_2d(Y_true), _2d(Y_score), average="micro"))


def normalized_mse(Y_true, Y_pred) -> float:
    """Mean squared error divided by the variance of the test outputs (the error on whitened outputs)."""
    Y_true, Y_pred = _2d(Y_true), _2d(Y_pred)
    return float(np.mean(((Y_true - Y_pred) ** 2).mean(axis=0) / Y_true.var(axis=0)))


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


MULTILABEL = ("multilabel",)
REGRESSION = ("regression", "multioutput_regression")
CLASSIFICATION = ("binary", "multiclass")


@dataclass(frozen=True)
class Metric:
    name: str
    func: Callable
    higher_is_better: bool
    tasks: tuple[str, ...]
    needs_train: bool = False

    def applies_to(self, task: str) -> bool:
        return task in self.tasks

    def __call__(self, Y_true, Y_pred, Y_train=None) -> float:
        if self.needs_train:
            return self.func(Y_true, Y_pred, Y_train)
        return self.func(Y_true, Y_pred)


METRICS: dict[str, Metric] = {m.name: m for m in [
    Metric("lrap", lrap, True, MULTILABEL),
    Metric("coverage_error", coverage_error, False, MULTILABEL),
    Metric("ranking_loss", label_ranking_loss, False, MULTILABEL),
    Metric("hamming_loss", hamming_loss, False, MULTILABEL),
    Metric("one_error", one_error, False, MULTILABEL),
    Metric("micro_auc", micro_auc, True, MULTILABEL),
    Metric("micro_average_precision", micro_average_precision, True, MULTILABEL),
    Metric("macro_r2", macro_r2, True, REGRESSION),
    Metric("half_macro_r2", half_macro_r2, True, REGRESSION),
    Metric("arrmse", arrmse, False, REGRESSION, needs_train=True),
    Metric("mse", mse, False, REGRESSION),
    Metric("normalized_mse", normalized_mse, False, REGRESSION),
    Metric("accuracy", accuracy, True, CLASSIFICATION),
    Metric("error_rate", error_rate, False, CLASSIFICATION),
]}


def get_metric(name: str) -> Metric:
    try:
        return METRICS[name]
    except KeyError:
        raise ConfigError(f"unknown metric {name!r} (known: {', '.join(sorted(METRICS))})") from None
