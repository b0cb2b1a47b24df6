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


# System tests install Debian packages, start daemons (SLURM, MariaDB, munge) or drive a browser. They run only when
# asked for with `pytest --system` (.ci/run does), never by a plain `pytest`, so that the test command is safe on
# any machine, also as root.
SYSTEM_MARKERS = ("slurm", "browser")


def pytest_addoption(parser):
    parser.addoption("--system", action="store_true", default=False,
                     help="also run the system tests (markers: " + ", ".join(SYSTEM_MARKERS) + "): as root they "
                          "install Debian packages, start a localhost SLURM cluster and drive headless Chromium")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--system"):
        return
    system = [item for item in items if any(item.get_closest_marker(m) for m in SYSTEM_MARKERS)]
    if system:
        config.hook.pytest_deselected(items=system)
        items[:] = [item for item in items if item not in system]
    config.stash[_SYSTEM_DESELECTED] = len(system)


_SYSTEM_DESELECTED = pytest.StashKey[int]()


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    count = config.stash.get(_SYSTEM_DESELECTED, 0)
    if count:
        terminalreporter.write_line(f"{count} system test(s) not run ({', '.join(SYSTEM_MARKERS)}): "
                                    "`pytest --system` runs them (installs and starts system services as root)")
