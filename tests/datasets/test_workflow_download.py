"""The workflow's fetch -> prepare -> split chain through Snakemake, downloading from a server on 127.0.0.1:
a failed download fails its job and leaves nothing partial; the rerun fetches only what is missing."""
from __future__ import annotations

import hashlib
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


def snakemake(workdir: Path, *targets: str) -> subprocess.CompletedProcess:
    # the rules call `python`: the interpreter running the tests (and its forestbench) must come first on PATH
    env = {**os.environ, "FORESTBENCH_SHA_LOCK": str(workdir / "config" / "datasets.lock.yaml"),
           "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")}
    return subprocess.run([sys.executable, "-m", "snakemake", "--cores", "1", "--keep-going", *targets],
                          cwd=workdir, env=env, capture_output=True, text=True, timeout=300)


def test_fetch_prepare_split_interrupted_then_resumed(http_server, tmp_path):
    shutil.copy(ROOT / "Snakefile", tmp_path / "Snakefile")
    shutil.copytree(ROOT / "workflow", tmp_path / "workflow")
    shutil.copytree(ROOT / "envs", tmp_path / "envs")
    (tmp_path / "config").mkdir()
    rng = np.random.default_rng(0)
    _, Y, attrs, rows = toy_multilabel(rng, 30, 4, 3)
    train, test, xml = arff("toy", attrs, rows[:20]), arff("toy", attrs, rows[20:]), XML(3)
    bodies = {"toy-train.arff": train.encode(), "toy-test.arff": test.encode(), "toy.xml": xml.encode()}
    files = [{"name": n, "url": http_server.url(f"/{n}"), "format": "xml" if n.endswith("xml") else "arff"}
             for n in bodies]
    files[0]["sha256"] = hashlib.sha256(bodies["toy-train.arff"]).hexdigest()  # the others: trust on first use
    registry = {"datasets": {
        "toy": {"task": "multilabel", "status": "available", "shape": {"n": 30, "p": 4, "d": 3},
                "source": {"kind": "download", "files": files,
                           "layout": {"type": "train_test", "train": ["toy-train.arff"], "test": ["toy-test.arff"]},
                           "labels": {"from": "xml", "file": "toy.xml"}},
                "protocols": {"standard": {"type": "given"}}},
        "gone": {"task": "multilabel", "status": "unavailable", "unavailable_reason": "no public copy",
                 "source": {"kind": "download", "files": [{"name": "gone.arff"}], "labels": {"from": "last", "d": 3}},
                 "protocols": {"standard": {"type": "given"}}}}}
    (tmp_path / "config" / "datasets.yaml").write_text(yaml.safe_dump(registry))
    config = {"datasets_registry": "config/datasets.yaml", "experiments": {"e": {
        "datasets": ["toy", "gone"], "protocol": "standard", "metrics": ["lrap"],
        "methods": [{"name": "rf", "method": "sklearn_random_forest", "params": {"n_estimators": 5}}]}}}
    (tmp_path / "config" / "config.yaml").write_text(yaml.safe_dump(config))

    # the XML is not served yet: its fetch job fails, the ARFF files are fetched and verified
    http_server.routes["/toy-train.arff"] = Route(bodies["toy-train.arff"])
    http_server.routes["/toy-test.arff"] = Route(bodies["toy-test.arff"], truncate_at=50)  # first: truncated
    first = snakemake(tmp_path, "data/splits/toy/standard.npz")
    assert first.returncode != 0
    assert "dataset gone is unavailable" in first.stderr
    raw = tmp_path / "data" / "raw" / "toy"
    assert sorted(p.name for p in raw.iterdir()) == ["toy-train.arff"]  # nothing partial, nothing unverified
    log = (tmp_path / "results" / "logs" / "fetch" / "toy" / "toy.xml.log").read_text()
    assert "HTTP 404" in log and "'toy'" in log
    assert not (tmp_path / "data" / "prepared" / "toy.npz").exists()

    http_server.routes["/toy-test.arff"] = Route(bodies["toy-test.arff"])
    http_server.routes["/toy.xml"] = Route(bodies["toy.xml"])
    second = snakemake(tmp_path, "data/splits/toy/standard.npz")
    assert second.returncode == 0, second.stderr[-3000:]
    assert http_server.count("/toy-train.arff") == 1  # not downloaded again
    lock = yaml.safe_load((tmp_path / "config" / "datasets.lock.yaml").read_text())["files"]
    assert set(lock) == {"toy/toy-test.arff", "toy/toy.xml"}  # recorded on first download
    with np.load(tmp_path / "data" / "splits" / "toy" / "standard.npz") as npz:
        np.testing.assert_array_equal(npz["train_0"], np.arange(20))
        np.testing.assert_array_equal(npz["test_0"], np.arange(20, 30))
    assert (tmp_path / "data" / "splits" / "toy" / "standard.json").exists()
