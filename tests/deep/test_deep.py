"""Deep tree-ensembles (DTE paper): the cascade, its embeddings, its pruning and its input checks."""
import numpy as np
import pytest
from sklearn.datasets import make_multilabel_classification, make_regression
from sklearn.decomposition import PCA

from forestbench.forest import ExtraTreesRegressor, RandomForestRegressor
from forestbench.deep._cascade import DeepTreeEnsemble, as_seed_sequence, layer_seed
from forestbench.peers._dte_competitors import RandomForestExtraTrees
from forestbench.deep._embedding import TreeEmbedding, forest_node_indicator, n_components_for
from forestbench.metrics import arrmse, micro_auc


@pytest.fixture(scope="module")
def multilabel():
    X, Y = make_multilabel_classification(n_samples=120, n_features=8, n_classes=4, random_state=0)
    return X.astype(float), Y


@pytest.fixture(scope="module")
def regression():
    X, Y = make_regression(n_samples=90, n_features=6, n_targets=3, noise=5.0, random_state=1)
    return X, Y * np.array([1.0, 10.0, 100.0]) + 50.0


# ------------------------------------------------------------------------------------------------- RF + ET
@pytest.mark.parametrize("data", ["multilabel", "regression"])
def test_one_layer_without_new_features_is_the_rf_et_average(data, request):
    X, Y = request.getfixturevalue(data)
    dte = DeepTreeEnsemble("X", n_estimators=7, max_layers=1, random_state=3).fit(X, Y)
    base = RandomForestExtraTrees(n_estimators=7, random_state=3).fit(X, Y)
    # an independent construction from the kernel forests, on standardised targets for regression
    root = as_seed_sequence(3)
    mu, sd = (0.0, 1.0) if data == "multilabel" else (Y.mean(axis=0), Y.std(axis=0))
    rf = RandomForestRegressor(7, max_features="sqrt", random_state=layer_seed(root, 1, 0)).fit(X, (Y - mu) / sd)
    et = ExtraTreesRegressor(7, max_features="sqrt", random_state=layer_seed(root, 1, 1)).fit(X, (Y - mu) / sd)
    expected = 0.5 * (rf.predict(X) + et.predict(X)) * sd + mu
    np.testing.assert_allclose(dte.predict(X), expected, rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(base.predict(X), expected, rtol=1e-12, atol=1e-9)
    assert dte.n_layers_ == 1 and dte.layer_scores_.shape == (1,)


# ----------------------------------------------------------------------------------------------- embedding
def _dense_embedding_oracle(M, p, e):
    D = M.toarray()
    counts = D.sum(axis=0)
    keep = (counts > 0) & (counts <= p * D.shape[0])
    return D[:, keep] / (np.log(counts[keep]) + e)


@pytest.mark.parametrize("n_trees,solver", [(6, "gram"), (6, "covariance"), (1, "auto")])
def test_sparse_pca_embedding_equals_sklearn_pca_on_the_dense_centred_matrix(multilabel, n_trees, solver):
    X, Y = multilabel
    forest = RandomForestRegressor(n_trees, max_features="sqrt", min_samples_leaf=3, random_state=0)
    forest.fit(X[:80], Y[:80])
    M_train = forest_node_indicator(forest.estimators_, X[:80])
    M_new = forest_node_indicator(forest.estimators_, X[80:])
    assert M_train.shape[1] == forest.n_nodes_
    # every row goes through each tree's root and reaches exactly the leaf apply() gives
    offsets = np.cumsum([0] + [t.tree_.node_count for t in forest.estimators_])
    assert np.all(M_train[:, offsets[:-1]].toarray() == 1)
    leaves = forest.apply(X[:80]) + offsets[:-1]
    assert np.all(M_train[np.arange(80)[:, None], leaves].toarray() == 1)

    emb = TreeEmbedding(max_node_fraction=0.9, weight_offset=1.0, n_components=0.3, solver=solver)
    Z_train = emb.fit_transform(M_train)
    D = _dense_embedding_oracle(M_train, 0.9, 1.0)
    k = n_components_for(0.3, *D.shape)
    assert Z_train.shape == (80, k) == (80, emb.n_components_)
    pca = PCA(n_components=k, svd_solver="full").fit(D - D.mean(axis=0))
    ref_train = pca.transform(D - D.mean(axis=0))
    ref_new = pca.transform(_dense_embedding_oracle_new(M_new, M_train, 0.9, 1.0) - D.mean(axis=0))
    signs = np.sign(np.sum(Z_train * ref_train, axis=0))
    np.testing.assert_allclose(Z_train * signs, ref_train, atol=1e-8)
    np.testing.assert_allclose(emb.transform(M_new) * signs, ref_new, atol=1e-8)
    np.testing.assert_allclose(emb.explained_variance_, pca.explained_variance_, rtol=1e-8, atol=1e-10)


def _dense_embedding_oracle_new(M_new, M_train, p, e):
    counts = np.asarray(M_train.sum(axis=0)).ravel()
    keep = (counts > 0) & (counts <= p * M_train.shape[0])
    return M_new.toarray()[:, keep] / (np.log(counts[keep]) + e)


def test_embedding_drops_frequent_nodes_and_weights_by_node_size(multilabel):
    X, Y = multilabel
    forest = ExtraTreesRegressor(3, random_state=1).fit(X, Y)
    M = forest_node_indicator(forest.estimators_, X)
    emb = TreeEmbedding(max_node_fraction=0.5, weight_offset=0.5, n_components=1)
    W = emb.fit_indicator(M)
    counts = np.asarray(M.sum(axis=0)).ravel()
    assert np.all(counts[emb.kept_columns_] <= 0.5 * X.shape[0])
    assert not np.isin(0, emb.kept_columns_)  # the first root is gone
    np.testing.assert_allclose(emb.weights_, 1.0 / (np.log(counts[emb.kept_columns_]) + 0.5))
    assert W.shape == (X.shape[0], emb.kept_columns_.size)


# ----------------------------------------------------------------------------------------------- OS features
def test_output_space_features_of_training_rows_are_out_of_fold():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 4))
    Y = (rng.random((60, 3)) < 0.5).astype(float)   # pure noise: only in-fold models could predict it
    dte = DeepTreeEnsemble("X_OS", n_estimators=5, max_layers=1, os_folds=4, random_state=0).fit(X, Y)
    layer = dte.layers_[0]
    held = [np.setdiff1d(np.arange(60), rows) for rows in layer.os_fit_rows]
    assert sorted(np.concatenate(held).tolist()) == list(range(60))   # the held-out parts partition the rows
    for (rf, et), rows, out in zip(layer.os_models, layer.os_fit_rows, held):
        assert np.intersect1d(rows, out).size == 0
        np.testing.assert_allclose(layer.os_train[out], 0.5 * (rf.predict(X[out]) + et.predict(X[out])))
    # fully grown ET memorises its training rows: an in-fold block would be close to Y, an out-of-fold one is not
    assert np.mean(np.abs(layer.os_train - Y)) > 0.3
    # new rows get the average of the fold models
    expected = np.mean([0.5 * (rf.predict(X) + et.predict(X)) for rf, et in layer.os_models], axis=0)
    feats_rf, feats_et = layer.features(X.astype(np.float32), X.astype(np.float32), X.astype(np.float32), True)
    np.testing.assert_allclose(feats_rf[:, 4:], expected, rtol=1e-6)
    np.testing.assert_array_equal(feats_rf, feats_et)


