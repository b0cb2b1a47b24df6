"""A dataset supplied by local_path through Snakemake: a local file regenerated in place stops the run (before any
job, the cached copy and the results untouched) with the command that accepts it; once accepted, the run copies it
and rebuilds what depends on it, also when the new file carries an older modification time. Fetch jobs are local
rules: under the SLURM profile they are never submitted."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from test_from_files import XML, arff, toy_multilabel

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.e2e


def env_of(workdir: Path) -> dict:
    return {**os.environ, "FORESTBENCH_SHA_LOCK": str(workdir / "config" / "datasets.lock.yaml"),
            "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")}


def snakemake(workdir: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "snakemake", "--cores", "1", *args], cwd=workdir,
                          env=env_of(workdir), capture_output=True, text=True, timeout=300)


def toy_arff(seed: int) -> bytes:
    _, _, attrs, rows = toy_multilabel(np.random.default_rng(seed), 30, 4, 3)
    return arff("toy", attrs, rows).encode()


@pytest.fixture
def workdir(tmp_path) -> Path:
    shutil.copy(ROOT / "Snakefile", tmp_path / "Snakefile")
    shutil.copytree(ROOT / "workflow", tmp_path / "workflow")
    shutil.copytree(ROOT / "envs", tmp_path / "envs")
    (tmp_path / "config").mkdir()
    local = tmp_path / "mine"
    local.mkdir()
    (local / "toy.arff").write_bytes(toy_arff(0))
    (local / "toy.xml").write_text(XML(3))
    files = [{"name": "toy.arff", "format": "arff"}, {"name": "toy.xml", "format": "xml"}]
    registry = {"datasets": {"toy": {
        "task": "multilabel", "status": "unavailable", "unavailable_reason": "private data",
        "local_path": str(local), "shape": {"n": 30, "p": 4, "d": 3},
        "source": {"kind": "download", "files": files, "layout": {"type": "single", "data": ["toy.arff"]},
                   "labels": {"from": "xml", "file": "toy.xml"}},
        "protocols": {"p": {"type": "random", "n_train": 20, "n_test": 10}}}}}
    (tmp_path / "config" / "datasets.yaml").write_text(yaml.safe_dump(registry))
    config = {"datasets_registry": "config/datasets.yaml", "experiments": {"e": {
        "datasets": ["toy"], "protocol": "p", "metrics": ["lrap"],
        "methods": [{"name": "rf", "method": "sklearn_random_forest", "params": {"n_estimators": 5}}]}}}
    (tmp_path / "config" / "config.yaml").write_text(yaml.safe_dump(config))
    return tmp_path


def test_regenerated_local_file_stops_the_run_until_accepted_then_reruns(workdir):
    target = "data/prepared/toy.npz"
    prepared, cached = workdir / target, workdir / "data" / "raw" / "toy" / "toy.arff"
    local = workdir / "mine" / "toy.arff"
    first = snakemake(workdir, target)
    assert first.returncode == 0, first.stderr[-3000:]
    x_old = np.load(prepared)["X"].copy()

    local.write_bytes(toy_arff(1))  # regenerated in place
    # before: "Nothing to be done", the old copy kept in data/raw and the results built from it; with --forcerun
    # fetch, a sha256 mismatch without a way out, data/raw/toy/ deleted, and "Nothing to be done" again
    for extra in ([], ["--forcerun", "fetch"]):
        stopped = snakemake(workdir, target, *extra)  # --forcerun takes several names: target first
        assert stopped.returncode != 0
        out = stopped.stdout + stopped.stderr
        assert "python -m forestbench datasets accept toy" in out, out[-3000:]
        assert str(local) in out
        assert cached.read_bytes() == toy_arff(0)  # the previous copy is kept
        assert (workdir / "data" / "raw" / "toy" / "toy.xml").exists()
        np.testing.assert_array_equal(np.load(prepared)["X"], x_old)

    accept = subprocess.run([sys.executable, "-m", "forestbench", "datasets", "accept", "toy"], cwd=workdir,
                            env=env_of(workdir), capture_output=True, text=True, timeout=120)
    assert accept.returncode == 0, accept.stderr
    second = snakemake(workdir, target)
    assert second.returncode == 0, second.stderr[-3000:]
    assert cached.read_bytes() == toy_arff(1)
    x_new = np.load(prepared)["X"]
    assert not np.array_equal(x_new, x_old)

    # a new content under an old modification time (a copy that kept its date): still noticed
    local.write_bytes(toy_arff(2))
    os.utime(local, (1_000_000_000, 1_000_000_000))
    assert subprocess.run([sys.executable, "-m", "forestbench", "datasets", "accept", "toy"], cwd=workdir,
                          env=env_of(workdir), capture_output=True, timeout=120).returncode == 0
    third = snakemake(workdir, target)
    assert third.returncode == 0, third.stderr[-3000:]
    assert cached.read_bytes() == toy_arff(2)
    assert not np.array_equal(np.load(prepared)["X"], x_new)


FAKE_SLURM = ("scontrol", "sacctmgr", "sshare", "sacct", "squeue", "sinfo", "scancel")


def test_fetch_is_a_local_rule_under_the_slurm_profile(workdir, tmp_path_factory):
    """A run with the SLURM profile against stand-in SLURM commands that record their calls (sbatch refuses every
    job): the fetch jobs run in the Snakemake process itself, where the network is; only prepare reaches sbatch."""
    bin_dir = tmp_path_factory.mktemp("fake-slurm")
    calls = bin_dir / "calls.log"
    for command in (*FAKE_SLURM, "sbatch"):
        (bin_dir / command).write_text(f'#!/bin/sh\necho "{command} $*" >> {calls}\n'
                                       f'exit {1 if command == "sbatch" else 0}\n')
        (bin_dir / command).chmod(0o755)
    env = {**env_of(workdir), "PATH": f"{bin_dir}{os.pathsep}{env_of(workdir)['PATH']}"}
    run = subprocess.run([sys.executable, "-m", "snakemake", "data/prepared/toy.npz",
                          "--profile", str(ROOT / "workflow" / "profiles" / "slurm"),
                          "--default-resources", "slurm_partition=p", "slurm_account=a",
                          "--retries", "0", "--slurm-init-seconds-before-status-checks", "1"],
                         cwd=workdir, env=env, capture_output=True, text=True, timeout=300)
    out = run.stdout + run.stderr
    assert run.returncode != 0  # prepare's submission was refused
    assert sorted(p.name for p in (workdir / "data" / "raw" / "toy").iterdir()) == ["toy.arff", "toy.xml"], out
    sbatch = [line for line in calls.read_text().splitlines() if line.startswith("sbatch ")]
    assert len(sbatch) == 1 and "rule_prepare" in sbatch[0], sbatch
    assert "localrule fetch:" in out
