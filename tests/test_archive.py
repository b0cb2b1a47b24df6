"""The results archive: add, restore, report, import and the README's reproduction table."""
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from forestbench import archive, validation
from forestbench._io import write_json
from forestbench.cli import main
from forestbench.workflow.collect import collect
from forestbench.errors import ConfigError, DataError
from forestbench.workflow.experiments import Plan

SNAPSHOT_NAME = archive.SNAPSHOT
PENDING_NAME = archive.PENDING

REPO = Path(__file__).resolve().parents[1]
CHAIN = REPO / "benchmarks/results/table_6_1_chain"

TUNE = {"grid": {"learning_rate": [0.1, 0.5]}, "validation": {"holdout": 0.25}, "metric": "macro_r2",
        "staged": "n_estimators", "mode": "dag", "chunk": 1}


def tiny_config(n_estimators=4):
    return {
        "datasets_registry": str(REPO / "config/datasets.yaml"), "seed": 0,
        "experiments": {
            "tiny": {"datasets": ["linnerud"], "protocol": "demo", "metrics": ["macro_r2"], "max_repeats": 2,
                     "methods": [
                         {"name": "rf", "method": "sklearn_random_forest", "params": {"n_estimators": n_estimators}},
                         {"name": "st", "method": "st_gbrt", "params": {"n_estimators": 20}, "tune": TUNE}],
                     "reference": {"table": "ref", "metric": "macro_r2", "tolerance_std": 1,
                                   "methods": {"rf": "RF", "st": "ST"}}},
        },
    }


def write_config(path: Path, config: dict) -> Path:
    path.write_text(yaml.safe_dump(config))
    return path


def fake_results(results: Path, plan: Plan, score=0.5) -> dict[str, Path]:
    """Run records and tuning files as the workflow writes them (the scores are made up)."""
    files = {}
    for job in plan.jobs():
        spec = json.loads(json.dumps(plan.run_spec(job)))
        record = {"schema_version": 1, "spec": spec, "experiment": job.experiment, "dataset": job.dataset,
                  "variant": job.variant, "method": spec["method"], "params": spec["params"],
                  "repeat": job.repeat, "seed": spec["seed"],
                  "scores": {"macro_r2": score + 0.1 * (job.variant == "st") + 0.01 * job.repeat},
                  "higher_is_better": {"macro_r2": True}, "fit_wall_s": 0.1,
                  "provenance": {"host": "h", "packages": {"numpy": "x"}}}
        path = results / plan.record_path(job).removeprefix("results/")
        write_json(path, record)
        files[f"record-{job.variant}-{job.repeat}"] = path
        if job.variant == "st":
            tune = results / f"tuning/tiny/linnerud/st/repeat-{job.repeat}"
            write_json(tune / "chunk-0.json", {"chunk": 0, "results": [{"params": {}, "score": 0.3}]})
            write_json(tune / "chunk-1.json", {"chunk": 1, "results": [{"params": {}, "score": 0.2}]})
            write_json(tune / "selected.json", {"params": {"learning_rate": 0.1}, "score": 0.3, "selection": {}})
            files[f"selected-{job.repeat}"] = tune / "selected.json"
            files[f"chunk-{job.repeat}"] = tune / "chunk-0.json"
    # one candidate of a chunk that did not finish, one that a finished chunk file holds too
    write_json(results / "tuning/tiny/linnerud/st/candidates/abc.json", {"params": {"learning_rate": 0.5},
                                                                          "score": 0.25})
    write_json(results / "tuning/tiny/linnerud/st/candidates/def.json", {"params": {}, "score": 0.3})
    return files


@pytest.fixture
def setup(tmp_path):
    configfile = write_config(tmp_path / "tiny.yaml", tiny_config())
    plan = archive._plan(configfile)
    results = tmp_path / "results"
    files = fake_results(results, plan)
    return tmp_path, configfile, plan, results, files


def test_add_archives_exact_bytes_and_is_idempotent(setup):
    tmp, configfile, plan, results, files = setup
    out = archive.add(results, tmp / "archive", plan)
    assert len(out.written) == 4 + 2 * 3 + 1 and not out.refused and out.covered == 1
    assert [p.name for p in (tmp / "archive").rglob("candidates/*")] == ["abc.json.gz"]
    record = tmp / "archive/tiny/runs/linnerud/rf/repeat-0.json.gz"
    assert gzip.decompress(record.read_bytes()) == files["record-rf-0"].read_bytes()
    assert json.loads((tmp / "archive/tiny/experiment.json").read_text())["configuration"]["protocol"] == "demo"
    before = {p: p.read_bytes() for p in (tmp / "archive").rglob("*") if p.is_file()}
    again = archive.add(results, tmp / "archive", plan)
    assert not again.written and again.unchanged == len(out.written)
    assert before == {p: p.read_bytes() for p in (tmp / "archive").rglob("*") if p.is_file()}


def test_chunks_of_a_split_not_fitted_yet_are_kept_in_git_until_its_record_is(setup):
    """A tuned run cut off mid-way (end of a sitting, a lost machine) keeps the chunks it finished: their files go
    under pending/, which git tracks, and come back under their results/ name; once the split's run record is
    archived, the copy moves to the git-ignored name and the pending one is pruned."""
    tmp, configfile, plan, results, files = setup
    record = files["record-st-1"]
    saved = record.read_bytes()
    record.unlink()                                         # repeat 1 of st: tuned, selected, not fitted yet
    out = archive.add(results, tmp / "archive", plan)
    tuning = tmp / "archive/tiny/tuning/linnerud/st"
    assert sorted(p.relative_to(tuning).as_posix() for p in tuning.rglob("chunk-*")) == [
        "repeat-0/chunk-0.json.gz", "repeat-0/chunk-1.json.gz",
        "repeat-1/pending/chunk-0.json.gz", "repeat-1/pending/chunk-1.json.gz"]
    ignored = subprocess.run(
        ["git", "check-ignore", "--no-index", "archive/tiny/tuning/linnerud/st/repeat-0/chunk-0.json.gz",
         "archive/tiny/tuning/linnerud/st/repeat-1/pending/chunk-0.json.gz"],
        cwd=REPO, capture_output=True, text=True).stdout.split()
    assert ignored == ["archive/tiny/tuning/linnerud/st/repeat-0/chunk-0.json.gz"]   # the repository's .gitignore
    assert out.pruned == 0

    # a fresh machine: the pending chunks are restored under their results/ names, byte for byte
    chunk = results / "tuning/tiny/linnerud/st/repeat-1/chunk-1.json"
    chunk_bytes = chunk.read_bytes()
    shutil.rmtree(results)
    fake_data(tmp)
    archive.restore(tmp / "archive", results, plan, data=tmp / "data")
    assert chunk.read_bytes() == chunk_bytes and not (results / "tuning/tiny/linnerud/st/repeat-1/pending").exists()

    # the split's fit finishes: its chunks join the others and the pending copies go
    write_json(record, json.loads(saved))
    out = archive.add(results, tmp / "archive", plan)
    assert out.pruned == 2 and not list((tuning / "repeat-1/pending").glob("*"))
    assert archive.read_archived(tuning / "repeat-1/chunk-1.json.gz") == chunk_bytes