# ---------------------------------------------------------------------------------- pruning and replay
def test_pruning_selects_the_best_stored_training_layer_and_predict_replays_it(multilabel):
    X, Y = multilabel
    dte = DeepTreeEnsemble("X_TE", n_estimators=6, max_layers=4, pca_fractions=[0.2], random_state=5,
                           keep_all_layers=True, pruning_score="train").fit(X, Y)
    assert dte.n_layers_built_ == 4 and dte.layer_scores_.shape == (4,)
    assert dte.n_layers_ == int(np.argmax(dte.layer_scores_)) + 1
    # the stored training score of every layer is that of replaying the training rows through the cascade
    staged = list(dte.staged_predict(X))
    assert len(staged) == 4
    for s, P in zip(dte.layer_scores_, staged):
        assert micro_auc(Y, P) == pytest.approx(s, abs=1e-12)
    np.testing.assert_array_equal(dte.predict(X), staged[dte.n_layers_ - 1])
    info = dte.run_info_()
    assert info["n_layers"] == dte.n_layers_ and info["layer_scores"] == pytest.approx(list(dte.layer_scores_))
    assert info["layer_metric"] == "micro_auc" and info["pca_fraction"] == 0.2


def test_pruned_model_keeps_only_the_selected_layers_and_predicts_the_same(multilabel):
    X, Y = multilabel
    full = DeepTreeEnsemble("X_TE", n_estimators=6, max_layers=4, pca_fractions=[0.2], random_state=5,
                            keep_all_layers=True).fit(X, Y)
    pruned = DeepTreeEnsemble("X_TE", n_estimators=6, max_layers=4, pca_fractions=[0.2], random_state=5).fit(X, Y)
    assert len(pruned.layers_) == pruned.n_layers_ == full.n_layers_
    assert not hasattr(pruned, "staged_predict")
    np.testing.assert_array_equal(pruned.predict(X[:30]), full.predict(X[:30]))


