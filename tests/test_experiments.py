import pytest
import yaml

from forestbench.datasets.registry import is_available, load_registry, protocol_of
from forestbench.errors import ConfigError
from forestbench.workflow.experiments import Plan, expand_variants, load_config, load_plan
from forestbench.workflow.plan import make_plan
from forestbench.validation import load_yaml


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
    from forestbench.workflow import methods
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


def _registry_with_every_dataset_supplied(repo_root, tmp_path) -> str:
    """A copy of the registry in which every unavailable dataset has its files in a ``local_path`` directory, as a
    user who obtained them would write it; returns its path."""
    data = load_yaml(repo_root / "config" / "datasets.yaml")
    supplied = tmp_path / "supplied"
    supplied.mkdir()
    for entry in data["datasets"].values():
        if not is_available(entry):
            entry["local_path"] = str(supplied)
    path = tmp_path / "datasets.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return str(path)


@pytest.mark.parametrize("configfile", ["config/config.yaml", "config/thesis.yaml"])
def test_every_experiment_plans_with_every_dataset_supplied(repo_root, monkeypatch, tmp_path, configfile):
    """Supplying an unavailable dataset with ``local_path`` must give a plan, not a missing-protocol error: every
    experiment's protocol exists for every dataset it lists. Built through Plan (what the Snakefile builds its DAG
    from) and make_plan (the jobs and their costs, which read each protocol's training rows)."""
    monkeypatch.chdir(repo_root)
    registry_path = _registry_with_every_dataset_supplied(repo_root, tmp_path)
    config, source = load_config([configfile], {"datasets_registry": registry_path})
    registry = load_registry(registry_path)
    missing = []  # every (experiment, dataset) without its protocol, not just the first one Plan stops at
    for name, cfg in config["experiments"].items():
        for dataset in cfg["datasets"]:
            try:
                protocol_of(registry, dataset, cfg["protocol"], config.get("protocols"))
            except ConfigError as exc:
                missing.append(f"{name}: {exc}")
    assert not missing, "\n".join(missing)
    plan = Plan(config, source=source)
    assert not plan.unavailable(), plan.unavailable()
    for name, exp in plan.experiments.items():
        assert exp.datasets == list(config["experiments"][name]["datasets"]), name
        assert all(exp.repeats[d] >= 1 for d in exp.datasets), name
    report = make_plan(plan, results=tmp_path / "results")
    assert report.jobs["split"] == len({(d, exp.protocol) for exp in plan.experiments.values()
                                        for d in exp.datasets if exp.jobs()})


def test_select_experiments_typo_lists_the_known_experiments(repo_root, monkeypatch):
    """Before: 'select.experiments names unknown experiment(s) ['demo_multilable']' and no list of known names."""
    monkeypatch.chdir(repo_root)
    cfg = _config()
    cfg["experiments"]["demo_multilabel"] = cfg["experiments"]["e"]
    cfg["select"] = {"experiments": ["demo_multilable"]}
    with pytest.raises(ConfigError, match=r"my.yaml: select.experiments names unknown experiment\(s\) "
                                          r"\['demo_multilable'\] \(did you mean 'demo_multilabel'\?\); "
                                          r"known: e, demo_multilabel"):
        Plan(cfg, source="my.yaml")


def test_unknown_method_names_the_file_and_the_experiment(repo_root, monkeypatch):
    """Before: "unknown method 'random_forrest' (known: ...)", with neither the configuration file nor the
    experiment."""
    monkeypatch.chdir(repo_root)
    cfg = _config(methods=[{"name": "rf", "method": "random_forrest"}])
    with pytest.raises(ConfigError, match=r"^my.yaml: experiment e, methods entry 'rf': unknown method "
                                          r"'random_forrest'; did you mean 'random_forest'\? \(known: "):
        Plan(cfg, source="my.yaml")
    # other errors of an experiment name it once, after the file
    with pytest.raises(ConfigError, match=r"^my.yaml: experiment e: dataset 'yeastt' is not in the registry"):
        Plan(_config(datasets=["yeastt"]), source="my.yaml")


PLUGIN = '''
from sklearn.tree import DecisionTreeRegressor

from forestbench.workflow.methods import register


class ShallowTree(DecisionTreeRegressor):
    """A plugin's estimator: scikit-learn's tree, under another name."""


register("shallow_tree_plugin", "my_methods:ShallowTree", description="a tree from a plugin file")
'''


