"""End to end: the Snakemake workflow on a tiny configuration in a scratch directory."""
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from forestbench.workflow.resources import machine_memory_mb

pytestmark = pytest.mark.e2e

TINY = {
    "datasets_registry": "config/datasets.yaml",
    "seed": 0,
    "experiments": {
        "tiny_ml": {"datasets": ["yeast"], "protocol": "demo", "metrics": ["lrap", "coverage_error"],
                    "max_repeats": 2,
                    "methods": [{"name": "rf", "method": "sklearn_random_forest",
                                 "params": {"n_estimators": 4, "max_features": "sqrt"}}]},
        "tiny_reg": {"datasets": ["linnerud"], "protocol": "demo", "metrics": ["macro_r2"], "max_repeats": 2,
                     "methods": [{"name": "rf-d{max_depth}", "method": "sklearn_random_forest",
                                  "params": {"n_estimators": 4}, "grid": {"max_depth": [2, 4]}}]},
    },
}


def snakemake(workdir: Path, env, *args, timeout=300):
    cmd = [sys.executable, "-m", "snakemake", "--cores", "2", "--configfile", "tiny.yaml", *args]
    return subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True, timeout=timeout)


def jobs_planned(output: str, rule: str) -> int:
    match = re.search(rf"^{rule}\s+(\d+)\s*$", output, flags=re.M)
    return int(match.group(1)) if match else 0


def test_workflow_runs_then_is_up_to_date_then_reruns_one_job(workflow_dir, snakemake_env):
    (workflow_dir / "tiny.yaml").write_text(yaml.safe_dump(TINY))
    first = snakemake(workflow_dir, snakemake_env)
    assert first.returncode == 0, first.stderr[-3000:]
    records = sorted((workflow_dir / "results" / "runs").rglob("repeat-*.json"))
    assert len(records) == 2 + 4
    for name in ("tiny_ml", "tiny_reg"):
        assert (workflow_dir / "results" / name / "scores.csv").exists()
        assert (workflow_dir / "results" / name / "report" / "manifest.json").exists()
    assert (workflow_dir / "results" / "report" / "index.html").exists()

    second = snakemake(workflow_dir, snakemake_env)
    assert second.returncode == 0 and "Nothing to be done" in second.stdout + second.stderr

    victim = workflow_dir / "results/runs/tiny_reg/linnerud/rf-d4/repeat-1.json"
    victim.unlink()
    dry = snakemake(workflow_dir, snakemake_env, "-n")
    out = dry.stdout + dry.stderr
    assert jobs_planned(out, "fit") == 1 and jobs_planned(out, "prepare") == 0 and jobs_planned(out, "split") == 0
    assert jobs_planned(out, "collect") == 1  # only the affected experiment is collected again
    # locally, jobs hold their memory requests from a pool (the machine's memory unless --resources sets it): the
    # fit asking more than a 700 MB pool is capped at it, and named
    assert f'mem_mb=Resource("mem_mb", {machine_memory_mb()})' in first.stdout + first.stderr
    small = snakemake(workflow_dir, snakemake_env, "-n", "--resources", "mem_mb=700")
    out = small.stdout + small.stderr
    assert small.returncode == 0, out[-3000:]
    assert re.search(r"wildcards: experiment=tiny_reg, dataset=linnerud, variant=rf-d4, repeat=1\n\s+resources: "
                     r"[^\n]*\bmem_mb=700\b", out), out[-3000:]
    assert "fit tiny_reg/linnerud/rf-d4 attempt 1: mem_mb 1000 > 700, capped at" in out
    assert "the local memory pool" in out
    third = snakemake(workflow_dir, snakemake_env)
    assert third.returncode == 0 and victim.exists()


def test_unknown_config_key_fails_naming_it(workflow_dir, snakemake_env):
    bad = {**TINY, "experimentz": {}}
    (workflow_dir / "tiny.yaml").write_text(yaml.safe_dump(bad))
    proc = snakemake(workflow_dir, snakemake_env, "-n")
    assert proc.returncode != 0 and "experimentz" in proc.stdout + proc.stderr
    assert not (workflow_dir / "results").exists()


def test_lint_is_clean(repo_root, snakemake_env):
    proc = subprocess.run([sys.executable, "-m", "snakemake", "--lint"], cwd=repo_root, env=snakemake_env,
                          capture_output=True, text=True, timeout=120)
    assert "Congratulations" in proc.stdout + proc.stderr, proc.stdout[-3000:]



def test_a_partial_rerun_after_a_parameter_change_never_mixes_configurations(workflow_dir, snakemake_env):
    """n_estimators changes, and only one variant is rerun (select): the other variant's records, made with the old
    value, are left out of the table and named in the collect log, and the report lists their cells as not run."""
    import json

    import pandas as pd

    cfg = {**TINY, "experiments": {"tiny_reg": TINY["experiments"]["tiny_reg"]}}
    (workflow_dir / "tiny.yaml").write_text(yaml.safe_dump(cfg))
    first = snakemake(workflow_dir, snakemake_env)
    assert first.returncode == 0, first.stderr[-3000:]
    changed = json.loads(json.dumps(cfg))
    changed["experiments"]["tiny_reg"]["methods"][0]["params"]["n_estimators"] = 6
    changed["select"] = {"variants": ["rf-d2"]}
    (workflow_dir / "tiny.yaml").write_text(yaml.safe_dump(changed))
    second = snakemake(workflow_dir, snakemake_env)
    assert second.returncode == 0, second.stderr[-3000:]
    scores = pd.read_csv(workflow_dir / "results/tiny_reg/scores.csv")
    assert set(scores["variant"]) == {"rf-d2"} and set(scores["param.n_estimators"]) == {6}
    log = (workflow_dir / "results/logs/collect/tiny_reg.log").read_text()
    assert "2 superseded record(s)" in log
    assert "rf-d4/repeat-0.json: made with other parameters (n_estimators: 4 -> 6)" in log
    manifest = json.loads((workflow_dir / "results/tiny_reg/report/manifest.json").read_text())
    assert {(c["dataset"], c["variant"]) for c in manifest["missing_cells"]} == {("linnerud", "rf-d4")}
    # the same records restored under a configuration they match are accepted again
    (workflow_dir / "tiny.yaml").write_text(yaml.safe_dump(cfg))
    proc = subprocess.run([sys.executable, "-m", "forestbench", "collect", "tiny_reg", "--results", "results",
                           "--expected", "results/tiny_reg/expected_runs.json", "--out", "again.csv"],
                          cwd=workflow_dir, env=snakemake_env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "2 superseded record(s)" in proc.stdout  # expected_runs.json still describes n_estimators 6
