"""gbrt-relabel-rpo's cost per stage against the size q of its Gaussian projection (thesis Figs 6.5-6.6), one thread.

The delicious-like problem of ``bench_boosting.py`` (12 920 training rows, 500 binary inputs, 983 labels), stumps,
logistic loss, learning rate 0.1, as Figs 6.5 and 6.6 run them; gbmort on the same problem for reference. Each
variant fits ``--stages`` stages; the CPU seconds per stage are the median over stages 2.. of its stage times (the
first carries the presort), and the medians over ``--repeats`` fits are reported, the variants interleaved and
their order reversed on every other repeat.

    python benchmarks/bench_relabel_q.py [--q 1 20 100 983] [--stages 6] [--repeats 3] [--out FILE]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from bench_boosting import delicious_like  # noqa: E402

from forestbench.boosting import GBMORTRegressor, GBRTRelabelRPORegressor  # noqa: E402


def per_stage(est) -> float:
    """Median CPU seconds of the stages after the first."""
    seconds = np.diff(np.asarray(est.stage_fit_seconds_, dtype=float))
    return float(np.median(seconds))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--q", type=int, nargs="+", default=[1, 20, 100, 983])
    ap.add_argument("--stages", type=int, default=6)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default="benchmarks/out/bench_relabel_q.json")
    args = ap.parse_args(argv)
    X, Y = delicious_like(12920, 500, 983, seed=0)
    kw = dict(n_estimators=args.stages, learning_rate=0.1, max_leaf_nodes=2, loss="logistic")
    variants = {"gbmort": lambda: GBMORTRegressor(**kw)}
    for q in args.q:
        variants[f"relabel-gaussian-q{q}"] = (lambda q=q: GBRTRelabelRPORegressor(
            output_projection="gaussian", n_components=q, random_state=0, **kw))
    times = {name: [] for name in variants}
    names = list(variants)
    for r in range(args.repeats):
        for name in (names if r % 2 == 0 else names[::-1]):
            times[name].append(per_stage(variants[name]().fit(X, Y)))
            print(f"repeat {r} {name}: {times[name][-1]:.4f} s per stage", file=sys.stderr)
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                cwd=Path(__file__).parent, check=False).stdout.strip() or None
    except OSError:
        commit = None
    import forestbench
    result = {"stages": args.stages, "repeats": args.repeats, "load_average": list(os.getloadavg()),
              "forestbench": str(Path(forestbench.__file__).parent), "commit_of_the_script": commit,
              "seconds_per_stage": {name: statistics.median(v) for name, v in times.items()},
              "every_repeat": times}
    for name, value in result["seconds_per_stage"].items():
        print(f"{name:24s} {value:.4f} s per stage")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(result, indent=2) + "\n")
    tmp.replace(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
