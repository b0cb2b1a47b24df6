"""Fit time of a random forest on the original outputs vs on per-tree Gaussian output projections (thesis §5.3.5).

A generated delicious-sized multi-label problem (n=12920 learning rows, p=500 inputs, d=983 labels, about 19 labels
per row, skewed label frequencies), t=10 trees, k=sqrt(p), fully grown trees, one thread. Timed side by side in one
run, medians over repeats:

- ``ours-original-dense``  : forestbench RandomForestRegressor on the dense label matrix (which it grows as CSR:
  ``forestbench._label_layout``);
- ``ours-original-dense-criterion`` : the same with that conversion switched off, the dense criterion users got
  before it (the same trees, to the bit);
- ``ours-original-sparse`` : the same on the CSR label matrix;
- ``ours-gaussian-q{q}``   : per-tree Gaussian projection (Algorithm 5.2) with q components (sparse Y, dense Z);
- ``ours-subsample-q{q}``  : per-tree random output subspace of q labels on the dense label matrix (``--subsample``),
  split on its 0/1 pattern, grown as CSR; ``-scaled``: split on the scaled Z under the dense criterion, as before
  ``forestbench.projections.split_projection``;
- ``sklearn-dense``        : scikit-learn's RandomForestRegressor on the dense label matrix (same t, k, n_min).

The thesis reports 3348 s -> 311 s (10.8x) for q = 25 on the real delicious with t = 100. LRAP on 3185 held-out rows
is printed as a sanity check that the projected forest is not degenerate.

Usage: python benchmarks/bench_projections.py [--repeats 3] [--sklearn-repeats 1] [--q 25] [--subsample Q ...]
                                             [--out results.json]
       python benchmarks/bench_projections.py --quick     # small problem, seconds (smoke run)
"""
from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time

import numpy as np
import scipy.sparse as sp
from sklearn.ensemble import RandomForestRegressor as SkForest
from sklearn.metrics import label_ranking_average_precision_score

from forestbench import _label_layout
from forestbench._io import write_json
from forestbench.forest import RandomForestRegressor
from forestbench.forest import _forest


class _SplitTargetsBefore:
    """The split targets of a projected forest as they were before ``split_projection``: ``Z = Y Φᵀ`` as the
    product gives it (of dense labels, a dense Z of values 0 and sqrt(d / q) under the dense criterion)."""

    def __init__(self, Y, Y_grow, phi, n):
        self.Z = _forest.check_targets(_forest.project_outputs(Y, phi), n, name="projected outputs")[0]

    def for_weights(self, weight):
        return self.Z


class ScaledSubspaceForest(RandomForestRegressor):
    """Our forest splitting on the scaled Z of a random output subspace, as it did before ``split_projection``."""

    def fit(self, X, y, sample_weight=None):
        saved = _forest._SplitTargets
        _forest._SplitTargets = _SplitTargetsBefore
        try:
            return super().fit(X, y, sample_weight)
        finally:
            _forest._SplitTargets = saved


class DenseCriterionForest(RandomForestRegressor):
    """Our forest with the dense criterion forced on a dense label matrix (no conversion to CSR)."""

    def fit(self, X, y, sample_weight=None):
        saved = _label_layout.SPARSE_LABELS_MAX_DENSITY
        _label_layout.SPARSE_LABELS_MAX_DENSITY = 0.0
        try:
            return super().fit(X, y, sample_weight)
        finally:
            _label_layout.SPARSE_LABELS_MAX_DENSITY = saved