def test_budget_measurements_are_kept_until_every_budget_of_their_dataset_is(tmp_path):
    """A time budget cut off mid-way (end of a sitting) keeps every candidate it timed: the dataset's shared
    measurements are archived while one of its budgets is unfinished and restored on a fresh machine, so the
    budget job measures only what is left; once every budget is archived they are left out and pruned."""
    config = tiny_config()
    config["experiments"]["tiny"]["methods"][1]["tune"] = {
        **TUNE, "budget": {"multiple": 50, "reference": {"method": "gbmort", "params": {"max_leaf_nodes": 2}}}}
    configfile = write_config(tmp_path / "tiny.yaml", config)
    plan = archive._plan(configfile)
    results = tmp_path / "results"
    fake_results(results, plan)
    timings = results / "tuning/tiny/linnerud/budget-measurements"
    for key, seconds in (("k1", 0.5), ("k2", 0.25)):
        write_json(timings / f"{key}.json", {"fingerprint": key, "seconds_per_stage": seconds, "what": {}})
    write_json(timings / "k3.json", {"fingerprint": "other", "seconds_per_stage": 1.0})     # a foreign file
    write_json(timings / "k4.json", {"fingerprint": "k4", "seconds_per_stage": 0.0})        # not a measurement
    out = archive.add(results, tmp_path / "archive", plan)
    kept = tmp_path / "archive/tiny/tuning/linnerud/budget-measurements"
    assert sorted(p.name for p in kept.glob("*")) == ["k1.json.gz", "k2.json.gz"]
    assert len(out.refused) == 2 and all("not a finished budget measurement" in m for m in out.refused)
    assert archive.read_archived(kept / "k1.json.gz") == (timings / "k1.json").read_bytes()

    # a fresh machine: the timings come back under their results/ names (their fingerprints decide their reuse)
    saved = (timings / "k2.json").read_bytes()
    shutil.rmtree(results)
    fake_data(tmp_path)
    archive.restore(tmp_path / "archive", results, plan, data=tmp_path / "data")
    assert (timings / "k2.json").read_bytes() == saved and not (timings / "k3.json").exists()

    # the budget finishes: its file is archived, the timings are no longer needed and leave the archive
    write_json(results / "tuning/tiny/linnerud/st/budget.json", {"caps": {"x": {"n_stages_max": 3}}})
    out = archive.add(results, tmp_path / "archive", plan)
    assert (tmp_path / "archive/tiny/tuning/linnerud/st/budget.json.gz").exists()
    assert not kept.exists() and out.timed == 2 + 2
    assert archive.add(results, tmp_path / "archive", plan).timed == 2 and not kept.exists()


def test_add_refuses_unfinished_invalid_and_foreign_records(setup, capsys):
    tmp, configfile, plan, results, files = setup
    files["record-rf-0"].write_text('{"experiment": "tiny", "scor')                     # cut off
    doc = json.loads(files["record-rf-1"].read_text())
    del doc["provenance"]
    write_json(files["record-rf-1"], doc)                                                # incomplete
    doc = json.loads(files["record-st-0"].read_text())
    doc["spec"]["seed"] += 1
    write_json(files["record-st-0"], doc)                                                # another configuration
    files["selected-1"].write_text("{}")                                                 # not a selection
    (files["record-st-1"].parent / ".repeat-1.json.x.part.json").write_text("{")         # a writer's temp file
    rc = main(["archive", "add", "--results", str(results), "--archive", str(tmp / "archive"),
               "--configfile", str(configfile)])
    err = capsys.readouterr().err
    assert rc == 1
    assert re.search(r"rf/repeat-0\.json: not valid JSON", err)
    assert re.search(r"rf/repeat-1\.json: run record lacks provenance", err)
    assert re.search(r"st/repeat-0\.json: produced by another configuration .* differs in seed", err)
    assert "repeat-1/selected.json: not a finished selection" in err
    assert ".part" not in err
    kept = sorted(p.relative_to(tmp / "archive").as_posix() for p in (tmp / "archive").rglob("repeat-*.json.gz"))
    assert kept == ["tiny/runs/linnerud/st/repeat-1.json.gz"]


def test_add_refuses_an_experiment_archived_under_another_configuration(setup):
    tmp, configfile, plan, results, files = setup
    archive.add(results, tmp / "archive", plan)
    other = archive._plan(write_config(tmp / "other.yaml", tiny_config(n_estimators=8)))
    with pytest.raises(ConfigError, match="archived under another configuration.*--reconfigure"):
        archive.add(results, tmp / "archive", other)
    # what only changes how results are shown does not count
    shown = tiny_config()
    shown["experiments"]["tiny"]["description"] = "new words"
    shown["experiments"]["tiny"]["max_repeats"] = 5
    archive.add(results, tmp / "archive", archive._plan(write_config(tmp / "shown.yaml", shown)))


