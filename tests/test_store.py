import numpy as np
import pytest
import scipy.sparse as sp

from forestbench.datasets.store import Dataset, load_dataset, read_header, save_dataset
from forestbench.errors import DataError


def _dataset(sparse_x=False, sparse_y=False):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 5)).astype(np.float32)
    Y = (rng.random((30, 4)) < 0.3).astype(float)
    if sparse_x:
        X = sp.csr_matrix(np.where(np.abs(X) > 1, X, 0))
    if sparse_y:
        Y = sp.csr_matrix(Y)
    return Dataset("toy", X, Y, "multilabel", {"note": "x"}, [(np.arange(20), np.arange(20, 30))])


@pytest.mark.parametrize("sparse_x,sparse_y", [(False, False), (True, True), (False, True)])
def test_roundtrip(tmp_path, sparse_x, sparse_y):
    ds = _dataset(sparse_x, sparse_y)
    path = save_dataset(ds, tmp_path / "toy.npz")
    back = load_dataset(path, expected_shape={"n": 30, "p": 5, "d": 4})
    dense = lambda m: m.toarray() if sp.issparse(m) else m  # noqa: E731
    assert sp.issparse(back.X) == sparse_x and sp.issparse(back.Y) == sparse_y
    np.testing.assert_array_equal(dense(back.X), dense(ds.X))
    np.testing.assert_array_equal(dense(back.Y), dense(ds.Y))
    assert back.meta == {"note": "x"} and back.task == "multilabel"
    np.testing.assert_array_equal(back.given_splits[0][1], np.arange(20, 30))
    assert read_header(path)["shape"] == {"n": 30, "p": 5, "d": 4}
    assert [p.name for p in tmp_path.iterdir()] == ["toy.npz"]  # no temporary file left


def test_wrong_shape_names_dataset(tmp_path):
    path = save_dataset(_dataset(), tmp_path / "toy.npz")
    with pytest.raises(DataError, match=r"dataset toy: wrong shape: p=5 \(expected 7\)"):
        load_dataset(path, expected_shape={"p": 7})


def test_truncated_file_is_reported(tmp_path):
    path = save_dataset(_dataset(), tmp_path / "toy.npz")
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(DataError, match="toy.npz is corrupted"):
        load_dataset(path)


def test_flipped_bytes_fail_checksum(tmp_path):
    path = save_dataset(_dataset(), tmp_path / "toy.npz")
    with np.load(path) as npz:
        arrays = {k: npz[k] for k in npz.files}
    arrays["X"] = arrays["X"] + 1  # tamper with the data, keep the header
    with open(path, "wb") as fh:
        np.savez(fh, **arrays)
    with pytest.raises(DataError, match="checksum mismatch"):
        load_dataset(path)


def test_missing_file(tmp_path):
    with pytest.raises(DataError, match="does not exist"):
        load_dataset(tmp_path / "nope.npz")


def test_failed_write_leaves_nothing(tmp_path, monkeypatch):
    def boom(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(np, "savez", boom)
    with pytest.raises(RuntimeError):
        save_dataset(_dataset(), tmp_path / "toy.npz")
    assert list(tmp_path.iterdir()) == []


def test_rows_mismatch_rejected():
    with pytest.raises(DataError, match="X has 3 rows but Y has 2"):
        Dataset("bad", np.zeros((3, 2)), np.zeros((2, 1)), "regression")