def make_problem(n, p, d, labels_per_row, seed):
    """Inputs X ~ N(0, 1); label j fires when a sparse linear score of X plus noise exceeds the quantile that gives it
    a Zipf-like frequency; frequencies sum to ``labels_per_row``. Returns X (float64) and Y (CSR, 0/1)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    freq = 1.0 / np.arange(1, d + 1) ** 0.8
    freq = np.minimum(freq * labels_per_row / freq.sum(), 0.5)
    freq *= labels_per_row / freq.sum()
    W = sp.random(p, d, density=10.0 / p, random_state=rng, data_rvs=rng.standard_normal, format="csc")
    scores = np.asarray(X @ W.toarray()) + rng.standard_normal((n, d))
    thresholds = np.array([np.quantile(scores[:, j], 1.0 - freq[j]) for j in range(d)])
    Y = sp.csr_matrix((scores > thresholds).astype(np.float64))
    return X, Y


def lrap(Y, scores):
    Y = Y.toarray() if sp.issparse(Y) else Y
    keep = Y.sum(axis=1) > 0
    return float(label_ranking_average_precision_score(Y[keep], scores[keep]))


def timed_fit(make, X, Y, repeats):
    walls, cpus, model = [], [], None
    for _ in range(repeats):
        model = make()
        c0, w0 = time.process_time(), time.perf_counter()
        model.fit(X, Y)
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
    return statistics.median(walls), statistics.median(cpus), walls, model


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=12920)
    ap.add_argument("--n-test", type=int, default=3185)
    ap.add_argument("--p", type=int, default=500)
    ap.add_argument("--d", type=int, default=983)
    ap.add_argument("--labels", type=float, default=19.0)
    ap.add_argument("--trees", type=int, default=10)
    ap.add_argument("--q", type=int, nargs="+", default=[25])
    ap.add_argument("--subsample", type=int, nargs="*", default=[],
                    help="q of random output subspaces to grow on the dense labels, split on the 0/1 pattern (as "
                         "today) and on the scaled Z (as before)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--sklearn-repeats", type=int, default=1)
    ap.add_argument("--no-sklearn", action="store_true")
    ap.add_argument("--no-dense", action="store_true", help="skip our forest on the dense label matrix")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", help="write the measurements as JSON here")
    ap.add_argument("--quick", action="store_true", help="small problem for a smoke run")
    args = ap.parse_args(argv)
    if args.quick:
        args.n, args.n_test, args.p, args.d, args.labels, args.trees = 800, 200, 50, 100, 5.0, 3

    X, Y = make_problem(args.n + args.n_test, args.p, args.d, args.labels, args.seed)
    Xl, Xt = X[: args.n], X[args.n:]
    Yl, Yt = Y[: args.n], Y[args.n:]
    Yl_dense = Yl.toarray()
    print(f"problem: n={args.n} (+{args.n_test} test) p={args.p} d={args.d} "
          f"labels/row={Yl.nnz / args.n:.2f} trees={args.trees} k=sqrt(p) threads=1", flush=True)

    common = dict(n_estimators=args.trees, max_features="sqrt", min_samples_split=2, n_jobs=1,
                  random_state=args.seed)
    runs = []
    if not args.no_dense:
        runs.append(("ours-original-dense", lambda: RandomForestRegressor(**common), Yl_dense, args.repeats))
        runs.append(("ours-original-dense-criterion", lambda: DenseCriterionForest(**common), Yl_dense,
                     args.repeats))
    runs.append(("ours-original-sparse", lambda: RandomForestRegressor(**common), Yl, args.repeats))
    for q in args.q:
        runs.append((f"ours-gaussian-q{q}",
                     lambda q=q: RandomForestRegressor(output_projection="gaussian", n_components=q,
                                                       projection_sharing="per_tree", **common),
                     Yl, args.repeats))
    for q in args.subsample:
        for name, cls in ((f"ours-subsample-q{q}", RandomForestRegressor),
                          (f"ours-subsample-q{q}-scaled", ScaledSubspaceForest)):
            runs.append((name, lambda q=q, cls=cls: cls(output_projection="subsample", n_components=q,
                                                        projection_sharing="per_tree", **common),
                         Yl_dense, args.repeats))
    if not args.no_sklearn:
        runs.append(("sklearn-dense",
                     lambda: SkForest(n_estimators=args.trees, max_features="sqrt", min_samples_split=2, n_jobs=1,
                                      random_state=args.seed),
                     Yl_dense, args.sklearn_repeats))

    results = {}
    for name, make, Yfit, reps in runs:
        wall, cpu, walls, model = timed_fit(make, Xl, Yfit, reps)
        score = lrap(Yt, model.predict(Xt))
        entry = {"wall_s_median": wall, "cpu_s_median": cpu, "wall_s": walls, "lrap_test": score}
        if hasattr(model, "projection_time_"):
            entry["projection_s"] = model.projection_time_
            entry["n_nodes"] = model.n_nodes_
        results[name] = entry
        print(f"{name:30s} wall {wall:9.2f} s  cpu {cpu:9.2f} s  LRAP {score:.4f}"
              + (f"  proj {entry['projection_s']:.3f} s" if "projection_s" in entry else ""), flush=True)
        del model

    pairs = []
    for q in args.q:
        pairs += [(b, f"ours-gaussian-q{q}") for b in ("ours-original-dense", "ours-original-sparse")]
    pairs += [("ours-original-dense-criterion", "ours-original-dense")]
    pairs += [(f"ours-subsample-q{q}-scaled", f"ours-subsample-q{q}") for q in args.subsample]
    pairs += [(f"ours-subsample-q{q}", "ours-original-dense") for q in args.subsample]
    pairs += [("sklearn-dense", b) for b in ("ours-original-dense", "ours-original-sparse")]
    ratios = {}
    for num, den in pairs:
        if num in results and den in results:
            ratios[f"{num} / {den}"] = {
                "wall": results[num]["wall_s_median"] / results[den]["wall_s_median"],
                "cpu": results[num]["cpu_s_median"] / results[den]["cpu_s_median"],
            }
    print("ratios of medians (thesis: 10.8x for q=25 with t=100 on the real delicious; CPU time is the robust one "
          "on a shared machine):")
    for k, v in ratios.items():
        print(f"  {k:48s} wall {v['wall']:6.2f}x   cpu {v['cpu']:6.2f}x")
    if args.out:
        write_json(args.out, {"args": vars(args), "results": results, "ratios": ratios,
                              "python": sys.version, "machine": platform.platform()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
