"""Deep tree-ensembles (DTE paper): what a cascade costs beside its forests, and how the embedding PCA scales.

1. **Cascade profile** (``--profile``, the default), in one run on a multi-label and a multi-target problem: yeast
   (river's copy of Mulan yeast, 2417 x 103, 14 labels; the first ``--rows`` rows) and sf2 (1066 x 10, 3 targets).
   ``DeepTreeEnsemble(variant="X_OS_TE")`` (every stage: embedding forests, paths, PCA, output-space CV, prediction
   forests) with ``--trees`` trees per forest, ``--layers`` layers, one PCA size ``--fraction``, one thread. Every
   forest the cascade grows is recorded with its exact inputs (rows, features, targets, seed); then, interleaved
   with the cascade over ``--repeats`` repeats,

   - each recorded forest is grown alone again (same inputs, same seed): the cascade's fit time over the summed
     fit time of its forests (goal <= 1.25) measures what the cascade adds (paths, PCA, feature assembly, copies,
     out-of-fold predictions, scoring);
   - scikit-learn's ``RandomForestRegressor`` / ``ExtraTreesRegressor`` at equal settings (trees, ``max_features``,
     bootstrap for RF only, fully grown, one thread) is grown on the same inputs: our summed forest time over
     scikit-learn's (goal <= 0.5), overall and per forest kind;
   - the PCA share of the cascade's fit time (goal < 10 %).

   Every fit runs on one thread (forests ``n_jobs=1``; the embedding's BLAS is single-threaded), so times are CPU
   seconds of the process (``time.process_time``, also for the cascade's own stage split), which a loaded machine
   inflates far less than wall seconds. Ratios are taken within a repeat; the medians over repeats are reported.
2. **PCA-size search** (``--tuning``): the paper's inner 5-fold selection of the PCA size over its eight sizes,
   ``variant="X_TE"`` on the first ``--rows`` yeast rows. Timed, interleaved over the repeats: one cascade with a
   fixed size (``--fraction``) on all rows; one inner fold's eight candidate cascades fitted each on its own (every
   candidate grows its embedding forests and solves its eigen-problem at its own size) and fitted sharing layer 1's
   fraction-independent work (:meth:`DeepTreeEnsemble._first_layer`). The whole search costs five such folds
   plus the final refit, reported as a multiple of the fixed-size cascade.
3. **Layer-selection readings** (``--readings``): not a speed measurement. On yeast's standard split (1500
   training rows, 917 test rows) each of ``--variants`` is fitted once per ``pruning_score`` reading (train, oob,
   oof: every reading builds the same layers) with ``--trees`` trees and ``--layers`` layers; the selected layer
   count and the test micro-AUC and ranking loss of the selected layer are reported beside the best layer in
   hindsight and the published values (DTE paper Tables 6 and 9: 150 trees, 10 layers, mean over 10 folds).
4. **PCA scaling** (``--scaling``). One embedding RF with ``t`` and with ``10 t`` trees on half of the rows; the
   node-indicator extraction and the PCA (:class:`TreeEmbedding.fit_transform`) of all rows are timed, interleaved over
   ``--repeats`` repeats; the ratio (10 t) / t of the PCA time is reported as the median over repeats. The PCA works
   on the rows x rows Gram matrix, so its cost grows with the rows (eigen-solver) and with the non-zeros
   (products), never with the cube of the number of nodes as a covariance PCA would.

The nearest maintained deep-forest package (DF21, ``deep-forest`` on PyPI) publishes no wheel installable here, so
the comparison with it is not run.

Usage: python benchmarks/bench_deep.py [--rows 1600] [--trees 50] [--layers 3] [--repeats 3] [--out FILE.json]
       python benchmarks/bench_deep.py --tuning [--rows 1600] [--trees 30] [--layers 3] [--repeats 1]
       python benchmarks/bench_deep.py --readings [--trees 20] [--layers 10] [--variants X_OS,X_OS_TE]
       python benchmarks/bench_deep.py --scaling [--rows 2417] [--trees 150] [--repeats 3]
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
from forestbench.datasets.embedded import river_sf2, river_yeast
from forestbench.forest import RandomForestRegressor
from forestbench.deep import _cascade as _deep
from forestbench.deep._cascade import DeepTreeEnsemble
from forestbench.deep._embedding import TreeEmbedding, forest_node_indicator


def peak_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


STAGES = ("embedding_forests", "path_extraction", "pca", "os_cv", "prediction_forests", "scoring")
_STREAM_STAGE = {_deep._PRED_RF: "prediction", _deep._PRED_ET: "prediction", _deep._EMB_RF: "embedding",
                 _deep._EMB_ET: "embedding"}


class _Recorder:
    """Wraps the cascade's forest factory; remembers (stage, kind, trees, max_features, seed, X, Y) of every fit."""

    def __init__(self):
        self.fits = []

    def __enter__(self):
        self._orig = _deep._forest
        fits = self.fits

        def factory(kind, n_estimators, max_features, seed, n_jobs):
            forest = self._orig(kind, n_estimators, max_features, seed, n_jobs)
            fit = forest.fit
            stage = _STREAM_STAGE.get(seed.spawn_key[-1], "os_cv")

            def recorded_fit(X, y):
                fits.append({"stage": stage, "kind": kind, "trees": n_estimators, "max_features": max_features,
                             "seed": np.random.SeedSequence(seed.entropy, spawn_key=seed.spawn_key),
                             "X": np.array(X), "Y": np.array(y)})
                return fit(X, y)

            forest.fit = recorded_fit
            return forest

        _deep._forest = factory
        return self

    def __exit__(self, *exc):
        _deep._forest = self._orig


