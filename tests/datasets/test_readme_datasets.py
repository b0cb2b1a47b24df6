"""A dataset of one's own, as README.md's "Adding a dataset" shows it: its CSV and ARFF entries and the experiment
using them run as written, an entry without the outputs' location is refused by the schema, and a file that
cannot be read shows the reader's error on the console (not only in the job's log)."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from forestbench.errors import ConfigError
from forestbench.validation import validate

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"


def readme_blocks() -> dict[str, list[str]]:
    """The fenced YAML blocks of README.md's "Adding a dataset" section, by their first (comment) line."""
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## Adding a dataset"):]
    section = section[:section.index("\n## ", 1)]
    blocks: dict[str, list[str]] = {}
    for body in re.findall(r"```yaml\n(.*?)```", section, flags=re.S):
        first, _, rest = body.partition("\n")
        blocks.setdefault(first.strip(), []).append(rest)
    return blocks


ENTRIES_MARK = "# in config/datasets.yaml, under `datasets:`"
CONFIG_MARK = "# config/my_experiment.yaml"


def examples() -> tuple[dict, dict, str]:
    blocks = readme_blocks()
    assert ENTRIES_MARK in blocks and CONFIG_MARK in blocks, sorted(blocks)
    entries_text = "".join(blocks[ENTRIES_MARK])
    entries = yaml.safe_load(entries_text)
    config = yaml.safe_load(blocks[CONFIG_MARK][0])
    return entries, config, entries_text


def write_files(workdir: Path, entries: dict, rng: np.random.Generator) -> None:
    """Data files matching each entry's shape where its local_path says, in its declared format."""
    for name, entry in entries.items():
        n, p, d = (entry["shape"][k] for k in ("n", "p", "d"))
        folder = workdir / entry["local_path"]
        folder.mkdir(parents=True, exist_ok=True)
        (spec,) = entry["source"]["files"]
        X = rng.normal(size=(n, p)).round(4)
        if spec["format"] == "csv":
            Y = (X[:, :d] * 2 + rng.normal(scale=0.1, size=(n, d))).round(4)
            lines = [",".join([f"x{j}" for j in range(p)] + [f"y{k}" for k in range(d)])]
            lines += [",".join(map(str, np.r_[x, y])) for x, y in zip(X, Y)]
        else:
            assert spec["format"] == "arff"
            Y = (X[:, :d] > 0).astype(int)
            lines = [f"@relation {name}"] + [f"@attribute x{j} numeric" for j in range(p)]
            lines += [f"@attribute label{k} {{0,1}}" for k in range(d)] + ["@data"]
            lines += [",".join(map(str, list(x) + list(y))) for x, y in zip(X, Y)]
        (folder / spec["name"]).write_text("\n".join(lines) + "\n")


def scratch_workflow(tmp_path: Path, entries_text: str) -> Path:
    for name in ("Snakefile", "workflow", "config", "envs"):
        src = ROOT / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, tmp_path / name)
    registry = tmp_path / "config" / "datasets.yaml"
    registry.write_text(registry.read_text().rstrip("\n") + "\n" + entries_text)  # appended under `datasets:`
    (tmp_path / "config" / "datasets.lock.yaml").unlink(missing_ok=True)
    return tmp_path


def snakemake(workdir: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "FORESTBENCH_RAW"}
    env["FORESTBENCH_SHA_LOCK"] = str(workdir / "config" / "datasets.lock.yaml")
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    return subprocess.run([sys.executable, "-m", "snakemake", "--cores", "1", *args], cwd=workdir, env=env,
                          capture_output=True, text=True, timeout=600)


def test_readme_marks_its_examples():
    entries, config, _ = examples()
    assert sorted(entries) == ["my_arff", "my_csv"]
    assert sorted(config["experiments"]["my_experiment"]["datasets"]) == ["my_arff", "my_csv"]
    validate({"datasets": entries}, "datasets", "README.md")


@pytest.mark.e2e
def test_readme_dataset_examples_run_as_written(tmp_path):
    entries, config, entries_text = examples()
    wd = scratch_workflow(tmp_path, entries_text)
    write_files(wd, entries, np.random.default_rng(0))
    (wd / "config" / "my_experiment.yaml").write_text(yaml.safe_dump(config))
    proc = snakemake(wd, "--configfile", "config/my_experiment.yaml")
    assert proc.returncode == 0, proc.stderr[-4000:]

    import pandas as pd

    scores = pd.read_csv(wd / "results" / "my_experiment" / "scores.csv")
    repeats = config["protocols"]["holdout"]["repeats"]
    for dataset, metric in (("my_csv", "macro_r2"), ("my_arff", "lrap")):
        rows = scores[(scores.dataset == dataset) & (scores.metric == metric)]
        assert sorted(set(rows.variant)) == ["et", "rf"] and len(rows) == 2 * repeats
        assert np.isfinite(rows.value).all()
    # the outputs are learnable (y = 2 x + noise, labels = x > 0): the examples measure something
    assert scores[(scores.dataset == "my_csv") & (scores.metric == "macro_r2")].value.min() > 0.5
    assert scores[(scores.dataset == "my_arff") & (scores.metric == "lrap")].value.min() > 0.8
    assert (wd / "results" / "my_experiment" / "report" / "manifest.json").exists()
    lock = yaml.safe_load((wd / "config" / "datasets.lock.yaml").read_text())
    assert {"my_csv/my_data.csv", "my_arff/my_data.arff"} <= set(lock["files"])


