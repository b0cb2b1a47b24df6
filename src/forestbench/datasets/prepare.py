"""Turn a registry entry into the canonical prepared file ``data/prepared/<dataset>.npz``.

The entry's ``source.kind`` selects how: ``embedded`` (a wheel's data files or a generator, no network) or
``download`` (raw files fetched into ``<raw cache>/<dataset>/`` by ``forestbench datasets fetch``, see
:mod:`forestbench.datasets.from_files`).
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable

import numpy as np
import scipy.sparse as sp

from forestbench.datasets.embedded import load_embedded
from forestbench.datasets.store import Dataset, save_dataset
from forestbench.errors import ConfigError, DataError

FLOAT32_MAX = float(np.finfo(np.float32).max)


def _embedded(name: str, entry: dict, raw_dir: Path) -> Dataset:
    source = entry["source"]
    return load_embedded(name, source["loader"], source.get("params"))


def _download(name: str, entry: dict, raw_dir: Path) -> Dataset:
    from forestbench.datasets.from_files import build_dataset

    return build_dataset(name, entry, raw_dir)


SOURCE_KINDS: dict[str, Callable[[str, dict, Path], Dataset]] = {"embedded": _embedded, "download": _download}


def check_inputs(ds: Dataset) -> None:
    """Refuse inputs that every method could not use alike: missing values (the forests of this project do not
    handle them, some peers do, so the same data would mean different things to different methods) and finite
    values beyond the float32 range of the prepared file (they would silently become infinite)."""
    X = ds.X.tocsr() if sp.issparse(ds.X) else np.asarray(ds.X)
    vals = X.data if sp.issparse(X) else X
    if not np.issubdtype(vals.dtype, np.floating):
        return
    with np.errstate(invalid="ignore"):
        bad_nan = np.isnan(vals)
        bad_big = np.abs(vals) > FLOAT32_MAX
    for bad, what in ((bad_nan, "missing"), (bad_big, "out-of-float32-range")):
        if not bad.any():
            continue
        if sp.issparse(X):
            k = int(np.flatnonzero(bad)[0])
            row, col = int(np.searchsorted(X.indptr, k, side="right")) - 1, int(X.indices[k])
        else:
            row, col = (int(i) for i in np.argwhere(bad)[0])
        names = ds.meta.get("feature_names")
        column = repr(names[col]) if names and col < len(names) else str(col)
        if what == "missing":
            raise DataError(f"dataset {ds.name}: {int(bad.sum())} missing input value(s), the first at row {row}, "
                            f"column {column}; add '- op: impute' to source.preprocess of its registry entry "
                            "(missing inputs are refused so that every method sees the same data)")
        raise DataError(f"dataset {ds.name}: input value at row {row}, column {column} is beyond the float32 "
                        f"range of prepared data (|x| <= {FLOAT32_MAX:.4g})")


def prepare(name: str, entry: dict, out: str | Path, raw_dir: str | Path | None = None) -> Dataset:
    """Build dataset ``name`` from its registry entry and write it to ``out``. ``raw_dir``: the raw-file cache
    (default: ``$FORESTBENCH_RAW`` or ``data/raw``, as for ``forestbench datasets fetch``)."""
    if raw_dir is None:
        from forestbench.datasets.download import raw_root

        raw_dir = raw_root()
    kind = entry["source"]["kind"]
    try:
        builder = SOURCE_KINDS[kind]
    except KeyError:
        raise ConfigError(f"dataset {name}: unknown source kind {kind!r} (known: {', '.join(SOURCE_KINDS)})") from None
    ds = builder(name, entry, Path(raw_dir) / name)
    ds.name = name
    check_inputs(ds)
    ds.check_shape(entry.get("shape"))
    if ds.task != entry["task"]:
        raise ConfigError(f"dataset {name}: the registry says task {entry['task']!r} but the source gives {ds.task!r}")
    save_dataset(ds, out)
    return ds
