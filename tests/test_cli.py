import json
import shutil
import subprocess
import sys

import numpy as np
import pytest

from forestbench.cli import main
from forestbench.workflow.experiments import Job, Plan


def _prepare_and_split(tmp_path, capsys):
    prepared, split = tmp_path / "linnerud.npz", tmp_path / "linnerud-cv.npz"
    assert main(["prepare", "linnerud", "--out", str(prepared)]) == 0
    protocol = json.dumps({"type": "kfold", "n_splits": 4})
    assert main(["split", "linnerud", "--prepared", str(prepared), "--protocol", protocol, "--out", str(split)]) == 0
    return prepared, split


def _spec():
    cfg = {"experiments": {"e": {"datasets": ["linnerud"], "protocol": "demo", "metrics": ["macro_r2", "arrmse"],
                                 "methods": [{"name": "rf", "method": "sklearn_random_forest",
                                              "params": {"n_estimators": 5}}]}}}
    return Plan(cfg).run_spec(Job("e", "linnerud", "rf", 2))


def test_fit_writes_complete_record(tmp_path, capsys, repo_root, monkeypatch):
    monkeypatch.chdir(repo_root)
    prepared, split = _prepare_and_split(tmp_path, capsys)
    out = tmp_path / "rec.json"
    assert main(["fit", "--spec", json.dumps(_spec()), "--prepared", str(prepared), "--split", str(split),
                 "--out", str(out), "--attempt", "2", "--mem-mb", "3000"]) == 0
    record = json.loads(out.read_text())
    assert set(record["scores"]) == {"macro_r2", "arrmse"} and np.isfinite(record["scores"]["arrmse"])
    assert record["higher_is_better"] == {"macro_r2": True, "arrmse": False}
    assert record["n_train"] == 15 and record["n_test"] == 5 and record["repeat"] == 2
    assert record["params"] == {"n_estimators": 5} and isinstance(record["seed"], int)
    assert record["fit_wall_s"] > 0 and record["fit_cpu_s"] >= 0 and record["predict_wall_s"] > 0
    assert record["model"]["n_nodes"] > 5 and record["model"]["bytes"] > 0 and record["peak_rss_mb"] > 0
    assert record["job"] == {"attempt": 2, "mem_mb": 3000, "threads": 1}
    prov = record["provenance"]
    assert prov["packages"]["scikit-learn"] and prov["host"] and prov["cpu_model"]
    assert "OMP_NUM_THREADS" in prov["threads"] and len(record["data"]["split_sha256"]) == 64


def test_same_seed_same_scores(tmp_path, capsys, repo_root, monkeypatch):
    monkeypatch.chdir(repo_root)
    prepared, split = _prepare_and_split(tmp_path, capsys)
    scores = []
    for name in ("a.json", "b.json"):
        main(["fit", "--spec", json.dumps(_spec()), "--prepared", str(prepared), "--split", str(split),
              "--out", str(tmp_path / name)])
        scores.append(json.loads((tmp_path / name).read_text())["scores"])
    assert scores[0] == scores[1]


def test_corrupted_prepared_file_is_named_and_nothing_written(tmp_path, capsys, repo_root, monkeypatch):
    monkeypatch.chdir(repo_root)
    prepared, split = _prepare_and_split(tmp_path, capsys)
    prepared.write_bytes(prepared.read_bytes()[:200])
    out = tmp_path / "rec.json"
    code = main(["fit", "--spec", json.dumps(_spec()), "--prepared", str(prepared), "--split", str(split),
                 "--out", str(out)])
    assert code == 2
    assert f"prepared dataset {prepared} is corrupted" in capsys.readouterr().err
    assert not out.exists() and [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_wrong_shape_is_named(tmp_path, capsys, repo_root, monkeypatch):
    monkeypatch.chdir(repo_root)
    prepared, split = _prepare_and_split(tmp_path, capsys)
    spec = {**_spec(), "expected_shape": {"n": 20, "p": 4, "d": 3}}
    code = main(["fit", "--spec", json.dumps(spec), "--prepared", str(prepared), "--split", str(split),
                 "--out", str(tmp_path / "r.json")])
    assert code == 2 and "dataset linnerud: wrong shape: p=3 (expected 4)" in capsys.readouterr().err


def test_python_dash_m_entry_point(repo_root):
    proc = subprocess.run([sys.executable, "-m", "forestbench", "--help"], capture_output=True, text=True,
                          cwd=repo_root)
    assert proc.returncode == 0 and "prepare" in proc.stdout and "fit" in proc.stdout


def test_collect(tmp_path, capsys, repo_root, monkeypatch):
    monkeypatch.chdir(repo_root)
    prepared, split = _prepare_and_split(tmp_path, capsys)
    runs = tmp_path / "results" / "runs" / "e" / "linnerud" / "rf"
    for r in range(2):
        spec = {**_spec(), "repeat": r}
        main(["fit", "--spec", json.dumps(spec), "--prepared", str(prepared), "--split", str(split),
              "--out", str(runs / f"repeat-{r}.json")])
    scores = tmp_path / "scores.csv"
    assert main(["collect", "e", "--results", str(tmp_path / "results"), "--out", str(scores)]) == 0
    import pandas as pd
    frame = pd.read_csv(scores)
    assert len(frame) == 4 and set(frame["metric"]) == {"macro_r2", "arrmse"}
    assert frame["param.n_estimators"].eq(5).all()


@pytest.mark.skipif(shutil.which("git") is None, reason="needs the git command")
def test_provenance_names_the_checkout_the_job_runs_in(tmp_path, monkeypatch):
    # a wheel installed from a checkout cannot tell its sources' commit; the job's working directory (Snakemake's,
    # the checkout of the configuration and rules) still can
    from forestbench.workflow import records

    repo = tmp_path / "workflow-checkout"
    repo.mkdir()
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(git + ["init", "-q"], cwd=repo, check=True)
    (repo / "Snakefile").write_text("# rules\n")
    subprocess.run(git + ["add", "Snakefile"], cwd=repo, check=True)
    subprocess.run(git + ["commit", "-q", "-m", "c"], cwd=repo, check=True)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True,
                          check=True).stdout.strip()
    monkeypatch.chdir(repo)
    assert records.provenance()["git"]["workflow"] == {"commit": head, "dirty": False}
    (repo / "Snakefile").write_text("# rules, edited\n")
    records._git_state.cache_clear()
    assert records.provenance()["git"]["workflow"] == {"commit": head, "dirty": True}
    outside = tmp_path / "plain"
    outside.mkdir()
    monkeypatch.chdir(outside)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    records._git_state.cache_clear()
    assert records.provenance()["git"]["workflow"] == {"commit": None, "dirty": None}
