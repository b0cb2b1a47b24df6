"""Readers on small fixture files written by the tests, in every supported format, and malformed inputs."""
from __future__ import annotations

import bz2
import gzip

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import dump_svmlight_file, load_svmlight_file

from forestbench.datasets.readers import (meka_label_count, read_arff, read_csv, read_label_xml, read_svmlight)
from forestbench.errors import ParseError

MULAN_DENSE = """% Mulan style: labels are the last attributes, named by the XML file
@relation toy

@attribute f1 numeric
@attribute f2 NUMERIC
@attribute colour {red,'dark green',blue}
@attribute lab_a {0,1}
@attribute lab_b {0,1}

@data
0.5,1e-3,red,1,0
-2, 3 ,'dark green',0,1
?,4.25,?,1,1
"""

MULAN_XML = """<?xml version="1.0" encoding="utf-8"?>
<labels xmlns="http://mulan.sourceforge.net/labels">
  <label name="lab_a"></label>
  <label name="lab_b"><label name="lab_b_child"/></label>
</labels>
"""

MEKA_DENSE = """@relation 'Music: -C 2'
@attribute amazed {0,1}
@attribute happy {0,1}
@attribute x1 real
@attribute x2 integer
@data
1,0,0.25,3
0,0,-1.5,4
"""

SPARSE = """@relation sparse_toy
@attribute w0 {0,1}
@attribute w1 {0,1}
@attribute w2 numeric
@attribute w3 numeric
@attribute y0 {0,1}
@attribute y1 {0,1}
@data
{0 1, 3 2.5, 5 1}
{}
{1 1,2 -0.5,4 1}
{ 2 ?, 4 1 , 5 1 }
"""


def write(tmp_path, name, text, mode="w"):
    path = tmp_path / name
    if name.endswith(".gz"):
        path.write_bytes(gzip.compress(text.encode()))
    elif name.endswith(".bz2"):
        path.write_bytes(bz2.compress(text.encode()))
    else:
        path.write_text(text)
    return path


def test_dense_arff_labels_last_with_xml(tmp_path):
    arff = read_arff(write(tmp_path, "toy.arff", MULAN_DENSE))
    assert not arff.sparse and arff.relation == "toy"
    assert arff.names == ["f1", "f2", "colour", "lab_a", "lab_b"]
    assert arff.attributes[2].values == ("red", "dark green", "blue")
    expected = np.array([[0.5, 1e-3, 0, 1, 0], [-2, 3, 1, 0, 1], [np.nan, 4.25, np.nan, 1, 1]])
    np.testing.assert_array_equal(arff.data, expected)
    names, parents = read_label_xml(write(tmp_path, "toy.xml", MULAN_XML), with_parents=True)
    assert names == ["lab_a", "lab_b", "lab_b_child"]
    assert parents == {"lab_a": None, "lab_b": None, "lab_b_child": "lab_b"}


def test_dense_arff_labels_first_meka_header(tmp_path):
    arff = read_arff(write(tmp_path, "music.arff", MEKA_DENSE))
    assert meka_label_count(arff.relation) == 2
    np.testing.assert_array_equal(arff.data, [[1, 0, 0.25, 3], [0, 0, -1.5, 4]])
    assert meka_label_count("yeast: -C -14") == -14
    assert meka_label_count("no labels here") is None


@pytest.mark.parametrize("suffix", ["", ".gz", ".bz2"])
def test_sparse_arff(tmp_path, suffix):
    arff = read_arff(write(tmp_path, "s.arff" + suffix, SPARSE))
    assert arff.sparse and sp.issparse(arff.data) and arff.data.format == "csr"
    expected = np.array([[1, 0, 0, 2.5, 0, 1], [0] * 6, [0, 1, -0.5, 0, 1, 0], [0, 0, np.nan, 0, 1, 1]])
    np.testing.assert_array_equal(arff.data.toarray(), expected)


def test_sparse_nominal_non_binary_absent_means_first_value(tmp_path):
    text = "@relation r\n@attribute c {a,b,c}\n@attribute x numeric\n@data\n{0 c}\n{1 2}\n"
    arff = read_arff(write(tmp_path, "n.arff", text))
    np.testing.assert_array_equal(arff.data.toarray(), [[2, 0], [0, 2]])


