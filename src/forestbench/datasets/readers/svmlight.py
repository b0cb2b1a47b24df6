"""svmlight / libsvm files, single- or multi-label, and the Extreme Classification (XC) variant with a header.

Line format: ``<labels> [qid:<q>] <index>:<value> ... [# comment]`` where ``<labels>`` is one number, or for
``multilabel=True`` a comma-separated (possibly empty) list of integer labels. The XC repository adds a first line
``<n> <p> <d>`` (``header=True``), which also fixes the widths and is checked against the content.

Indices: ``zero_based="auto"`` treats the file as 0-based if any index is 0, else as 1-based (the libsvm
convention); pass ``True``/``False`` to force, and ``n_features`` so that train and test files share a width.
Returns ``(X csr float64, y)`` where y is a float64 vector, or for multi-label a CSR indicator matrix with
``n_labels`` columns (default: 1 + the largest label seen).

Memory follows the stored values, never the width. Still, a single corrupted index (``1000000000:1``) would make
every later step that works per column (preprocessing, the forests) allocate for a billion columns, so a feature
index or label above ``max_width`` (default :data:`MAX_WIDTH`, about 16.8 million; the registry's
``source.reader.max_width`` raises it) is refused with the file and line.
"""
from __future__ import annotations

import os

import numpy as np
import scipy.sparse as sp

from forestbench.errors import ParseError

from ._convert import locate, to_float, to_int
from ._text import guard_io, open_text

BLOCK_TOKENS = 1 << 18
MAX_WIDTH = 1 << 24  # largest accepted feature index / label (wider than any dataset of the registry)


