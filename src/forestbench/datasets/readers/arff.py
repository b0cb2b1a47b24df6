"""ARFF reader: dense and sparse data sections, numeric / nominal / string / date / Clus ``hierarchical`` attributes.

Why our own reader: ``scipy.io.arff`` cannot read sparse ARFF (bibtex, delicious, medical, tmc2007, bookmarks,
EUR-Lex), liac-arff is not installed and is slow on large files, and both raise assorted exception types. Here any
malformed input raises :class:`forestbench.errors.ParseError` naming the file and the line.

Encoding of the values in :attr:`ArffFile.data` (one column per attribute, in file order):

* numeric: the number; ``?`` is NaN.
* nominal: the 0-based index of the value in the declaration (``{0,1}`` therefore reads as 0/1); ``?`` is NaN.
  A value absent from a sparse row is 0, i.e. the first declared value, as the ARFF specification says.
* string / date / hierarchical: NaN in ``data``; the raw text of every row is in :attr:`ArffFile.text[name]`.

Sparse data sections give a ``scipy.sparse.csr_matrix``; dense ones a C-contiguous ``float64`` array. Rows are parsed
in blocks whose tokens are converted by numpy at once, which keeps files of tens of thousands of columns fast.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from forestbench.errors import ParseError

from ._convert import locate, to_float, to_int
from ._text import guard_io, open_text

BLOCK_TOKENS = 1 << 18  # values converted per numpy call

_NUMERIC = {"numeric", "real", "integer"}


@dataclass
class Attribute:
    name: str
    kind: str  # numeric | nominal | string | date | hierarchical
    values: tuple[str, ...] | None = None  # nominal values; hierarchical: declared node list (may be empty)


@dataclass
class ArffFile:
    path: str
    relation: str
    attributes: list[Attribute]
    data: object  # np.ndarray (dense) or scipy.sparse.csr_matrix (sparse)
    sparse: bool
    text: dict[str, list[str]] = field(default_factory=dict)
    header_lines: int = 0

    @property
    def names(self) -> list[str]:
        return [a.name for a in self.attributes]

    @property
    def n(self) -> int:
        return self.data.shape[0]


# ----------------------------------------------------------------------------------------------------------------
# tokenising
# ----------------------------------------------------------------------------------------------------------------
_QUOTED = re.compile(r"""\s*('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|[^,'"]*?)\s*(,|$)""", re.S)
# pieces of a list: a quoted string (escapes inside), a run of other characters, or a separating comma
_TOP_LEVEL = re.compile(r"""'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|[^,'"]+|,""", re.S)
_QUOTED_TOKEN = re.compile(r"'(?:[^'\\]|\\.)*'" + r'|"(?:[^"\\]|\\.)*"', re.S)

# Escapes inside quoted strings, as the ARFF writers (Weka, liac-arff) produce them: the usual one-letter escapes,
# \0 ... \9 as the control characters 0-9, up to three octal digits (\011 is a tab) and \uXXXX.
_ESCAPES = {"\\": "\\", '"': '"', "'": "'", "t": "\t", "n": "\n", "r": "\r", "b": "\b", "f": "\f", "%": "%",
            **{str(i): chr(i) for i in range(10)}}
_ESCAPE = re.compile(r"\\([0-9]{1,3}|u[0-9a-fA-F]{4}|.)", re.S)


def _decode_escape(match: re.Match) -> str:
    code = match.group(1)
    if len(code) == 1:
        try:
            return _ESCAPES[code]
        except KeyError:
            raise ValueError(f"unsupported escape sequence \\{code}") from None
    if code[0] == "u":
        return chr(int(code[1:], 16))
    try:
        return chr(int(code, 8))
    except ValueError:
        raise ValueError(f"invalid octal escape \\{code}") from None


def _unquote(tok: str, path=None, lineno: int | None = None) -> str:
    if len(tok) >= 2 and tok[0] == tok[-1] and tok[0] in "'\"":
        body = tok[1:-1]
        if "\\" in body:
            try:
                body = _ESCAPE.sub(_decode_escape, body)
            except ValueError as exc:
                raise ParseError(path, lineno, f"{exc} in {tok[:40]!r}") from None
        return body
    return tok


def _split_top_level(text: str, path, lineno: int, what: str) -> list[str]:
    """Split on commas outside quotes, keeping each piece's text (quotes included)."""
    items, current, pos, n = [], [], 0, len(text)
    while pos < n:
        m = _TOP_LEVEL.match(text, pos)
        if m is None:
            raise ParseError(path, lineno, f"unbalanced quote in {what}: {text[pos:pos + 40]!r}")
        if m.group(0) == ",":
            items.append("".join(current))
            current = []
        else:
            current.append(m.group(0))
        pos = m.end()
    items.append("".join(current))
    return items


