"""Correctness of the gradient-boosting family (thesis ch. 6) against oracles: scikit-learn's gradient boosting,
closed forms, scipy's scalar minimiser and the invariants of the algorithms (Appendix A's monotone training loss)."""
import numpy as np
import pytest
from scipy.optimize import minimize_scalar
from sklearn.ensemble import GradientBoostingRegressor
from sklearn.metrics import label_ranking_average_precision_score

from forestbench.boosting._gradient_boosting import (
    ArtificialGBRTRegressor,
    GBMORTRegressor,
    GBRTRelabelRPORegressor,
    GBRTRPORegressor,
    STGradientBoostingRegressor,
    initial_constants,
)
from forestbench.boosting._losses import LOGISTIC_STEP_BOUND, line_search

ALL = [STGradientBoostingRegressor, GBMORTRegressor, GBRTRPORegressor, GBRTRelabelRPORegressor]


def _regression(n=120, p=5, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, p)).astype(np.float32)
    W = rng.normal(size=(p, d))
    Y = np.sin(3 * X) @ W + 0.1 * rng.normal(size=(n, d))
    return X, Y


def _multilabel(n=150, p=6, d=5, seed=1):
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, p)).astype(np.float32)
    W = rng.normal(size=(p, d))
    Y = ((X - 0.5) @ W + 0.3 * rng.normal(size=(n, d)) > 0).astype(float)
    return X, Y


@pytest.mark.parametrize("k,mu", [(2, 0.1), (5, 0.5), (8, 1.0)])
def test_st_gbrt_square_equals_sklearn_per_output(k, mu):
    # one input feature: no two features can induce the same partition, so the data is tie-free and the trees
    # (hence predictions anywhere) must be scikit-learn's
    X, Y = _regression(n=150, p=1, d=3)
    Xt, _ = _regression(n=80, p=1, d=3, seed=5)
    ours = STGradientBoostingRegressor(n_estimators=30, learning_rate=mu, max_leaf_nodes=k).fit(X, Y)
    pred = ours.predict(Xt)
    for j in range(Y.shape[1]):
        sk = GradientBoostingRegressor(loss="squared_error", n_estimators=30, learning_rate=mu, max_leaf_nodes=k,
                                       max_depth=None, random_state=0).fit(X, Y[:, j])
        np.testing.assert_allclose(pred[:, j], sk.predict(Xt), rtol=0, atol=1e-8)
        # staged: every stage matches scikit-learn's
        for ours_stage, sk_stage in zip((s[:, j] for s in ours.staged_predict(Xt)), sk.staged_predict(Xt)):
            np.testing.assert_allclose(ours_stage, sk_stage, rtol=0, atol=1e-8)


@pytest.mark.parametrize("k,mu", [(2, 0.1), (5, 0.5), (8, 1.0)])
def test_st_gbrt_square_equals_sklearn_on_training_set(k, mu):
    # several features: exact ties between features that isolate the same samples may be broken differently (the
    # visiting order differs), but they induce the same partition, so training predictions must agree
    X, Y = _regression(n=150, d=3)
    ours = STGradientBoostingRegressor(n_estimators=30, learning_rate=mu, max_leaf_nodes=k).fit(X, Y)
    for j in range(Y.shape[1]):
        sk = GradientBoostingRegressor(n_estimators=30, learning_rate=mu, max_leaf_nodes=k, max_depth=None,
                                       random_state=0).fit(X, Y[:, j])
        np.testing.assert_allclose(ours.predict(X)[:, j], sk.predict(X), rtol=0, atol=1e-8)
        np.testing.assert_allclose(ours.train_scores_[:, j], sk.predict(X), rtol=0, atol=1e-8)


@pytest.mark.parametrize("projection", ["subsample", "gaussian", "rademacher"])
def test_rpo_on_identical_outputs_equals_gbmort(projection):
    # (the sparse families are left out: +v and -v entries on identical outputs can cancel to a null direction)
    X, Y = _regression(n=100, d=1)
    Y = np.repeat(Y, 3, axis=1)   # odd d: a Rademacher row never sums to 0
    mort = GBMORTRegressor(n_estimators=25, learning_rate=0.3, max_leaf_nodes=4).fit(X, Y)
    rpo = GBRTRPORegressor(n_estimators=25, learning_rate=0.3, max_leaf_nodes=4, output_projection=projection,
                           random_state=3).fit(X, Y)
    np.testing.assert_allclose(rpo.predict(X), mort.predict(X), atol=1e-8)


