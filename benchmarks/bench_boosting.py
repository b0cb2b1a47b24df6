"""Gradient boosting (thesis ch. 6) against the boosting libraries, one thread, interleaved, medians over repeats.

Two settings:

``small``   friedman1 (n=300 train, p=5, x ~ U(0,1)), stumps, square loss, learning rate 0.1. Microseconds per
            iteration (fit time / iterations) of st-gbrt (per tree), gbmort and gbrt-rpo, ours with the staged
            validation scores on 75 held-out rows computed in the loop; peers: scikit-learn's
            GradientBoostingRegressor, XGBoost (hist), LightGBM, CatBoost. d=1 (friedman1) and d=16
            (friedman1-group; peers that are per output are charged per tree).
``delicious`` a delicious-sized synthetic multi-label problem (n=12920 train / 3185 test, p=500 binary inputs at 10%
            density, d=983 labels, ~19 positive per row), logistic loss, 8-leaf trees, learning rate 0.1. Seconds
            per iteration of our variants, XGBoost ``multi_output_tree``, CatBoost ``MultiLogloss``, a naive
            numpy + scikit-learn gbrt-rpo loop and one scikit-learn multi-output tree on the dense gradient; then
            test LRAP reached within an equal wall-time budget (``--budget`` seconds) by our best variant and by
            XGBoost.

    python benchmarks/bench_boosting.py [--settings small,delicious] [--repeats 3] [--budget 60] [--out DIR]

Writes ``bench_boosting_times.csv`` (every run) and ``bench_boosting_summary.csv`` (medians and ratios) to --out
(default benchmarks/out) and prints a Markdown summary.
"""
from __future__ import annotations

import argparse
import csv
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from forestbench.boosting._gradient_boosting import (  # noqa: E402
    GBMORTRegressor,
    GBRTRelabelRPORegressor,
    GBRTRPORegressor,
    STGradientBoostingRegressor,
)


def friedman1(n, d, seed):
    from forestbench.datasets.embedded import friedman1_function

    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, 5)).astype(np.float32)
    Y = friedman1_function(X)[:, None] + rng.standard_normal((n, d))
    return X, Y


def delicious_like(n, p, d, seed, density=0.1, mean_labels=19.0):
    """Binary inputs at ``density``; label k is a noisy threshold of a sparse linear function of the inputs, with
    power-law label frequencies calibrated to ``mean_labels`` positives per row."""
    rng = np.random.default_rng(seed)
    X = (rng.random((n, p)) < density).astype(np.float32)
    freq = 1.0 / np.arange(1, d + 1) ** 0.8
    freq *= mean_labels / freq.sum()
    freq = np.clip(freq, 1e-4, 0.9)
    W = np.zeros((p, d), dtype=np.float32)
    for k in range(d):
        W[rng.choice(p, 10, replace=False), k] = rng.normal(size=10)
    S = X @ W + rng.logistic(size=(n, d)).astype(np.float32)
    rank = ((1.0 - freq) * (n - 1)).astype(int)
    thr = np.sort(S, axis=0)[rank, np.arange(d)]
    return X, (S > thr).astype(np.float64)


def lrap(Y, P):
    from forestbench.metrics import lrap as _lrap

    return float(_lrap(Y, P))


# --------------------------------------------------------------------------------------------------- peers
def peer_fit(name, X, Y, n_iter, leaves, loss):
    """Fit one peer with one thread; returns the fitted object (or None if the library is missing)."""
    try:
        if name == "sklearn":
            from sklearn.ensemble import GradientBoostingRegressor
            return [GradientBoostingRegressor(n_estimators=n_iter, learning_rate=0.1, max_leaf_nodes=leaves,
                                              max_depth=None).fit(X, Y[:, j]) for j in range(Y.shape[1])]
        if name.startswith("xgboost"):
            import xgboost as xgb
            strategy = "multi_output_tree" if name.endswith("multi") else "one_output_per_tree"
            kw = dict(n_estimators=n_iter, learning_rate=0.1, tree_method="hist", grow_policy="lossguide",
                      max_leaves=leaves, max_depth=0, n_jobs=1, multi_strategy=strategy, reg_lambda=0.0,
                      min_child_weight=0.0)
            if loss == "logistic":
                return xgb.XGBClassifier(objective="binary:logistic", **kw).fit(X, Y.astype(int))
            return xgb.XGBRegressor(**kw).fit(X, Y if Y.shape[1] > 1 else Y[:, 0])
        if name == "lightgbm":
            import lightgbm as lgb
            return [lgb.LGBMRegressor(n_estimators=n_iter, learning_rate=0.1, num_leaves=leaves, n_jobs=1,
                                      min_child_samples=1, min_child_weight=0.0, verbose=-1).fit(X, Y[:, j])
                    for j in range(Y.shape[1])]
        if name == "catboost":
            import catboost as cb
            kw = dict(iterations=n_iter, learning_rate=0.1, depth=max(1, int(np.ceil(np.log2(leaves)))),
                      thread_count=1, verbose=False, allow_writing_files=False)
            if loss == "logistic":
                return cb.CatBoostClassifier(loss_function="MultiLogloss", **kw).fit(X, Y.astype(int))
            return cb.CatBoostRegressor(loss_function="MultiRMSE" if Y.shape[1] > 1 else "RMSE", **kw).fit(X, Y)
    except ImportError:
        return None
    raise ValueError(name)


