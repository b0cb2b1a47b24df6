"""Turn a registry entry into the canonical prepared file ``data/prepared/<dataset>.npz``.

The entry's ``source.kind`` selects how: ``embedded`` (a wheel's data files or a generator, no network) or
``download`` (raw files fetched into ``data/raw/<dataset>/`` by ``forestbench datasets fetch``, see
:mod:`forestbench.datasets.remote`).
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from forestbench.datasets.embedded import load_embedded
from forestbench.datasets.store import Dataset, save_dataset
from forestbench.errors import ConfigError


def _embedded(name: str, entry: dict, raw_dir: Path) -> Dataset:
    source = entry["source"]
    return load_embedded(name, source["loader"], source.get("params"))


def _download(name: str, entry: dict, raw_dir: Path) -> Dataset:
    from forestbench.datasets.remote import build_dataset

    return build_dataset(name, entry, raw_dir)


SOURCE_KINDS: dict[str, Callable[[str, dict, Path], Dataset]] = {"embedded": _embedded, "download": _download}


def prepare(name: str, entry: dict, out: str | Path, raw_dir: str | Path = "data/raw") -> Dataset:
    kind = entry["source"]["kind"]
    try:
        builder = SOURCE_KINDS[kind]
    except KeyError:
        raise ConfigError(f"dataset {name}: unknown source kind {kind!r} (known: {', '.join(SOURCE_KINDS)})") from None
    ds = builder(name, entry, Path(raw_dir) / name)
    ds.name = name
    ds.check_shape(entry.get("shape"))
    if ds.task != entry["task"]:
        raise ConfigError(f"dataset {name}: the registry says task {entry['task']!r} but the source gives {ds.task!r}")
    save_dataset(ds, out)
    return ds
