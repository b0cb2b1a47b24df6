"""A plain `pytest` never runs the tests that install system packages, start daemons or drive a browser."""
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _collect(*args: str) -> str:
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                           "tests/report/test_browser.py", "tests/slurm/test_slurm.py", *args],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    return proc.stdout + proc.stderr


def test_system_tests_are_deselected_by_default():
    out = _collect()
    assert "test_browser.py::" not in out and "test_slurm.py::" not in out
    assert "deselected" in out


def test_system_tests_run_when_asked_for():
    out = _collect("--system")
    assert "test_browser.py::" in out and "test_slurm.py::" in out
