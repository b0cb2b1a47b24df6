"""The dataset registry (``config/datasets.yaml``): what each dataset is, where it comes from, how it is split."""
from __future__ import annotations

import json
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


# what a file spec says about where to download it, not about its content (the sha256 pins the content)
_LOCATION_KEYS = ("url", "mirrors", "alternative")


#: the shape keys the prepared data is checked against
_CHECKED_SHAPE_KEYS = ("n", "p", "d")


def checked_shape(shape):
    """The part of a registry shape that the prepared data is checked against (``n``, ``p``, ``d``); hints such as
    ``labels_per_row`` and ``input_density`` only size requests. Anything but a mapping is returned as it is."""
    if not isinstance(shape, dict):
        return shape
    return {k: v for k, v in shape.items() if k in _CHECKED_SHAPE_KEYS}


def prepare_entry(entry: dict) -> dict:
    """The part of a registry entry that determines its prepared file: the task, the expected shape and the source
    (without download locations and prose). Editing anything else (notes, citation, protocols, a mirror URL, the
    shape's cost-model hints ``labels_per_row`` and ``input_density``) does not change the prepared data."""
    source = dict(entry.get("source") or {})
    if source.get("files"):
        source["files"] = [{k: v for k, v in f.items() if k not in _LOCATION_KEYS} for f in source["files"]]
    return {"task": entry.get("task"), "shape": checked_shape(entry.get("shape")), "source": source}


def write_entry_file(name: str, entry: dict, directory: str | Path = "data/registry") -> Path:
    """Write ``<directory>/<name>.json`` (the :func:`prepare_entry` of ``entry``) only when its content changes, so
    that its modification time tells the workflow exactly which dataset's prepare step is out of date."""
    from forestbench._io import write_text_if_changed

    path = Path(directory) / f"{name}.json"
    text = json.dumps({"dataset": name, "entry": prepare_entry(entry)}, indent=2, sort_keys=True) + "\n"
    return write_text_if_changed(path, text)


def read_entry_file(path: str | Path, name: str) -> dict:
    """The entry written by :func:`write_entry_file` for dataset ``name``."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        entry = data["entry"]
        if data["dataset"] != name or not isinstance(entry, dict) or "source" not in entry or "task" not in entry:
            raise ValueError(f"it describes dataset {data['dataset']!r}, not {name!r}, or lacks task/source")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"registry entry file {path} is unreadable ({exc}); delete it and rerun") from None
    return entry
