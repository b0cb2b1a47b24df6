"""Prepare time and peak memory of the largest raw files of the papers, on generated files of their size.

For each case a file of the published size and a plausible density is generated once (not timed), then the
prepare step (``forestbench.datasets.from_files.build_dataset``: read, label split, checks; then ``save_dataset``) runs
in a fresh subprocess ``--repeats`` times; the script reports the median wall time and the peak resident memory of
the subprocess (ru_maxrss).
Baselines where one exists: ``scipy.io.arff.loadarff`` on the dense file (it cannot read sparse ARFF) and
scikit-learn's C ``load_svmlight_file`` on an svmlight file of the same content.

    python benchmarks/bench_prepare.py [--scale 0.1] [--repeats 3] [--cases tmc2007,mediamill] [--out DIR]
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

# name: (rows, inputs, labels, mean non-zero inputs per row or None for dense, mean labels per row, layout)
CASES = {
    # full tmc2007: 28596 docs, 49060 binary word features, 22 labels, sparse ARFF
    "tmc2007": (28596, 49060, 22, 60, 2.2, "sparse"),
    # EUR-Lex eurovoc: 19348 docs, 5000 tf-idf features, 3993 labels (one fold file holds a tenth; here all rows)
    "eurlex_ev": (19348, 5000, 3993, 240, 5.3, "sparse"),
    # mediamill: 43907 keyframes, 120 dense features, 101 labels, dense ARFF
    "mediamill": (43907, 120, 101, None, 4.4, "dense"),
    # bookmarks: 87856 posts, 2150 binary features, 208 labels, sparse ARFF
    "bookmarks": (87856, 2150, 208, 45, 2.0, "sparse"),
}


def write_case(path: Path, n, p, d, nnz, card, layout, rng) -> None:
    with open(path, "w") as fh:
        fh.write(f"@relation {path.stem}\n")
        for j in range(p):
            fh.write(f"@attribute f{j} {'numeric' if layout == 'dense' or nnz > 100 else '{0,1}'}\n")
        for k in range(d):
            fh.write(f"@attribute l{k} {{0,1}}\n")
        fh.write("@data\n")
        for _ in range(n):
            labels = np.unique(rng.integers(0, d, size=max(1, rng.poisson(card))))
            if layout == "dense":
                x = np.round(rng.random(p), 6)
                y = np.zeros(d, dtype=int)
                y[labels] = 1
                fh.write(",".join(map(repr, x.tolist())) + "," + ",".join(map(str, y)) + "\n")
            else:
                cols = np.unique(rng.integers(0, p, size=max(1, rng.poisson(nnz))))
                vals = (["1"] * len(cols) if nnz <= 100
                        else [repr(v) for v in np.round(rng.random(len(cols)), 5).tolist()])
                items = [f"{c} {v}" for c, v in zip(cols.tolist(), vals)] + [f"{p + k} 1" for k in labels.tolist()]
                fh.write("{" + ",".join(items) + "}\n")


def write_svmlight_copy(arff: Path, out: Path, p: int) -> None:
    from forestbench.datasets.readers import read_arff

    data = read_arff(arff).data.tocsr()
    with open(out, "w") as fh:
        for i in range(data.shape[0]):
            row = data[i]
            cols, vals = row.indices, row.data
            labels = cols[cols >= p] - p
            feats = cols < p
            fh.write(",".join(map(str, labels)) + " " +
                     " ".join(f"{c + 1}:{v:g}" for c, v in zip(cols[feats], vals[feats])) + "\n")


CHILD = r"""
import json, resource, sys, time
kind, path, p, d = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
from pathlib import Path
import scipy.io.arff, sklearn.datasets
import forestbench.datasets.from_files
t0 = time.perf_counter()  # imports above are not timed
if kind == "forestbench":
    from forestbench.datasets.from_files import build_dataset
    from pathlib import Path
    entry = {"task": "multilabel", "source": {"kind": "download", "files": [{"name": Path(path).name}],
             "layout": {"type": "single", "data": [Path(path).name]}, "labels": {"from": "last", "d": d}}}
    ds = build_dataset("bench", entry, Path(path).parent)
    from forestbench.datasets.store import save_dataset
    save_dataset(ds, Path(path).with_suffix(".npz"))  # the whole prepare step: parse, build, write the .npz
    shape = [ds.n_samples, ds.n_features, ds.n_outputs]
    sparse = hasattr(ds.X, "tocsr")
