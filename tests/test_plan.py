"""``forestbench plan``: job counts from the experiments expansion, core-hours from records or the stated model."""
import functools
import gzip
import json
import math
import statistics
from pathlib import Path

import numpy as np
import pytest

from forestbench.workflow import resources as R
from forestbench.cli import main
from forestbench.errors import DataError
from forestbench.workflow.experiments import Plan
from forestbench.workflow.experiments import merge_config
from forestbench.workflow.plan import load_config, make_plan, read_timings, suggest_chunk, summarize

REPO = Path(__file__).resolve().parents[1]
REGISTRY = str(REPO / "config" / "datasets.yaml")


def _config(**extra):
    config = {
        "datasets_registry": REGISTRY,
        "seed": 0,
        "experiments": {
            "a": {"datasets": ["linnerud", "sf2"], "protocol": "demo", "metrics": ["macro_r2"],
                  "methods": [{"name": "rf{n_estimators}", "method": "sklearn_random_forest",
                               "grid": {"n_estimators": [5, 50]}}]},
            "b": {"datasets": ["linnerud"], "protocol": "demo", "metrics": ["macro_r2"], "threads": 2,
                  "methods": [{"name": "et", "method": "sklearn_extra_trees", "params": {"n_estimators": 10}}]},
        },
    }
    config.update(extra)
    return config


def _plan(**extra):
    return Plan(_config(**extra), source="test", schema_dir=REPO / "workflow" / "schemas")


def _write_record(root: Path, experiment, dataset, variant, repeat, fit, predict, *, plan=None, n_train=None,
                  like=None, cpu=None, peak_mb=None, **params):
    """A run record as the fit job writes it (its spec, parameters and training rows); ``like`` =
    (experiment, variant) whose spec it copies when ``experiment``/``variant`` are not in the plan; ``params``
    change the recorded parameters."""
    from forestbench.workflow.experiments import Job
    from forestbench.workflow.plan import training_shape

    plan = plan or _plan()
    src_exp, src_var = like or (experiment, variant)
    spec = plan.run_spec(Job(src_exp, dataset, src_var, repeat))
    spec = json.loads(json.dumps(dict(spec, experiment=experiment, variant=variant,
                                      params={**spec["params"], **params})))
    if n_train is None:
        n_train = training_shape(plan.registry[dataset]["shape"],
                                 plan.protocol_spec(dataset, plan.experiments[src_exp].protocol))["n"]
    path = root / "runs" / experiment / dataset / variant / f"repeat-{repeat}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"spec": spec, "experiment": experiment, "dataset": dataset, "variant": variant,
                                "method": spec["method"], "params": spec["params"], "n_train": n_train,
                                "fit_wall_s": fit, "predict_wall_s": predict,
                                **({"fit_cpu_s": cpu[0], "predict_cpu_s": cpu[1]} if cpu else {}),
                                **({"peak_rss_mb": peak_mb} if peak_mb is not None else {})}))


def test_job_counts_follow_the_expansion(tmp_path):
    plan = _plan()
    report = make_plan(plan, results=tmp_path)
    # linnerud demo: 5 folds, sf2 demo: 3 folds; experiment a has 2 variants, b has 1
    assert report.jobs == {"fetch": 0, "prepare": 2, "split": 2, "budget": 0, "tune": 0, "select": 0,
                           "fit": 2 * (5 + 3) + 5, "collect": 2, "report_experiment": 2, "report_index": 1}
    assert report.jobs["fit"] == len(plan.jobs())
    chunked = make_plan(plan, results=tmp_path, chunk=4)
    assert chunked.slurm_jobs["fit"] == math.ceil(16 / 4) + math.ceil(5 / 4)
    assert chunked.slurm_jobs["prepare"] == 2


def test_max_repeats_and_select_reduce_the_plan(tmp_path):
    report = make_plan(_plan(max_repeats=2, select={"experiments": ["a"]}), results=tmp_path)
    assert report.jobs == {"fetch": 0, "prepare": 2, "split": 2, "budget": 0, "tune": 0, "select": 0,
                           "fit": 2 * 2 * 2, "collect": 1, "report_experiment": 1, "report_index": 1}


def test_model_estimate_without_records(tmp_path):
    report = make_plan(_plan(), results=tmp_path)
    assert {v.source for v in report.variants} == {"model"}
    v = next(v for v in report.variants if v.experiment == "b")
    # linnerud's demo protocol is a 5-fold CV of its 20 rows: a fit sees 16 of them
    expected = R.job_seconds(16, 3, 3, 10, threads=2, max_features=3)
    assert v.wall_s == pytest.approx(expected)
    assert v.core_hours == pytest.approx(5 * 2 * expected / 3600)
    other = (2 + 2 + 2 + 2 + 1) * R.STARTUP_S / 3600
    assert report.core_hours == pytest.approx(sum(x.core_hours for x in report.variants) + other)
    assert v.mem_mb == R.fit_requests({"n": 20, "p": 3, "d": 3}, {"n_estimators": 10})["mem_mb"]


def test_recorded_times_replace_the_model(tmp_path):
    for r, (fit, pred) in enumerate([(100.0, 10.0), (200.0, 10.0)]):
        _write_record(tmp_path, "a", "sf2", "rf50", r, fit, pred)
    # same dataset and parameters, other experiment
    _write_record(tmp_path, "zzz", "linnerud", "et", 0, 40.0, 0.0, like=("b", "et"))
    report = make_plan(_plan(), results=tmp_path)
    rows = {(v.experiment, v.dataset, v.variant): v for v in report.variants}
    own = rows[("a", "sf2", "rf50")]
    assert own.source == "recorded" and own.n_records == 2
    assert own.wall_s == pytest.approx(R.STARTUP_S + 160.0)
    assert own.core_hours == pytest.approx(3 * 1 * (R.STARTUP_S + 160.0) / 3600)
    elsewhere = rows[("b", "linnerud", "et")]
    assert elsewhere.source == "recorded-elsewhere"
    assert elsewhere.core_hours == pytest.approx(5 * 2 * (R.STARTUP_S + 40.0) / 3600)
    assert rows[("a", "linnerud", "rf5")].source == "model"


def test_core_hours_come_from_the_records_cpu_time_not_their_loaded_wall_time(tmp_path):
    # a record made while other work shared the cores: 100 s of wall for 10 s of CPU. The fit takes 10 s on a
    # machine of its own, which is what a core-hour estimate charges; the time request still covers the 100 s
    _write_record(tmp_path, "a", "sf2", "rf50", 0, 95.0, 5.0, cpu=(9.0, 1.0))
    report = make_plan(_plan(), results=tmp_path)
    own = {(v.experiment, v.dataset, v.variant): v for v in report.variants}[("a", "sf2", "rf50")]
    assert own.source == "recorded"
    assert own.wall_s == pytest.approx(R.STARTUP_S + 10.0)
    assert own.runtime_min * 60 >= R.STARTUP_S + 100.0


def test_broken_records_are_named(tmp_path):
    path = tmp_path / "runs" / "a" / "sf2" / "rf5" / "repeat-0.json"
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    with pytest.raises(DataError, match="repeat-0.json"):
        read_timings(tmp_path)
    path.write_text(json.dumps({"experiment": "a", "dataset": "sf2", "variant": "rf5"}))
    with pytest.raises(DataError, match="fit_wall_s"):
        read_timings(tmp_path)


def test_suggested_chunk_targets_the_job_length(tmp_path):
    _write_record(tmp_path, "b", "linnerud", "et", 0, 60.0 - R.STARTUP_S, 0.0)  # one fit = 60 s with start-up
    plan = _plan(select={"experiments": ["b"]})
    report = make_plan(plan, results=tmp_path)
    # experiment b runs two threads a fit: a 4-core SLURM job runs two fits side by side, a 30-minute job holds 30
    # waves of them; the suggestion is the largest power of two below (32), at most the experiment's 5 fits
    assert suggest_chunk(report, target_minutes=30, cores=4) == 5
    assert suggest_chunk(report, target_minutes=0.5, cores=4) == 2
    assert suggest_chunk(report, target_minutes=0.5, cores=1) == 1


def test_merge_config_is_recursive_like_snakemake(tmp_path):
    assert merge_config({"a": {"x": 1, "y": 2}, "b": 1}, {"a": {"y": 3}, "c": 4}) == \
        {"a": {"x": 1, "y": 3}, "b": 1, "c": 4}
    base = tmp_path / "base.yaml"
    base.write_text("seed: 1\nexperiments:\n  one: {x: 1}\n")
    more = tmp_path / "more.yaml"
    more.write_text("seed: 2\nexperiments:\n  two: {x: 2}\n")
    # as the Snakefile: --configfile replaces the default configuration, several of them merge
    config, source = load_config([more], base)
    assert config == {"seed": 2, "experiments": {"two": {"x": 2}}} and source == str(more)
    config, source = load_config([base, more], "unused.yaml")
    assert config == {"seed": 2, "experiments": {"one": {"x": 1}, "two": {"x": 2}}}
    config, source = load_config([], base)
    assert config == {"seed": 1, "experiments": {"one": {"x": 1}}} and source == str(base)


