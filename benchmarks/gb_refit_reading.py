"""The other reading of the boosting papers' model selection for archived runs (config/README.md, "Gradient tree
boosting", A18): after the 20 % holdout selects the parameters and the number of iterations, the model is either
refitted on the whole training part (the workflow's default, ``tune.refit: true``) or kept as fitted on the other
80 % (``refit: false``). Each archived run of a DAG-tuned experiment is fitted again from its record's
specification and selected parameters with ``refit: false``, through the workflow's own runner, and scored on the
same test rows.

The first run is also refitted with its archived specification unchanged, and its score must equal the archived
one (checked), so that both readings are of the same selection.

Usage (the prepared data and splits from ``snakemake --until split`` with the same configuration):
    python benchmarks/gb_refit_reading.py --experiment table_6_1_group --dataset friedman1_group --data data
Prints one line per run and, per variant, the means over the runs of both readings.
"""
import argparse
import copy
import gzip
import json
import tempfile
from collections import defaultdict
from pathlib import Path

import numpy as np

from forestbench.workflow import runner


def fit(record: dict, data: Path, out: Path, refit: bool) -> dict:
    spec = copy.deepcopy(record["spec"])
    spec["tune"]["refit"] = refit
    dataset = record["dataset"]
    selected = {"params": record["selected_params"], "best_params": record["selected_params"],
                "best_score": record.get("validation_score")}
    return runner.run(spec, data / "prepared" / f"{dataset}.npz",
                      data / "splits" / dataset / f"{spec['protocol']}.npz", out, selected=selected)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--experiment", required=True)
    ap.add_argument("--dataset", required=True)
    ap.add_argument("--data", type=Path, default=Path("data"))
    ap.add_argument("--archive", type=Path, default=Path("archive"))
    ap.add_argument("--variants", nargs="*")
    args = ap.parse_args(argv)
    paths = sorted((args.archive / args.experiment / "runs" / args.dataset).glob("*/repeat-*.json.gz"))
    records = [json.loads(gzip.decompress(p.read_bytes())) for p in paths]
    records = [r for r in records if not args.variants or r["variant"] in args.variants]
    if not records:
        raise SystemExit(f"{args.archive / args.experiment}: no archived run of {args.dataset}")
    untuned = [r["variant"] for r in records if (r["spec"].get("tune") or {}).get("mode") != "dag"]
    if untuned:
        raise SystemExit(f"{args.experiment}: {', '.join(sorted(set(untuned)))} not tuned in the DAG (mode dag)")
    metric = records[0]["spec"]["tune"]["metric"]
    by_variant = defaultdict(list)
    with tempfile.TemporaryDirectory() as tmp:
        again = fit(records[0], args.data, Path(tmp) / "check.json", refit=True)["scores"][metric]
        if again != records[0]["scores"][metric]:
            raise SystemExit(f"refit of {records[0]['variant']} repeat {records[0]['repeat']}: {metric} {again} "
                             f"is not the archived {records[0]['scores'][metric]}")
        for i, record in enumerate(records):
            kept = fit(record, args.data, Path(tmp) / f"{i}.json", refit=False)
            pair = (record["scores"][metric], kept["scores"][metric])
            by_variant[record["variant"]].append(pair)
            print(f"{record['variant']} repeat {record['repeat']}: refitted {pair[0]:.4f}, kept on the fit rows "
                  f"{pair[1]:.4f}", flush=True)
    print(f"\n{metric}, means over the runs (std): refitted on the training part / kept on its fit rows / difference")
    for variant, pairs in by_variant.items():
        a, b = np.array(pairs).T
        print(f"{variant}: {a.mean():.3f} ({a.std(ddof=1) if len(a) > 1 else 0:.3f}) / "
              f"{b.mean():.3f} ({b.std(ddof=1) if len(b) > 1 else 0:.3f}) / {(b - a).mean():+.3f} "
              f"(from {(b - a).min():+.3f} to {(b - a).max():+.3f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