def test_add_reconfigure_keeps_the_runs_the_new_configuration_still_gives(setup, capsys):
    """A method's parameters change (rf: 4 -> 8 trees): its archived runs go, the tuned variant's runs and tuning
    files stay, the snapshot is the new configuration's, and the refitted rf runs are archived beside them."""
    tmp, configfile, plan, results, files = setup
    archive.add(results, tmp / "archive", plan)
    other_file = write_config(tmp / "other.yaml", tiny_config(n_estimators=8))
    other = archive._plan(other_file)
    shutil.rmtree(results / "runs/tiny/linnerud/rf")
    assert main(["archive", "add", "--archive", str(tmp / "archive"), "--results", str(results), "--configfile",
                 str(other_file), "--reconfigure"]) == 0
    assert "reconfigured: 2 archived file(s) the configuration no longer gives removed" in capsys.readouterr().out
    root = tmp / "archive/tiny"
    assert not (root / "runs/linnerud/rf").exists() or not list((root / "runs/linnerud/rf").iterdir())
    assert sorted(p.name for p in (root / "runs/linnerud/st").iterdir()) == ["repeat-0.json.gz", "repeat-1.json.gz"]
    assert (root / "tuning/linnerud/st/repeat-0/selected.json.gz").exists()
    assert (root / SNAPSHOT_NAME).read_text() == archive._snapshot_text(archive.snapshot(other, "tiny"))
    # the refitted rf runs of the new configuration are archived beside the others
    fake_results(results, other)
    again = archive.add(results, tmp / "archive", other)
    assert sum("/rf/" in p for p in again.written) == 2 and not again.refused and not again.removed
    archive.check_current(tmp / "archive", other_file)            # the reports accept it as the new one's
    # a changed tuned variant takes its budget, chunks and selections along, never its candidates
    changed = tiny_config(n_estimators=8)
    changed["experiments"]["tiny"]["methods"][1]["params"]["n_estimators"] = 30
    out = archive.add(results, tmp / "archive", archive._plan(write_config(tmp / "changed.yaml", changed)),
                      reconfigure_changed=True)
    assert {Path(p).name for p in out.removed} == {"repeat-0.json.gz", "repeat-1.json.gz", "chunk-0.json.gz",
                                                   "chunk-1.json.gz", "selected.json.gz"}
    assert not list(root.glob("runs/linnerud/st/*")) and list(root.glob("tuning/linnerud/st/candidates/*"))


def test_add_reconfigure_of_a_named_experiment_needs_no_new_result(setup):
    """A configuration is switched before anything of it has run: `add --reconfigure --experiments tiny` with an
    empty results folder drops the runs the new configuration no longer gives and writes its snapshot, so that the
    repository's archive matches the configuration from the commit of the switch on."""
    tmp, configfile, plan, results, files = setup
    archive.add(results, tmp / "archive", plan)
    other = archive._plan(write_config(tmp / "other.yaml", tiny_config(n_estimators=8)))
    empty = tmp / "empty_results"
    empty.mkdir()
    assert not archive.add(empty, tmp / "archive", other).removed        # unnamed: nothing to do, nothing touched
    out = archive.add(empty, tmp / "archive", other, ["tiny"], reconfigure_changed=True)
    assert sorted(Path(p).name for p in out.removed) == ["repeat-0.json.gz", "repeat-1.json.gz"]
    assert not out.written
    root = tmp / "archive/tiny"
    assert (root / SNAPSHOT_NAME).read_text() == archive._snapshot_text(archive.snapshot(other, "tiny"))
    assert sorted(p.name for p in (root / "runs/linnerud/st").iterdir()) == ["repeat-0.json.gz", "repeat-1.json.gz"]


def test_a_shape_hint_added_to_the_registry_leaves_the_archived_runs_valid(setup):
    """A cost-model hint of the registry's shape (``labels_per_row``) decides no result: records whose spec was
    written before or after it was added stay the configuration's when the configuration is switched; a checked
    shape key (n) that differs still makes a record stale."""
    tmp, configfile, plan, results, files = setup
    archive.add(results, tmp / "archive", plan)
    root = tmp / "archive/tiny"

    def edit_shape(path, **change):
        doc = json.loads(archive.read_archived(path))
        doc["spec"]["expected_shape"].update(change)
        path.write_bytes(gzip.compress(json.dumps(doc).encode(), mtime=0))

    st = sorted((root / "runs/linnerud/st").iterdir())
    edit_shape(st[0], labels_per_row=1.5)
    edit_shape(st[1], n=999)
    assert archive._spec_difference({"expected_shape": {"n": 20, "labels_per_row": 1.5}},
                                    {"expected_shape": {"n": 20}}) == []
    other = archive._plan(write_config(tmp / "other.yaml", tiny_config(n_estimators=8)))
    out = archive.add(tmp / "empty", tmp / "archive", other, ["tiny"], reconfigure_changed=True)
    removed = sorted(Path(p).relative_to(root).as_posix() for p in out.removed)
    # the stale st record takes its (dataset, variant)'s tuning files along, as any stale record does
    assert [r for r in removed if r.startswith("runs/")] == [
        "runs/linnerud/rf/repeat-0.json.gz", "runs/linnerud/rf/repeat-1.json.gz", "runs/linnerud/st/repeat-1.json.gz"]
    assert st[0].exists() and not st[1].exists()


def fake_data(root: Path, age_s: float = 60) -> list[Path]:
    paths = [root / "data/prepared/linnerud.npz", root / "data/splits/linnerud/demo.npz",
             root / "data/splits/linnerud/demo.json"]
    for p in paths:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("x")
        os.utime(p, (p.stat().st_mtime - age_s,) * 2)
    return paths


def test_restore_puts_back_the_bytes_in_workflow_order(setup):
    tmp, configfile, plan, results, files = setup
    archive.add(results, tmp / "archive", plan)
    originals = {k: p.read_bytes() for k, p in files.items()}
    shutil.rmtree(results)
    data = fake_data(tmp)
    out, stale = archive.restore(tmp / "archive", results, plan, data=tmp / "data")
    assert len(out.written) == 11 and not stale
    assert {k: p.read_bytes() for k, p in files.items()} == originals
    mtime = {k: p.stat().st_mtime for k, p in files.items()}
    budget_level = (results / "tuning/tiny/linnerud/st/candidates/abc.json").stat().st_mtime
    assert max(p.stat().st_mtime for p in data) < budget_level < mtime["chunk-0"] < mtime["selected-0"] \
        < mtime["record-st-0"]
    again, _ = archive.restore(tmp / "archive", results, plan, data=tmp / "data")
    assert not again.written and again.unchanged == 11


def test_restore_leaves_out_records_the_configuration_now_runs_differently(setup):
    tmp, configfile, plan, results, files = setup
    archive.add(results, tmp / "archive", plan)
    shutil.rmtree(results)
    fake_data(tmp)
    changed = archive._plan(write_config(tmp / "changed.yaml", tiny_config(n_estimators=8)))
    out, stale = archive.restore(tmp / "archive", results, changed, data=tmp / "data")
    assert sorted(stale) == [f"results/runs/tiny/linnerud/rf/repeat-{r}.json" for r in (0, 1)]
    assert not files["record-rf-0"].exists() and files["record-st-0"].exists() and files["selected-1"].exists()


