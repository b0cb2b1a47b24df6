"""Hyper-parameter selection: the right candidate, staged n_estimators, GridSearchCV agreement, bad input."""
from __future__ import annotations

import json
import time

import numpy as np
import pytest
from sklearn.ensemble import GradientBoostingRegressor
from sklearn.linear_model import Ridge
from sklearn.metrics import make_scorer
from sklearn.model_selection import GridSearchCV, KFold
from sklearn.tree import DecisionTreeRegressor

from forestbench.workflow import tuning
from forestbench.errors import ConfigError
from forestbench.metrics import get_metric, macro_r2
from forestbench.workflow.selection import GridSelection, choose, evaluate_candidate


def _step_problem(n=400, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, 3))
    y = (X[:, 0] > 0.5).astype(float) + rng.normal(scale=0.5, size=n)
    return X, y


def test_selection_finds_the_known_best_grid_point():
    # a step function plus heavy noise: a stump is right, a fully grown tree fits the noise
    X, y = _step_problem()
    sel = GridSelection(DecisionTreeRegressor(random_state=0), {"max_depth": [None, 1, 12]},
                        validation={"holdout": 0.3}, metric="macro_r2", random_state=3).fit(X, y)
    assert sel.best_params_ == {"max_depth": 1}
    scores = [r["score"] for r in sel.cv_results_]
    assert scores[1] == max(scores) and scores[0] < scores[1] - 0.2
    # refit on every row with the selected parameters
    assert sel.best_estimator_.get_depth() == 1
    np.testing.assert_array_equal(sel.predict(X), DecisionTreeRegressor(max_depth=1, random_state=0).fit(X, y)
                                  .predict(X))


def test_lower_is_better_metrics_are_minimised():
    X, y = _step_problem(seed=1)
    sel = GridSelection(DecisionTreeRegressor(random_state=0), {"max_depth": [12, 1]}, metric="mse",
                        random_state=0).fit(X, y)
    assert sel.best_params_ == {"max_depth": 1}


def test_staged_selection_equals_separate_fits_at_each_n_estimators():
    X, y = _step_problem(n=300, seed=2)
    est = GradientBoostingRegressor(learning_rate=0.3, max_depth=2, random_state=0)
    folds = tuning.validation_folds(len(y), {"holdout": 0.25}, seed=5)
    staged = evaluate_candidate(lambda p: GradientBoostingRegressor(**{**est.get_params(), **p}),
                                {"n_estimators": 40}, X, y, folds, "macro_r2", staged="n_estimators")
    (fit_rows, val_rows), = folds
    for k in (1, 7, 23, 40):
        alone = GradientBoostingRegressor(**{**est.get_params(), "n_estimators": k}).fit(X[fit_rows], y[fit_rows])
        expected = macro_r2(y[val_rows], alone.predict(X[val_rows]))
        assert staged["curve"][staged["stages"].index(k)] == pytest.approx(expected, abs=1e-12)
    best = int(np.argmax(staged["curve"])) + 1
    assert staged["best_stage"] == best
    sel = GridSelection(est, {"learning_rate": [0.3]}, validation={"holdout": 0.25}, staged="n_estimators",
                        random_state=5)
    sel.set_params(estimator=est.set_params(n_estimators=40)).fit(X, y)
    assert sel.best_params_ == {"learning_rate": 0.3, "n_estimators": best}
    assert sel.best_estimator_.n_estimators_ == best


def test_kfold_selection_agrees_with_gridsearchcv():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 8))
    y = X @ rng.normal(size=8) + rng.normal(scale=2.0, size=120)
    grid = {"alpha": [0.01, 1.0, 30.0, 300.0, 3000.0]}
    seed = 11
    ours = GridSelection(Ridge(), grid, validation={"kfold": 4}, metric="macro_r2", random_state=seed).fit(X, y)
    ref = GridSearchCV(Ridge(), grid, cv=KFold(4, shuffle=True, random_state=seed),
                       scoring=make_scorer(macro_r2), refit=True).fit(X, y)
    assert ours.best_params_ == ref.best_params_
    assert ours.best_score_ == pytest.approx(ref.best_score_, abs=1e-12)
    np.testing.assert_allclose([r["score"] for r in ours.cv_results_], ref.cv_results_["mean_test_score"],
                               atol=1e-12)
    np.testing.assert_allclose(ours.predict(X), ref.predict(X))


def test_selection_is_deterministic_and_ties_take_the_first_candidate():
    X, y = _step_problem(seed=4)
    a = GridSelection(DecisionTreeRegressor(random_state=0), {"max_depth": [1, 2, 3, 6]}, random_state=9).fit(X, y)
    b = GridSelection(DecisionTreeRegressor(random_state=0), {"max_depth": [1, 2, 3, 6]}, random_state=9).fit(X, y)
    assert a.best_params_ == b.best_params_ and a.cv_results_ == [
        {**r, "fit_seconds": a.cv_results_[i]["fit_seconds"]} for i, r in enumerate(b.cv_results_)]
    tie = choose([{"params": {"a": 1}, "score": 0.5}, {"params": {"a": 2}, "score": 0.5}], "macro_r2")
    assert tie["params"] == {"a": 1}


def test_random_candidate_subsets_are_seeded_and_in_grid_order():
    tune = tuning.normalise({"grid": {"a": list(range(10)), "b": [0, 1]}, "n_candidates": 5}, where="t",
                            metrics=["macro_r2"])
    first, again = tuning.candidates(tune, 3), tuning.candidates(tune, 3)
    assert first == again and len(first) == 5
    full = tuning.candidates({**tune, "n_candidates": None}, 3)
    positions = [full.index(c) for c in first]
    assert positions == sorted(positions)
    assert tuning.candidates(tune, 4) != first


