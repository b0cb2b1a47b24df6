"""How the readers decode text: ARFF quoting and escapes (as liac-arff decodes them, malformed ones refused with
their line) and a UTF-8 byte order mark at the start of a CSV or ARFF file."""
from __future__ import annotations

import pytest

from forestbench.datasets.readers import read_arff, read_csv
from forestbench.errors import ParseError


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    return path


# ---------------------------------------------------------------- ARFF quoting
def test_sparse_arff_row_with_quoted_values(tmp_path):
    path = write(tmp_path, "q.arff", "@relation r\n@attribute a numeric\n@attribute b {x,y,'z w'}\n"
                                     "@attribute s string\n@data\n{1 'y'}\n{0 2, 1 'z w', 2 'hello, there'}\n"
                                     "{1 \"x\"}\n")
    a = read_arff(path)
    assert a.data.toarray()[:, :2].tolist() == [[0, 1], [2, 2], [0, 0]]
    assert a.text["s"] == ["", "hello, there", ""]


def test_sparse_arff_unbalanced_quote_still_refused(tmp_path):
    path = write(tmp_path, "q.arff", "@relation r\n@attribute b {x,y}\n@data\n{0 'y}\n")
    with pytest.raises(ParseError, match="quote") as info:
        read_arff(path)
    assert info.value.line == 4


@pytest.mark.parametrize("row", ["{0 'y',,1 2}", "{0 'y', ,1 2}", "{,0 'y'}"])
def test_sparse_arff_empty_pair_beside_quoted_values_is_a_parse_error(tmp_path, row):
    # found by the fuzz suite: an empty pair among quoted ones raised a bare ValueError
    path = write(tmp_path, "q.arff", f"@relation r\n@attribute b {{x,y}}\n@attribute a numeric\n@data\n{row}\n")
    with pytest.raises(ParseError, match="index value") as info:
        read_arff(path)
    assert info.value.line == 5


@pytest.mark.parametrize("escaped,decoded", [
    (r"a\011b", "a\tb"), (r"a\0b", "a\x00b"), (r"a\bb", "a\bb"), (r"caf\u00e9", "café"), (r"a\%b", "a%b"),
    (r"it\'s", "it's"), (r"back\\slash", "back\\slash"), (r"x\nz", "x\nz"), (r"\101", "A"), (r"\7", "\x07"),
])
def test_arff_escapes_decode_as_liac_arff(tmp_path, escaped, decoded):
    path = write(tmp_path, "e.arff", "@relation r\n@attribute s string\n@attribute x numeric\n@data\n"
                                     "'" + escaped + "',1\n")
    assert read_arff(path).text["s"] == [decoded]
    sparse = write(tmp_path, "es.arff", "@relation r\n@attribute s string\n@attribute x numeric\n@data\n"
                                        "{0 '" + escaped + "', 1 2}\n")
    assert read_arff(sparse).text["s"] == [decoded]


def test_arff_quoted_nominal_declaration_with_escape_matches_data(tmp_path):
    path = write(tmp_path, "n.arff", "@relation r\n@attribute c {'a\\tb',plain}\n@data\n'a\\tb'\nplain\n")
    assert read_arff(path).data.ravel().tolist() == [0.0, 1.0]


def test_arff_unknown_escape_is_a_parse_error(tmp_path):
    path = write(tmp_path, "e.arff", "@relation r\n@attribute s string\n@data\n'a\\qb'\n")
    with pytest.raises(ParseError, match="escape") as info:
        read_arff(path)
    assert info.value.line == 4


def test_value_quoted_twice_is_kept_once_unquoted(tmp_path):
    """A string whose content is itself quoted ("'x'") keeps its inner quotes (it was unquoted twice)."""
    path = write(tmp_path, "t.arff", "@relation r\n@attribute s string\n@data\n\"'x'\"\n")
    assert read_arff(path).text["s"] == ["'x'"]


# ---------------------------------------------------------------- UTF-8 byte order mark
def test_csv_with_utf8_bom(tmp_path):
    path = write(tmp_path, "b.csv", b"\xef\xbb\xbfa,b\n1,2\n3,4\n")
    names, _, X = read_csv(path)
    assert names == ["a", "b"] and X.tolist() == [[1, 2], [3, 4]]
    path = write(tmp_path, "c.csv", b"\xef\xbb\xbf1,2\n3,4\n")
    assert read_csv(path, header=False)[2].tolist() == [[1, 2], [3, 4]]


def test_arff_with_utf8_bom(tmp_path):
    path = write(tmp_path, "b.arff", b"\xef\xbb\xbf@relation r\n@attribute a numeric\n@data\n1\n")
    assert read_arff(path).data.tolist() == [[1.0]]
