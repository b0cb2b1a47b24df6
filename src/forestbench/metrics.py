"""Evaluation measures of the papers, by name, each knowing its direction and what it needs.

Their conventions (LRAP without positive labels, the reference mean of macro-r² and aRRMSE, thresholds,
undefined scores, a metric per task: D14) are documented in config/README.md, "Metrics". An undefined score is
``None`` (NaN from a single metric's ``__call__``) with its reason, and is recorded as ``null``.
"""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from typing import Callable

import numpy as np
import scipy.sparse as sp

from forestbench.errors import ConfigError


class UndefinedScore(ValueError):
    """The test rows do not define this score (e.g. r² of a constant target); the message says why."""


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
    """Label ranking average precision over the rows with at least one positive label (D14), as scikit-learn's
    ``label_ranking_average_precision_score`` computes it on those rows, in whole-matrix operations.

    scikit-learn ranks each row with two ``scipy.stats.rankdata`` calls; staged tuning scores up to 1000 stages of
    every candidate this way, and on emotions (6 labels) those calls took 95 % of a tuning job's time. For a
    positive label j with score s, LRAP needs the number of labels scoring >= s and the number of positive labels
    scoring >= s, ties counted as scikit-learn's "max" ranks count them. Up to ``LRAP_COMPILED_MIN_LABELS`` labels every
    row is sorted with its labels (:func:`_lrap_sorted_rows`); with more, the positive labels' ranks are counted in
    a compiled pass over each row (:func:`_lrap_searched`).
    Both agree with scikit-learn to rounding (tests/test_metrics.py; `benchmarks/bench_metrics.py`)."""
    per_row, keep = _lrap_per_row(Y_true, Y_score, "lrap")
    if not keep.any():
        raise UndefinedScore("no test row has a positive label")
    return float(np.cumsum(per_row[keep])[-1] / keep.sum())   # rows summed in order, as scikit-learn sums them


def lrap_all_rows(Y_true, Y_score) -> float:
    """LRAP over every row, a row without a positive label scoring 1: scikit-learn's convention, which the
    boosting paper's published LRAP follows (config/README.md, Metrics: birds, 46 % label-less rows, shows it).

    On one set of rows the two readings are an increasing affine map of each other,
    ``lrap_all_rows = (1 - e) * lrap + e`` with ``e`` the share of label-less rows, so a selection on a fixed
    validation set picks the same candidate and stage under either."""
    per_row, keep = _lrap_per_row(Y_true, Y_score, "lrap_all_rows")
    per_row[~keep] = 1.0
    return float(np.cumsum(per_row)[-1] / per_row.size)


def _lrap_per_row(Y_true, Y_score, name: str) -> tuple[np.ndarray, np.ndarray]:
    """Each row's LRAP (0 where the row has no positive label) and the mask of rows with one."""
    Y_true, Y_score = _2d(Y_true), _2d(Y_score)
    if Y_true.shape != Y_score.shape:
        raise ValueError(f"{name}: y_true has shape {Y_true.shape}, y_score {Y_score.shape}")
    relevant = Y_true != 0
    if (relevant & (Y_true != 1)).any():
        raise ValueError(f"{name}: y_true must be a 0/1 label indicator matrix")
    keep = relevant.any(axis=1)
    per_row = np.zeros(keep.size)
    if not keep.any():
        return per_row, keep
    relevant, scores = relevant[keep], np.asarray(Y_score[keep], dtype=np.float64)
    if not np.isfinite(scores).all():
        # a diverging model (e.g. a boosting candidate at a large learning rate): its ranking is undefined, so the
        # staged selection skips that stage instead of failing the tuning job (scikit-learn refuses such scores)
        raise UndefinedScore(f"{int((~np.isfinite(scores)).sum())} score(s) are NaN or infinite")
    compiled = scores.shape[1] >= LRAP_COMPILED_MIN_LABELS
    per_row[keep] = (_lrap_searched if compiled else _lrap_sorted_rows)(relevant, scores)
    return per_row, keep


#: from this many labels on, LRAP counts the positive labels' ranks in a compiled pass over each row instead of
#: sorting the labels with the rows (the crossover of the whole-matrix search it replaced, about 60-100 labels,
#: `benchmarks/bench_metrics.py`; kept, so that every score stays the number it was)
LRAP_COMPILED_MIN_LABELS = 80


def _lrap_sorted_rows(relevant, scores):
    """Per-row LRAP: each row sorted by decreasing score together with its labels; a label's two ranks are read
    at the end of its tie group (the order within a group does not matter)."""
    n, d = scores.shape
    order = np.argsort(-scores, axis=1)
    ranked = np.take_along_axis(scores, order, axis=1)
    rel_ranked = np.take_along_axis(relevant, order, axis=1)
    # position of the last label of each tie group, for every sorted position
    last = np.empty((n, d), dtype=np.intp)
    last[:, -1] = d - 1
    is_end = ranked[:, :-1] != ranked[:, 1:]
    last[:, :-1] = np.where(is_end, np.arange(d - 1), d - 1)
    last = np.minimum.accumulate(last[:, ::-1], axis=1)[:, ::-1]
    rank_all = last + 1.0                                             # labels scoring >= s
    rank_rel = np.take_along_axis(np.cumsum(rel_ranked, axis=1), last, axis=1)   # positive labels scoring >= s
    ratio = np.zeros((n, d))
    np.put_along_axis(ratio, order, np.where(rel_ranked, rank_rel / rank_all, 0.0), axis=1)   # back to label order
    n_rel = relevant.sum(axis=1)
    per_row = np.cumsum(ratio, axis=1)[:, -1] / n_rel
    per_row[n_rel == d] = 1.0                                         # every label positive: 1 (scikit-learn's rule)
    return per_row


