"""Helpers for the Snakefile's own mechanics (not for the plan, which lives in :mod:`forestbench.workflow.experiments`).

:func:`freeze_signatures`: Snakemake asks ``inspect.signature`` of an input, params or resources function every time
it calls one, to learn which of ``wildcards``, ``input``, ``attempt``, ``threads`` ... to pass. It calls about ten
per job, so building the thesis DAG (about 25 000 jobs) computed some 700 000 signatures of the same few dozen
functions: about a sixth of the dry run's CPU time (``benchmarks/bench_dag.py --profile``). ``inspect.signature``
returns a function's ``__signature__`` attribute when it has one, so storing each signature once makes every later
request a lookup. The signature stored is the one ``inspect`` computes, so nothing Snakemake sees changes.
"""
from __future__ import annotations

import inspect
from collections.abc import MutableMapping

__all__ = ["freeze_signatures"]


def freeze_signatures(namespace: MutableMapping) -> int:
    """Store ``__signature__`` on every plain Python function of ``namespace`` (the Snakefile's globals, which hold
    the functions of every included rule file) that lacks one; return how many were stored.

    Only functions are touched: classes, modules, builtins and ``functools.partial`` objects are left alone, and so
    is a function that already carries a ``__signature__`` (a decorator's choice)."""
    stored = 0
    for value in list(namespace.values()):
        if inspect.isfunction(value) and "__signature__" not in value.__dict__:
            value.__signature__ = inspect.signature(value)
            stored += 1
    return stored
