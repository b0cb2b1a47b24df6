"""The method contract: one registry entry plus its module; parameters checked before any job; cost hooks;
staged scores, run info and selection in run records; a toy plugin method through plan -> tune -> fit -> collect."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pandas as pd
import pytest
import yaml

from forestbench.workflow import methods, resources
from forestbench.errors import ConfigError, DataError
from forestbench.workflow.experiments import Plan
from forestbench.workflow.plan import make_plan

TOY = textwrap.dedent('''
    """A toy method for the contract tests: staged predictions that move from 0 towards the training mean."""
    import numpy as np
    from sklearn.base import BaseEstimator, RegressorMixin
    from sklearn.utils._param_validation import Interval
    from numbers import Integral, Real

    from forestbench.workflow.methods import register
    from forestbench.workflow.resources import Cost


    class ToyStaged(RegressorMixin, BaseEstimator):
        _parameter_constraints = {"n_estimators": [Interval(Integral, 1, None, closed="left")],
                                  "learning_rate": [Interval(Real, 0, 1, closed="right")],
                                  "random_state": ["random_state"]}

        def __init__(self, n_estimators=10, learning_rate=0.5, random_state=None):
            self.n_estimators = n_estimators
            self.learning_rate = learning_rate
            self.random_state = random_state

        def fit(self, X, y):
            self._validate_params()
            y = np.asarray(y, dtype=float)
            self.mean_ = y.mean(axis=0)
            self.n_estimators_ = self.n_estimators
            self.stage_n_trees_ = 3 * np.arange(1, self.n_estimators + 1)
            self.stage_fit_seconds_ = 0.001 * np.arange(1, self.n_estimators + 1)
            return self

        def staged_predict(self, X):
            for k in range(1, self.n_estimators_ + 1):
                yield self._at(X, k)

        def _at(self, X, k):
            shrink = 1.0 - (1.0 - self.learning_rate) ** k
            return np.tile(shrink * np.atleast_1d(self.mean_), (X.shape[0], 1))

        def predict(self, X):
            return self._at(X, self.n_estimators_)

        def run_info_(self):
            return {"toy_stages": int(self.n_estimators_)}


    def toy_cost(n, p, d, params, *, sparse=False, density=None):
        return Cost(fit_seconds=1e-3 * n * int(params.get("n_estimators", 10)), model_mb=123.0)


    register("toy_staged", f"{__name__}:ToyStaged", cost=toy_cost, description="a toy staged method")
''')


@pytest.fixture
def toy_plugin(tmp_path, monkeypatch):
    (tmp_path / "toy_plugin.py").write_text(TOY)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "toy_plugin"
    methods.METHODS.pop("toy_staged", None)
    sys.modules.pop("toy_plugin", None)


def _config(method_entry, **extra):
    return {"plugins": ["toy_plugin"], "experiments": {"e": {
        "datasets": ["linnerud"], "protocol": "demo", "metrics": ["macro_r2", "mse"], "max_repeats": 2,
        "methods": [method_entry], **extra}}}


def test_the_registry_imports_no_estimator():
    code = ("import sys, forestbench.workflow.methods, forestbench.workflow.experiments, forestbench.workflow.plan; "
            "heavy = [m for m in ('sklearn', 'forestbench.tree', 'forestbench.forest') if m in sys.modules]; "
            "print(heavy); sys.exit(1 if heavy else 0)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    spec = methods.get_method("random_forest")
    assert spec.estimator == "forestbench.forest:RandomForestRegressor"
    assert "n_estimators" in spec.parameters() and spec.supports("predict")


def test_parameters_are_checked_before_any_job(repo_root, monkeypatch):
    monkeypatch.chdir(repo_root)

    def plan(params, **tune):
        entry = {"name": "v", "method": "sklearn_random_forest", "params": params}
        if tune:
            entry["tune"] = tune
        return Plan({"experiments": {"e": {"datasets": ["linnerud"], "protocol": "demo", "metrics": ["macro_r2"],
                                           "methods": [entry]}}}, source="my.yaml")

    with pytest.raises(ConfigError, match=r"my.yaml: experiment e, variant v: .*n_estimators.*-5"):
        plan({"n_estimators": -5})
    with pytest.raises(ConfigError, match=r"has no parameter\(s\) \['n_trees'\]; its parameters are: .*max_depth"):
        plan({"n_trees": 5})
    with pytest.raises(ConfigError, match="max_features"):
        plan({"max_features": "sqrtt"})
    with pytest.raises(ConfigError, match=r"variant v: .*has no parameter\(s\) \['depth'\]"):
        plan({}, grid={"depth": [1, 2]})
    with pytest.raises(ConfigError, match="needs an estimator with staged_predict"):
        plan({}, grid={"max_depth": [1, 2]}, staged="n_estimators")
    # linnerud (20 rows) in 5 demo folds: 16 training rows
    with pytest.raises(ConfigError, match="kfold 20 is larger than the training part of linnerud"):
        plan({}, grid={"max_depth": [1, 2]}, validation={"kfold": 20})
    assert plan({"n_estimators": 5}).jobs()


def test_select_available_keeps_datasets_that_need_no_download(repo_root, monkeypatch):
    monkeypatch.chdir(repo_root)
    cfg = {"select": {"available": True}, "experiments": {"e": {
        "datasets": ["linnerud", "mediamill"], "protocol": "demo", "metrics": ["lrap", "macro_r2"],
        "methods": [{"name": "rf", "method": "sklearn_random_forest", "params": {"n_estimators": 5}}]}}}
    try:
        plan = Plan(cfg)
    except ConfigError as exc:  # mediamill has no demo protocol: the selection must drop it before that check
        pytest.fail(str(exc))
    assert plan.experiments["e"].datasets == ["linnerud"]
    assert "select.available" in plan.experiments["e"].unavailable["mediamill"]


def test_cost_hooks_size_requests_and_the_plan(toy_plugin, repo_root, monkeypatch, tmp_path):
    monkeypatch.chdir(repo_root)
    plan = Plan(_config({"name": "toy", "method": "toy_staged", "params": {"n_estimators": 50}}))
    spec = methods.get_method("toy_staged")
    cost = spec.cost_of(1000, 5, 3, {"n_estimators": 50})
    assert cost == resources.Cost(50.0, 123.0)
    req = resources.fit_requests({"n": 1000, "p": 5, "d": 3}, {"n_estimators": 50}, cost=spec.cost)
    assert req["mem_mb"] >= (resources.BASE_MB + 123.0) * 1.5
    report = make_plan(plan, results=tmp_path)
    (estimate,) = report.variants
    # linnerud's 20 rows in 5 folds: a fit sees 16 of them -> 0.8 s of modelled fit + start-up
    assert estimate.wall_s == pytest.approx(resources.STARTUP_S + 1e-3 * 16 * 50)


def test_folds_never_reach_test_rows():
    from forestbench.workflow.dag_selection import folds_of

    spec = {"tune": {"validation": {"holdout": 0.5}}, "seed": 0, "experiment": "e", "dataset": "d", "repeat": 0}
    train, test = np.arange(10), np.arange(10, 15)
    assert len(folds_of(spec, 10, train, test)) == 1
    with pytest.raises(DataError, match="overlap the test rows"):
        folds_of(spec, 10, train, np.array([3, 11]))


@pytest.mark.e2e
def test_a_toy_plugin_runs_through_plan_tune_fit_collect(toy_plugin, workflow_dir, snakemake_env, tmp_path):
    """A method added by one registration (a plugin module) runs through the whole workflow with staged scores,
    run info, and selection in one job and as DAG jobs, which agree."""
    base = {"name": "toy", "method": "toy_staged", "params": {"n_estimators": 30}}
    tune = {"grid": {"learning_rate": [0.05, 0.3]}, "validation": {"holdout": 0.25}, "metric": "macro_r2",
            "staged": "n_estimators"}
    cfg = _config(base)
    cfg["experiments"]["e"]["methods"] = [
        base,
        {**base, "name": "toy-inner", "tune": {**tune, "mode": "inner"}},
        {**base, "name": "toy-dag", "tune": {**tune, "mode": "dag", "chunk": 2}},
    ]
    (workflow_dir / "tiny.yaml").write_text(yaml.safe_dump(cfg))
    env = dict(snakemake_env, PYTHONPATH=str(tmp_path) + ":" + snakemake_env.get("PYTHONPATH", ""))

    def snakemake(*args):
        return subprocess.run([sys.executable, "-m", "snakemake", *args, "--cores", "2", "--configfile",
                               "tiny.yaml"], cwd=workflow_dir, env=env, capture_output=True, text=True, timeout=600)

    dry = snakemake("-n")
    assert dry.returncode == 0, dry.stderr[-3000:]
    assert "tune " in dry.stdout and "select " in dry.stdout
    run = snakemake("results/e/scores.csv")
    assert run.returncode == 0, run.stderr[-5000:]
    runs = workflow_dir / "results" / "runs" / "e" / "linnerud"
    plain = json.loads((runs / "toy" / "repeat-0.json").read_text())
    assert plain["staged"]["steps"] == [1, 2, 5, 10, 20, 30]
    assert plain["staged"]["n_trees"] == [3, 6, 15, 30, 60, 90]
    assert set(plain["staged_scores"]) == {"macro_r2", "mse"}
    assert plain["extra"] == {"toy_stages": 30}
    for repeat in (0, 1):
        inner = json.loads((runs / "toy-inner" / f"repeat-{repeat}.json").read_text())
        dag = json.loads((runs / "toy-dag" / f"repeat-{repeat}.json").read_text())
        assert inner["selected_params"] == dag["selected_params"]
        assert inner["validation_score"] == pytest.approx(dag["validation_score"], abs=1e-12)
        assert inner["scores"] == pytest.approx(dag["scores"])
        assert len(inner["extra"]["selection"]["candidates"]) == 2
        assert inner["extra"]["toy_stages"] == inner["selected_params"]["n_estimators"]
    frame = pd.read_csv(workflow_dir / "results" / "e" / "scores.csv")
    assert set(frame["variant"]) == {"toy", "toy-inner", "toy-dag"}
    staged_rows = frame[frame["step"].notna() & (frame["variant"] == "toy")]
    assert set(staged_rows["n_trees"]) == {3, 6, 15, 30, 60, 90}
    assert frame.loc[frame["variant"] == "toy-dag", "selected.n_estimators"].notna().all()
    selection = pd.read_csv(workflow_dir / "results" / "e" / "selection.csv")
    assert set(selection["variant"]) == {"toy-inner", "toy-dag"}
    assert selection[selection["stage"].isna()].groupby(["variant", "repeat"])["selected"].sum().eq(1).all()
    report = run_report = subprocess.run(
        [sys.executable, "-m", "snakemake", "results/e/report/manifest.json", "--cores", "2", "--configfile",
         "tiny.yaml"], cwd=workflow_dir, env=env, capture_output=True, text=True, timeout=600)
    assert run_report.returncode == 0, report.stderr[-3000:]
    manifest = json.loads((workflow_dir / "results" / "e" / "report" / "manifest.json").read_text())
    kinds = [s["kind"] for s in manifest["sections"]]
    assert kinds.count("selection") == 2
    assert (workflow_dir / "results" / "e" / "report" / "figures" / "selection_curves.png").exists()

    # one more candidate, first in the grid: both chunks change, only the new candidate is computed
    cfg["experiments"]["e"]["methods"][2]["tune"]["grid"]["learning_rate"] = [0.9, 0.05, 0.3]
    (workflow_dir / "tiny.yaml").write_text(yaml.safe_dump(cfg))
    again = snakemake("results/e/scores.csv")
    assert again.returncode == 0, again.stderr[-5000:]
    logs = sorted((workflow_dir / "results" / "logs" / "tune" / "e" / "linnerud" / "toy-dag").rglob("*.log"))
    text = "".join(p.read_text() for p in logs)
    assert "2 candidate(s) (1 reused)" in text and "1 candidate(s) (1 reused)" in text


def test_a_time_budget_becomes_stored_stage_caps(toy_plugin, repo_root, monkeypatch, tmp_path):
    """tune.budget: T is measured once, each candidate's cap is stored in the budget file, and the in-job and
    chunk selections both apply the stored caps (so a rerun elsewhere selects alike)."""
    from forestbench.workflow.dag_selection import read_budget, run_budget, run_chunk, select
    from forestbench.datasets.prepare import prepare
    from forestbench.datasets.registry import get_entry
    from forestbench.datasets.splits import make_splits, save_splits
    from forestbench.datasets.store import load_dataset, read_header
    from forestbench.workflow.runner import run

    monkeypatch.chdir(repo_root)
    entry = {"name": "toy", "method": "toy_staged", "params": {"n_estimators": 10_000},
             "tune": {"grid": {"learning_rate": [0.1, 0.5]}, "staged": "n_estimators", "metric": "macro_r2",
                      "budget": {"multiple": 50, "reference": {"method": "toy_staged", "params": {}}}}}
    plan = Plan(_config(entry))
    registry_entry = get_entry(plan.registry, "linnerud")
    prepared = tmp_path / "linnerud.npz"
    prepare("linnerud", registry_entry, prepared)
    ds = load_dataset(prepared)
    protocol = plan.protocol_spec("linnerud", "demo")
    split_file = save_splits(tmp_path / "split.npz", make_splits(protocol, ds.n_samples, ds.given_splits,
                                                                   dataset="linnerud"),
                             protocol, "linnerud", read_header(prepared)["content_sha256"])
    budget_file = tmp_path / "budget.json"
    run_budget(plan.budget_spec("e", "linnerud", "toy"), prepared, split_file, budget_file)
    budget = read_budget(budget_file)
    assert budget["reference_seconds"] > 0 and len(budget["caps"]) == 2
    caps = sorted(c["n_stages_max"] for c in budget["caps"].values())
    # the toy's stages cost the same as the reference's: about 50 stages fit in 50 x T (timing noise aside)
    assert 1 <= caps[0] and caps[-1] < 10_000
    spec = plan.run_spec(plan.jobs()[0])
    record = run(spec, prepared, split_file, tmp_path / "rec.json", budget=budget)
    cap_of = {c["params"]["learning_rate"]: c["n_stages_max"] for c in budget["caps"].values()}
    chosen = record["selected_params"]
    assert chosen["n_estimators"] <= cap_of[chosen["learning_rate"]]
    assert record["extra"]["budget"]["reference_seconds"] == budget["reference_seconds"]
    job = plan.experiments["e"].tune_jobs
    chunk_spec = {**spec, "chunk": 0, "candidates": plan.experiments["e"].candidates(plan.experiments["e"].variant(
        "toy"))}
    run_chunk({**chunk_spec, "tune": {**spec["tune"], "mode": "dag"}}, prepared, split_file, tmp_path / "c0.json",
              tmp_path / "cache", budget=budget)
    best = select(spec, [tmp_path / "c0.json"], tmp_path / "selected.json")
    assert best["params"] == chosen and job is not None


@pytest.mark.parametrize("params, key", [({"n_estimators": -5}, "n_estimators"), ({"n_estimators": 0}, "n_estimators"),
                                         ({"n_estimators": "five"}, "n_estimators"),
                                         ({"max_features": 0}, "max_features"),
                                         ({"max_features": "sqrtt"}, "max_features"), ({"n_trees": 3}, "n_trees")])
@pytest.mark.parametrize("method", ["random_forest", "extra_trees", "decision_tree"])
def test_our_estimators_parameters_are_refused_before_any_job(repo_root, monkeypatch, method, params, key):
    monkeypatch.chdir(repo_root)
    if method == "decision_tree" and "n_estimators" in params:
        params, key = {"max_depth": 0}, "max_depth"
    cfg = {"experiments": {"e": {"datasets": ["linnerud"], "protocol": "demo", "metrics": ["macro_r2"],
                                 "methods": [{"name": "v", "method": method, "params": params}]}}}
    with pytest.raises(ConfigError, match=rf"my.yaml: experiment e, variant v: .*{key}"):
        Plan(cfg, source="my.yaml")


NEEDY = textwrap.dedent('''
    """Two copies of the toy method: one needs a package that is not installed, one a package that is."""
    from forestbench.workflow.methods import register
    from toy_plugin import ToyStaged, toy_cost  # noqa: F401

    register("toy_needs_absent", "toy_plugin:ToyStaged", cost=toy_cost,
             requires={"forestbench_absent_package_xyz": "absent-package-xyz: pip install absent-package-xyz"})
    register("toy_needs_numpy", "toy_plugin:ToyStaged", cost=toy_cost, requires={"numpy": "numpy: pip install numpy"})
''')


def test_a_variant_whose_optional_package_is_missing_is_named_before_any_job(toy_plugin, workflow_dir,
                                                                             snakemake_env, tmp_path, monkeypatch):
    """A method that needs an optional package (the peers extra) not installed here: the plan, `forestbench plan`
    and Snakemake's start-up name the variant, the package and the install command, without importing anything;
    the run is not refused (other variants, and the data steps, do not need it). The registered peer methods
    declare what they need."""
    (tmp_path / "needy_plugin.py").write_text(NEEDY)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        cfg = _config({"name": "absent", "method": "toy_needs_absent", "params": {}})
        cfg["plugins"].append("needy_plugin")
        cfg["experiments"]["e"]["methods"].append({"name": "present", "method": "toy_needs_numpy", "params": {}})
        monkeypatch.chdir(workflow_dir)
        plan = Plan(cfg)
        assert plan.experiments["e"].missing_packages == {
            "absent": {"forestbench_absent_package_xyz": "absent-package-xyz: pip install absent-package-xyz"}}
        (note,) = plan.missing_package_notes()
        assert note.startswith("experiment e, variant absent needs an optional package") and \
            "pip install absent-package-xyz" in note and "'forestbench_absent_package_xyz' not found" in note
        assert any("variant absent needs an optional package" in line for line in plan.describe())
        assert not any("variant present" in line for line in plan.describe())

        (workflow_dir / "needy.yaml").write_text(yaml.safe_dump(cfg))
        env = dict(snakemake_env, PYTHONPATH=str(tmp_path) + ":" + snakemake_env.get("PYTHONPATH", ""))
        dry = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "1", "--configfile", "needy.yaml"],
                             cwd=workflow_dir, env=env, capture_output=True, text=True, timeout=600)
        assert dry.returncode == 0, dry.stderr[-3000:]
        assert "variant absent needs an optional package that is not installed" in dry.stderr
        assert "pip install absent-package-xyz" in dry.stderr and "variant present needs" not in dry.stderr
        cli = subprocess.run([sys.executable, "-m", "forestbench", "plan", "--configfile", "needy.yaml",
                              "--results", str(tmp_path / "none")],
                             cwd=workflow_dir, env=env, capture_output=True, text=True, timeout=600)
        assert cli.returncode == 0, cli.stderr[-3000:]
        assert "experiment e, variant absent needs an optional package" in cli.stdout
    finally:
        for name in ("toy_needs_absent", "toy_needs_numpy"):
            methods.METHODS.pop(name, None)
        sys.modules.pop("needy_plugin", None)
    for name, module in (("dte_mlknn", "skmultilearn"), ("dte_rakel", "skmultilearn"),
                         ("xgboost_multi_output_tree", "xgboost"), ("xgboost_one_output_per_tree", "xgboost"),
                         ("catboost_multi", "catboost"), ("lightgbm_per_output", "lightgbm")):
        requires = methods.get_method(name).requires
        assert module in requires and "forestbench[peers]" in requires[module], name