@pytest.mark.parametrize("n, d, q", [(1, 1, 1), (37, 5, 1), (50, 983, 3), (64, 20, 8), (129, 7, 21), (30, 40, 100)])
def test_both_projections_of_the_gradient_are_the_matrix_product(n, d, q):
    # a stage projects the n x d gradient onto q columns: the dense projections by one BLAS product (both operands
    # transposed, so a swapped dimension or stride breaks the non-square shapes), the sparse ones by the blocked
    # loop (8 columns a block: one block, one and a part, several)
    from forestbench.boosting._loop import project

    rng = np.random.default_rng(n + d + q)
    R, phi = rng.standard_normal((n, d)), rng.standard_normal((q, d))
    phi[rng.random((q, d)) < 0.3] = 0.0
    expect = R @ phi.T
    for method in ("blas", "blocked"):
        np.testing.assert_allclose(project(phi, R, method), expect, rtol=1e-12, atol=1e-12 * np.abs(expect).max())
    with pytest.raises(ValueError, match="same d"):
        project(phi[:, :-1] if d > 1 else np.ones((q, 2)), R)


@pytest.mark.parametrize("d", [4, 13, 20])
def test_relabel_with_identity_projection_equals_gbmort(d):
    # the projection sums 8 projected columns at a time (_loop._project): one block, one and a part, two and a part
    X, Y = _regression(n=120, d=d)
    mort = GBMORTRegressor(n_estimators=25, learning_rate=0.5, max_leaf_nodes=5).fit(X, Y)
    # q = d rows of the identity drawn without replacement: a permutation of the outputs
    relabel = GBRTRelabelRPORegressor(n_estimators=25, learning_rate=0.5, max_leaf_nodes=5,
                                      output_projection="subsample", n_components=d, random_state=1).fit(X, Y)
    np.testing.assert_allclose(relabel.predict(X), mort.predict(X), atol=1e-8)


@pytest.mark.parametrize("cls", [GBMORTRegressor, GBRTRelabelRPORegressor])
def test_square_loss_step_is_one_for_leaf_mean_trees(cls):
    # with leaves holding gradient means, sum r g = sum g^2 per output: rho = 1, so the scaled leaves are mu * means
    X, Y = _regression(n=90, d=3)
    mu = 0.25
    est = cls(n_estimators=1, learning_rate=mu, max_leaf_nodes=6).fit(X, Y)
    m = est._model
    leaf = _leaf_rows(est, X)
    R = Y - Y.mean(axis=0)
    means = np.array([R[leaf == k].mean(axis=0) for k in range(m["leaf_ptr"][1])])
    np.testing.assert_allclose(m["values"].reshape(-1, 3), mu * means, atol=1e-12)


def _leaf_rows(est, X):
    m = est._model
    rows = []
    for x in X:
        node = 0
        while m["left"][node] != -1:
            node = m["left"][node] if x[m["feature"][node]] <= m["threshold"][node] else m["right"][node]
        rows.append(m["leaf_index"][node])
    return np.array(rows)


@pytest.mark.parametrize("cls", ALL)
@pytest.mark.parametrize("loss", ["square", "absolute", "logistic"])
@pytest.mark.parametrize("mu", [1.0, 0.3])
def test_training_loss_never_increases(cls, loss, mu):
    X, Y = _multilabel() if loss == "logistic" else _regression(d=4)
    est = cls(n_estimators=40, learning_rate=mu, loss=loss, max_leaf_nodes=4, max_features=3, random_state=0,
              monitor_train_loss=True).fit(X, Y)
    path = est.train_loss_
    assert np.all(np.isfinite(path))
    assert np.all(np.diff(path) <= 1e-9 * path[0]), np.diff(path).max()
    assert path[-1] < path[0]


@pytest.mark.parametrize("loss,method", [("logistic", "newton"), ("logistic", "brent"), ("absolute", "newton"),
                                         ("square", "newton")])
def test_line_search_agrees_with_scipy(loss, method):
    rng = np.random.default_rng(7)
    for _ in range(20):
        n = int(rng.integers(5, 60))
        if loss == "logistic":
            y = rng.choice([-1.0, 1.0], size=n)
        else:
            y = rng.normal(size=n)
        f = rng.normal(scale=0.5, size=n)
        g = rng.choice([-1.3, -0.2, 0.0, 0.4, 2.0], size=n) * rng.uniform(0.5, 1.5)
        if loss == "logistic":
            def objective(rho):
                return np.logaddexp(0, -2 * y * (f + rho * g)).sum()
        elif loss == "absolute":
            def objective(rho):
                return np.abs(y - f - rho * g).sum()
        else:
            def objective(rho):
                return 0.5 * ((y - f - rho * g) ** 2).sum()
        ref = minimize_scalar(objective, bracket=(-5, 5), method="brent", options={"xtol": 1e-12})
        rho = line_search(loss, y, f, g, method)
        # same minimum value (the absolute loss can be flat around its minimiser), and the same point when unique
        assert objective(rho) <= ref.fun + 1e-9 * (1 + abs(ref.fun))
        if loss != "absolute":
            assert rho == pytest.approx(ref.x, rel=1e-6, abs=1e-7)


