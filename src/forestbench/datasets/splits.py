"""Reproducible train/test splits, stored as explicit indices with a manifest of their checksums.

A protocol is a mapping with a ``type``:
- ``given``: the splits that come with the data (train/test files, published folds), in their order, the whole
  list ``repeats`` times (default once) when a randomised algorithm is rerun on the same split;
- ``random``: ``repeats`` random learning/test sets of ``n_train`` (or ``train_fraction``) and ``n_test`` samples
  (default: all the others), repeat r drawn from the seed sequence (seed, r), as "10 random LS/TS" in the papers;
  with ``vary_split: false`` every repeat uses the first split (one fixed LS/TS, the algorithm's seed varies);
- ``kfold``: ``repeats`` shuffled ``n_splits``-fold partitions, fold i of repetition r being split r*n_splits + i;
  with ``shuffle: false`` the folds are contiguous runs of the rows in their order in the data (the first
  n mod k folds one row longer, as scikit-learn's ``KFold`` without shuffling), the same in every repetition.

The file ``<protocol>.npz`` holds ``train_<i>`` / ``test_<i>``; the manifest ``<protocol>.json`` the protocol, the
checksum of the prepared data it was drawn from and a sha256 of every split, so a result traces to its exact split.
"""
from __future__ import annotations

import hashlib
import json
import math
import zipfile
from pathlib import Path

import numpy as np

from forestbench._io import atomic_path, write_json
from forestbench.errors import ConfigError, DataError

PROTOCOL_TYPES = ("given", "random", "kfold")


def make_splits(protocol: dict, n_samples: int, given=None, dataset: str = "?") -> list[tuple[np.ndarray, np.ndarray]]:
    kind = protocol.get("type")
    seed = int(protocol.get("seed", 0))
    if kind == "given":
        if not given:
            raise ConfigError(f"dataset {dataset}: protocol 'given' but the dataset comes with no train/test split")
        once = [(np.asarray(tr, dtype=np.int64), np.asarray(te, dtype=np.int64)) for tr, te in given]
        return once * int(protocol.get("repeats", 1))
    if kind == "random":
        repeats = int(protocol.get("repeats", 1))
        n_train = training_rows(protocol, n_samples)
        if n_train is None:
            raise ConfigError(f"dataset {dataset}: random protocol needs n_train or train_fraction")
        n_test = int(protocol.get("n_test", n_samples - n_train))
        if n_train <= 0 or n_test <= 0 or n_train + n_test > n_samples:
            raise DataError(f"dataset {dataset}: cannot draw {n_train} training + {n_test} test samples "
                            f"from {n_samples} samples")
        splits = []
        vary = bool(protocol.get("vary_split", True))
        for r in range(repeats):
            perm = np.random.default_rng([seed, r if vary else 0]).permutation(n_samples)
            splits.append((np.sort(perm[:n_train]), np.sort(perm[n_train:n_train + n_test])))
        return splits
    if kind == "kfold":
        k = int(protocol.get("n_splits", 10))
        repeats = int(protocol.get("repeats", 1))
        if not 2 <= k <= n_samples:
            raise DataError(f"dataset {dataset}: cannot make {k} folds of {n_samples} samples")
        shuffle = protocol.get("shuffle", True)
        if not isinstance(shuffle, bool):
            raise ConfigError(f"dataset {dataset}: kfold shuffle must be true or false, got {shuffle!r}")
        splits = []
        for r in range(repeats):
            order = np.random.default_rng([seed, r]).permutation(n_samples) if shuffle else np.arange(n_samples)
            folds = np.array_split(order, k)
            for i in range(k):
                train = np.concatenate([f for j, f in enumerate(folds) if j != i])
                splits.append((np.sort(train), np.sort(folds[i])))
        return splits
    raise ConfigError(f"dataset {dataset}: unknown protocol type {kind!r} (expected one of {PROTOCOL_TYPES})")


