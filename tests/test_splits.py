import json

import numpy as np
import pytest

from forestbench.datasets.splits import load_split, make_splits, n_splits_of, save_splits
from forestbench.errors import ConfigError, DataError


def test_random_protocol_sizes_disjoint_deterministic():
    protocol = {"type": "random", "n_train": 60, "n_test": 30, "repeats": 4, "seed": 3}
    a = make_splits(protocol, 100)
    b = make_splits(protocol, 100)
    assert len(a) == 4 == n_splits_of(protocol)
    for (tr, te), (tr2, te2) in zip(a, b):
        assert len(tr) == 60 and len(te) == 30 and not set(tr) & set(te)
        np.testing.assert_array_equal(tr, tr2)
        np.testing.assert_array_equal(te, te2)
    assert not np.array_equal(a[0][0], a[1][0])  # each repeat is a different shuffle
    c = make_splits({**protocol, "seed": 4}, 100)
    assert not np.array_equal(a[0][0], c[0][0])


def test_kfold_partitions_every_sample_once():
    splits = make_splits({"type": "kfold", "n_splits": 5, "repeats": 2}, 23)
    assert len(splits) == 10
    for r in range(2):
        tests = np.concatenate([te for _, te in splits[5 * r: 5 * r + 5]])
        np.testing.assert_array_equal(np.sort(tests), np.arange(23))
        for tr, te in splits[5 * r: 5 * r + 5]:
            assert len(tr) + len(te) == 23


def test_kfold_without_shuffle_is_contiguous_in_row_order():
    """The unshuffled reading of "10-fold cross-validation": folds are runs of consecutive rows, the first
    n mod k one row longer (23 rows, 5 folds: 5, 5, 5, 4, 4), the same in every repetition and for every seed."""
    splits = make_splits({"type": "kfold", "n_splits": 5, "repeats": 2, "shuffle": False, "seed": 7}, 23)
    tests = [te.tolist() for _, te in splits]
    assert tests[:5] == [list(range(0, 5)), list(range(5, 10)), list(range(10, 15)), list(range(15, 19)),
                         list(range(19, 23))]
    assert tests[5:] == tests[:5]
    for tr, te in splits:
        np.testing.assert_array_equal(np.sort(np.concatenate([tr, te])), np.arange(23))
    shuffled = make_splits({"type": "kfold", "n_splits": 5, "shuffle": True}, 23)
    assert [te.tolist() for _, te in shuffled] != tests[:5]
    assert [te.tolist() for _, te in shuffled] == [te.tolist() for _, te in make_splits({"type": "kfold",
                                                                                        "n_splits": 5}, 23)]
    with pytest.raises(ConfigError, match="dataset ds: kfold shuffle must be true or false, got 'no'"):
        make_splits({"type": "kfold", "n_splits": 5, "shuffle": "no"}, 23, dataset="ds")


def test_given_and_errors():
    given = [(np.arange(5), np.arange(5, 8))]
    assert make_splits({"type": "given"}, 8, given)[0][1].tolist() == [5, 6, 7]
    with pytest.raises(ConfigError, match="dataset ds: protocol 'given'"):
        make_splits({"type": "given"}, 8, None, dataset="ds")
    with pytest.raises(DataError, match="cannot draw 90 training \\+ 20 test samples from 100"):
        make_splits({"type": "random", "n_train": 90, "n_test": 20}, 100)


def test_save_load_with_manifest(tmp_path):
    splits = make_splits({"type": "random", "train_fraction": 0.5, "repeats": 2}, 40)
    path = save_splits(tmp_path / "p.npz", splits, {"type": "random"}, "ds", "abc")
    train, test, info = load_split(path, 1)
    np.testing.assert_array_equal(test, splits[1][1])
    manifest = json.loads((tmp_path / "p.json").read_text())
    assert manifest["data_sha256"] == "abc" and info["split_sha256"] == manifest["sha256"]
    manifest["splits"][1]["test_sha256"] = "0" * 64
    (tmp_path / "p.json").write_text(json.dumps(manifest))
    with pytest.raises(DataError, match="does not match its manifest"):
        load_split(path, 1)
    with pytest.raises(DataError, match="has no split 5"):
        load_split(path, 5)
