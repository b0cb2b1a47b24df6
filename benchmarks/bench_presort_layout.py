"""The boosting loop's presorted tree builder: its two layouts side by side, per tree, at the problem sizes of ch. 6.

The "partition" layout partitions every feature's order at every split (O(p m) for a node of m rows, whatever the
k features drawn); "gather" keeps one order and each row's node, and takes a drawn feature's node order from its
master order (``tree/_presort.pyx``, ``PresortBuilder``). Both grow the same trees bit for bit (a test checks it);
this measures what each costs, and which one ``layout="auto"`` takes.

Shapes (rows as in a tuning candidate's fit rows, 80 % of the published learning set):

``friedman1_ind``  240 x 80 continuous inputs, one split target (st-gbrt, Tables 6.1 and 6.3)
``cal500``         400 x 68 continuous, one split target (gbrt-rpo)
``corel5k``        3600 x 499 binary at 2 %, one split target (gbrt-rpo) and 374 (gbmort)
``delicious``      10336 x 500 binary at 10 %, one split target (gbrt-rpo)
``bibtex``         4720 x 1836 binary at 4 %, one split target (gbrt-rpo)

For k in the Table 6.5 grid's max_features (sqrt, 0.1, 0.2, 0.5) and 3, 5 and 8 leaves: microseconds per tree,
median over repeats of ``grow(..., repeat=N)`` (N trees in C, the draws going on), the layouts alternating and their
order flipped every other repeat; ratio partition / gather; the layout auto takes.

    python benchmarks/bench_presort_layout.py [--shapes friedman1_ind,corel5k] [--repeats 5] [--out DIR]

Writes ``bench_presort_layout.csv`` to --out (default benchmarks/out) and prints a Markdown table.
"""
from __future__ import annotations

import argparse
import csv
import math
import statistics
import time
from pathlib import Path

import numpy as np

from forestbench.tree._presort import PresortBuilder, choose_layout

SHAPES = {
    # name: (rows, features, binary density or None for continuous, split targets)
    "friedman1_ind": (240, 80, None, 1),
    "cal500": (400, 68, None, 1),
    "corel5k": (3600, 499, 0.02, 1),
    "corel5k_gbmort": (3600, 499, 0.02, 374),
    "delicious": (10336, 500, 0.10, 1),
    "bibtex": (4720, 1836, 0.04, 1),
}
FRACTIONS = ["sqrt", 0.1, 0.2, 0.5]
LEAVES = [3, 5, 8]


def problem(n, p, density, q, seed=0):
    rng = np.random.default_rng(seed)
    if density is None:
        X = rng.uniform(size=(n, p)).astype(np.float32)
    else:
        X = (rng.random((n, p)) < density).astype(np.float32)
    W = np.zeros((p, q))
    W[: min(p, 10)] = rng.normal(size=(min(p, 10), q))
    Z = X @ W + rng.normal(size=(n, q))
    return X, Z


def k_of(fraction, p):
    return max(1, int(math.sqrt(p)) if fraction == "sqrt" else int(fraction * p))


def per_tree_us(builder, Z, trees, seed):
    t = time.perf_counter()
    builder.grow(Z, seed=seed, repeat=trees)
    return (time.perf_counter() - t) / trees * 1e6


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", default="benchmarks/out")
    args = ap.parse_args(argv)
    rows = []
    for name in args.shapes.split(","):
        n, p, density, q = SHAPES[name]
        X, Z = problem(n, p, density, q)
        # about 0.2 s of trees per measurement at the partition layout's pace
        for fraction in FRACTIONS:
            k = k_of(fraction, p)
            for leaves in LEAVES:
                builders = {lay: PresortBuilder(X, leaves, k, False, layout=lay) for lay in ("partition", "gather")}
                probe = per_tree_us(builders["partition"], Z, 3, 1)
                trees = max(3, int(2e5 / max(probe, 1.0)))
                times = {"partition": [], "gather": []}
                for r in range(args.repeats):
                    order = ("partition", "gather") if r % 2 == 0 else ("gather", "partition")
                    for lay in order:
                        times[lay].append(per_tree_us(builders[lay], Z, trees, 1 + r))
                med = {lay: statistics.median(v) for lay, v in times.items()}
                rows.append({"shape": name, "n": n, "p": p, "q": q, "max_features": fraction, "k": k,
                             "leaves": leaves, "trees": trees, "partition_us": round(med["partition"], 2),
                             "gather_us": round(med["gather"], 2),
                             "ratio": round(med["partition"] / med["gather"], 2),
                             "auto": choose_layout(p, leaves, k)})
                print(rows[-1], flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "bench_presort_layout.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    print("\n| shape | k | leaves | partition us/tree | gather us/tree | partition / gather | auto |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['shape']} | {r['max_features']} ({r['k']}) | {r['leaves']} | {r['partition_us']} | "
              f"{r['gather_us']} | {r['ratio']} | {r['auto']} |")


if __name__ == "__main__":
    main()