def test_validation_folds_stay_inside_the_training_part_and_stratify():
    folds = tuning.validation_folds(50, {"holdout": 0.2}, seed=1)
    (fit_rows, val_rows), = folds
    assert len(val_rows) == 10 and not set(fit_rows) & set(val_rows) and set(fit_rows) | set(val_rows) == set(range(50))
    y = np.array([0] * 40 + [1] * 10)
    for fit_rows, val_rows in tuning.validation_folds(50, {"kfold": 5}, seed=1, y=y):
        assert (y[val_rows] == 1).sum() == 2  # stratified
    with pytest.raises(ConfigError, match="larger than the training part"):
        tuning.validation_folds(3, {"kfold": 5}, seed=0)


@pytest.mark.parametrize("tune, message", [
    ({"grid": {}}, "at least one parameter"),
    ({"grid": {"a": []}}, "non-empty list"),
    ({"grid": {"a": [1]}, "metric": "nope"}, "unknown metric 'nope'"),
    ({"grid": {"a": [1]}, "validation": {"holdout": 1.0}}, r"fraction in \(0, 1\)"),
    ({"grid": {"a": [1]}, "validation": {"holdout": 0}}, r"fraction in \(0, 1\)"),
    ({"grid": {"a": [1]}, "validation": {"kfold": 1}}, "integer >= 2"),
    ({"grid": {"a": [1]}, "mode": "cluster"}, "'inner' or 'dag'"),
    ({"grid": {"n_estimators": [1]}, "staged": "n_estimators"}, "cannot also be a grid key"),
    ({"grid": {"a": [1]}, "budget": {"multiple": 100, "reference": {"method": "m"}}}, "set tune.staged"),
    ({"grid": {"a": [1]}, "staged": "n", "budget": {"multiple": -1, "reference": {"method": "m"}}},
     "positive number"),
    ({"grid": {"a": [1]}, "staged": "n", "budget": {"multiple": 5}}, "must name the reference method"),
    ({"grid": {"a": [1]}, "refit": False, "validation": {"kfold": 3}}, "use a holdout"),
])
def test_bad_tune_blocks_are_refused_with_the_key(tune, message):
    with pytest.raises(ConfigError, match=message):
        tuning.normalise(tune, where="experiment e, variant v", metrics=["macro_r2"])


def test_record_stages_are_log_spaced_with_the_last():
    assert tuning.record_stages(1000) == [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000]
    assert tuning.record_stages(37) == [1, 2, 5, 10, 20, 37]
    assert tuning.record_stages(10) == list(range(1, 11))       # a 10-layer cascade: every layer's test score
    assert tuning.record_stages(21) == [1, 2, 5, 10, 20, 21]
    stages = tuning.scored_stages(10_000)
    assert len(stages) <= tuning.MAX_SCORED_STAGES + 1 and stages[-1] == 10_000 and list(stages[:100]) == list(
        range(1, 101))


@pytest.mark.parametrize("metric", ["macro_r2", "mse"])
def test_curves_computed_inside_the_boosting_loop_equal_staged_predictions(metric):
    from forestbench.workflow.methods import get_method
    from forestbench.workflow.selection import _compiled_curve

    rng = np.random.default_rng(3)
    X = rng.uniform(size=(200, 4))
    Y = np.c_[X[:, 0] + 0.1 * rng.normal(size=200), X[:, 1] * X[:, 2] + 0.1 * rng.normal(size=200)]
    fit, val = np.arange(150), np.arange(150, 200)
    spec = get_method("gbmort")
    est = spec.build({"n_estimators": 60, "max_leaf_nodes": 3, "learning_rate": 0.2}, seed=0)
    compiled = _compiled_curve(est, metric, X[fit], Y[fit], X[val], Y[val])
    assert compiled is not None and len(compiled) == 60
    m = get_metric(metric)
    expected = [m(Y[val], p) for p in est.staged_predict(X[val])]
    np.testing.assert_allclose(compiled, expected, rtol=1e-9, atol=1e-12)
    # a constant validation output: r2 is then not the compiled one, so the caller scores staged_predict
    Yc = Y.copy()
    Yc[val, 1] = 1.0
    assert _compiled_curve(spec.build({"n_estimators": 5}, seed=0), "macro_r2", X[fit], Yc[fit], X[val],
                           Yc[val]) is None


# ---------------------------------------------------------------------------------------------------------------
# DAG mode (candidate chunks, select, fit) against inner mode (one job) on the same small problem


def _toy_files(folder, seed=0, n=60, constant_output=False, outputs=2):
    """A small prepared regression set and one random split, written as the workflow writes them."""
    from forestbench.datasets.splits import make_splits, save_splits
    from forestbench.datasets.store import Dataset, read_header, save_dataset

    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, 4))
    Y = np.column_stack([(X[:, 0] > 0.5) + rng.normal(scale=0.3, size=n), X[:, 1] + rng.normal(scale=0.3, size=n)])
    if constant_output:
        Y[:, 1] = 1.0
    Y = Y[:, :outputs]
    folder.mkdir(parents=True, exist_ok=True)
    prepared = save_dataset(Dataset("toy", X, Y, "multioutput_regression"), folder / "toy.npz")
    protocol = {"type": "random", "train_fraction": 0.75, "repeats": 1, "seed": 0}
    split = save_splits(folder / "split.npz", make_splits(protocol, n), protocol, "toy",
                        read_header(prepared)["content_sha256"])
    return prepared, split


