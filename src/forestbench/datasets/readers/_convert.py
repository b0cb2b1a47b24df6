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


_INT64_MAX = np.iinfo(np.int64).max


def to_int(path, tokens: list[str], row_lengths, row_lines, what: str, limit: int | None = None) -> np.ndarray:
    """Convert integer tokens to int64. A token that is not an integer, does not fit in int64 or (with ``limit``)
    has an absolute value above ``limit`` raises ParseError naming its line."""
    try:
        out = np.array(tokens, dtype=np.int64)
    except (ValueError, OverflowError):
        out = None
    if out is not None:
        if limit is None or not out.size or (out.max() <= limit and out.min() >= -limit):
            return out
    for k, tok in enumerate(tokens):
        try:
            value = int(tok)
        except (ValueError, OverflowError):
            raise ParseError(path, locate(row_lengths, row_lines, k), f"invalid {what} {tok!r}") from None
        if abs(value) > _INT64_MAX:
            raise ParseError(path, locate(row_lengths, row_lines, k),
                             f"{what} {tok[:30]!r} is too large (beyond 64-bit integers)")
        if limit is not None and abs(value) > limit:
            raise ParseError(path, locate(row_lengths, row_lines, k),
                             f"{what} {value} is beyond the limit of {limit} (a corrupted line? "
                             "raise the reader's max_width if the data really is this wide)")
    raise AssertionError("unreachable: numpy refused a token that int() accepts")  # pragma: no cover


def to_float(path, tokens, row_lengths, row_lines, positions=None, what="numeric value",
             max_abs: float | None = None) -> np.ndarray:
    """Convert text tokens to float64; '?' is missing (NaN). ``positions`` maps token k to its block position.
    With ``max_abs``, a finite value of larger magnitude is refused too (e.g. beyond the float32 range).

    ``float`` over the list (via ``np.fromiter``) is the fastest conversion numpy offers for Python strings; a
    failure or a non-finite number is then located token by token for the error message."""
    if not isinstance(tokens, list):
        tokens = list(tokens)
    if MISSING in tokens:
        tokens = ["nan" if t == MISSING else t for t in tokens]
    try:
        out = np.fromiter(map(float, tokens), dtype=np.float64, count=len(tokens))
    except (ValueError, TypeError):
        out = None
    if out is not None:
        bad = ~np.isfinite(out)
        if max_abs is not None:
            with np.errstate(invalid="ignore"):
                bad |= np.abs(out) > max_abs
        if not bad.any():
            return out
        bad_k = [int(k) for k in np.flatnonzero(bad) if tokens[k] != "nan"]
        if not bad_k:
            return out
    for k, tok in enumerate(tokens):
        try:
            value = float(tok)
            ok = np.isfinite(value) or tok == "nan"
        except (ValueError, TypeError):
            value, ok = None, False
        pos = k if positions is None else int(positions[k])
        if not ok:
            raise ParseError(path, locate(row_lengths, row_lines, pos), f"invalid {what} {tok!r}")
        if max_abs is not None and abs(value) > max_abs:
            raise ParseError(path, locate(row_lengths, row_lines, pos),
                             f"{what} {tok[:30]!r} is beyond the accepted range ±{max_abs:.4g}")
    raise AssertionError("unreachable: a token failed to convert but none is invalid")  # pragma: no cover
