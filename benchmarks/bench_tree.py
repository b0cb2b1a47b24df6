"""Benchmark: forestbench.tree.DecisionTreeRegressor vs sklearn.tree.DecisionTreeRegressor.

Both are fitted side by side in one process, interleaved (ours, sklearn, then
sklearn, ours on the next repeat, ...) so that load from other processes hits
both alike; the median over ``--repeats`` runs is reported. Cases:

* dense float32 X (C order), n=20000, p=50, d=1 and d=20, best and random
  splitters, fully grown;
* CSC X, n=10000, p=20000, density 0.1%, best and random, fully grown;
* sparse 0/1 labels, n=10000, p=100, d=1000, ~10 labels per row,
  max_depth=10: ours on the CSR label matrix, scikit-learn on the dense one.

Each fit is timed in wall-clock and in CPU seconds of the process (the CPU
ratio is the steadier one on a loaded machine). For the best splitter the two
trees are compared: identical, or "ties" when they differ only where two
splits send the same samples left (or mirrored), i.e. equal improvements that
the two break differently; a genuinely different tree stops the benchmark.
Also: CSR prediction (one fully grown tree each on the CSC case data,
``predict`` of the same rows as CSR, 20 calls per timing, goal <= 0.7), and a
forest of 32 trees fitted with n_jobs=1 and n_jobs=2 (goal: >= 1.8x faster on
2 idle cores). ``--only TEXT`` keeps the tree cases whose name contains TEXT,
``--skip-predict`` / ``--skip-forest`` leave those out.

Small trees (the boosting / deep-ensemble case): a stump (max_depth=1) on
300 x 5 float64 data through the public API, constructor + ``fit`` and
``predict`` of the 300 rows, each call timed alone, ours and scikit-learn
alternating by blocks of 50 calls (each warm, as in a boosting loop);
medians over the calls of a repeat (``--small-calls`` per repeat), then the
median over repeats, and the median of the per-repeat ratios. Goals are
absolute: fit <= 80 us, predict <= 30 us. Also timed (no goal): the
ensembles' path, a stump grown on inputs validated once beforehand (ours:
``_fit_validated``; scikit-learn's forests: ``fit(check_input=False)``).
``--small-only`` runs just this.

Also reported: model bytes of a fully grown tree on the sparse-label case. Ours
is measured; scikit-learn's is its node array plus its dense (node x output)
value array for the same node count (fitting scikit-learn's fully grown tree
on 1000 dense outputs takes many minutes); the formula is checked against a
real scikit-learn fit on a 1000-row slice.

Writes ``<out>/bench_tree_times.csv`` (every run), ``bench_tree_summary.csv``
(medians, ratio of the medians = the goal metric, and the median of the
per-repeat ratios as a load-robust cross-check), ``bench_tree_model_bytes.csv``
and ``bench_tree.png``; prints the ratio table.
Writes ``bench_tree_small_summary.csv`` / ``bench_tree_small_times.csv`` for the small trees.
Usage: python benchmarks/bench_tree.py [--repeats 5] [--out benchmarks/out] [--quick] [--small-only]
       [--small-calls 2000]
"""
from __future__ import annotations

import argparse
import io
import time
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp
from sklearn.tree import DecisionTreeRegressor as SkTree

from forestbench._io import atomic_path, write_text
from forestbench.tree import DecisionTreeRegressor


