import pytest
import yaml

from forestbench.errors import ConfigError
from forestbench.experiments import Plan, expand_variants, load_plan


def _config(**experiment):
    exp = {"datasets": ["yeast"], "protocol": "demo", "metrics": ["lrap"],
           "methods": [{"name": "rf", "method": "sklearn_random_forest", "params": {"n_estimators": 5}}]}
    exp.update(experiment)
    return {"experiments": {"e": exp}}


def test_default_configs_validate_and_expand(repo_root, monkeypatch):
    monkeypatch.chdir(repo_root)
    plan = load_plan(["config/config.yaml"])
    assert plan.jobs(), "the default suite has jobs"
    for name, exp in plan.experiments.items():
        assert exp.datasets and exp.variants


def test_unknown_key_is_named(repo_root, monkeypatch):
    monkeypatch.chdir(repo_root)
    cfg = _config(metricz=["lrap"])
    with pytest.raises(ConfigError, match=r"experiments\.e: unknown key\(s\) 'metricz'"):
        Plan(cfg, source="my.yaml")
    cfg = _config()
    cfg["experiments"]["e"]["methods"][0]["paramz"] = {}
    with pytest.raises(ConfigError, match=r"my.yaml: experiments\.e\.methods\.0: unknown key\(s\) 'paramz'"):
        Plan(cfg, source="my.yaml")


def test_bad_references_are_named(repo_root, monkeypatch):
    monkeypatch.chdir(repo_root)
    with pytest.raises(ConfigError, match="dataset 'yeastt' is not in the registry"):
        Plan(_config(datasets=["yeastt"]))
    with pytest.raises(ConfigError, match="dataset yeast: no protocol 'nope'"):
        Plan(_config(protocol="nope"))
    with pytest.raises(ConfigError, match="unknown method 'rff'"):
        Plan(_config(methods=[{"method": "rff"}]))


def test_grid_expansion_names_and_select(repo_root, monkeypatch):
    monkeypatch.chdir(repo_root)
    variants = expand_variants("e", [{"name": "rf-q{n_components}", "method": "sklearn_random_forest",
                                      "params": {"n_estimators": 3}, "grid": {"n_components": [1, "ln_d", 1.0]}}])
    assert [v.name for v in variants] == ["rf-q1", "rf-qln_d", "rf-q1.0"]
    assert variants[1].params == {"n_estimators": 3, "n_components": "ln_d"}
    auto = expand_variants("e", [{"method": "sklearn_random_forest", "grid": {"max_depth": [2, 3]}}])
    assert [v.name for v in auto] == ["sklearn_random_forest-max_depth=2", "sklearn_random_forest-max_depth=3"]
    with pytest.raises(ConfigError, match="both named 'x'"):
        expand_variants("e", [{"name": "x", "method": "sklearn_random_forest"}] * 2)
    cfg = _config(datasets=["yeast", "sf2"], metrics=["lrap"])
    cfg["select"] = {"datasets": ["yeast"]}
    cfg["max_repeats"] = 2
    plan = Plan(cfg)
    assert {(j.dataset, j.repeat) for j in plan.jobs()} == {("yeast", 0), ("yeast", 1)}


def test_seeds_are_deterministic_and_shared_across_variants(repo_root, monkeypatch):
    monkeypatch.chdir(repo_root)
    cfg = _config(methods=[{"name": "a", "method": "sklearn_random_forest"},
                           {"name": "b", "method": "sklearn_extra_trees"}])
    jobs = Plan(cfg).jobs()
    specs = [Plan(cfg).run_spec(j) for j in jobs]
    by = {(s["variant"], s["repeat"]): s["seed"] for s in specs}
    assert by[("a", 0)] == by[("b", 0)] != by[("a", 1)]
    assert specs == [Plan(cfg).run_spec(j) for j in jobs]


def test_planned_methods_are_skipped_and_reported(repo_root, monkeypatch):
    from forestbench import methods

    monkeypatch.chdir(repo_root)
    monkeypatch.setitem(methods.PLANNED, "future_boosting", "not written yet")
    cfg = _config(methods=[{"name": "rf", "method": "sklearn_random_forest"},
                           {"name": "gb", "method": "future_boosting"}])
    plan = Plan(cfg)
    assert {j.variant for j in plan.jobs()} == {"rf"}
    assert plan.experiments["e"].pending == {"gb": "method 'future_boosting' is not implemented yet (not written yet)"}
    assert any("variant gb is skipped" in line for line in plan.describe())
    with pytest.raises(ConfigError, match="planned but not implemented yet"):
        methods.get_method("future_boosting")