def _ours(rec):
    return _deep._forest(rec["kind"], rec["trees"], rec["max_features"], rec["seed"], 1)


def _sklearn(rec):
    from sklearn.ensemble import ExtraTreesRegressor, RandomForestRegressor

    cls = RandomForestRegressor if rec["kind"] == "rf" else ExtraTreesRegressor
    return cls(n_estimators=rec["trees"], max_features=rec["max_features"], bootstrap=rec["kind"] == "rf",
               n_jobs=1, random_state=0)


def _timed_fits(fits, make):
    out = []
    for rec in fits:
        model = make(rec)
        t0 = time.process_time()
        model.fit(rec["X"], rec["Y"])
        out.append(time.process_time() - t0)
        del model
    return out


def _cascade(X, Y, trees, layers, fraction):
    return DeepTreeEnsemble("X_OS_TE", n_estimators=trees, max_layers=layers, pca_fractions=[fraction],
                            keep_all_layers=True, n_jobs=1, random_state=0)


def cascade_profile(problems, trees, layers, fraction, repeats):
    """Interleaved over the repeats: per problem the cascade, its forests alone (ours) and scikit-learn's."""
    _deep._clock = time.process_time   # one thread everywhere: CPU seconds, robust to a loaded machine
    fits = {}
    for name, (X, Y) in problems.items():   # record the forests (and warm up)
        with _Recorder() as rec:
            _cascade(X, Y, trees, layers, fraction).fit(X, Y)
        fits[name] = rec.fits
    runs = {name: [] for name in problems}
    for r in range(repeats):
        for name, (X, Y) in problems.items():
            model = _cascade(X, Y, trees, layers, fraction)
            t0 = time.process_time()
            model.fit(X, Y)
            total = time.process_time() - t0
            split = {k: sum(t[k] for t in model.fit_time_split_) for k in STAGES}
            ours = _timed_fits(fits[name], _ours)
            skl = _timed_fits(fits[name], _sklearn)
            runs[name].append({"cascade_s": total, "split_s": split, "forests_alone_s": ours, "sklearn_s": skl})
            print(f"[{r}] {name}: cascade {total:.1f}s, its forests alone {sum(ours):.1f}s, scikit-learn "
                  f"{sum(skl):.1f}s", flush=True)
    result = {}
    for name, rs in runs.items():
        recs = fits[name]
        per_kind = {}
        for key in sorted({(f["stage"], f["kind"]) for f in recs}):
            idx = [i for i, f in enumerate(recs) if (f["stage"], f["kind"]) == key]
            per_kind[f"{key[0]}_{key[1]}"] = statistics.median(
                sum(run["forests_alone_s"][i] for i in idx) / sum(run["sklearn_s"][i] for i in idx) for run in rs)
        result[name] = {
            "rows": int(problems[name][0].shape[0]), "features": int(problems[name][0].shape[1]),
            "outputs": int(problems[name][1].shape[1]), "forests": len(recs),
            "forest_inputs": [{"stage": f["stage"], "kind": f["kind"], "shape": list(f["X"].shape)} for f in recs],
            "runs": rs,
            "median_cascade_s": statistics.median(r["cascade_s"] for r in rs),
            "median_split_share": {k: statistics.median(r["split_s"][k] / r["cascade_s"] for r in rs)
                                   for k in STAGES},
            "median_other_share": statistics.median(1 - sum(r["split_s"].values()) / r["cascade_s"] for r in rs),
            "median_cascade_over_forests": statistics.median(r["cascade_s"] / sum(r["forests_alone_s"])
                                                             for r in rs),
            "median_ours_over_sklearn": statistics.median(sum(r["forests_alone_s"]) / sum(r["sklearn_s"])
                                                          for r in rs),
            "median_ours_over_sklearn_per_kind": per_kind,
        }
    return result