def _spec(method, params, tune, mode, metrics=("mse",)):
    t = tuning.normalise({**tune, "mode": mode, "chunk": 2}, where="test", metrics=list(metrics))
    return {"experiment": "e", "dataset": "toy", "variant": "v", "method": method, "params": params,
            "metrics": list(metrics), "repeat": 0, "seed": 7, "threads": 1, "protocol": "p",
            "expected_shape": None, "tune": {**t, "seed": 0}}


def _chunks(spec, prepared, split, folder, budget=None):
    from forestbench.workflow.dag_selection import run_chunk

    cands = tuning.candidates(spec["tune"], spec["tune"]["seed"])
    docs = []
    for k, rows in enumerate(tuning.chunks(len(cands), spec["tune"]["chunk"])):
        docs.append(run_chunk({**spec, "chunk": k, "candidates": [cands[i] for i in rows]}, prepared, split,
                              folder / f"chunk-{k}.json", folder / "candidates", budget=budget))
    return docs


def _both_modes(tmp_path, method, params, tune, metrics=("mse",), **data):
    """Records of the same tuned variant run in one job (inner) and as chunk, select and fit jobs (dag)."""
    import json

    from forestbench.workflow.dag_selection import read_selected, select
    from forestbench.workflow.runner import run

    prepared, split = _toy_files(tmp_path / "data", **data)
    run(_spec(method, params, tune, "inner", metrics), prepared, split, tmp_path / "inner.json")
    spec = _spec(method, params, tune, "dag", metrics)
    docs = _chunks(spec, prepared, split, tmp_path / "tuning")
    select(spec, [tmp_path / "tuning" / f"chunk-{d['chunk']}.json" for d in docs], tmp_path / "selected.json")
    run(spec, prepared, split, tmp_path / "dag.json", selected=read_selected(tmp_path / "selected.json"))
    return [json.loads((tmp_path / f"{mode}.json").read_text()) for mode in ("inner", "dag")]


AGREEMENT_CASES = {
    # refit: false keeps the model fitted on the holdout's fit rows, in both modes
    "no refit": ("sklearn_decision_tree", {}, {"grid": {"max_depth": [1, 3, 6]}, "validation": {"holdout": 0.3},
                                               "refit": False}, ("mse",), {}),
    # one diverging candidate: its validation mse is undefined (null once stored), the other one is chosen
    "one undefined score": ("sklearn_gbrt", {"n_estimators": 1, "max_depth": 1},
                            {"grid": {"learning_rate": [1e308, 0.1]}}, ("mse",), {"outputs": 1}),
    # a constant validation output: every normalized_mse is undefined, the first candidate is kept (as for ties)
    "every score undefined": ("sklearn_decision_tree", {}, {"grid": {"max_depth": [2, 4]}},
                              ("normalized_mse",), {"constant_output": True}),
    # run-only parameters: the fit and predict layouts are not estimator parameters
    "input layouts": ("sklearn_decision_tree", {"input_layout": "csc", "predict_layout": "csr"},
                      {"grid": {"max_depth": [1, 5]}}, ("mse",), {}),
    # a staged parameter chosen from the validation curve, without refit
    "staged without refit": ("sklearn_gbrt", {"n_estimators": 15, "max_depth": 2},
                             {"grid": {"learning_rate": [0.05, 0.5]}, "staged": "n_estimators",
                              "validation": {"holdout": 0.25}, "refit": False}, ("mse",), {"outputs": 1}),
}


@pytest.mark.filterwarnings("ignore:overflow encountered")
@pytest.mark.parametrize("case", list(AGREEMENT_CASES))
def test_dag_and_inner_tuning_select_and_refit_alike(tmp_path, case):
    method, params, tune, metrics, data = AGREEMENT_CASES[case]
    inner, dag = _both_modes(tmp_path, method, params, tune, metrics, **data)
    assert dag["selected_params"] == inner["selected_params"]
    assert dag["validation_score"] == inner["validation_score"]  # null for both when undefined
    assert dag["scores"] == pytest.approx(inner["scores"], nan_ok=True)
    # the same rows were fitted: the same trees
    assert dag["model"]["tree_sha256"] == inner["model"]["tree_sha256"]
    selection = [c["score"] for c in dag["extra"]["selection"]["candidates"]]
    assert selection == [c["score"] for c in inner["extra"]["selection"]["candidates"]]
    if case == "no refit":
        assert inner["model"]["n_nodes"] != _both_modes(tmp_path / "refit", method, params,
                                                        {**tune, "refit": True})[1]["model"]["n_nodes"]
    if case == "one undefined score":
        assert selection[0] is None and inner["selected_params"] == {"learning_rate": 0.1}
    if case == "every score undefined":
        assert inner["validation_score"] is None and inner["selected_params"] == {"max_depth": 2}


def test_stored_candidates_are_not_reused_after_the_data_changes(tmp_path, monkeypatch):
    spec = _spec("sklearn_decision_tree", {}, {"grid": {"max_depth": [1, 3]}}, "dag")
    prepared, split = _toy_files(tmp_path / "data", seed=0)
    first = _chunks(spec, prepared, split, tmp_path / "tuning")
    assert [d["reused"] for d in first] == [0]
    assert [d["reused"] for d in _chunks(spec, prepared, split, tmp_path / "tuning")] == [2]
    # the generator's seed changes: same shape, same split rows, other data
    prepared, split = _toy_files(tmp_path / "data", seed=1)
    again = _chunks(spec, prepared, split, tmp_path / "tuning")
    assert [d["reused"] for d in again] == [0]
    assert [r["score"] for r in again[0]["results"]] != [r["score"] for r in first[0]["results"]]
    # a forced rerun (the workflow sets this for --forcerun tune) recomputes stored candidates too
    monkeypatch.setenv("FORESTBENCH_RECOMPUTE_TUNING", "1")
    assert [d["reused"] for d in _chunks(spec, prepared, split, tmp_path / "tuning")] == [0]