def training_rows(protocol: dict, n_samples: int | None) -> int | None:
    """Rows of the training part a protocol draws from ``n_samples`` (the smallest part for k-fold), or None when
    that cannot be told without the data (a ``given`` split; a fraction or folds of an unknown size)."""
    kind = protocol.get("type")
    if kind == "random" and "n_train" in protocol:
        return int(protocol["n_train"])
    if kind == "random" and "train_fraction" in protocol and n_samples:
        return int(round(float(protocol["train_fraction"]) * n_samples))
    if kind == "kfold" and n_samples:
        return int(n_samples - math.ceil(n_samples / int(protocol.get("n_splits", 10))))
    return None  # ``given``: the training part is in the data (``n_given`` counts splits, not rows)


def n_splits_of(protocol: dict, n_given: int | None = None) -> int:
    """How many splits a protocol yields, without the data (``given`` needs ``n_given``, default 1)."""
    kind = protocol.get("type")
    if kind == "given":
        return int(protocol.get("n_given", n_given or 1)) * int(protocol.get("repeats", 1))
    if kind == "random":
        return int(protocol.get("repeats", 1))
    if kind == "kfold":
        return int(protocol.get("n_splits", 10)) * int(protocol.get("repeats", 1))
    raise ConfigError(f"unknown protocol type {kind!r} (expected one of {PROTOCOL_TYPES})")


def _sha(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a, dtype=np.int64).tobytes()).hexdigest()


def save_splits(path: str | Path, splits, protocol: dict, dataset: str, data_sha256: str) -> Path:
    path = Path(path)
    arrays = {}
    for i, (train, test) in enumerate(splits):
        arrays[f"train_{i}"] = np.asarray(train, dtype=np.int64)
        arrays[f"test_{i}"] = np.asarray(test, dtype=np.int64)
    manifest = {
        "dataset": dataset,
        "protocol": protocol,
        "data_sha256": data_sha256,
        "n_splits": len(splits),
        "splits": [{"index": i, "n_train": len(tr), "n_test": len(te), "train_sha256": _sha(tr),
                    "test_sha256": _sha(te)} for i, (tr, te) in enumerate(splits)],
    }
    manifest["sha256"] = hashlib.sha256(json.dumps(manifest["splits"], sort_keys=True).encode()).hexdigest()
    # manifest first: a split file never exists without its manifest
    write_json(manifest_path(path), manifest)
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:
            np.savez(fh, **arrays)
    return path


def manifest_path(path: str | Path) -> Path:
    return Path(path).with_suffix(".json")


def load_split(path: str | Path, index: int) -> tuple[np.ndarray, np.ndarray, dict]:
    """The ``index``-th (train, test) pair and the manifest entry describing it; verified against the manifest."""
    path = Path(path)
    corrupted = (f"split file {path} or its manifest is missing or corrupted ({{}}); delete both and rerun the "
                 "'split' step")
    try:
        manifest = json.loads(manifest_path(path).read_text())
        with np.load(path, allow_pickle=False) as npz:
            if f"train_{index}" not in npz.files or f"test_{index}" not in npz.files:
                raise DataError(f"split file {path} has no split {index}")
            train, test = npz[f"train_{index}"], npz[f"test_{index}"]
        entry = manifest["splits"][index]
        expected = (entry["train_sha256"], entry["test_sha256"], manifest["sha256"], manifest["protocol"])
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, KeyError, IndexError, TypeError) as exc:
        raise DataError(corrupted.format(f"{type(exc).__name__}: {exc}")) from None
    if _sha(train) != expected[0] or _sha(test) != expected[1]:
        raise DataError(f"split file {path}: split {index} does not match its manifest checksum")
    return train, test, {"split_sha256": manifest["sha256"], "split_index": index, "protocol": manifest["protocol"],
                         "train_sha256": entry["train_sha256"], "test_sha256": entry["test_sha256"]}