def test_a_metric_added_to_the_scores_refits_the_records_on_their_archived_tuning(setup):
    """Scoring one more metric changes every record's specification (its ``metrics``) but not what its tuning
    chose (the selection reads ``tune.metric``): restore leaves the records out and puts back the budget, chunks
    and selections, and reconfigure removes the records alone, so only the fits run again."""
    tmp, configfile, plan, results, files = setup
    archive.add(results, tmp / "archive", plan)
    old_record = files["record-st-0"].read_bytes()
    scored = tiny_config()
    scored["experiments"]["tiny"]["metrics"] = ["macro_r2", "half_macro_r2"]
    scored_plan = archive._plan(write_config(tmp / "scored.yaml", scored))
    shutil.rmtree(results)
    fake_data(tmp)
    out, stale = archive.restore(tmp / "archive", results, scored_plan, data=tmp / "data")
    assert sorted(stale) == [f"results/runs/tiny/linnerud/{v}/repeat-{r}.json" for v in ("rf", "st") for r in (0, 1)]
    assert not any(files[f"record-{v}-{r}"].exists() for v in ("rf", "st") for r in (0, 1))
    assert all(files[f"{kind}-{r}"].exists() for kind in ("selected", "chunk") for r in (0, 1))
    # the tuning metric itself is no scoring-only change: the selections go with the records
    retuned = tiny_config()
    retuned["experiments"]["tiny"]["metrics"] = ["macro_r2", "half_macro_r2"]
    retuned["experiments"]["tiny"]["methods"][1]["tune"] = {**TUNE, "metric": "half_macro_r2"}
    shutil.rmtree(results)
    archive.restore(tmp / "archive", results, archive._plan(write_config(tmp / "retuned.yaml", retuned)),
                    data=tmp / "data")
    assert not files["selected-0"].exists() and not files["chunk-0"].exists()
    assert (results / "tuning/tiny/linnerud/st/candidates/abc.json").exists()    # candidates are always safe
    out = archive.add(tmp / "empty", tmp / "archive", scored_plan, ["tiny"], reconfigure_changed=True)
    root = tmp / "archive/tiny"
    assert sorted(Path(p).relative_to(root).as_posix() for p in out.removed) == [
        f"runs/linnerud/{v}/repeat-{r}.json.gz" for v in ("rf", "st") for r in (0, 1)]
    assert (root / "tuning/linnerud/st/repeat-1/selected.json.gz").exists()
    # a record of the old scoring left in a results folder is refused with what to do about it
    with pytest.raises(DataError, match="scored with other metrics .* differs in metrics.*refits it on its tuning"):
        archive._check_file("record", "runs/tiny/linnerud/st/repeat-0.json", old_record, scored_plan, "tiny")


def test_a_method_revision_refits_the_records_and_their_tuning_on_the_archived_budget(setup, monkeypatch):
    """A fix that changes a method's results for some parameters (its ``revision``) enters the specification of the
    jobs whose parameters or candidates it names, and the experiment's snapshot: the archive is no longer the
    configuration's, restore leaves the records, chunks and selections of those jobs out but puts back their budget
    (it times the fits), and reconfigure removes the same files; the other methods' runs stay."""
    from dataclasses import replace

    from forestbench.workflow import methods
    from forestbench.workflow.experiments import Job

    tmp, configfile, plan, results, files = setup
    write_json(results / "tuning/tiny/linnerud/st/budget.json", {"caps": {"x": {"n_stages_max": 3}}})
    archive.add(results, tmp / "archive", plan)
    old_record = files["record-st-0"].read_bytes()
    monkeypatch.setitem(methods.METHODS, "st_gbrt", replace(
        methods.METHODS["st_gbrt"], revision=lambda p: "fix-1" if p.get("learning_rate") == 0.5 else None))
    revised = archive._plan(configfile)
    assert revised.run_spec(Job("tiny", "linnerud", "st", 0))["revisions"] == ["fix-1"]  # a candidate has it
    assert "revisions" not in revised.run_spec(Job("tiny", "linnerud", "rf", 0))
    with pytest.raises(ConfigError, match="a method revision changed since"):
        archive.check_current(tmp / "archive", configfile)
    shutil.rmtree(results)
    fake_data(tmp)
    out, stale = archive.restore(tmp / "archive", results, revised, data=tmp / "data")
    assert sorted(stale) == [f"results/runs/tiny/linnerud/st/repeat-{r}.json" for r in (0, 1)]
    assert all(files[f"record-rf-{r}"].exists() for r in (0, 1))
    assert not any(files[f"{kind}-{r}"].exists() for kind in ("record-st", "selected", "chunk") for r in (0, 1))
    assert (results / "tuning/tiny/linnerud/st/budget.json").exists()
    with pytest.raises(DataError, match=r"fitted before a revision of its method \(fix-1; .*differs in revisions"):
        archive._check_file("record", "runs/tiny/linnerud/st/repeat-0.json", old_record, revised, "tiny")
    out = archive.add(tmp / "empty", tmp / "archive", revised, ["tiny"], reconfigure_changed=True)
    root = tmp / "archive/tiny"
    assert sorted(Path(p).relative_to(root).as_posix() for p in out.removed) == sorted(
        [f"runs/linnerud/st/repeat-{r}.json.gz" for r in (0, 1)]
        + [f"tuning/linnerud/st/repeat-{r}/{name}" for r in (0, 1) for name in ("chunk-0.json.gz", "chunk-1.json.gz",
                                                                                "selected.json.gz")])
    assert (root / "tuning/linnerud/st/budget.json.gz").exists()
    assert json.loads((root / SNAPSHOT_NAME).read_text())["revisions"] == {"st": ["fix-1"]}
    archive.check_current(tmp / "archive", configfile)


def test_restore_names_records_whose_tuning_files_are_not_archived(setup):
    """A record whose selection is not archived is retuned and refitted (named); one whose chunks alone are
    missing is not: its selection stands (the chunks of fitted splits are never committed)."""
    tmp, configfile, plan, results, files = setup
    (results / "tuning/tiny/linnerud/st/repeat-1/chunk-1.json").unlink()
    files["selected-0"].unlink()
    archive.add(results, tmp / "archive", plan)
    shutil.rmtree(results)
    fake_data(tmp)
    out, _ = archive.restore(tmp / "archive", results, plan, data=tmp / "data")
    assert out.incomplete == ["results/runs/tiny/linnerud/st/repeat-0.json "
                              "(lacks tuning/tiny/linnerud/st/repeat-0/selected.json)"]