def test_an_invalid_stored_candidate_is_recomputed(tmp_path, capsys):
    import json

    from forestbench.workflow.dag_selection import select

    spec = _spec("sklearn_decision_tree", {}, {"grid": {"max_depth": [1, 3]}}, "dag")
    prepared, split = _toy_files(tmp_path / "data")
    (first,) = _chunks(spec, prepared, split, tmp_path / "tuning")
    stored = sorted((tmp_path / "tuning" / "candidates").glob("*.json"))
    assert len(stored) == 2
    stored[0].write_text("{}")
    stored[1].write_text(json.dumps({**json.loads(stored[1].read_text()), "score": "high"}))
    (again,) = _chunks(spec, prepared, split, tmp_path / "tuning")
    assert again["reused"] == 0 and "is not reused" in capsys.readouterr().err
    best = select(spec, [tmp_path / "tuning" / "chunk-0.json"], tmp_path / "selected.json")
    assert best["params"] == choose(first["results"], "mse")["params"]
    broken = tmp_path / "tuning" / "chunk-0.json"
    broken.write_text(json.dumps({"chunk": 0, "results": [{}]}))
    with pytest.raises(Exception, match=r"chunk-0.json: result 0 cannot be used"):
        select(spec, [broken], tmp_path / "selected.json")


@pytest.mark.parametrize("content, message", [
    ("{}", "reference_seconds = None"), ("[]", "JSON list, not an object"),
    ('{"reference_seconds": 0.1, "multiple": 5, "caps": {}}', "has no stage caps"),
    ('{"reference_seconds": 0.1, "multiple": 5, "caps": {"ab": {"n_stages_max": 0}}}', "n_stages_max = 0"),
    ('{"reference_seconds": 0.1, "multiple": 5, "caps": {"ab": {"n_stages_max": "x"}}}', "n_stages_max = 'x'"),
    ('{"reference_seconds": 0.1, "multiple": 5, "caps": {"ab": 12}}', "n_stages_max = None"),
    ("{nope", "unreadable"),
])
def test_an_invalid_budget_file_is_an_error_naming_it(tmp_path, content, message):
    from forestbench.workflow.dag_selection import read_budget
    from forestbench.errors import DataError

    path = tmp_path / "budget.json"
    path.write_text(content)
    with pytest.raises(DataError, match=rf"budget file {path}.*{message}"):
        read_budget(path)


def test_a_grown_budgeted_grid_measures_and_scores_only_the_new_candidate(tmp_path, monkeypatch):
    from forestbench.workflow import dag_selection
    from forestbench.workflow.dag_selection import read_budget, run_budget

    measured = []

    def fake_seconds(make, params, X, Y, staged, probe_stages=10, repeats=3, per_stage="average"):
        measured.append(dict(params))
        return 1e-3 * (1 + len(measured) % 3)  # a different timing at every measurement, as on a real machine

    monkeypatch.setattr(dag_selection, "seconds_per_stage", fake_seconds)
    tune = {"grid": {"learning_rate": [0.1, 0.3]}, "staged": "n_estimators",
            "budget": {"multiple": 7, "reference": {"method": "sklearn_gbrt", "params": {"max_depth": 1}}}}
    prepared, split = _toy_files(tmp_path / "data", outputs=1)
    folder = tmp_path / "tuning"

    def budget_and_chunks(tune):
        spec = _spec("sklearn_gbrt", {"n_estimators": 50, "max_depth": 1}, tune, "dag")
        run_budget({**spec, "candidates": tuning.candidates(spec["tune"], 0)}, prepared, split,
                   folder / "budget.json")
        budget = read_budget(folder / "budget.json")
        return budget, _chunks(spec, prepared, split, folder, budget=budget)

    budget, docs = budget_and_chunks(tune)
    assert len(measured) == 3 and sum(d["reused"] for d in docs) == 0
    grown, docs = budget_and_chunks({**tune, "grid": {"learning_rate": [0.1, 0.3, 0.9]}})
    assert measured[3:] == [{"learning_rate": 0.9}]
    assert grown["reference_seconds"] == budget["reference_seconds"]
    assert {k: v for k, v in grown["caps"].items() if k in budget["caps"]} == budget["caps"]
    assert sum(d["reused"] for d in docs) == 2 and sum(len(d["results"]) for d in docs) == 3