def test_line_search_unbounded_direction_stops_at_the_bound():
    # all labels negative and g > 0 where f is already very negative: the loss decreases for ever along -g, so the
    # step is the bound: the sample with the largest |g| moves by exactly LOGISTIC_STEP_BOUND
    y = -np.ones(30)
    f = np.full(30, -3.0)
    g = np.linspace(0.1, 1.0, 30)
    for method in ("newton", "brent"):
        rho, bounded = line_search("logistic", y, f, g, method, return_bounded=True)
        assert bounded
        assert rho == pytest.approx(-LOGISTIC_STEP_BOUND / 1.0, rel=1e-15)


@pytest.mark.parametrize("method", ["newton", "brent"])
def test_line_search_separating_step_is_bounded_by_its_largest_value(method):
    # a step that separates the labels (g y > 0 wherever g != 0): no finite minimiser. One tiny |g| made the
    # unbounded search run the step past 1e170 (medical, gbrt-rpo); bounded, the largest |g| moves by the bound
    rng = np.random.default_rng(0)
    y = rng.choice([-1.0, 1.0], size=40)
    g = y * rng.choice([1e-9, 0.3, 2.5], size=40)
    f = rng.normal(scale=0.5, size=40)
    rho, bounded = line_search("logistic", y, f, g, method, return_bounded=True)
    assert bounded and rho > 0
    assert rho * np.abs(g).max() == pytest.approx(LOGISTIC_STEP_BOUND, rel=1e-15)
    # the loss falls all the way to the bound (convex, slope still negative there)
    def loss(r):
        return np.logaddexp(0, -2 * y * (f + r * g)).sum()
    assert loss(rho) < loss(0.99 * rho) < loss(0.0)


def test_line_search_finite_minimiser_is_not_bounded():
    # a minimiser that moves the scores less than the bound is found exactly, and said not to be bounded
    y = np.array([1.0, 1.0, -1.0, 1.0, -1.0, -1.0])
    f = np.zeros(6)
    g = np.array([1.0, 1.0, 1.0, -1.0, -1.0, -1.0])
    for method in ("newton", "brent"):
        rho, bounded = line_search("logistic", y, f, g, method, return_bounded=True)
        assert not bounded
        # four samples with y g = 1, two with y g = -1: the slope -8 / (1 + e^{2 rho}) + 4 / (1 + e^{-2 rho})
        # vanishes at e^{2 rho} = 2
        assert rho == pytest.approx(0.5 * np.log(2.0), rel=1e-9)


@pytest.mark.parametrize("cls", ALL)
def test_logistic_boosting_on_separable_outputs_stays_finite(cls):
    # outputs that one input separates exactly: at learning rate 1 every stage's exact step is unbounded; the
    # bound keeps every score finite (the unbounded search reached inf and then NaN within a few stages)
    rng = np.random.default_rng(5)
    X = (rng.random((120, 6)) < 0.3).astype(np.float32)
    Y = np.column_stack([X[:, 0], X[:, 1], 1 - X[:, 0], np.zeros(120)])
    Y[0, 3] = 1.0                               # one positive: almost an all-negative label
    est = cls(n_estimators=40, loss="logistic", learning_rate=1.0, max_leaf_nodes=3, random_state=0,
              monitor_train_loss=True).fit(X, Y)
    F = est.decision_function(X)
    assert np.all(np.isfinite(F))
    assert est.stage_bounded_steps_.sum() > 0
    assert est.run_info_()["bounded_steps"] == int(est.stage_bounded_steps_.sum())
    # no stage moves a score by more than the bound (learning rate 1; st-gbrt's stage is one tree per output)
    steps = np.diff(np.stack([np.asarray(s) for s in est.staged_decision_function(X)]), axis=0)
    assert np.abs(steps).max() <= LOGISTIC_STEP_BOUND * (1 + 1e-12)
    # and the training loss never rises (a bounded step is still a descent step)
    assert np.all(np.diff(est.train_loss_) <= 1e-9 * est.train_loss_[0])


