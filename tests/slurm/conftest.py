"""A real single-node SLURM cluster for the tests marked ``slurm``.

The session fixture ``slurm_cluster`` uses a cluster that is already up (``FORESTBENCH_SLURM_DIR`` points to the
directory of a running ``start_cluster.sh`` cluster, as ``tests/slurm/ci.sh`` does), else starts one with
``start_cluster.sh`` (root + apt-get needed) and stops exactly those daemons afterwards with ``stop_cluster.sh``.
Where that is impossible the tests are skipped with the reason, unless ``FORESTBENCH_REQUIRE_SLURM=1`` (CI), which
turns the skip into a failure so that CI cannot pass without running them.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
CANNOT_RUN = 77  # start_cluster.sh: "cannot run here"


def _required() -> bool:
    return os.environ.get("FORESTBENCH_REQUIRE_SLURM", "") == "1"


def _unavailable(reason: str):
    if _required():
        pytest.fail(f"SLURM tests required (FORESTBENCH_REQUIRE_SLURM=1) but {reason}", pytrace=False)
    print(f"\nSKIPPED slurm tests: {reason}")
    pytest.skip(reason)


def _cluster_idle() -> bool:
    if shutil.which("sinfo") is None:
        return False
    try:
        r = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return r.returncode == 0 and any(s in r.stdout.split() for s in ("idle", "mixed", "allocated"))


def _sacct_works() -> bool:
    try:
        r = subprocess.run(["sacct", "-n", "-X", "-o", "JobID"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return r.returncode == 0


def _default_partition() -> str | None:
    r = subprocess.run(["sinfo", "-h", "-o", "%P"], capture_output=True, text=True, timeout=20)
    names = r.stdout.split()
    for name in names:
        if name.endswith("*"):
            return name[:-1]
    return names[0] if names else None


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory):
    """Yield ``{"dir", "sacct", "partition"}`` for a running localhost cluster (started here if needed)."""
    existing = os.environ.get("FORESTBENCH_SLURM_DIR")
    if existing:
        if not _cluster_idle():
            _unavailable(f"FORESTBENCH_SLURM_DIR={existing} is set but sinfo shows no usable node")
        yield {"dir": Path(existing), "sacct": _sacct_works(), "partition": _default_partition()}
        return
    if _cluster_idle():  # some other cluster is up on this machine: use it, leave it running
        yield {"dir": None, "sacct": _sacct_works(), "partition": _default_partition()}
        return
    if os.geteuid() != 0:
        _unavailable("not root: the localhost SLURM cluster needs apt-get install and root daemons")
    if shutil.which("apt-get") is None and shutil.which("slurmctld") is None:
        _unavailable("no apt-get to install Debian's slurmctld, slurmd, munge, slurmdbd and mariadb-server")
    # not under pytest's tmp root (mode 700): MariaDB runs as user mysql and must reach its data directory
    slurm_dir = Path(tempfile.mkdtemp(prefix="forestbench-slurm-"))
    env = dict(os.environ, SLURM_DIR=str(slurm_dir))
    if shutil.which("slurmctld") and shutil.which("slurmdbd") and shutil.which("mariadbd"):
        env["SKIP_APT"] = "1"
    r = subprocess.run(["bash", str(HERE / "start_cluster.sh")], env=env, capture_output=True, text=True,
                       timeout=900)
    if r.returncode == CANNOT_RUN:
        _unavailable(r.stderr.strip().splitlines()[-1] if r.stderr.strip() else "start_cluster.sh cannot run here")
    if r.returncode != 0:
        subprocess.run(["bash", str(HERE / "stop_cluster.sh")], env=env, timeout=120)
        shutil.rmtree(slurm_dir, ignore_errors=True)
        pytest.fail(f"start_cluster.sh failed (rc {r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-5000:]}",
                    pytrace=False)
    try:
        yield {"dir": slurm_dir, "sacct": _sacct_works(), "partition": _default_partition()}
    finally:
        subprocess.run(["bash", str(HERE / "stop_cluster.sh")], env=env, timeout=120)
        shutil.rmtree(slurm_dir, ignore_errors=True)


@pytest.fixture(scope="session")
def slurm_client(request):
    """SLURM's client tools on PATH (the executor plugin looks for them even in a dry run). When they are missing,
    the ``slurm_cluster`` fixture installs them (and starts the cluster the other SLURM tests use anyway)."""
    missing = [tool for tool in ("sbatch", "squeue", "sinfo") if shutil.which(tool) is None]
    if missing:
        request.getfixturevalue("slurm_cluster")