def test_regression_prunes_on_training_arrmse(regression):
    X, Y = regression
    dte = DeepTreeEnsemble("X_OS_TE", n_estimators=5, max_layers=3, pca_fractions=[0.1], os_folds=3,
                           pruning_score="train", random_state=2).fit(X, Y)
    assert dte.task_ == "regression" and dte.layer_metric_ == "arrmse"
    assert dte.n_layers_ == int(np.argmin(dte.layer_scores_)) + 1
    P = dte.predict(X)
    assert P.shape == Y.shape
    # targets are standardised internally and mapped back: the scale of each target is preserved
    assert arrmse(Y, P, Y) < 0.7
    assert set(dte.fit_time_split_[0]) == {"embedding_forests", "path_extraction", "pca", "os_cv",
                                          "prediction_forests", "scoring"}


@pytest.mark.parametrize("variant", ["TE", "X_OS", "X_OS_TE"])
def test_every_variant_fits_and_gives_label_probabilities(multilabel, variant):
    X, Y = multilabel
    dte = DeepTreeEnsemble(variant, n_estimators=4, max_layers=2, pca_fractions=[0.3], os_folds=3,
                           random_state=0).fit(X[:90], Y[:90])
    P = dte.predict(X[90:])
    assert P.shape == (30, Y.shape[1]) and np.all((P >= 0) & (P <= 1))
    assert micro_auc(Y[90:], P) > 0.6


def test_pca_size_is_tuned_inside_the_training_rows(multilabel):
    X, Y = multilabel
    dte = DeepTreeEnsemble("X_TE", n_estimators=4, max_layers=2, pca_fractions=[1, 0.5], pca_validation=0.3,
                           random_state=0).fit(X, Y)
    assert set(dte.pca_tuning_scores_) == {1, 0.5}
    best = max(dte.pca_tuning_scores_, key=dte.pca_tuning_scores_.get)
    assert dte.pca_fraction_ == best


def test_same_seed_same_model_for_any_n_jobs(multilabel):
    X, Y = multilabel
    a = DeepTreeEnsemble("X_OS_TE", n_estimators=4, max_layers=2, pca_fractions=[0.3], os_folds=3,
                         random_state=9).fit(X, Y).predict(X)
    b = DeepTreeEnsemble("X_OS_TE", n_estimators=4, max_layers=2, pca_fractions=[0.3], os_folds=3,
                         random_state=9, n_jobs=2).fit(X, Y).predict(X)
    np.testing.assert_array_equal(a, b)


# ----------------------------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("params,match", [
    ({"variant": "X_XX"}, "variant"),
    ({"pca_fractions": [0.0]}, r"\(0, 1\]"),
    ({"pca_fractions": [0.2, 1.5]}, r"\(0, 1\]"),
    ({"pca_fractions": [3]}, "one component"),
    ({"max_layers": 0}, "max_layers"),
    ({"embedding_sample": 0.0}, "embedding_sample"),
    ({"max_node_fraction": 1.5}, "max_node_fraction"),
])
def test_bad_parameters_are_named(multilabel, params, match):
    X, Y = multilabel
    with pytest.raises(ValueError, match=match):
        DeepTreeEnsemble(**params).fit(X, Y)


def test_single_label_column_is_refused_for_multilabel(multilabel):
    X, Y = multilabel
    with pytest.raises(ValueError, match="at least 2 label columns"):
        DeepTreeEnsemble(task="multilabel", n_estimators=2, max_layers=1).fit(X, Y[:, :1])
    with pytest.raises(ValueError, match="at least 2 label columns"):
        DeepTreeEnsemble(n_estimators=2, max_layers=1).fit(X, Y[:, 0])