def split_quoted(text: str, path, lineno: int, sep_name: str = "value") -> list[str]:
    """Split ``a, 'b,c', "d"`` on top-level commas, unquoting each item; strict about unbalanced quotes."""
    if "'" not in text and '"' not in text:
        return [t.strip() for t in text.split(",")]
    out, pos, n = [], 0, len(text)
    while True:
        m = _QUOTED.match(text, pos)
        if m is None or (m.end() == pos and pos < n):
            raise ParseError(path, lineno, f"unbalanced quote in {sep_name} list: {text[pos:pos + 40]!r}")
        out.append(_unquote(m.group(1), path, lineno))
        if m.group(2) == "":
            if m.end() != n:
                raise ParseError(path, lineno, f"unexpected text after {sep_name}: {text[m.end():m.end() + 40]!r}")
            return out
        pos = m.end()


def _first_word(text: str, path, lineno: int) -> tuple[str, str]:
    """Split off a possibly quoted first word: returns (word, rest)."""
    text = text.strip()
    if not text:
        raise ParseError(path, lineno, "missing name")
    if text[0] in "'\"":
        q = text[0]
        m = re.match(r"%s((?:[^%s\\]|\\.)*)%s" % (q, q, q), text)
        if not m:
            raise ParseError(path, lineno, f"unbalanced quote in name: {text[:40]!r}")
        return _unquote(m.group(0), path, lineno), text[m.end():].strip()
    parts = text.split(None, 1)
    return parts[0], (parts[1].strip() if len(parts) > 1 else "")


# ----------------------------------------------------------------------------------------------------------------
# header
# ----------------------------------------------------------------------------------------------------------------
def _parse_attribute(rest: str, path, lineno: int) -> Attribute:
    name, typ = _first_word(rest, path, lineno)
    if not typ:
        raise ParseError(path, lineno, f"attribute {name!r} has no type")
    low = typ.lower()
    if typ.startswith("{"):
        if not typ.rstrip().endswith("}"):
            raise ParseError(path, lineno, f"nominal attribute {name!r}: missing closing brace")
        inner = typ.strip()[1:-1]
        values = tuple(split_quoted(inner, path, lineno, "nominal value"))
        if not inner.strip() or any(v == "" for v in values):
            raise ParseError(path, lineno, f"nominal attribute {name!r}: empty value in {typ!r}")
        if len(set(values)) != len(values):
            raise ParseError(path, lineno, f"nominal attribute {name!r}: duplicate values in {typ!r}")
        return Attribute(name, "nominal", values)
    word = low.split(None, 1)[0]
    if word in _NUMERIC:
        if low != word:
            raise ParseError(path, lineno, f"attribute {name!r}: unexpected text after type {word!r}")
        return Attribute(name, "numeric")
    if word == "string":
        return Attribute(name, "string")
    if word == "date":
        return Attribute(name, "date")
    if word == "hierarchical":
        nodes = typ.split(None, 1)[1] if len(typ.split(None, 1)) > 1 else ""
        return Attribute(name, "hierarchical", tuple(t for t in nodes.replace(" ", "").split(",") if t))
    raise ParseError(path, lineno, f"attribute {name!r}: unsupported type {typ.split(None, 1)[0]!r}")


def _read_header(fh, path) -> tuple[str, list[Attribute], int]:
    relation, attributes, lineno = None, [], 0
    for raw in fh:
        lineno += 1
        line = raw.strip()
        if not line or line.startswith("%"):
            continue
        if not line.startswith("@"):
            raise ParseError(path, lineno, f"expected @relation, @attribute or @data, got {line[:40]!r}")
        parts = line.split(None, 1)
        keyword, rest = parts[0].lower(), (parts[1] if len(parts) > 1 else "")
        if keyword == "@relation":
            if relation is not None:
                raise ParseError(path, lineno, "second @relation")
            relation, _ = _first_word(rest, path, lineno) if rest.strip() else ("", "")
            relation = rest.strip() if rest.strip()[:1] not in "'\"" else relation
        elif keyword == "@attribute":
            if relation is None:
                raise ParseError(path, lineno, "@attribute before @relation")
            attributes.append(_parse_attribute(rest, path, lineno))
        elif keyword == "@data":
            if relation is None or not attributes:
                raise ParseError(path, lineno, "@data before any @relation/@attribute")
            if rest.strip():
                raise ParseError(path, lineno, "unexpected text after @data")
            names = [a.name for a in attributes]
            if len(set(names)) != len(names):
                dup = next(n for n in names if names.count(n) > 1)
                raise ParseError(path, lineno, f"duplicate attribute name {dup!r}")
            return relation, attributes, lineno
        else:
            raise ParseError(path, lineno, f"unknown header keyword {keyword!r}")
    raise ParseError(path, lineno or None, "no @data section")


