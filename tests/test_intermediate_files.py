"""Corrupted or half-written files under results/: a damaged split file is a one-line error naming it, and the
temporary file of a run record being written is not read as a record."""
from __future__ import annotations

import json

import pytest

from forestbench.datasets.splits import load_split, make_splits, save_splits
from forestbench.errors import DataError
from forestbench.workflow.plan import read_timings


def test_corrupted_split_file_is_a_one_line_error(tmp_path):
    """Before: zipfile.BadZipFile traceback."""
    splits = make_splits({"type": "random", "train_fraction": 0.5, "repeats": 2}, 40)
    path = save_splits(tmp_path / "p.npz", splits, {"type": "random"}, "ds", "abc")
    path.write_bytes(path.read_bytes()[:100])
    with pytest.raises(DataError, match=r"p\.npz or its manifest is missing or corrupted"):
        load_split(path, 0)
    path = save_splits(tmp_path / "q.npz", splits, {"type": "random"}, "ds", "abc")
    (tmp_path / "q.json").write_text(json.dumps({"splits": []}))
    with pytest.raises(DataError, match=r"q\.npz or its manifest is missing or corrupted"):
        load_split(path, 0)


def test_plan_ignores_temporary_files_under_results_runs(tmp_path):
    """Before: the half-written temporary file of a record being written was read as a corrupted record."""
    run = tmp_path / "runs" / "a" / "linnerud" / "et"
    run.mkdir(parents=True)
    (run / "repeat-0.json").write_text(json.dumps({"experiment": "a", "dataset": "linnerud", "variant": "et",
                                                   "fit_wall_s": 1.0, "predict_wall_s": 0.5}))
    (run / ".repeat-1.json.k2j3.part.json").write_text('{"experiment": "a", "data')
    assert [(r.experiment, r.dataset, r.variant, r.wall_s) for r in read_timings(tmp_path)] == \
        [("a", "linnerud", "et", 1.5)]
