"""From raw files to a Dataset: fixture files in each layout, fetched over HTTP from 127.0.0.1 then prepared."""
from __future__ import annotations

import copy
import hashlib

import numpy as np
import pytest
import scipy.sparse as sp

from forestbench.datasets.download import Downloader, ShaLock, fetch_dataset
from forestbench.datasets.prepare import prepare
from forestbench.datasets.from_files import build_dataset
from forestbench.datasets.store import load_dataset
from forestbench.errors import DataError
from dsfixtures_http import Route


def arff(relation, attrs, rows, sparse=False):
    head = f"@relation {relation}\n" + "".join(f"@attribute {n} {t}\n" for n, t in attrs) + "@data\n"
    if sparse:
        body = "".join("{" + ", ".join(f"{j} {v}" for j, v in enumerate(r) if str(v) not in ("0", "0.0")) + "}\n"
                       for r in rows)
    else:
        body = "".join(",".join(str(v) for v in r) + "\n" for r in rows)
    return head + body


def toy_multilabel(rng, n, p, d, protein=False):
    X = np.round(rng.normal(size=(n, p)), 3)
    Y = (rng.random((n, d)) < 0.4).astype(int)
    attrs = ([("protein", "{P1,P2,P3,P4,P5,P6,P7,P8,P9,P10,P11,P12}")] if protein else []) + \
        [(f"f{j}", "numeric") for j in range(p)] + [(f"l{k}", "{0,1}") for k in range(d)]
    rows = [([f"P{i % 12 + 1}"] if protein else []) + list(X[i]) + list(Y[i]) for i in range(n)]
    return X, Y, attrs, rows


def XML(d):
    return ('<?xml version="1.0"?>\n<labels xmlns="http://mulan.sourceforge.net/labels">\n'
            + "".join(f'<label name="l{k}"></label>\n' for k in range(d)) + "</labels>\n")


def serve(http_server, files: dict[str, str | bytes]) -> list[dict]:
    specs = []
    for name, content in files.items():
        body = content.encode() if isinstance(content, str) else content
        http_server.routes[f"/mulan/{name}"] = Route(body)
        specs.append({"name": name, "url": http_server.url(f"/mulan/{name}"),
                      "sha256": hashlib.sha256(body).hexdigest(), "size": len(body),
                      "format": "xml" if name.endswith(".xml") else "arff"})
    return specs


@pytest.fixture
def dl(tmp_path):
    return Downloader(retries=2, backoff=0.01, timeout=5, lock=ShaLock(tmp_path / "lock.yaml"), log=lambda m: None)


@pytest.mark.parametrize("sparse", [False, True])
def test_mulan_train_test_with_xml_end_to_end(http_server, dl, tmp_path, sparse):
    rng = np.random.default_rng(0)
    X, Y, attrs, rows = toy_multilabel(rng, 30, 5, 4, protein=True)
    specs = serve(http_server, {"toy-train.arff": arff("toy", attrs, rows[:20], sparse),
                                "toy-test.arff": arff("toy", attrs, rows[20:], sparse), "toy.xml": XML(4)})
    entry = {"task": "multilabel", "status": "available", "shape": {"n": 30, "p": 5, "d": 4},
             "source": {"kind": "download", "files": specs,
                        "layout": {"type": "train_test", "train": ["toy-train.arff"], "test": ["toy-test.arff"]},
                        "labels": {"from": "xml", "file": "toy.xml"},
                        "preprocess": [{"op": "drop_attributes", "names": ["protein"]}]}}
    raw = tmp_path / "raw"
    fetch_dataset("toy", entry, raw, dl)
    ds = prepare("toy", entry, tmp_path / "prepared" / "toy.npz", raw_dir=raw)
    back = load_dataset(tmp_path / "prepared" / "toy.npz", expected_shape=entry["shape"])
    dense = back.X.toarray() if sp.issparse(back.X) else back.X
    assert sp.issparse(back.X) == sparse  # sparse inputs stay sparse
    np.testing.assert_allclose(dense, X.astype(np.float32))
    np.testing.assert_array_equal(back.Y, Y)
    (train, test), = back.given_splits
    np.testing.assert_array_equal(train, np.arange(20))
    np.testing.assert_array_equal(test, np.arange(20, 30))
    assert ds.meta["output_names"] == [f"l{k}" for k in range(4)]


