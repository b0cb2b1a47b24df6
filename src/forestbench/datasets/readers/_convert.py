"""Vectorised conversion of text tokens into numbers, shared by the ARFF and svmlight readers.

Readers collect, for a block of rows, the column index and the raw text of every stored value, then convert the
block at once with numpy (C speed). When numpy refuses a block, the offending token is located and reported with its
file and line, so speed never costs the precision of the error message.
"""
from __future__ import annotations

import numpy as np

from forestbench.errors import ParseError

MISSING = "?"


def locate(row_lengths: list[int], row_lines: list[int], k: int) -> int:
    """Line number of the k-th stored value of a block."""
    ends = np.cumsum(row_lengths)
    return row_lines[int(np.searchsorted(ends, k, side="right"))]


def to_int(path, tokens: list[str], row_lengths, row_lines, what: str) -> np.ndarray:
    try:
        return np.array(tokens, dtype=np.int64)
    except (ValueError, OverflowError):
        for k, tok in enumerate(tokens):
            try:
                int(tok)
            except (ValueError, OverflowError):
                raise ParseError(path, locate(row_lengths, row_lines, k), f"invalid {what} {tok!r}") from None
        raise  # pragma: no cover - numpy and int() disagree


def to_float(path, tokens, row_lengths, row_lines, positions=None, what="numeric value") -> np.ndarray:
    """Convert text tokens to float64; '?' is missing (NaN). ``positions`` maps token k to its block position."""
    arr = np.asarray(tokens, dtype=object)
    if arr.size:
        arr = np.where(arr == MISSING, "nan", arr)
    try:
        out = arr.astype(np.float64)
    except (ValueError, TypeError):
        out = None
    if out is not None:
        # reject spellings numpy accepts but a data file must not contain (inf/nan written out, underscores)
        bad = ~np.isfinite(out) & (arr != "nan")
        if not bad.any():
            return out
    for k, tok in enumerate(arr.tolist()):
        ok = True
        try:
            v = float(tok)
            ok = np.isfinite(v) or tok == "nan"
        except (ValueError, TypeError):
            ok = False
        if not ok or "_" in str(tok):
            pos = k if positions is None else int(positions[k])
            raise ParseError(path, locate(row_lengths, row_lines, pos), f"invalid {what} {tok!r}")
    return arr.astype(np.float64)
