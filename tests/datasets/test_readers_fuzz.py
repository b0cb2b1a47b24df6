"""Property-based tests of the readers (Hypothesis).

* Round trips: random valid files (ARFF dense and sparse with numeric / nominal / string attributes and quoting,
  svmlight single- and multi-label, CSV with header and id column) written by a writer — scikit-learn's
  ``dump_svmlight_file`` for svmlight, the ARFF escaping of liac-arff / Weka for ARFF, Python's ``csv`` for CSV — read
  back to the same numbers and strings.
* Corruptions: random byte-level edits of valid files (and of their gzip form) either parse or raise ParseError with
  the file (and a plausible line); never another exception.

The number of examples comes from the Hypothesis profile (tests/conftest.py): bounded by default,
``FORESTBENCH_HYPOTHESIS_PROFILE=nightly`` for a long run.
"""
from __future__ import annotations

import csv
import gzip
import io
import math
import tempfile
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from hypothesis import assume, given
from hypothesis import strategies as st
from sklearn.datasets import dump_svmlight_file

from forestbench.datasets.readers import read_arff, read_csv, read_label_xml, read_svmlight
from forestbench.errors import ParseError

from test_readers import MEKA_DENSE, MULAN_DENSE, MULAN_XML, SPARSE

# ----------------------------------------------------------------------------------------------------------------
# strategies
# ----------------------------------------------------------------------------------------------------------------
finite = st.floats(min_value=-1e30, max_value=1e30, allow_nan=False, allow_infinity=False, width=64)
# text of string/nominal values: any character a text file can hold (no surrogates), quotes, commas, braces,
# backslashes, percent signs, control characters
any_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)


@st.composite
def arff_files(draw):
    n = draw(st.integers(0, 6))
    kinds = draw(st.lists(st.sampled_from(["numeric", "nominal", "string"]), min_size=1, max_size=5))
    attrs, columns, texts = [], [], {}
    for j, kind in enumerate(kinds):
        if kind == "numeric":
            values = draw(st.lists(st.one_of(finite, st.just(math.nan)), min_size=n, max_size=n))
            attrs.append((f"a{j}", kind, None))
            columns.append(values)
        elif kind == "nominal":
            declared = draw(st.lists(any_text.filter(lambda v: v.strip() == v and v not in ("", "?")),
                                     min_size=1, max_size=4, unique=True))
            codes = draw(st.lists(st.one_of(st.integers(0, len(declared) - 1), st.just(-1)), min_size=n, max_size=n))
            attrs.append((f"a{j}", kind, declared))
            columns.append([math.nan if c < 0 else float(c) for c in codes])
        else:
            values = draw(st.lists(any_text.filter(lambda v: v != "?"), min_size=n, max_size=n))
            attrs.append((f"a{j}", kind, None))
            columns.append([math.nan] * n)
            texts[f"a{j}"] = values
    return attrs, columns, texts, n, draw(st.booleans())


def arff_quote(value: str) -> str:
    """Quote a value as liac-arff does: backslash before \\ ' " %, control characters as three octal digits."""
    out = []
    for ch in value:
        if ch in "\\'\"%":
            out.append("\\" + ch)
        elif ord(ch) < 32:
            out.append("\\%03o" % ord(ch))
        else:
            out.append(ch)
    return "'" + "".join(out) + "'"


def write_arff(attrs, columns, texts, n, sparse) -> str:
    lines = ["@relation fuzz"]
    for name, kind, declared in attrs:
        typ = "{" + ",".join(arff_quote(v) for v in declared) + "}" if kind == "nominal" else kind
        lines.append(f"@attribute {name} {typ}")
    lines.append("@data")
    for i in range(n):
        cells = []
        for j, (name, kind, declared) in enumerate(attrs):
            if kind == "string":
                cells.append((texts[name][i] == "", arff_quote(texts[name][i])))
            else:
                v = columns[j][i]
                if math.isnan(v):
                    cells.append((False, "?"))
                elif kind == "nominal":
                    cells.append((v == 0, arff_quote(declared[int(v)])))
                else:
                    cells.append((v == 0, repr(float(v))))
        if sparse:
            lines.append("{" + ", ".join(f"{j} {text}" for j, (zero, text) in enumerate(cells) if not zero) + "}")
        else:
            lines.append(",".join(text for _, text in cells))
    return "\n".join(lines) + "\n"


@st.composite
def svmlight_files(draw):
    n = draw(st.integers(1, 6))
    p = draw(st.integers(1, 8))
    density = draw(st.floats(0, 1))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    X = np.where(rng.random((n, p)) < density, np.array(draw(st.lists(finite, min_size=n * p, max_size=n * p)))
                 .reshape(n, p), 0.0)
    multilabel = draw(st.booleans())
    if multilabel:
        d = draw(st.integers(1, 5))
        y = np.zeros((n, d))  # scikit-learn's writer takes a 0/1 indicator matrix
        for i in range(n):
            y[i, sorted(draw(st.sets(st.integers(0, d - 1), max_size=d)))] = 1.0
        assume(y.any())  # and refuses one without any label
        # a row with neither labels nor features is a blank line, which readers skip (as scikit-learn's loader)
        assume(((y.sum(axis=1) > 0) | (X != 0).any(axis=1)).all())
    else:
        d = None
        y = np.array(draw(st.lists(finite, min_size=n, max_size=n)))
    return sp.csr_matrix(X), y, multilabel, d, draw(st.booleans())