def test_shape_mismatch_is_reported(http_server, dl, tmp_path):
    rng = np.random.default_rng(1)
    _, _, attrs, rows = toy_multilabel(rng, 10, 3, 2)
    specs = serve(http_server, {"t.arff": arff("t", attrs, rows), "t.xml": XML(2)})
    entry = {"task": "multilabel", "shape": {"n": 10, "p": 4, "d": 2},
             "source": {"kind": "download", "files": specs, "labels": {"from": "xml", "file": "t.xml"},
                        "layout": {"type": "single", "data": ["t.arff"]}}}
    fetch_dataset("t", entry, tmp_path / "raw", dl)
    with pytest.raises(DataError, match=r"dataset t: wrong shape: p=3 \(expected 4\)"):
        prepare("t", entry, tmp_path / "t.npz", raw_dir=tmp_path / "raw")
    assert not (tmp_path / "t.npz").exists()


def test_mtr_last_d_nominal_inputs_impute_and_first_last_split(tmp_path):
    text = ("@relation TEST\n@attribute a {x,y,z}\n@attribute b numeric\n@attribute t1 numeric\n@attribute t2 numeric\n"
            "@data\nx,1,0.5,1\ny,?,1.5,2\nz,3,2.5,3\nx,5,3.5,4\n")
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "m.arff").write_text(text)
    entry = {"task": "multioutput_regression", "shape": {"n": 4, "p": 2, "d": 2},
             "source": {"kind": "download", "files": [{"name": "m.arff", "format": "arff"}],
                        "layout": {"type": "single", "data": ["m.arff"], "given": {"n_train": 3, "n_test": 1}},
                        "labels": {"from": "last", "d": 2}, "preprocess": [{"op": "impute", "strategy": "median"}]}}
    ds = build_dataset("m", entry, tmp_path / "m")
    np.testing.assert_array_equal(ds.X, [[0, 1], [1, 3], [2, 3], [0, 5]])  # median of 1,3,5 = 3
    np.testing.assert_array_equal(ds.Y, [[0.5, 1], [1.5, 2], [2.5, 3], [3.5, 4]])
    assert [len(t) for t in ds.given_splits[0]] == [3, 1]
    onehot = copy.deepcopy(entry)
    onehot["source"]["preprocess"].append({"op": "nominal_inputs", "encoding": "onehot"})
    ds = build_dataset("m", onehot, tmp_path / "m")
    np.testing.assert_array_equal(ds.X[:, :3], [[1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 0, 0]])


def test_meka_labels_first_and_boolean_words(tmp_path):
    text = ("@relation 'Music: -C 2'\n@attribute a {FALSE,TRUE}\n@attribute b {1,0}\n@attribute x numeric\n"
            "@data\nTRUE,0,0.5\nFALSE,1,1\n")
    (tmp_path / "k").mkdir()
    (tmp_path / "k" / "k.arff").write_text(text)
    entry = {"task": "multilabel", "source": {"kind": "download", "files": [{"name": "k.arff"}],
                                              "layout": {"type": "single", "data": ["k.arff"]},
                                              "labels": {"from": "meka"}}}
    ds = build_dataset("k", entry, tmp_path / "k")
    np.testing.assert_array_equal(ds.Y, [[1, 0], [0, 1]])  # {1,0} declared: code 1 is the value 0
    np.testing.assert_array_equal(ds.X, [[0.5], [1]])


def test_folds_layout_gives_published_folds(tmp_path):
    rng = np.random.default_rng(2)
    _, _, attrs, rows = toy_multilabel(rng, 12, 2, 2)
    (tmp_path / "e").mkdir()
    names = []
    for k in range(3):
        names.append(f"e-fold{k + 1}-test.arff")
        (tmp_path / "e" / names[-1]).write_text(arff("e", attrs, rows[4 * k:4 * k + 4], sparse=True))
    (tmp_path / "e" / "e.xml").write_text(XML(2))
    entry = {"task": "multilabel", "source": {"kind": "download",
                                              "files": [{"name": n} for n in names] + [{"name": "e.xml"}],
                                              "layout": {"type": "folds", "folds": names},
                                              "labels": {"from": "xml", "file": "e.xml"}}}
    ds = build_dataset("e", entry, tmp_path / "e")
    assert len(ds.given_splits) == 3
    for k, (train, test) in enumerate(ds.given_splits):
        np.testing.assert_array_equal(test, np.arange(4 * k, 4 * k + 4))
        assert sorted(np.concatenate([train, test]).tolist()) == list(range(12))