def test_collect_keeps_only_records_of_the_current_configuration_data_and_packages(repo_root, monkeypatch,
                                                                                      tmp_path):
    """One fingerprint check for collect and for restored archives: a record matches the configuration (its run
    specification), the data files now in data/ (checksums) and the package versions of the other records."""
    import json

    import numpy as np

    from forestbench.collect import collect, current, expected_runs
    from forestbench.datasets.store import Dataset, read_header, save_dataset
    from forestbench.errors import DataError
    from forestbench.records import code_versions, write_record

    monkeypatch.chdir(repo_root)
    plan = Plan(_config(datasets=["linnerud"], metrics=["macro_r2"], max_repeats=2))
    expected = expected_runs(plan, "e")
    monkeypatch.chdir(tmp_path)
    prepared = save_dataset(Dataset("linnerud", np.eye(4), np.arange(4.0), "regression"),
                            tmp_path / "data/prepared/linnerud.npz")
    data_sha = read_header(prepared)["content_sha256"]
    (tmp_path / "data/splits/linnerud").mkdir(parents=True)
    (tmp_path / "data/splits/linnerud/demo.json").write_text(json.dumps({"sha256": "s" * 64}))

    def record(job, spec=None, data=None, packages=None):
        spec = json.loads(json.dumps(spec or plan.run_spec(job)))
        path = tmp_path / f"runs/{job.variant}/repeat-{job.repeat}.json"
        write_record(path, {"spec": spec, "experiment": "e", "dataset": job.dataset, "variant": job.variant,
                            "method": spec["method"], "params": spec["params"], "repeat": job.repeat,
                            "scores": {"macro_r2": 0.5}, "higher_is_better": {"macro_r2": True},
                            "data": {"prepared_sha256": data_sha, "split_sha256": "s" * 64, **(data or {})}})
        if packages:
            doc = json.loads(path.read_text())
            doc["provenance"]["packages"].update(packages)
            path.write_text(json.dumps(doc))
        return str(path)

    jobs = plan.jobs()
    assert len(jobs) == 2
    good = record(jobs[0])
    assert current([good], expected, "e") == ([good], [])
    # another n_estimators: superseded, the changed parameter named
    old_spec = plan.run_spec(jobs[1])
    old_spec = {**old_spec, "params": {**old_spec["params"], "n_estimators": 200}}
    stale = record(jobs[1], spec=old_spec)
    kept, superseded = current([good, stale], expected, "e")
    assert kept == [good] and superseded == [(stale, "made with other parameters (n_estimators: 200 -> 5)")]
    frame = collect([good, stale], "e", expected=expected)
    assert set(frame["repeat"]) == {0} and len(frame.attrs["superseded"]) == 1
    # the same configuration but other prepared data than the file now in data/prepared
    stale = record(jobs[1], data={"prepared_sha256": "0" * 64})
    assert "made from another prepared data" in current([good, stale], expected, "e")[1][0][1]
    # restored records of an older numpy, all alike: accepted; mixed with this environment's: the old ones go
    old_numpy = {"numpy": "1.0.0"}
    both_old = [record(jobs[0], packages=old_numpy), record(jobs[1], packages=old_numpy)]
    assert current(both_old, expected, "e") == (both_old, [])
    fresh = record(jobs[1])
    kept, superseded = current([both_old[0], fresh], expected, "e")
    assert kept == [fresh] and "made with other package versions" in superseded[0][1]
    assert code_versions()["numpy"] != "1.0.0"
    # two versions, neither this environment's: which one is current cannot be told
    other = record(jobs[1], packages={"numpy": "1.1.0"})
    with pytest.raises(DataError, match="2 different package versions"):
        current([both_old[0], other], expected, "e")
    # a variant that left the configuration
    gone = {**expected, "runs": {k: v for k, v in expected["runs"].items() if k.endswith("/0")}}
    assert "no longer in the configuration" in current([good, fresh], gone, "e")[1][0][1]


def test_a_report_metric_the_experiment_does_not_score_is_refused(repo_root, monkeypatch):
    monkeypatch.chdir(repo_root)
    with pytest.raises(ConfigError, match=r"my.yaml: experiment e, reports\[1\]: metric 'micro_auc' is not one the "
                                          r"experiment scores \(metrics: lrap\)"):
        Plan(_config(reports=[{"kind": "table", "metric": "lrap"}, {"kind": "table", "metric": "micro_auc"}]),
             source="my.yaml")
    with pytest.raises(ConfigError, match=r"experiment e, reference\[0\]: metric 'coverage_error'"):
        Plan(_config(reference={"table": "thesis_table_5_1", "metric": "coverage_error", "methods": {"rf": "rf"}}))
    # run-info columns and scored metrics are fine
    assert Plan(_config(reports=[{"kind": "table", "metric": "extra.n_nodes"},
                                 {"kind": "cd_diagram", "metric": "lrap"}])).jobs()
