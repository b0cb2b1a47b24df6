"""``forestbench report experiment|index``: build one experiment's report, or the front page of all of them."""
from __future__ import annotations

import argparse
from pathlib import Path

from forestbench.errors import ConfigError


def _load_experiments(configfile: Path) -> dict:
    import yaml

    try:
        with open(configfile, encoding="utf-8") as fh:
            config = yaml.safe_load(fh) or {}
    except FileNotFoundError as exc:
        raise ConfigError(f"{configfile}: config file does not exist") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"{configfile}: invalid YAML: {exc}") from exc
    experiments = config.get("experiments") if isinstance(config, dict) else None
    if not isinstance(experiments, dict):
        raise ConfigError(f"{configfile}: no top-level 'experiments' mapping")
    return experiments


def _experiments_of(args: argparse.Namespace) -> dict:
    """The experiments mapping, from --experiments-json (what the workflow passes: its merged configuration) or
    from --configfile."""
    import json

    if args.experiments_json is not None:
        try:
            experiments = json.loads(args.experiments_json)
        except ValueError as exc:
            raise ConfigError(f"--experiments-json is not valid JSON: {exc}") from None
        if not isinstance(experiments, dict):
            raise ConfigError("--experiments-json must be a JSON object (experiment -> configuration)")
        return experiments
    if args.configfile is None:
        raise ConfigError("give --configfile or --experiments-json")
    return _load_experiments(args.configfile)


def _experiment(args: argparse.Namespace) -> int:
    from forestbench.report import build_experiment_report

    experiments = _experiments_of(args)
    if args.experiment not in experiments:
        raise ConfigError(f"{args.configfile}: experiment {args.experiment!r} not found "
                          f"(known: {', '.join(map(str, experiments))})")
    written = build_experiment_report(args.scores, args.experiment, experiments[args.experiment] or {},
                                      args.reference_dir, args.out, selection_csv=args.selection)
    print(f"report {args.experiment}: {len(written)} file(s) written under {args.out}")
    return 0


def _index(args: argparse.Namespace) -> int:
    """The front page lists the configured experiments (those not run yet too) and every other experiment of the
    results directory that has a report, whichever configuration built it."""
    from forestbench.report import build_index
    from forestbench.report.index import discover_reports

    experiments = _experiments_of(args)
    dirs = discover_reports(Path(args.results), [str(name) for name in experiments])
    path = build_index(dirs, args.out)
    print(f"report index: {path}")
    return 0


def register(subparsers) -> None:
    parser = subparsers.add_parser("report", help="build report tables, figures and the HTML/Markdown index")
    sub = parser.add_subparsers(dest="report_command", required=True)
    exp = sub.add_parser("experiment", help="tables, figures and reproduction comparison of one experiment")
    exp.add_argument("--scores", type=Path, required=True, help="tidy scores table results/<E>/scores.csv")
    exp.add_argument("--selection", type=Path, default=None,
                     help="validation scores of tuned runs (results/<E>/selection.csv): adds the selection section")
    exp.add_argument("--experiment", required=True, help="experiment name (a key of experiments: in the config)")
    exp.add_argument("--configfile", type=Path, help="YAML config with an 'experiments' mapping")
    exp.add_argument("--experiments-json", help="the 'experiments' mapping as JSON (instead of --configfile)")
    exp.add_argument("--reference-dir", type=Path, default=Path("config/reference"),
                     help="directory of the published reference CSVs (default: config/reference)")
    exp.add_argument("--out", type=Path, required=True, help="output directory, e.g. results/<E>/report")
    exp.set_defaults(func=_experiment)
    idx = sub.add_parser("index", help="results/report/index.html and index.md: every configured experiment and "
                                       "every other one with a report under --results")
    idx.add_argument("--configfile", type=Path)
    idx.add_argument("--experiments-json", help="the 'experiments' mapping as JSON (instead of --configfile)")
    idx.add_argument("--results", type=Path, default=Path("results"), help="results root (default: results)")
    idx.add_argument("--out", type=Path, default=Path("results/report"), help="output directory")
    idx.set_defaults(func=_index)