@st.composite
def csv_files(draw):
    n = draw(st.integers(1, 6))
    p = draw(st.integers(1, 5))
    values = [[draw(st.one_of(finite, st.just(math.nan))) for _ in range(p)] for _ in range(n)]
    name = st.text(st.characters(blacklist_categories=("Cs", "Zs", "Cc", "Zl", "Zp")), min_size=1, max_size=8)
    names = draw(st.lists(name, min_size=p, max_size=p))
    ids = draw(st.lists(name, min_size=n, max_size=n)) if draw(st.booleans()) else None
    return names, ids, values, draw(st.sampled_from([",", ";", "\t"]))


def write_csv(names, ids, values, delimiter) -> str:
    out = io.StringIO()
    w = csv.writer(out, delimiter=delimiter, lineterminator="\n")
    w.writerow((["id"] if ids is not None else []) + names)
    for i, row in enumerate(values):
        w.writerow(([ids[i]] if ids is not None else []) + ["" if math.isnan(v) else repr(v) for v in row])
    return out.getvalue()


def _tmp(text_or_bytes, suffix: str):
    tmp = tempfile.TemporaryDirectory()
    path = Path(tmp.name) / f"fuzz{suffix}"
    data = text_or_bytes.encode("utf-8", "surrogateescape") if isinstance(text_or_bytes, str) else text_or_bytes
    if suffix.endswith(".gz"):
        data = gzip.compress(data, mtime=0)
    path.write_bytes(data)
    return tmp, path


def same(a, b) -> bool:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return a.shape == b.shape and bool(np.all((a == b) | (np.isnan(a) & np.isnan(b))))


# ----------------------------------------------------------------------------------------------------------------
# round trips
# ----------------------------------------------------------------------------------------------------------------
@given(arff_files())
def test_arff_round_trip(spec):
    attrs, columns, texts, n, sparse = spec
    tmp, path = _tmp(write_arff(*spec), ".arff")
    with tmp:
        a = read_arff(path)
    assert [x.name for x in a.attributes] == [name for name, _, _ in attrs]
    assert [x.values for x in a.attributes if x.kind == "nominal"] == [tuple(v) for _, k, v in attrs
                                                                        if k == "nominal"]
    data = a.data.toarray() if sp.issparse(a.data) else a.data
    expected = np.array(columns, dtype=float).T.reshape(n, len(attrs))
    values = [j for j, (_, kind, _) in enumerate(attrs) if kind != "string"]  # string columns: text only
    assert same(data[:, values], expected[:, values])
    assert {k: a.text[k] for k in texts} == texts


@given(svmlight_files())
def test_svmlight_round_trip(spec):
    X, y, multilabel, d, zero_based = spec
    buf = io.BytesIO()
    dump_svmlight_file(X, y, buf, zero_based=zero_based, multilabel=multilabel)
    tmp, path = _tmp(buf.getvalue(), ".svm")
    with tmp:
        X2, y2 = read_svmlight(path, multilabel=multilabel, n_features=X.shape[1], zero_based=zero_based,
                               n_labels=d)
    np.testing.assert_allclose(X2.toarray(), X.toarray(), rtol=1e-15, atol=0)
    if multilabel:
        assert same(y2.toarray(), y)
    else:
        np.testing.assert_allclose(y2, y, rtol=1e-15, atol=0)


@given(csv_files())
def test_csv_round_trip(spec):
    names, ids, values, delimiter = spec
    tmp, path = _tmp(write_csv(*spec), ".csv")
    with tmp:
        got_names, got_ids, X = read_csv(path, delimiter=delimiter, id_column=0 if ids is not None else None)
    assert got_names == names
    assert got_ids == ([i.strip() for i in ids] if ids is not None else None)
    assert same(X, values)


# ----------------------------------------------------------------------------------------------------------------
# byte-level corruptions of valid files: ParseError or a result, nothing else
# ----------------------------------------------------------------------------------------------------------------
byte_edit = st.tuples(st.sampled_from(["flip", "insert", "delete", "truncate", "duplicate"]), st.integers(0, 10**6),
                      st.binary(min_size=1, max_size=3))
INTERESTING = [b"\x00", b"\xff", b"\xef\xbb\xbf", b"\r", b"\n", b",", b"{", b"}", b"'", b'"', b"\\", b":", b"?",
               b"%", b"#", b"9" * 25, b"-", b"1e309", b" ", b"@data\n", b"\\u12", b"\\9"]