def _lrap_searched(relevant, scores):
    """Per-row LRAP counting each row's positive labels' ranks in one compiled pass (``forestbench._metrics``):
    d comparisons per positive label for rows with few of them, d log m through a histogram otherwise. The same
    numbers to the bit as the whole-matrix search it replaced (sorted rows, binary searches for all positive labels
    at once; kept in benchmarks/bench_metrics.py, the tests' oracle), 2.5x faster on delicious' validation rows
    (2584 x 983)."""
    from forestbench._metrics import lrap_rows

    return lrap_rows(np.ascontiguousarray(relevant, dtype=np.uint8), np.ascontiguousarray(scores, dtype=np.float64))


def coverage_error(Y_true, Y_score) -> float:
    return float(_skm().coverage_error(_2d(Y_true), _2d(Y_score)))


def label_ranking_loss(Y_true, Y_score) -> float:
    return float(_skm().label_ranking_loss(_2d(Y_true), _2d(Y_score)))


#: a label is predicted where its score reaches this (Hamming loss; ML-kNN's 0/1 outputs)
LABEL_THRESHOLD = 0.5


def predicted_labels(Y_score) -> np.ndarray:
    """The 0/1 label matrix that label scores predict (as floats)."""
    return (_2d(Y_score) >= LABEL_THRESHOLD).astype(np.float64)


def hamming_loss(Y_true, Y_score) -> float:
    return float(np.mean(_2d(Y_true) != predicted_labels(Y_score)))


def macro_r2(Y_true, Y_pred) -> float:
    """Mean over outputs of r² (test-set mean as reference); a constant test output scores as in scikit-learn's
    ``r2_score``: 1 if predicted exactly, else 0. Undefined when there is no output or every output is constant."""
    Y_true, Y_pred = _2d(Y_true), _2d(Y_pred)
    if Y_true.shape[1] == 0 or Y_true.shape[0] == 0:
        raise UndefinedScore("no test output")
    ss_res = ((Y_true - Y_pred) ** 2).sum(axis=0)
    ss_tot = ((Y_true - Y_true.mean(axis=0)) ** 2).sum(axis=0)
    constant = ss_tot == 0
    if constant.all():
        raise UndefinedScore(f"every one of the {len(constant)} test output(s) is constant (r² needs variance)")
    r2 = np.where(constant, np.where(ss_res == 0, 1.0, 0.0), 1.0 - ss_res / np.where(constant, 1.0, ss_tot))
    return float(np.mean(r2))


def arrmse(Y_true, Y_pred, Y_train) -> float:
    Y_true, Y_pred, Y_train = _2d(Y_true), _2d(Y_pred), _2d(Y_train)
    num = ((Y_true - Y_pred) ** 2).sum(axis=0)
    den = ((Y_true - Y_train.mean(axis=0)) ** 2).sum(axis=0)
    if (den == 0).any():
        raise UndefinedScore(f"{int((den == 0).sum())} output(s) whose test values all equal the training mean")
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


def _both_classes(Y_true: np.ndarray) -> None:
    positives = int(np.count_nonzero(Y_true))
    if positives == 0 or positives == Y_true.size:
        raise UndefinedScore("the test labels are all " + ("negative" if positives == 0 else "positive"))


def micro_auc(Y_true, Y_score) -> float:
    Y_true = _2d(Y_true)
    _both_classes(Y_true)
    return float(_skm().roc_auc_score(Y_true, _2d(Y_score), average="micro"))


def micro_average_precision(Y_true, Y_score) -> float:
    Y_true = _2d(Y_true)
    _both_classes(Y_true)
    return float(_skm().average_precision_score(Y_true, _2d(Y_score), average="micro"))


def normalized_mse(Y_true, Y_pred) -> float:
    """Mean squared error divided by the variance of the test outputs (the error on whitened outputs)."""
    Y_true, Y_pred = _2d(Y_true), _2d(Y_pred)
    var = Y_true.var(axis=0)
    if (var == 0).any():
        raise UndefinedScore(f"{int((var == 0).sum())} test output(s) with zero variance")
    return float(np.mean(((Y_true - Y_pred) ** 2).mean(axis=0) / var))


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
        """The score, NaN when undefined (see :meth:`evaluate` for the reason)."""
        value, _ = self.evaluate(Y_true, Y_pred, Y_train)
        return float("nan") if value is None else value

    def evaluate(self, Y_true, Y_pred, Y_train=None) -> tuple[float | None, str | None]:
        """``(value, None)``, or ``(None, reason)`` when the test rows do not define the score."""
        try:
            value = self.func(Y_true, Y_pred, Y_train) if self.needs_train else self.func(Y_true, Y_pred)
        except UndefinedScore as exc:
            return None, str(exc)
        if not math.isfinite(value):
            return None, f"the computation gave {value}"
        return value, None


def score_all(metrics, Y_true, Y_pred, Y_train=None, context: str = "", log=None) -> tuple[dict, dict]:
    """Scores of ``metrics`` (``None`` for an undefined one) and ``{metric: reason}`` of the undefined ones; each
    undefined score is reported on ``log`` (default: standard error, i.e. the job's log) as a warning."""
    log = log or (lambda msg: print(msg, file=sys.stderr))
    scores, undefined = {}, {}
    for m in metrics:
        value, reason = m.evaluate(Y_true, Y_pred, Y_train)
        scores[m.name] = value
        if reason is not None:
            undefined[m.name] = reason
            log(f"warning: {context + ': ' if context else ''}{m.name} is undefined ({reason}); recorded as null")
    return scores, undefined


METRICS: dict[str, Metric] = {m.name: m for m in [
    Metric("lrap", lrap, True, MULTILABEL),
    Metric("lrap_all_rows", lrap_all_rows, True, MULTILABEL),
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
