"""The workflow's data rules: an edited registry entry reruns exactly its dataset's prepare (and what depends on
it), and FORESTBENCH_RAW moves the raw cache for fetch and prepare alike."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from dsfixtures_http import Route
from test_from_files import XML, arff, toy_multilabel

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.e2e


def snakemake(workdir: Path, *targets: str, env: dict | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "FORESTBENCH_SHA_LOCK": str(workdir / "config" / "datasets.lock.yaml"),
           "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""), **(env or {})}
    return subprocess.run([sys.executable, "-m", "snakemake", "--cores", "1", *targets],
                          cwd=workdir, env=env, capture_output=True, text=True, timeout=300)


def workdir(tmp_path: Path, registry: dict, datasets: list[str], metric: str = "macro_r2") -> Path:
    tmp_path.mkdir(exist_ok=True)
    shutil.copy(ROOT / "Snakefile", tmp_path / "Snakefile")
    shutil.copytree(ROOT / "workflow", tmp_path / "workflow")
    shutil.copytree(ROOT / "envs", tmp_path / "envs")
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "datasets.yaml").write_text(yaml.safe_dump(registry))
    config = {"datasets_registry": "config/datasets.yaml", "experiments": {"e": {
        "datasets": datasets, "protocol": "p", "metrics": [metric],
        "methods": [{"name": "rf", "method": "sklearn_random_forest", "params": {"n_estimators": 5}}]}}}
    (tmp_path / "config" / "config.yaml").write_text(yaml.safe_dump(config))
    return tmp_path


def friedman(seed: int) -> dict:
    return {"task": "regression", "shape": {"n": 60, "p": 5, "d": 1},
            "source": {"kind": "embedded", "loader": "friedman1",
                       "params": {"n_samples": 60, "n_features": 5, "seed": seed}},
            "protocols": {"p": {"type": "random", "n_train": 40, "n_test": 20}}}


def test_edited_registry_entry_reruns_only_its_prepare(tmp_path):
    """Before: editing a generator seed left data/prepared/<dataset>.npz (and every result) silently stale."""
    registry = {"datasets": {"a": friedman(1), "b": friedman(2)}}
    wd = workdir(tmp_path, registry, ["a", "b"])
    targets = ["data/splits/a/p.npz", "data/splits/b/p.npz"]
    first = snakemake(wd, *targets)
    assert first.returncode == 0, first.stderr[-3000:]
    prepared = {d: wd / "data" / "prepared" / f"{d}.npz" for d in "ab"}
    before = {d: (p.stat().st_mtime_ns, np.load(p)["X"].copy()) for d, p in prepared.items()}

    registry["datasets"]["a"]["source"]["params"]["seed"] = 7  # the edit
    registry["datasets"]["b"]["notes"] = "prose only: must not rerun anything"
    registry["datasets"]["b"]["protocols"]["p"]["seed"] = 0  # split-only change: the split rule's own params
    (wd / "config" / "datasets.yaml").write_text(yaml.safe_dump(registry))
    second = snakemake(wd, *targets)
    assert second.returncode == 0, second.stderr[-3000:]
    assert prepared["a"].stat().st_mtime_ns != before["a"][0]
    assert not np.array_equal(np.load(prepared["a"])["X"], before["a"][1])
    assert prepared["b"].stat().st_mtime_ns == before["b"][0]
    third = snakemake(wd, "-n", *targets)
    assert "Nothing to be done" in third.stdout + third.stderr


def test_forestbench_raw_moves_the_raw_cache_for_fetch_and_prepare(http_server, tmp_path):
    """Before: with FORESTBENCH_RAW set, fetch wrote there while the rule expected data/raw: missing output."""
    rng = np.random.default_rng(0)
    _, _, attrs, rows = toy_multilabel(rng, 30, 4, 3)
    bodies = {"toy.arff": arff("toy", attrs, rows).encode(), "toy.xml": XML(3).encode()}
    for name, body in bodies.items():
        http_server.routes[f"/{name}"] = Route(body)
    files = [{"name": n, "url": http_server.url(f"/{n}"), "format": "xml" if n.endswith("xml") else "arff"}
             for n in bodies]
    registry = {"datasets": {"toy": {
        "task": "multilabel", "shape": {"n": 30, "p": 4, "d": 3},
        "source": {"kind": "download", "files": files, "layout": {"type": "single", "data": ["toy.arff"]},
                   "labels": {"from": "xml", "file": "toy.xml"}},
        "protocols": {"p": {"type": "random", "n_train": 20, "n_test": 10}}}}}
    wd = workdir(tmp_path / "wd", registry, ["toy"], metric="lrap")
    cache = tmp_path / "shared-cache"
    result = snakemake(wd, "data/prepared/toy.npz", env={"FORESTBENCH_RAW": str(cache)})
    assert result.returncode == 0, result.stderr[-3000:]
    assert sorted(p.name for p in (cache / "toy").iterdir()) == ["toy.arff", "toy.xml"]
    assert not (wd / "data" / "raw").exists()
    assert (wd / "data" / "prepared" / "toy.npz").exists()
