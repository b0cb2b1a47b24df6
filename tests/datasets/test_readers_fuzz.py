"""Property/fuzz tests: any mutation of a valid file either parses or raises ParseError with the file (and, when
the fault is in a line, that line number); never another exception type."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from forestbench.datasets.readers import read_arff, read_csv, read_label_xml, read_svmlight
from forestbench.errors import ParseError

from test_readers import MEKA_DENSE, MULAN_DENSE, MULAN_XML, SPARSE

SVM = "0,2 1:0.5 3:1.25\n 2:2\n1 qid:3 1:1 4:-1 # c\n2,0,1 5:3\n"
CSV = "id,a,b\nx,1,2\ny,?,3.5\n"
ALPHABET = "{}'\",% ?@\n\t:#<>=/-.e0123456789abxyz"

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
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"fuzz{suffix}"
        path.write_bytes(text.encode("utf-8", "surrogateescape"))
        try:
            reader(path)
        except ParseError as exc:
            assert str(path) in str(exc)
            assert exc.line is None or (isinstance(exc.line, int) and 1 <= exc.line <= text.count("\n") + text.count("\r") + 2)


# FORESTBENCH_FUZZ_EXAMPLES raises the effort for a deeper run (e.g. 5000)
SETTINGS = settings(max_examples=int(os.environ.get("FORESTBENCH_FUZZ_EXAMPLES", "150")), deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(base=st.sampled_from([MULAN_DENSE, MEKA_DENSE, SPARSE]), edits=st.lists(edit, min_size=1, max_size=4))
def test_fuzz_arff(base, edits):
    check(read_arff, mutate(base, edits), ".arff")


@SETTINGS
@given(edits=st.lists(edit, min_size=1, max_size=4), multilabel=st.booleans())
def test_fuzz_svmlight(edits, multilabel):
    check(lambda p: read_svmlight(p, multilabel=multilabel), mutate(SVM, edits), ".svm")


@SETTINGS
@given(edits=st.lists(edit, min_size=1, max_size=4))
def test_fuzz_xml(edits):
    check(read_label_xml, mutate(MULAN_XML, edits), ".xml")


@SETTINGS
@given(edits=st.lists(edit, min_size=1, max_size=4))
def test_fuzz_csv(edits):
    check(lambda p: read_csv(p, id_column=0), mutate(CSV, edits), ".csv")


@SETTINGS
@given(data=st.binary(max_size=300))
def test_fuzz_arbitrary_bytes(data):
    text = data.decode("utf-8", "surrogateescape")
    for reader, suffix in ((read_arff, ".arff"), (read_svmlight, ".svm"), (read_label_xml, ".xml"),
                           (read_csv, ".csv")):
        check(reader, text, suffix)