@pytest.mark.parametrize("seed", range(5))
def test_round_trip_random_dense_and_sparse(tmp_path, seed):
    rng = np.random.default_rng(seed)
    n, p = rng.integers(1, 40), rng.integers(1, 30)
    X = np.round(rng.normal(size=(n, p)), 6) * (rng.random((n, p)) < 0.3)
    header = "@relation r\n" + "".join(f"@attribute a{j} numeric\n" for j in range(p)) + "@data\n"
    dense = header + "".join(",".join(repr(float(v)) for v in row) + "\n" for row in X)
    sparse = header + "".join("{" + ", ".join(f"{j} {float(row[j])!r}" for j in np.flatnonzero(row)) + "}\n"
                              for row in X)
    np.testing.assert_array_equal(read_arff(write(tmp_path, "d.arff", dense)).data, X)
    np.testing.assert_array_equal(read_arff(write(tmp_path, "s.arff", sparse)).data.toarray(), X)


def test_string_and_hierarchical_attributes(tmp_path):
    text = ("@relation hmc\n@attribute x numeric\n@attribute class hierarchical 01,01/01,02\n"
            "@attribute note string\n@data\n1,01/01@02,'a, b'\n2,01,?\n")
    arff = read_arff(write(tmp_path, "h.arff", text))
    assert arff.attributes[1].kind == "hierarchical" and arff.attributes[1].values == ("01", "01/01", "02")
    assert arff.text["class"] == ["01/01@02", "01"]
    assert arff.text["note"] == ["a, b", "?"]
    np.testing.assert_array_equal(arff.data[:, 0], [1, 2])


def test_svmlight_multilabel_matches_sklearn(tmp_path):
    text = "0,2 1:0.5 3:1.25\n 2:2\n1 qid:3 1:1 4:-1 # comment\n\n2,0,1 5:3\n"
    path = write(tmp_path, "m.svm", text)
    X, Y = read_svmlight(path, multilabel=True)
    Xs, ys = load_svmlight_file(str(path), multilabel=True, zero_based=False)
    np.testing.assert_array_equal(X.toarray(), Xs.toarray())
    assert [tuple(np.flatnonzero(r)) for r in Y.toarray()] == [tuple(sorted(int(v) for v in t)) for t in ys]
    assert Y.shape == (4, 3)


def test_svmlight_single_label_matches_sklearn(tmp_path):
    rng = np.random.default_rng(0)
    X = sp.random(30, 12, density=0.3, random_state=1, format="csr")
    y = rng.normal(size=30)
    path = tmp_path / "r.svm"
    dump_svmlight_file(X, y, str(path), zero_based=False)
    Xr, yr = read_svmlight(path, n_features=12)
    np.testing.assert_allclose(Xr.toarray(), X.toarray())
    np.testing.assert_allclose(yr, y)


def test_xc_header_format(tmp_path):
    text = "3 5 4\n0,3 0:1 4:0.5\n2 1:2\n 3:1\n"
    X, Y = read_svmlight(write(tmp_path, "xc.txt", text), multilabel=True, header=True)
    assert X.shape == (3, 5) and Y.shape == (3, 4)
    np.testing.assert_array_equal(X.toarray(), [[1, 0, 0, 0, 0.5], [0, 2, 0, 0, 0], [0, 0, 0, 1, 0]])
    np.testing.assert_array_equal(Y.toarray(), [[1, 0, 0, 1], [0, 0, 1, 0], [0, 0, 0, 0]])


def test_csv_with_header_and_ids(tmp_path):
    text = "id\ta\tb\nd1\t1\t0\nd2\t?\t2.5\n"
    names, ids, X = read_csv(write(tmp_path, "t.tsv", text), delimiter="\t", id_column=0)
    assert names == ["a", "b"] and ids == ["d1", "d2"]
    np.testing.assert_array_equal(X, [[1, 0], [np.nan, 2.5]])


# --------------------------------------------------------------------------------------------------------------
# malformed input: ParseError naming the file and the right line
# --------------------------------------------------------------------------------------------------------------
HEAD = "@relation r\n@attribute a numeric\n@attribute b {x,y}\n@data\n"  # data starts on line 5
ARFF_ERRORS = [
    (HEAD + "1,x\n2\n", 6, "1 values, the header declares 2"),
    (HEAD + "1,x\nzz,y\n", 6, "invalid numeric value 'zz'"),
    (HEAD + "1,x\n\n1,q\n", 7, "not declared"),
    (HEAD + "{0 1, 1 x}\n{0 1, 2 x}\n", 6, "out of range"),
    (HEAD + "{1 x, 0 1}\n", 5, "must increase"),
    (HEAD + "{0 1 1 x}\n", 5, "index value"),
    (HEAD + "{0 1}\n1,x\n", 6, "mixes"),
    (HEAD + "{0 1\n", 5, "closing brace"),
    (HEAD + "1,'x\n", 5, "unbalanced quote"),
    ("@relation r\n@attribute a strange\n@data\n", 2, "unsupported type"),
    ("@relation r\n@attribute a {x,x}\n@data\n", 2, "duplicate values"),
    ("@relation r\n@attribute a numeric\n@attribute a numeric\n@data\n", 4, "duplicate attribute"),
    ("@relation r\n@attribute a numeric\n", 2, "no @data"),
    ("garbage\n", 1, "expected @relation"),
    ("@relation r\n@attribute a {x,y\n@data\n", 2, "closing brace"),
    (HEAD + "1e999,x\n", 5, "invalid numeric"),
]


