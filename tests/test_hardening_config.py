"""Bad configurations, leftovers and corrupted intermediate files: one clear error naming the file/key, no
traceback, nothing written outside results/ or the raw cache."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from forestbench.cli import main
from forestbench.datasets.registry import load_registry
from forestbench.datasets.splits import load_split, make_splits, save_splits
from forestbench.errors import ConfigError, DataError
from forestbench.experiments import Plan
from forestbench.plan import make_plan, read_timings
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


# ---------------------------------------------------------------- corrupted intermediate files
def test_corrupted_split_file_is_a_one_line_error(tmp_path):
    """Before: zipfile.BadZipFile traceback."""
    splits = make_splits({"type": "random", "train_fraction": 0.5, "repeats": 2}, 40)
    path = save_splits(tmp_path / "p.npz", splits, {"type": "random"}, "ds", "abc")
    path.write_bytes(path.read_bytes()[:100])
    with pytest.raises(DataError, match=r"p\.npz or its manifest is missing or corrupted"):
        load_split(path, 0)
    path = save_splits(tmp_path / "q.npz", splits, {"type": "random"}, "ds", "abc")
    (tmp_path / "q.json").write_text(json.dumps({"splits": []}))
    with pytest.raises(DataError, match=r"q\.npz or its manifest is missing or corrupted"):
        load_split(path, 0)


def test_plan_ignores_temporary_files_under_results_runs(tmp_path):
    """Before: the half-written temporary file of a record being written was read as a corrupted record."""
    run = tmp_path / "runs" / "a" / "linnerud" / "et"
    run.mkdir(parents=True)
    (run / "repeat-0.json").write_text(json.dumps({"experiment": "a", "dataset": "linnerud", "variant": "et",
                                                   "fit_wall_s": 1.0, "predict_wall_s": 0.5}))
    (run / ".repeat-1.json.k2j3.part.json").write_text('{"experiment": "a", "data')
    assert [(r.experiment, r.dataset, r.variant, r.wall_s) for r in read_timings(tmp_path)] == \
        [("a", "linnerud", "et", 1.5)]


def test_plan_chunk_zero_is_a_clear_error(capsys):
    """Before: a ValueError traceback."""
    with pytest.raises(ConfigError, match="--chunk must be >= 1"):
        make_plan(Plan(_config(), source="t", schema_dir=SCHEMAS), chunk=0)


def test_huge_max_depth_means_unlimited():
    """Before: OverflowError from the tree kernel (max_depth=2**63) and from the cost model."""
    from forestbench import resources
    from forestbench.ensemble import RandomForestRegressor
    from forestbench.tree import DecisionTreeRegressor

    rng = np.random.default_rng(0)
    X, y = rng.random((40, 3)), rng.random(40)
    deep = DecisionTreeRegressor(max_depth=2**63, random_state=0).fit(X, y)
    free = DecisionTreeRegressor(random_state=0).fit(X, y)
    np.testing.assert_array_equal(deep.predict(X), free.predict(X))
    RandomForestRegressor(n_estimators=2, max_depth=2**63, random_state=0).fit(X, y)
    assert resources.tree_nodes(100, 1, 2**63) == resources.tree_nodes(100, 1, None)
