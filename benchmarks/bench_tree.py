"""Benchmark: forestbench.tree.DecisionTreeRegressor vs sklearn.tree.DecisionTreeRegressor.

Both are fitted side by side in one process, interleaved (ours, sklearn, then
sklearn, ours on the next repeat, ...) so that load from other processes hits
both alike; the median over ``--repeats`` runs is reported. Cases (issue 4):

* dense float32 X (C order), n=20000, p=50, d=1 and d=20, best and random
  splitters, fully grown;
* CSC X, n=10000, p=20000, density 0.1%, best and random, fully grown;
* sparse 0/1 labels, n=10000, p=100, d=1000, ~10 labels per row,
  max_depth=10: ours on the CSR label matrix, scikit-learn on the dense one.

Also reported: model bytes of a fully grown tree on the sparse-label case. Ours
is measured; scikit-learn's is its node array plus its dense (node x output)
value array for the same node count (fitting scikit-learn's fully grown tree
on 1000 dense outputs takes many minutes); the formula is checked against a
real scikit-learn fit on a 1000-row slice.

Writes ``<out>/bench_tree_times.csv`` (every run), ``bench_tree_summary.csv``
(medians, ratio of the medians = the goal metric, and the median of the
per-repeat ratios as a load-robust cross-check), ``bench_tree_model_bytes.csv``
and ``bench_tree.png``; prints the ratio table.
Usage: python benchmarks/bench_tree.py [--repeats 5] [--out benchmarks/out] [--quick]
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
            cases.append(dict(case=f"dense n={X.shape[0]} p=50 d={d} {splitter}", goal=1.0,
                              ours=(X, y, dict(splitter=splitter)), sk=(X, y, dict(splitter=splitter))))
    X, y = _csc_case(10000 // s, 20000 // s, 0.001 * (s if quick else 1))
    for splitter in ("best", "random"):
        cases.append(dict(case=f"csc n={X.shape[0]} p={X.shape[1]} density=0.1% {splitter}", goal=1.0,
                          ours=(X, y, dict(splitter=splitter)), sk=(X, y, dict(splitter=splitter))))
    X, Ys, Yd = _label_case(10000 // s, 100, 1000 // s, 10)
    cases.append(dict(case=f"sparse labels n={X.shape[0]} p=100 d={Yd.shape[1]} max_depth=10",
                      goal=0.1, ours=(X, Ys, dict(max_depth=10)), sk=(X, Yd, dict(max_depth=10))))
    return cases, (X, Ys, Yd)


def _time_fit(cls, X, y, params):
    est = cls(random_state=0, **params)
    t0 = time.perf_counter()
    est.fit(X, y)
    return time.perf_counter() - t0, est


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


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", default=str(Path(__file__).parent / "out"))
    ap.add_argument("--quick", action="store_true", help="10x smaller data (smoke test)")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    cases, label_data = build_cases(args.quick)
    rows = []
    for r in range(args.repeats):
        for c in cases:
            order = [("ours", DecisionTreeRegressor, c["ours"]), ("sklearn", SkTree, c["sk"])]
            if r % 2:
                order.reverse()
            for impl, cls, (X, y, params) in order:
                sec, est = _time_fit(cls, X, y, params)
                rows.append(dict(case=c["case"], impl=impl, repeat=r, seconds=sec,
                                 node_count=est.tree_.node_count))
                print(f"[{r}] {c['case']:<50} {impl:<8} {sec:8.3f}s", flush=True)
    times = pd.DataFrame(rows)
    med = times.pivot_table(index="case", columns="impl", values="seconds", aggfunc="median")
    goals = {c["case"]: c["goal"] for c in cases}
    summary = pd.DataFrame({
        "case": [c["case"] for c in cases],
        "ours_median_s": [med.loc[c["case"], "ours"] for c in cases],
        "sklearn_median_s": [med.loc[c["case"], "sklearn"] for c in cases],
    })
    summary["ratio"] = summary["ours_median_s"] / summary["sklearn_median_s"]
    # the same from the pairs of one repeat (robust to load drifting between repeats)
    paired = times.pivot_table(index=["case", "repeat"], columns="impl", values="seconds")
    paired_ratio = (paired["ours"] / paired["sklearn"]).groupby(level="case").median()
    summary["paired_ratio_median"] = summary["case"].map(paired_ratio)
    summary["goal"] = summary["case"].map(goals)
    summary["meets_goal"] = summary["ratio"] <= summary["goal"]
    summary["repeats"] = args.repeats

    mb = model_bytes(*label_data)

    for name, df in (("bench_tree_times.csv", times), ("bench_tree_summary.csv", summary)):
        buf = io.StringIO()
        df.to_csv(buf, index=False)
        write_text(out / name, buf.getvalue())
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
    print(summary[["case", "ours_median_s", "sklearn_median_s", "ratio", "paired_ratio_median", "goal",
                   "meets_goal"]]
          .to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    print(f"\nfully grown sparse-label tree: ours {mb['ours_bytes'] / 1e6:.2f} MB "
          f"({mb['ours_leaves']} leaves), scikit-learn {mb['sklearn_bytes'] / 1e6:.1f} MB "
          f"(formula checked on a real fit: {mb['sklearn_formula_checked']})")


if __name__ == "__main__":
    main()
