"""The dataset registry (``config/datasets.yaml``): what each dataset is, where it comes from, how it is split."""
from __future__ import annotations

from pathlib import Path

from forestbench.errors import ConfigError
from forestbench.validation import load_yaml, validate


def load_registry(path: str | Path, schema_dir: str | Path | None = None) -> dict[str, dict]:
    """Load and validate the registry; returns ``{name: entry}``."""
    data = load_yaml(path)
    validate(data, "datasets", str(path), schema_dir)
    return data["datasets"]


def get_entry(registry: dict, name: str) -> dict:
    try:
        return registry[name]
    except KeyError:
        raise ConfigError(f"dataset {name!r} is not in the registry (known: {', '.join(sorted(registry))})") from None


def is_available(entry: dict) -> bool:
    return entry.get("status", "available") == "available" or bool(entry.get("local_path"))


def needs_network(entry: dict) -> bool:
    """Whether preparing the dataset needs a download: a downloaded source without a ``local_path``."""
    return (entry.get("source") or {}).get("kind") == "download" and not entry.get("local_path")


def protocol_of(registry: dict, dataset: str, protocol: str, global_protocols: dict | None = None) -> dict:
    """The protocol ``protocol`` for ``dataset``: the dataset's own definition first, else a global one."""
    entry = get_entry(registry, dataset)
    own = entry.get("protocols", {})
    if protocol in own:
        return own[protocol]
    if global_protocols and protocol in global_protocols:
        return global_protocols[protocol]
    known = sorted(set(own) | set(global_protocols or {}))
    raise ConfigError(f"dataset {dataset}: no protocol {protocol!r} (defined: {', '.join(known) or 'none'})")