def test_a_fitted_split_restored_without_its_chunks_keeps_its_selection(setup):
    """The repository keeps the selections and records of fitted splits, not their candidate chunks: such a split's
    selection stands, so the workflow neither tunes nor refits it. A split with a chunk file on disk, one without
    its record, or one whose record is older than its selection is tuned as usual."""
    from forestbench.workflow.experiments import Job

    tmp, configfile, plan, results, files = setup
    archive.add(results, tmp / "archive", plan)
    for chunk in (tmp / "archive/tiny/tuning").rglob("chunk-*.json.gz"):
        chunk.unlink()                                     # as a clone of the repository has it (.gitignore)
    shutil.rmtree(results)
    fake_data(tmp)
    out, _ = archive.restore(tmp / "archive", results, plan, data=tmp / "data")
    assert out.incomplete == []
    jobs = [Job("tiny", "linnerud", "st", r) for r in (0, 1)]
    assert [plan.selection_stands(job, tmp) for job in jobs] == [True, True]
    write_json(results / "tuning/tiny/linnerud/st/repeat-0/chunk-1.json", {"chunk": 1, "results": []})
    files["record-st-1"].unlink()
    assert [plan.selection_stands(job, tmp) for job in jobs] == [False, False]
    (results / "tuning/tiny/linnerud/st/repeat-0/chunk-1.json").unlink()
    write_json(files["record-st-1"], {})
    os.utime(files["selected-1"], (files["record-st-1"].stat().st_mtime + 5,) * 2)   # selected again since
    assert [plan.selection_stands(job, tmp) for job in jobs] == [True, False]
    assert not plan.selection_stands(Job("tiny", "linnerud", "rf", 0), tmp)            # not tuned


def test_a_selection_without_chunks_is_refused_with_what_to_do(tmp_path):
    from forestbench.workflow.dag_selection import select

    spec = {"experiment": "e", "dataset": "d", "variant": "v", "repeat": 0, "tune": {}}
    with pytest.raises(DataError, match=r"e/d/v repeat 0: no candidate chunk file .* delete .*selected.json"):
        select(spec, [], tmp_path / "selected.json")
    assert not (tmp_path / "selected.json").exists()


def test_restore_refuses_before_the_data_is_prepared(setup):
    tmp, configfile, plan, results, files = setup
    archive.add(results, tmp / "archive", plan)
    shutil.rmtree(results)
    with pytest.raises(DataError, match=r"data/prepared/linnerud\.npz.*--until split"):
        archive.restore(tmp / "archive", results, plan, data=tmp / "data")
    assert not results.exists()
    out, _ = archive.restore(tmp / "archive", results, plan, data=tmp / "data", allow_missing_data=True)
    assert len(out.written) == 11



def test_restore_of_some_datasets_needs_only_their_data(setup, capsys):
    tmp, configfile, plan, results, files = setup
    archive.add(results, tmp / "archive", plan)
    shutil.rmtree(results)
    # another dataset's run: nothing of linnerud is restored, so its missing data does not matter
    out, _ = archive.restore(tmp / "archive", results, plan, data=tmp / "data", datasets=["emotions"])
    assert not out.written and not results.exists()
    with pytest.raises(DataError, match="--datasets restores only"):
        archive.restore(tmp / "archive", results, plan, data=tmp / "data", datasets=["linnerud"])
    fake_data(tmp)
    rc = main(["archive", "restore", "--results", str(results), "--archive", str(tmp / "archive"),
               "--configfile", str(configfile), "--data", str(tmp / "data"), "--datasets", "linnerud"])
    assert rc == 0 and "11 file(s) restored" in capsys.readouterr().out


def write_reference(tmp: Path) -> Path:
    ref = tmp / "reference"
    ref.mkdir()
    pd.DataFrame({"dataset": ["linnerud", "linnerud"], "dataset_id": ["linnerud", "linnerud"],
                  "method_id": ["RF", "ST"], "metric": ["macro_r2", "macro_r2"], "value": ["0.505", "0.9"],
                  "std": ["0.01", "0.01"]}).to_csv(ref / "ref.csv", index=False)
    return ref


def test_report_rebuilds_tables_and_reports_from_the_archive_alone(setup):
    tmp, configfile, plan, results, files = setup
    archive.add(results, tmp / "archive", plan)
    expected = collect(sorted(results.glob("runs/tiny/*/*/repeat-*.json")), experiment="tiny")
    shutil.rmtree(results)
    ref = write_reference(tmp)
    rc = main(["archive", "report", "--archive", str(tmp / "archive"), "--configfile", str(configfile),
               "--reference-dir", str(ref), "--out", str(tmp / "out")])
    assert rc == 0
    got = pd.read_csv(tmp / "out/tiny/scores.csv")
    pd.testing.assert_frame_equal(got, pd.read_csv(_csv(expected, tmp / "expected.csv")))
    assert (tmp / "out/tiny/report/manifest.json").exists() and (tmp / "out/report/index.html").exists()
    repro = pd.read_csv(tmp / "out/tiny/report/reproduction.csv")
    assert sorted(repro["status"]) == ["OUT OF TOLERANCE", "ok"]


def test_report_and_readme_name_a_damaged_archived_record_and_write_nothing(setup, capsys):
    # the tables are read from the compressed records in place: a damaged one is named, with what to do, and no
    # report or README table is written from the rest
    tmp, configfile, plan, results, files = setup
    archive.add(results, tmp / "archive", plan)
    damaged = tmp / "archive/tiny/runs/linnerud/rf/repeat-0.json.gz"
    damaged.write_bytes(damaged.read_bytes()[:20])
    ref = write_reference(tmp)
    rc = main(["archive", "report", "--archive", str(tmp / "archive"), "--configfile", str(configfile),
               "--reference-dir", str(ref), "--out", str(tmp / "out")])
    err = capsys.readouterr().err
    assert rc != 0 and "repeat-0.json.gz" in err and "git checkout" in err
    assert not (tmp / "out/tiny/scores.csv").exists() and not (tmp / "out/report").exists()


def _csv(frame, path):
    frame.to_csv(path, index=False)
    return path


