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
    from forestbench.workflow.runner import run

    spec = _json_arg(args.spec, "spec")
    job = {"attempt": args.attempt, "mem_mb": args.mem_mb, "threads": spec.get("threads")}
    selected = None
    if args.selected:
        from forestbench.workflow.dag_selection import read_selected

        selected = read_selected(args.selected)
    budget = None
    if args.budget:
        from forestbench.workflow.dag_selection import read_budget

        budget = read_budget(args.budget)
    record = run(spec, args.prepared, args.split, args.out, extra=job, selected=selected, budget=budget)
    scores = ", ".join(f"{k}={'undefined' if v is None else format(v, '.4g')}" for k, v in record["scores"].items())
    print(f"{spec['experiment']}/{spec['dataset']}/{spec['variant']} repeat {spec['repeat']}: {scores} "
          f"(fit {record['fit_wall_s']:.2f} s)")


def _tune(args) -> None:
    from forestbench.workflow.dag_selection import run_chunk

    spec = _json_arg(args.spec, "spec")
    budget = None
    if args.budget:
        from forestbench.workflow.dag_selection import read_budget

        budget = read_budget(args.budget)
    out = run_chunk(spec, args.prepared, args.split, args.out, cache_dir=args.cache, budget=budget)
    print(f"{spec['experiment']}/{spec['dataset']}/{spec['variant']} repeat {spec['repeat']} chunk {spec['chunk']}: "
          f"{len(out['results'])} candidate(s) ({out['reused']} reused) -> {args.out}")


def _budget(args) -> None:
    from forestbench.workflow.dag_selection import run_budget

    spec = _json_arg(args.spec, "spec")
    doc = run_budget(spec, args.prepared, args.split, args.out)
    caps = sorted(c["n_stages_max"] for c in doc["caps"].values())
    print(f"{spec['experiment']}/{spec['dataset']}/{spec['variant']}: T = {doc['reference_seconds']:.3g} s, "
          f"stage caps {caps[0]}..{caps[-1]} -> {args.out}")


def _select(args) -> None:
    from forestbench.workflow.dag_selection import select

    spec = _json_arg(args.spec, "spec")
    best = select(spec, args.chunks, args.out)
    print(f"{spec['experiment']}/{spec['dataset']}/{spec['variant']} repeat {spec['repeat']}: selected "
          f"{best['params']} (validation {spec['tune']['metric']} = {best['score']:.4g}) -> {args.out}")


def _collect(args) -> None:
    from forestbench.workflow.collect import (collect, current, expected_splits, find_records, read_expected,
                                              write_scores)

    paths = args.records or find_records(args.results, args.experiment)
    if args.existing_only:
        missing = [p for p in paths if not os.path.exists(p)]
        paths = [p for p in paths if os.path.exists(p)]
        if missing:
            print(f"{len(missing)} record(s) of {args.experiment} not run yet, e.g. {missing[0]}")
    expected = read_expected(args.expected) if args.expected else None
    paths, superseded = current(paths, expected, args.experiment)
    if superseded:
        print(f"{len(superseded)} superseded record(s) of {args.experiment} left out of the table (their cells "
              "show as not run; rerun their jobs to bring them back):")
        for path, why in superseded:
            print(f"  {path}: {why}")
    frame = collect(paths, experiment=args.experiment,
                    splits=expected_splits(expected) if expected is not None else None)
    write_scores(frame, args.out)
    if args.selection_out:
        from forestbench.workflow.collect import collect_selection

        write_scores(collect_selection(paths), args.selection_out)
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
    p.add_argument("--selected", default=None, help="selected parameters of a DAG-tuned variant (select's output)")
    p.add_argument("--budget", default=None, help="stage caps of a tuned variant with a time budget (budget's output)")
    p.set_defaults(func=_fit)

    p = subparsers.add_parser("tune", help="score one chunk of a tuned variant's candidates on validation rows")
    p.add_argument("--spec", required=True, help="the chunk's specification as a JSON object")
    p.add_argument("--prepared", required=True)
    p.add_argument("--split", required=True)
    p.add_argument("--cache", required=True, help="folder of finished candidates (reused when the grid grows)")
    p.add_argument("--budget", default=None, help="stage caps of a time budget (budget's output)")
    p.add_argument("--out", required=True)
    p.set_defaults(func=_tune)

    p = subparsers.add_parser("budget", help="turn a tuned variant's time budget into stage caps (measured once)")
    p.add_argument("--spec", required=True, help="the variant's specification as a JSON object")
    p.add_argument("--prepared", required=True)
    p.add_argument("--split", required=True)
    p.add_argument("--out", required=True)
    p.set_defaults(func=_budget)

    p = subparsers.add_parser("select", help="choose the best candidate of a tuned variant from its chunks")
    p.add_argument("--spec", required=True, help="the run specification as a JSON object")
    p.add_argument("--chunks", nargs="*", default=[])
    p.add_argument("--out", required=True)
    p.set_defaults(func=_select)

    p = subparsers.add_parser("collect", help="gather run records into results/<experiment>/scores.csv")
    p.add_argument("experiment")
    p.add_argument("--records", nargs="*", help="record files (default: all under --results)")
    p.add_argument("--results", default="results")
    p.add_argument("--existing-only", action="store_true", help="skip listed records that do not exist (yet)")
    p.add_argument("--out", required=True)
    p.add_argument("--expected", default=None,
                   help="what the configuration expects of each run (results/<experiment>/expected_runs.json): "
                        "records of another configuration, data or package version are left out and listed")
    p.add_argument("--selection-out", default=None,
                   help="also write the validation scores of tuned runs' candidates (selection.csv)")
    p.set_defaults(func=_collect)

