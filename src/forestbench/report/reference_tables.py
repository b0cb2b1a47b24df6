"""The published tables of ``config/reference/`` and the ``reference:`` entries that point at them: reading a table
and telling its kind, checking an entry against its table before any job runs, and the entry's protocol (the
published one, or a reduced one whose cells are comparisons, not verdicts).

It imports only the verdicts module of the report package, so every module may import it.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from forestbench.errors import ConfigError
from forestbench.report.verdicts import Protocol

PROTOCOLS = ("published", "reduced")

KIND_COLUMNS = {
    "results": {"dataset_id", "method_id", "metric", "value", "std"},
    "pvalues": {"row_method_id", "col_method_id", "p_value", "sign", "test", "metric"},
    "cd": {"row_type", "method_id", "average_rank", "value"},
    "grid": {"method_id", "metric", "value", "n_estimators", "max_depth"},  # cells indexed by parameters (slides)
}


def read_reference(reference_dir: Path, table: str) -> tuple[pd.DataFrame, str]:
    """The reference CSV as strings, and its kind: "results", "pvalues" or "cd"."""
    path = Path(reference_dir) / f"{table}.csv"
    if not path.exists():
        raise ConfigError(f"reference table {table!r}: {path} does not exist")
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    for kind, needed in KIND_COLUMNS.items():
        if needed <= set(frame.columns):
            return frame, kind
    raise ConfigError(f"reference table {path} is neither a results, a p-value, a critical-difference nor a "
                      f"parameter-grid table (columns: {', '.join(frame.columns)})")


def _entry(ref_cfg, experiment: str) -> tuple[str, str, str]:
    """A ``reference:`` entry's place in the config, table and metric, after checking it has the required keys."""
    where = f"experiments.{experiment}.reference"
    if not isinstance(ref_cfg, dict):
        raise ConfigError(f"{where} must be a mapping, got {type(ref_cfg).__name__}")
    for key in ("table", "metric", "methods"):
        if key not in ref_cfg:
            raise ConfigError(f"{where}: missing key {key!r}")
    return where, str(ref_cfg["table"]), str(ref_cfg["metric"])



def entry_protocol(ref_cfg: dict, where: str, name: str = "", repeats: int = 0) -> Protocol:
    """The entry's ``protocol`` (``published``, the default, or ``reduced``), ``published_protocol`` (how the
    published numbers were obtained) and ``run_protocol`` (what the experiment runs instead; required when
    reduced), with the experiment's protocol ``name`` and the ``repeats`` recorded."""
    kind = ref_cfg.get("protocol", "published")
    if kind not in PROTOCOLS:
        raise ConfigError(f"{where}.protocol must be one of {', '.join(PROTOCOLS)}, got {kind!r}")
    texts = {}
    for key in ("published_protocol", "run_protocol"):
        value = ref_cfg.get(key, "")
        if not isinstance(value, str):
            raise ConfigError(f"{where}.{key} must be a text describing the protocol, got {value!r}")
        texts[key] = " ".join(value.split())
    if kind == "reduced" and not texts["run_protocol"]:
        raise ConfigError(f"{where}: protocol: reduced needs run_protocol (what this experiment runs instead of "
                          "the published protocol, e.g. '30 trees, 3 splits, no tuning')")
    return Protocol(reduced=kind == "reduced", published=texts["published_protocol"], run=texts["run_protocol"],
                    name=str(name or ""), repeats=int(repeats))


def check_references(experiments: dict, reference_dir: Path) -> None:
    """:func:`check_reference` for every ``reference:`` entry (a mapping or a list of them) of ``experiments``."""
    cache: dict = {}
    for name, cfg in experiments.items():
        refs = cfg.get("reference")
        for ref_cfg in refs if isinstance(refs, list) else ([refs] if refs else []):
            check_reference(ref_cfg, reference_dir, name, cache, cfg.get("datasets"))


