"""Command line entry point: ``python -m forestbench <command> ...``.

Each command lives in its own module exposing ``register(subparsers)``; the module sets ``func`` on its parser.
"""
from __future__ import annotations

import argparse
import importlib
import sys

from forestbench.errors import ForestbenchError

# command modules, in the order of the data flow
COMMAND_MODULES: list[str] = [
    "forestbench.datasets.cli",
    "forestbench.workflow.pipeline",
    "forestbench.report.cli",
    "forestbench.workflow.plan",
    "forestbench.archive",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="forestbench", description=__doc__.splitlines()[0])
    subparsers = parser.add_subparsers(dest="command", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        result = args.func(args)
    except ForestbenchError as exc:
        print(f"forestbench {args.command}: error: {exc}", file=sys.stderr)
        return 2
    return int(result or 0)