def test_nan_in_x_is_refused(multilabel):
    X, Y = multilabel
    X = X.copy()
    X[3, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        DeepTreeEnsemble(n_estimators=2, max_layers=1).fit(X, Y)


def test_few_components_use_the_lanczos_solver_and_still_match_sklearn_pca():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(260, 5))
    Y = X[:, :2] + 0.1 * rng.normal(size=(260, 2))
    forest = ExtraTreesRegressor(4, max_features=1.0, min_samples_leaf=2, random_state=0).fit(X, Y)
    M = forest_node_indicator(forest.estimators_, X)
    emb = TreeEmbedding(max_node_fraction=0.95, weight_offset=1.0, n_components=0.02, solver="gram")
    Z = emb.fit_transform(M)
    D = _dense_embedding_oracle(M, 0.95, 1.0)
    assert emb.n_components_ == 5 < 0.1 * 260  # the Lanczos branch
    ref = PCA(n_components=5, svd_solver="full").fit_transform(D - D.mean(axis=0))
    signs = np.sign(np.sum(Z * ref, axis=0))
    np.testing.assert_allclose(Z * signs, ref, atol=1e-7)


def test_oob_pruning_scores_rows_with_trees_that_never_saw_them():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(80, 4))
    Y = (rng.random((80, 3)) < 0.4).astype(float)   # noise: out-of-bag micro-AUC is near chance
    train = DeepTreeEnsemble("X_TE", n_estimators=15, max_layers=2, pca_fractions=[0.2], pruning_score="train",
                             random_state=0).fit(X, Y)
    oob = DeepTreeEnsemble("X_TE", n_estimators=15, max_layers=2, pca_fractions=[0.2], random_state=0).fit(X, Y)
    assert oob.pruning_score == "oob"   # the default: the reading of record (config/README.md, D10)
    assert np.all(train.layer_scores_ > 0.99)
    assert np.all(oob.layer_scores_ < 0.7)
    assert oob.n_layers_ == int(np.argmax(oob.layer_scores_)) + 1
    # the same layers are grown either way; only the score differs
    assert train.n_layers_built_ == oob.n_layers_built_ == 2


@pytest.mark.parametrize("task", ["multilabel", "regression"])
def test_every_run_records_the_layer_count_of_each_free_reading(task):
    # a fit pruned by one reading records the L* the other readings select on the same layers: each equals what a
    # fit pruned by that reading selects
    rng = np.random.default_rng(0)
    X = rng.normal(size=(90, 4))
    Y = (X[:, :3] + rng.normal(scale=1.5, size=(90, 3)) > 0).astype(float) if task == "multilabel" else \
        X[:, :2] @ rng.normal(size=(2, 3)) + rng.normal(size=(90, 3))
    kw = dict(n_estimators=8, max_layers=4, pca_fractions=[0.2], os_folds=3, random_state=0)
    fits = {r: DeepTreeEnsemble("X_OS_TE", pruning_score=r, **kw).fit(X, Y) for r in ("train", "oob", "oof")}
    for r, fit in fits.items():
        assert fit.reading_layers_[r] == fit.n_layers_
        for other in ("train", "oob"):
            assert fit.reading_layers_[other] == fits[other].n_layers_
        assert set(fit.reading_layers_) == {"train", "oob", r}
        info = fit.run_info_()
        assert {k: v for k, v in info.items() if k.startswith("n_layers_") and k != "n_layers_built"} == \
            {f"n_layers_{k}": v for k, v in fit.reading_layers_.items()}
    # the oob reading's layers differ from the train reading's on these noisy labels (else the test proves little)
    if task == "multilabel":
        assert fits["train"].reading_layers_["train"] != fits["train"].reading_layers_["oob"]


# ------------------------------------------------------------------------------------- PCA-size search sharing
@pytest.mark.parametrize("solver", ["gram", "covariance"])
def test_truncated_embedding_equals_a_fit_solved_at_the_same_size(multilabel, solver):
    X, Y = multilabel
    forest = RandomForestRegressor(3, random_state=0).fit(X, Y)
    M = forest_node_indicator(forest.estimators_, X)
    shared = TreeEmbedding(0.95, 1.0, 0.6, solver=solver, solve_components=0.6)
    shared.fit_transform(M, keep_solution=True)
    for f in (1, 0.05, 0.3):
        alone = TreeEmbedding(0.95, 1.0, f, solver=solver, solve_components=0.6)
        Z = alone.fit_transform(M)
        cut, Zc = shared.truncated(f)
        assert cut.n_components_ == alone.n_components_ < shared.n_components_
        np.testing.assert_array_equal(Zc, Z)
        np.testing.assert_array_equal(cut.transform(M[:20]), alone.transform(M[:20]))
    with pytest.raises(ValueError, match="keep_solution"):
        alone.truncated(0.05)


