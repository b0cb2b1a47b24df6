"""Not a speed benchmark: CPU seconds of our random forest (fit + predict, one thread) on a prepared dataset, per
configuration, beside what ``forestbench plan``'s cost model charges it. It measures what the archive's run records
lack (configurations not run yet, e.g. the k x q grid of Fig 5.3 on delicious) so that the model can be checked
before a long run is sized with it; tests/data/forest_sparse_inputs_measured_cpu.json came from it.

Usage (from a checkout whose workflow prepared the dataset, e.g. ``snakemake --configfile config/thesis.yaml
--config 'select={experiments: [figure_5_3]}' --until split``):

    python benchmarks/forest_cost_probe.py --dataset delicious --protocol thesis_ch5_fixed --trees 10 \\
        none:22 none:100 none:500 gaussian14:22 gaussian14:500 gaussian1:500 [--out FILE]

A configuration is ``<projection><q>:<k>`` (``none`` for the original outputs), with the chapter's settings
(fully grown trees, scikit-learn's rule for constant features, per-tree projections).
"""
from __future__ import annotations

import argparse
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

import scipy.sparse as sp

from forestbench._io import write_json
from forestbench.datasets.registry import load_registry
from forestbench.datasets.splits import load_split
from forestbench.datasets.store import load_dataset
from forestbench.forest import RandomForestRegressor
from forestbench.workflow import resources
from forestbench.workflow.methods import get_method


def params_of(config: str, trees: int) -> dict:
    match = re.fullmatch(r"([a-z]+?)(\d*):(\d+)", config)
    if not match:
        raise SystemExit(f"forest_cost_probe: a configuration is <projection><q>:<k>, got {config!r}")
    kind, q, k = match.groups()
    params = dict(n_estimators=trees, max_features=int(k), min_samples_split=2, count_constant_features=True)
    if kind != "none":
        params.update(output_projection=kind, n_components=int(q), projection_sharing="per_tree")
    return params


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("configs", nargs="+")
    ap.add_argument("--dataset", default="delicious")
    ap.add_argument("--protocol", default="thesis_ch5_fixed")
    ap.add_argument("--repeat", type=int, default=0, help="which split of the protocol (default 0)")
    ap.add_argument("--trees", type=int, default=10)
    ap.add_argument("--data", type=Path, default=Path("data"))
    ap.add_argument("--registry", type=Path, default=Path("config/datasets.yaml"))
    ap.add_argument("--out", type=Path, help="write the rows as JSON here")
    args = ap.parse_args(argv)

    entry = load_registry(args.registry)[args.dataset]
    shape = entry["shape"]
    ds = load_dataset(args.data / "prepared" / f"{args.dataset}.npz")
    train, test, _ = load_split(args.data / "splits" / args.dataset / f"{args.protocol}.npz", args.repeat)
    X_train, X_test = ds.X[train], ds.X[test]
    Y_train = ds.Y[train].toarray() if sp.issparse(ds.Y) else ds.Y[train]
    sparse = resources.is_sparse_entry(entry)
    rows = []
    for config in args.configs:
        params = params_of(config, args.trees)
        forest = RandomForestRegressor(random_state=args.repeat, **params)
        start = time.process_time()
        forest.fit(X_train, Y_train)
        forest.predict(X_test)
        cpu = time.process_time() - start
        model = get_method("random_forest").cost_of(len(train), shape["p"], shape["d"], params, sparse=sparse,
                                                    density=resources.input_density(shape),
                                                    label_density=resources.label_density(shape)).fit_seconds
        rows.append({"config": config, "params": params, "cpu_s": round(cpu, 3), "model_s": round(model, 3),
                     "nodes_per_tree": forest.n_nodes_ // args.trees})
        print(f"{config:16s} CPU {cpu:8.2f} s   model {model:8.2f} s   model / measured {model / cpu:5.2f}",
              flush=True)
    if args.out:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout
        write_json(args.out, {
            "source": f"benchmarks/forest_cost_probe.py on {args.dataset} ({args.protocol}, split {args.repeat}, "
                      f"{len(train)} training rows), {args.trees} trees, one thread; CPU seconds of fit + predict",
            "dataset": args.dataset, "n_train": len(train), "p": shape["p"], "d": shape["d"], "sparse": sparse,
            "commit": commit.strip(), "machine": platform.platform(), "python": sys.version.split()[0],
            "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