def test_readme_table_counts_the_claims_the_sweep_reports_check(tmp_path):
    """A figure without published numbers has its text's claims checked by its sweep report; the README's table
    counts their verdicts from the archive (every point of the curve scores as the baseline here)."""
    config = tiny_config()
    config["experiments"] = {"sweepy": {
        "datasets": ["linnerud"], "protocol": "demo", "metrics": ["macro_r2"], "max_repeats": 2,
        "source": "a text's Fig 1",
        "methods": [{"name": "rf", "method": "sklearn_random_forest", "params": {"n_estimators": 4}},
                    {"name": "rf-t{n_estimators}", "method": "sklearn_random_forest",
                     "grid": {"n_estimators": [2, 3]}}],
        "reports": [{"kind": "sweep", "metric": "macro_r2", "x": "param.n_estimators",
                     "matches": [{"curve": "rf-t", "baseline": "rf", "claimed": 2},
                                 {"curve": "rf-t", "baseline": "rf", "claimed": 30},
                                 {"curve": "rf-t", "baseline": "rf"}],
                     "against_curve": {"baseline": "rf", "curves": ["rf-t"], "beats_best": False}}]}}
    configfile = write_config(tmp_path / "sweepy.yaml", config)
    plan = archive._plan(configfile)
    fake_results(tmp_path / "results", plan)
    archive.add(tmp_path / "results", tmp_path / "archive", plan)
    experiments = config["experiments"]
    rows = archive.claim_rows(tmp_path / "archive", experiments, tmp_path / "reference")
    got = {r.claim: (r.checked, r.agrees, r.differs, r.unjudged) for r in rows}
    # matched from n_estimators = 2: the claim of 2 agrees, 30 differs, and an entry without a claim is none
    assert got == {"matches": (2, 1, 1, 0), "beats_best": (1, 1, 0, 0)}
    (tmp_path / "README.md").write_text("# Choices\n")
    table = archive.readme_table(tmp_path / "archive", experiments, tmp_path / "reference",
                                 tmp_path / "README.md", "sweepy.yaml")
    assert "| a text's Fig 1 | `sweepy` | `matches`: " in table and " | 2 | 1 | 1 | 0 |" in table
    # a point under way leaves the curve unjudged
    next((tmp_path / "archive/sweepy/runs/linnerud/rf-t3").glob("repeat-1.json.gz")).unlink()
    rows = archive.claim_rows(tmp_path / "archive", experiments, tmp_path / "reference")
    assert {r.claim: r.unjudged for r in rows}["beats_best"] == 1
    # a curve not run at all: its claims are unjudged, an entry without a claim is still none
    shutil.rmtree(tmp_path / "archive/sweepy/runs/linnerud/rf-t2")
    shutil.rmtree(tmp_path / "archive/sweepy/runs/linnerud/rf-t3")
    rows = archive.claim_rows(tmp_path / "archive", experiments, tmp_path / "reference")
    assert {r.claim: (r.checked, r.unjudged) for r in rows} == {"matches": (2, 2), "beats_best": (1, 1)}


def test_readme_table_counts_explained_misses_and_checks_headings(setup):
    tmp, configfile, plan, results, files = setup
    ref = write_reference(tmp)
    config_readme = tmp / "README_config.md"
    config_readme.write_text("# Choices\n\n## Boosting\n\nst is tuned on few rows.\n")
    empty = archive.readme_table(tmp / "archive", {}, ref, config_readme, "tiny.yaml")
    assert "The archive holds no results yet." in empty
    archive.add(results, tmp / "archive", plan)
    experiments = tiny_config()["experiments"]
    table = archive.readme_table(tmp / "archive", experiments, ref, config_readme, "tiny.yaml")
    # rf: 0.505 ± 0.01 published, ours 0.505 +- 0.005: within; st: 0.6 against 0.9: out, not explained
    assert "| ref | `tiny` | published scores | 4 run records | 2 | 2 | 1 | 1 | 0 |" in table
    # and the misses the 1-std rule gives by chance alone, from the two cells' stds and repeats
    chance = re.search(r"\| 2 \| 2 \| 1 \| 1 \| 0 \| (\d+\.\d) \|", table)
    assert chance and 0.0 < float(chance.group(1)) < 2.0, table
    assert "| out of tolerance | explained | out by chance |" in table
    experiments["tiny"]["reference"]["explained"] = [{"dataset": "linnerud", "variant": "st", "see": "Boosting"}]
    table = archive.readme_table(tmp / "archive", experiments, ref, config_readme, "tiny.yaml")
    assert "| 2 | 2 | 1 | 1 | 1 |" in table
    experiments["tiny"]["reference"]["explained"] = [{"dataset": "linnerud", "variant": "st", "see": "Nowhere"}]
    with pytest.raises(ConfigError, match="config/README.md has no heading 'Nowhere'"):
        archive.readme_table(tmp / "archive", experiments, ref, config_readme, "tiny.yaml")
    experiments["tiny"]["reference"]["explained"] = [{"datset": "linnerud", "see": "Boosting"}]
    with pytest.raises(ConfigError, match="datset is not a column"):
        archive.readme_table(tmp / "archive", experiments, ref, config_readme, "tiny.yaml")
    # one published table compared twice (a variant run another way against the same cells): the second row says
    # how its variants were run
    experiments["tiny"]["reference"] = [
        {"table": "ref", "metric": "macro_r2", "tolerance_std": 1, "methods": {"rf": "RF"}},
        {"table": "ref", "metric": "macro_r2", "tolerance_std": 1, "methods": {"st": "RF"},
         "run_protocol": "boosted  instead\n of a forest"}]
    table = archive.readme_table(tmp / "archive", experiments, ref, config_readme, "tiny.yaml")
    assert "| ref | `tiny` | published scores | 4 run records | 1 | 1 | 1 | 0 | 0 |" in table
    assert "| ref | `tiny` | published scores; run: boosted instead of a forest | 4 run records | 1 | 1 | 0 | 1 | 0 |" \
        in table