elif kind == "scipy_arff":
    from scipy.io import arff
    data, meta = arff.loadarff(path)
    shape, sparse = [len(data), len(meta.names()), 0], False
elif kind == "forestbench_svmlight":
    from forestbench.datasets.readers import read_svmlight
    X, Y = read_svmlight(path, multilabel=True, n_features=p, zero_based=False)
    shape, sparse = [X.shape[0], X.shape[1], Y.shape[1]], True
elif kind == "sklearn_svmlight":
    from sklearn.datasets import load_svmlight_file
    X, y = load_svmlight_file(path, multilabel=True, n_features=p, zero_based=False)
    shape, sparse = [X.shape[0], X.shape[1], 0], True
elapsed = time.perf_counter() - t0
print(json.dumps({"seconds": elapsed, "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "shape": shape, "sparse": sparse}))
"""


def measure(kind: str, path: Path, p: int, d: int, repeats: int) -> dict:
    runs = []
    for _ in range(repeats):
        out = subprocess.run([sys.executable, "-c", CHILD, kind, str(path), str(p), str(d)], capture_output=True,
                             text=True)
        if out.returncode:
            raise SystemExit(f"{kind} on {path} failed:\n{out.stderr[-3000:]}")
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    return {"kind": kind, "median_s": statistics.median(r["seconds"] for r in runs),
            "runs_s": [round(r["seconds"], 3) for r in runs], "max_rss_mb": max(r["max_rss_mb"] for r in runs),
            "shape": runs[0]["shape"], "sparse": runs[0]["sparse"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="fraction of the published number of rows")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--out", default="benchmarks/out")
    parser.add_argument("--no-baselines", action="store_true")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.cases.split(","):
            n, p, d, nnz, card, layout = CASES[name]
            n = max(10, int(n * args.scale))
            path = Path(tmp) / f"{name}.arff"
            t0 = time.perf_counter()
            write_case(path, n, p, d, nnz, card, layout, rng)
            size_mb = path.stat().st_size / 2**20
            print(f"{name}: generated {n} x ({p} + {d}) {layout} ARFF, {size_mb:.1f} MiB "
                  f"in {time.perf_counter() - t0:.1f} s", flush=True)
            rows = [measure("forestbench", path, p, d, args.repeats)]
            if not args.no_baselines:
                if layout == "dense":
                    rows.append(measure("scipy_arff", path, p, d, args.repeats))
                else:
                    svm = Path(tmp) / f"{name}.svm"
                    write_svmlight_copy(path, svm, p)
                    rows.append(measure("forestbench_svmlight", svm, p, d, args.repeats))
                    rows.append(measure("sklearn_svmlight", svm, p, d, args.repeats))
            for r in rows:
                r.update(dataset=name, rows=n, file_mib=round(size_mb, 1))
                ratio = r["median_s"] / rows[0]["median_s"]
                print(f"  {r['kind']:<22} median {r['median_s']:7.2f} s  (x{ratio:4.2f} of forestbench ARFF)  "
                      f"peak RSS {r['max_rss_mb']:7.0f} MiB  shape {r['shape']}  sparse={r['sparse']}", flush=True)
            results += rows
    os.makedirs(args.out, exist_ok=True)
    out = Path(args.out) / "bench_prepare.json"
    out.write_text(json.dumps({"scale": args.scale, "repeats": args.repeats, "results": results}, indent=2) + "\n")
    print(f"-> {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
