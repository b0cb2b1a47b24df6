"""The canonical on-disk form of a prepared dataset.

One uncompressed ``.npz`` per dataset (no pickles): X dense float32 or CSR/CSC, Y dense float64 or CSR, the metadata
as JSON, optional given splits (train/test files of the source, or published folds), and a sha256 of every array so
that a truncated or corrupted file is detected on load.
"""
from __future__ import annotations

import hashlib
import json
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from forestbench._io import atomic_path
from forestbench.errors import DataError

TASKS = ("multilabel", "multioutput_regression", "regression", "binary", "multiclass")
FORMAT_VERSION = 1


@dataclass
class Dataset:
    name: str
    X: Any
    Y: Any
    task: str
    meta: dict = field(default_factory=dict)
    given_splits: list[tuple[np.ndarray, np.ndarray]] | None = None

    def __post_init__(self):
        if self.task not in TASKS:
            raise DataError(f"dataset {self.name}: unknown task {self.task!r} (expected one of {', '.join(TASKS)})")
        if self.X.shape[0] != self.Y.shape[0]:
            raise DataError(f"dataset {self.name}: X has {self.X.shape[0]} rows but Y has {self.Y.shape[0]}")

    @property
    def n_samples(self) -> int:
        return self.X.shape[0]

    @property
    def n_features(self) -> int:
        return self.X.shape[1]

    @property
    def n_outputs(self) -> int:
        return 1 if self.Y.ndim == 1 else self.Y.shape[1]

    def check_shape(self, expected: dict | None) -> None:
        """Raise a DataError naming the dataset when the shape differs from ``expected`` ({n, p, d}, any subset)."""
        if not expected:
            return
        actual = {"n": self.n_samples, "p": self.n_features, "d": self.n_outputs}
        wrong = {k: (v, actual[k]) for k, v in expected.items() if k in actual and v is not None and v != actual[k]}
        if wrong:
            detail = ", ".join(f"{k}={got} (expected {want})" for k, (want, got) in wrong.items())
            raise DataError(f"dataset {self.name}: wrong shape: {detail}")


def _matrix_arrays(prefix: str, M) -> dict[str, np.ndarray]:
    if sp.issparse(M):
        fmt = M.format
        if fmt not in ("csr", "csc"):
            M, fmt = M.tocsr(), "csr"
        M.sort_indices()
        return {
            f"{prefix}_format": np.array(fmt),
            f"{prefix}_data": M.data,
            f"{prefix}_indices": M.indices,
            f"{prefix}_indptr": M.indptr,
            f"{prefix}_shape": np.array(M.shape, dtype=np.int64),
        }
    return {f"{prefix}_format": np.array("dense"), f"{prefix}": np.asarray(M)}


def _matrix_from(prefix: str, arrays) -> Any:
    fmt = str(arrays[f"{prefix}_format"])
    if fmt == "dense":
        return arrays[prefix]
    cls = sp.csr_matrix if fmt == "csr" else sp.csc_matrix
    parts = (arrays[f"{prefix}_data"], arrays[f"{prefix}_indices"], arrays[f"{prefix}_indptr"])
    return cls(parts, shape=tuple(arrays[f"{prefix}_shape"]))


def _digest(arrays: dict[str, np.ndarray]) -> str:
    h = hashlib.sha256()
    for key in sorted(arrays):
        a = np.ascontiguousarray(arrays[key])
        h.update(key.encode())
        h.update(str(a.dtype).encode())
        h.update(str(a.shape).encode())
        h.update(a.tobytes())
    return h.hexdigest()


def save_dataset(ds: Dataset, path: str | Path) -> Path:
    """Write ``ds`` atomically to ``path`` (.npz). Returns the path."""
    path = Path(path)
    X = ds.X
    if not sp.issparse(X):
        X = np.asarray(X, dtype=np.float32)
    elif X.dtype != np.float32:
        X = X.astype(np.float32)
    Y = ds.Y if sp.issparse(ds.Y) else np.asarray(ds.Y, dtype=np.float64)
    if sp.issparse(Y) and Y.dtype != np.float64:
        Y = Y.astype(np.float64)
    arrays = {**_matrix_arrays("X", X), **_matrix_arrays("Y", Y)}
    for i, (train, test) in enumerate(ds.given_splits or []):
        arrays[f"split{i}_train"] = np.asarray(train, dtype=np.int64)
        arrays[f"split{i}_test"] = np.asarray(test, dtype=np.int64)
    header = {
        "format_version": FORMAT_VERSION,
        "name": ds.name,
        "task": ds.task,
        "shape": {"n": ds.n_samples, "p": ds.n_features, "d": ds.n_outputs},
        "n_given_splits": len(ds.given_splits or []),
        "content_sha256": _digest(arrays),
        "meta": ds.meta,
    }
    arrays["header_json"] = np.frombuffer(json.dumps(header, sort_keys=True).encode(), dtype=np.uint8)
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:
            np.savez(fh, **arrays)
    return path


def read_header(path: str | Path) -> dict:
    """The header (name, task, shape, checksums, meta) of a prepared file, without loading the matrices."""
    with _open(path) as arrays:
        return _header(path, arrays)


def _open(path):
    path = Path(path)
    if not path.exists():
        raise DataError(f"prepared dataset {path} does not exist (run the 'prepare' step)")
    try:
        return np.load(path, allow_pickle=False)
    except (zipfile.BadZipFile, ValueError, OSError, EOFError) as exc:
        raise DataError(f"prepared dataset {path} is corrupted ({exc}); delete it and rerun 'prepare'") from exc


def _header(path, arrays) -> dict:
    try:
        return json.loads(arrays["header_json"].tobytes().decode())
    except (KeyError, ValueError, zipfile.BadZipFile, OSError, EOFError) as exc:
        raise DataError(f"prepared dataset {path} is corrupted (unreadable header: {exc}); "
                        "delete it and rerun 'prepare'") from exc


def load_dataset(path: str | Path, expected_shape: dict | None = None, verify: bool = True) -> Dataset:
    """Load a prepared dataset; verify its content checksum and, if given, its shape ({n, p, d})."""
    with _open(path) as npz:
        header = _header(path, npz)
        try:
            arrays = {key: npz[key] for key in npz.files if key != "header_json"}
        except (zipfile.BadZipFile, ValueError, OSError, EOFError, KeyError) as exc:
            raise DataError(f"prepared dataset {path} is corrupted ({exc}); delete it and rerun 'prepare'") from exc
    if verify and _digest(arrays) != header["content_sha256"]:
        raise DataError(f"prepared dataset {path} is corrupted (content checksum mismatch); "
                        "delete it and rerun 'prepare'")
    splits = [(arrays[f"split{i}_train"], arrays[f"split{i}_test"]) for i in range(header["n_given_splits"])]
    ds = Dataset(name=header["name"], X=_matrix_from("X", arrays), Y=_matrix_from("Y", arrays), task=header["task"],
                 meta=header["meta"], given_splits=splits or None)
    ds.check_shape(expected_shape)
    return ds