def test_readme_table_explains_misses_that_the_reading_of_record_reproduces(setup):
    """``explained_by``: a miss is explained where another experiment (the reading of record) has the same
    published cell within tolerance; a cell out there too, another dataset, or that experiment not archived yet
    explains nothing."""
    tmp, configfile, plan, results, files = setup
    ref = write_reference(tmp)
    config_readme = tmp / "README_config.md"
    config_readme.write_text("# Choices\n\n## Folds\n\nThe published folds are unshuffled.\n")
    config = tiny_config()
    record = json.loads(json.dumps(config["experiments"]["tiny"]))
    record["methods"][1].pop("tune")
    config["experiments"] = {"tiny_record": record}
    plan_record = archive._plan(write_config(tmp / "record.yaml", config))
    archive.add(results, tmp / "archive", plan)          # tiny: rf 0.505 within, st 0.605 against 0.9 out
    experiments = {"tiny": tiny_config()["experiments"]["tiny"], "tiny_record": record}
    by = {"experiment": "tiny_record", "see": "Folds"}
    experiments["tiny"]["reference"]["explained_by"] = by

    def row(table, name):      # the experiment's row up to its explained count (the chance column cut off)
        return next(line for line in table.splitlines() if f"| `{name}` |" in line).rsplit("|", 2)[0] + "|"

    table = archive.readme_table(tmp / "archive", experiments, ref, config_readme, "tiny.yaml")
    assert row(table, "tiny").endswith("| 2 | 2 | 1 | 1 | 0 |")      # the reading of record is not archived yet
    # the reading of record: st 0.9 (within 0.9 ± 0.01), rf 0.8 (out)
    fake_results(tmp / "results_record", plan_record, score=0.795)
    archive.add(tmp / "results_record", tmp / "archive", plan_record)
    table = archive.readme_table(tmp / "archive", experiments, ref, config_readme, "tiny.yaml")
    assert row(table, "tiny").endswith("| 2 | 2 | 1 | 1 | 1 |")
    assert row(table, "tiny_record").endswith("| 2 | 2 | 1 | 1 | 0 |")
    # a list of readings (each of its own experiment): a cell is explained when any of them reproduces it
    elsewhere = {"experiment": "tiny_record", "see": "Folds", "datasets": ["emotions"]}
    experiments["tiny"]["reference"]["explained_by"] = [elsewhere]
    table = archive.readme_table(tmp / "archive", experiments, ref, config_readme, "tiny.yaml")
    assert row(table, "tiny").endswith("| 2 | 2 | 1 | 1 | 0 |")
    for readings in ([elsewhere, by], [by, elsewhere]):
        experiments["tiny"]["reference"]["explained_by"] = readings
        validation.validate({"experiments": experiments}, "config", "tiny.yaml")
        table = archive.readme_table(tmp / "archive", experiments, ref, config_readme, "tiny.yaml")
        assert row(table, "tiny").endswith("| 2 | 2 | 1 | 1 | 1 |")
    experiments["tiny"]["reference"]["explained_by"] = [by, {"experiment": "nowhere", "see": "Folds"}]
    with pytest.raises(ConfigError, match=r"explained_by\[1\]\.experiment: no experiment 'nowhere'"):
        archive.readme_table(tmp / "archive", experiments, ref, config_readme, "tiny.yaml")
    experiments["tiny"]["reference"]["explained_by"] = [by, {"experiment": "tiny_record"}]
    with pytest.raises(ConfigError, match=r"tiny\.yaml.*explained_by"):
        validation.validate({"experiments": experiments}, "config", "tiny.yaml")
    experiments["tiny"]["reference"]["explained_by"] = by
    by["datasets"] = ["emotions"]
    table = archive.readme_table(tmp / "archive", experiments, ref, config_readme, "tiny.yaml")
    assert row(table, "tiny").endswith("| 2 | 2 | 1 | 1 | 0 |")
    # the record's st out of tolerance too: nothing to explain by
    fake_results(tmp / "results_record", plan_record, score=0.5)
    shutil.rmtree(tmp / "archive" / "tiny_record")
    archive.add(tmp / "results_record", tmp / "archive", plan_record)
    del by["datasets"]
    table = archive.readme_table(tmp / "archive", experiments, ref, config_readme, "tiny.yaml")
    assert row(table, "tiny").endswith("| 2 | 2 | 1 | 1 | 0 |")
    experiments["tiny"]["reference"]["explained_by"] = {"experiment": "nowhere", "see": "Folds"}
    with pytest.raises(ConfigError, match="no experiment 'nowhere'"):
        archive.readme_table(tmp / "archive", experiments, ref, config_readme, "tiny.yaml")
    experiments["tiny"]["reference"]["explained_by"] = {"experiment": "tiny_record", "see": "Elsewhere"}
    with pytest.raises(ConfigError, match="no heading 'Elsewhere'"):
        archive.readme_table(tmp / "archive", experiments, ref, config_readme, "tiny.yaml")


def test_readme_command_writes_and_checks_the_marked_table(setup, capsys):
    tmp, configfile, plan, results, files = setup
    readme = tmp / "README.md"
    readme.write_text(f"intro\n{archive.TABLE_START}\nold\n{archive.TABLE_END}\nrest\n")
    args = ["archive", "readme", "--archive", str(tmp / "archive"), "--configfile", str(configfile),
            "--reference-dir", str(write_reference(tmp)), "--config-readme", str(readme), "--readme", str(readme)]
    assert main(args + ["--check"]) == 1
    assert main(args) == 0
    assert "holds no results yet" in readme.read_text() and readme.read_text().endswith(f"{archive.TABLE_END}\nrest\n")
    assert main(args + ["--check"]) == 0
    archive.add(results, tmp / "archive", plan)
    assert main(args + ["--check"]) == 1



def test_add_rewrites_the_readme_table_beside_the_archive(setup, capsys):
    """`archive add` leaves the README beside the archive current (a commit of archive/ and README.md then passes
    the table's test), unless --no-readme, or the README's table was generated from another configuration."""
    tmp, configfile, plan, results, files = setup
    readme = tmp / "README.md"
    ref = write_reference(tmp)
    readme_args = ["archive", "readme", "--archive", str(tmp / "archive"), "--configfile", str(configfile),
                   "--reference-dir", str(ref), "--config-readme", str(readme), "--readme", str(readme)]
    readme.write_text(f"intro\n{archive.TABLE_START}\nold\n{archive.TABLE_END}\nrest\n")
    assert main(readme_args) == 0
    before = readme.read_text()
    add_args = ["archive", "add", "--results", str(results), "--archive", str(tmp / "archive"), "--configfile",
                str(configfile), "--reference-dir", str(ref), "--config-readme", str(readme)]
    assert main(add_args + ["--no-readme"]) == 0
    assert readme.read_text() == before and main(readme_args + ["--check"]) == 1
    assert main(add_args) == 0
    assert "reproduction table updated" in capsys.readouterr().out
    assert main(readme_args + ["--check"]) == 0 and readme.read_text() != before
    # a table generated from another configuration is left alone, with the command that rewrites it
    other = readme.read_text().replace(f"--configfile {configfile}`", "--configfile config/other.yaml`")
    readme.write_text(other)
    assert main(add_args) == 0
    assert readme.read_text() == other and "not generated from" in capsys.readouterr().out