def naive_rpo(X, Y, n_iter, leaves, seed=0):
    """The loop a researcher would write with numpy + scikit-learn: gbrt-rpo (sub-sampled output), logistic loss,
    one Newton step per output as line search (cheaper than the Brent search of ours)."""
    from sklearn.tree import DecisionTreeRegressor

    rng = np.random.default_rng(seed)
    Ys = 2.0 * Y - 1.0
    pos = Y.mean(axis=0).clip(1e-3, 1 - 1e-3)
    F = np.tile(0.5 * np.log(pos / (1 - pos)), (X.shape[0], 1))
    for _ in range(n_iter):
        R = 2.0 * Ys / (1.0 + np.exp(2.0 * Ys * F))
        j = rng.integers(Y.shape[1])
        tree = DecisionTreeRegressor(max_leaf_nodes=leaves).fit(X, R[:, j])
        g = tree.predict(X)
        A = np.abs(R)
        rho = (g @ R) / np.maximum((g * g) @ (A * (2 - A)), 1e-12)
        F += 0.1 * np.outer(g, rho)
    return F


# --------------------------------------------------------------------------------------------------- settings
def run_small(repeats, rows):
    out = []
    for d in (1, 16):
        X, Y = friedman1(375, d, seed=0)
        Xt, Yt, Xv, Yv = X[:300], Y[:300], X[300:], Y[300:]
        ours = {
            "ours st-gbrt (per tree)": (lambda: STGradientBoostingRegressor(
                n_estimators=max(1, 4000 // d), max_leaf_nodes=2), max(1, 4000 // d) * d),
            "ours gbmort": (lambda: GBMORTRegressor(n_estimators=4000, max_leaf_nodes=2), 4000),
            "ours gbrt-rpo": (lambda: GBRTRPORegressor(n_estimators=4000, max_leaf_nodes=2, random_state=0), 4000),
        }
        peers = {"sklearn GradientBoostingRegressor (per tree)": ("sklearn", 200),
                 "XGBoost hist": ("xgboost_multi" if d > 1 else "xgboost_one", 1000),
                 "LightGBM (per tree)": ("lightgbm", 1000),
                 "CatBoost": ("catboost", 1000)}
        if d > 1:
            peers["XGBoost one_output_per_tree (per tree)"] = ("xgboost_one", 1000 // d)
        for r in range(repeats):
            order = list(ours.items()) + list(peers.items())
            if r % 2:
                order = order[::-1]
            for label, spec in order:
                if label.startswith("ours"):
                    make, trees = spec
                    est = make().fit(Xt, Yt, eval_set=(Xv, Yv))
                    seconds = float(est.stage_fit_seconds_[-1])
                    units = trees
                else:
                    name, n_iter = spec
                    t0 = time.perf_counter()
                    model = peer_fit(name, Xt, Yt, n_iter, 2, "square")
                    seconds = time.perf_counter() - t0
                    if model is None:
                        continue
                    per_tree = "per tree" in label or name in ("sklearn", "lightgbm", "xgboost_one")
                    units = n_iter * (d if per_tree else 1)
                rows.append({"setting": f"small d={d}", "variant": label, "repeat": r, "seconds": seconds,
                             "units": units, "per_unit_us": 1e6 * seconds / units})
    return out


def run_delicious(repeats, rows, budget):
    X, Y = delicious_like(12920 + 3185, 500, 983, seed=0)
    Xt, Yt, Xs, Ys = X[:12920], Y[:12920], X[12920:], Y[12920:]
    print(f"delicious-like: {Yt.sum(axis=1).mean():.1f} labels per row, {(Yt.sum(axis=0) > 0).sum()} labels used",
          file=sys.stderr)
    kw = dict(learning_rate=0.1, max_leaf_nodes=8, loss="logistic")
    variants = {
        "ours gbrt-rpo subsample": (lambda m: GBRTRPORegressor(n_estimators=m, random_state=0, **kw), 20),
        "ours gbrt-rpo gaussian": (lambda m: GBRTRPORegressor(n_estimators=m, output_projection="gaussian",
                                                              random_state=0, **kw), 20),
        "ours gbrt-relabel-rpo gaussian q=1": (lambda m: GBRTRelabelRPORegressor(
            n_estimators=m, output_projection="gaussian", random_state=0, **kw), 10),
        "ours gbmort": (lambda m: GBMORTRegressor(n_estimators=m, **kw), 2),
    }
    for r in range(repeats):
        order = ["ours", "xgb", "cat", "naive", "sktree"]
        if r % 2:
            order = order[::-1]
        for what in order:
            if what == "ours":
                for label, (make, m) in variants.items():
                    est = make(m).fit(Xt, Yt)
                    rows.append({"setting": "delicious", "variant": label, "repeat": r,
                                 "seconds": float(est.stage_fit_seconds_[-1]), "units": m,
                                 "per_unit_us": 1e6 * float(est.stage_fit_seconds_[-1]) / m})
            elif what in ("xgb", "cat"):
                n_iter = 2 if what == "xgb" else 2
                name = "xgboost_multi" if what == "xgb" else "catboost"
                t0 = time.perf_counter()
                model = peer_fit(name, Xt, Yt, n_iter, 8, "logistic")
                seconds = time.perf_counter() - t0
                if model is not None:
                    label = "XGBoost multi_output_tree" if what == "xgb" else "CatBoost MultiLogloss"
                    rows.append({"setting": "delicious", "variant": label, "repeat": r, "seconds": seconds,
                                 "units": n_iter, "per_unit_us": 1e6 * seconds / n_iter})
            elif what == "naive":
                t0 = time.perf_counter()
                naive_rpo(Xt, Yt, 5, 8)
                seconds = time.perf_counter() - t0
                rows.append({"setting": "delicious", "variant": "naive numpy + scikit-learn gbrt-rpo",
                             "repeat": r, "seconds": seconds, "units": 5, "per_unit_us": 1e6 * seconds / 5})
            else:
                from sklearn.tree import DecisionTreeRegressor
                pos = Yt.mean(axis=0).clip(1e-3, 1 - 1e-3)
                S = 2 * Yt - 1
                G = 2 * S / (1 + np.exp(2 * S * 0.5 * np.log(pos / (1 - pos))))
                t0 = time.perf_counter()
                DecisionTreeRegressor(max_leaf_nodes=8).fit(Xt, G)
                seconds = time.perf_counter() - t0
                rows.append({"setting": "delicious", "variant": "scikit-learn multi-output tree on the gradient",
                             "repeat": r, "seconds": seconds, "units": 1, "per_unit_us": 1e6 * seconds})
    if budget <= 0:
        return
    # equal wall time: iterations that fit in the budget from the measured per-iteration medians, LRAP on test
    med = {}
    for row in rows:
        if row["setting"] == "delicious":
            med.setdefault(row["variant"], []).append(row["per_unit_us"] * 1e-6)
    med = {k: statistics.median(v) for k, v in med.items()}
    for label in ("ours gbrt-rpo subsample", "ours gbrt-rpo gaussian", "ours gbrt-relabel-rpo gaussian q=1"):
        make, _ = variants[label]
        m = max(1, int(budget / med[label]))
        est = make(m).fit(Xt, Yt)
        P = est.predict(Xs)
        rows.append({"setting": "delicious-budget", "variant": label, "repeat": 0,
                     "seconds": float(est.stage_fit_seconds_[-1]), "units": m, "per_unit_us": lrap(Ys, P)})
    if "XGBoost multi_output_tree" in med:
        m = max(1, int(budget / med["XGBoost multi_output_tree"]))
        t0 = time.perf_counter()
        model = peer_fit("xgboost_multi", Xt, Yt, m, 8, "logistic")
        seconds = time.perf_counter() - t0
        rows.append({"setting": "delicious-budget", "variant": "XGBoost multi_output_tree", "repeat": 0,
                     "seconds": seconds, "units": m, "per_unit_us": lrap(Ys, model.predict_proba(Xs))})


class _Rows(list):
    """Rows printed to stderr as they come, so that a long run shows its progress."""

    def append(self, row):
        print(f"  {row['setting']} | {row['variant']} | repeat {row['repeat']} | {row['seconds']:.3g} s | "
              f"{row['per_unit_us']:.4g}", file=sys.stderr, flush=True)
        super().append(row)


def summarise(rows):
    groups = {}
    for row in rows:
        groups.setdefault((row["setting"], row["variant"]), []).append(row)
    summary = []
    for (setting, variant), rs in groups.items():
        summary.append({"setting": setting, "variant": variant, "repeats": len(rs),
                        "median": statistics.median(r["per_unit_us"] for r in rs),
                        "units": rs[0]["units"], "seconds": statistics.median(r["seconds"] for r in rs)})
    return summary


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--settings", default="small,delicious")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--budget", type=float, default=60.0, help="equal wall-time budget (s); 0 skips it")
    ap.add_argument("--out", default="benchmarks/out")
    args = ap.parse_args(argv)
    rows = _Rows()
    settings = args.settings.split(",")
    if "small" in settings:
        run_small(args.repeats, rows)
    if "delicious" in settings:
        run_delicious(args.repeats, rows, args.budget)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "bench_boosting_times.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    summary = summarise(rows)
    with open(out / "bench_boosting_summary.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(summary[0]))
        w.writeheader()
        w.writerows(summary)
    for s in summary:
        unit = "LRAP" if s["setting"] == "delicious-budget" else "us/unit"
        print(f"| {s['setting']} | {s['variant']} | {s['median']:.4g} {unit} | units {s['units']} | "
              f"{s['seconds']:.3g} s | n={s['repeats']} |")


if __name__ == "__main__":
    main()
