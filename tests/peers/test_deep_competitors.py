"""Competitors of the deep tree-ensembles paper: MLDF, ERC, ECC, MLP, ML-kNN, RAkEL-o."""
import numpy as np
import pytest
from sklearn.datasets import make_multilabel_classification, make_regression

from forestbench.peers._dte_competitors import (
    EnsembleOfClassifierChains,
    EnsembleOfRegressorChains,
    MultiLabelDeepForest,
    RakelOverlapping,
    TunedMLkNN,
    TunedMLP,
)
from forestbench.metrics import get_metric, micro_auc


@pytest.fixture(scope="module")
def multilabel():
    X, Y = make_multilabel_classification(n_samples=100, n_features=6, n_classes=4, random_state=2)
    return X.astype(float), Y


def test_mldf_grows_its_forests_and_stops_after_patience(multilabel):
    X, Y = multilabel
    m = MultiLabelDeepForest("ranking_loss", first_n_estimators=4, step_n_estimators=2, max_n_estimators=7,
                             cv=3, patience=2, max_layers=8, random_state=0).fit(X, Y)
    scores = m.layer_scores_
    # ranking loss is minimised: the selected layer is the best built one
    assert m.n_layers_ == int(np.argmin(scores)) + 1
    best = np.minimum.accumulate(scores)
    if m.n_layers_built_ < 8:  # stopped early: the last `patience` layers did not improve
        assert np.all(scores[-2:] >= best[-3])
    trees = [models[0][0].n_estimators for models in m.layers_]
    assert trees == [min(7, 4 + 2 * i) for i in range(m.n_layers_)]
    P = m.predict(X)
    assert P.shape == Y.shape and np.all((P >= 0) & (P <= 1))
    assert m.run_info_()["n_layers"] == m.n_layers_


def test_mldf_layer_scores_are_out_of_fold(multilabel):
    X, _ = multilabel
    rng = np.random.default_rng(1)
    Y = (rng.random((100, 3)) < 0.5).astype(int)   # noise: in-fold scores would be near perfect
    m = MultiLabelDeepForest("micro_auc", first_n_estimators=5, cv=3, patience=1, max_layers=2,
                             random_state=0).fit(X, Y)
    assert m.layer_scores_[0] < 0.7
    assert get_metric("micro_auc").higher_is_better


def test_erc_chains_have_random_orders_and_fit_the_training_targets():
    X, Y = make_regression(n_samples=60, n_features=5, n_targets=4, random_state=0)
    m = EnsembleOfRegressorChains(n_chains=5, random_state=3).fit(X, Y)
    orders = {tuple(c.order_) for c in m.chains_}
    assert len(orders) > 1
    # fully grown trees on distinct rows, chained on the true targets, reproduce the training targets
    np.testing.assert_allclose(m.predict(X), Y, atol=1e-8)
    again = EnsembleOfRegressorChains(n_chains=5, random_state=3).fit(X, Y)
    np.testing.assert_array_equal(again.predict(X[:5] + 0.1), m.predict(X[:5] + 0.1))


def test_ecc_averages_label_probabilities(multilabel):
    X, Y = multilabel
    m = EnsembleOfClassifierChains(n_chains=4, random_state=0).fit(X[:70], Y[:70])
    P = m.predict(X[70:])
    assert P.shape == (30, Y.shape[1]) and np.all((P >= 0) & (P <= 1))
    single = [np.asarray(c.predict_proba(X[70:])) for c in m.chains_]
    np.testing.assert_allclose(P, np.mean(single, axis=0))
    with pytest.raises(ValueError, match="at least 2 label columns"):
        EnsembleOfClassifierChains(n_chains=2).fit(X, Y[:, 0])


def test_mlp_is_tuned_over_its_grid(multilabel):
    X, Y = multilabel
    m = TunedMLP(neurons=(4, 8), depths=(1, 2), cv=2, max_iter=30, random_state=0).fit(X, Y)
    assert m.best_params_["hidden_layer_sizes"] in {(4,), (8,), (4, 4), (8, 8)}
    assert len(m.search_.cv_results_["params"]) == 4
    P = m.predict(X)
    assert P.shape == Y.shape and np.all((P >= 0) & (P <= 1))
    Xr, Yr = make_regression(n_samples=60, n_features=4, n_targets=2, random_state=0)
    r = TunedMLP(neurons=(4,), depths=(1,), cv=2, max_iter=30, random_state=0).fit(Xr, Yr)
    assert r.task_ == "regression" and r.predict(Xr).shape == Yr.shape


def test_mlknn_tunes_k_and_smoothing(multilabel):
    pytest.importorskip("skmultilearn")
    X, Y = multilabel
    m = TunedMLkNN(k_values=(3, 5), s_values=(0.5, 1.0), cv=3, random_state=0).fit(X[:70], Y[:70])
    assert set(m.cv_scores_) == {(3, 0.5), (3, 1.0), (5, 0.5), (5, 1.0)}
    assert m.cv_scores_[(m.best_params_["k"], m.best_params_["s"])] == max(m.cv_scores_.values())
    P = m.predict(X[70:])
    assert P.shape == (30, 4) and np.all((P >= 0) & (P <= 1))
    assert micro_auc(Y[70:], P) > 0.6