def test_the_variants_of_a_dataset_share_one_measured_reference_time(tmp_path, monkeypatch):
    """The papers define T per problem: T is measured once per dataset, and every variant's caps are drawn against
    it. The fake clock gives a different figure at every measurement (as a loaded machine does); the second
    variant's budget job must reuse the first one's T, not measure its own, and measure its own candidates only."""
    from forestbench.workflow import dag_selection
    from forestbench.workflow.dag_selection import read_budget, run_budget

    measured = []

    def fake_seconds(make, params, X, Y, staged, probe_stages=10, repeats=3, per_stage="average"):
        measured.append(dict(params))
        return 1e-3 * len(measured)

    monkeypatch.setattr(dag_selection, "seconds_per_stage", fake_seconds)
    tune = {"grid": {"learning_rate": [0.1, 0.3]}, "staged": "n_estimators",
            "budget": {"multiple": 7, "reference": {"method": "sklearn_gbrt", "params": {"max_depth": 1}}}}
    prepared, split = _toy_files(tmp_path / "data", outputs=1)
    budgets = {}
    for variant, depth in (("stumps", 1), ("deeper", 3)):
        spec = {**_spec("sklearn_gbrt", {"n_estimators": 50, "max_depth": depth}, tune, "dag"), "variant": variant}
        out = tmp_path / "tuning" / "e" / "toy" / variant / "budget.json"
        run_budget({**spec, "candidates": tuning.candidates(spec["tune"], 0)}, prepared, split, out)
        budgets[variant] = read_budget(out)
    assert budgets["stumps"]["reference_seconds"] == budgets["deeper"]["reference_seconds"] == 1e-3
    assert len(measured) == 1 + 2 + 2  # one reference, each variant's two candidates
    assert (tmp_path / "tuning" / "e" / "toy" / "budget-measurements").is_dir()


def test_a_reference_time_stored_by_another_job_meanwhile_wins(tmp_path):
    """Two budget jobs timing the same reference at once: the one that stores it second takes the stored figure, so
    that both variants' caps use the same T."""
    from forestbench.workflow.dag_selection import _key, _measured

    what = {"reference": "stumps"}
    folder = tmp_path / "budget-measurements"
    path = folder / f"{_key(what)}.json"

    def measure_while_another_job_stores():
        folder.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"fingerprint": _key(what), "seconds_per_stage": 0.002, "what": what}))
        return 0.005

    assert _measured(folder, what, measure_while_another_job_stores) == 0.002
    assert json.loads(path.read_text())["seconds_per_stage"] == 0.002
    assert _measured(folder, what, lambda: pytest.fail("a stored measurement is reused")) == 0.002
    assert not [p for p in folder.iterdir() if p != path]  # no temporary file left


def test_budget_timings_are_cpu_time_not_wall_time():
    """A fit that waits (as one does when other jobs hold the cores) is charged only the work it does."""
    from forestbench.workflow.selection import seconds_per_stage

    class Waits:
        def __init__(self, n_estimators):
            self.n_estimators = n_estimators

        def fit(self, X, Y):
            time.sleep(0.02 * self.n_estimators)
            return self

    per_stage = seconds_per_stage(lambda p: Waits(**p), {}, None, None, "n_estimators", probe_stages=5, repeats=1)
    assert per_stage < 0.002  # 0.02 s of wall per stage


class _ClockedFit:
    """A fit that costs ``setup`` CPU seconds once and ``stage`` per stage, on a fake process clock; with
    ``records``, it keeps the clock after every stage as forestbench's boosting does (``stage_fit_cpu_seconds_``),
    and a set-up that varies from fit to fit (``jitter``, cycled) never reaches that record's differences."""
    clock = [0.0]
    fits = [0]

    def __init__(self, n_estimators, setup, stage, records=False, jitter=(0.0,)):
        self.n_estimators, self.setup, self.stage, self.records, self.jitter = (n_estimators, setup, stage, records,
                                                                                 jitter)

    def fit(self, X, Y):
        setup = self.setup + self.jitter[self.fits[0] % len(self.jitter)]
        self.fits[0] += 1
        start = self.clock[0]
        self.clock[0] += setup + self.stage * self.n_estimators
        if self.records:
            self.stage_fit_cpu_seconds_ = setup + self.stage * np.arange(1, self.n_estimators + 1)
        assert self.clock[0] > start
        return self


@pytest.mark.parametrize("records", [True, False])
def test_a_marginal_stage_time_leaves_the_fits_set_up_out(monkeypatch, records):
    """``per_stage: average`` spreads a fit's one-off set-up over the 10 timed stages; ``marginal`` charges the
    stages only: from the CPU clock the fit records after each stage, else from the difference of a 30- and a
    10-stage fit."""
    from forestbench.workflow import selection
    from forestbench.workflow.selection import seconds_per_stage

    monkeypatch.setattr(selection.time, "process_time", lambda: _ClockedFit.clock[0])

    def make(p):
        return _ClockedFit(**p, records=records)

    params = {"setup": 0.017, "stage": 0.0002}
    assert seconds_per_stage(make, params, None, None, "n_estimators") == pytest.approx(0.0002 + 0.0017)
    assert seconds_per_stage(make, params, None, None, "n_estimators", per_stage="marginal") == pytest.approx(0.0002)
    # no set-up: both readings agree
    flat = {"setup": 0.0, "stage": 0.003}
    assert seconds_per_stage(make, flat, None, None, "n_estimators", per_stage="marginal") == pytest.approx(
        seconds_per_stage(make, flat, None, None, "n_estimators"))
    # a set-up that varies by 4 ms between fits: the fit's own clock is not moved by it, two fits' difference is
    jittered = {"setup": 0.017, "stage": 0.0002, "jitter": (0.0, 0.004)}
    marginal = seconds_per_stage(make, jittered, None, None, "n_estimators", per_stage="marginal", repeats=1)
    assert marginal == pytest.approx(0.0002) if records else abs(marginal - 0.0002) > 0.0001
    with pytest.raises(ConfigError, match="per_stage must be one of average, marginal"):
        seconds_per_stage(make, flat, None, None, "n_estimators", per_stage="total")