def test_hierarchical_to_flat_tree_and_dag(tmp_path):
    (tmp_path / "h").mkdir()
    tree = ("@relation h\n@attribute x numeric\n@attribute class hierarchical 01,01/01,01/02,02,03\n@data\n"
            "1,01/01@02\n2,01/02\n")
    (tmp_path / "h" / "tree.arff").write_text(tree)
    entry = {"task": "multilabel", "source": {"kind": "download", "files": [{"name": "tree.arff"}],
                                              "layout": {"type": "single", "data": ["tree.arff"]},
                                              "labels": {"from": "hierarchical", "attribute": "class"}}}
    ds = build_dataset("h", entry, tmp_path / "h")
    assert ds.meta["output_names"] == ["01", "01/01", "01/02", "02"]  # node 03 never occurs: no label
    np.testing.assert_array_equal(ds.Y, [[1, 1, 0, 1], [1, 0, 1, 0]])
    dag = ("@relation g\n@attribute x numeric\n@attribute class hierarchical root/A,root/B,A/C,B/C,C/D\n@data\n"
           "1,D\n2,B\n")
    (tmp_path / "h" / "dag.arff").write_text(dag)
    entry["source"]["files"] = [{"name": "dag.arff"}]
    entry["source"]["layout"]["data"] = ["dag.arff"]
    ds = build_dataset("h", entry, tmp_path / "h")
    assert ds.meta["output_names"] == ["A", "B", "C", "D"]
    np.testing.assert_array_equal(ds.Y, [[1, 1, 1, 1], [0, 1, 0, 0]])


def test_svmlight_train_test_multiclass(tmp_path):
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "tr").write_text("3 1:1 4:2\n1 2:1\n")
    (tmp_path / "s" / "te").write_text("2 3:1\n3 1:5\n")
    entry = {"task": "multiclass", "source": {"kind": "download",
                                              "files": [{"name": "tr", "format": "svmlight"},
                                                        {"name": "te", "format": "svmlight"}],
                                              "layout": {"type": "train_test", "train": ["tr"], "test": ["te"]},
                                              "reader": {"n_features": 6, "zero_based": False}}}
    ds = build_dataset("s", entry, tmp_path / "s")
    assert sp.issparse(ds.X) and ds.X.shape == (4, 6)
    np.testing.assert_array_equal(ds.Y, [2, 0, 1, 2])
    assert ds.meta["classes"] == [1.0, 2.0, 3.0]


def test_outputs_from_aligned_table(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "drug.txt").write_text("id\ts1\ts2\ts3\nD2\t1\t0\t1\nD1\t0\t0\t1\n")
    (tmp_path / "d" / "adm.txt").write_text("id\tD1\tD2\nT1\t1\t0\nT2\t0\t1\nT3\t1\t1\n")
    entry = {"task": "multilabel", "source": {
        "kind": "download", "files": [{"name": "drug.txt", "format": "tsv"}, {"name": "adm.txt", "format": "tsv"}],
        "layout": {"type": "single", "data": ["drug.txt"]}, "reader": {"header": True, "id_column": 0},
        "labels": {"from": "table", "file": "adm.txt", "transpose": True, "reader": {"header": True, "id_column": 0}},
        "preprocess": [{"op": "drop_constant_inputs"}]}}
    ds = build_dataset("d", entry, tmp_path / "d")
    np.testing.assert_array_equal(ds.X, [[1], [0]])  # s2 and s3 are constant
    np.testing.assert_array_equal(ds.Y, [[0, 1, 1], [1, 0, 1]])  # rows D2, D1; columns T1..T3
    assert ds.meta["output_names"] == ["T1", "T2", "T3"]


