"""Ranking measures scored at every stage of staged tuning: ours vs scikit-learn's, same inputs, same process.

    python benchmarks/bench_metrics.py [--repeats 7] [--out benchmarks/out/bench_metrics.json]

Also times, from 80 labels on, our previous LRAP (``previous_searched``: sorted rows and one binary search for all
positive labels at once, in NumPy), which the compiled pass of ``forestbench._metrics`` replaced; the tests hold
the compiled pass to its numbers bit for bit (tests/test_metrics.py).

Staged tuning (thesis ch.6 Tables 6.5-6.7) scores LRAP on the validation rows after every boosting stage of every
candidate, thousands of calls per tuning job. Each case times one call of ``forestbench.metrics.lrap`` and of
``sklearn.metrics.label_ranking_average_precision_score`` on the same random labels and scores (ties included, as
early stages give them), interleaved and with the order flipped on every other repeat; it reports the medians, the
ratio scikit-learn / ours, and the largest difference between the two values.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

import numpy as np
from sklearn.metrics import label_ranking_average_precision_score

from forestbench.metrics import LRAP_COMPILED_MIN_LABELS, _lrap_per_row, lrap

# (name, validation rows, labels, labels per row): the holdout (20 %) of the training part of each set
CASES = [("emotions-sized", 78, 6, 1.87), ("medical-sized", 67, 45, 1.25), ("enron-sized", 226, 53, 3.38),
         ("bibtex-sized", 976, 159, 2.40), ("corel5k-sized", 900, 374, 3.52), ("delicious-sized", 2584, 983, 19.0)]


def previous_searched(relevant, scores):
    """Per-row LRAP of rows with a positive label, as forestbench computed it from 80 labels on before its
    compiled pass: the rows' values sorted, every positive label's two ranks found by binary searches run for all
    of them at once, the per-row sums formed by ``np.add.reduceat``."""
    n, d = scores.shape
    rows, cols = np.nonzero(relevant)                                 # row-major: labels in order within a row
    counts = np.bincount(rows, minlength=n)
    ptr = np.concatenate([[0], np.cumsum(counts)])
    s = scores[rows, cols]
    ascending = np.sort(scores, axis=1).ravel()
    base = rows * d
    rank_all = d - (_lower_bound(ascending, base, base + d, s) - base)
    positive_sorted = s[np.lexsort((s, rows))]                        # each row's positive scores, ascending
    start = ptr[rows]
    rank_rel = counts[rows] - (_lower_bound(positive_sorted, start, ptr[rows + 1], s) - start)
    per_row = np.add.reduceat(rank_rel / rank_all, ptr[:-1]) / counts
    per_row[counts == d] = 1.0
    return per_row


def _lower_bound(flat, lo, hi, values):
    """For each query, the first position p in [lo, hi) of the ascending run ``flat[lo:hi]`` with
    ``flat[p] >= value`` (``hi`` when there is none), all queries searched at once."""
    lo, hi = lo.copy(), hi.copy()
    steps = int(np.ceil(np.log2(int((hi - lo).max()) + 1))) if lo.size else 0
    last = flat.size - 1
    for _ in range(steps):
        active = lo < hi
        mid = (lo + hi) >> 1
        right = active & (flat[np.minimum(mid, last)] < values)
        lo = np.where(right, mid + 1, lo)
        hi = np.where(active & ~right, mid, hi)
    return lo


def previous_lrap(Y, S):
    """``forestbench.metrics.lrap`` with the previous search (same checks and rows)."""
    import forestbench.metrics as M

    compiled = M._lrap_searched
    M._lrap_searched = previous_searched
    try:
        per_row, keep = _lrap_per_row(Y, S, "lrap")
    finally:
        M._lrap_searched = compiled
    return float(np.cumsum(per_row[keep])[-1] / keep.sum())


def _problem(rows, labels, per_row, seed):
    rng = np.random.default_rng(seed)
    Y = (rng.random((rows, labels)) < per_row / labels).astype(float)
    Y[Y.sum(axis=1) == 0, rng.integers(labels)] = 1.0
    S = np.round(rng.normal(size=(rows, labels)), 2)   # two decimals: ties occur
    return Y, S


def _clock(fn, *args, calls):
    start = time.perf_counter()
    for _ in range(calls):
        value = fn(*args)
    return (time.perf_counter() - start) / calls, value


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--out", default="benchmarks/out/bench_metrics.json")
    args = parser.parse_args(argv)
    results = []
    for name, rows, labels, per_row in CASES:
        Y, S = _problem(rows, labels, per_row, seed=len(results))
        calls = 3 if rows > 1000 else 50
        contenders = [("ours", lrap), ("sklearn", label_ranking_average_precision_score)]
        if labels >= LRAP_COMPILED_MIN_LABELS:
            contenders.append(("previous", previous_lrap))
        times = {who: [] for who, _ in contenders}
        values, diff = {}, 0.0
        for r in range(args.repeats):
            for who, fn in (contenders if r % 2 == 0 else contenders[::-1]):
                seconds, values[who] = _clock(fn, Y, S, calls=calls)
                times[who].append(seconds)
            diff = max(diff, abs(values["ours"] - values["sklearn"]))
        row = {"case": name, "rows": rows, "labels": labels, "ours_ms": 1e3 * statistics.median(times["ours"]),
               "sklearn_ms": 1e3 * statistics.median(times["sklearn"]), "max_abs_difference": diff}
        row["sklearn_over_ours"] = row["sklearn_ms"] / row["ours_ms"]
        line = (f"{name:17s} {rows:5d} x {labels:4d}: ours {row['ours_ms']:9.3f} ms, scikit-learn "
                f"{row['sklearn_ms']:9.3f} ms, ratio {row['sklearn_over_ours']:7.1f}, |difference| {diff:.1e}")
        if "previous" in times:
            row["previous_ms"] = 1e3 * statistics.median(times["previous"])
            row["previous_over_ours"] = row["previous_ms"] / row["ours_ms"]
            row["same_as_previous"] = values["previous"] == values["ours"]
            line += (f"; previous {row['previous_ms']:9.3f} ms ({row['previous_over_ours']:.1f}x ours, "
                     f"{'same value' if row['same_as_previous'] else 'DIFFERENT value'})")
        results.append(row)
        print(line)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps({"repeats": args.repeats, "load_average": list(os.getloadavg()), "cases": results},
                              indent=2) + "\n")
    tmp.replace(out)


if __name__ == "__main__":
    main()