def _dense_case(n, p, d, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.rand(n, p).astype(np.float32)
    W = rng.randn(p, d)
    Y = np.sin(X @ W) + 0.1 * rng.randn(n, d)
    return X, (Y.ravel() if d == 1 else Y)


def _csc_case(n, p, density, seed=0):
    rng = np.random.RandomState(seed)
    X = sp.random(n, p, density=density, random_state=rng, format="csc", dtype=np.float32)
    X.data = rng.randn(X.nnz).astype(np.float32)
    w = np.zeros(p)
    w[rng.choice(p, 200, replace=False)] = rng.randn(200)
    y = X @ w + 0.1 * rng.randn(n)
    return X, y


def _label_case(n, p, d, labels_per_row, seed=0):
    """0/1 labels with a skewed popularity, depending on X through a few features."""
    rng = np.random.RandomState(seed)
    X = rng.rand(n, p).astype(np.float32)
    pop = 1.0 / np.arange(1, d + 1) ** 0.7
    pop *= labels_per_row / pop.sum()
    pop = np.minimum(pop, 0.9)
    logits = X[:, :10] @ rng.randn(10, d)
    prob = np.clip(pop * 2 / (1 + np.exp(-(logits - logits.mean(0)))), 0, 1)
    Y = (rng.rand(n, d) < prob).astype(np.float64)
    return X, sp.csr_matrix(Y), Y


def build_cases(quick):
    s = 10 if quick else 1
    cases = []
    for d in (1, 20):
        X, y = _dense_case(20000 // s, 50, d)
        for splitter in ("best", "random"):
            goal = {"best": 0.35, "random": 0.5}[splitter] if d == 1 else 1.0
            cases.append(dict(case=f"dense n={X.shape[0]} p=50 d={d} {splitter}", goal=goal,
                              ours=(X, y, dict(splitter=splitter)), sk=(X, y, dict(splitter=splitter))))
    X, y = _csc_case(10000 // s, 20000 // s, 0.001 * (s if quick else 1))
    for splitter in ("best", "random"):
        cases.append(dict(case=f"csc n={X.shape[0]} p={X.shape[1]} density=0.1% {splitter}", goal=0.5,
                          ours=(X, y, dict(splitter=splitter)), sk=(X, y, dict(splitter=splitter))))
    X, Ys, Yd = _label_case(10000 // s, 100, 1000 // s, 10)
    cases.append(dict(case=f"sparse labels n={X.shape[0]} p=100 d={Yd.shape[1]} max_depth=10",
                      goal=0.1, ours=(X, Ys, dict(max_depth=10)), sk=(X, Yd, dict(max_depth=10))))
    return cases, (X, Ys, Yd)


def _time_fit(cls, X, y, params):
    est = cls(random_state=0, **params)
    t0, c0 = time.perf_counter(), time.process_time()
    est.fit(X, y)
    return time.perf_counter() - t0, time.process_time() - c0, est


def _same_structure(a, b, X):
    """Whether two trees fitted on X are the same tree, walking both from the root.

    True: identical features and thresholds everywhere. "ties": wherever they differ, the two splits send the
    same training samples left (several features induce the same partition, typically when a node peels off a
    sample that is extreme in more than one feature; the improvements are then exactly equal, scikit-learn keeps
    the first of its random feature order and we the first in index order), or the mirror partition (left and
    right swapped, same improvement), so both trees make the same recursive partition of the training set.
    False: a split with a different partition.
    """
    ta, tb = a.tree_, b.tree_
    pa, pb = sp.csc_matrix(a.decision_path(X)), sp.csc_matrix(b.decision_path(X))

    def rows(path, node):
        return frozenset(path.indices[path.indptr[node]:path.indptr[node + 1]].tolist())

    stack, tie = [(0, 0)], False
    while stack:
        i, j = stack.pop()
        la, lb = ta.children_left[i], tb.children_left[j]
        if la < 0 and lb < 0:
            continue
        if la < 0 or lb < 0:
            return False
        ra, rb = ta.children_right[i], tb.children_right[j]
        if ta.feature[i] == tb.feature[j] and ta.threshold[i] == tb.threshold[j]:
            stack += [(la, lb), (ra, rb)]
        elif rows(pa, la) == rows(pb, lb):
            stack += [(la, lb), (ra, rb)]
            tie = True
        elif rows(pa, la) == rows(pb, rb):      # the same partition, mirrored
            stack += [(la, rb), (ra, lb)]
            tie = True
        else:
            return False
    return "ties" if tie else True


def csr_predict(X, y, repeats, inner=20):
    """Prediction from CSR input (thesis Sec. 8.2): one fully grown tree each, fitted on the CSC case data,
    then ``predict`` on the same rows as CSR, ``inner`` calls per timing, interleaved."""
    ours = DecisionTreeRegressor(random_state=0).fit(X, y)
    sk = SkTree(random_state=0).fit(X, y)
    Xr = sp.csr_matrix(X)
    same = _same_structure(ours, sk, X)
    if same is False:
        raise SystemExit("csr predict: ours and scikit-learn grew different trees")
    rows = []
    for r in range(repeats):
        order = [("ours", ours), ("sklearn", sk)]
        if r % 2:
            order.reverse()
        for impl, est in order:
            t0, c0 = time.perf_counter(), time.process_time()
            for _ in range(inner):
                est.predict(Xr)
            rows.append(dict(case=f"csr predict n={X.shape[0]} p={X.shape[1]} density=0.1% ({inner} calls)",
                             impl=impl, repeat=r, seconds=time.perf_counter() - t0,
                             cpu_seconds=time.process_time() - c0, node_count=est.tree_.node_count,
                             same_tree=same))
            print(f"[{r}] {rows[-1]['case']:<50} {impl:<8} {rows[-1]['seconds']:8.3f}s", flush=True)
    return rows


def forest_threads(X, y, repeats, n_estimators=32):
    """Fit time of one forest with n_jobs=1 and n_jobs=2 (wall clock), interleaved."""
    from forestbench.forest import RandomForestRegressor
    rows = []
    for r in range(repeats):
        order = [1, 2] if r % 2 == 0 else [2, 1]
        for n_jobs in order:
            est = RandomForestRegressor(n_estimators=n_estimators, max_features=0.3, n_jobs=n_jobs, random_state=0)
            t0, c0 = time.perf_counter(), time.process_time()
            est.fit(X, y)
            rows.append(dict(case=f"forest {n_estimators} trees n={X.shape[0]} p={X.shape[1]}", impl=f"n_jobs={n_jobs}",
                             repeat=r, seconds=time.perf_counter() - t0, cpu_seconds=time.process_time() - c0))
            print(f"[{r}] {rows[-1]['case']:<50} n_jobs={n_jobs} {rows[-1]['seconds']:8.3f}s", flush=True)
    return rows


def _sklearn_bytes(est):
    state = est.tree_.__getstate__()
    return int(state["nodes"].nbytes + state["values"].nbytes)


def model_bytes(X, Ys, Yd):
    ours = DecisionTreeRegressor(random_state=0).fit(X, Ys)
    node_itemsize = SkTree(max_depth=1).fit(X[:10], Yd[:10]).tree_.__getstate__()["nodes"].itemsize
    d = Yd.shape[1]
    sk_formula = ours.tree_.node_count * (node_itemsize + 8 * d)
    # check the formula against a real scikit-learn fit on a slice
    m = min(1000, X.shape[0])
    sk_small = SkTree(random_state=0).fit(X[:m], Yd[:m])
    ok = _sklearn_bytes(sk_small) == sk_small.tree_.node_count * (node_itemsize + 8 * d)
    return dict(ours_bytes=ours.model_bytes_, ours_nodes=ours.tree_.node_count,
                ours_leaves=ours.get_n_leaves(), sklearn_bytes=int(sk_formula),
                sklearn_formula_checked=bool(ok))


SMALL_GOALS_US = {"fit": 80.0, "predict": 30.0}


def small_trees(repeats, calls, block=50, seed=0):
    """Stump fit / predict times (seconds per call) through the public API, ours and scikit-learn interleaved."""
    rng = np.random.RandomState(seed)
    X = rng.rand(300, 5)
    y = X[:, 0] + 0.5 * X[:, 1] + 0.1 * rng.randn(300)
    impls = {"ours": DecisionTreeRegressor, "sklearn": SkTree}
    fitted = {k: cls(max_depth=1, random_state=0).fit(X, y) for k, cls in impls.items()}
    # same stump (a sanity check, not a timing)
    assert fitted["ours"].tree_.feature[0] == fitted["sklearn"].tree_.feature[0]
    np.testing.assert_allclose(fitted["ours"].predict(X), fitted["sklearn"].predict(X), atol=1e-12)
    # the ensembles' path: inputs validated once beforehand (ours: _fit_validated; scikit-learn's forests:
    # fit(check_input=False) on float32 X)
    from forestbench.tree._classes import validate_fit_data

    Xv, Yv, _, _, _ = validate_fit_data(DecisionTreeRegressor(), X, y)
    X32 = np.asarray(X, dtype=np.float32)
    clock = time.perf_counter
    rows = []
    for r in range(repeats):
        for op in ("fit", "ensemble_fit", "predict"):
            times = {"ours": [], "sklearn": []}
            for b in range(max(1, calls // block)):
                # blocks of `block` calls, alternating which library goes first: both meet the same load, and
                # each runs warm, as in a boosting loop (call-by-call alternation would time scikit-learn's
                # cache footprint on our calls)
                order = ["ours", "sklearn"] if (r + b) % 2 == 0 else ["sklearn", "ours"]
                for impl in order:
                    cls, est = impls[impl], fitted[impl]
                    out = times[impl]
                    for _ in range(block):
                        if op == "fit":
                            t0 = clock()
                            cls(max_depth=1, random_state=0).fit(X, y)
                        elif op == "ensemble_fit" and impl == "ours":
                            t0 = clock()
                            cls(max_depth=1, random_state=0)._fit_validated(Xv, Yv)
                        elif op == "ensemble_fit":
                            t0 = clock()
                            cls(max_depth=1, random_state=0).fit(X32, y, check_input=False)
                        else:
                            t0 = clock()
                            est.predict(X)
                        out.append(clock() - t0)
            for impl in order:
                rows.append(dict(op=op, impl=impl, repeat=r, median_s=float(np.median(times[impl])),
                                 calls=len(times[impl])))
            print(f"[{r}] stump {op:<12} ours {np.median(times['ours']) * 1e6:7.1f} us   "
                  f"sklearn {np.median(times['sklearn']) * 1e6:7.1f} us", flush=True)
    times = pd.DataFrame(rows)
    per = times.pivot_table(index=["op", "repeat"], columns="impl", values="median_s")
    summary = []
    labels = {"fit": "stump fit n=300 p=5 (public API)", "predict": "stump predict 300 rows (public API)",
              "ensemble_fit": "stump fit n=300 p=5 (ensemble path, validated once)"}
    for op in ("fit", "ensemble_fit", "predict"):
        part = per.loc[op]
        ours_us = float(part["ours"].median() * 1e6)
        goal = SMALL_GOALS_US.get(op, float("nan"))
        summary.append(dict(case=labels[op], ours_median_us=ours_us,
                            sklearn_median_us=float(part["sklearn"].median() * 1e6),
                            ratio=float(part["ours"].median() / part["sklearn"].median()),
                            paired_ratio_median=float((part["ours"] / part["sklearn"]).median()),
                            goal_us=goal, meets_goal=bool(ours_us <= goal) if goal == goal else None,
                            repeats=repeats, calls_per_repeat=calls))
    return times, pd.DataFrame(summary)


def _write_csv(path, df):
    buf = io.StringIO()
    df.to_csv(buf, index=False)
    write_text(path, buf.getvalue())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", default=str(Path(__file__).parent / "out"))
    ap.add_argument("--quick", action="store_true", help="10x smaller data (smoke test)")
    ap.add_argument("--only", default="", help="run only the cases whose name contains this text")
    ap.add_argument("--skip-predict", action="store_true", help="leave out the CSR prediction case")
    ap.add_argument("--skip-forest", action="store_true", help="leave out the n_jobs=1 vs 2 forest case")
    ap.add_argument("--small-only", action="store_true", help="only the small trees (stump) case")
    ap.add_argument("--small-calls", type=int, default=2000, help="timed calls per repeat for the stump case")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    small_times, small = small_trees(args.repeats, args.small_calls // (10 if args.quick else 1))
    _write_csv(out / "bench_tree_small_times.csv", small_times)
    _write_csv(out / "bench_tree_small_summary.csv", small)
    print()
    print(small[["case", "ours_median_us", "sklearn_median_us", "ratio", "paired_ratio_median", "goal_us",
                 "meets_goal"]].to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    if args.small_only:
        return

    cases, label_data = build_cases(args.quick)
    Xc, yc = next((c["ours"][0], c["ours"][1]) for c in cases if c["case"].startswith("csc"))
    cases = [c for c in cases if args.only in c["case"]]
    rows = []
    for r in range(args.repeats):
        for c in cases:
            order = [("ours", DecisionTreeRegressor, c["ours"]), ("sklearn", SkTree, c["sk"])]
            if r % 2:
                order.reverse()
            fitted = {}
            for impl, cls, (X, y, params) in order:
                sec, cpu, est = _time_fit(cls, X, y, params)
                fitted[impl] = est
                rows.append(dict(case=c["case"], impl=impl, repeat=r, seconds=sec, cpu_seconds=cpu,
                                 node_count=est.tree_.node_count))
                print(f"[{r}] {c['case']:<50} {impl:<8} {sec:8.3f}s", flush=True)
            # best splitter: the same tree as scikit-learn's (tie-free data); random: different RNGs
            same = (_same_structure(fitted["ours"], fitted["sklearn"], c["ours"][0])
                    if "best" in c["case"] and "sparse labels" not in c["case"] else None)
            for row in rows[-2:]:
                row["same_tree"] = same
            if same is False and "sparse labels" not in c["case"]:
                raise SystemExit(f"{c['case']}: ours and scikit-learn grew different trees")
    if not args.skip_predict:
        rows += csr_predict(Xc, yc, args.repeats)
    forest_rows = forest_threads(*_dense_case(20000 // (10 if args.quick else 1), 50, 1), args.repeats) \
        if not args.skip_forest else []
    times = pd.DataFrame(rows)
    med = times.pivot_table(index="case", columns="impl", values="seconds", aggfunc="median")
    goals = {c["case"]: c["goal"] for c in cases}
    names = list(dict.fromkeys(times["case"]))
    goals.update({name: 0.7 for name in names if name.startswith("csr predict")})
    summary = pd.DataFrame({
        "case": names,
        "ours_median_s": [med.loc[name, "ours"] for name in names],
        "sklearn_median_s": [med.loc[name, "sklearn"] for name in names],
    })
    summary["ratio"] = summary["ours_median_s"] / summary["sklearn_median_s"]
    # the same from the pairs of one repeat (robust to load drifting between repeats)
    paired = times.pivot_table(index=["case", "repeat"], columns="impl", values="seconds")
    paired_ratio = (paired["ours"] / paired["sklearn"]).groupby(level="case").median()
    summary["paired_ratio_median"] = summary["case"].map(paired_ratio)
    cpu = times.pivot_table(index="case", columns="impl", values="cpu_seconds", aggfunc="median")
    summary["cpu_ratio"] = summary["case"].map(cpu["ours"] / cpu["sklearn"])
    same = times.groupby("case")["same_tree"].agg(
        lambda s: None if s.isna().all() else ("ties" if "ties" in set(map(str, s.dropna())) and
                                               s.dropna().astype(str).isin(["True", "ties"]).all()
                                               else bool(s.dropna().astype(str).eq("True").all())))
    summary["same_tree"] = summary["case"].map(same)
    summary["goal"] = summary["case"].map(goals)
    summary["meets_goal"] = summary["ratio"] <= summary["goal"]
    summary["repeats"] = args.repeats

    mb = model_bytes(*label_data) if any("sparse labels" in c["case"] for c in cases) else None
    if forest_rows:
        ft = pd.DataFrame(forest_rows)
        fm = ft.pivot_table(index="case", columns="impl", values="seconds", aggfunc="median")
        paired = ft.pivot_table(index=["case", "repeat"], columns="impl", values="seconds")
        speedup = dict(case=fm.index[0], n_jobs1_median_s=float(fm["n_jobs=1"].iloc[0]),
                       n_jobs2_median_s=float(fm["n_jobs=2"].iloc[0]),
                       speedup=float(fm["n_jobs=1"].iloc[0] / fm["n_jobs=2"].iloc[0]),
                       paired_speedup_median=float((paired["n_jobs=1"] / paired["n_jobs=2"]).median()), goal=1.8)
        buf = io.StringIO()
        pd.concat([ft]).to_csv(buf, index=False)
        write_text(out / "bench_tree_forest_times.csv", buf.getvalue())
        print(f"\nforest n_jobs=2 vs 1: {speedup}")

    for name, df in (("bench_tree_times.csv", times), ("bench_tree_summary.csv", summary)):
        buf = io.StringIO()
        df.to_csv(buf, index=False)
        write_text(out / name, buf.getvalue())
    if mb is not None:
        buf = io.StringIO()
        pd.DataFrame([mb]).to_csv(buf, index=False)
        write_text(out / "bench_tree_model_bytes.csv", buf.getvalue())

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(9, 4.5))
    ypos = np.arange(len(summary))
    ax.barh(ypos, summary["ratio"], color=["tab:green" if m else "tab:red" for m in summary["meets_goal"]])
    for i, g in enumerate(summary["goal"]):
        ax.plot([g, g], [i - 0.4, i + 0.4], color="k", lw=2)
    ax.set_yticks(ypos, summary["case"], fontsize=8)
    ax.set_xscale("log")
    ax.set_xlabel(f"fit time ratio ours / scikit-learn (median of {args.repeats}; black = goal)")
    ax.invert_yaxis()
    fig.tight_layout()
    with atomic_path(out / "bench_tree.png", suffix=".png") as tmp:
        fig.savefig(tmp, dpi=120)
    plt.close(fig)

    print()
    print(summary[["case", "ours_median_s", "sklearn_median_s", "ratio", "paired_ratio_median", "cpu_ratio",
                   "same_tree", "goal", "meets_goal"]]
          .to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    if mb is not None:
        print(f"\nfully grown sparse-label tree: ours {mb['ours_bytes'] / 1e6:.2f} MB "
              f"({mb['ours_leaves']} leaves), scikit-learn {mb['sklearn_bytes'] / 1e6:.1f} MB "
              f"(formula checked on a real fit: {mb['sklearn_formula_checked']})")


if __name__ == "__main__":
    main()