def test_mlknn_label_outputs_are_the_thresholded_posteriors_of_the_same_model(multilabel):
    pytest.importorskip("skmultilearn")
    from forestbench.metrics import hamming_loss, label_ranking_loss

    X, Y = multilabel
    kw = dict(k_values=(3, 5), s_values=(0.5, 1.0), cv=3, random_state=0)
    post = TunedMLkNN(**kw).fit(X[:70], Y[:70])
    lab = TunedMLkNN(outputs="labels", **kw).fit(X[:70], Y[:70])
    assert lab.best_params_ == post.best_params_
    P, H = post.predict(X[70:]), lab.predict(X[70:])
    assert set(np.unique(H)) <= {0.0, 1.0} and 0 < H.sum() < H.size
    np.testing.assert_array_equal(H, (P >= 0.5).astype(float))
    assert hamming_loss(Y[70:], H) == hamming_loss(Y[70:], P)
    # a (relevant, irrelevant) pair whose 0/1 outputs tie counts as a ranking error
    pairs = [np.mean(h[y == 1][:, None] <= h[y == 0][None, :]) if 0 < y.sum() < len(y) else 0.0
             for y, h in zip(Y[70:], H)]
    assert label_ranking_loss(Y[70:], H) == pytest.approx(np.mean(pairs))
    assert label_ranking_loss(Y[70:], H) > label_ranking_loss(Y[70:], P)
    with pytest.raises(ValueError, match="outputs"):
        TunedMLkNN(outputs="votes").fit(X[:70], Y[:70])


def test_rakel_o_uses_2m_overlapping_subsets_and_vote_fractions(multilabel):
    pytest.importorskip("skmultilearn")
    X, Y = multilabel
    m = RakelOverlapping(random_state=0).fit(X, Y)
    assert len(m.model_.partition_) == 2 * Y.shape[1]
    assert all(len(p) == 3 for p in m.model_.partition_)
    P = m.predict(X)
    assert P.shape == Y.shape and np.all((P >= 0) & (P <= 1))
    again = RakelOverlapping(random_state=0).fit(X, Y)
    assert [list(p) for p in again.model_.partition_] == [list(p) for p in m.model_.partition_]


def _sparse_cases():
    from forestbench.deep import DeepTreeEnsemble
    from forestbench.peers._dte_competitors import RandomForestExtraTrees

    small = dict(n_estimators=4, max_layers=2, os_folds=2, random_state=0)
    return {
        "dte-X_TE": lambda: DeepTreeEnsemble("X_TE", pca_fractions=[0.2], **small),
        "dte-X_OS_TE": lambda: DeepTreeEnsemble("X_OS_TE", pca_fractions=[0.2], **small),
        "rf_et": lambda: RandomForestExtraTrees(n_estimators=4, random_state=0),
        "mldf": lambda: MultiLabelDeepForest("ranking_loss", first_n_estimators=3, step_n_estimators=1,
                                             max_n_estimators=4, cv=2, max_layers=2, random_state=0),
        "ecc": lambda: EnsembleOfClassifierChains(n_chains=2, random_state=0),
        "mlp": lambda: TunedMLP(neurons=(4,), depths=(1,), cv=2, max_iter=20, random_state=0),
        "ml_knn": lambda: TunedMLkNN(k_values=(3,), s_values=(1.0,), cv=2, random_state=0),
        "rakel": lambda: RakelOverlapping(random_state=0),
        "erc": lambda: EnsembleOfRegressorChains(n_chains=2, random_state=0),
    }


@pytest.mark.parametrize("name", sorted(_sparse_cases()))
def test_sparse_inputs_give_the_predictions_of_their_dense_copy(multilabel, name):
    """medical's and enron's inputs are stored sparse: the cascade and every competitor take them and predict what
    they predict for the same values stored dense."""
    import warnings

    import scipy.sparse as sp

    if name in ("ml_knn", "rakel"):
        pytest.importorskip("skmultilearn")
    X, Y = multilabel
    X = np.where(X > 9, X, 0.0)   # word-count-like inputs, mostly zeros
    assert (X == 0).mean() > 0.5
    if name == "erc":
        Y = X[:, :2] * 0.5 + Y[:, :2]
    make = _sparse_cases()[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # the tiny MLP and linear SVMs stop before converging
        dense = make().fit(X[:70], Y[:70]).predict(X[70:])
        for fmt in ("csr", "csc"):
            model = make().fit(sp.csr_matrix(X[:70]).asformat(fmt), Y[:70])
            np.testing.assert_array_equal(model.predict(sp.csr_matrix(X[70:])), dense)
            np.testing.assert_array_equal(model.predict(X[70:]), dense)


def test_ecc_predicts_a_label_constant_in_training_as_that_constant(multilabel):
    """medical's rare labels can miss a training fold: ECC's chains then run over the other labels (as if the
    constant ones were not there) and the constant labels get their value; without constant labels nothing
    changes."""
    X, Y = multilabel
    Yc = np.column_stack([Y[:, :2], np.zeros(len(Y), int), Y[:, 2:], np.ones(len(Y), int)])
    got = EnsembleOfClassifierChains(n_chains=3, random_state=0).fit(X[:70], Yc[:70]).predict(X[70:])
    alone = EnsembleOfClassifierChains(n_chains=3, random_state=0).fit(X[:70], Y[:70]).predict(X[70:])
    assert got.shape == (30, 6)
    np.testing.assert_array_equal(got[:, 2], 0.0)
    np.testing.assert_array_equal(got[:, 5], 1.0)
    np.testing.assert_array_equal(got[:, [0, 1, 3, 4]], alone)
    # every label constant: no chain, the constants
    const = EnsembleOfClassifierChains(n_chains=3, random_state=0).fit(X[:70], Yc[:70][:, [2, 5]])
    assert const.chains_ == [] and np.array_equal(const.predict(X[70:]), np.tile([0.0, 1.0], (30, 1)))