def test_plugin_given_as_a_file_path(repo_root, tmp_path, monkeypatch):
    """Before: a plugin had to be a module on PYTHONPATH; 'plugins: [plugins/my_methods.py]' failed to import."""
    import subprocess
    import sys

    from forestbench.workflow import methods
    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / "my_methods.py").write_text(PLUGIN)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(methods, "METHODS", dict(methods.METHODS))
    cfg = _config(methods=[{"name": "t", "method": "shallow_tree_plugin", "params": {"max_depth": 3}}])
    cfg["datasets_registry"] = str(repo_root / "config" / "datasets.yaml")
    cfg["plugins"] = ["plugins/my_methods.py"]
    try:
        plan = Plan(cfg, source="my.yaml")
        assert [v.method for v in plan.experiments["e"].variants] == ["shallow_tree_plugin"]
        assert plan.run_spec(plan.jobs()[0])["plugins"] == ["plugins/my_methods.py"]
        Plan(cfg, source="my.yaml")  # loading it again is harmless
    finally:
        sys.modules.pop("my_methods", None)
    # a fit job is another process: it loads the plugin from the run specification, from the same directory
    code = ("from forestbench.workflow.methods import load_plugins, build_estimator; "
            "load_plugins(['plugins/my_methods.py']);"
            "print(type(build_estimator('shallow_tree_plugin', {'max_depth': 3}, 0)).__name__)")
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert proc.stdout.strip() == "ShallowTree", proc.stderr

    cfg["plugins"] = ["plugins/my_methodz.py"]
    with pytest.raises(ConfigError, match=r"plugins: no file 'plugins/my_methodz.py' \(a relative path is read "
                                          "from the working directory"):
        Plan(cfg, source="my.yaml")
    cfg["plugins"] = ["my_methods"]
    with pytest.raises(ConfigError, match=r"no module 'my_methods' on the Python path; put the folder holding "
                                          r"my_methods.py on PYTHONPATH, or name the file itself"):
        Plan(cfg, source="my.yaml")


def test_collect_keeps_only_records_of_the_current_configuration_data_and_packages(repo_root, monkeypatch,
                                                                                      tmp_path):
    """One fingerprint check for collect and for restored archives: a record matches the configuration (its run
    specification), the data files now in data/ (checksums) and the package versions of the other records."""
    import json

    import numpy as np

    from forestbench.workflow.collect import collect, current, expected_runs
    from forestbench.datasets.store import Dataset, read_header, save_dataset
    from forestbench.errors import DataError
    from forestbench.workflow.records import code_versions, write_record

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


def test_logistic_boosting_jobs_carry_the_step_bound_revision():
    """The bounded logistic line search changed logistic fits: every job of a variant whose parameters or tuning
    candidates use the logistic loss names the revision in its specification; square-loss jobs do not, so their
    archived results stay valid."""
    from forestbench.workflow.experiments import Job

    plan = load_plan(["config/thesis.yaml"])
    tuned = plan.run_spec(Job("table_6_5", "medical", "gbmort", 0))       # grid loss: square and logistic
    assert tuned["revisions"] == ["logistic-step-bound"]
    assert "revisions" not in plan.run_spec(Job("table_6_5", "medical", "br_rf", 0))
    assert "revisions" not in plan.run_spec(Job("table_6_8", "atp7d", "gbmort", 0))     # square loss only


def test_stored_candidates_of_a_revision_are_keyed_by_it():
    """A stored tuning candidate that a method revision names gets a new key (recomputed, never reused from before
    the change); the keys of the candidates it does not name are unchanged."""
    import numpy as np

    from forestbench.workflow.dag_selection import _cache_key, _key, _split_part, estimator_params

    spec = {"method": "gbmort", "params": {"n_estimators": 50}, "seed": 1,
            "tune": {"validation": {"holdout": 0.2}, "metric": "lrap", "staged": "n_estimators"}}
    train, data = np.arange(10), {"prepared_sha256": "p", "split_sha256": "s"}

    def unrevised(params):
        return _key({"params": params, "method": "gbmort", "fixed": estimator_params(spec["params"]),
                     "validation": spec["tune"]["validation"], "metric": "lrap", "staged": "n_estimators",
                     **_split_part(spec, train, data)})

    square, logistic = {"loss": "square", "learning_rate": 0.1}, {"loss": "logistic", "learning_rate": 0.1}
    assert _cache_key(spec, square, train, data) == unrevised(square)
    assert _cache_key(spec, logistic, train, data) != unrevised(logistic)


def test_a_cost_model_hint_of_the_registry_leaves_the_run_specification_alone():
    """``labels_per_row`` and ``input_density`` size requests only: the run specification (Snakemake's params of
    every job, the archive's record check) carries the checked shape n, p, d, so adding such a hint reruns nothing."""
    from forestbench.workflow.experiments import Job

    plan = load_plan(["config/thesis.yaml"])
    shape = plan.registry["medical"]["shape"]
    assert {"labels_per_row", "input_density"} <= set(shape)
    spec = plan.run_spec(Job("table_6_5", "medical", "gbmort", 0))
    assert spec["expected_shape"] == {k: shape[k] for k in ("n", "p", "d")}
