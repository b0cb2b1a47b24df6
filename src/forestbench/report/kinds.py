"""The registry of report kinds, and what a kind receives and returns.

A report kind is a function ``f(ctx, spec, slug) -> Section`` registered under its name with
``@report_kind("name")`` in the module that defines it (:mod:`forestbench.report.experiment` for the general
kinds, :mod:`forestbench.report.teaching` for ``oob_curve``, :mod:`forestbench.report.paired` for ``paired``).
``REPORT_KINDS`` is complete once :mod:`forestbench.report.experiment` is imported
(``forestbench.report.REPORT_KINDS`` imports it); the ``kind`` enum of ``workflow/schemas/config.schema.yaml`` is
tested equal to it. Each kind's options are in its function's docstring.

This module imports nothing else of the report package, so every module may import it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pandas as pd

from forestbench._io import write_text

# the report directory's table of contents, read by the front page
MANIFEST = "manifest.json"


@dataclass
class Section:
    kind: str
    title: str
    files: dict[str, Path] = field(default_factory=dict)   # format label -> path
    images: list[Path] = field(default_factory=list)        # PNGs shown on the page
    html: str = ""                                          # table fragment for the HTML page
    markdown: str = ""                                      # table text for the Markdown report
    notes: list[str] = field(default_factory=list)
    data: dict = field(default_factory=dict)


@dataclass
class Context:
    experiment: str
    cfg: dict
    scores: pd.DataFrame
    out_dir: Path
    datasets: list[str]
    variants: list[str]
    written: list[Path] = field(default_factory=list)
    reference_dir: Path | None = None

    def where(self, index: int) -> str:
        return f"experiments.{self.experiment}.reports[{index}]"

    def write(self, path: Path, text: str) -> Path:
        write_text(path, text)
        self.written.append(path)
        return path

    def variants_for(self, spec: dict) -> list[str]:
        wanted = spec.get("variants")
        return [str(v) for v in wanted] if wanted else self.variants

    def datasets_for(self, spec: dict) -> list[str]:
        wanted = spec.get("datasets")
        return [str(d) for d in wanted] if wanted else self.datasets

    def restrict(self, rows: pd.DataFrame, spec: dict) -> pd.DataFrame:
        """``rows`` of the variants and datasets a report spec keeps (``variants:`` / ``datasets:``)."""
        return rows[rows["variant"].isin(self.variants_for(spec)) & rows["dataset"].isin(self.datasets_for(spec))]


ReportFn = Callable[[Context, dict, str], Section]
REPORT_KINDS: dict[str, ReportFn] = {}


def report_kind(name: str):
    """Register the decorated function as the report kind ``name`` (two functions under one name is an error)."""
    def register(fn: ReportFn) -> ReportFn:
        old = REPORT_KINDS.get(name)
        if old is not None and (old.__module__, old.__qualname__) != (fn.__module__, fn.__qualname__):
            raise ValueError(f"report kind {name!r} is registered twice ({REPORT_KINDS[name].__module__} and "
                             f"{fn.__module__})")
        REPORT_KINDS[name] = fn
        return fn
    return register
