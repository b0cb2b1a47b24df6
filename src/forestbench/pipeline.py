"""The workflow's step commands: ``prepare``, ``split``, ``fit`` and ``collect``.

Each Snakemake rule calls one of them with explicit paths; run specifications arrive as JSON so that a step does
not need to re-read the configuration.
"""
from __future__ import annotations

import json
import os

from forestbench.errors import ConfigError


def _json_arg(text: str, what: str) -> dict:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"--{what} is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ConfigError(f"--{what} must be a JSON object")
    return value


def _prepare(args) -> None:
    from forestbench.datasets.download import raw_root
    from forestbench.datasets.prepare import prepare
    from forestbench.datasets.registry import get_entry, load_registry, read_entry_file

    if args.entry:
        entry = read_entry_file(args.entry, args.dataset)
    else:
        entry = get_entry(load_registry(args.registry), args.dataset)
    ds = prepare(args.dataset, entry, args.out, raw_dir=args.raw_dir or raw_root())
    print(f"prepared {args.dataset}: n={ds.n_samples} p={ds.n_features} d={ds.n_outputs} -> {args.out}")


def _split(args) -> None:
    from forestbench.datasets.splits import make_splits, save_splits
    from forestbench.datasets.store import load_dataset, read_header

    protocol = _json_arg(args.protocol, "protocol")
    ds = load_dataset(args.prepared)
    splits = make_splits(protocol, ds.n_samples, ds.given_splits, dataset=args.dataset)
    save_splits(args.out, splits, protocol, args.dataset, read_header(args.prepared)["content_sha256"])
    print(f"{len(splits)} split(s) of {args.dataset} -> {args.out}")


def _fit(args) -> None:
    from forestbench.runner import run

    spec = _json_arg(args.spec, "spec")
    job = {"attempt": args.attempt, "mem_mb": args.mem_mb, "threads": spec.get("threads")}
    fail_on = os.environ.get("FORESTBENCH_FAIL_ATTEMPTS", "")
    if fail_on and str(args.attempt) in fail_on.split(","):
        # fault injection for the workflow's retry tests: fail before any output is written
        raise SystemExit(f"fit: failing on purpose on attempt {args.attempt} (FORESTBENCH_FAIL_ATTEMPTS={fail_on})")
    record = run(spec, args.prepared, args.split, args.out, extra=job)
    scores = ", ".join(f"{k}={'undefined' if v is None else format(v, '.4g')}" for k, v in record["scores"].items())
    print(f"{spec['experiment']}/{spec['dataset']}/{spec['variant']} repeat {spec['repeat']}: {scores} "
          f"(fit {record['fit_wall_s']:.2f} s)")


def _collect(args) -> None:
    from forestbench.collect import collect, find_records, write_scores

    paths = args.records or find_records(args.results, args.experiment)
    if args.existing_only:
        missing = [p for p in paths if not os.path.exists(p)]
        paths = [p for p in paths if os.path.exists(p)]
        if missing:
            print(f"{len(missing)} record(s) of {args.experiment} not run yet, e.g. {missing[0]}")
    frame = collect(paths, experiment=args.experiment)
    write_scores(frame, args.out)
    print(f"{len(paths)} record(s) of {args.experiment} -> {args.out}")


def register(subparsers) -> None:
    p = subparsers.add_parser("prepare", help="prepare a dataset into its canonical .npz form")
    p.add_argument("dataset")
    p.add_argument("--registry", default="config/datasets.yaml")
    p.add_argument("--entry", default=None,
                   help="the dataset's registry entry as written by the workflow (data/registry/<dataset>.json); "
                        "read instead of --registry")
    p.add_argument("--raw-dir", default=None, help="raw-file cache (default: $FORESTBENCH_RAW or data/raw)")
    p.add_argument("--out", required=True)
    p.set_defaults(func=_prepare)

    p = subparsers.add_parser("split", help="draw the train/test splits of a protocol")
    p.add_argument("dataset")
    p.add_argument("--prepared", required=True)
    p.add_argument("--protocol", required=True, help="the protocol as a JSON object")
    p.add_argument("--out", required=True)
    p.set_defaults(func=_split)

    p = subparsers.add_parser("fit", help="fit, predict and score one job; write its run record")
    p.add_argument("--spec", required=True, help="the resolved run specification as a JSON object")
    p.add_argument("--prepared", required=True)
    p.add_argument("--split", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--attempt", type=int, default=1, help="Snakemake's attempt number (recorded)")
    p.add_argument("--mem-mb", type=int, default=None, help="memory requested for the job (recorded)")
    p.set_defaults(func=_fit)

    p = subparsers.add_parser("collect", help="gather run records into results/<experiment>/scores.csv")
    p.add_argument("experiment")
    p.add_argument("--records", nargs="*", help="record files (default: all under --results)")
    p.add_argument("--results", default="results")
    p.add_argument("--existing-only", action="store_true", help="skip listed records that do not exist (yet)")
    p.add_argument("--out", required=True)
    p.set_defaults(func=_collect)

