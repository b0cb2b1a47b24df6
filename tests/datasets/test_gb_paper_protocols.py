"""The `gb_paper` protocols against the gradient-boosting paper: "averaged over five random split[s] of the dataset
while preserving the training-testing set size ratio" (GB paper Sec. 4.1.2). A dataset printed with n_LS / n_TS
(GB paper Table 2, thesis Table A.2) is re-split five times at those sizes from all its rows (for Mulan's train /
test files: their concatenation); one printed with its total only is split 50 / 50 five times (40 / 10 / 50 with
the 20 % validation taken from the training half)."""
from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from forestbench.datasets.from_files import build_dataset
from forestbench.datasets.registry import load_registry
from forestbench.datasets.splits import make_splits, n_splits_of, training_rows
from forestbench.validation import load_yaml

ROOT = Path(__file__).resolve().parents[2]
REGISTRY = load_registry(ROOT / "config" / "datasets.yaml")
THESIS = load_yaml(ROOT / "config" / "thesis.yaml")["experiments"]


def _published_sizes() -> dict[str, tuple[int, int | None]]:
    """dataset id -> (n_LS, n_TS or None) of GB paper Table 2 (multi-label) and thesis Table A.2 (= GB paper
    Table 3, multi-output regression), which the results tables our reports compare with repeat."""
    sizes: dict[str, set] = {}
    for table in ("gb_paper_table_2", "thesis_table_a_2", "thesis_table_6_5", "thesis_table_6_6", "thesis_table_6_8"):
        with open(ROOT / "config" / "reference" / f"{table}.csv", newline="") as fh:
            for row in csv.DictReader(fh):
                sizes.setdefault(row["dataset_id"], set()).add(
                    (int(row["n_ls"]), int(row["n_ts"]) if row["n_ts"] else None))
    conflicting = {d: s for d, s in sizes.items() if len(s) > 1}
    assert not conflicting, f"the reference tables disagree on sizes: {conflicting}"
    return {d: s.pop() for d, s in sizes.items()}


PUBLISHED = _published_sizes()
# the real-data experiments of the boosting study (thesis Tables 6.5-6.9)
REAL = sorted(set(THESIS["table_6_5"]["datasets"]) | set(THESIS["table_6_8"]["datasets"]))


def test_the_published_tables_list_the_experiments_datasets():
    assert set(REAL) == set(PUBLISHED)


@pytest.mark.parametrize("dataset", REAL)
def test_gb_paper_protocol_has_the_published_sizes(dataset):
    entry = REGISTRY[dataset]
    protocol = entry["protocols"]["gb_paper"]
    n_ls, n_ts = PUBLISHED[dataset]
    assert protocol["type"] == "random" and protocol["repeats"] == 5 and protocol.get("vary_split", True), protocol
    if n_ts is None:  # the table prints the total: half for training (of which 20 % validates), half for testing
        assert entry["shape"]["n"] == n_ls
        assert protocol["train_fraction"] == 0.5 and "n_train" not in protocol and "n_test" not in protocol
    else:  # the published learning / test sizes, drawn from all n_LS + n_TS rows
        assert (protocol["n_train"], protocol["n_test"]) == (n_ls, n_ts)
        assert entry["shape"]["n"] == n_ls + n_ts


@pytest.mark.parametrize("dataset", sorted(d for d, e in REGISTRY.items() if "gb_paper" in e.get("protocols", {})))
def test_every_gb_paper_protocol_is_five_random_splits(dataset):
    protocol = REGISTRY[dataset]["protocols"]["gb_paper"]
    n = REGISTRY[dataset]["shape"]["n"]
    assert protocol["type"] == "random" and n_splits_of(protocol) == 5
    n_train = training_rows(protocol, n)
    n_test = protocol.get("n_test", n - n_train)
    assert 0 < n_train and 0 < n_test and n_train + n_test <= n


def _arff(rows) -> str:
    head = "@relation toy\n@attribute f0 numeric\n@attribute f1 numeric\n@attribute l0 {0,1}\n@attribute l1 {0,1}\n"
    return head + "@data\n" + "".join(f"{a},{b},{c},{d}\n" for a, b, c, d in rows)


def test_emotions_gb_paper_draws_five_splits_of_391_202_from_train_and_test(tmp_path):
    """emotions' layout (Mulan train / test files, 391 + 202 rows) on toy content: the loader concatenates the
    files, and the protocol re-splits all 593 rows five times at the published sizes."""
    rng = np.random.default_rng(0)
    rows = [(round(float(a), 3), round(float(b), 3), int(c), int(d))
            for a, b, c, d in zip(rng.normal(size=593), rng.normal(size=593), rng.random(593) < 0.4,
                                  rng.random(593) < 0.4)]
    (tmp_path / "emotions-train.arff").write_text(_arff(rows[:391]))
    (tmp_path / "emotions-test.arff").write_text(_arff(rows[391:]))
    (tmp_path / "emotions.xml").write_text('<?xml version="1.0"?>\n<labels xmlns="http://mulan.sourceforge.net/'
                                           'labels">\n<label name="l0"></label>\n<label name="l1"></label>\n'
                                           "</labels>\n")
    real = REGISTRY["emotions"]
    entry = {"task": "multilabel", "shape": {"n": 593, "p": 2, "d": 2},
             "source": {"kind": "download", "files": [{"name": f["name"], "format": f["format"]}
                                                      for f in real["source"]["files"]],
                        "layout": real["source"]["layout"], "labels": real["source"]["labels"]}}
    ds = build_dataset("emotions", entry, tmp_path)
    (given_train, given_test), = ds.given_splits
    assert (len(given_train), len(given_test)) == (391, 202)

    protocol = real["protocols"]["gb_paper"]
    splits = make_splits(protocol, ds.n_samples, ds.given_splits, "emotions")
    assert len(splits) == 5
    for train, test in splits:
        assert (len(train), len(test)) == (391, 202)
        assert not np.intersect1d(train, test).size
        np.testing.assert_array_equal(np.union1d(train, test), np.arange(593))
        assert not np.array_equal(test, given_test)
        # both published files feed both parts
        assert (train >= 391).any() and (test < 391).any()
    assert len({tuple(test) for _, test in splits}) == 5
    again = make_splits(protocol, ds.n_samples, ds.given_splits, "emotions")
    assert all(np.array_equal(a, b) for (a, _), (b, _) in zip(splits, again))
    other_seed = make_splits({**protocol, "seed": 1}, ds.n_samples, ds.given_splits, "emotions")
    assert not np.array_equal(splits[0][1], other_seed[0][1])