@pytest.mark.parametrize("text,line,fragment", ARFF_ERRORS)
def test_arff_errors_name_file_and_line(tmp_path, text, line, fragment):
    path = write(tmp_path, "bad.arff", text)
    with pytest.raises(ParseError) as err:
        read_arff(path)
    assert err.value.line == line, str(err.value)
    assert fragment in str(err.value) and str(path) in str(err.value)


def test_arff_error_line_beyond_first_block(tmp_path, monkeypatch):
    import forestbench.datasets.readers.arff as arff_mod

    monkeypatch.setattr(arff_mod, "BLOCK_TOKENS", 7)
    rows = "".join("1,x\n" for _ in range(20)) + "1,bad\n"
    with pytest.raises(ParseError) as err:
        read_arff(write(tmp_path, "b.arff", HEAD + rows))
    assert err.value.line == 25


@pytest.mark.parametrize("text,line,fragment", [
    ("1 1:1\n1 1:a\n", 2, "invalid feature value"),
    ("1 1:1\n1 1:2 0:3\n", 2, "must increase"),
    ("1 1:1\nx 2:2\n", 2, "invalid target"),
    ("1 1:1\n1 1-2\n", 2, "index:value"),
    ("1 1:1\n2:1\n", 2, "missing target"),
])
def test_svmlight_errors(tmp_path, text, line, fragment):
    with pytest.raises(ParseError) as err:
        read_svmlight(write(tmp_path, "bad.svm", text))
    assert err.value.line == line and fragment in str(err.value), str(err.value)


def test_svmlight_multilabel_and_width_errors(tmp_path):
    with pytest.raises(ParseError) as err:
        read_svmlight(write(tmp_path, "a.svm", "0 1:1\n1,,2 1:1\n"), multilabel=True)
    assert err.value.line == 2
    with pytest.raises(ParseError) as err:
        read_svmlight(write(tmp_path, "b.svm", "0 1:1\n1 7:1\n"), n_features=5)
    assert err.value.line == 2 and "n_features" in str(err.value)
    with pytest.raises(ParseError) as err:
        read_svmlight(write(tmp_path, "c.txt", "5 3 2\n0 0:1\n"), multilabel=True, header=True)
    assert "declares 5 points" in str(err.value)


@pytest.mark.parametrize("text,line,fragment", [
    ("<labels><label name='a'/>\n<label/></labels>", 2, "without a name"),
    ("<labels>\n<label name='a'>\n</labels>", 3, "malformed XML"),
    ("<other/>", 1, "expected <labels>"),
    ("<labels><label name='a'/><label name='a'/></labels>", 1, "twice"),
])
def test_xml_errors(tmp_path, text, line, fragment):
    with pytest.raises(ParseError) as err:
        read_label_xml(write(tmp_path, "bad.xml", text))
    assert err.value.line == line and fragment in str(err.value)


def test_csv_errors(tmp_path):
    with pytest.raises(ParseError) as err:
        read_csv(write(tmp_path, "a.csv", "a,b\n1,2\n3\n"))
    assert err.value.line == 3
    with pytest.raises(ParseError) as err:
        read_csv(write(tmp_path, "b.csv", "a,b\n1,2\n3,x\n"))
    assert err.value.line == 3 and "not a number" in str(err.value)


def test_missing_and_corrupt_compressed_files(tmp_path):
    with pytest.raises(ParseError, match="cannot open"):
        read_arff(tmp_path / "nope.arff")
    bad = tmp_path / "c.arff.gz"
    bad.write_bytes(gzip.compress(MULAN_DENSE.encode())[:-20])
    with pytest.raises(ParseError):
        read_arff(bad)


def test_header_keywords_with_tabs_and_case(tmp_path):
    text = "@RELATION\tr\n@ATTRIBUTE\tcolour {red, 'dark green'}\n@Attribute\tx REAL\n@DATA\nred,1\n"
    arff = read_arff(write(tmp_path, "t.arff", text))
    assert arff.attributes[0].values == ("red", "dark green") and arff.relation == "r"
    np.testing.assert_array_equal(arff.data, [[0, 1]])