@guard_io
def read_arff_header(path: str | os.PathLike) -> tuple[str, list[Attribute]]:
    with open_text(path) as fh:
        relation, attributes, _ = _read_header(fh, path)
    return relation, attributes


# ----------------------------------------------------------------------------------------------------------------
# data
# ----------------------------------------------------------------------------------------------------------------
class _Block:
    """Tokens of a block of rows, converted together."""

    def __init__(self):
        self.cols: list[str] | None = []  # sparse: index tokens; dense: None
        self.vals: list[str] = []
        self.lengths: list[int] = []
        self.lines: list[int] = []

    def __len__(self):
        return len(self.vals)


class _Decoder:
    """Turns the tokens of one block into (column, value) arrays, per attribute kind."""

    def __init__(self, path, attributes: list[Attribute], max_abs: float | None = None):
        self.path = path
        self.max_abs = max_abs
        self.m = len(attributes)
        self.attributes = attributes
        # group columns by kind: -1 numeric, -2 raw text, g >= 0 nominal group g (same value tuple)
        groups: dict[tuple, int] = {}
        kind = np.empty(self.m, dtype=np.int64)
        for j, a in enumerate(attributes):
            if a.kind == "numeric":
                kind[j] = -1
            elif a.kind == "nominal":
                kind[j] = groups.setdefault(a.values, len(groups))
            else:
                kind[j] = -2
        self.kind = kind
        self.group_maps = [{**{v: float(i) for i, v in enumerate(values)}, "?": np.nan} for values in groups]
        self.group_values = list(groups)
        self.has_text = bool((kind == -2).any())

    def decode(self, block: _Block, cols: np.ndarray, row0: int, text: dict) -> np.ndarray:
        kinds = self.kind[cols]
        if not self.group_maps and not self.has_text:  # all numeric: no regrouping needed
            return to_float(self.path, block.vals, block.lengths, block.lines, max_abs=self.max_abs)
        vals = np.asarray(block.vals, dtype=object)
        out = np.empty(len(vals), dtype=np.float64)
        num = kinds == -1
        if num.any():
            pos = np.flatnonzero(num)
            out[pos] = to_float(self.path, vals[pos].tolist(), block.lengths, block.lines, positions=pos,
                                max_abs=self.max_abs)
        for g, mapping in enumerate(self.group_maps):
            pos = np.flatnonzero(kinds == g)
            if not pos.size:
                continue
            toks = vals[pos].tolist()
            try:
                out[pos] = np.fromiter(map(mapping.__getitem__, toks), dtype=np.float64, count=len(toks))
            except KeyError:
                # tokens arrive unquoted (split_quoted / the sparse pair splitter), so a miss is an undeclared value
                k, tok = next((k, tok) for k, tok in zip(pos.tolist(), toks) if tok not in mapping)
                attr = self.attributes[int(cols[k])]
                values = self.group_values[g]
                shown = ",".join(values[:10]) + (",..." if len(values) > 10 else "")
                raise ParseError(self.path, locate(block.lengths, block.lines, k),
                                 f"value {tok!r} not declared for nominal attribute {attr.name!r} {{{shown}}}")
        if self.has_text:
            pos = np.flatnonzero(kinds == -2)
            if pos.size:
                ends = np.cumsum(block.lengths)
                rows = np.searchsorted(ends, pos, side="right") + row0
                for k, r in zip(pos.tolist(), rows.tolist()):
                    text.setdefault(self.attributes[int(cols[k])].name, {})[r] = vals[k]  # already unquoted
            out[pos] = np.nan
        return out