def check_reference(ref_cfg, reference_dir: Path, experiment: str, cache: dict | None = None,
                    datasets: list | None = None) -> None:
    """Check one ``reference:`` entry against its table before any job runs: the table exists, has the metric,
    and has every method_id the entry maps to (the report would otherwise fail only after the fits); a results
    table must share a dataset with the experiment's ``datasets`` (through the entry's ``datasets`` mapping), or
    every cell would be reported "not run". ``cache`` keeps tables read once across entries."""
    where, table, metric = _entry(ref_cfg, experiment)
    entry_protocol(ref_cfg, where)
    cache = {} if cache is None else cache
    if table not in cache:
        cache[table] = read_reference(reference_dir, table)
    ref, kind = cache[table]
    if kind == "cd":
        _mapping(ref_cfg, where, set(ref.loc[ref["row_type"] == "average_rank", "method_id"]))
        _check_cells(ref_cfg, reference_dir, where, metric, cache)
        return
    if kind == "grid":
        return          # cells indexed by parameters, with their own metric rule: forestbench.report.teaching
    ref = ref[ref["metric"] == metric]
    if ref.empty:
        raise ConfigError(f"{where}: metric {metric!r} not in reference table {table}")
    if kind == "pvalues":
        _mapping(ref_cfg, where, set(ref["row_method_id"]) | set(ref["col_method_id"]))
        if ref_cfg.get("cells") is not None and not ref["test"].str.lower().str.contains("wilcoxon").all():
            raise ConfigError(f"{where}.cells: only a test over datasets (Wilcoxon) re-tests published cells; "
                              f"{table} tests repeats within each dataset")
        _check_cells(ref_cfg, reference_dir, where, metric, cache)
    else:
        _mapping(ref_cfg, where, set(ref["method_id"]))
        dataset_map = ref_cfg.get("datasets") or {}
        if kind == "results" and isinstance(dataset_map, dict):
            unknown_ds = sorted(set(map(str, dataset_map.values())) - set(ref["dataset_id"]))
            if unknown_ds:
                raise ConfigError(f"{where}.datasets: dataset_id(s) {', '.join(unknown_ds)} not in {table}")
            if datasets:
                ours = {str(dataset_map.get(d, d)) for d in datasets}
                if not ours & set(ref["dataset_id"]):
                    raise ConfigError(f"{where}: {table} has none of the experiment's datasets "
                                      f"({', '.join(map(str, datasets))}); map them with `datasets:` "
                                      "(ours -> the table's dataset_id)")


def cells_tables(ref_cfg: dict, where: str) -> list[str]:
    """The published results table(s) named by ``cells``: one name, or a list when the cells of one figure or test
    are printed over several tables (thesis Tables 6.5 and 6.6 hold the 21 datasets of Fig 6.7 and Table 6.7)."""
    cells = ref_cfg.get("cells")
    if cells is None:
        return []
    names = [cells] if isinstance(cells, str) else cells
    if not isinstance(names, list) or not names or not all(isinstance(n, str) and n for n in names):
        raise ConfigError(f"{where}.cells must name a published results table or a list of them, got {cells!r}")
    return list(names)


def _check_cells(ref_cfg: dict, reference_dir: Path, where: str, metric: str, cache: dict) -> None:
    """``cells``: the published results table(s) whose per-dataset values a CD figure ranks or a test over datasets
    paired (reproduction._compare_reranked, compare_pvalues); together they must hold every mapped method's cells."""
    names = cells_tables(ref_cfg, where)
    if not names:
        return
    have: set = set()
    for cells in names:
        if cells not in cache:
            cache[cells] = read_reference(reference_dir, cells)
        cells_ref, cells_kind = cache[cells]
        if cells_kind != "results":
            raise ConfigError(f"{where}.cells: {cells} is a {cells_kind} table, not a results table")
        have |= set(cells_ref.loc[cells_ref["metric"] == metric, "method_id"])
    missing = sorted(set(map(str, ref_cfg["methods"].values())) - have)
    if missing:
        raise ConfigError(f"{where}.cells: {' + '.join(names)} has no {metric} cells of {', '.join(missing)}")


def load_reference(reference_dir: Path, table: str) -> pd.DataFrame:
    """A results reference table (value ± std per dataset and method)."""
    frame, kind = read_reference(reference_dir, table)
    if kind != "results":
        raise ConfigError(f"reference table {table!r} is not a results table (it is a {kind} table)")
    return frame


def _mapping(ref_cfg: dict, where: str, available: set[str]) -> dict[str, str]:
    """reference method_id -> our variant, checked against the ids the reference table has."""
    methods = ref_cfg.get("methods") or {}
    if not isinstance(methods, dict) or not methods:
        raise ConfigError(f"{where}.methods must map our variants to reference method_id values")
    unknown = sorted(set(map(str, methods.values())) - available)
    if unknown:
        raise ConfigError(f"{where}.methods: method_id(s) {', '.join(unknown)} not in {ref_cfg['table']} "
                          f"(available: {', '.join(sorted(available))})")
    out: dict[str, str] = {}
    for variant, method_id in methods.items():
        out.setdefault(str(method_id), str(variant))
    return out

