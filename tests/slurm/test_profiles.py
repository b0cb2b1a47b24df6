"""The SLURM profiles build the full reproduction's DAG (dry run): every job's resources evaluate, the fit chunks
group without conflicts (timing experiments' exclusive nodes are never mixed with other fits), and the job counts
agree with ``forestbench plan``. Marked ``slurm`` because the executor plugin runs on a machine with SLURM's
client tools (the cluster fixture installs them when missing); it submits nothing."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from forestbench.workflow.experiments import Plan
from forestbench.workflow.plan import load_config, make_plan

pytestmark = pytest.mark.slurm

REPO = Path(__file__).resolve().parents[2]


def _stats(text: str) -> dict[str, int]:
    block = text.split("Job stats:", 1)[1]
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)$", block, re.M)}


@pytest.mark.parametrize("profile, chunk", [("workflow/profiles/slurm", 8), ("workflow/profiles/slurm-array", 1)])
def test_dry_run_of_the_thesis_configuration(tmp_path, slurm_client, profile, chunk):
    for name in ("Snakefile", "workflow", "config", "envs"):
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, tmp_path / name)
        elif src.exists():
            (tmp_path / name).write_bytes(src.read_bytes())
    cmd = [sys.executable, "-m", "snakemake", "--profile", profile, "-n", "--configfile", "config/thesis.yaml"]
    r = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    text = r.stdout + r.stderr
    assert r.returncode == 0, text[-5000:]
    stats = _stats(text)
    config, _ = load_config([tmp_path / "config" / "thesis.yaml"])
    plan = make_plan(Plan(config, source="thesis.yaml", schema_dir=tmp_path / "workflow" / "schemas"),
                     results=tmp_path / "results", chunk=chunk)
    for rule, count in plan.jobs.items():
        assert stats.get(rule) == count, (rule, stats.get(rule), count)
    groups = len(re.findall(r"Group job fit_", text)) if chunk > 1 else 0
    if chunk > 1:
        assert groups == plan.slurm_jobs["fit"]
    assert "--exclusive" in text  # the timing experiments ask for whole nodes