@pytest.mark.e2e
def test_unreadable_file_shows_the_reader_error_on_the_console(tmp_path):
    """Before: the console said only 'check log file(s)'; the reader's line was in results/logs/prepare/."""
    entries, _, entries_text = examples()
    without_header = entries_text.replace("reader: {header: true}", "reader: {header: false}")
    assert without_header != entries_text
    wd = scratch_workflow(tmp_path, without_header)
    write_files(wd, entries, np.random.default_rng(0))
    proc = snakemake(wd, "data/prepared/my_csv.npz")
    assert proc.returncode != 0
    log = (wd / "results" / "logs" / "prepare" / "my_csv.log").read_text()
    assert "my_data.csv:1: column 1: not a number: 'x0'" in log
    assert "my_data.csv:1: column 1: not a number: 'x0'" in proc.stderr, proc.stderr[-3000:]


def _download_entry(**source) -> dict:
    return {"datasets": {"mine": {"task": "regression", "local_path": "data/local/mine",
                                  "source": {"kind": "download", "files": [{"name": "a.csv", "format": "csv"}],
                                             **source}}}}


def test_schema_requires_where_the_outputs_are():
    """Before: an entry without labels passed the schema and failed in prepare ("labels.from 'inline' needs
    svmlight/XC files")."""
    with pytest.raises(ConfigError, match=r"datasets\.mine\.source: 'labels' is a required property.*from: last"):
        validate(_download_entry(), "datasets", "reg.yaml")
    validate(_download_entry(labels={"from": "last", "d": 1}), "datasets", "reg.yaml")
    validate(_download_entry(builder="newsgroups_bydate"), "datasets", "reg.yaml")  # a builder makes the outputs


def test_schema_requires_what_the_sources_read():
    """Before: an embedded source without its loader, a download source with no file, rcv1's builder without its two
    files passed the schema and failed in prepare with a KeyError or an IndexError."""
    embedded = {"datasets": {"mine": {"task": "regression", "source": {"kind": "embedded"}}}}
    with pytest.raises(ConfigError, match="'loader' is a required property"):
        validate(embedded, "datasets", "reg.yaml")
    embedded["datasets"]["mine"]["source"]["lodaer"] = "friedman1"
    with pytest.raises(ConfigError, match="unknown key.*'lodaer'"):
        validate(embedded, "datasets", "reg.yaml")
    with pytest.raises(ConfigError, match="should be non-empty"):
        validate({"datasets": {"m": {"task": "regression", "source": {"kind": "download", "files": [],
                                                                       "builder": "newsgroups_bydate"}}}},
                 "datasets", "reg.yaml")
    with pytest.raises(ConfigError, match="'vectors' is a required property"):
        validate(_download_entry(builder="rcv1_lyrl2004", topics="t.gz"), "datasets", "reg.yaml")


def test_from_files_docstring_names_only_options_the_schema_knows():
    """Before: it listed `most_frequent` and `vectorize_20news`, which the schema rejects."""
    import forestbench.datasets.from_files as ff

    schema_words = set(re.findall(r"[A-Za-z0-9_]+", (ROOT / "workflow/schemas/datasets.schema.yaml").read_text()))
    named = set(re.findall(r"``([a-z0-9_]+)``", ff.__doc__))
    assert named and not named - schema_words, sorted(named - schema_words)


def test_joblog_repeats_the_error_message_and_keeps_the_status(tmp_path, capsys):
    from forestbench.workflow.joblog import main

    log = tmp_path / "x.log"
    log.write_text("UserWarning: something\nforestbench prepare: error: invalid configuration:\nreg.yaml: a: b\n"
                   "reg.yaml: c: d\n")
    assert main([str(log), "2"]) == 2
    assert capsys.readouterr().err.splitlines() == ["forestbench prepare: error: invalid configuration:",
                                                     "reg.yaml: a: b", "reg.yaml: c: d"]
    log.write_text("Traceback (most recent call last):\n  File ...\nMemoryError: out of memory\n\n")
    assert main([str(log), "137"]) == 137
    assert capsys.readouterr().err == "MemoryError: out of memory\n"
    assert main([str(tmp_path / "missing.log"), "1"]) == 1  # the command could not start: its status only
