"""Statistical comparison of several methods over several datasets (Demšar 2006).

Every function takes ``scores``: a DataFrame with one row per paired unit (a dataset, or a repeat of one dataset)
and one column per method, holding the mean score of that method on that unit. Functions that depend on the
direction of the metric take ``higher_is_better``; rank 1 is always the best method.

The conventions (average ranks for ties, tie-corrected Friedman statistic, the Nemenyi q_alpha, two-sided
tests, an undefined Iman-Davenport F, degenerate pairs: D15) are documented in config/README.md, "Statistics and
reports". ``tie_correction=False`` gives the textbook Friedman statistic of Demšar (2006, eq. 2).
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import pandas as pd
from scipy import stats as _sst

__all__ = [
    "FriedmanResult", "PairwiseResult", "average_ranks", "friedman_test", "holm_correction",
    "nemenyi_critical_difference", "nemenyi_pvalues", "nemenyi_q_alpha", "pairwise_test", "paired_ttest", "rank_table",
    "smallest_p_value", "wilcoxon_holm",
]


def _validated(scores: pd.DataFrame, min_rows: int = 1) -> pd.DataFrame:
    if not isinstance(scores, pd.DataFrame):
        raise TypeError(f"scores must be a DataFrame (units x methods), got {type(scores).__name__}")
    if scores.shape[1] < 2:
        raise ValueError(f"need at least 2 methods (columns), got {scores.shape[1]}: {list(scores.columns)}")
    if scores.shape[0] < min_rows:
        raise ValueError(f"need at least {min_rows} datasets (rows), got {scores.shape[0]}")
    values = scores.apply(pd.to_numeric, errors="coerce").astype(float)
    missing = values.isna()
    if missing.to_numpy().any():
        names = [f"({values.index[int(r)]}, {values.columns[int(c)]})" for r, c in zip(*np.nonzero(missing.to_numpy()))]
        raise ValueError(f"scores has {len(names)} missing or non-numeric cell(s) (dataset, method): "
                         f"{', '.join(names[:10])}{' ...' if len(names) > 10 else ''}; drop incomplete datasets first")
    return values


def _oriented(values: pd.DataFrame, higher_is_better: bool) -> pd.DataFrame:
    """Scores where larger is always better."""
    return values if higher_is_better else -values


def rank_table(scores: pd.DataFrame, higher_is_better: bool = True) -> pd.DataFrame:
    """Rank of every method on every dataset: 1 = best, ties get the average of the ranks they span."""
    values = _oriented(_validated(scores), higher_is_better)
    ranks = _sst.rankdata(-values.to_numpy(), method="average", axis=1)
    return pd.DataFrame(ranks, index=values.index, columns=values.columns)


def average_ranks(scores: pd.DataFrame, higher_is_better: bool = True) -> pd.Series:
    """Mean over datasets of the per-dataset ranks (1 = best), in the column order of ``scores``."""
    return rank_table(scores, higher_is_better).mean(axis=0).rename("average_rank")


class FriedmanResult(NamedTuple):
    statistic: float              # chi^2_F
    p_value: float                # chi^2 with k-1 degrees of freedom
    iman_davenport: float         # F_F
    iman_davenport_p_value: float  # F with (k-1, (k-1)(N-1)) degrees of freedom
    n_datasets: int
    n_methods: int
    average_ranks: pd.Series


def friedman_test(scores: pd.DataFrame, higher_is_better: bool = True, tie_correction: bool = True) -> FriedmanResult:
    """Friedman test of the hypothesis that all methods perform alike, and its Iman-Davenport F form.

    chi^2_F = 12 N / (k (k+1)) * sum_j (R_j - (k+1)/2)^2, divided by 1 - sum(t^3 - t) / (N k (k^2 - 1)) when
    ``tie_correction`` (t: sizes of the tie groups within each dataset); F_F = (N-1) chi^2_F / (N (k-1) - chi^2_F).
    F_F and its p-value are NaN (undefined) when every dataset ranks the methods identically (chi^2_F = N (k-1)).
    The statistics do not depend on ``higher_is_better``; the returned average ranks do.
    """
    ranks = rank_table(scores, higher_is_better)
    n, k = ranks.shape
    if n < 2:
        raise ValueError(f"the Friedman test needs at least 2 datasets, got {n}")
    mean_ranks = ranks.mean(axis=0)
    chi2 = 12.0 * n / (k * (k + 1)) * float(((mean_ranks - (k + 1) / 2.0) ** 2).sum())
    if tie_correction:
        ties = 0.0
        for row in ranks.to_numpy():
            _, counts = np.unique(row, return_counts=True)
            ties += float((counts ** 3 - counts).sum())
        denominator = 1.0 - ties / (n * k * (k * k - 1))
        chi2 = chi2 / denominator if denominator > 0 else 0.0  # every dataset fully tied: no evidence at all
    p_value = float(_sst.chi2.sf(chi2, k - 1))
    df1, df2 = k - 1, (k - 1) * (n - 1)
    f_denominator = n * (k - 1) - chi2
    if f_denominator <= 1e-12 * max(1.0, chi2):
        # every dataset ranks the methods in the same order: the within-dataset rank variance the F form divides
        # by is zero, so F_F is undefined (NaN), not "inf with p = 0"; the chi^2 form above still applies
        f_stat, f_p = math.nan, math.nan
    else:
        f_stat = (n - 1) * chi2 / f_denominator
        f_p = float(_sst.f.sf(f_stat, df1, df2))
    return FriedmanResult(float(chi2), p_value, float(f_stat), f_p, n, k, mean_ranks.rename("average_rank"))


def nemenyi_q_alpha(n_methods: int, alpha: float = 0.05) -> float:
    """Critical value q_alpha of Demšar (2006, Table 5a): the studentized range quantile (df = inf) over sqrt(2)."""
    if int(n_methods) != n_methods or n_methods < 2:
        raise ValueError(f"n_methods must be an integer >= 2, got {n_methods}")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    return float(_sst.studentized_range.ppf(1.0 - alpha, int(n_methods), np.inf) / math.sqrt(2.0))


def nemenyi_critical_difference(n_methods: int, n_datasets: int, alpha: float = 0.05) -> float:
    """Nemenyi critical difference of average ranks: CD = q_alpha sqrt(k (k+1) / (6 N))."""
    if int(n_datasets) != n_datasets or n_datasets < 1:
        raise ValueError(f"n_datasets must be an integer >= 1, got {n_datasets}")
    k = int(n_methods)
    return nemenyi_q_alpha(k, alpha) * math.sqrt(k * (k + 1) / (6.0 * n_datasets))


def nemenyi_pvalues(scores: pd.DataFrame, higher_is_better: bool = True) -> pd.DataFrame:
    """Pairwise Nemenyi p-values: p < alpha exactly when the average ranks differ by more than the CD at alpha."""
    ranks = average_ranks(scores, higher_is_better)
    n, k = scores.shape
    scale = math.sqrt(k * (k + 1) / (6.0 * n))
    diff = np.abs(ranks.to_numpy()[:, None] - ranks.to_numpy()[None, :])
    p = _sst.studentized_range.sf(diff * math.sqrt(2.0) / scale, k, np.inf)
    p = np.clip(p, 0.0, 1.0)
    np.fill_diagonal(p, 1.0)
    return pd.DataFrame(p, index=ranks.index, columns=ranks.index)


def holm_correction(p_values) -> np.ndarray:
    """Holm step-down adjusted p-values (same order as the input; NaN entries are left out and kept as NaN)."""
    p = np.asarray(p_values, dtype=float)
    out = np.full(p.shape, np.nan)
    valid = np.flatnonzero(~np.isnan(p))
    m = valid.size
    if m == 0:
        return out
    order = valid[np.argsort(p[valid], kind="stable")]
    adjusted = np.maximum.accumulate((m - np.arange(m)) * p[order])
    out[order] = np.minimum(adjusted, 1.0)
    return out


def paired_ttest(a, b) -> tuple[float, float]:
    """Two-sided paired t-test of a - b: (t statistic, p-value), defined also for constant differences."""
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    if d.size < 2:
        raise ValueError(f"a paired t-test needs at least 2 pairs, got {d.size}")
    if np.all(d == d[0]):
        if d[0] == 0:
            return 0.0, 1.0
        return math.copysign(math.inf, d[0]), 0.0
    res = _sst.ttest_rel(a, b)
    return float(res.statistic), float(res.pvalue)


def _wilcoxon(a, b, zero_method: str) -> tuple[float, float]:
    """(p-value, R+ - R-) of the two-sided Wilcoxon signed-rank test of a - b."""
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    nonzero = d[d != 0]
    if nonzero.size == 0:
        return 1.0, 0.0
    r = _sst.rankdata(np.abs(nonzero))
    direction = float(r[nonzero > 0].sum() - r[nonzero < 0].sum())
    res = _sst.wilcoxon(a, b, zero_method=zero_method)
    return float(res.pvalue), direction


def smallest_p_value(test: str, n_units: int, n_methods: int = 2) -> float:
    """The smallest p-value ``test`` can return on ``n_units`` paired units (datasets), whatever the scores.

    "wilcoxon": the two-sided signed-rank test when one method wins on every unit by distinct margins (2 / 2^n
    under the exact distribution scipy uses for small n); "friedman": the chi^2 form of :func:`friedman_test` when
    every unit ranks the ``n_methods`` methods in the same order (chi^2 = n (k - 1)); "ttest": 0, since a paired
    t-test reaches any level from 2 pairs on. A test whose smallest p is at or above alpha cannot call any
    difference significant, so agreeing with a published "not significant" says nothing.
    """
    if int(n_units) != n_units or n_units < 1:
        raise ValueError(f"n_units must be an integer >= 1, got {n_units}")
    n = int(n_units)
    if test == "wilcoxon":
        return _wilcoxon(np.arange(1.0, n + 1.0), np.zeros(n), "wilcox")[0]
    if test == "friedman":
        k = int(n_methods)
        if k < 2:
            raise ValueError(f"the Friedman test needs at least 2 methods, got {n_methods}")
        return float(_sst.chi2.sf(n * (k - 1), k - 1))
    if test == "ttest":
        return 0.0 if n >= 2 else 1.0
    raise ValueError(f"unknown test {test!r}: expected 'wilcoxon', 'friedman' or 'ttest'")


class PairwiseResult(NamedTuple):
    p_values: pd.DataFrame  # symmetric, NaN on the diagonal
    signs: pd.DataFrame     # ">" row better than column, "<" worse, "" when p >= alpha (or on the diagonal)
    direction: pd.DataFrame  # > 0 when the row is better (mean oriented difference, or R+ - R- for Wilcoxon)


def pairwise_test(scores: pd.DataFrame, test: str = "wilcoxon", higher_is_better: bool = True,
                  correction: str | None = None, alpha: float = 0.05, zero_method: str = "wilcox") -> PairwiseResult:
    """Two-sided paired test between every pair of methods, the rows of ``scores`` being the paired units.

    ``test``: "wilcoxon" (signed-rank, scipy defaults) or "ttest" (Student's paired t-test).
    ``correction``: None or "holm" (over the k(k-1)/2 pairs). The sign notation follows the thesis tables:
    ">" when the row method is better than the column method and p < alpha.
    """
    values = _validated(scores, min_rows=2)
    oriented = _oriented(values, higher_is_better)
    names = list(values.columns)
    k = len(names)
    if test not in ("wilcoxon", "ttest"):
        raise ValueError(f"unknown test {test!r}: expected 'wilcoxon' or 'ttest'")
    if correction not in (None, "none", "holm"):
        raise ValueError(f"unknown correction {correction!r}: expected None or 'holm'")
    pairs = [(i, j) for i in range(k) for j in range(i + 1, k)]
    raw, direction = [], []
    for i, j in pairs:
        a, b = oriented.iloc[:, i].to_numpy(), oriented.iloc[:, j].to_numpy()
        if test == "wilcoxon":
            p, dirn = _wilcoxon(a, b, zero_method)
        else:
            _, p = paired_ttest(a, b)
            dirn = float(np.mean(a - b))
        raw.append(p)
        direction.append(dirn)
    adjusted = holm_correction(raw) if correction == "holm" else np.asarray(raw, dtype=float)
    p_mat = np.full((k, k), np.nan)
    d_mat = np.zeros((k, k))
    for (i, j), p, dirn in zip(pairs, adjusted, direction):
        p_mat[i, j] = p_mat[j, i] = p
        d_mat[i, j], d_mat[j, i] = dirn, -dirn
    signs = np.full((k, k), "", dtype=object)
    significant = np.nan_to_num(p_mat, nan=1.0) < alpha
    signs[significant & (d_mat > 0)] = ">"
    signs[significant & (d_mat < 0)] = "<"
    frame = lambda m: pd.DataFrame(m, index=names, columns=names)  # noqa: E731
    return PairwiseResult(frame(p_mat), frame(signs), frame(d_mat))


def wilcoxon_holm(scores: pd.DataFrame, higher_is_better: bool = True, correction: str | None = "holm",
                  alpha: float = 0.05) -> pd.DataFrame:
    """Matrix of pairwise two-sided Wilcoxon signed-rank p-values over datasets, Holm-corrected by default.

    Pass ``correction=None`` for the raw p-values that the thesis tables (6.7, 6.9) print.
    """
    return pairwise_test(scores, "wilcoxon", higher_is_better, correction, alpha).p_values