def test_report_and_readme_refuse_results_of_another_configuration(setup, capsys):
    """Results archived under other parameters are not shown as the configuration's (a table would mix them)."""
    tmp, configfile, plan, results, files = setup
    archive.add(results, tmp / "archive", plan)
    changed = write_config(tmp / "changed.yaml", tiny_config(n_estimators=8))
    ref = write_reference(tmp)
    for command in (["report", "--reference-dir", str(ref), "--out", str(tmp / "out")],
                    ["readme", "--reference-dir", str(ref), "--config-readme", str(tmp / "README.md"),
                     "--readme", str(tmp / "README.md"), "--check"]):
        rc = main(["archive", command[0], "--archive", str(tmp / "archive"), "--configfile", str(changed),
                   *command[1:]])
        assert rc != 0
        assert "tiny/experiment.json: archived under another configuration than" in capsys.readouterr().err
    assert not (tmp / "out").exists()
    archive.check_current(tmp / "archive", configfile)                    # the configuration it was run with


def test_the_repository_archive_holds_the_thesis_configuration_results():
    archive.check_current(REPO / "archive", REPO / "config/thesis.yaml")

def test_the_readme_table_is_what_the_archive_gives():
    """README.md's reproduction table is generated from archive/ (read from the repository only)."""
    experiments = yaml.safe_load((REPO / "config/thesis.yaml").read_text())["experiments"]
    expected = archive.readme_table(REPO / "archive", experiments, REPO / "config/reference",
                                    REPO / "config/README.md", "config/thesis.yaml")
    readme = REPO / "README.md"
    assert archive.current_table(readme.read_text(encoding="utf-8"), readme) == expected, (
        "README.md's archive table is out of date: python -m forestbench archive readme")
    assert "table_6_1_chain" in expected


def test_imported_chain_table_rebuilds_the_published_run_reproduction(tmp_path):
    plan = archive._plan(REPO / "config/thesis.yaml")
    archive.import_scores(CHAIN / "scores.csv", tmp_path / "archive", plan, "table_6_1_chain")
    experiments = yaml.safe_load((REPO / "config/thesis.yaml").read_text())["experiments"]
    archive.report(tmp_path / "archive", experiments, REPO / "config/reference", tmp_path / "out")
    built = tmp_path / "out/table_6_1_chain/report"
    name = "tables/01_table_macro_r2.csv"
    assert (built / name).read_bytes() == (CHAIN / name).read_bytes(), name
    # the reports have since gained columns (the relative difference; the printed p beside a re-tested one): every
    # column of the kept file, cell for cell
    for name in ("reproduction.csv", "reproduction_2.csv"):
        kept = pd.read_csv(CHAIN / name, dtype=str, keep_default_na=False)
        rebuilt = pd.read_csv(built / name, dtype=str, keep_default_na=False)
        pd.testing.assert_frame_equal(rebuilt[list(kept.columns)], kept, obj=name)


def test_import_refuses_a_table_of_another_configuration(tmp_path):
    plan = archive._plan(REPO / "config/thesis.yaml")
    frame = pd.read_csv(CHAIN / "scores.csv")
    frame.loc[frame["variant"] == "gbmort", "seed"] = 1
    frame.to_csv(tmp_path / "scores.csv", index=False)
    with pytest.raises(DataError, match=r"gbmort repeat 0: seed \[1\] is not the configuration's"):
        archive.import_scores(tmp_path / "scores.csv", tmp_path / "archive", plan, "table_6_1_chain")
    assert not (tmp_path / "archive").exists()


# ------------------------------------------------------------------------------------------ with Snakemake
E2E = {
    "datasets_registry": "config/datasets.yaml", "seed": 0,
    "experiments": {
        "tiny_dag": {"datasets": ["linnerud"], "protocol": "demo", "metrics": ["macro_r2"], "max_repeats": 1,
                     "methods": [
                         {"name": "rf", "method": "sklearn_random_forest", "params": {"n_estimators": 3}},
                         {"name": "st", "method": "st_gbrt", "params": {"n_estimators": 10},
                          "tune": {**TUNE, "chunk": 1, "budget": {
                              "multiple": 50, "reference": {"method": "gbmort", "params": {"max_leaf_nodes": 2}}}}}]},
    },
}


def _snakemake(workdir, env, *args):
    cmd = [sys.executable, "-m", "snakemake", "--cores", "2", "--configfile", "tiny.yaml", *args]
    proc = subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    return proc.stdout + proc.stderr


def _planned(output: str, rule: str) -> int:
    match = re.search(rf"^{rule}\s+(\d+)\s*$", output, flags=re.M)
    return int(match.group(1)) if match else 0


def _forestbench(workdir, env, *args):
    proc = subprocess.run([sys.executable, "-m", "forestbench", *args], cwd=workdir, env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


@pytest.mark.e2e
def test_a_restored_archive_leaves_snakemake_only_the_missing_runs(workflow_dir, snakemake_env):
    (workflow_dir / "tiny.yaml").write_text(yaml.safe_dump(E2E))
    _snakemake(workflow_dir, snakemake_env)
    _forestbench(workflow_dir, snakemake_env, "archive", "add", "--configfile", "tiny.yaml")
    for name in ("results", ".snakemake", "data"):
        shutil.rmtree(workflow_dir / name)
    chunks = list((workflow_dir / "archive").rglob("chunk-*.json.gz"))
    assert chunks and all(PENDING_NAME not in c.parts for c in chunks)
    for chunk in chunks:                 # a clone of the repository has no chunk of a fitted split (.gitignore)
        chunk.unlink()
    more = {**E2E, "experiments": {"tiny_dag": {**E2E["experiments"]["tiny_dag"], "max_repeats": 2}}}
    (workflow_dir / "tiny.yaml").write_text(yaml.safe_dump(more))     # a second split now belongs to the run
    _snakemake(workflow_dir, snakemake_env, "--until", "split")
    _forestbench(workflow_dir, snakemake_env, "archive", "restore", "--configfile", "tiny.yaml")
    dry = _snakemake(workflow_dir, snakemake_env, "-n")
    # only repeat 1 (not archived) is fitted and tuned; the budget and repeat 0 come from the archive
    assert _planned(dry, "fit") == 2 and _planned(dry, "select") == 1 and _planned(dry, "tune") == 2
    assert _planned(dry, "budget") == 0 and _planned(dry, "prepare") == 0
    assert re.findall(r"output: results/runs/tiny_dag/linnerud/\w+/repeat-(\d)\.json", dry) == ["1", "1"]
