import os
import shutil
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

REPO = Path(__file__).resolve().parents[1]

# Property-based tests (Hypothesis): a bounded number of examples by default so the suite stays fast; the nightly
# profile digs deeper: FORESTBENCH_HYPOTHESIS_PROFILE=nightly pytest tests/datasets/test_readers_fuzz.py
settings.register_profile("default", max_examples=40, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("nightly", max_examples=3000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile(os.environ.get("FORESTBENCH_HYPOTHESIS_PROFILE", "default"))


@pytest.fixture
def repo_root() -> Path:
    return REPO


@pytest.fixture
def workflow_dir(tmp_path) -> Path:
    """A scratch copy of the workflow (Snakefile, rules, schemas, config) in which Snakemake can run."""
    for name in ("Snakefile", "workflow", "config", "envs"):
        src = REPO / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, tmp_path / name)
    return tmp_path


@pytest.fixture
def snakemake_env() -> dict:
    """Environment whose `python` is the interpreter running the tests (the rules call `python -m forestbench`)."""
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    return env
