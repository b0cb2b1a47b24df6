"""Ranking measures scored at every stage of staged tuning: ours vs scikit-learn's, same inputs, same process.

    python benchmarks/bench_metrics.py [--repeats 7] [--out benchmarks/out/bench_metrics.json]

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

from forestbench.metrics import lrap

# (name, validation rows, labels, labels per row): the holdout (20 %) of the training part of each set
CASES = [("emotions-sized", 78, 6, 1.87), ("medical-sized", 67, 45, 1.25), ("enron-sized", 226, 53, 3.38),
         ("bibtex-sized", 976, 159, 2.40), ("corel5k-sized", 900, 374, 3.52), ("delicious-sized", 2584, 983, 19.0)]


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
        ours, theirs, diff = [], [], 0.0
        for r in range(args.repeats):
            order = (("ours", lrap), ("sklearn", label_ranking_average_precision_score))
            for who, fn in (order if r % 2 == 0 else order[::-1]):
                seconds, value = _clock(fn, Y, S, calls=calls)
                (ours if who == "ours" else theirs).append(seconds)
                if who == "ours":
                    mine = value
                else:
                    ref = value
            diff = max(diff, abs(mine - ref))
        row = {"case": name, "rows": rows, "labels": labels, "ours_ms": 1e3 * statistics.median(ours),
               "sklearn_ms": 1e3 * statistics.median(theirs), "max_abs_difference": diff}
        row["sklearn_over_ours"] = row["sklearn_ms"] / row["ours_ms"]
        results.append(row)
        print(f"{name:17s} {rows:5d} x {labels:4d}: ours {row['ours_ms']:9.3f} ms, scikit-learn "
              f"{row['sklearn_ms']:9.3f} ms, ratio {row['sklearn_over_ours']:7.1f}, |difference| {diff:.1e}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps({"repeats": args.repeats, "load_average": list(os.getloadavg()), "cases": results},
                              indent=2) + "\n")
    tmp.replace(out)


if __name__ == "__main__":
    main()
