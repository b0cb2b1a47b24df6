"""config/thesis.yaml, chapter 5 experiments: dataset ids match the published tables and every method builds a valid
forest (constructor parameters, q resolved for the datasets' d)."""
import csv
import itertools
from pathlib import Path

import pytest
import yaml

from forestbench.forest import ExtraTreesRegressor, RandomForestRegressor

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "config" / "thesis.yaml"
REFERENCE = ROOT / "config" / "reference"
METHODS = {"random_forest": RandomForestRegressor, "extra_trees": ExtraTreesRegressor}


def _reference(table):
    path = REFERENCE / f"{table}.csv"
    if not path.exists():
        pytest.fail(f"missing reference table {path}")
    return list(csv.DictReader(path.open()))


@pytest.fixture(scope="module")
def experiments():
    experiments = yaml.safe_load(CONFIG.read_text())["experiments"]
    return {name: exp for name, exp in experiments.items() if name.startswith(("table_5", "figure_5", "timing_5"))}


def _expand(method):
    grid = method.get("grid", {})
    keys = list(grid)
    for values in itertools.product(*(grid[k] for k in keys)):
        params = {**method["params"], **dict(zip(keys, values))}
        yield method["name"].format(**params), params


def test_datasets_and_reference_methods_match_the_tables(experiments):
    for name, table in (("table_5_1", "thesis_table_5_1"), ("table_5_2", "thesis_table_5_2")):
        rows = _reference(table)
        exp = experiments[name]
        assert exp["reference"]["table"] == table
        assert [r["dataset_id"] for r in rows if r["method_id"] in ("rf", "et")] == exp["datasets"]
        names = {n for m in exp["methods"] for n, _ in _expand(m)}
        assert set(exp["reference"]["methods"]) == names
        assert set(exp["reference"]["methods"].values()) == {r["method_id"] for r in rows}


def test_every_method_builds_a_valid_forest(experiments):
    d_of = {r["dataset_id"]: int(r["d"]) for r in _reference("thesis_table_5_1")}
    d_of.setdefault("synthetic_multilabel", 40)
    for exp_name, exp in experiments.items():
        for method in exp["methods"]:
            for name, params in _expand(method):
                est = METHODS[method["method"]](random_state=0, **params)
                est._validate_params()  # scikit-learn's parameter constraints
                for ds in exp["datasets"]:
                    kind, q = est._resolve_projection(d_of.get(ds, 14))
                    if params.get("output_projection") is None:
                        assert kind is None
                    else:
                        assert q >= 1, (exp_name, name, ds)
                        if params["output_projection"] in ("pca", "subsample"):
                            assert q <= d_of.get(ds, 14), (exp_name, name, ds)
