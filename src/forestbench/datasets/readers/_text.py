"""Opening raw text files: transparent .gz/.bz2, a leading UTF-8 byte-order mark skipped (spreadsheet exports write
one), undecodable bytes kept (surrogateescape) rather than raised."""
from __future__ import annotations

import bz2
import gzip
import io
import os

from forestbench.errors import ParseError


def open_text(path: str | os.PathLike, encoding: str = "utf-8-sig"):
    path = str(path)
    try:
        if path.endswith(".gz"):
            raw = gzip.open(path, "rb")
        elif path.endswith(".bz2"):
            raw = bz2.open(path, "rb")
        else:
            raw = open(path, "rb")
    except OSError as exc:
        raise ParseError(path, None, f"cannot open: {exc.strerror or exc}") from None
    return io.TextIOWrapper(raw, encoding=encoding, errors="surrogateescape", newline=None)


def guard_io(func):
    """Turn I/O and decompression failures met while reading into ParseError naming the file."""
    import functools
    import zlib

    @functools.wraps(func)
    def wrapper(path, *args, **kwargs):
        try:
            return func(path, *args, **kwargs)
        except ParseError:
            raise
        except (OSError, EOFError, zlib.error) as exc:
            raise ParseError(path, None, f"cannot read: {exc}") from None

    return wrapper
