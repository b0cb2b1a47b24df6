"""Delimited text tables of numbers (CSV/TSV), with optional header row and row-id column.

Returns the column names, the row ids (when ``id_column`` is set) and a float64 matrix; empty cells and ``?``/``NA``
are NaN. Any malformed row (wrong number of cells, non-numeric cell) raises ParseError with its line.
"""
from __future__ import annotations

import csv as _csv
import os

import numpy as np

from forestbench.errors import ParseError

from ._text import guard_io, open_text

_MISSING = {"", "?", "NA", "nan", "NaN"}


@guard_io
def read_csv(path: str | os.PathLike, delimiter: str = ",", header: bool = True, id_column: int | None = None,
             max_abs: float | None = None):
    """Return (column_names, row_ids or None, X float64) of a delimited file. With ``max_abs``, a value of larger
    magnitude is a ParseError (the prepare step passes the float32 range of prepared data)."""
    path = str(path)
    names = None
    ids: list[str] = []
    rows: list[np.ndarray] = []
    width = None
    with open_text(path) as fh:
        reader = _csv.reader(fh, delimiter=delimiter, strict=True)
        try:
            for cells in reader:
                lineno = reader.line_num
                if not cells:
                    continue
                if len(cells) == 1 and not cells[0].strip():
                    # a blank line, unless the table has one column: then it is a row whose value is missing
                    one_column = (width == 1) or (width is None and names is not None
                                                  and len(names) == 1 and id_column is None)
                    if not one_column:
                        continue
                if header and names is None:
                    names = [c.strip() for c in cells]
                    if id_column is not None:
                        if not -len(names) <= id_column < len(names):
                            raise ParseError(path, lineno, f"id column {id_column} outside the {len(names)} columns")
                        del names[id_column]
                    continue
                if id_column is not None:
                    if not -len(cells) <= id_column < len(cells):
                        raise ParseError(path, lineno, f"row has no id column {id_column}")
                    ids.append(cells.pop(id_column).strip())
                if width is None:
                    width = len(cells)
                    if names is not None and len(names) != width:
                        raise ParseError(path, lineno, f"row has {width} value cells, the header names {len(names)}")
                elif len(cells) != width:
                    raise ParseError(path, lineno, f"row has {len(cells)} value cells, expected {width}")
                row = np.empty(width)
                for j, cell in enumerate(cells):
                    cell = cell.strip()
                    if cell in _MISSING:
                        row[j] = np.nan
                        continue
                    try:
                        row[j] = float(cell)
                    except ValueError:
                        raise ParseError(path, lineno, f"column {j + 1}: not a number: {cell[:40]!r}") from None
                    if not np.isfinite(row[j]):
                        raise ParseError(path, lineno, f"column {j + 1}: not a finite number: {cell[:40]!r}")
                    if max_abs is not None and abs(row[j]) > max_abs:
                        raise ParseError(path, lineno, f"column {j + 1}: {cell[:40]!r} is beyond the accepted "
                                                       f"range ±{max_abs:.4g}")
                rows.append(row)
        except _csv.Error as exc:
            raise ParseError(path, reader.line_num, f"malformed CSV: {exc}") from None
    if not rows:
        raise ParseError(path, None, "no data rows")
    X = np.vstack(rows)
    if names is None:
        names = [f"c{j}" for j in range(X.shape[1])]
    return names, (ids if id_column is not None else None), X
