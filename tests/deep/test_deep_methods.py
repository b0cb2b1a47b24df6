"""Registration of the deep tree-ensembles and their competitors, and their experiments."""

import numpy as np
import pytest

from forestbench.errors import ConfigError
from forestbench.workflow.methods import METHODS, PLANNED, get_method, is_planned

DTE_METHODS = ["deep_tree_ensemble", "dte_rf_et", "dte_mldf", "dte_erc", "dte_ecc", "dte_mlp", "dte_mlknn",
               "dte_rakel"]


def test_dte_methods_are_registered_and_no_longer_planned():
    for name in DTE_METHODS:
        assert name in METHODS and not is_planned(name)
    assert "dte_competitor" not in PLANNED and "deep_tree_ensemble" not in PLANNED
    assert is_planned("dte_dstars") and "no installable implementation" in PLANNED["dte_dstars"]


def test_the_thesis_parameters_pass_validation_and_bad_ones_fail_before_fitting():
    spec = get_method("deep_tree_ensemble")
    spec.check_params({"variant": "X_OS_TE", "n_estimators": 150, "max_layers": 10,
                       "pca_fractions": [1, 0.01, 0.05, 0.2, 0.4, 0.6, 0.8, 0.95], "pca_validation": 5})
    with pytest.raises(ConfigError, match="variant"):
        spec.check_params({"variant": "XTE"})
    with pytest.raises(ConfigError, match="max_layers"):
        spec.check_params({"max_layers": 0})
    with pytest.raises(ConfigError, match="no parameter"):
        spec.check_params({"features": ["x", "te"]})
    est = spec.build({"variant": "TE"}, seed=4)
    assert est.random_state == 4 and est.variant == "TE"


def test_cost_grows_with_layers_trees_and_tuning():
    spec = get_method("deep_tree_ensemble")
    base = {"variant": "X_TE", "n_estimators": 50, "max_layers": 2, "pca_fractions": [0.05]}
    c1 = spec.cost_of(2000, 103, 14, base)
    assert c1.fit_seconds > 0 and c1.model_mb > 0
    assert spec.cost_of(2000, 103, 14, {**base, "max_layers": 10}).fit_seconds > 4 * c1.fit_seconds
    assert spec.cost_of(2000, 103, 14, {**base, "n_estimators": 150}).fit_seconds > 2 * c1.fit_seconds
    tuned = spec.cost_of(2000, 103, 14, {**base, "pca_fractions": [0.05, 0.2]})
    assert tuned.fit_seconds > 5 * c1.fit_seconds
    os_cost = spec.cost_of(2000, 103, 14, {**base, "variant": "X_OS"})
    assert os_cost.model_mb > get_method("dte_rf_et").cost_of(2000, 103, 14, {"n_estimators": 50}).model_mb
    for name in DTE_METHODS[1:]:
        assert get_method(name).cost_of(500, 20, 5, {}).fit_seconds > 0


def test_the_method_module_stays_light():
    import forestbench.workflow.methods.deep  # noqa: F401

    source = open(forestbench.workflow.methods.deep.__file__).read()
    assert "import numpy" not in source and "sklearn" not in source and "forestbench.forest" not in source.split(
        "register(")[0]


def test_the_thesis_dte_experiments_plan_every_method_but_dstars(repo_root):
    from forestbench.workflow.experiments import load_plan

    plan = load_plan([str(repo_root / "config" / "thesis.yaml")])
    mtr, mlc = plan.experiments["dte_table_4"], plan.experiments["dte_tables_5_9"]
    assert set(mtr.pending) == {"dstars"}
    assert not mlc.pending
    names = [v.name for v in mlc.variants]
    assert {"rf_et", "X_TE", "TE", "X_OS", "X_OS_TE", "X_TE-pca0.05", "TE-pca0.05", "X_OS_TE-pca0.05", "ml_knn",
            "ml_knn-labels", "rakel", "mlp", "ecc", "mldf-hamming_loss", "mldf-ranking_loss",
            "mldf-one_error"} == set(names)
    # the fixed-fraction variants are the selected-fraction cascades with one fraction: nothing else differs
    for exp in (mtr, mlc):
        for name in ("X_TE", "TE", "X_OS_TE"):
            searched, fixed = exp.variant(name).params, exp.variant(f"{name}-pca0.05").params
            assert fixed["pca_fractions"] == [0.05] and len(searched["pca_fractions"]) == 8
            assert {k: v for k, v in searched.items() if k not in ("pca_fractions", "pca_validation")} == \
                {k: v for k, v in fixed.items() if k != "pca_fractions"}
    # ML-kNN scored on its 0/1 outputs is the same model: only what predict returns differs
    assert mlc.variant("ml_knn-labels").params == {**mlc.variant("ml_knn").params, "outputs": "labels"}


