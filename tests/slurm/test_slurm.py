"""The real workflow on a real (localhost, single-node) SLURM cluster, through snakemake-executor-plugin-slurm.

For each status command the plugin knows (sacct, which needs slurmdbd, and squeue), in a fresh copy of the workflow
with the tiny configuration ``tiny.yaml`` and the repository's ``workflow/profiles/slurm`` profile:

1. every fit job fails on its first attempt (fault injection by the test plugin ``fault_methods.py``, switched on
   by ``FORESTBENCH_TEST_FAIL_ATTEMPTS=1``) and is resubmitted by ``--retries`` with twice the memory and time: the
   second ``sbatch`` asks for them, the run records say attempt 2 with the doubled request, and carry the SLURM job
   id and node. The two fits are bundled into one SLURM job (``--group-components fit_{experiment}=2``). The run ends
   with the scores table and the experiment's report.
2. a deliberately broken variant (the plugin's ``always_fails``) fails on SLURM, and Snakemake reports
   it and exits non-zero instead of hanging.

A third test submits the fits as a SLURM job array with ``workflow/profiles/slurm-array``.

Every Snakemake run is bounded by a timeout (the whole process group is killed, leftover SLURM jobs cancelled)
and followed by ``snakemake --unlock``: the plugin can wait forever when its status command fails.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from forestbench.workflow import resources as fbres
pytestmark = pytest.mark.slurm

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
RUN_TIMEOUT_S = 420
SUBMITTED = re.compile(r"has been submitted with SLURM jobid (\d+)")
FIT_SUBMITTED = re.compile(r"has been submitted with SLURM jobid (\d+) \(log: \S*/(?:group|rule)_fit")
SBATCH = re.compile(r"sbatch call: (sbatch .*)")


def _copy_workflow(dest: Path) -> Path:
    """Snakefile, workflow/, envs/ and config/ of this checkout, with the tiny configuration as config/config.yaml."""
    shutil.copy(REPO / "Snakefile", dest / "Snakefile")
    shutil.copytree(REPO / "workflow", dest / "workflow")
    shutil.copytree(REPO / "envs", dest / "envs")  # named by the rules' conda: directives
    shutil.copytree(REPO / "config", dest / "config")
    shutil.copy(HERE / "tiny.yaml", dest / "config" / "config.yaml")
    shutil.copy(HERE / "fault_methods.py", dest / "fault_methods.py")
    return dest


def _env(workdir: Path, **extra) -> dict:
    env = dict(os.environ)
    # the fault-injection plugin lives next to the copied workflow (jobs inherit PYTHONPATH: --export=ALL)
    env["PYTHONPATH"] = f"{workdir}{os.pathsep}{env['PYTHONPATH']}" if env.get("PYTHONPATH") else str(workdir)
    # the jobs run the workflow's commands with this interpreter: put its bin directory first on PATH (the plugin
    # submits with --export=ALL, so the job sees the same PATH)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    for name in [k for k in env if k.startswith("SLURM_") or k.startswith("SBATCH_")]:
        del env[name]
    env.pop("FORESTBENCH_TEST_FAIL_ATTEMPTS", None)
    env.update(extra)
    return env


def _snakemake(workdir: Path, args: list[str], env: dict, timeout: int = RUN_TIMEOUT_S):
    """Run Snakemake bounded by ``timeout``; returns (returncode or None on timeout, combined log, seconds)."""
    cmd = [sys.executable, "-m", "snakemake", *args]
    log_path = workdir / f"snakemake-{time.time_ns()}.log"
    start = time.monotonic()
    with open(log_path, "w") as log:
        proc = subprocess.Popen(cmd, cwd=workdir, env=env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            rc = None
            for sig, grace in ((signal.SIGTERM, 20), (signal.SIGKILL, 10)):
                try:
                    os.killpg(proc.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    proc.wait(timeout=grace)
                    break
                except subprocess.TimeoutExpired:
                    continue
    seconds = time.monotonic() - start
    text = log_path.read_text(errors="replace")
    if rc is None:  # cancel what the hung run left in the queue
        ids = SUBMITTED.findall(text)
        if ids:
            subprocess.run(["scancel", *ids], capture_output=True, timeout=60)
    subprocess.run([sys.executable, "-m", "snakemake", "--unlock", "--cores", "1"], cwd=workdir, env=env,
                   capture_output=True, timeout=120)
    return rc, text, seconds


def _slurm_args(cluster: dict, status_command: str) -> list[str]:
    return [
        "--profile", "workflow/profiles/slurm",
        # site-specific settings come from the command line, never from the profile
        "--default-resources", f"slurm_partition={cluster['partition']}",
        "--slurm-status-command", status_command,
        "--slurm-init-seconds-before-status-checks", "5",
        "--latency-wait", "5",
        "--jobs", "4",
        "--verbose",
    ]


def _records(workdir: Path, experiment: str) -> list[dict]:
    paths = sorted((workdir / "results" / "runs" / experiment).rglob("repeat-*.json"))
    return [json.loads(p.read_text()) for p in paths]


def _slurm_state(job_id: str) -> str | None:
    """The state SLURM gives a job: squeue (finished jobs stay listed for MinJobAge), else sacct."""
    r = subprocess.run(["squeue", "-h", "--states=all", "-j", job_id, "-o", "%T"], capture_output=True, text=True,
                       timeout=30)
    if r.returncode == 0 and r.stdout.strip():
        return r.stdout.split()[0]
    r = subprocess.run(["sacct", "-n", "-X", "-P", "-j", job_id, "-o", "State"], capture_output=True, text=True,
                       timeout=30)
    return r.stdout.split()[0] if r.returncode == 0 and r.stdout.strip() else None


def _fit_sbatch_calls(text: str) -> list[str]:
    return [c for c in SBATCH.findall(text) if "rule_fit" in c or "group_fit" in c]


def _requested(call: str, flag: str) -> int:
    m = re.search(rf" {flag} '?(\d+)'?", call)
    assert m, f"{flag} missing in {call[:300]}"
    return int(m.group(1))


@pytest.fixture(params=["sacct", "squeue"])
def status_command(request, slurm_cluster):
    if request.param == "sacct" and not slurm_cluster["sacct"]:
        pytest.fail("sacct does not work on the test cluster (slurmdbd down?)", pytrace=False)
    return request.param


def test_workflow_on_slurm_retries_and_failures(tmp_path, slurm_cluster, status_command):
    workdir = _copy_workflow(tmp_path)
    base = _slurm_args(slurm_cluster, status_command)
    hostname = socket.gethostname().split(".")[0]

    # 1. every fit fails once, then succeeds with the scaled request -----------------------------------------
    rc, text, seconds = _snakemake(
        workdir,
        ["results/slurm_ok/report/manifest.json", *base, "--retries", "1", "--group-components", "fit_{experiment}=2"],
        _env(workdir, FORESTBENCH_TEST_FAIL_ATTEMPTS="1"),
    )
    assert rc is not None, f"snakemake hung ({status_command}); log tail:\n{text[-4000:]}"
    assert rc == 0, f"snakemake failed ({status_command}), rc {rc}:\n{text[-6000:]}"
    submitted = set(SUBMITTED.findall(text))
    assert submitted, "no SLURM job id in the log"
    # a failed group job is reported as "Error in group fit" (a single job as "SLURM-job 'N' failed"), then retried
    assert re.search(r"Error in group fit|SLURM-job '\d+' failed", text), "the first-attempt failure was not reported"
    assert "Trying to restart job" in text

    # the two fits are bundled in one SLURM job, submitted twice: attempt 1 (failed), then attempt 2
    fit_calls = _fit_sbatch_calls(text)
    assert len(fit_calls) == 2, fit_calls
    first, second = fit_calls
    assert "--attempt 1" in first and "--attempt 2" in second
    assert _requested(second, "--mem") == 2 * _requested(first, "--mem")
    assert _requested(second, "-t") == 2 * _requested(first, "-t")
    fit_ids = FIT_SUBMITTED.findall(text)
    assert [_slurm_state(i) for i in fit_ids] == ["FAILED", "COMPLETED"], fit_ids

    shape = {"n": 20, "p": 3, "d": 3}  # linnerud in config/datasets.yaml
    expected = fbres.fit_requests(shape, {"n_estimators": 5}, attempt=2)
    records = _records(workdir, "slurm_ok")
    assert len(records) == 2
    job_ids = set()
    for rec in records:
        assert rec["job"]["attempt"] == 2
        assert rec["job"]["mem_mb"] == expected["mem_mb"]
        slurm = rec["provenance"]["slurm"]
        assert slurm and slurm["SLURM_JOB_ID"] in submitted, slurm
        assert slurm["SLURMD_NODENAME"] == hostname
        assert rec["provenance"]["threads"]["OMP_NUM_THREADS"] == "1"
        job_ids.add(slurm["SLURM_JOB_ID"])
    assert len(job_ids) == 1, f"the two fits ran in different SLURM jobs {job_ids} despite fit_{{experiment}}=2"
    assert (workdir / "results/slurm_ok/scores.csv").is_file()
    assert (workdir / "results/slurm_ok/report/manifest.json").is_file()

    # 2. a broken job is reported as failed, and the run ends --------------------------------------------------
    target = "results/runs/slurm_broken/linnerud/broken/repeat-0.json"
    rc, text, seconds = _snakemake(workdir, [target, *base, "--retries", "0"], _env(workdir))
    assert rc is not None, f"snakemake hung on a failing job ({status_command}); log tail:\n{text[-4000:]}"
    assert rc != 0
    ids = SUBMITTED.findall(text)
    assert len(ids) == 1, ids
    # the profile groups fits: a failed group job is reported as "Error in group fit" (with the job's SLURM log),
    # an ungrouped one as "SLURM-job 'N' failed, SLURM status is: 'FAILED'"
    assert re.search(r"Error in group fit|SLURM-job '\d+' failed", text), text[-4000:]
    assert "Error in rule fit" in text
    assert _slurm_state(ids[0]) == "FAILED"
    assert not (workdir / target).exists()
    log = (workdir / "results/logs/fit/slurm_broken/linnerud/broken/repeat-0.log").read_text()
    assert "always_fails: this method fails every fit" in log


def test_fit_as_slurm_array(tmp_path, slurm_cluster):
    workdir = _copy_workflow(tmp_path)
    status = "sacct" if slurm_cluster["sacct"] else "squeue"
    args = _slurm_args(slurm_cluster, status)
    args[args.index("workflow/profiles/slurm")] = "workflow/profiles/slurm-array"
    rc, text, _ = _snakemake(workdir, ["results/slurm_ok/scores.csv", *args], _env(workdir))
    assert rc == 0, f"snakemake failed, rc {rc}:\n{text[-6000:]}"
    fit_calls = _fit_sbatch_calls(text)
    assert len(fit_calls) == 1 and "--array" in fit_calls[0], fit_calls
    records = _records(workdir, "slurm_ok")
    assert len(records) == 2
    tasks = {rec["provenance"]["slurm"].get("SLURM_ARRAY_TASK_ID") for rec in records}
    arrays = {rec["provenance"]["slurm"].get("SLURM_ARRAY_JOB_ID") for rec in records}
    assert None not in tasks and len(tasks) == 2, tasks
    assert len(arrays) == 1 and None not in arrays, arrays