def test_line_search_zero_tree_gives_zero_step():
    y = np.array([1.0, -1.0, 1.0])
    f = np.zeros(3)
    for loss in ("square", "absolute", "logistic"):
        assert line_search(loss, y, f, np.zeros(3)) == 0.0


def test_logistic_initial_constant_is_half_log_odds():
    Y = np.array([[1, 1, -1], [1, -1, -1], [-1, -1, -1], [1, -1, -1.0]])
    f0 = initial_constants("logistic", Y)
    np.testing.assert_allclose(f0[:2], [0.5 * np.log(3 / 1), 0.5 * np.log(1 / 3)])
    # an all-negative column is clipped to a finite value
    assert np.isfinite(f0[2]) and f0[2] < f0[1]
    # the constant minimises the logistic loss of the column
    for j in range(2):
        res = minimize_scalar(lambda c: np.logaddexp(0, -2 * Y[:, j] * c).sum())
        assert f0[j] == pytest.approx(res.x, abs=1e-6)


def test_fitted_initial_constants():
    X, Y = _regression(d=3)
    assert np.allclose(GBMORTRegressor(n_estimators=1).fit(X, Y).init_, Y.mean(axis=0))
    assert np.allclose(GBMORTRegressor(n_estimators=1, loss="absolute").fit(X, Y).init_, np.median(Y, axis=0))


@pytest.mark.parametrize("cls", ALL)
def test_constant_label_columns_give_finite_probabilities(cls):
    X, Y = _multilabel(d=4)
    Y[:, 1] = 0
    Y[:, 2] = 1
    est = cls(n_estimators=30, loss="logistic", learning_rate=1.0, max_leaf_nodes=4).fit(X, Y)
    P = est.predict(X)
    assert np.all(np.isfinite(P)) and np.all((P >= 0) & (P <= 1))
    assert P[:, 1].max() < 0.05 and P[:, 2].min() > 0.95


def test_lrap_fixture_through_staged_predict():
    # thesis worked example (Sec. 2.4): two samples, LRAP = 0.392
    y = np.array([[1, 0, 1, 0, 0], [1, 0, 0, 0, 0]])
    f = np.array([[.75, .6, .1, .8, .15], [.25, .8, .1, .15, .3]])
    assert label_ranking_average_precision_score(y, f) == pytest.approx(0.3917, abs=1e-4)
    from forestbench import metrics
    assert metrics.lrap(y, f) == pytest.approx(0.3917, abs=1e-4)


@pytest.mark.parametrize("cls", ALL)
def test_staged_predict_and_stage_records(cls):
    X, Y = _regression(d=3)
    est = cls(n_estimators=12, random_state=0).fit(X, Y)
    stages = list(est.staged_predict(X))
    assert len(stages) == 12
    np.testing.assert_allclose(stages[-1], est.predict(X), atol=1e-12)
    np.testing.assert_allclose(est.train_scores_, est.predict(X), atol=1e-10)
    per = 3 if cls is STGradientBoostingRegressor else 1
    np.testing.assert_array_equal(est.stage_n_trees_, per * np.arange(1, 13))
    assert est.stage_fit_seconds_.shape == (12,) and np.all(np.diff(est.stage_fit_seconds_) >= 0)


@pytest.mark.parametrize("cls", ALL)
def test_same_seed_same_model(cls):
    X, Y = _regression(d=4)
    kw = dict(n_estimators=15, max_features=2, max_leaf_nodes=4, random_state=11)
    if cls in (GBRTRPORegressor, GBRTRelabelRPORegressor):
        kw["output_projection"] = "gaussian"
    a = cls(**kw).fit(X, Y).predict(X)
    b = cls(**kw).fit(X, Y).predict(X)
    np.testing.assert_array_equal(a, b)
    c = cls(**{**kw, "random_state": 12}).fit(X, Y).predict(X)
    assert not np.array_equal(a, c)


def test_rpo_model_size_is_scalar_tree_plus_vector():
    X, Y = _regression(d=6)
    est = GBRTRPORegressor(n_estimators=10, max_leaf_nodes=4).fit(X, Y)
    m = est._model
    assert m["values"].shape[0] == m["leaf_ptr"][-1]          # one value per leaf
    assert m["coef"].shape == (10, 6)                          # one d-vector per tree