def test_boosting_records_the_cpu_clock_after_every_stage():
    from forestbench.boosting import GBMORTRegressor

    rng = np.random.default_rng(0)
    X, Y = rng.random((300, 20)), rng.normal(size=(300, 3))
    est = GBMORTRegressor(n_estimators=25, max_leaf_nodes=4, random_state=0).fit(X, Y)
    clock = est.stage_fit_cpu_seconds_
    assert clock.shape == (25,) and clock[0] > 0 and np.all(np.diff(clock) >= 0) and clock[-1] > clock[0]
    assert clock[-1] <= est.stage_fit_seconds_[-1] * 1.5 + 0.05      # one thread: CPU no more than its wall


def test_a_marginal_budget_has_caps_of_its_own(tmp_path, monkeypatch):
    """A budget timed by the marginal stage says so in its file and keeps its measurements under fingerprints of
    their own, so that an average-timed budget of the same dataset never reuses them (nor the reverse)."""
    from forestbench.workflow import selection
    from forestbench.workflow.dag_selection import read_budget, run_budget

    tune = {"grid": {"learning_rate": [0.1, 0.3]}, "staged": "n_estimators",
            "budget": {"multiple": 7, "reference": {"method": "sklearn_gbrt", "params": {"max_depth": 1}}}}
    prepared, split = _toy_files(tmp_path / "data", outputs=1)
    calls = []

    def fake_seconds(make, params, X, Y, staged, probe_stages=10, repeats=3, per_stage="average"):
        calls.append(per_stage)
        return {"average": 2e-3, "marginal": 5e-4}[per_stage] * (1 + params.get("learning_rate", 0))

    monkeypatch.setattr("forestbench.workflow.dag_selection.seconds_per_stage", fake_seconds)
    budgets = {}
    for timing in ("average", "marginal"):
        t = {**tune, "budget": {**tune["budget"], **({} if timing == "average" else {"per_stage": timing})}}
        spec = {**_spec("sklearn_gbrt", {"n_estimators": 500, "max_depth": 2}, t, "dag"), "variant": "v"}
        out = tmp_path / "tuning" / "e" / "toy" / timing / "budget.json"
        run_budget({**spec, "candidates": tuning.candidates(spec["tune"], 0)}, prepared, split, out)
        budgets[timing] = read_budget(out)
    assert calls == ["average"] * 3 + ["marginal"] * 3            # nothing of the other timing reused
    assert "per_stage" not in budgets["average"] and budgets["marginal"]["per_stage"] == "marginal"
    assert budgets["marginal"]["reference_seconds"] == 5e-4
    assert sorted(c["n_stages_max"] for c in budgets["marginal"]["caps"].values()) == [int(7 / 1.3), int(7 / 1.1)]
    assert selection.PER_STAGE == ("average", "marginal", "sklearn_trees", "sklearn_trees_plus_outputs")


def test_a_stage_of_each_boosting_method_is_the_trees_it_grows():
    """``stage_targets``: br-gbrt grows one tree per output, gbmort one on every output, gbrt-rpo and
    gbrt-relabel-rpo one on the projected residuals, drawn as the variant draws them."""
    from forestbench.workflow.methods import get_method
    from forestbench.workflow.selection import first_stage_residuals

    rng = np.random.default_rng(0)
    Y = (rng.random((40, 5)) < 0.3).astype(float)
    R = first_stage_residuals(Y)
    assert np.allclose(R.mean(axis=0), 0) and np.allclose(R, Y - Y.mean(axis=0))
    st = get_method("st_gbrt").stage_targets({}, R, 0)
    assert len(st) == 5 and all(np.array_equal(Z[:, 0], R[:, j]) for j, Z in enumerate(st))
    (shared,) = get_method("gbmort").stage_targets({}, R, 0)
    assert np.array_equal(shared, R)
    (column,) = get_method("gbrt_rpo").stage_targets({"output_projection": "subsample", "n_components": 1}, R, 3)
    # one output of the residuals, scaled as the random output subspace scales it (sqrt(d / q))
    assert column.shape == (40, 1) and any(np.allclose(column[:, 0], np.sqrt(5) * R[:, j]) for j in range(5))
    (gauss,) = get_method("gbrt_relabel_rpo").stage_targets({"output_projection": "gaussian", "n_components": 2},
                                                             R, 3)
    assert gauss.shape == (40, 2) and not any(np.allclose(gauss[:, 0], R[:, j]) for j in range(5))
    assert get_method("sklearn_gbrt").stage_targets is None


def test_sklearn_stage_seconds_fits_one_tree_per_target(monkeypatch):
    """The clock of ``per_stage: sklearn_trees``: scikit-learn's trees with the candidate's leaves and features,
    one per target of the stage, timed in CPU seconds; the method's own fit is not what it times."""
    import sklearn.tree

    from forestbench.workflow import selection

    fitted = []
    real_fit = sklearn.tree.DecisionTreeRegressor.fit

    def spy(self, X, y, *args, **kwargs):
        fitted.append((self.max_leaf_nodes, self.max_features, X.dtype.name, X.flags.c_contiguous, np.shape(y)))
        return real_fit(self, X, y, *args, **kwargs)

    monkeypatch.setattr(sklearn.tree.DecisionTreeRegressor, "fit", spy)
    rng = np.random.default_rng(0)
    X = np.asfortranarray(rng.random((50, 6)))
    targets = [rng.normal(size=(50, 1)) for _ in range(3)]
    seconds = selection.sklearn_stage_seconds(X, targets, {"max_leaf_nodes": 4, "max_features": 0.5,
                                                           "learning_rate": 0.1}, seed=0, repeats=2)
    assert seconds >= 0 and len(fitted) == 6
    assert set(fitted) == {(4, 0.5, "float32", True, (50, 1))}
    with pytest.raises(ConfigError, match="sklearn_trees"):
        selection.seconds_per_stage(lambda p: None, {}, X, targets[0], "n_estimators", per_stage="sklearn_trees")


