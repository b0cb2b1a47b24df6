"""Fixtures of the report tests: a generated tidy scores table shaped like results/<E>/scores.csv, with missing
cells (the generators live in report_fixtures.py)."""
from __future__ import annotations

import copy
import sys
from pathlib import Path

import pytest

if str(Path(__file__).parent) not in sys.path:  # also under --import-mode=importlib
    sys.path.insert(0, str(Path(__file__).parent))

from report_fixtures import EXPERIMENT_CFG, make_scores  # noqa: E402


@pytest.fixture
def scores_csv(tmp_path) -> Path:
    path = tmp_path / "results" / "table_5_1" / "scores.csv"
    path.parent.mkdir(parents=True)
    make_scores().to_csv(path, index=False)
    return path


@pytest.fixture
def experiment_cfg() -> dict:
    return copy.deepcopy(EXPERIMENT_CFG)