def test_artificial_gbrt_strategies():
    X, Y = _regression(d=3)
    first = ArtificialGBRTRegressor(n_estimators=10, strategy="first_output").fit(X, Y)
    st1 = STGradientBoostingRegressor(n_estimators=10).fit(X, Y[:, :1])
    P = first.predict(X)
    assert P.shape == Y.shape
    np.testing.assert_allclose(P, np.repeat(st1.predict(X), 3, axis=1))
    mean = ArtificialGBRTRegressor(n_estimators=10, strategy="mean_output").fit(X, Y)
    st_mean = STGradientBoostingRegressor(n_estimators=10).fit(X, Y.mean(axis=1))
    np.testing.assert_allclose(mean.predict(X)[:, 2], st_mean.predict(X))
    ind = ArtificialGBRTRegressor(n_estimators=10, strategy="single_target").fit(X, Y)
    np.testing.assert_allclose(ind.predict(X), STGradientBoostingRegressor(n_estimators=10).fit(X, Y).predict(X))
    assert len(list(first.staged_predict(X))) == 10


def test_rpo_subsample_beats_gbmort_on_independent_outputs():
    # outputs with disjoint supports: a shared tree structure cannot fit them all (thesis Table 6.1, friedman1-ind)
    from forestbench.datasets.embedded import friedman1_multioutput
    from sklearn.metrics import r2_score
    ds = friedman1_multioutput(kind="ind", n_samples=1300, n_outputs=16, seed=0)
    X, Y = ds.X, ds.Y
    kw = dict(n_estimators=1600, learning_rate=0.1, max_leaf_nodes=2)
    mort = GBMORTRegressor(**kw).fit(X[:300], Y[:300])
    rpo = GBRTRPORegressor(**kw, random_state=0).fit(X[:300], Y[:300])
    st = STGradientBoostingRegressor(**{**kw, "n_estimators": 100}).fit(X[:300], Y[:300])
    r2 = {name: r2_score(Y[300:], e.predict(X[300:])) for name, e in
          {"mort": mort, "rpo": rpo, "st": st}.items()}
    assert r2["st"] > r2["rpo"] + 0.02 and r2["rpo"] > r2["mort"] + 0.01, r2


@pytest.mark.parametrize("params,match", [
    ({"loss": "huber"}, "loss"),
    ({"learning_rate": 0.0}, "learning_rate"),
    ({"learning_rate": 1.5}, "learning_rate"),
    ({"n_estimators": 0}, "n_estimators"),
    ({"max_leaf_nodes": 1}, "max_leaf_nodes"),
])
@pytest.mark.parametrize("cls", ALL)
def test_bad_parameters(cls, params, match):
    X, Y = _regression()
    with pytest.raises(ValueError, match=match):
        cls(**params).fit(X, Y)


def test_bad_projection_and_rpo_components():
    X, Y = _regression()
    with pytest.raises(ValueError, match="output_projection"):
        GBRTRPORegressor(output_projection="pcaa").fit(X, Y)
    with pytest.raises(ValueError, match="n_components"):
        GBRTRPORegressor(n_components=3).fit(X, Y)