def test_a_budget_timed_by_scikit_learns_trees(tmp_path, monkeypatch):
    """``per_stage: sklearn_trees``: T is scikit-learn's trees on the reference's stage (one tree on every
    output), a candidate's stage is theirs on its method's stage (br-gbrt: one tree per output), each tree
    setting measured once whatever its learning rates and losses, and the caps are the multiple of T over it."""
    from forestbench.workflow import dag_selection
    from forestbench.workflow.dag_selection import read_budget, run_budget

    timed = []

    def fake(X, targets, params, seed=None, repeats=3):
        timed.append(([np.shape(Z) for Z in targets], params.get("max_leaf_nodes"), repeats))
        return 1e-4 * sum(np.shape(Z)[1] for Z in targets) * params.get("max_leaf_nodes", 2)

    monkeypatch.setattr(dag_selection, "sklearn_stage_seconds", fake)
    tune = {"grid": {"learning_rate": [0.1, 0.5], "loss": ["square", "logistic"], "max_leaf_nodes": [2, 5]},
            "staged": "n_estimators", "metric": "mse",
            "budget": {"multiple": 30, "per_stage": "sklearn_trees",
                       "reference": {"method": "gbmort", "params": {"max_leaf_nodes": 2, "loss": "square"}}}}
    prepared, split = _toy_files(tmp_path / "data", outputs=2)
    spec = _spec("st_gbrt", {"n_estimators": 10000}, tune, "dag")
    out = tmp_path / "tuning" / "e" / "toy" / "v" / "budget.json"
    run_budget({**spec, "candidates": tuning.candidates(spec["tune"], 0)}, prepared, split, out)
    budget = read_budget(out)
    n = 45  # the training part of the toy split
    assert timed[0] == ([(n, 2)], 2, 5)                           # T: one tree on both outputs, 5 repeats
    assert sorted(t[1] for t in timed[1:]) == [2, 5]               # one measurement per tree setting, not 8
    assert all(t[0] == [(n, 1), (n, 1)] and t[2] == 3 for t in timed[1:])
    assert budget["per_stage"] == "sklearn_trees" and budget["reference_seconds"] == pytest.approx(4e-4)
    caps = {c["params"]["max_leaf_nodes"]: c["n_stages_max"] for c in budget["caps"].values()}
    assert caps == {2: int(30 * 4e-4 / 4e-4), 5: int(30 * 4e-4 / 1e-3)}
    assert len(budget["caps"]) == 8
    # a rerun measures nothing again
    run_budget({**spec, "candidates": tuning.candidates(spec["tune"], 0)}, prepared, split, out)
    assert len(timed) == 3
    # a method that does not declare its stage's trees cannot be timed so
    other = _spec("sklearn_gbrt", {"n_estimators": 50}, {**tune, "grid": {"learning_rate": [0.1]}}, "dag")
    with pytest.raises(ConfigError, match="sklearn_gbrt.*stage_targets"):
        run_budget({**other, "candidates": tuning.candidates(other["tune"], 0)}, prepared, split,
                   tmp_path / "other" / "budget.json")


def test_write_json_if_absent_keeps_the_first_writer(tmp_path):
    from forestbench._io import write_json_if_absent

    path = tmp_path / "sub" / "m.json"
    assert write_json_if_absent(path, {"a": 1}) is True
    assert write_json_if_absent(path, {"a": 2}) is False
    assert json.loads(path.read_text()) == {"a": 1}
    assert sorted(p.name for p in path.parent.iterdir()) == ["m.json"]