@guard_io
def read_arff(path: str | os.PathLike, max_abs: float | None = None) -> ArffFile:
    """Read a dense or sparse ARFF file (optionally .gz/.bz2 compressed). With ``max_abs``, a numeric value of
    larger magnitude is a ParseError (the prepare step passes the float32 range of prepared data)."""
    path = str(path)
    with open_text(path) as fh:
        relation, attributes, lineno = _read_header(fh, path)
        header_lines = lineno
        dec = _Decoder(path, attributes, max_abs)
        m = len(attributes)
        sparse = None
        dense_blocks: list[np.ndarray] = []
        s_indices: list[np.ndarray] = []
        s_data: list[np.ndarray] = []
        s_counts: list[np.ndarray] = []
        text: dict[str, dict[int, str]] = {}
        n_rows = 0
        block = _Block()

        def flush():
            nonlocal block, n_rows
            if not block.lengths:
                return
            if sparse:
                cols = to_int(path, block.cols, block.lengths, block.lines, "attribute index")
                bad = np.flatnonzero((cols < 0) | (cols >= m))
                if bad.size:
                    k = int(bad[0])
                    raise ParseError(path, locate(block.lengths, block.lines, k),
                                     f"attribute index {cols[k]} out of range [0, {m})")
                lengths = np.asarray(block.lengths, dtype=np.int64)
                starts = (np.cumsum(lengths) - lengths)[lengths > 0]
                inc = np.diff(cols) > 0
                inc[starts[starts > 0] - 1] = True  # no increase needed across a row boundary
                if not inc.all():
                    k = int(np.flatnonzero(~inc)[0]) + 1
                    raise ParseError(path, locate(block.lengths, block.lines, k),
                                     f"attribute indices of a sparse row must increase (index {cols[k]})")
                values = dec.decode(block, cols, n_rows, text)
                s_indices.append(cols)
                s_data.append(values)
                s_counts.append(lengths)
            else:
                cols = np.tile(np.arange(m), len(block.lengths))
                values = dec.decode(block, cols, n_rows, text)
                dense_blocks.append(values.reshape(len(block.lengths), m))
            n_rows += len(block.lengths)
            block = _Block()

        for raw in fh:
            lineno += 1
            line = raw.strip()
            if not line or line[0] == "%":
                continue
            row_sparse = line[0] == "{"
            if sparse is None:
                sparse = row_sparse
            elif row_sparse != sparse:
                raise ParseError(path, lineno, "mixes sparse ({...}) and dense rows")
            if sparse:
                if not line.endswith("}"):
                    if re.search(r"\}\s*,\s*\{[^}]*\}$", line):
                        raise ParseError(path, lineno, "instance weights ({...}, {w}) are not supported")
                    raise ParseError(path, lineno, "sparse row without closing brace")
                inner = line[1:-1].strip()
                if not inner:
                    block.lengths.append(0)
                    block.lines.append(lineno)
                    continue
                if "'" in inner or '"' in inner:
                    idx, vals = [], []
                    for pair in _split_top_level(inner, path, lineno, "sparse row"):
                        i, v = (pair.split(None, 1) + ["", ""])[:2]      # an empty pair: i = v = ""
                        v = v.strip()
                        if not v or (v[0] in "'\"" and not _QUOTED_TOKEN.fullmatch(v)) or \
                                ("'" in i or '"' in i):
                            raise ParseError(path, lineno, f"sparse pair {pair.strip()[:40]!r} is not 'index value'")
                        idx.append(i)
                        vals.append(_unquote(v, path, lineno))
                else:
                    toks = inner.replace(",", " ").split()
                    if len(toks) != 2 * (inner.count(",") + 1):
                        raise ParseError(path, lineno, "sparse row is not a comma-separated list of 'index value'")
                    idx, vals = toks[0::2], toks[1::2]
                block.cols.extend(idx)
                block.vals.extend(vals)
                block.lengths.append(len(idx))
            else:
                if "'" in line or '"' in line:
                    toks = split_quoted(line, path, lineno)
                else:
                    toks = line.split(",")
                    if " " in line or "\t" in line:
                        toks = [t.strip() for t in toks]
                if len(toks) != m:
                    raise ParseError(path, lineno, f"row has {len(toks)} values, the header declares {m} attributes")
                block.vals.extend(toks)
                block.lengths.append(m)
            block.lines.append(lineno)
            if len(block) >= BLOCK_TOKENS:
                flush()
        flush()

    if sparse:
        counts = np.concatenate(s_counts) if s_counts else np.zeros(0, np.int64)
        indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        data = sp.csr_matrix((np.concatenate(s_data) if s_data else np.zeros(0),
                              np.concatenate(s_indices) if s_indices else np.zeros(0, np.int64), indptr),
                             shape=(n_rows, m))
    else:
        data = np.vstack(dense_blocks) if dense_blocks else np.zeros((0, m))
    text_lists = {name: [rows.get(i, "") for i in range(n_rows)] for name, rows in text.items()}
    for a in attributes:
        if a.kind in ("string", "date", "hierarchical") and a.name not in text_lists:
            text_lists[a.name] = [""] * n_rows
    return ArffFile(path, relation, attributes, data, bool(sparse), text_lists, header_lines)


# ----------------------------------------------------------------------------------------------------------------
# MEKA relation header
# ----------------------------------------------------------------------------------------------------------------
_MEKA = re.compile(r"(?:^|[\s:])-C\s+(-?\d+)\b")


def meka_label_count(relation: str) -> int | None:
    """The signed label count of a MEKA relation name (``'Music: -C 6'`` -> 6, ``'x: -C -3'`` -> -3), or None.

    MEKA convention: ``-C N`` with N > 0 means the first N attributes are labels, N < 0 the last |N|.
    """
    m = _MEKA.search(relation)
    return int(m.group(1)) if m else None
