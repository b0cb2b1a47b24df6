"""Method variants: the cartesian product of a method entry's grid, each with its name and parameters.

Pure configuration logic (no estimator is imported), shared by the experiment planner and the reports.
"""
from __future__ import annotations

import itertools
import re

from forestbench.errors import ConfigError

NAME_PATTERN = r"[A-Za-z0-9_.=+-]+"

#: parameters of a run that are not estimator parameters (the input memory layouts of timing experiments: the
#: layout X is fitted from, and the one it is predicted from, by default CSR after a CSC fit)
RUN_PARAMETERS = ("input_layout", "predict_layout")


def format_value(value) -> str:
    """A parameter value as it appears in a variant name (1.0 stays "1.0": a fraction, not the int 1)."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return f"{value:.1f}"
    return str(value)


def expand_entry(experiment: str, entry: dict) -> list[tuple[str, dict]]:
    """(name, parameters) of every variant of one method entry. The name is the entry's ``name`` template filled
    with the parameters; when it has no placeholder and the grid has several points, ``-key=value`` is appended."""
    grid = entry.get("grid") or {}
    keys = list(grid)
    points = list(itertools.product(*(grid[k] for k in keys))) if keys else [()]
    out = []
    for values in points:
        combo = dict(zip(keys, values))
        params = {**entry.get("params", {}), **combo}
        template = entry["name"] if "name" in entry else entry["method"]
        try:
            name = template.format(**{k: format_value(v) for k, v in params.items()})
        except KeyError as exc:
            raise ConfigError(f"experiment {experiment}: method name template {template!r} uses {exc}, "
                              "which is neither a parameter nor a grid key") from None
        if combo and name == template and len(points) > 1:
            name += "".join(f"-{k}={format_value(v)}" for k, v in combo.items())
        if not re.fullmatch(NAME_PATTERN, name) or name in (".", ".."):
            raise ConfigError(f"experiment {experiment}: variant name {name!r} may only use letters, digits "
                              "and _.=+-, and may not be . or .. (it names a folder)")
        out.append((name, params))
    return out


def variant_names(experiment: str, methods: list) -> list[str]:
    """Names of every variant of an experiment's method entries (a plain string entry names itself)."""
    names = []
    for entry in methods:
        if isinstance(entry, dict) and ("name" in entry or "method" in entry):
            names += [name for name, _ in expand_entry(experiment, entry)]
        elif not isinstance(entry, dict):
            names.append(str(entry))
    return names
