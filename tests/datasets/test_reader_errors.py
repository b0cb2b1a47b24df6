"""Bad raw files given to the readers and the prepare step: each must give a one-line error naming the file
(and line) or dataset, never a traceback, an out-of-memory or silently wrong numbers."""
from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from forestbench.datasets.from_files import build_dataset
from forestbench.datasets.prepare import prepare
from forestbench.datasets.readers import read_arff, read_svmlight
from forestbench.datasets.store import load_dataset
from forestbench.errors import DataError, ParseError


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    return path


def svm_entry(fname, task="multilabel", fmt="svmlight_multilabel", **reader):
    source = {"kind": "download", "files": [{"name": fname, "format": fmt}],
              "layout": {"type": "single", "data": [fname]}, "labels": {"from": "inline"}}
    if reader:
        source["reader"] = reader
    return {"task": task, "source": source}


# ---------------------------------------------------------------- absurd widths (memory follows the non-zeros)
def test_absurd_svmlight_index_is_refused_with_file_and_line(tmp_path):
    path = write(tmp_path, "a.svm", "0 1:1 2:2\n1 3:1\n0 1000000000:1\n")
    with pytest.raises(ParseError) as info:
        read_svmlight(path, multilabel=True)
    assert str(path) in str(info.value) and info.value.line == 3
    assert "1000000000" in str(info.value) and "max_width" in str(info.value)


def test_prepare_of_an_absurd_width_fails_fast_and_small(tmp_path):
    """Before: building a Python object per column up to the largest index went out of memory. The limit is
    configurable in the registry entry; with it raised, memory stays in the non-zeros."""
    raw = tmp_path / "raw" / "wide"
    raw.mkdir(parents=True)
    write(raw, "a.svm", "0 1:1 2:2\n1 3:1\n0,1 30000000:1\n")
    with pytest.raises(ParseError, match=r"a\.svm:3: feature index 30000000 is beyond the limit"):
        prepare("wide", svm_entry("a.svm"), tmp_path / "wide.npz", raw_dir=tmp_path / "raw")
    tracemalloc.start()  # numpy reports its buffers to tracemalloc too
    try:
        ds = build_dataset("wide", svm_entry("a.svm", max_width=40_000_000), raw)
        peak_mb = tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()
    assert ds.X.shape == (3, 30_000_000) and ds.X.nnz == 4
    assert peak_mb < 50, f"building a 3-row dataset of 30e6 columns allocated {peak_mb:.0f} MB"


# ---------------------------------------------------------------- integers beyond int64 are ParseErrors
@pytest.mark.parametrize("text,kwargs", [
    ("0 9223372036854775808:1\n", {}),                       # feature index 2**63
    ("100000000000000000000 1:1\n", {"multilabel": True}),   # label 10**20
    ("9223372036854775807 1:1\n", {"multilabel": True}),     # label 2**63 - 1: width would overflow
])
def test_svmlight_huge_integers_are_parse_errors(tmp_path, text, kwargs):
    path = write(tmp_path, "h.svm", text)
    with pytest.raises(ParseError) as info:
        read_svmlight(path, **kwargs)
    assert info.value.line == 1


def test_arff_huge_sparse_index_is_a_parse_error(tmp_path):
    path = write(tmp_path, "h.arff", "@relation r\n@attribute a numeric\n@data\n{100000000000000000000 1}\n")
    with pytest.raises(ParseError) as info:
        read_arff(path)
    assert info.value.line == 4


# ---------------------------------------------------------------- empty files, overflow, missing inputs
@pytest.mark.parametrize("fname,text,fmt", [
    ("e.svm", "", "svmlight_multilabel"),
    ("e.svm", "# only a comment\n", "svmlight_multilabel"),
    ("e.arff", "@relation r\n@attribute a numeric\n@attribute b {0,1}\n@data\n", "arff"),
])
def test_empty_raw_file_is_refused_at_prepare(tmp_path, fname, text, fmt):
    raw = tmp_path / "raw" / "empty"
    raw.mkdir(parents=True)
    write(raw, fname, text)
    entry = svm_entry(fname, fmt=fmt)
    if fmt == "arff":
        entry["source"]["labels"] = {"from": "last", "d": 1}
    with pytest.raises(DataError, match=rf"dataset 'empty': raw file .*{fname} has no data rows"):
        prepare("empty", entry, tmp_path / "e.npz", raw_dir=tmp_path / "raw")


def test_csv_value_beyond_float32_is_refused(tmp_path):
    raw = tmp_path / "raw" / "big"
    raw.mkdir(parents=True)
    write(raw, "d.csv", "1,2,0\n3,1e300,1\n5,6,0\n")
    entry = {"task": "binary", "source": {"kind": "download", "files": [{"name": "d.csv", "format": "csv"}],
                                          "labels": {"from": "last", "d": 1}}}
    with pytest.raises(ParseError, match=r"d\.csv:2: column 2: '1e300' is beyond the accepted range"):
        prepare("big", entry, tmp_path / "b.npz", raw_dir=tmp_path / "raw")
    assert not (tmp_path / "b.npz").exists()


@pytest.mark.parametrize("fname,text,fmt", [
    ("d.arff", "@relation r\n@attribute a numeric\n@attribute y {0,1}\n@data\n1,0\n-4e38,1\n", "arff"),
    ("d.svm", "0 1:1\n1 2:1e39\n", "svmlight"),
])
def test_arff_and_svmlight_values_beyond_float32_are_refused_with_their_line(tmp_path, fname, text, fmt):
    raw = tmp_path / "raw" / "big"
    raw.mkdir(parents=True)
    write(raw, fname, text)
    entry = {"task": "binary", "source": {"kind": "download", "files": [{"name": fname, "format": fmt}],
                                          "labels": {"from": "last", "d": 1} if fmt == "arff" else {"from": "inline"}}}
    with pytest.raises(ParseError, match=rf"{fname}:\d: .*beyond the accepted range") as info:
        prepare("big", entry, tmp_path / "b.npz", raw_dir=tmp_path / "raw")
    assert info.value.line == (6 if fmt == "arff" else 2)


def test_missing_inputs_without_impute_are_refused_at_prepare(tmp_path):
    raw = tmp_path / "raw" / "holes"
    raw.mkdir(parents=True)
    write(raw, "d.csv", "1,2,0.5\n3,?,1.5\n5,6,0.25\n")
    entry = {"task": "regression", "source": {"kind": "download", "files": [{"name": "d.csv", "format": "csv"}],
                                              "labels": {"from": "last", "d": 1}}}
    with pytest.raises(DataError, match=r"dataset holes: 1 missing input value\(s\), the first at row 1.*impute"):
        prepare("holes", entry, tmp_path / "h.npz", raw_dir=tmp_path / "raw")
    entry["source"]["preprocess"] = [{"op": "impute"}]
    prepare("holes", entry, tmp_path / "h.npz", raw_dir=tmp_path / "raw")
    assert np.isfinite(load_dataset(tmp_path / "h.npz").X).all()
