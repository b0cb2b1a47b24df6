"""Cost of hyper-parameter selection, and of reading the method registry when a Snakefile is parsed.

Three measurements, each a median over ``--repeats``:

1. ``staged``: staged selection of ``n_estimators`` costs one fit per candidate. For a boosting-like grid (a
   gradient-boosting estimator, ``--stages`` stages, square loss) the time of ``GridSelection`` with a 20 %
   holdout (fit on 80 % + scoring every stage of the validation rows) is divided by the time of one final fit with
   the same number of stages, per candidate. The naive alternative (one fit per scored ``n_estimators`` value) is
   reported beside it, extrapolated from the same fits.
2. ``chunk``: overhead per candidate of a DAG chunk job: the wall time of ``python -m forestbench tune`` on a chunk
   of ``--chunk`` cheap candidates, minus the candidates' own fit and scoring time, divided by their number
   (process start-up, loading data and split, writing results, all included).
3. ``parse``: the time to build the workflow's plan as a cluster job's re-parse does (``check_params=False``) and
   as the main process does (parameters checked against the estimators), and whether any estimator module was
   imported; ``--baseline-src`` points to the ``src`` folder of an older checkout (with its extensions built) to
   time its plan of its own default configuration beside.

    python benchmarks/bench_selection.py [--repeats 5] [--estimator forestbench|sklearn] [--out benchmarks/out]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]


def _gbrt(kind: str, stages: int):
    if kind == "forestbench":
        from forestbench.workflow.methods import get_method

        return get_method("gbmort").build({"n_estimators": stages, "max_leaf_nodes": 2, "learning_rate": 0.1},
                                          seed=0)
    from sklearn.ensemble import GradientBoostingRegressor

    return GradientBoostingRegressor(n_estimators=stages, max_leaf_nodes=2, learning_rate=0.1, random_state=0)


def bench_staged(repeats: int, stages: int, kind: str) -> dict:
    from forestbench.workflow.selection import GridSelection
    from forestbench.workflow import tuning
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(300, 5))
    y = 10 * np.sin(np.pi * X[:, 0] * X[:, 1]) + 20 * (X[:, 2] - 0.5) ** 2 + 10 * X[:, 3] + 5 * X[:, 4] \
        + rng.normal(size=300)
    grid = {"learning_rate": [0.1, 0.05, 0.02]}
    ratios, naive = [], []
    for _ in range(repeats):
        est = _gbrt(kind, stages)
        t0 = time.perf_counter()
        GridSelection(est, grid, validation={"holdout": 0.2}, staged="n_estimators", refit=False,
                      random_state=0).fit(X, y)
        selection = time.perf_counter() - t0
        t0 = time.perf_counter()
        for lr in grid["learning_rate"]:
            _gbrt(kind, stages).set_params(learning_rate=lr).fit(X, y)
        finals = time.perf_counter() - t0
        ratios.append(selection / finals)
        scored = tuning.scored_stages(stages)
        # one fit per scored n_estimators value costs about sum(k / stages) full fits
        naive.append(float(np.sum(scored) / stages))
    return {"estimator": kind, "stages": stages, "candidates": len(grid["learning_rate"]),
            "selection_over_final_fit": statistics.median(ratios), "all_ratios": ratios,
            "naive_over_final_fit": statistics.median(naive)}


def bench_chunk(repeats: int, chunk: int) -> dict:
    """Chunk jobs of 1 and of ``chunk`` shallow trees on Friedman1 (300 training rows), through the command line:
    the amortised overhead per candidate ((wall - own fit time) / candidates) and the marginal overhead of one
    more candidate inside a chunk (the slope between the two chunk sizes, fit time excluded)."""
    from forestbench.datasets.prepare import prepare
    from forestbench.datasets.registry import get_entry
    from forestbench.datasets.splits import make_splits, save_splits
    from forestbench.datasets.store import load_dataset, read_header
    from forestbench.workflow.experiments import Plan, TuneJob

    os.chdir(REPO)

    def plan_of(size):
        cfg = {"experiments": {"e": {"datasets": ["friedman1"], "protocol": "demo", "metrics": ["macro_r2"],
                                     "methods": [{"name": "t", "method": "decision_tree", "params": {},
                                                  "tune": {"grid": {"max_depth": list(range(1, size + 1))},
                                                           "mode": "dag", "chunk": size}}]}}}
        return Plan(cfg)

    walls: dict[int, list[tuple[float, float]]] = {1: [], chunk: []}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        plan = plan_of(chunk)
        prepared = tmp / "friedman1.npz"
        prepare("friedman1", get_entry(plan.registry, "friedman1"), prepared)
        ds = load_dataset(prepared)
        protocol = plan.protocol_spec("friedman1", "demo")
        split = save_splits(tmp / "split.npz", make_splits(protocol, ds.n_samples, ds.given_splits),
                            protocol, "friedman1", read_header(prepared)["content_sha256"])
        for r in range(repeats):
            for size in (1, chunk):  # interleaved
                spec = plan_of(size).tune_spec(TuneJob("e", "friedman1", "t", 0, 0))
                out = tmp / f"chunk-{size}-{r}.json"
                t0 = time.perf_counter()
                subprocess.run([sys.executable, "-m", "forestbench", "tune", "--spec", json.dumps(spec),
                                "--prepared", str(prepared), "--split", str(split), "--cache",
                                str(tmp / f"cache-{size}-{r}"), "--out", str(out)], check=True, capture_output=True)
                wall = time.perf_counter() - t0
                own = sum(res["fit_seconds"] for res in json.loads(out.read_text())["results"])
                walls[size].append((wall, own))
    med = {size: (statistics.median(w for w, _ in v), statistics.median(o for _, o in v)) for size, v in walls.items()}
    amortised = (med[chunk][0] - med[chunk][1]) / chunk
    marginal = ((med[chunk][0] - med[chunk][1]) - (med[1][0] - med[1][1])) / (chunk - 1)
    return {"chunk": chunk, "job_wall_s": {str(k): v[0] for k, v in med.items()},
            "amortised_overhead_per_candidate_s": amortised, "marginal_overhead_per_candidate_s": marginal}


PARSE = ("import sys, time, os; t = time.perf_counter(); "
         "from forestbench.workflow.experiments import load_plan, Plan; "
         "from forestbench.validation import load_yaml; "
         "cfg = load_yaml('config/config.yaml'); "
         "p = Plan(cfg, check_params={check}) if 'check_params' in Plan.__init__.__code__.co_varnames "
         "else Plan(cfg); "
         "heavy = [m for m in ('sklearn.ensemble', 'forestbench.tree._tree') if m in sys.modules]; "
         "print(time.perf_counter() - t, len(heavy))")


def bench_parse(repeats: int, baseline_src: str | None) -> dict:
    out = {}
    runs = {"job re-parse (check_params=False)": (None, False), "main process (parameters checked)": (None, True)}
    if baseline_src:
        runs["baseline"] = (baseline_src, True)
    for label, (src, check) in runs.items():
        env = dict(os.environ)
        if src:
            env["PYTHONPATH"] = src
        times, heavy = [], None
        for _ in range(repeats):
            # the baseline reads its own checkout's configuration
            cwd = Path(src).resolve().parent if src else REPO
            proc = subprocess.run([sys.executable, "-c", PARSE.format(check=check)], cwd=cwd, env=env,
                                  capture_output=True, text=True, check=True)
            seconds, heavy = proc.stdout.split()
            times.append(float(seconds))
        out[label] = {"median_s": statistics.median(times), "imports_estimators": heavy != "0", "all": times}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--stages", type=int, default=1000)
    ap.add_argument("--chunk", type=int, default=10)
    ap.add_argument("--estimator", choices=["forestbench", "sklearn"], default="sklearn")
    ap.add_argument("--baseline-src", default=None)
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "out"))
    args = ap.parse_args()
    result = {"staged": bench_staged(args.repeats, args.stages, args.estimator),
              "chunk": bench_chunk(args.repeats, args.chunk),
              "parse": bench_parse(args.repeats, args.baseline_src)}
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "bench_selection.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