@guard_io
def read_svmlight(path: str | os.PathLike, multilabel: bool = False, n_features: int | None = None,
                  zero_based="auto", header: bool = False, n_labels: int | None = None, max_width: int = MAX_WIDTH,
                  max_abs: float | None = None):
    path = str(path)
    idx_tok: list[str] = []
    val_tok: list[str] = []
    lengths: list[int] = []
    lines: list[int] = []
    lab_tok: list[str] = []
    lab_len: list[int] = []
    y_single: list[str] = []
    indices, data, counts, lab_idx, lab_counts, ys = [], [], [], [], [], []
    declared = None
    lineno = 0
    all_lines: list[int] = []

    def flush():
        if not lengths:
            return
        cols = to_int(path, idx_tok, lengths, lines, "feature index", limit=max_width)
        vals = to_float(path, val_tok, lengths, lines, what="feature value", max_abs=max_abs)
        nanpos = np.flatnonzero(np.isnan(vals))
        if nanpos.size:
            raise ParseError(path, locate(lengths, lines, int(nanpos[0])), "missing feature value")
        if multilabel:
            labs = to_int(path, lab_tok, lab_len, lines, "label", limit=max_width)
            if (labs < 0).any():
                k = int(np.flatnonzero(labs < 0)[0])
                raise ParseError(path, locate(lab_len, lines, k), f"negative label {labs[k]}")
            lab_idx.append(labs)
            lab_counts.append(np.asarray(lab_len, dtype=np.int64))
        else:
            ys.append(to_float(path, y_single, [1] * len(lines), lines, what="target"))
        ln = np.asarray(lengths, dtype=np.int64)
        starts = (np.cumsum(ln) - ln)[ln > 0]
        inc = np.diff(cols) > 0
        inc[starts[starts > 0] - 1] = True
        if not inc.all():
            k = int(np.flatnonzero(~inc)[0]) + 1
            raise ParseError(path, locate(lengths, lines, k), f"feature indices must increase (index {cols[k]})")
        indices.append(cols)
        data.append(vals)
        counts.append(ln)
        all_lines.extend(lines)
        for lst in (idx_tok, val_tok, lengths, lines, lab_tok, lab_len, y_single):
            lst.clear()

    with open_text(path) as fh:
        for raw in fh:
            lineno += 1
            line = raw.split("#", 1)[0]
            if not line.strip():
                continue
            if header and declared is None:
                parts = line.split()
                try:
                    declared = tuple(int(t) for t in parts)
                except ValueError:
                    declared = ()
                if len(declared) != 3 or min(declared) < 0:
                    raise ParseError(path, lineno, "XC header must be '<n_points> <n_features> <n_labels>'")
                if max(declared[1:]) > max_width:
                    raise ParseError(path, lineno, f"XC header declares {max(declared[1:])} columns, beyond the "
                                                   f"limit of {max_width} (raise the reader's max_width if intended)")
                continue
            toks = line.split()
            if multilabel:
                labels = "" if ":" in toks[0] else toks.pop(0)
            elif ":" in toks[0]:
                raise ParseError(path, lineno, f"missing target before {toks[0]!r}")
            else:
                labels = toks.pop(0)
            if toks and toks[0].startswith("qid:"):
                toks.pop(0)
            if multilabel:
                parts = [t for t in labels.split(",")] if labels else []
                if any(not t for t in parts):
                    raise ParseError(path, lineno, f"empty label in {labels!r}")
                lab_tok.extend(parts)
                lab_len.append(len(parts))
            else:
                y_single.append(labels)
            feats = " ".join(toks)
            pairs = feats.replace(":", " ").split()
            if feats.count(":") != len(toks) or len(pairs) != 2 * len(toks):
                raise ParseError(path, lineno, "features must be 'index:value' items")
            idx_tok.extend(pairs[0::2])
            val_tok.extend(pairs[1::2])
            lengths.append(len(toks))
            lines.append(lineno)
            if len(idx_tok) >= BLOCK_TOKENS:
                flush()
        flush()
    if header and declared is None:
        raise ParseError(path, lineno, "missing XC header line")
    counts_all = np.concatenate(counts) if counts else np.zeros(0, np.int64)
    cols = np.concatenate(indices) if indices else np.zeros(0, np.int64)
    vals = np.concatenate(data) if data else np.zeros(0)
    n = len(counts_all)

    def line_of(k, per_row=None):
        per_row = counts_all if per_row is None else per_row
        return all_lines[int(np.searchsorted(np.cumsum(per_row), k, side="right"))]

    if zero_based == "auto":
        zero_based = bool(cols.size and cols.min() == 0) or header
    if not zero_based:
        if cols.size and cols.min() < 1:
            k = int(np.argmin(cols))
            raise ParseError(path, line_of(k), f"feature index {cols[k]} in a 1-based file")
        cols = cols - 1
    if cols.size and cols.min() < 0:
        k = int(np.argmin(cols))
        raise ParseError(path, line_of(k), f"negative feature index {cols[k]}")
    width = int(cols.max()) + 1 if cols.size else 0
    if header:
        if declared[0] != n:
            raise ParseError(path, 1, f"header declares {declared[0]} points, the file has {n}")
        n_features = declared[1] if n_features is None else n_features
        n_labels = declared[2] if n_labels is None else n_labels
    if n_features is not None:
        if width > n_features:
            k = int(np.argmax(cols))
            raise ParseError(path, line_of(k), f"feature index {cols[k]} >= n_features={n_features}")
        width = n_features
    indptr = np.concatenate([[0], np.cumsum(counts_all)]).astype(np.int64)
    X = sp.csr_matrix((vals, cols, indptr), shape=(n, width))
    if multilabel:
        labs = np.concatenate(lab_idx) if lab_idx else np.zeros(0, np.int64)
        lc = np.concatenate(lab_counts) if lab_counts else np.zeros(0, np.int64)
        d = int(labs.max()) + 1 if labs.size else 0
        if n_labels is not None:
            if d > n_labels:
                k = int(np.argmax(labs))
                raise ParseError(path, line_of(k, lc), f"label {labs[k]} >= n_labels={n_labels}")
            d = n_labels
        Y = sp.csr_matrix((np.ones(labs.size), labs, np.concatenate([[0], np.cumsum(lc)])), shape=(n, d))
        Y.sum_duplicates()
        Y.data[:] = 1.0
        return X, Y
    y = np.concatenate(ys) if ys else np.zeros(0)
    return X, y