def tuning_cost(X, Y, trees, layers, fraction, repeats, folds=5):
    from forestbench.deep._cascade import PAPER_PCA_FRACTIONS, _child, _fraction_order, as_seed_sequence

    fractions = list(PAPER_PCA_FRACTIONS)
    largest = max(fractions, key=_fraction_order)
    model = DeepTreeEnsemble("X_TE", n_estimators=trees, max_layers=layers, pca_fractions=[fraction], n_jobs=1,
                             random_state=0)
    perm = np.random.default_rng(0).permutation(X.shape[0])
    val = np.sort(perm[: X.shape[0] // folds])
    train = np.setdiff1d(np.arange(X.shape[0]), val)
    Xf, Xv, Yf = X[train].astype(np.float32), X[val].astype(np.float32), Y[train].astype(float)
    seq = as_seed_sequence(1)
    runs = []
    for r in range(repeats):
        t0 = time.process_time()
        model.fit(X, Y)
        fixed = time.process_time() - t0
        t0 = time.process_time()
        for j, f in enumerate(fractions):   # each candidate alone, solved at its own size
            lay, sc, _ = model._fit_cascade(Xf, Yf, Yf, f, _child(seq, 1, j), keep_all=False)
            model._replay(lay, int(np.argmax(sc)) + 1, Xv)
        alone = time.process_time() - t0
        t0 = time.process_time()
        first = model._first_layer(Xf, Yf, _child(seq, 1), largest)
        for f in fractions:
            lay, sc, _ = model._fit_cascade(Xf, Yf, Yf, f, _child(seq, 1), keep_all=False, solve_fraction=largest,
                                            first=first)
            model._replay(lay, int(np.argmax(sc)) + 1, Xv)
        shared = time.process_time() - t0
        runs.append({"fixed_s": fixed, "fold_alone_s": alone, "fold_shared_s": shared,
                     "search_over_fixed_alone": (folds * alone + fixed) / fixed,
                     "search_over_fixed_shared": (folds * shared + fixed) / fixed,
                     "shared_over_alone": shared / alone})
        print(f"[{r}] fixed {fixed:.1f}s, one fold: candidates alone {alone:.1f}s, shared {shared:.1f}s", flush=True)
    med = {k: statistics.median(run[k] for run in runs) for k in runs[0]}
    print(f"search / fixed-size cascade: {med['search_over_fixed_alone']:.1f}x alone, "
          f"{med['search_over_fixed_shared']:.1f}x shared (shared / alone {med['shared_over_alone']:.2f})")
    return {"runs": runs, "median": med, "fractions": fractions, "folds": folds}


PUBLISHED_YEAST = {  # DTE paper: (micro-AUC Table 9, ranking loss Table 6, mean selected layers)
    "X_TE": (0.848, 0.166, 8.44), "TE": (0.835, 0.176, 6.22), "X_OS": (0.827, 0.187, 8.89),
    "X_OS_TE": (0.815, 0.195, 9.0)}


def layer_readings(data, variants, trees, layers, fraction):
    from forestbench.metrics import label_ranking_loss, micro_auc

    X, Y = data.X, data.Y.toarray()
    train, test = np.arange(917, X.shape[0]), np.arange(917)
    out = {}
    for variant in variants:
        for reading in ("train", "oob", "oof"):
            t0 = time.perf_counter()
            model = DeepTreeEnsemble(variant, n_estimators=trees, max_layers=layers, pca_fractions=[fraction],
                                     pruning_score=reading, keep_all_layers=True, random_state=0)
            model.fit(X[train], Y[train])
            staged = list(model.staged_predict(X[test]))
            aucs = [micro_auc(Y[test], P) for P in staged]
            P = staged[model.n_layers_ - 1]
            out[f"{variant}/{reading}"] = {
                "n_layers": int(model.n_layers_), "layer_scores": [float(v) for v in model.layer_scores_],
                "test_micro_auc": micro_auc(Y[test], P), "test_ranking_loss": label_ranking_loss(Y[test], P),
                "test_micro_auc_per_layer": aucs, "fit_s": time.perf_counter() - t0}
            r = out[f"{variant}/{reading}"]
            pub = PUBLISHED_YEAST.get(variant, (None,) * 3)
            print(f"| {variant} | {reading} | {r['n_layers']} | {r['test_micro_auc']:.3f} | "
                  f"{r['test_ranking_loss']:.3f} | {1 + int(np.argmax(aucs))} ({max(aucs):.3f}) | {pub[2]} | "
                  f"{pub[0]} | {pub[1]} |", flush=True)
    return out


def print_profile(result):
    cols = ("embedding_forests", "path_extraction", "pca", "os_cv", "prediction_forests", "scoring")
    print("| problem | cascade s | " + " | ".join(cols) + " | other | cascade / forests alone | ours / sklearn |")
    for name, r in result.items():
        shares = " | ".join(f"{100 * r['median_split_share'][k]:.1f} %" for k in cols)
        print(f"| {name} | {r['median_cascade_s']:.1f} | {shares} | {100 * r['median_other_share']:.1f} % | "
              f"{r['median_cascade_over_forests']:.2f} | {r['median_ours_over_sklearn']:.2f} |")
        print("    ours / sklearn per stage and kind: " + ", ".join(
            f"{k} {v:.2f}" for k, v in r["median_ours_over_sklearn_per_kind"].items()))


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
    ap.add_argument("--rows", type=int, default=1600, help="yeast rows (sf2 always uses its 1066)")
    ap.add_argument("--trees", type=int, default=50)
    ap.add_argument("--layers", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--fraction", type=float, default=0.05, help="PCA size (fraction of min(rows, nodes))")
    ap.add_argument("--scaling", action="store_true", help="the PCA scaling instead of the cascade profile")
    ap.add_argument("--tuning", action="store_true", help="the PCA-size search cost instead of the profile")
    ap.add_argument("--readings", action="store_true", help="the layer-selection readings on yeast")
    ap.add_argument("--variants", default="X_OS,X_OS_TE")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    if args.quick:
        args.rows, args.trees, args.layers, args.repeats = 400, 8, 2, 2
    data = river_yeast()
    X, Y = data.X[: args.rows], data.Y.toarray()[: args.rows]
    result = {"machine": platform.platform(), "python": sys.version.split()[0], "args": vars(args)}
    if args.readings:
        print("| variant | reading | layers | test micro-AUC | test ranking loss | best test layer | published "
              "layers | published micro-AUC | published ranking loss |")
        result["readings"] = layer_readings(data, args.variants.split(","), args.trees, args.layers, args.fraction)
    elif args.tuning:
        result["tuning"] = tuning_cost(X, Y, args.trees, args.layers, args.fraction, args.repeats)
    elif not args.scaling:
        sf2 = river_sf2()
        sf2_Y = sf2.Y.toarray() if hasattr(sf2.Y, "toarray") else np.asarray(sf2.Y)
        problems = {"yeast": (X, Y), "sf2": (np.asarray(sf2.X), sf2_Y)}
        result["cascade_profile"] = cascade_profile(problems, args.trees, args.layers, args.fraction,
                                                    args.repeats)
        print_profile(result["cascade_profile"])
        result["peak_rss_mb"] = peak_mb()
    else:
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