def test_run_info_gives_scalar_layer_scores_for_the_scores_table():
    from sklearn.datasets import make_multilabel_classification

    X, Y = make_multilabel_classification(n_samples=60, n_features=5, n_classes=3, random_state=0)
    est = get_method("deep_tree_ensemble").build({"variant": "X_TE", "n_estimators": 3, "max_layers": 2,
                                                  "pca_fractions": [0.2], "keep_all_layers": True}, seed=0)
    est.fit(X, Y)
    info = est.run_info_()
    assert [info["train_layer_1"], info["train_layer_2"]] == pytest.approx(list(est.layer_scores_))
    assert est.n_iter_ == 2 and list(est.stage_n_trees_) == [12, 24]
    assert np.all(np.diff(est.stage_fit_seconds_) > 0)


def test_pca_size_search_is_charged_with_the_shared_first_layer():
    """Candidates of an inner fold share layer 1's embedding forests, PCA and output-space CV: the search costs
    less than one full cascade per candidate and fold, so four times the candidates cost less than four times."""
    spec = get_method("deep_tree_ensemble")
    for variant in ("X_TE", "X_OS_TE"):
        base = {"variant": variant, "n_estimators": 30, "max_layers": 3}
        fixed = spec.cost_of(1600, 103, 14, {**base, "pca_fractions": [0.2]}).fit_seconds
        two = spec.cost_of(1600, 103, 14, {**base, "pca_fractions": [0.05, 0.2]}).fit_seconds - fixed
        eight = spec.cost_of(1600, 103, 14, {**base, "pca_fractions": [0.05, 0.06, 0.08, 0.1, 0.12, 0.14,
                                                                         0.16, 0.2]}).fit_seconds - fixed
        assert 0 < two < eight < 4 * two


def test_pca_size_search_as_dag_jobs(tmp_path, repo_root):
    """On a cluster the PCA-size candidates can be jobs of their own: the workflow's tuning in DAG mode over
    one-element ``pca_fractions`` lists (config/README.md, D12). Every candidate is a tune job, each checked against
    the estimator's constraints, and the plan charges each job one cascade per inner fold."""
    import yaml

    from forestbench.workflow.experiments import load_plan

    fractions = [1, 0.01, 0.05, 0.2, 0.4, 0.6, 0.8, 0.95]
    cfg = yaml.safe_load((repo_root / "config" / "config.yaml").read_text())
    exp = cfg["experiments"]["demo_dte"]
    exp.update(datasets=["yeast"], reports=[{"kind": "table", "metric": "micro_auc"}])
    exp.pop("reference", None)
    exp["methods"] = [{
        "name": "X_TE", "method": "deep_tree_ensemble",
        "params": {"variant": "X_TE", "n_estimators": 10, "max_layers": 3, "pca_fractions": [0.05]},
        "tune": {"grid": {"pca_fractions": [[f] for f in fractions]}, "validation": {"kfold": 5},
                 "metric": "micro_auc", "mode": "dag", "chunk": 1}}]
    cfg["experiments"] = {"demo_dte": exp}
    path = tmp_path / "dag_pca.yaml"
    path.write_text(yaml.safe_dump(cfg))
    plan = load_plan([str(path)])
    plan.check_parameters()
    experiment = plan.experiments["demo_dte"]
    jobs = experiment.tune_jobs()
    assert len(jobs) == len(fractions) * experiment.repeats["yeast"]
    assert sorted(c["pca_fractions"][0] for c in experiment.candidates(experiment.variants[0])) == sorted(fractions)
    # a bad candidate is refused before any job runs
    exp["methods"][0]["tune"]["grid"]["pca_fractions"].append([1.5])
    path.write_text(yaml.safe_dump(cfg))
    with pytest.raises(ConfigError, match=r"variant X_TE: .*PCA fraction must lie in \(0, 1\], got 1.5"):
        load_plan([str(path)]).check_parameters()