@pytest.mark.parametrize("variant", ["X_TE", "X_OS_TE"])
def test_pca_size_candidates_share_the_first_layer_and_equal_unshared_fits(multilabel, variant):
    X, Y = multilabel
    fractions = [1, 0.05, 0.4]
    dte = DeepTreeEnsemble(variant, n_estimators=3, max_layers=2, pca_fractions=fractions, pca_validation=2,
                           os_folds=2, random_state=5).fit(X, Y)
    Yt = np.asarray(Y, dtype=float)
    seq = as_seed_sequence(11)
    first = dte._first_layer(X[:80].astype(np.float32), Yt[:80], seq, 0.4)
    for f in fractions:
        alone, s_alone, _ = dte._fit_cascade(X[:80].astype(np.float32), Yt[:80], Yt[:80], f, seq, keep_all=True,
                                             solve_fraction=0.4)
        shared, s_shared, _ = dte._fit_cascade(X[:80].astype(np.float32), Yt[:80], Yt[:80], f, seq,
                                               keep_all=True, solve_fraction=0.4, first=first)
        assert s_alone == s_shared
        # only layer 1 (shared) is solved at the largest size; later layers solve at the candidate's own size
        assert shared[0].embedders["rf"][1].solve_components == 0.4
        assert shared[1].embedders["rf"][1].solve_components is None
        Xt = X[80:].astype(np.float32)
        np.testing.assert_array_equal(dte._replay(shared, 2, Xt), dte._replay(alone, 2, Xt))
    unshared = dict(dte.pca_tuning_scores_)
    dte.pca_tuning_scores_ = {}
    dte._tune_fraction(X.astype(np.float32), Yt, Yt, fractions, as_seed_sequence(3), share=False)
    a = dict(dte.pca_tuning_scores_)
    dte.pca_tuning_scores_ = {}
    dte._tune_fraction(X.astype(np.float32), Yt, Yt, fractions, as_seed_sequence(3), share=True)
    assert dte.pca_tuning_scores_ == a and set(a) == set(unshared)


# ---------------------------------------------------------------------------------- layer-selection readings
@pytest.mark.parametrize("variant", ["X_OS", "X_TE"])
def test_oof_reading_scores_out_of_fold_predictions_and_builds_the_same_layers(variant):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(80, 4))
    Y = (rng.random((80, 3)) < 0.4).astype(float)   # noise: out-of-fold micro-AUC is near chance
    kw = dict(n_estimators=6, max_layers=3, pca_fractions=[0.2], os_folds=3, keep_all_layers=True, random_state=0)
    train = DeepTreeEnsemble(variant, pruning_score="train", **kw).fit(X, Y)
    oof = DeepTreeEnsemble(variant, pruning_score="oof", **kw).fit(X, Y)
    assert np.all(train.layer_scores_ > 0.99) and np.all(oof.layer_scores_ < 0.7)
    assert oof.n_layers_ == int(np.argmax(oof.layer_scores_)) + 1
    for a, b in zip(train.staged_predict(X[:10]), oof.staged_predict(X[:10])):   # the same layers either way
        np.testing.assert_array_equal(a, b)
    if variant == "X_OS":   # layer L is scored by the out-of-fold block layer L + 1 receives
        for L in (1, 2):
            assert oof.layer_scores_[L - 1] == micro_auc(Y, oof.layers_[L].os_train)


def test_the_pca_size_search_refits_what_a_fit_at_the_selected_size_alone_gives():
    # dte_table_4's -pca0.05 variants and its selected-size variants share their seed: where the search picks 0.05
    # they must be the same model (config/README.md, D12)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 5))
    Y = (X[:, :3] + rng.normal(size=(120, 3)) > 0).astype(float)
    kw = dict(n_estimators=8, max_layers=3, os_folds=3, random_state=7)
    searched = DeepTreeEnsemble("X_TE", pca_fractions=[0.05, 0.2], pca_validation=3, **kw).fit(X, Y)
    alone = {f: DeepTreeEnsemble("X_TE", pca_fractions=[f], **kw).fit(X, Y) for f in (0.05, 0.2)}
    np.testing.assert_array_equal(searched.predict(X), alone[searched.pca_fraction_].predict(X))
    other = 0.05 if searched.pca_fraction_ == 0.2 else 0.2
    assert not np.array_equal(searched.predict(X), alone[other].predict(X))