def test_cli_prints_table_and_json(tmp_path, capsys):
    cfg = tmp_path / "c.yaml"
    import yaml
    cfg.write_text(yaml.safe_dump(_config()))
    assert main(["plan", "--configfile", str(cfg), "--results", str(tmp_path), "--chunk", "4"]) == 0
    out = capsys.readouterr().out
    assert "fit 21," in out and "Core-hours" in out and "model" in out
    # ceil(16 / 4) + ceil(5 / 4) fit SLURM jobs and 4 others (2 prepare, 2 split; collect and the reports are
    # local rules)
    assert "10 with fit_{experiment}=4" in out
    # compact by default: one row per experiment, the per-variant listing only with --verbose
    rows = [line for line in out.splitlines() if line.startswith("  a ") or line.startswith("  b ")]
    assert len(rows) == 2 and "rf50" not in out
    assert main(["plan", "--configfile", str(cfg), "--results", str(tmp_path), "--verbose"]) == 0
    assert "rf50" in capsys.readouterr().out
    assert main(["plan", "--configfile", str(cfg), "--results", str(tmp_path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["jobs"]["fit"] == 21 and data["core_hours"] > 0
    assert len(data["variants"]) == 5
    assert [e["experiment"] for e in data["experiments"]] == ["a", "b"]


def test_cli_reports_a_missing_configfile(tmp_path, capsys):
    assert main(["plan", "--configfile", str(tmp_path / "nope.yaml")]) == 2
    assert "nope.yaml" in capsys.readouterr().err


def test_downloaded_datasets_count_their_raw_files(tmp_path):
    from forestbench.datasets.download import remote_files
    from forestbench.datasets.registry import get_entry

    config = _config()
    config["experiments"] = {"m": {"datasets": ["emotions", "yeast"], "protocol": "standard", "metrics": ["lrap"],
                                   "methods": [{"name": "rf", "method": "sklearn_random_forest"}]}}
    plan = Plan(config, source="test", schema_dir=REPO / "workflow" / "schemas")
    report = make_plan(plan, results=tmp_path)
    n_files = len(remote_files(get_entry(plan.registry, "emotions")))
    assert n_files >= 2  # train and test ARFF files at least
    assert report.jobs["fetch"] == n_files  # yeast is embedded: nothing to fetch
    assert report.jobs["prepare"] == 2


def test_a_tuning_budget_caps_the_planned_candidate_cost():
    # 10 000 boosting iterations per candidate, capped at 20 stages of a stump reference: the planned search costs
    # at most 20 reference stages per candidate, far below the uncapped model, and the refit is capped alike
    from forestbench.workflow.methods import get_method
    from forestbench.workflow.plan import variant_cost

    tune = {"grid": {"learning_rate": [0.1, 0.5], "max_leaf_nodes": [2, 8]}, "validation": {"holdout": 0.2},
            "metric": "macro_r2", "staged": "n_estimators", "mode": "dag", "chunk": 2}
    method = {"name": "gb", "method": "gbmort", "params": {"n_estimators": 10000}}

    def costs(budget):
        t = dict(tune, budget=budget) if budget else tune
        config = _config(experiments={"g": {"datasets": ["linnerud"], "protocol": "demo", "metrics": ["macro_r2"],
                                            "methods": [dict(method, tune=t)]}})
        exp = Plan(config, source="test", schema_dir=REPO / "workflow" / "schemas").experiments["g"]
        return exp, variant_cost(exp, exp.runnable_variants[0], {"n": 20, "p": 3, "d": 3}, False)

    exp, (final_free, chunk_free) = costs(None)
    reference = {"method": "gbmort", "params": {"max_leaf_nodes": 2}}
    _, (final, chunk) = costs({"multiple": 20, "reference": reference})
    # T as the budget job times it: a fit of 10 stages on the training part (20 rows), divided by 10
    one_stage = get_method("gbmort").cost_of(20, 3, 3, {"max_leaf_nodes": 2, "n_estimators": 10}).fit_seconds / 10
    n_chunks = exp.n_chunks(exp.runnable_variants[0])
    assert chunk.fit_seconds - chunk.scoring_seconds == pytest.approx(4 * 20 * one_stage / n_chunks)
    assert chunk.fit_seconds - chunk.scoring_seconds < (chunk_free.fit_seconds - chunk_free.scoring_seconds) / 100
    # the capped candidates run fewer stages, so they score fewer of them too
    assert 0 < chunk.scoring_seconds < chunk_free.scoring_seconds
    assert final.fit_seconds == pytest.approx(min(final_free.fit_seconds, 20 * one_stage * 20 / 16))


def test_a_marginal_budget_is_charged_the_stages_own_work_plus_each_fits_set_up():
    # per_stage: marginal times T as 20 more reference stages / 20 (the cost model's set-up cancels), and a capped
    # candidate costs the budget plus its own set-up (its 10-stage cost less 10 of its marginal stages)
    from forestbench.workflow.methods import get_method
    from forestbench.workflow.plan import variant_cost

    grid = {"learning_rate": [0.1], "max_leaf_nodes": [2, 8]}
    tune = {"grid": grid, "validation": {"holdout": 0.2}, "metric": "macro_r2", "staged": "n_estimators",
            "mode": "dag", "chunk": 2,
            "budget": {"multiple": 20, "per_stage": "marginal",
                       "reference": {"method": "gbmort", "params": {"max_leaf_nodes": 2}}}}
    config = _config(experiments={"g": {"datasets": ["linnerud"], "protocol": "demo", "metrics": ["macro_r2"],
                                        "methods": [{"name": "gb", "method": "gbmort",
                                                     "params": {"n_estimators": 10000}, "tune": tune}]}})
    exp = Plan(config, source="test", schema_dir=REPO / "workflow" / "schemas").experiments["g"]
    _, chunk = variant_cost(exp, exp.runnable_variants[0], {"n": 200, "p": 30, "d": 3}, False)
    gb = get_method("gbmort")

    def cost(rows, leaves, stages):
        return gb.cost_of(rows, 30, 3, {"max_leaf_nodes": leaves, "learning_rate": 0.1, "n_estimators": stages}
                          ).fit_seconds

    T = (cost(200, 2, 30) - cost(200, 2, 10)) / 20
    assert T > 0 and T < cost(200, 2, 10) / 10                  # the set-up is left out of T
    expect = 0.0
    for leaves in (2, 8):
        per = (cost(160, leaves, 30) - cost(160, leaves, 10)) / 20
        setup = cost(160, leaves, 10) - 10 * per
        expect += min(cost(160, leaves, 10000), 20 * T + setup)
    assert chunk.fit_seconds - chunk.scoring_seconds == pytest.approx(expect / exp.n_chunks(exp.runnable_variants[0]))


def test_a_budget_in_scikit_learns_tree_time_caps_by_their_cost_model():
    # per_stage: sklearn_trees counts the caps in scikit-learn's trees (sklearn_tree_seconds, one tree per target of
    # the stage: st-gbrt d single-output trees, the gbmort reference one d-output tree); the capped candidates run
    # our fits for that many stages. The budget job fits scikit-learn's trees: the reference 5 times, each tree
    # setting 3 times (the two learning rates share one)
    from forestbench.workflow.methods import get_method
    from forestbench.workflow.plan import budget_cost, sklearn_stage_cost, variant_cost
    from forestbench.workflow.resources import sklearn_tree_seconds

    grid = {"learning_rate": [0.1, 0.5], "max_leaf_nodes": [2, 8]}
    tune = {"grid": grid, "validation": {"holdout": 0.2}, "metric": "macro_r2", "staged": "n_estimators",
            "mode": "dag", "chunk": 2,
            "budget": {"multiple": 20, "per_stage": "sklearn_trees",
                       "reference": {"method": "gbmort", "params": {"max_leaf_nodes": 2}}}}
    config = _config(experiments={"g": {"datasets": ["linnerud"], "protocol": "demo", "metrics": ["macro_r2"],
                                        "methods": [{"name": "gb", "method": "st_gbrt",
                                                     "params": {"n_estimators": 10000}, "tune": tune}]}})
    exp = Plan(config, source="test", schema_dir=REPO / "workflow" / "schemas").experiments["g"]
    (gb,) = exp.runnable_variants
    st = get_method("st_gbrt")

    def tree(rows, outputs, leaves):
        return sklearn_tree_seconds(rows, 30, outputs, {"max_leaf_nodes": leaves})

    T = tree(200, 3, 2)
    assert sklearn_stage_cost(get_method("gbmort"), {"max_leaf_nodes": 2}, 200, 30, 3) == pytest.approx(T)
    expect = 0.0
    for lr in (0.1, 0.5):
        for leaves in (2, 8):
            stage = 3 * tree(160, 1, leaves)
            assert sklearn_stage_cost(st, {"learning_rate": lr, "max_leaf_nodes": leaves}, 160, 30, 3) == \
                pytest.approx(stage)
            stages = int(20 * T / stage)
            assert stages >= 1
            params = {"learning_rate": lr, "max_leaf_nodes": leaves}
            expect += min(st.cost_of(160, 30, 3, {**params, "n_estimators": 10000}).fit_seconds,
                          st.cost_of(160, 30, 3, {**params, "n_estimators": stages}).fit_seconds)
    _, chunk = variant_cost(exp, gb, {"n": 200, "p": 30, "d": 3}, False)
    assert chunk.fit_seconds - chunk.scoring_seconds == pytest.approx(expect / exp.n_chunks(gb))
    assert budget_cost(exp, gb, {"n": 200, "p": 30, "d": 3}, False).fit_seconds == pytest.approx(
        5 * T + 3 * (3 * tree(200, 1, 2) + 3 * tree(200, 1, 8)))


def test_scikit_learns_trees_are_charged_as_the_budgets_clock_measures_them():
    """Oracle: 198 scikit-learn tree fits as the sklearn clocks time a stage (``tests/data/
    sklearn_tree_measured_cpu.json``: the eleven obtainable Table 6.5 sets at 2, 4 and 8 leaves, k = sqrt(p), 0.2 p
    and p, on one output and on all d). ``sklearn_tree_seconds`` charges each within 0.3-6x, the median within
    0.8-1.25x, and every fit on all the outputs of the four sets of many labels (cal500, bibtex, corel5k,
    delicious) within 0.5-3x: the caps of the projected trees there are the multiple of the gbmort stump's time
    over such a tree's. ``forest_cost`` (fully grown trees) charged the same fits up to 400x."""
    import statistics

    from forestbench.workflow.resources import forest_cost, sklearn_tree_seconds

    rows = json.loads((Path(__file__).parent / "data" / "sklearn_tree_measured_cpu.json").read_text())["rows"]
    assert len(rows) == 198 and len({r["dataset"] for r in rows}) == 11
    ratios, wide, old = [], [], []
    for r in rows:
        params = {"max_leaf_nodes": r["leaves"], "max_features": r["k"]}
        ratio = sklearn_tree_seconds(r["n"], r["p"], r["width"], params, r["density"]) / r["seconds"]
        assert 0.3 <= ratio <= 6.0, (r, ratio)
        ratios.append(ratio)
        if r["width"] == r["d"] and r["dataset"] in ("cal500", "bibtex", "corel5k", "delicious"):
            wide.append(ratio)
        old.append(forest_cost(r["n"], r["p"], r["width"], {"n_estimators": 1, "bootstrap": False,
                                                           "max_features": r["k"], "max_leaf_nodes": r["leaves"]},
                               density=r["density"]).fit_seconds / r["seconds"])
    assert 0.8 <= statistics.median(ratios) <= 1.25
    assert len(wide) == 36 and all(0.5 <= x <= 3.0 for x in wide)
    assert max(old) > 100


def test_a_budget_in_scikit_learns_tree_time_plus_the_output_work():
    # per_stage: sklearn_trees_plus_outputs adds the registry's output_cost (O(n d) per stage, by loss) to the
    # trees' time of T and of every candidate's stage; the budget job also times the per-output work, with one
    # 30-stage fit of the kernel's trees on one feature per split (charged as scikit-learn's) for the reference
    # (5 times) and for each loss and leaves (3 times)
    from forestbench.workflow.methods import get_method
    from forestbench.workflow.methods.boosting import C_OUTPUT_WORK
    from forestbench.workflow.plan import budget_cost, output_stage_cost, sklearn_stage_cost, variant_cost

    grid = {"learning_rate": [0.1, 0.5], "max_leaf_nodes": [2, 8], "loss": ["square", "logistic"]}
    tune = {"grid": grid, "validation": {"holdout": 0.2}, "metric": "macro_r2", "staged": "n_estimators",
            "mode": "dag", "chunk": 2,
            "budget": {"multiple": 20, "per_stage": "sklearn_trees_plus_outputs",
                       "reference": {"method": "gbmort", "params": {"max_leaf_nodes": 2, "loss": "square"}}}}
    config = _config(experiments={"g": {"datasets": ["linnerud"], "protocol": "demo", "metrics": ["macro_r2"],
                                        "methods": [{"name": "gb", "method": "gbrt_rpo",
                                                     "params": {"n_estimators": 10000}, "tune": tune}]}})
    exp = Plan(config, source="test", schema_dir=REPO / "workflow" / "schemas").experiments["g"]
    (gb,) = exp.runnable_variants
    rpo, mort = get_method("gbrt_rpo"), get_method("gbmort")
    n, p, d = 200, 30, 50
    assert output_stage_cost(mort, {"loss": "square"}, n, d) == pytest.approx(C_OUTPUT_WORK["square"] * n * d)
    assert output_stage_cost(rpo, {"loss": "logistic"}, 160, d) > output_stage_cost(rpo, {"loss": "square"}, 160, d)
    T = sklearn_stage_cost(mort, {"max_leaf_nodes": 2}, n, p, d) + output_stage_cost(mort, {"loss": "square"}, n, d)
    expect = 0.0
    for params in tuning_candidates(grid):
        stage = sklearn_stage_cost(rpo, params, 160, p, d) + output_stage_cost(rpo, params, 160, d)
        stages = max(1, int(20 * T / stage))
        expect += min(rpo.cost_of(160, p, d, {**params, "n_estimators": 10000}).fit_seconds,
                      rpo.cost_of(160, p, d, {**params, "n_estimators": stages}).fit_seconds)
    _, chunk = variant_cost(exp, gb, {"n": n, "p": p, "d": d}, False)
    assert chunk.fit_seconds - chunk.scoring_seconds == pytest.approx(expect / exp.n_chunks(gb))
    trees_only = budget_cost(exp, gb, {"n": n, "p": p, "d": d}, False).fit_seconds

    def probe(m, params):
        one = {**params, "max_features": 1}
        return 30 * (sklearn_stage_cost(m, one, n, p, d) + output_stage_cost(m, one, n, d))

    sk = 5 * sklearn_stage_cost(mort, {"max_leaf_nodes": 2}, n, p, d) + sum(
        3 * sklearn_stage_cost(rpo, {"max_leaf_nodes": leaves}, n, p, d) for leaves in (2, 8))
    outputs = 5 * probe(mort, {"max_leaf_nodes": 2, "loss": "square"}) + sum(
        3 * probe(rpo, {"max_leaf_nodes": leaves, "loss": loss}) for leaves in (2, 8)
        for loss in ("square", "logistic"))
    assert trees_only == pytest.approx(sk + outputs)


def tuning_candidates(grid):
    import itertools

    return [dict(zip(grid, values)) for values in itertools.product(*grid.values())]


@pytest.mark.parametrize("per_stage, stages", [("average", (10,)), ("marginal", (30,))])
def test_a_budget_job_is_charged_the_fits_it_times(per_stage, stages):
    # the reference timed 5 times, each candidate 3 times, at 10 stages (30 under marginal); the plan adds
    # these to its core-hours, and the budget rule requests their time (workflow/rules/resources.smk)
    from forestbench.workflow.methods import get_method
    from forestbench.workflow.plan import budget_cost, make_plan

    grid = {"learning_rate": [0.1, 0.5], "max_leaf_nodes": [2, 8]}
    tune = {"grid": grid, "validation": {"holdout": 0.2}, "metric": "macro_r2", "staged": "n_estimators",
            "mode": "dag", "chunk": 2,
            "budget": {"multiple": 20, "per_stage": per_stage,
                       "reference": {"method": "gbmort", "params": {"max_leaf_nodes": 2}}}}
    config = _config(experiments={"g": {"datasets": ["linnerud"], "protocol": "demo", "metrics": ["macro_r2"],
                                        "methods": [{"name": "gb", "method": "st_gbrt",
                                                     "params": {"n_estimators": 10000}, "tune": tune},
                                                    {"name": "rf", "method": "random_forest"}]}})
    plan = Plan(config, source="test", schema_dir=REPO / "workflow" / "schemas")
    exp = plan.experiments["g"]
    gb, rf = exp.runnable_variants
    shape = {"n": 200, "p": 30, "d": 3}

    def cost(method, params):
        return sum(get_method(method).cost_of(200, 30, 3, {**params, "n_estimators": k}).fit_seconds for k in stages)

    expect = 5 * cost("gbmort", {"max_leaf_nodes": 2}) + 3 * sum(
        cost("st_gbrt", {"learning_rate": lr, "max_leaf_nodes": leaves}) for lr in (0.1, 0.5) for leaves in (2, 8))
    assert budget_cost(exp, gb, shape, False).fit_seconds == pytest.approx(expect)
    assert budget_cost(exp, rf, shape, False).fit_seconds == 0.0
    report = make_plan(plan, results="/nonexistent")
    assert report.jobs["budget"] == 1 and report.budget_core_hours > 0
    assert report.core_hours == pytest.approx(report.fit_core_hours + report.budget_core_hours
                                              + report.other_core_hours)


def test_deeper_boosting_trees_on_sparse_inputs_are_charged_their_partitions():
    # the presorted builder moves every feature's order at each split whose children are split again: nothing for a
    # stump, growing with the leaves, and not scaled down by the inputs' density (tree/_presort.pyx)
    from forestbench.workflow.methods import boosting

    def per_tree(leaves, density):
        return boosting.boosting_cost(1000, 1000, 50, {"n_estimators": 1, "max_leaf_nodes": leaves,
                                                       "max_features": "sqrt"}, sparse=True, density=density,
                                      mode="st").fit_seconds

    stump, three, eight = (per_tree(leaves, 0.01) for leaves in (2, 3, 8))
    assert stump < three < eight
    partition = 1.25 * 50 * boosting.C_PARTITION * 1000 * 1000
    assert three - stump == pytest.approx(partition, rel=0.05)
    assert per_tree(3, 0.02) - per_tree(3, 0.01) < 0.1 * partition


@pytest.mark.parametrize("metric, per_entry", [("macro_r2", R.SCORE_ENTRY_OTHER_S), ("lrap", R.SCORE_ENTRY_S)])
def test_staged_tuning_is_charged_for_scoring_every_scored_stage(metric, per_entry):
    # a staged candidate scores its validation rows after each scored stage: all of 100 stages, and at most
    # MAX_SCORED_STAGES of 5000; a kfold validation scores every fold. Closed forms on a 100-row, 3-output shape.
    from forestbench.workflow.plan import variant_cost
    from forestbench.workflow.tuning import MAX_SCORED_STAGES

    def chunk_scoring(n_estimators, validation):
        tune = {"grid": {"learning_rate": [0.1, 0.5]}, "validation": validation, "metric": metric,
                "staged": "n_estimators", "mode": "dag", "chunk": 2}
        config = _config(experiments={"g": {"datasets": ["linnerud"], "protocol": "demo", "metrics": ["macro_r2"],
                                            "methods": [{"name": "gb", "method": "gbmort",
                                                         "params": {"n_estimators": n_estimators}, "tune": tune}]}})
        exp = Plan(config, source="test", schema_dir=REPO / "workflow" / "schemas").experiments["g"]
        return variant_cost(exp, exp.runnable_variants[0], {"n": 100, "p": 3, "d": 3}, False)[1].scoring_seconds

    one = lambda rows: R.SCORE_CALL_S + per_entry * rows * 3  # noqa: E731
    assert chunk_scoring(100, {"holdout": 0.2}) == pytest.approx(2 * 100 * one(20))
    assert chunk_scoring(5000, {"holdout": 0.2}) == pytest.approx(2 * MAX_SCORED_STAGES * one(20))
    assert chunk_scoring(100, {"kfold": 4}) == pytest.approx(2 * 4 * 100 * one(25))


def test_lrap_of_many_labels_is_charged_its_compiled_pass():
    """LRAP counts the ranks of 80 labels and more in a compiled pass (``forestbench._metrics``), charged per entry
    at its measured delicious-sized cost; fewer labels, and the other ranking measures, keep the NumPy charge."""
    from forestbench.metrics import LRAP_COMPILED_MIN_LABELS

    many, few = LRAP_COMPILED_MIN_LABELS, LRAP_COMPILED_MIN_LABELS - 1
    for metric in ("lrap", "lrap_all_rows"):
        assert R.staged_score_seconds(2584, 983, metric) == pytest.approx(
            R.SCORE_CALL_S + R.SCORE_ENTRY_LRAP_COMPILED_S * 2584 * 983)
        assert R.staged_score_seconds(100, many, metric) < R.staged_score_seconds(100, few, metric)
        assert R.staged_score_seconds(100, few, metric) == pytest.approx(R.SCORE_CALL_S + R.SCORE_ENTRY_S * 100 * few)
    assert R.staged_score_seconds(100, many, "coverage_error") == pytest.approx(
        R.SCORE_CALL_S + R.SCORE_ENTRY_S * 100 * many)


def _chunk_scoring(plan):
    # the modelled scoring of one chunk job of the only tuned variant of `plan` on linnerud, as the plan charges it
    from forestbench.workflow.plan import training_shape, variant_cost

    exp = plan.experiments["g"]
    shape = training_shape(plan.registry["linnerud"]["shape"], plan.protocol_spec("linnerud", exp.protocol))
    return variant_cost(exp, exp.runnable_variants[0], shape, False)[1].scoring_seconds


def _tuned_config(tmp_chunk=2):
    tune = {"grid": {"learning_rate": [0.1, 0.5], "max_leaf_nodes": [2, 8]}, "validation": {"holdout": 0.2},
            "metric": "macro_r2", "staged": "n_estimators", "mode": "dag", "chunk": tmp_chunk}
    method = {"name": "gb", "method": "gbmort", "params": {"n_estimators": 100}, "tune": tune}
    return _config(experiments={"g": {"datasets": ["linnerud"], "protocol": "demo", "metrics": ["macro_r2"],
                                      "methods": [method]}})


def _write_candidate(root: Path, name, params, seconds, stages=None):
    path = root / "tuning" / "g" / "linnerud" / "gb" / "candidates" / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {"params": params, "fit_seconds": seconds, "score": 0.5}
    if stages is not None:
        doc["stages"] = list(range(1, stages + 1))
    path.write_text(json.dumps(doc))
    return path


def test_scored_candidates_calibrate_the_tuning_estimate(tmp_path):
    # two candidates measured at 3x and 5x their modelled cost: the chunk estimate is the model's times the
    # measured / modelled ratio over them (4.25x when the larger tree models 3x the stump), labelled recorded
    from forestbench.workflow.methods import get_method

    plan = Plan(_tuned_config(), source="test", schema_dir=REPO / "workflow" / "schemas")
    row = lambda report: next(v for v in report.variants if v.variant == "gb (tuning)")  # noqa: E731
    before = row(make_plan(plan, results=tmp_path))
    assert (before.source, before.n_records) == ("model", 0)

    shape = json.loads(json.dumps(plan.registry["linnerud"]["shape"]))
    n_fit = int(16 * 0.8)  # 80 % of the 16 training rows of a 5-fold split of linnerud's 20
    model = lambda params: get_method("gbmort").cost_of(  # noqa: E731
        n_fit, shape["p"], shape["d"], {"n_estimators": 100, **params}).fit_seconds
    small, large = {"learning_rate": 0.1, "max_leaf_nodes": 2}, {"learning_rate": 0.5, "max_leaf_nodes": 8}
    _write_candidate(tmp_path, "a", small, 3.0 * model(small))
    _write_candidate(tmp_path, "b", large, 5.0 * model(large))
    factor = (3.0 * model(small) + 5.0 * model(large)) / (model(small) + model(large))
    after = row(make_plan(plan, results=tmp_path))
    assert (after.source, after.n_records) == ("recorded", 2)
    # the candidate files time the fits: the factor scales the fits, the modelled scoring is added unchanged
    scoring = _chunk_scoring(plan)
    assert scoring > 0
    assert after.wall_s - R.STARTUP_S == pytest.approx(factor * (before.wall_s - R.STARTUP_S - scoring) + scoring)
    assert 3.0 < factor < 5.0


def test_scored_candidates_of_a_budgeted_grid_give_the_chunk_estimate_directly(tmp_path):
    # a time budget gives every candidate about the same measured time, which the model's cap cannot know: the
    # chunk estimate is the measured mean per candidate times the candidates of a chunk (here 2 of 4)
    budget = {"multiple": 20, "reference": {"method": "gbmort", "params": {"max_leaf_nodes": 2}}}
    config = _tuned_config()
    config["experiments"]["g"]["methods"][0]["tune"]["budget"] = budget
    plan = Plan(config, source="test", schema_dir=REPO / "workflow" / "schemas")
    row = lambda report: next(v for v in report.variants if v.variant == "gb (tuning)")  # noqa: E731
    assert row(make_plan(plan, results=tmp_path)).source == "model"
    _write_candidate(tmp_path, "a", {"learning_rate": 0.1, "max_leaf_nodes": 2, "n_estimators": 70}, 0.30, 70)
    _write_candidate(tmp_path, "b", {"learning_rate": 0.5, "max_leaf_nodes": 8, "n_estimators": 20}, 0.50, 20)
    after = row(make_plan(plan, results=tmp_path))
    assert (after.source, after.n_records) == ("recorded", 2)
    # plus the scoring of the stages the candidates scored (70 and 20), on the 16 - 12 validation rows of linnerud
    d = plan.registry["linnerud"]["shape"]["d"]
    scoring = (70 + 20) / 2 * R.staged_score_seconds(16 - int(16 * 0.8), d, "macro_r2")
    assert after.wall_s - R.STARTUP_S == pytest.approx(2 * (0.30 + 0.50) / 2 + 2 * scoring)


def test_candidates_held_by_chunk_files_calibrate_too(tmp_path):
    # a resumed run restores the chunk files of its unfinished splits without their candidate files: the candidates
    # those chunks hold calibrate as the cache's do, each fingerprint once; so do those kept in the archive
    plan = Plan(_tuned_config(), source="test", schema_dir=REPO / "workflow" / "schemas")
    row = lambda report: next(v for v in report.variants if v.variant == "gb (tuning)")  # noqa: E731
    small, large = {"learning_rate": 0.1, "max_leaf_nodes": 2}, {"learning_rate": 0.5, "max_leaf_nodes": 8}
    cached = tmp_path / "cached"
    _write_candidate(cached, "fa", small, 0.3)
    _write_candidate(cached, "fb", large, 0.9)
    expected = row(make_plan(plan, results=cached))
    assert (expected.source, expected.n_records) == ("recorded", 2)

    chunked = tmp_path / "chunked"
    _write_candidate(chunked, "fa", small, 0.3)
    chunk = chunked / "tuning" / "g" / "linnerud" / "gb" / "repeat-0" / "chunk-0.json"
    chunk.parent.mkdir(parents=True)
    chunk.write_text(json.dumps({"chunk": 0, "results": [
        {"fingerprint": "fa", "params": small, "fit_seconds": 0.3, "score": 0.5},      # also in the cache
        {"fingerprint": "fb", "params": large, "fit_seconds": 0.9, "score": 0.4}]}))
    got = row(make_plan(plan, results=chunked))
    assert (got.source, got.n_records) == ("recorded", 2)
    assert got.wall_s == pytest.approx(expected.wall_s)
    # the same candidates kept in the archive alone (a fresh clone): a candidate file and a pending chunk
    kept = tmp_path / "archive" / "g" / "tuning" / "linnerud" / "gb"
    (kept / "candidates").mkdir(parents=True)
    (kept / "candidates" / "fa.json.gz").write_bytes(gzip.compress(
        json.dumps({"fingerprint": "fa", "params": small, "fit_seconds": 0.3}).encode()))
    (kept / "repeat-1" / "pending").mkdir(parents=True)
    (kept / "repeat-1" / "pending" / "chunk-0.json.gz").write_bytes(gzip.compress(chunk.read_bytes()))
    archived = row(make_plan(plan, results=tmp_path / "nothing", archive=tmp_path / "archive"))
    assert (archived.source, archived.n_records) == ("recorded", 2)
    assert archived.wall_s == pytest.approx(expected.wall_s)

    chunk.write_text("{not json")
    with pytest.raises(DataError, match="chunk-0.json"):
        make_plan(plan, results=chunked)


def test_a_tuned_variants_scored_candidates_scale_the_model_for_its_siblings(tmp_path):
    # two tuned variants of one method on one dataset: the chunks of the one whose candidates ran 2x the model are
    # charged so, and so are the other's, which has none yet (model-scaled)
    from forestbench.workflow.methods import get_method

    config = _tuned_config()
    method = config["experiments"]["g"]["methods"][0]
    config["experiments"]["g"]["datasets"] = ["sf2"]
    config["experiments"]["g"]["methods"] = [dict(method, params={"n_estimators": 20000}),
                                             dict(method, name="gb-half", params={"n_estimators": 20000,
                                                                                  "max_features": 0.5})]
    plan = Plan(config, source="test", schema_dir=REPO / "workflow" / "schemas")
    rows = lambda results: {v.variant: v for v in make_plan(plan, results=results).variants}  # noqa: E731
    bare = rows(tmp_path / "none")
    assert {v.source for v in bare.values()} == {"model"}
    shape = plan.registry["sf2"]["shape"]
    from forestbench.workflow.plan import MIN_SCALING_S, training_shape

    n = training_shape(shape, plan.protocol_spec("sf2", "demo"))["n"]
    model = lambda params: get_method("gbmort").cost_of(  # noqa: E731
        int(n * 0.8), shape["p"], shape["d"], {"n_estimators": 20000, **params}).fit_seconds
    assert bare["gb (tuning)"].model_wall_s - R.STARTUP_S >= MIN_SCALING_S
    folder = tmp_path / "one" / "tuning" / "g" / "sf2" / "gb" / "candidates"
    folder.mkdir(parents=True)
    for name, params in (("a", {"learning_rate": 0.1, "max_leaf_nodes": 2}),
                         ("b", {"learning_rate": 0.5, "max_leaf_nodes": 8})):
        (folder / f"{name}.json").write_text(json.dumps({"params": params, "fit_seconds": 2.0 * model(params)}))
    got = rows(tmp_path / "one")
    assert got["gb (tuning)"].source == "recorded"
    ratio = (got["gb (tuning)"].wall_s - R.STARTUP_S) / (bare["gb (tuning)"].wall_s - R.STARTUP_S)
    sibling = got["gb-half (tuning)"]
    assert (sibling.source, sibling.scale) == ("model-scaled", pytest.approx(ratio))
    assert sibling.wall_s - R.STARTUP_S == pytest.approx(ratio * (bare["gb-half (tuning)"].wall_s - R.STARTUP_S))
    # the fit rows are another kind of job: no fit record, no scaling
    assert got["gb"].source == got["gb-half"].source == "model"


def test_the_plan_counts_what_a_resumed_run_still_fits(tmp_path):
    # fits: a matching record of the planned repeat under --results or in the archive is done; a record with other
    # parameters is not. Tune chunks: all of a repeat whose record or selection exists, else its chunk files
    # (results) and pending chunks (archive)
    plan = _plan()
    results, kept = tmp_path / "results", tmp_path / "archive"
    _write_record(results, "a", "sf2", "rf50", 0, 10.0, 0.0)
    _write_record(results, "a", "sf2", "rf50", 1, 10.0, 0.0)
    _write_record(results, "a", "sf2", "rf50", 2, 10.0, 0.0)
    _archive_record(results, kept, "runs/a/sf2/rf50/repeat-2.json")
    _write_record(results, "a", "sf2", "rf5", 0, 10.0, 0.0, n_estimators=7)      # edited since: refitted
    report = make_plan(plan, results=results, archive=kept)
    rows = {(v.experiment, v.dataset, v.variant): v for v in report.variants}
    assert rows[("a", "sf2", "rf50")].done == 3 and rows[("a", "sf2", "rf50")].remaining_core_hours == 0
    assert rows[("a", "sf2", "rf5")].done == 0
    summary = {s.experiment: s for s in summarize(report)}
    assert summary["a"].remaining_jobs == 2 * (5 + 3) - 3
    assert summary["a"].remaining_core_hours == pytest.approx(
        sum(v.core_hours for v in report.variants if v.experiment == "a" and (v.dataset, v.variant) != ("sf2", "rf50")))
    assert summary["b"].remaining_core_hours == pytest.approx(summary["b"].core_hours)

    tuned = Plan(_tuned_config(tmp_chunk=2), source="test", schema_dir=REPO / "workflow" / "schemas")
    results, kept = tmp_path / "t-results", tmp_path / "t-archive"
    folder = results / "tuning" / "g" / "linnerud" / "gb"
    for rel in ("repeat-0/chunk-0.json", "repeat-2/selected.json", "repeat-4/chunk-7.json"):   # chunk 7: none
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(json.dumps({"results": []}))
    pending = kept / "g" / "tuning" / "linnerud" / "gb" / "repeat-1" / "pending" / "chunk-1.json.gz"
    pending.parent.mkdir(parents=True)
    pending.write_bytes(gzip.compress(json.dumps({"results": []}).encode()))
    _write_record(results, "g", "linnerud", "gb", 3, 1.0, 0.0, plan=tuned)
    rows = {v.variant: v for v in make_plan(tuned, results=results, archive=kept).variants}
    assert tuned.experiments["g"].n_chunks(tuned.experiments["g"].variant("gb")) == 2
    assert rows["gb (tuning)"].fits == 5 * 2 and rows["gb (tuning)"].done == 1 + 1 + 2 + 2
    assert rows["gb"].done == 1


def test_a_broken_candidate_file_is_named(tmp_path):
    plan = Plan(_tuned_config(), source="test", schema_dir=REPO / "workflow" / "schemas")
    path = _write_candidate(tmp_path, "a", {"learning_rate": 0.1, "max_leaf_nodes": 2}, 1.0)
    path.write_text("{not json")
    with pytest.raises(DataError, match="a.json"):
        make_plan(plan, results=tmp_path)
    path.write_text(json.dumps({"params": {"max_leaf_nodes": 2}, "fit_seconds": float("nan")}))
    with pytest.raises(DataError, match="not a duration"):
        make_plan(plan, results=tmp_path)


def test_training_rows_follow_the_protocol():
    from forestbench.datasets.splits import make_splits
    from forestbench.workflow.tuning import training_rows

    shape = {"n": 103, "p": 2, "d": 1}
    for protocol in ({"type": "random", "n_train": 30, "n_test": 50}, {"type": "random", "train_fraction": 0.5},
                     {"type": "kfold", "n_splits": 10}, {"type": "kfold", "n_splits": 4, "repeats": 2}):
        sizes = [len(train) for train, _ in make_splits(protocol, shape["n"])]
        assert training_rows(protocol, shape) == min(sizes), protocol
    # a given split's training part is in the data; n_given counts splits, not rows
    assert training_rows({"type": "given", "n_given": 30}, shape) is None


def test_fits_are_charged_on_the_protocols_training_rows(tmp_path):
    # friedman1-chain holds 4300 rows, but the boosting paper's protocol trains on 300 (candidates on 240): the
    # plan charges the fits and the candidates on those rows, not on the whole dataset
    from forestbench.workflow.methods import get_method
    from forestbench.workflow.plan import training_shape, variant_cost

    tune = {"grid": {"learning_rate": [0.1, 0.5], "max_leaf_nodes": [2, 8]}, "validation": {"holdout": 0.2},
            "metric": "macro_r2", "staged": "n_estimators", "mode": "dag", "chunk": 4}
    config = _config(experiments={"g": {
        "datasets": ["friedman1_chain"], "protocol": "gb_paper", "metrics": ["macro_r2"],
        "methods": [{"name": "gb", "method": "gbmort", "params": {"n_estimators": 1000}, "tune": tune}]}})
    plan = Plan(config, source="test", schema_dir=REPO / "workflow" / "schemas")
    shape = plan.registry["friedman1_chain"]["shape"]
    fit_shape = training_shape(shape, plan.protocol_spec("friedman1_chain", "gb_paper"))
    assert fit_shape == {**shape, "n": 300} and shape["n"] == 4300
    exp = plan.experiments["g"]
    final, chunk = variant_cost(exp, exp.runnable_variants[0], fit_shape, False)
    model = lambda n, params: get_method("gbmort").cost_of(  # noqa: E731
        n, 5, 16, {"n_estimators": 1000, **params}).fit_seconds
    assert final.fit_seconds == pytest.approx(model(300, {}))
    candidates = [{"learning_rate": lr, "max_leaf_nodes": k} for lr in (0.1, 0.5) for k in (2, 8)]
    assert chunk.fit_seconds - chunk.scoring_seconds == pytest.approx(sum(model(240, c) for c in candidates))
    rows = {v.variant: v for v in make_plan(plan, results=tmp_path).variants}
    assert rows["gb"].wall_s == pytest.approx(R.cost_job_seconds(final))
    assert rows["gb (tuning)"].wall_s == pytest.approx(R.cost_job_seconds(chunk))


def test_the_oracle_is_charged_for_the_models_it_fits():
    # artificial-gbrt fits one single-output model with the chain / group strategies and one per output with the
    # single-target strategy (st-gbrt's cost)
    from forestbench.workflow.methods import get_method

    oracle, st = get_method("artificial_gbrt"), get_method("st_gbrt")
    params = {"n_estimators": 1000, "max_leaf_nodes": 4}
    one = st.cost_of(240, 5, 1, params).fit_seconds
    for strategy in ("first_output", "mean_output"):
        assert oracle.cost_of(240, 5, 16, {**params, "strategy": strategy}).fit_seconds == pytest.approx(one)
    assert oracle.cost_of(240, 5, 16, {**params, "strategy": "single_target"}).fit_seconds == pytest.approx(
        st.cost_of(240, 5, 16, params).fit_seconds)
    assert st.cost_of(240, 5, 16, params).fit_seconds > 10 * one


def test_records_calibrate_only_when_their_parameters_and_rows_match(tmp_path):
    # a small demo's records (10 trees instead of 50, or other training rows) say nothing about the planned fit:
    # the estimate stays the model's; records with the planned parameters calibrate it, whichever experiment or
    # variant name wrote them
    plan = _plan()
    row = lambda report: next(v for v in report.variants  # noqa: E731
                              if (v.experiment, v.dataset, v.variant) == ("a", "sf2", "rf50"))
    model = row(make_plan(plan, results=tmp_path))
    assert model.source == "model"
    _write_record(tmp_path, "demo", "sf2", "rf50", 0, 1.0, 0.0, like=("a", "rf50"), n_estimators=10)
    _write_record(tmp_path, "demo", "sf2", "rf50", 1, 1.0, 0.0, like=("a", "rf50"), n_train=5000)
    _write_record(tmp_path, "a", "sf2", "rf50", 2, 1.0, 0.0, max_features=0.5)  # own, but edited since
    stale = row(make_plan(plan, results=tmp_path))
    assert (stale.source, stale.n_records, stale.ignored_records) == ("model", 0, 1)
    assert stale.wall_s == pytest.approx(model.wall_s)
    _write_record(tmp_path, "other", "sf2", "big-forest", 0, 30.0, 2.0, like=("a", "rf50"))
    elsewhere = row(make_plan(plan, results=tmp_path))
    assert (elsewhere.source, elsewhere.n_records) == ("recorded-elsewhere", 1)
    assert elsewhere.wall_s == pytest.approx(R.STARTUP_S + 32.0)


def _archive_record(results: Path, archive: Path, rel: str) -> None:
    """Move ``results/<rel>`` (a run record) into ``archive`` where ``archive add`` keeps it, gzip-compressed."""
    from forestbench.archive import _archived_name

    src = results / rel
    dest = archive / _archived_name(rel)
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(gzip.compress(src.read_bytes(), mtime=0))
    src.unlink()


def test_archived_records_calibrate_like_those_under_results(tmp_path):
    # a fresh clone has no results/, but the repository's archive holds what earlier runs measured: those records
    # calibrate the plan as if they were under results/, and a record in both places counts once (results/ wins:
    # it is the newer copy, e.g. a refit)
    plan = _plan()
    results, archive = tmp_path / "results", tmp_path / "archive"
    row = lambda report: next(v for v in report.variants  # noqa: E731
                              if (v.experiment, v.dataset, v.variant) == ("a", "sf2", "rf50"))
    _write_record(results, "a", "sf2", "rf50", 0, 100.0, 10.0)
    _write_record(results, "a", "sf2", "rf50", 1, 200.0, 10.0)
    for r in (0, 1):
        _archive_record(results, archive, f"runs/a/sf2/rf50/repeat-{r}.json")
    assert row(make_plan(plan, results=results)).source == "model"
    archived = row(make_plan(plan, results=results, archive=archive))
    assert (archived.source, archived.n_records) == ("recorded", 2)
    assert archived.wall_s == pytest.approx(R.STARTUP_S + 160.0)
    _write_record(results, "a", "sf2", "rf50", 1, 40.0, 0.0)  # repeat 1 again, under results/
    both = row(make_plan(plan, results=results, archive=archive))
    assert both.n_records == 2 and both.wall_s == pytest.approx(R.STARTUP_S + (110.0 + 40.0) / 2)
    # other experiments' archived records calibrate too; records of datasets the plan does not run are not read
    _write_record(results, "zzz", "linnerud", "et", 0, 40.0, 0.0, like=("b", "et"))
    _archive_record(results, archive, "runs/zzz/linnerud/et/repeat-0.json")
    (archive / "zzz" / "runs" / "unplanned" / "x").mkdir(parents=True)
    (archive / "zzz" / "runs" / "unplanned" / "x" / "repeat-0.json.gz").write_bytes(b"not gzip")
    report = make_plan(plan, results=results, archive=archive)
    elsewhere = next(v for v in report.variants if (v.experiment, v.variant) == ("b", "et"))
    assert (elsewhere.source, elsewhere.wall_s) == ("recorded-elsewhere", pytest.approx(R.STARTUP_S + 40.0))
    # a broken archived record of a planned dataset is named
    (archive / "zzz" / "runs" / "sf2" / "x").mkdir(parents=True)
    (archive / "zzz" / "runs" / "sf2" / "x" / "repeat-0.json.gz").write_bytes(b"not gzip")
    with pytest.raises(DataError, match="zzz/runs/sf2/x/repeat-0.json.gz"):
        make_plan(plan, results=results, archive=archive)


def test_the_first_variants_of_a_sweep_scale_the_model_for_the_rest(tmp_path):
    # records of the 1000-tree forest on sf2 that took 0.4 x the model: the larger forests, which no record
    # matches, are charged the model x 0.4 (same method and dataset); on linnerud, and for the other method, the
    # model stands. The requests do not change: the rules read a variant's own records only
    from forestbench.workflow.plan import MIN_SCALING_S

    sizes = [1000, 2000, 4000, 8000]
    plan = Plan(_config(experiments={
        "a": {"datasets": ["linnerud", "sf2"], "protocol": "demo", "metrics": ["macro_r2"],
              "methods": [{"name": "rf{n_estimators}", "method": "sklearn_random_forest",
                           "grid": {"n_estimators": sizes}}]},
        "b": {"datasets": ["sf2"], "protocol": "demo", "metrics": ["macro_r2"],
              "methods": [{"name": "et", "method": "sklearn_extra_trees", "params": {"n_estimators": 1000}}]}}),
        source="test", schema_dir=REPO / "workflow" / "schemas")
    rows_of = lambda results: {(v.experiment, v.dataset, v.variant): v  # noqa: E731
                               for v in make_plan(plan, results=results).variants}
    bare = rows_of(tmp_path / "none")
    model = {key: v.wall_s - R.STARTUP_S for key, v in bare.items()}
    assert model[("a", "sf2", "rf1000")] >= MIN_SCALING_S   # a ratio the scaling reads

    _write_record(tmp_path / "one", "a", "sf2", "rf1000", 0, 0.3 * model[("a", "sf2", "rf1000")],
                  0.1 * model[("a", "sf2", "rf1000")], plan=plan)
    rows = rows_of(tmp_path / "one")
    assert rows[("a", "sf2", "rf1000")].source == "recorded"
    for size in sizes[1:]:
        key = ("a", "sf2", f"rf{size}")
        assert (rows[key].source, rows[key].n_records, rows[key].scale) == ("model-scaled", 1, pytest.approx(0.4))
        assert rows[key].wall_s == pytest.approx(R.STARTUP_S + 0.4 * model[key])
        assert (rows[key].runtime_min, rows[key].mem_mb) == (bare[key].runtime_min, bare[key].mem_mb)
    for key in [("a", "linnerud", f"rf{size}") for size in sizes] + [("b", "sf2", "et")]:
        assert rows[key].source == "model" and rows[key].wall_s == pytest.approx(bare[key].wall_s)

    # several recorded variants: the median of their ratios (0.4, 2.0 and 1.0)
    for size, ratio in ((1000, 0.4), (2000, 2.0), (4000, 1.0)):
        _write_record(tmp_path / "three", "a", "sf2", f"rf{size}", 0, ratio * model[("a", "sf2", f"rf{size}")],
                      0.0, plan=plan)
    report = make_plan(plan, results=tmp_path / "three")
    last = next(v for v in report.variants if (v.dataset, v.variant) == ("sf2", "rf8000"))
    assert (last.source, last.n_records, last.scale) == ("model-scaled", 3, pytest.approx(1.0))
    summary = {s.experiment: s for s in summarize(report)}["a"]
    assert (summary.recorded_jobs, summary.scaled_jobs) == (3 * 3, 3)

    # a variant the model charges under MIN_SCALING_S of compute (start-up and timer noise) scales nothing
    tiny = _plan()
    _write_record(tmp_path / "tiny", "a", "sf2", "rf5", 0, 500.0, 0.0)
    rf50 = next(v for v in make_plan(tiny, results=tmp_path / "tiny").variants
                if (v.dataset, v.variant) == ("sf2", "rf50"))
    assert rf50.source == "model"


def test_the_fit_time_request_covers_the_estimate_times_the_margin(tmp_path):
    # recorded fits far slower than the model: the request of attempt 1 still covers RUNTIME_MARGIN x the plan's
    # estimate, and the rule's floor (read from the variant's own records) is the plan's estimate
    from forestbench.workflow.plan import recorded_fit

    plan = _plan()
    for r in range(3):
        _write_record(tmp_path, "a", "sf2", "rf50", r, 900.0 + 100 * r, 20.0)
    report = make_plan(plan, results=tmp_path)
    for v in report.variants:
        assert v.runtime_min * 60 >= R.RUNTIME_MARGIN * v.wall_s, (v.variant, v.runtime_min, v.wall_s)
    slow = next(v for v in report.variants if (v.dataset, v.variant) == ("sf2", "rf50"))
    assert slow.source == "recorded" and slow.runtime_min >= R.RUNTIME_MARGIN * (R.STARTUP_S + 1020.0) / 60
    exp = plan.experiments["a"]
    rows = json.loads((tmp_path / "runs/a/sf2/rf50/repeat-0.json").read_text())["n_train"]
    assert recorded_fit(tmp_path, exp, "sf2", exp.variant("rf50"), rows).wall_s == pytest.approx(slow.wall_s)
    assert recorded_fit(tmp_path, exp, "sf2", exp.variant("rf5"), rows) == (None, None)


def test_the_memory_request_covers_the_largest_recorded_peak(tmp_path):
    # the model under-charges a fit whose own runs peaked at 9 GB: the request of attempt 1 covers MEM_MARGIN x the
    # largest peak (not the mean), in the plan and in the rule's floor alike; another variant's records, a record of
    # other parameters and a record without the field leave the model's request
    from forestbench.workflow.plan import recorded_fit

    plan = _plan()
    row = lambda report: next(v for v in report.variants  # noqa: E731
                              if (v.experiment, v.dataset, v.variant) == ("a", "sf2", "rf50"))
    model = row(make_plan(plan, results=tmp_path)).mem_mb
    assert model < 9000
    _write_record(tmp_path, "a", "sf2", "rf50", 0, 1.0, 0.0)  # no peak recorded
    _write_record(tmp_path, "a", "sf2", "rf50", 1, 1.0, 0.0, peak_mb=20000.0, n_estimators=7)  # other parameters
    _write_record(tmp_path, "a", "sf2", "rf5", 0, 1.0, 0.0, peak_mb=20000.0)  # another variant
    assert row(make_plan(plan, results=tmp_path)).mem_mb == model
    _write_record(tmp_path, "a", "sf2", "rf50", 2, 1.0, 0.0, peak_mb=9000.0)
    _write_record(tmp_path, "a", "sf2", "rf50", 3, 1.0, 0.0, peak_mb=3000.0)
    covered = row(make_plan(plan, results=tmp_path)).mem_mb
    assert covered == math.ceil(R.MEM_MARGIN * 9000 / R.MEM_UNIT_MB) * R.MEM_UNIT_MB
    exp = plan.experiments["a"]
    rows = json.loads((tmp_path / "runs/a/sf2/rf50/repeat-0.json").read_text())["n_train"]
    recorded = recorded_fit(tmp_path, exp, "sf2", exp.variant("rf50"), rows)
    assert recorded.peak_mb == 9000.0
    assert R.fit_requests(plan.registry["sf2"]["shape"], exp.variant("rf50").params, 2,
                          recorded_mb=recorded.peak_mb)["mem_mb"] == 2 * covered


def test_requests_beyond_the_partition_limits_are_capped_and_flagged(tmp_path, capsys):
    import yaml

    from forestbench.workflow.plan import flagged

    plan = _plan()
    tiny = R.Limits(mem_mb=900, runtime_min=4)  # below every request's floor (1000 MB, 5 min)
    report = make_plan(plan, results=tmp_path, limits=tiny)
    assert {v.mem_mb for v in report.variants} == {900} and {v.runtime_min for v in report.variants} == {4}
    assert len(flagged(report)) == len(report.variants)
    assert all(any("mem_mb 1000 > 900" in o for o in v.over) for v in report.variants)
    assert not flagged(make_plan(plan, results=tmp_path))
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump(_config()))
    assert main(["plan", "--configfile", str(cfg), "--results", str(tmp_path), "--max-mem-gb", "0.5"]) == 0
    out = capsys.readouterr().out
    assert "Flagged requests" in out and "mem_mb 1000 > 512" in out
    with pytest.raises(ValueError, match="FORESTBENCH_MAX_RUNTIME_MIN"):
        R.limits_from_env({"FORESTBENCH_MAX_RUNTIME_MIN": "two days"})
    assert R.limits_from_env({"FORESTBENCH_MAX_MEM_MB": "64000"}) == R.Limits(64000, R.DEFAULT_MAX_RUNTIME_MIN)


def test_chunks_are_suggested_per_experiment(tmp_path):
    # experiment a's fits take 10 minutes each (records), b's a few seconds: a gets small chunks, b one SLURM job,
    # and the suggested Snakemake runs use the profile's group patterns, one run per chunk size
    from forestbench.workflow.plan import summarize, suggested_runs

    plan = _plan()
    for dataset, repeats in (("linnerud", 5), ("sf2", 3)):
        for variant in ("rf5", "rf50"):
            for r in range(repeats):
                _write_record(tmp_path, "a", dataset, variant, r, 600.0, 0.0, plan=plan)
    report = make_plan(plan, results=tmp_path)
    rows = {s.experiment: s for s in summarize(report, target_minutes=30, cores=4)}
    assert rows["a"].fit_chunk == 8  # 4 side by side x 2 waves of ~10 minutes, a power of two
    assert rows["b"].fit_chunk == 5  # every fit of b in one job
    assert rows["a"].slurm_jobs == 2 and rows["b"].slurm_jobs == 1
    assert rows["a"].recorded_jobs == 16 and rows["b"].recorded_jobs == 0
    runs = suggested_runs(list(rows.values()))
    assert [r["experiments"] for r in runs] == [["a", "b"]]  # b's 5 fits fit in one chunk of a's run
    assert runs[0]["args"].endswith("--group-components 'fit_{experiment}=8'")
    slow = suggested_runs([rows["a"], dataclasses_replace(rows["b"], fits=500)])
    assert len(slow) == 2 and {r["fit_chunk"] for r in slow} == {8, 5}


def dataclasses_replace(obj, **changes):
    import dataclasses

    return dataclasses.replace(obj, **changes)


def test_tune_jobs_are_grouped_like_the_fits_in_the_slurm_profile(tmp_path):
    # the profile bundles a tuned variant's candidate-chunk jobs per experiment, as it does the fits; the plan
    # counts SLURM jobs with the profile's chunk for each group
    import yaml

    profile = yaml.safe_load((REPO / "workflow/profiles/slurm/config.yaml").read_text())
    assert "tune=tune_{experiment}" in profile["groups"] and "fit=fit_{experiment}" in profile["groups"]
    components = dict(c.split("=") for c in profile["group-components"])
    assert set(components) == {"fit_{experiment}", "tune_{experiment}"}
    array = yaml.safe_load((REPO / "workflow/profiles/slurm-array/config.yaml").read_text())
    assert set(array["slurm-array-jobs"].split(",")) == {"fit", "tune"}

    plan = Plan(_tuned_config(tmp_chunk=1), source="test", schema_dir=REPO / "workflow" / "schemas")
    fit_chunk, tune_chunk = int(components["fit_{experiment}"]), int(components["tune_{experiment}"])
    report = make_plan(plan, results=tmp_path, chunk=fit_chunk, tune_chunk=tune_chunk)
    assert report.jobs["tune"] == 5 * 4  # 5 folds x 4 candidates, one per chunk job
    assert report.slurm_jobs["tune"] == math.ceil(20 / tune_chunk)
    assert report.slurm_jobs["fit"] == math.ceil(5 / fit_chunk)


def test_local_rules_submit_no_slurm_job(tmp_path):
    # the Snakefile's localrules run where Snakemake runs: the plan counts no SLURM job for them
    import re

    from forestbench.workflow.plan import LOCAL_RULES

    text = (REPO / "workflow/rules/common.smk").read_text()
    block = re.search(r"^localrules:\n((?:[ \t]+\w+,?[ \t]*(?:#.*)?\n)+)", text, re.M).group(1)
    assert set(re.findall(r"^\s+(\w+)", block, re.M)) == set(LOCAL_RULES)
    report = make_plan(_plan(), results=tmp_path)
    assert report.jobs["collect"] == 2 and all(report.slurm_jobs[rule] == 0 for rule in LOCAL_RULES)


# ------------------------------------------------------------------------------ DTE rows measured on real data
@functools.lru_cache(maxsize=None)
def _measured_rows(name):
    """The rows of a ``tests/data`` file of measured DTE fits (read once per session)."""
    return tuple(json.loads((Path(__file__).parent / "data" / name).read_text())["rows"])


def _current_dte_rows():
    return _measured_rows("dte_current_measured_fit_cpu.json")


@pytest.mark.parametrize("dataset", sorted({r["dataset"] for r in _current_dte_rows()}))
def test_dte_cost_hooks_charge_the_archived_rows_their_measured_cpu(dataset):
    """The deep tree-ensemble's and RF+ET's cost hooks against the fit + predict CPU seconds measured on the real
    rows of the current kernels (``tests/data``: 10 folds each of ``dte_table_4_contiguous`` and of emotions, birds
    and cal500 of ``dte_tables_5_9``; X_OS and the cascades at PCA size 0.05, and on slump and edm the PCA-size
    search): the row's total within -30 % / +35 %, each cascade within -40 % / +70 % (measured: totals 0.77-1.33,
    cascades 0.71-1.41, RF+ET 0.77-1.64, searches 0.94-1.26)."""
    import statistics

    from forestbench.workflow.methods import get_method

    rows = [r for r in _current_dte_rows() if r["dataset"] == dataset]
    assert {"X_TE-pca0.05", "TE-pca0.05", "X_OS", "X_OS_TE-pca0.05", "rf_et"} <= {r["variant"] for r in rows}
    charged = measured_total = 0.0
    for r in rows:
        assert len(r["fit_cpu_s"]) == len(r["predict_cpu_s"]) == 10, (dataset, r["variant"])
        measured = statistics.mean(r["fit_cpu_s"]) + statistics.mean(r["predict_cpu_s"])
        cost = get_method(r["method"]).cost_of(r["n_train"], r["p"], r["d"], r["params"])
        charged += cost.fit_seconds
        measured_total += measured
        if measured >= 1.0:       # the baseline fits in a fraction of a second (the job's start-up dominates)
            assert 0.6 <= cost.fit_seconds / measured <= 1.7, (dataset, r["variant"], cost.fit_seconds, measured)
    assert 0.7 <= charged / measured_total <= 1.35, (dataset, charged, measured_total)
    searches = [r for r in rows if r["variant"] in ("X_TE", "TE", "X_OS_TE")]
    assert all(len(r["params"]["pca_fractions"]) == 8 and r["params"]["pca_validation"] == 5 for r in searches)
    assert len(searches) == (3 if dataset in ("slump", "edm") else 0)


def test_dte_cost_of_a_label_set_grown_as_csr():
    """medical's 45 labels (1.245 per row) are grown as CSR by every forest of a cascade. Charged as dense
    outputs, its archived cascades were charged 1.7x their CPU time and asked 10x their peak memory (16.8 GB for
    1.6 GB), which made a local run fit one such job at a time. With the registry's label density, the hooks
    charge the sparse criterion and leaf storage that ``forest_cost`` charges: each row's time within 0.6-1.7x
    (measured 0.78-1.07x: Figure 6 and the Tables 5-9 row) and the kept models never above the charge, which
    stays an upper bound."""
    import statistics

    from forestbench.datasets.registry import load_registry
    from forestbench.workflow import resources
    from forestbench.workflow.methods import get_method

    rows = _measured_rows("dte_sparse_labels_measured_cpu.json")
    assert {r["variant"] for r in rows} >= {"X_OS", "X_TE-pca0.05"}
    density = resources.label_density(load_registry(REGISTRY)["medical"]["shape"])
    assert density is not None and resources.grows_sparse(45, density)
    for r in rows:
        hook = get_method(r["method"])
        cost = hook.cost_of(r["n_train"], r["p"], r["d"], r["params"], label_density=density)
        dense = hook.cost_of(r["n_train"], r["p"], r["d"], r["params"])
        measured = statistics.mean(r["fit_cpu_s"]) + statistics.mean(r["predict_cpu_s"])
        assert 0.6 <= cost.fit_seconds / measured <= 1.7, (r["variant"], cost.fit_seconds, measured)
        assert max(r["model_mb"]) <= cost.model_mb < dense.model_mb / 2, (r["variant"], cost.model_mb)
        assert cost.fit_seconds < dense.fit_seconds
    # a label set the trees keep dense (too few labels, or too many per row) is charged as before
    for d, dens in ((27, 0.046), (174, 0.15)):
        params = {"variant": "X_OS", "n_estimators": 150, "max_layers": 10, "pca_fractions": [0.05]}
        assert get_method("deep_tree_ensemble").cost_of(500, 100, d, params, label_density=dens) == \
            get_method("deep_tree_ensemble").cost_of(500, 100, d, params)


def test_our_forests_on_sparse_inputs_are_charged_every_candidate_feature():
    """Oracle: our random forest measured on the real delicious and corel5k (``benchmarks/forest_cost_probe.py``,
    10 trees, sparse word / image-region indicators, k up to every feature, original labels, Gaussian projections
    up to q = d and, on delicious, every other family of Fig 5.4 at q = d), charged at the registry's input density
    as the plan charges it. The model charges each delicious configuration at least its CPU time and at most 3.5x;
    corel5k's (measured beside two running jobs) 0.75-6x: its q = 1 trees on every feature cost a quarter of
    delicious' per feature and node (1.7 % stored values against 3.7 %), its q = d dense projections 0.84x. Before,
    the stored values per row capped k: k = 500 was charged as k = 22 (0.14-0.27x of its CPU, a first SLURM attempt
    killed for time), and the dense projections were charged with scikit-learn's per-output cost (5.7x at q =
    983); at the registry's density scikit-learn's cost per stored value charged k = 22 up to 8.6x."""
    from forestbench.datasets.registry import load_registry
    from forestbench.workflow.methods import get_method

    registry = load_registry(REGISTRY)
    for name, low, high in (("forest_sparse_inputs_measured_cpu.json", 1.0, 3.5),
                            ("forest_sparse_inputs_measured_cpu_corel5k.json", 0.75, 6.0)):
        data = json.loads((Path(__file__).parent / "data" / name).read_text())
        entry = registry[data["dataset"]]
        assert R.is_sparse_entry(entry)
        shape = entry["shape"]
        assert R.input_density(shape) is not None, data["dataset"]
        charged = {}
        for row in data["rows"]:
            cost = get_method("random_forest").cost_of(data["n_train"], data["p"], data["d"], row["params"],
                                                       sparse=True, density=R.input_density(shape),
                                                       label_density=R.label_density(shape))
            charged[row["config"]] = cost.fit_seconds
            assert low <= cost.fit_seconds / row["cpu_s"] <= high, (data["dataset"], row["config"],
                                                                     cost.fit_seconds, row["cpu_s"])
        k_all = max(charged, key=lambda c: int(c.split(":")[1]) if c.startswith("none:") else 0)
        assert charged[k_all] > 5 * charged["none:22"], data["dataset"]   # k decides the cost on sparse inputs too


def test_dte_memory_requests_cover_the_archived_peaks():
    """The first attempt's memory request of every archived cascade and RF+ET baseline (``tests/data``: the peak
    resident memory of each fold's fit process, 229 rows of 44-2175 training rows) covers the largest peak of its
    ten folds, and the modelled need is at most 3x that peak but on genbase (binary inputs with many repeated rows
    grow small trees, as its CPU charge says). The model before kept half the layers' models: it asked 0.79x the
    peak of enb's X_OS_TE cascades (0.52x before the margin) and 0.86-0.99x of seven other multi-target rows',
    where every layer's embedders and output-space fold models stay until the cascade is built."""
    from forestbench.workflow import resources
    from forestbench.workflow.methods import get_method

    rows = _measured_rows("dte_measured_peak_mb.json")
    assert len(rows) >= 200 and {"X_TE", "TE", "X_OS", "X_OS_TE"} <= {r["params"].get("variant") for r in rows}
    ratios = []
    for r in rows:
        cost = get_method(r["method"]).cost_of(r["n_train"], r["p"], r["d"], r["params"], sparse=r["sparse"],
                                               label_density=r["label_density"], task=r["task"])
        shape = {"n": r["n_train"], "p": r["p"], "d": r["d"]}
        peak = max(r["peak_rss_mb"])
        request = resources.fit_requests(shape, r["params"], cost=cost, sparse=r["sparse"])["mem_mb"]
        assert request >= peak, (r["experiment"], r["dataset"], r["variant"], request, peak)
        need = resources.BASE_MB + resources.data_mb(r["n_train"], r["p"], r["d"], r["sparse"]) + cost.model_mb
        if r["dataset"] != "genbase":
            assert need <= 3 * peak, (r["experiment"], r["dataset"], r["variant"], need, peak)
        ratios.append(request / peak)
    assert min(ratios) < 1.2   # the bound is not loose everywhere


@pytest.mark.parametrize("dataset", ["andro", "slump", "edm", "flags"])
def test_dte_search_cost_against_x_os_measured_alongside(dataset):
    """The PCA-size search (eight fractions, inner 5-fold CV) against the measured selected-fraction cascades of an
    older commit (``tests/data/dte_measured_fit_cpu.json``, slower forests than today's): each search's charge
    relative to X_OS's, over its measured time relative to X_OS's of the same commit, within -40 % / +70 %
    (measured: 0.68-1.04), so that the kernels' speed-up since then cancels out."""
    import statistics

    from forestbench.workflow.methods import get_method

    rows = {r["variant"]: r for r in _measured_rows("dte_measured_fit_cpu.json")
            if r["dataset"] == dataset and r["method"] == "deep_tree_ensemble"}
    assert {"X_TE", "TE", "X_OS_TE", "X_OS"} <= set(rows)

    def charged_and_measured(r):
        params = {**r["params"], "pruning_score": "oob"}
        cost = get_method(r["method"]).cost_of(r["n_train"], r["p"], r["d"], params).fit_seconds
        return cost, statistics.mean(r["fit_cpu_s"])

    c_os, m_os = charged_and_measured(rows["X_OS"])
    for variant in ("X_TE", "TE", "X_OS_TE"):
        assert len(rows[variant]["params"]["pca_fractions"]) == 8
        c, m = charged_and_measured(rows[variant])
        assert 0.6 <= (c / c_os) / (m / m_os) <= 1.7, (dataset, variant, c, m, c_os, m_os)


def test_ecc_cost_follows_the_label_minority_and_the_stored_inputs():
    """ECC's trees stop where a label is pure: the hook charges the measured chains of the nine obtainable
    multi-label sets within 0.4-2.5x (genbase, whose dense binary inputs grow tiny trees, excepted), where the
    regression-tree model it replaced charged medical 130x its time."""
    from forestbench.workflow.methods import get_method

    hook = get_method("dte_ecc")
    rows = json.loads((Path(__file__).parent / "data" / "ecc_measured_chain_cpu.json").read_text())["rows"]
    assert len(rows) == 9
    for r in rows:
        cost = hook.cost_of(r["n"], r["p"], r["d"], {"n_chains": 1}, sparse=r["sparse_inputs"],
                            label_density=r["label_density"])
        ratio = cost.fit_seconds / r["chain_cpu_s"]
        if r["dataset"] == "genbase":
            assert ratio > 1.0        # charged more than it takes, never less
        else:
            assert 0.4 <= ratio <= 2.5, (r["dataset"], ratio)
    # rarer labels, shallower trees; sparse inputs, fewer values read; chains and labels multiply
    base = hook.cost_of(1000, 500, 20, {"n_chains": 10}, label_density=0.3).fit_seconds
    assert hook.cost_of(1000, 500, 20, {"n_chains": 10}, label_density=0.02).fit_seconds < base
    assert hook.cost_of(1000, 500, 20, {"n_chains": 10}, label_density=0.3, sparse=True).fit_seconds < base
    assert hook.cost_of(1000, 500, 20, {"n_chains": 5}, label_density=0.3).fit_seconds == pytest.approx(base / 2)
    # no label density given: charged as balanced labels (the most levels)
    assert hook.cost_of(1000, 500, 20, {"n_chains": 10}).fit_seconds >= base


def test_mlp_cost_against_the_archived_fits():
    """dte_mlp's charge against the mean fit CPU of its archived runs: 33 rows of 44-2175 training rows, 7-1449
    inputs and 2-174 outputs, multi-target and multi-label (measured 0.68-1.40; without the multi-label factor the
    model charged medical 0.37x and scene 0.60x)."""
    from forestbench.workflow.methods import get_method

    hook = get_method("dte_mlp")
    rows = json.loads((Path(__file__).parent / "data" / "dte_mlp_measured_fit_cpu.json").read_text())["rows"]
    assert len(rows) == 33 and {r["task"] for r in rows} == {"multilabel", "multioutput_regression"}
    ratios = {(r["experiment"], r["dataset"]): hook.cost_of(r["n_train"], r["p"], r["d"], {}, task=r["task"])
              .fit_seconds / r["mean_fit_cpu_s"] for r in rows}
    assert all(0.6 <= x <= 1.5 for x in ratios.values()), ratios
    # more rows, inputs or outputs cost more; fewer inner folds cost less; labels cost more than targets
    base = hook.cost_of(300, 20, 3, {}).fit_seconds
    assert hook.cost_of(600, 20, 3, {}).fit_seconds > base and hook.cost_of(300, 400, 3, {}).fit_seconds > base
    assert hook.cost_of(300, 20, 150, {}).fit_seconds > 2 * base
    assert hook.cost_of(300, 20, 3, {"cv": 3}).fit_seconds == pytest.approx(base * 13 / 21)
    assert hook.cost_of(300, 20, 3, {}, task="multilabel").fit_seconds == pytest.approx(1.6 * base)
    assert hook.cost_of(300, 20, 3, {}, task="multioutput_regression").fit_seconds == base


def test_the_plan_gives_cost_hooks_the_dataset_task():
    """The registry entry's task reaches a hook that takes it, in `forestbench plan` and the workflow's requests
    alike (variant_cost): the same MLP variant is charged more on a multi-label set than on a multi-target set of
    the same shape."""
    from forestbench.workflow.plan import variant_cost

    config = _config(experiments={"e": {"datasets": ["linnerud"], "protocol": "demo", "metrics": ["macro_r2"],
                                        "methods": [{"name": "mlp", "method": "dte_mlp", "params": {}}]}})
    exp = Plan(config, source="test", schema_dir=REPO / "workflow" / "schemas").experiments["e"]
    shape = {"n": 500, "p": 20, "d": 6}
    labels = variant_cost(exp, exp.runnable_variants[0], shape, False, "multilabel")[0].fit_seconds
    targets = variant_cost(exp, exp.runnable_variants[0], shape, False, "multioutput_regression")[0].fit_seconds
    assert labels == pytest.approx(1.6 * targets)
    assert variant_cost(exp, exp.runnable_variants[0], shape, False)[0].fit_seconds == targets


def test_mlknn_cost_against_the_archived_fits():
    """dte_mlknn's charge (the 3 x 3 grid by inner 5-fold CV and the refit) against the fit + predict CPU of its
    archived runs on flags, emotions, birds and cal500, within -20 % / +30 % (measured 0.99-1.14; the model before
    had no per-label term and charged cal500, 174 labels, 0.12x)."""
    from forestbench.workflow.methods import get_method

    hook = get_method("dte_mlknn")
    rows = [r for r in _measured_rows("dte_multilabel_competitors_measured_cpu.json") if r["variant"] == "ml_knn"]
    assert len(rows) == 4 and all(len(r["fit_cpu_s"]) == 10 for r in rows)
    ratios = {r["dataset"]: hook.cost_of(r["n_train"], r["p"], r["d"], r["params"]).fit_seconds
              / (statistics.mean(r["fit_cpu_s"]) + statistics.mean(r["predict_cpu_s"])) for r in rows}
    assert all(0.8 <= x <= 1.3 for x in ratios.values()), ratios
    base = hook.cost_of(500, 70, 6, {}).fit_seconds
    assert hook.cost_of(500, 70, 60, {}).fit_seconds > 2 * base
    # 46 fits beside one second of start-up: 3 x 3 x 5 + 1, 3 x 3 x 3 + 1, 1 x 3 x 5 + 1
    assert hook.cost_of(500, 70, 6, {"cv": 3}).fit_seconds - 1 == pytest.approx((base - 1) * 28 / 46)
    assert hook.cost_of(500, 70, 6, {"k_values": [5]}).fit_seconds - 1 == pytest.approx((base - 1) * 16 / 46)


def test_erc_cost_against_the_archived_fits():
    """dte_erc's charge against the mean fit CPU of its archived runs (10 rows; the generic forest model charged them
    up to 9x)."""
    from forestbench.workflow.methods import get_method

    hook = get_method("dte_erc")
    rows = json.loads((Path(__file__).parent / "data" / "dte_erc_measured_fit_cpu.json").read_text())["rows"]
    assert len(rows) == 10
    ratios = {r["dataset"]: hook.cost_of(r["n_train"], r["p"], r["d"], {"n_chains": r["n_chains"]}).fit_seconds
              / r["mean_fit_cpu_s"] for r in rows}
    assert all(0.6 <= x <= 2.5 for x in ratios.values()), ratios
    base = hook.cost_of(300, 20, 4, {"n_chains": 10}).fit_seconds
    assert hook.cost_of(300, 20, 4, {"n_chains": 5}).fit_seconds == pytest.approx(base / 2)
    assert hook.cost_of(300, 200, 4, {"n_chains": 10}).fit_seconds > base


# genbase's binary inputs are dense, 91 % constant columns, the rest two-valued with the 0 rare: its registry
# `input_density` (0.0021, the share of entries holding their column's rarer value) puts it on the model's 0/1 path,
# which still charges every column's presort and so stays on the safe side (4.4x; 35x charged as continuous)
CONSTANT_COLUMN_ROWS = {"genbase"}


def test_the_budget_reference_time_is_charged_as_the_budget_job_measures_it():
    """Oracle: T measured as the budget job measures it (CPU seconds of gbmort stumps, 10 stages divided by 10, on
    the training part of split 0; ``tests/data/budget_reference_measured_cpu.json``) on the 14 obtainable rows of
    Tables 6.5 and 6.8 and the sparse sets bibtex, corel5k and delicious. The plan charges T within 0.3-2.5x on the
    11 rows of continuous inputs (0.37-2.18x). Before, one stage was charged alone, presort included: 2.2-13.6x on
    the same rows, so that every capped candidate of a budgeted grid was overcharged as much. On the sparse 0/1
    inputs, charged by their registry ``input_density``, within 1-3.5x (1.3-3.2x; 10-35x before the density entered
    the boosting model), medical the most (its 0.52 ms was measured on a quieter machine than the 0.88 ms of today)."""
    from forestbench.datasets.registry import get_entry, load_registry
    from forestbench.workflow import resources as res
    from forestbench.workflow.methods import get_method
    from forestbench.workflow.selection import PROBE_STAGES

    registry = load_registry(Path(__file__).resolve().parents[1] / "config/datasets.yaml")
    rows = json.loads((Path(__file__).parent / "data" / "budget_reference_measured_cpu.json").read_text())["rows"]
    assert len(rows) == 17
    reference = {"learning_rate": 0.1, "loss": "square", "max_leaf_nodes": 2, "n_estimators": PROBE_STAGES}
    for row in rows:
        entry = get_entry(registry, row["dataset"])
        assert res.is_sparse_entry(entry) == row["sparse"], row["dataset"]
        charged = get_method("gbmort").cost_of(row["n"], row["p"], row["d"], reference, sparse=row["sparse"],
                                               density=res.input_density(entry["shape"])).fit_seconds / PROBE_STAGES
        ratio = charged / row["T_cpu"]
        if row["dataset"] in CONSTANT_COLUMN_ROWS:
            assert 1.0 <= ratio <= 5.0, (row["dataset"], ratio)
            continuous = get_method("gbmort").cost_of(row["n"], row["p"], row["d"], reference,
                                                      sparse=False).fit_seconds / PROBE_STAGES
            assert continuous / row["T_cpu"] > 20.0       # what the registry's input_density corrects
        elif row["sparse"]:
            assert 1.0 <= ratio <= 3.5, (row["dataset"], ratio)
        else:
            assert 0.3 <= ratio <= 2.5, (row["dataset"], ratio)


def test_single_label_forests_are_charged_by_label_frequency():
    """Oracle: 100-tree forests on one 0/1 label each (``tests/data/label_forest_measured_cpu.json``: 30 labels of
    delicious, bibtex, enron and corel5k picked by frequency, and the archived br-rf fits of six Table 6.5 sets).
    A tree on one label stops at pure nodes: delicious' rare labels grow 276-1224 nodes a tree, where a fully grown
    regression tree is charged 25 840. Charged as such (``forest_cost`` per output), br-rf asked 18.9 hours and
    262 GB a delicious fit; the label model charges every measured forest 0.7-7.7x its CPU time (median 1.4x)
    and its nodes 0.5-8.5x, where the regression charge was 6-285x (median 52x)."""
    from forestbench.workflow.methods import get_method

    data = json.loads((Path(__file__).parent / "data" / "label_forest_measured_cpu.json").read_text())
    assert len(data["entries"]) >= 36 and {"delicious", "bibtex", "enron", "corel5k"} <= \
        {e["dataset"] for e in data["entries"]}
    times, sizes, old = [], [], []
    for e in data["entries"]:
        params = {"n_estimators": e["n_estimators"], "max_features": e["max_features"]}
        d = e["labels"]
        cost = get_method("st_random_forest").cost_of(e["n"], e["p"], d, params, sparse=e["sparse"],
                                                      density=e["input_density"], label_density=e["frequency"])
        times.append(cost.fit_seconds / e["cpu_s"])
        sizes.append(R.label_tree_nodes(e["n"], e["frequency"]) * e["n_estimators"] * d / e["nodes"])
        regression = get_method("st_random_forest").cost_of(e["n"], e["p"], d, params, sparse=e["sparse"],
                                                            density=e["input_density"])
        old.append(regression.fit_seconds / e["cpu_s"])
    assert 0.65 <= min(times) and max(times) <= 8.0, (min(times), max(times))
    assert 1.0 <= float(np.median(times)) <= 2.5
    assert 0.4 <= min(sizes) and max(sizes) <= 9.0, (min(sizes), max(sizes))
    assert float(np.median(old)) > 10 * float(np.median(times))   # what the label model replaces


def test_single_label_forest_charge_bounds_the_labels_it_averages():
    """The label charge is concave in the label's frequency, so d forests charged at the mean frequency cover d
    labels of any frequencies with that mean; it is largest at 0.5, which a multi-label set without a registry
    label count is charged at. A frequency outside [0, 1] is refused by name; regression outputs keep the fully
    grown trees' charge."""
    from forestbench.workflow.methods import get_method

    params = {"n_estimators": 100, "max_features": "sqrt"}
    rng = np.random.default_rng(0)
    for _ in range(20):
        freqs = rng.beta(0.3, 8.0, size=50)
        each = sum(R.label_forest_cost(12920, 500, params, f, sparse=True, density=0.04).fit_seconds for f in freqs)
        mean = R.label_forest_cost(12920, 500, params, float(freqs.mean()), sparse=True, density=0.04).fit_seconds
        assert each <= 50 * mean * (1 + 1e-12)
    grid = [R.label_forest_cost(5000, 100, params, f).fit_seconds for f in np.linspace(0.0, 1.0, 21)]
    assert max(grid) == grid[10] and grid[0] < grid[1]
    for n in (20, 300, 12920):      # concave on small training parts too, down to frequencies below one row
        charge = [R.label_forest_cost(n, 100, params, f).fit_seconds for f in np.linspace(0.0, 0.5, 2001)]
        assert np.diff(charge, 2).max() <= 1e-12 * max(charge)
    method = get_method("st_random_forest")
    unknown = method.cost_of(5000, 100, 20, params, task="multilabel")
    assert unknown == method.cost_of(5000, 100, 20, params, label_density=0.5)
    assert method.cost_of(5000, 100, 20, params, label_density=0.02).fit_seconds < unknown.fit_seconds
    assert method.cost_of(5000, 100, 20, params, task="regression") == method.cost_of(5000, 100, 20, params)
    assert R.label_tree_nodes(5000, 0.0) == 1.0 and R.label_tree_nodes(50, 0.5) <= 99
    with pytest.raises(ValueError, match="label frequency"):
        R.label_forest_cost(5000, 100, params, 1.5)


def test_projecting_the_gradient_is_charged_by_the_projection_nonzeros():
    """gbrt-relabel-rpo projects the n x d gradient onto q columns every stage: a Gaussian or Rademacher projection
    by one BLAS product, charged C_PROJECT_BLAS per sample, output and projected column; the sparse ones by a loop
    over their non-zero entries, C_PROJECT per entry (a third of an Achlioptas one, one a column of a
    sub-sampling); gbmort and st-gbrt project nothing. Before, the charge did not grow with q, so the Fig 6.6 sweep
    (q up to 983 on delicious) was planned at a quarter of what its q = 983 fits alone take."""
    from forestbench.workflow.methods import get_method
    from forestbench.workflow.methods.boosting import C_PROJECT, C_PROJECT_BLAS

    n, p, d = 12920, 500, 983
    base = {"n_estimators": 100, "learning_rate": 0.1, "max_leaf_nodes": 2, "loss": "logistic"}
    relabel = get_method("gbrt_relabel_rpo")

    def seconds(q, projection="gaussian"):
        params = {**base, "output_projection": projection, "n_components": q}
        return relabel.cost_of(n, p, d, params, sparse=True, density=0.0366).fit_seconds

    extra = seconds(983) - seconds(100)
    assert extra >= 100 * C_PROJECT_BLAS * n * d * (983 - 100)     # 100 stages of the projection's growth
    # up to one block of the loop (boosting/_loop.pyx) the dense projections take the loop too
    from forestbench.boosting._loop import PROJECTED_COLUMNS_PER_BLOCK
    from forestbench.workflow.methods.boosting import BLAS_ABOVE_Q
    assert BLAS_ABOVE_Q == PROJECTED_COLUMNS_PER_BLOCK
    at = BLAS_ABOVE_Q
    assert seconds(at) - seconds(at - 1) >= 100 * C_PROJECT * n * d > seconds(at + 2) - seconds(at + 1)
    assert seconds(983, "rademacher") == seconds(983)
    achlioptas = seconds(983, "achlioptas") - seconds(100, "achlioptas")
    assert achlioptas >= 100 * C_PROJECT / 3 * n * d * (983 - 100) > extra
    assert seconds(100, "subsample") < seconds(100) and seconds(983) > 4 * seconds(1)
    # measured (benchmarks/README.md, bench_relabel_q.py): about 1.0 s a stage at q = 983 against gbmort's 0.27
    mort = get_method("gbmort").cost_of(n, p, d, base, sparse=True, density=0.0366).fit_seconds
    assert 2.5 * mort < seconds(983) < 8 * mort
