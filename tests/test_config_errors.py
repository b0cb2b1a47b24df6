"""Bad configurations (unknown select names, names that are not folder names, duplicate YAML keys, unknown keys,
bad plan options): one clear error naming the file and key, no traceback."""
from __future__ import annotations

from pathlib import Path

import pytest

from forestbench.datasets.registry import load_registry
from forestbench.errors import ConfigError
from forestbench.workflow.experiments import Plan
from forestbench.workflow.plan import make_plan
from forestbench.validation import check_workflow_config, load_yaml

REPO = Path(__file__).resolve().parents[1]
SCHEMAS = REPO / "workflow" / "schemas"
REGISTRY = str(REPO / "config" / "datasets.yaml")


def _config(**select):
    config = {"datasets_registry": REGISTRY, "experiments": {
        "a": {"datasets": ["linnerud", "sf2"], "protocol": "demo", "metrics": ["macro_r2"],
              "methods": [{"name": "rf{n_estimators}", "method": "sklearn_random_forest",
                           "grid": {"n_estimators": [5, 50]}}]},
        "b": {"datasets": ["linnerud"], "protocol": "demo", "metrics": ["macro_r2"],
              "methods": [{"name": "et", "method": "sklearn_extra_trees", "params": {"n_estimators": 10}}]}}}
    if select:
        config["select"] = select
    return config


# ---------------------------------------------------------------- select names (before: nothing selected, exit 0)
@pytest.mark.parametrize("select,match", [
    ({"variants": ["nope"]}, r"select\.variants names unknown variant\(s\) \['nope'\]; known: et, rf5, rf50"),
    ({"datasets": ["nope"]}, r"select\.datasets names unknown dataset\(s\) \['nope'\]; known: linnerud, sf2"),
    ({"experiments": ["b"], "variants": ["rf5"]}, r"unknown variant\(s\) \['rf5'\]; known: et"),
])
def test_unknown_select_names_are_errors(select, match):
    with pytest.raises(ConfigError, match=match):
        Plan(_config(**select), source="my.yaml", schema_dir=SCHEMAS)


def test_known_select_names_still_select():
    plan = Plan(_config(variants=["rf5"], datasets=["sf2"]), source="my.yaml", schema_dir=SCHEMAS)
    assert {(j.experiment, j.dataset, j.variant) for j in plan.jobs()} == {("a", "sf2", "rf5")}


# ---------------------------------------------------------------- names that are not folder names
@pytest.mark.parametrize("name", [".", ".."])
def test_dot_experiment_names_are_refused(name):
    config = _config()
    config["experiments"][name] = config["experiments"].pop("b")
    with pytest.raises(ConfigError, match=r"my\.yaml: experiments: .*not \. or \.\."):
        Plan(config, source="my.yaml", schema_dir=SCHEMAS)


@pytest.mark.parametrize("name", [".", ".."])
def test_dot_dataset_names_are_refused(tmp_path, name):
    path = tmp_path / "datasets.yaml"
    path.write_text(f"datasets:\n  '{name}':\n    task: regression\n    source: {{kind: embedded, loader: linnerud}}\n")
    with pytest.raises(ConfigError, match=r"datasets\.yaml: datasets: "):
        load_registry(path, SCHEMAS)


def test_dot_variant_name_is_refused():
    config = _config()
    config["experiments"]["b"]["methods"][0]["name"] = ".."
    with pytest.raises(ConfigError, match=r"variant name '\.\.'"):
        Plan(config, source="my.yaml", schema_dir=SCHEMAS)


# ---------------------------------------------------------------- YAML
def test_duplicate_yaml_keys_are_errors(tmp_path):
    """Before: the second value silently replaced the first."""
    path = tmp_path / "c.yaml"
    path.write_text("seed: 0\nexperiments:\n  a: {datasets: [yeast]}\n  a: {datasets: [scene]}\n")
    with pytest.raises(ConfigError, match=r"c\.yaml:4: invalid YAML: duplicate key 'a' \(first given on line 3\)"):
        load_yaml(path)
    path.write_text("base: &b {x: 1, y: 2}\nover:\n  <<: *b\n  x: 3\n")  # overriding a merged key is fine
    assert load_yaml(path)["over"] == {"x": 3, "y": 2}


def test_workflow_config_errors_name_the_file(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text("experiments:\n  a:\n    datasets: [yeast]\n    protocol: demo\n    metrics: [lrap]\n"
                    "    methods: [{method: random_forest}]\n    colour: red\n")
    with pytest.raises(ConfigError, match=r"mine\.yaml: experiments\.a: unknown key\(s\) 'colour'"):
        check_workflow_config(load_yaml(path), [path])


def test_plan_chunk_zero_is_a_clear_error(capsys):
    """Before: a ValueError traceback."""
    with pytest.raises(ConfigError, match="--chunk must be >= 1"):
        make_plan(Plan(_config(), source="t", schema_dir=SCHEMAS), chunk=0)


# ---------------------------------------------------------------- tuning grids checked value by value
def test_a_bad_value_anywhere_in_a_tuning_grid_is_refused_before_any_job(monkeypatch):
    """The DAG-time check builds one candidate per new grid value, not one per grid point: every value of every
    axis is still validated (the bad one here is the last value of its axis)."""
    from forestbench.workflow import methods

    config = _config()
    config["experiments"]["b"]["methods"][0]["tune"] = {
        "grid": {"max_depth": [2, 3, 4, 5], "min_samples_leaf": [1, 2, 3, 0]}, "validation": {"holdout": 0.25},
        "metric": "macro_r2"}
    with pytest.raises(ConfigError, match=r"experiment b, variant et: .*min_samples_leaf"):
        Plan(config, source="my.yaml", schema_dir=SCHEMAS)

    config["experiments"]["b"]["methods"][0]["tune"]["grid"]["min_samples_leaf"][-1] = 4
    calls = []
    real = methods.MethodSpec.check_params
    monkeypatch.setattr(methods.MethodSpec, "check_params", lambda self, p: calls.append(p) or real(self, p))
    Plan(config, source="my.yaml", schema_dir=SCHEMAS)
    tuned = [p for p in calls if "max_depth" in p]
    assert len(tuned) == 7                                # 4 + 4 values, the first point covering two of them
    assert {p["max_depth"] for p in tuned} == {2, 3, 4, 5} and {p["min_samples_leaf"] for p in tuned} == {1, 2, 3, 4}


def test_the_schema_is_the_running_code_s_own(tmp_path, monkeypatch):
    """Before: ``workflow/schemas`` of the working directory came first, so a command of this checkout's code run
    from another checkout (an older worktree) validated the configuration against that checkout's schema and
    refused keys this code knows."""
    from forestbench import validation

    stale = tmp_path / "workflow" / "schemas"
    stale.mkdir(parents=True)
    (stale / "config.schema.yaml").write_text("type: object\nadditionalProperties: false\nproperties: {}\n")
    monkeypatch.chdir(tmp_path)
    own = Path(validation.__file__).resolve().parents[2] / "workflow" / "schemas" / "config.schema.yaml"
    assert validation.schema_path("config") == own
    config = load_yaml(own.parents[2] / "config" / "config.yaml")
    validation.validate(config, "config", "config.yaml")            # the stale schema refuses every key
    # a schema the code's checkout lacks is still found in the working directory (a regular install)
    (stale / "extra.schema.yaml").write_text("type: object\n")
    assert validation.schema_path("extra") == Path("workflow/schemas/extra.schema.yaml")
    with pytest.raises(ConfigError, match="schema nothing.schema.yaml not found in"):
        validation.schema_path("nothing")