def corrupt(data: bytes, edits, extra: list[bytes]) -> bytes:
    for (op, pos, chunk), pick in zip(edits, extra):
        pos = pos % (len(data) + 1)
        chunk = pick or chunk
        if op == "flip" and data:
            pos = min(pos, len(data) - 1)
            data = data[:pos] + bytes([data[pos] ^ chunk[0] or 1]) + data[pos + 1:]
        elif op == "insert":
            data = data[:pos] + chunk + data[pos:]
        elif op == "delete":
            data = data[:pos] + data[pos + len(chunk):]
        elif op == "truncate":
            data = data[:pos]
        else:
            data = data[:pos] + data[pos:pos + 20] + data[pos:]
    return data


def only_parse_errors(reader, data: bytes, suffix: str, compress: bool = False):
    raw = data
    tmp, path = _tmp(data, suffix + (".gz" if compress else ""))
    with tmp:
        try:
            reader(path)
        except ParseError as exc:
            assert str(path) in str(exc)
            n_lines = raw.count(b"\n") + raw.count(b"\r") + 2
            assert exc.line is None or (isinstance(exc.line, int) and 1 <= exc.line <= n_lines)


edits = st.lists(byte_edit, min_size=1, max_size=4)
picks = st.lists(st.one_of(st.just(b""), st.sampled_from(INTERESTING)), min_size=4, max_size=4)


@given(arff_files(), edits, picks, st.booleans())
def test_corrupted_arff_raises_only_parse_error(spec, edit_list, extra, compress):
    only_parse_errors(read_arff, corrupt(write_arff(*spec).encode("utf-8", "surrogatepass"), edit_list, extra),
                      ".arff", compress)


@given(svmlight_files(), edits, picks, st.booleans())
def test_corrupted_svmlight_raises_only_parse_error(spec, edit_list, extra, compress):
    X, y, multilabel, d, zero_based = spec
    buf = io.BytesIO()
    dump_svmlight_file(X, y, buf, zero_based=zero_based, multilabel=multilabel)
    data = corrupt(buf.getvalue(), edit_list, extra)
    only_parse_errors(lambda p: read_svmlight(p, multilabel=multilabel), data, ".svm", compress)


@given(csv_files(), edits, picks, st.booleans())
def test_corrupted_csv_raises_only_parse_error(spec, edit_list, extra, compress):
    data = corrupt(write_csv(*spec).encode("utf-8", "surrogatepass"), edit_list, extra)
    only_parse_errors(lambda p: read_csv(p, delimiter=spec[3], id_column=0 if spec[1] else None), data, ".csv",
                      compress)


# ----------------------------------------------------------------------------------------------------------------
# text-level edits of the hand-written fixtures, and arbitrary bytes
# ----------------------------------------------------------------------------------------------------------------
SVM = "0,2 1:0.5 3:1.25\n 2:2\n1 qid:3 1:1 4:-1 # c\n2,0,1 5:3\n"
CSV = "id,a,b\nx,1,2\ny,?,3.5\n"
ALPHABET = "{}'\",% ?@\n\t:#<>=/-.e0123456789abxyz\\"

edit = st.tuples(st.sampled_from(["insert", "delete", "replace"]), st.integers(0, 10_000), st.integers(1, 4),
                 st.text(alphabet=ALPHABET, min_size=1, max_size=4))


def mutate(text: str, edits) -> str:
    for op, pos, length, chunk in edits:
        pos = pos % (len(text) + 1)
        if op == "insert":
            text = text[:pos] + chunk + text[pos:]
        elif op == "delete":
            text = text[:pos] + text[pos + length:]
        else:
            text = text[:pos] + chunk + text[pos + len(chunk):]
    return text


def check(reader, text: str, suffix: str):
    only_parse_errors(reader, text.encode("utf-8", "surrogateescape"), suffix)


@given(base=st.sampled_from([MULAN_DENSE, MEKA_DENSE, SPARSE]), edits=st.lists(edit, min_size=1, max_size=4))
def test_fuzz_arff(base, edits):
    check(read_arff, mutate(base, edits), ".arff")


@given(edits=st.lists(edit, min_size=1, max_size=4), multilabel=st.booleans())
def test_fuzz_svmlight(edits, multilabel):
    check(lambda p: read_svmlight(p, multilabel=multilabel), mutate(SVM, edits), ".svm")


@given(edits=st.lists(edit, min_size=1, max_size=4))
def test_fuzz_xml(edits):
    check(read_label_xml, mutate(MULAN_XML, edits), ".xml")


@given(edits=st.lists(edit, min_size=1, max_size=4))
def test_fuzz_csv(edits):
    check(lambda p: read_csv(p, id_column=0), mutate(CSV, edits), ".csv")


@given(data=st.binary(max_size=300))
def test_fuzz_arbitrary_bytes(data):
    for reader, suffix in ((read_arff, ".arff"), (read_svmlight, ".svm"), (read_label_xml, ".xml"),
                           (read_csv, ".csv")):
        only_parse_errors(reader, data, suffix)