def test_write_json_if_absent_without_hard_links(tmp_path, monkeypatch):
    """On a file system that refuses hard links the first writer still wins when the writers come one after the
    other, and no temporary file is left."""
    import errno
    import os

    from forestbench._io import write_json_if_absent

    def no_links(src, dst):
        raise OSError(errno.EPERM, "hard links not supported")

    monkeypatch.setattr(os, "link", no_links)
    path = tmp_path / "m.json"
    assert write_json_if_absent(path, {"a": 1}) is True
    assert write_json_if_absent(path, {"a": 2}) is False
    assert json.loads(path.read_text()) == {"a": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["m.json"]


def test_output_stage_seconds_is_the_stage_clock_less_the_trees():
    """The per-output work of ``per_stage: sklearn_trees_plus_outputs``: one fit of MARGINAL_STAGES stages at the
    probe's one feature and learning rate, its clock over stages 2..S less the trees' share, per stage; measured
    by the loss, the leaves and the projection, not by the features per split or the learning rate."""
    from forestbench.workflow import selection

    built = []

    class Recorded:
        def __init__(self, params):
            built.append(params)

        def fit(self, X, Y):
            S = selection.MARGINAL_STAGES
            self.stage_fit_cpu_seconds_ = 0.5 + 0.003 * np.arange(1, S + 1)    # 3 ms a stage after a set-up
            self.stage_tree_cpu_seconds_ = 0.001 * np.arange(1, S + 1)         # of which 1 ms is the trees'
            return self

    params = {"learning_rate": 0.5, "max_features": "sqrt", "max_leaf_nodes": 5, "loss": "logistic",
              "n_estimators": 9}
    seconds = selection.output_stage_seconds(Recorded, params, None, None, "n_estimators", repeats=2)
    assert seconds == pytest.approx(0.002)
    assert built == [{"max_leaf_nodes": 5, "loss": "logistic", "max_features": 1, "learning_rate": 0.1,
                      "tree_builder": "kernel", "n_estimators": selection.MARGINAL_STAGES,
                      "monitor_tree_time": True}] * 2
    assert selection.output_stage_key(params, "n_estimators") == {"max_leaf_nodes": 5, "loss": "logistic"}

    class Unrecorded:
        def __init__(self, params):
            pass

        def fit(self, X, Y):
            self.stage_fit_cpu_seconds_ = np.arange(selection.MARGINAL_STAGES, dtype=float)
            return self

    with pytest.raises(ConfigError, match="Unrecorded.*stage_tree_cpu_seconds_"):
        selection.output_stage_seconds(Unrecorded, params, None, None, "n_estimators")


def test_output_stage_seconds_on_forestbench_boosting_grows_with_the_outputs():
    """On the real loop: the trees' clock is part of the stage's, and a stage's per-output work grows with d
    while its trees (one single-output tree a stage, gbrt-rpo) stay what they are."""
    from forestbench.boosting import GBRTRPORegressor
    from forestbench.workflow import selection

    rng = np.random.default_rng(0)
    X = rng.random((400, 5)).astype(np.float32)

    def make(p):
        return GBRTRPORegressor(**p, random_state=0)

    work = {}
    for d in (2, 400):
        Y = (rng.random((400, d)) < 0.3).astype(float)
        est = make({"n_estimators": 30, "max_features": 1, "monitor_tree_time": True}).fit(X, Y)
        clock, trees = est.stage_fit_cpu_seconds_, est.stage_tree_cpu_seconds_
        assert np.all(np.diff(trees) >= 0) and np.all(np.diff(clock) >= 0) and trees[-1] <= clock[-1]
        work[d] = selection.output_stage_seconds(make, {"loss": "square", "max_leaf_nodes": 2}, X, Y,
                                                 "n_estimators", repeats=3)
    # 200x the outputs: far more than the clocks' jitter
    assert work[400] > 20 * work[2] > 0
    assert not hasattr(make({"n_estimators": 3}).fit(X, Y), "stage_tree_cpu_seconds_")


def test_a_budget_timed_by_scikit_learns_trees_plus_the_output_work(tmp_path, monkeypatch):
    """``per_stage: sklearn_trees_plus_outputs``: T and every candidate's stage are scikit-learn's trees plus
    the stage's per-output work, the latter measured once per loss and leaves; the caps are the multiple of
    T over it, and none of the measurements is shared with the trees-only reading."""
    from forestbench.workflow import dag_selection
    from forestbench.workflow.dag_selection import read_budget, run_budget

    trees, outputs = [], []

    def fake_trees(X, targets, params, seed=None, repeats=3):
        trees.append((params.get("max_leaf_nodes"), params.get("max_features")))
        return 1e-4 * sum(np.shape(Z)[1] for Z in targets)

    def fake_outputs(make, params, X, Y, staged, repeats=3):
        built = type(make({"n_estimators": 2, "monitor_tree_time": True})).__name__
        outputs.append((built, params.get("max_leaf_nodes"), params.get("loss"), repeats))
        return 2e-4 if params.get("loss") == "logistic" else 1e-4

    monkeypatch.setattr(dag_selection, "sklearn_stage_seconds", fake_trees)
    monkeypatch.setattr(dag_selection, "output_stage_seconds", fake_outputs)
    tune = {"grid": {"learning_rate": [0.1, 0.5], "loss": ["square", "logistic"], "max_features": [1, 2]},
            "staged": "n_estimators", "metric": "mse",
            "budget": {"multiple": 30, "per_stage": "sklearn_trees_plus_outputs",
                       "reference": {"method": "gbmort", "params": {"max_leaf_nodes": 2, "loss": "square"}}}}
    prepared, split = _toy_files(tmp_path / "data", outputs=2)
    spec = _spec("st_gbrt", {"n_estimators": 10000, "max_leaf_nodes": 3}, tune, "dag")
    out = tmp_path / "tuning" / "e" / "toy" / "v" / "budget.json"
    run_budget({**spec, "candidates": tuning.candidates(spec["tune"], 0)}, prepared, split, out)
    budget = read_budget(out)
    # the reference (gbmort: one tree on both outputs), then two tree settings and two losses of the candidates
    assert trees == [(2, None), (3, 1), (3, 2)]
    assert outputs == [("GBMORTRegressor", 2, "square", 5), ("STGradientBoostingRegressor", 3, "square", 3),
                       ("STGradientBoostingRegressor", 3, "logistic", 3)]
    T = 2e-4 + 1e-4
    assert budget["per_stage"] == "sklearn_trees_plus_outputs" and budget["reference_seconds"] == pytest.approx(T)
    caps = {(c["params"]["loss"], c["params"]["max_features"]): c["n_stages_max"] for c in budget["caps"].values()}
    # br-gbrt's stage: two single-output trees (2e-4) plus its per-output work
    assert caps == {("square", 1): int(30 * T / 3e-4), ("square", 2): int(30 * T / 3e-4),
                    ("logistic", 1): int(30 * T / 4e-4), ("logistic", 2): int(30 * T / 4e-4)}
    # the trees-only reading of the same grid measures afresh, under fingerprints of its own
    only = {**tune, "budget": {**tune["budget"], "per_stage": "sklearn_trees"}}
    spec = _spec("st_gbrt", {"n_estimators": 10000, "max_leaf_nodes": 3}, only, "dag")
    run_budget({**spec, "candidates": tuning.candidates(spec["tune"], 0)}, prepared, split,
               tmp_path / "tuning" / "e" / "toy" / "w" / "budget.json")
    assert len(trees) == 6 and len(outputs) == 3
