"""Deep tree-ensembles (DTE paper): where a layer's fit time goes, and how the embedding PCA scales with trees.

Two measurements on yeast (river's copy of Mulan yeast, 2417 x 103, 14 labels; the first ``--rows`` rows):

1. **Layer time split.** ``DeepTreeEnsemble(variant="X_OS_TE")`` with ``--trees`` trees per forest and
   ``--layers`` layers; per layer the wall seconds of the embedding forests, the decision-path extraction, the PCA,
   the output-space inner CV and the prediction forests, plus the process's peak resident memory.
2. **PCA scaling.** One embedding RF with ``t`` and with ``10 t`` trees on half of the rows; the node-indicator
   extraction and the PCA (:class:`TreeEmbedding.fit_transform`) of all rows are timed, interleaved over
   ``--repeats`` repeats; the ratio (10 t) / t of the PCA time is reported as the median over repeats. The PCA works
   on the rows x rows Gram matrix, so its cost grows with the rows (eigen-solver) and with the non-zeros
   (products), never with the cube of the number of nodes as a covariance PCA would.

The nearest maintained deep-forest package (DF21, ``deep-forest`` on PyPI) publishes no wheel installable here, so
the comparison with it is not run.

Usage: python benchmarks/bench_deep.py [--rows 2417] [--trees 150] [--layers 2] [--repeats 3] [--out FILE.json]
       python benchmarks/bench_deep.py --quick      # small sizes, under a minute
"""
from __future__ import annotations

import argparse
import platform
import resource
import statistics
import sys
import time

import numpy as np

from forestbench._io import write_json
from forestbench.datasets.embedded import river_yeast
from forestbench.ensemble import RandomForestRegressor
from forestbench.ensemble._deep import DeepTreeEnsemble
from forestbench.ensemble._embedding import TreeEmbedding, forest_node_indicator


def peak_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def layer_split(X, Y, trees, layers, fraction):
    model = DeepTreeEnsemble("X_OS_TE", n_estimators=trees, max_layers=layers, pca_fractions=[fraction],
                             keep_all_layers=True, random_state=0)
    t0 = time.perf_counter()
    model.fit(X, Y)
    total = time.perf_counter() - t0
    return {"fit_wall_s": total, "per_layer": model.fit_time_split_, "layer_scores": list(model.layer_scores_),
            "peak_rss_mb": peak_mb()}


def pca_scaling(X, Y, trees, repeats, fraction):
    rng = np.random.default_rng(0)
    sample = np.sort(rng.choice(X.shape[0], X.shape[0] // 2, replace=False))
    forests = {t: RandomForestRegressor(t, max_features="sqrt", random_state=1).fit(X[sample], Y[sample])
               for t in (trees, 10 * trees)}
    rows = {t: [] for t in forests}
    for _ in range(repeats):
        for t, forest in forests.items():  # interleaved: both sizes see the same machine load
            t0 = time.perf_counter()
            M = forest_node_indicator(forest.estimators_, X)
            t1 = time.perf_counter()
            emb = TreeEmbedding(0.95, 1.0, fraction)
            emb.fit_transform(M)
            t2 = time.perf_counter()
            rows[t].append({"path_s": t1 - t0, "pca_s": t2 - t1, "nodes": int(M.shape[1]), "nnz": int(M.nnz),
                            "kept_nodes": int(emb.kept_columns_.size), "components": int(emb.n_components_),
                            "solver": emb.solver_})
            del M, emb
    ratios = [b["pca_s"] / a["pca_s"] for a, b in zip(rows[trees], rows[10 * trees])]
    return {"trees": trees, "runs": {str(t): r for t, r in rows.items()},
            "pca_ratio_10x_trees_median": statistics.median(ratios), "pca_ratios": ratios,
            "median_pca_s": {str(t): statistics.median(r["pca_s"] for r in v) for t, v in rows.items()},
            "median_path_s": {str(t): statistics.median(r["path_s"] for r in v) for t, v in rows.items()}}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=2417)
    ap.add_argument("--trees", type=int, default=150)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--fraction", type=float, default=0.05, help="PCA size (fraction of min(rows, nodes))")
    ap.add_argument("--skip-layers", action="store_true", help="only the PCA scaling")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    if args.quick:
        args.rows, args.trees, args.layers, args.repeats = 600, 10, 2, 2
    data = river_yeast()
    X, Y = data.X[: args.rows], data.Y.toarray()[: args.rows]
    result = {"machine": platform.platform(), "python": sys.version.split()[0], "rows": int(X.shape[0]),
              "args": vars(args)}
    if not args.skip_layers:
        result["layer_split"] = layer_split(X, Y, args.trees, args.layers, args.fraction)
        for i, t in enumerate(result["layer_split"]["per_layer"], 1):
            print(f"layer {i}: " + ", ".join(f"{k} {v:.2f}s" for k, v in t.items()), flush=True)
        print(f"X_OS_TE fit {result['layer_split']['fit_wall_s']:.1f}s, peak RSS "
              f"{result['layer_split']['peak_rss_mb']:.0f} MB", flush=True)
    scaling = pca_scaling(X, Y, args.trees, args.repeats, args.fraction)
    result["pca_scaling"] = scaling
    print(f"PCA {args.trees} trees: {scaling['median_pca_s'][str(args.trees)]:.2f}s, {10 * args.trees} trees: "
          f"{scaling['median_pca_s'][str(10 * args.trees)]:.2f}s, median ratio "
          f"{scaling['pca_ratio_10x_trees_median']:.2f} (target <= 2)", flush=True)
    if args.out:
        write_json(args.out, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