def test_missing_raw_file_names_fetch_command(tmp_path):
    entry = {"task": "multilabel", "source": {"kind": "download", "files": [{"name": "a.arff"}],
                                              "layout": {"type": "single", "data": ["a.arff"]},
                                              "labels": {"from": "last", "d": 1}}}
    with pytest.raises(DataError, match="datasets fetch a"):
        build_dataset("a", entry, tmp_path / "a")


def test_arff_without_label_location_is_a_config_error(tmp_path):
    from forestbench.errors import ConfigError

    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "a.arff").write_text("@relation r\n@attribute x numeric\n@data\n1\n")
    entry = {"task": "regression", "source": {"kind": "download", "files": [{"name": "a.arff"}],
                                              "layout": {"type": "single", "data": ["a.arff"]}}}
    with pytest.raises(ConfigError, match="inline"):
        build_dataset("a", entry, tmp_path / "a")


def test_newsgroups_builder_matches_sklearn_vectorisation(tmp_path):
    import io
    import tarfile

    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.preprocessing import normalize

    docs = {"20news-bydate-train/alt.atheism/1": "god is not here", "20news-bydate-train/alt.atheism/2": "no god",
            "20news-bydate-train/sci.space/3": "orbit of the moon", "20news-bydate-train/sci.space/4": "moon moon",
            "20news-bydate-test/alt.atheism/5": "god and the moon", "20news-bydate-test/sci.space/6": "mars orbit"}
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for name, text in docs.items():
            info = tarfile.TarInfo(name)
            info.size = len(text.encode())
            tf.addfile(info, io.BytesIO(text.encode()))
    (tmp_path / "n").mkdir()
    (tmp_path / "n" / "20news-bydate.tar.gz").write_bytes(buf.getvalue())
    entry = {"task": "multiclass", "source": {"kind": "download", "builder": "newsgroups_bydate",
                                              "files": [{"name": "20news-bydate.tar.gz", "format": "tar"}]}}
    ds = build_dataset("n", entry, tmp_path / "n")
    train = [docs[k] for k in sorted(docs) if "train" in k]
    test = [docs[k] for k in sorted(docs) if "test" in k]
    vec = CountVectorizer()
    expected = np.vstack([normalize(vec.fit_transform(train).astype(float)).toarray(),
                          normalize(vec.transform(test).astype(float)).toarray()])
    np.testing.assert_allclose(ds.X.toarray(), expected)
    np.testing.assert_array_equal(ds.Y, [0, 0, 1, 1, 0, 1])
    assert [len(a) for a in ds.given_splits[0]] == [4, 2]
    assert not [p for p in (tmp_path / "n").iterdir() if ".part-" in p.name]


def test_rcv1_builder_topics_from_qrels(tmp_path):
    import gzip

    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "vec.dat").write_text("2286 1:0.5 3:0.25\n2287 2:1\n2290 4:0.1\n")
    (tmp_path / "r" / "qrels.gz").write_bytes(gzip.compress(b"E11 2286 1\nC15 2286 1\nC15 2287 1\nGCAT 9999 1\n"))
    entry = {"task": "multilabel", "source": {"kind": "download", "builder": "rcv1_lyrl2004", "vectors": "vec.dat",
                                              "topics": "qrels.gz", "n_features": 5,
                                              "files": [{"name": "vec.dat"}, {"name": "qrels.gz"}]}}
    ds = build_dataset("r", entry, tmp_path / "r")
    assert ds.X.shape == (3, 5) and ds.meta["output_names"] == ["C15", "E11"]
    np.testing.assert_array_equal(ds.Y, [[1, 1], [1, 0], [0, 0]])  # small: stored dense


def test_csv_last_column_multiclass(tmp_path):
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "c.data").write_text("1,2,7\n3,4,1\n5,6,7\n")
    entry = {"task": "multiclass", "source": {"kind": "download", "files": [{"name": "c.data", "format": "csv"}],
                                              "layout": {"type": "single", "data": ["c.data"]},
                                              "labels": {"from": "last", "d": 1}, "reader": {"header": False}}}
    ds = build_dataset("c", entry, tmp_path / "c")
    np.testing.assert_array_equal(ds.X, [[1, 2], [3, 4], [5, 6]])
    np.testing.assert_array_equal(ds.Y, [1, 0, 1])
    assert ds.meta["classes"] == [1.0, 7.0]