@pytest.mark.parametrize("cls", ALL)
def test_bad_data(cls):
    X, Y = _regression()
    with pytest.raises(ValueError, match="logistic"):
        cls(loss="logistic").fit(X, Y)
    Xn = X.copy()
    Xn[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        cls().fit(Xn, Y)
    Xi = X.copy()
    Xi[0, 0] = np.inf
    with pytest.raises(ValueError, match="infinity|too large"):
        cls().fit(Xi, Y)
    Yn = Y.copy()
    Yn[2, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        cls().fit(X, Yn)
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        cls().fit(X, Y[:-3])
    est = cls(n_estimators=2).fit(X, Y)
    with pytest.raises(ValueError, match="features"):
        est.predict(X[:, :3])


@pytest.mark.parametrize("cls", ALL)
@pytest.mark.parametrize("max_features", [None, 2])
@pytest.mark.parametrize("d", [3, 9])
def test_presorted_builder_grows_the_kernels_trees(cls, max_features, d):
    # continuous inputs without exact ties: both builders must choose the same splits (all features visited in
    # index order); with feature sampling both draw from the same distribution but with their own generators, so
    # only the loss decrease is compared
    X, Y = _regression(n=200, p=4, d=d)
    kw = dict(n_estimators=20, learning_rate=0.3, max_leaf_nodes=6, max_features=max_features, random_state=0,
              monitor_train_loss=True)
    a = cls(**kw).fit(X, Y)
    b = cls(**kw, tree_builder="kernel").fit(X, Y)
    if max_features is None:
        np.testing.assert_allclose(a.train_scores_, b.train_scores_, atol=1e-8)
    else:
        assert a.train_loss_[-1] < 0.5 * a.train_loss_[0] and b.train_loss_[-1] < 0.5 * b.train_loss_[0]


@pytest.mark.parametrize("binary, q, count_constant", [(False, 1, False), (False, 5, False), (True, 1, False),
                                                        (True, 9, False), (True, 1, True)])
def test_gather_layout_grows_the_partition_layouts_trees(binary, q, count_constant):
    # the gather layout must find every node's order of every drawn feature exactly as the partition layout holds
    # it (same sums in the same order): same splits, thresholds, leaf values and leaves of the rows, bit for bit.
    # n = 1500 rows, so that nodes below n / 8 rows (ranks sorted) and larger ones (master order scanned) both
    # get split
    from forestbench.tree._presort import PresortBuilder

    rng = np.random.default_rng(11)
    n, p = 1500, 40
    if binary:
        X = (rng.random((n, p)) < 0.15).astype(np.float32)
        X[:, 0] = rng.uniform(size=n)
    else:
        X = rng.normal(size=(n, p)).astype(np.float32)
        X[:, 3] = np.round(X[:, 3])                    # runs of ties
    Z = X[:, :4] @ rng.normal(size=(4, q)) + rng.normal(size=(n, q))
    L = np.column_stack([Z, rng.normal(size=n)])       # leaves of another width than the split targets
    part = PresortBuilder(X, 8, 6, count_constant, layout="partition")
    gath = PresortBuilder(X, 8, 6, count_constant, layout="gather")
    assert (part.layout, gath.layout) == ("partition", "gather")
    sizes = []
    for seed in range(1, 25):
        ta, va, la = part.grow(Z, L, seed=seed)
        tb, vb, lb = gath.grow(Z, L, seed=seed)
        for key in ta:
            np.testing.assert_array_equal(ta[key], tb[key], err_msg=key)
        np.testing.assert_array_equal(va, vb)
        np.testing.assert_array_equal(la, lb)
        split = ta["left"] != -1
        sizes.extend(ta["n_node_samples"][1:][split[1:]])
    assert min(sizes) < n / 8 <= max(sizes)


def test_layout_choice():
    from forestbench.tree._presort import PresortBuilder, choose_layout

    # k much smaller than p: gather; every feature drawn or stumps (no partition at all): partition
    assert choose_layout(80, 8, 9) == "gather"
    assert choose_layout(500, 8, 22) == "gather"
    assert choose_layout(80, 8, 80) == "partition"
    assert choose_layout(80, 8, 40) == "partition"
    assert choose_layout(80, 5, 40) == "gather"
    assert choose_layout(500, 2, 1) == "partition"
    X = np.zeros((10, 80), dtype=np.float32)
    assert PresortBuilder(X, 8, 9).layout == "gather"
    assert PresortBuilder(X, 8, 80).layout == "partition"
    with pytest.raises(ValueError, match="layout='dense'"):
        PresortBuilder(X, 8, 9, layout="dense")


@pytest.mark.parametrize("tree_builder", ["presort", "kernel"])
def test_constant_feature_rule(tree_builder):
    # two non-constant inputs among 40 (the others all 0): the default rule scores both at every node, so k = 2
    # grows the trees of k = p; scikit-learn's rule stops after two draws once one non-constant feature is scored,
    # so almost every stump sees only one of the two, drawn at random: about half split on the useless input 1
    rng = np.random.default_rng(5)
    X = np.zeros((200, 40), dtype=np.float32)
    X[:, 0] = rng.uniform(size=200)
    X[:, 1] = rng.uniform(size=200)
    Y = 5.0 * (X[:, :1] > 0.5) + np.zeros((200, 2))
    kw = dict(n_estimators=60, learning_rate=0.1, max_leaf_nodes=2, random_state=0, tree_builder=tree_builder)
    every = GBMORTRegressor(**kw).fit(X, Y)
    ours = GBMORTRegressor(**kw, max_features=2).fit(X, Y)
    sk = GBMORTRegressor(**kw, max_features=2, count_constant_features=True).fit(X, Y)
    np.testing.assert_array_equal(ours.train_scores_, every.train_scores_)

    def share_on_input_1(est):
        m = est._model
        split = m["left"] != -1
        return float(np.mean(m["feature"][split] == 1))

    assert share_on_input_1(ours) == 0.0
    assert 0.3 < share_on_input_1(sk) < 0.7
    assert sk.score(X, Y) < ours.score(X, Y)


@pytest.mark.parametrize("cls", ALL)
def test_compiled_validation_scores_equal_staged_predict(cls):
    from sklearn.metrics import r2_score
    X, Y = _regression(n=150, d=3)
    Xv, Yv = _regression(n=40, d=3, seed=9)
    est = cls(n_estimators=15, max_leaf_nodes=3, random_state=0).fit(X, Y, eval_set=(Xv, Yv))
    staged = list(est.staged_predict(Xv))
    expect_sse = np.array([((Yv - P) ** 2).sum(axis=0) for P in staged])
    np.testing.assert_allclose(est.eval_sse_, expect_sse, rtol=1e-10)
    np.testing.assert_allclose(est.eval_macro_r2_, [r2_score(Yv, P) for P in staged], rtol=1e-10)


@pytest.mark.parametrize("cls", ALL)
@pytest.mark.parametrize("density", [0.1, 0.9])
@pytest.mark.parametrize("d", [3, 11])
def test_presorted_builder_on_binary_inputs(cls, density, d):
    # runs of equal values (binary inputs) are scanned from the short side: same trees as the kernel's builder;
    # d = 11 goes through the four-accumulator sums of squares and their tail
    rng = np.random.default_rng(3)
    X = (rng.random((300, 12)) < density).astype(np.float32)
    X[:, 0] = rng.uniform(size=300)        # one continuous column as well
    Y = X[:, 1:4] @ rng.normal(size=(3, d)) + np.sin(5 * X[:, :1]) + 0.1 * rng.normal(size=(300, d))
    kw = dict(n_estimators=20, learning_rate=0.3, max_leaf_nodes=6, random_state=0, monitor_train_loss=True)
    a = cls(**kw).fit(X, Y)
    b = cls(**kw, tree_builder="kernel").fit(X, Y)
    np.testing.assert_allclose(a.train_scores_, b.train_scores_, atol=1e-8)
    np.testing.assert_allclose(a.predict(X[::7]), b.predict(X[::7]), atol=1e-8)


@pytest.mark.parametrize("cls", ALL)
def test_logistic_leafwise_search_equals_per_sample_search(cls):
    # the default search evaluates exp once per leaf value (e_i exp(2 y rho g)); Brent's evaluates it per sample
    X, Y = _multilabel(d=4)
    kw = dict(n_estimators=25, loss="logistic", learning_rate=0.5, max_leaf_nodes=5, random_state=0)
    fast = cls(**kw).fit(X, Y).decision_function(X)
    slow = cls(**kw, line_search="brent").fit(X, Y).decision_function(X)
    np.testing.assert_allclose(fast, slow, rtol=1e-6, atol=1e-7)


def test_logistic_probabilities_of_extreme_scores_without_warnings():
    import warnings

    X, Y = _multilabel(d=2)
    est = GBMORTRegressor(n_estimators=3, loss="logistic", random_state=0).fit(X, Y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        P = est._output(np.array([[-1000.0, 1000.0], [0.0, -0.5 * np.log(3.0)]]))
    np.testing.assert_allclose(P, [[0.0, 1.0], [0.5, 0.25]], atol=1e-15)


def _pass_reference(y, e, leaf, tab, g):
    T = tab[2 * leaf + (y < 0)]
    a = 2 / (1 + e * T)
    b = a * (2 - a)
    gi = g[leaf]
    return np.array([np.sum(gi * y * a), np.sum(gi ** 2 * b), np.sum(gi ** 3 * y * b * (2 - 2 * a)),
                     np.sum(np.abs(gi))])


@pytest.mark.parametrize("n_leaves", [1, 5, 8, 9, 31])
def test_logistic_pass_implementations_agree_bit_for_bit(n_leaves):
    # the portable loop, the AVX2 gathers and the AVX-512 permutations (<= 8 leaves) sum in the same lane order
    from forestbench.boosting._losses import logistic_pass
    rng = np.random.default_rng(n_leaves)
    for n in (0, 1, 7, 8, 9, 23, 1000, 4099):
        y = rng.choice([-1.0, 1.0], n)
        e = np.exp(rng.normal(0, 4, n))
        e[: n // 10] = np.inf if n > 20 else 1.0                     # scores beyond exp's range
        leaf = rng.integers(0, n_leaves, n)
        g = rng.normal(size=n_leaves)
        g[0] = 0.0
        tab = np.exp(rng.normal(size=2 * n_leaves))
        results = [logistic_pass(y, e, leaf, tab, g, level=level) for level in (0, 1, 2)]
        sums = results[0][0]
        assert results[0][1] == 0
        for other, _ in results[1:]:
            assert np.array_equal(other, sums)
        np.testing.assert_allclose(sums, _pass_reference(y, e, leaf, tab, g), rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="leaf"):
        logistic_pass(np.ones(2), np.ones(2), np.array([0, n_leaves]), np.ones(2 * n_leaves), np.ones(n_leaves))


def _same_bits_at_every_level(cls, kw, X, Y):
    """Fit at every implementation level of the line-search passes this processor has, assert the scores are
    identical, and return them."""
    from forestbench.boosting._losses import logistic_pass_level
    best = logistic_pass_level(-1)
    try:
        fits = []
        for level in range(best + 1):
            logistic_pass_level(level)
            fits.append(cls(**kw).fit(X, Y).decision_function(X))
    finally:
        logistic_pass_level(-1)
    for other in fits[1:]:
        assert np.array_equal(other, fits[0])
    return fits[0]


@pytest.mark.parametrize("cls", ALL)
@pytest.mark.parametrize("leaves", [4, 12])
def test_logistic_models_do_not_depend_on_the_vector_unit(cls, leaves):
    # the same bits whichever implementation of the line-search passes the processor runs
    X, Y = _multilabel(d=4)
    kw = dict(n_estimators=15, loss="logistic", learning_rate=0.5, max_leaf_nodes=leaves, random_state=0)
    fast = _same_bits_at_every_level(cls, kw, X, Y)
    # and the leaf-wise search still finds Brent's steps with trees of more than 8 leaves
    slow = cls(**kw, line_search="brent").fit(X, Y).decision_function(X)
    np.testing.assert_allclose(fast, slow, rtol=1e-6, atol=1e-7)


def test_absolute_line_search_is_a_weighted_median_on_large_and_tied_inputs():
    # the quickselect (ranges above 16 values) against the sorted definition: the smallest (y - f) / g whose
    # cumulative weight |g| reaches half the total; with exact ties at one half both neighbours are minimisers
    rng = np.random.default_rng(11)
    for trial in range(200):
        n = int(rng.integers(17, 400))
        y = np.round(rng.normal(size=n), int(rng.integers(0, 3)))          # many equal residuals
        f = np.zeros(n) if trial % 2 else np.round(rng.normal(size=n), 1)
        g = rng.choice([-2.0, -0.5, 0.0, 0.5, 1.0, 3.0], size=n)             # tree steps: few distinct values
        rho = line_search("absolute", y, f, g)
        keep = g != 0
        if not keep.any():
            assert rho == 0.0
            continue
        v, w = (y - f)[keep] / g[keep], np.abs(g[keep])
        order = np.argsort(v, kind="stable")
        cum = np.cumsum(w[order])
        ref = v[order][np.argmax(2 * cum >= cum[-1])]

        def objective(r):
            return np.abs(y - f - r * g).sum()
        assert rho in set(v)
        assert objective(rho) <= objective(ref) + 1e-12 * (1 + objective(ref))


@pytest.mark.parametrize("projection,q", [("gaussian", 1), ("sparse", 1), ("achlioptas", 1)])
def test_rpo_projected_gradient_does_not_depend_on_the_vector_unit(projection, q):
    # gbrt-rpo sums the projected logistic gradient straight from exp(2 y f); same bits at every level
    X, Y = _multilabel(d=6)
    kw = dict(n_estimators=12, loss="logistic", learning_rate=0.5, max_leaf_nodes=4, random_state=3,
              output_projection=projection, n_components=q)
    fast = _same_bits_at_every_level(GBRTRPORegressor, kw, X, Y)
    slow = GBRTRPORegressor(**kw, line_search="brent").fit(X, Y).decision_function(X)
    np.testing.assert_allclose(fast, slow, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("cls", ALL)
@pytest.mark.parametrize("loss", ["square", "logistic"])
def test_timing_the_trees_changes_nothing_but_the_record(cls, loss):
    """``monitor_tree_time`` reads the CPU clock around every tree: the fitted model is the same, and the
    trees' cumulative clock never runs back nor past the stage's own (``stage_fit_cpu_seconds_``)."""
    X, Y = _multilabel() if loss == "logistic" else _regression()
    params = dict(n_estimators=25, loss=loss, max_leaf_nodes=4, max_features=2, random_state=3)
    plain = cls(**params).fit(X, Y)
    timed = cls(**params, monitor_tree_time=True).fit(X, Y)
    assert np.array_equal(plain.predict(X), timed.predict(X))
    assert not hasattr(plain, "stage_tree_cpu_seconds_")
    trees, stages = timed.stage_tree_cpu_seconds_, timed.stage_fit_cpu_seconds_
    assert trees.shape == stages.shape == (25,)
    assert np.all(np.diff(trees) >= 0) and trees[-1] > 0
    assert np.all(trees <= stages)
