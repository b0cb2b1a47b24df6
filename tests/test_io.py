"""Atomic output files: readable as the umask allows, strict JSON."""
from __future__ import annotations

import json
import math
import os

import numpy as np

from forestbench._io import atomic_path, write_json, write_text


def test_outputs_respect_the_umask(tmp_path):
    """Before: every output was 0600 (the mode of tempfile.mkstemp), unreadable by the group on a shared cluster."""
    previous = os.umask(0o022)
    try:
        write_text(tmp_path / "a.txt", "x")
        with atomic_path(tmp_path / "b.npz") as tmp:
            np.savez(tmp, a=np.zeros(2))
    finally:
        os.umask(previous)
    assert oct(os.stat(tmp_path / "a.txt").st_mode & 0o777) == oct(0o644)
    assert oct(os.stat(tmp_path / "b.npz").st_mode & 0o777) == oct(0o644)
    previous = os.umask(0o077)
    try:
        write_text(tmp_path / "c.txt", "x")
    finally:
        os.umask(previous)
    assert oct(os.stat(tmp_path / "c.txt").st_mode & 0o777) == oct(0o600)


def test_json_is_strict_non_finite_becomes_null(tmp_path):
    """Before: NaN scores were written as bare NaN, which strict JSON readers refuse."""
    write_json(tmp_path / "r.json", {"a": float("nan"), "b": [1.0, np.float64("inf")], "c": np.array([np.nan, 2.0]),
                                     "d": 3})
    text = (tmp_path / "r.json").read_text()
    assert "NaN" not in text and "Infinity" not in text
    assert json.loads(text, parse_constant=lambda c: math.nan) == {"a": None, "b": [1.0, None], "c": [None, 2.0],
                                                                    "d": 3}
