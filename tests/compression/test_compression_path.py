"""Node-indicator lifting and the FS_eps path, against independent oracles (scikit-learn's decision_path and
lasso path, a dense numpy FS_eps)."""
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.ensemble import ExtraTreesRegressor as SkExtraTrees
from sklearn.linear_model import lars_path

from forestbench.datasets.embedded import friedman1
from forestbench.forest import ExtraTreesRegressor
from forestbench.linear import column_scaling_factors, forward_stagewise_path
from forestbench.tree.indicator import FlatForest, forest_node_indicator, tree_node_arrays


@pytest.fixture(scope="module")
def friedman300():
    ds = friedman1(600, 10, seed=3)
    return ds.X[:300], ds.Y[:300, 0], ds.X[300:], ds.Y[300:, 0]


# ------------------------------------------------------------------------------------------------ lifting
def test_extra_trees_on_300_friedman1_samples_have_29900_test_nodes(friedman300):
    # thesis Table 7.1: M = 100, K = p, n_min = 1, no bootstrap -> 100 fully grown trees of 299 test nodes
    X, y, _, _ = friedman300
    et = ExtraTreesRegressor(100, max_features=1.0, min_samples_split=2, bootstrap=False, random_state=0).fit(X, y)
    left, _, _, _, offsets = tree_node_arrays(et)
    assert int(np.count_nonzero(left >= 0)) == 29900
    assert offsets[-1] == 100 * 599


def test_indicator_equals_scikit_learn_decision_path():
    ds = friedman1(200, 10, seed=4)
    X, y = ds.X, ds.Y[:, 0]
    sk = SkExtraTrees(n_estimators=7, min_samples_leaf=3, random_state=0).fit(X, y)
    expected, ptr = sk.decision_path(X)
    Z, offsets = forest_node_indicator(sk, X, return_offsets=True)
    np.testing.assert_array_equal(offsets, ptr)
    assert Z.shape == expected.shape
    assert (Z != expected).nnz == 0
    assert np.all(np.diff(Z.indices[Z.indptr[0]:Z.indptr[1]]) > 0)  # sorted row indices


def test_indicator_of_our_forest_matches_per_tree_paths_dense_and_sparse(friedman300):
    X, y, Xt, _ = friedman300
    et = ExtraTreesRegressor(5, max_features=0.5, min_samples_split=5, random_state=1).fit(X, y)
    Z = forest_node_indicator(et, Xt)
    blocks = sp.hstack([t.decision_path(Xt) for t in et.estimators_]).tocsr()
    assert (Z != blocks).nnz == 0
    # every row: one root per tree and exactly one leaf per tree
    left, *_ = tree_node_arrays(et)
    leaves_per_row = np.asarray(Z[:, np.flatnonzero(left < 0)].sum(axis=1)).ravel()
    np.testing.assert_array_equal(leaves_per_row, 5)
    Zs = forest_node_indicator(et.estimators_, sp.csr_matrix(Xt))  # list of trees, CSR input
    assert (Zs != Z).nnz == 0


def test_indicator_rejects_unfitted_forest():
    with pytest.raises(TypeError, match="not fitted|estimators_"):
        forest_node_indicator(ExtraTreesRegressor(3), np.zeros((2, 2)))


def test_flat_forest_reproduces_forest_predictions(friedman300):
    X, y, Xt, _ = friedman300
    et = ExtraTreesRegressor(10, max_features=1.0, random_state=2).fit(X, y)
    flat = FlatForest.from_trees(et)
    np.testing.assert_allclose(flat.predict(Xt)[:, 0], et.predict(Xt), rtol=0, atol=1e-12)
    assert flat.n_test_nodes == sum(int((t.tree_.children_left >= 0).sum()) for t in et.estimators_)


def test_float32_thresholds_keep_every_decision():
    # x > t (float64) and x > t rounded down to float32 agree for every float32 x: thresholds at, between and
    # beside adjacent float32 values, huge and infinite ones
    from forestbench.tree.indicator import float32_thresholds

    rng = np.random.default_rng(4)
    base = rng.standard_normal(200).astype(np.float32)
    up = np.nextafter(base, np.float32(np.inf))
    t = np.concatenate([base.astype(np.float64), (base.astype(np.float64) + up.astype(np.float64)) / 2,
                        np.nextafter(base.astype(np.float64), np.inf), np.nextafter(base.astype(np.float64), -np.inf),
                        [1e300, -1e300, np.inf, -np.inf, 3.4028235e38, 0.0, -0.0]])
    t32 = float32_thresholds(t)
    assert t32.dtype == np.float32
    x = np.concatenate([base, up, np.nextafter(base, np.float32(-np.inf)),
                        np.float32([0.0, -0.0, 3.4028235e38, -3.4028235e38])])
    np.testing.assert_array_equal(x[:, None].astype(np.float64) > t[None, :], x[:, None] > t32[None, :])


def test_flat_forest_on_inputs_at_the_thresholds(friedman300):
    # rows placed exactly at split thresholds and one float32 step beside them, C and Fortran order, a row count
    # that leaves a partial group of rows descending together
    X, y, Xt, _ = friedman300
    et = ExtraTreesRegressor(10, max_features=1.0, random_state=3).fit(X, y)
    flat = FlatForest.from_trees(et)
    tree = et.estimators_[0].tree_
    inner = np.flatnonzero(tree.children_left >= 0)[:60]
    rows = np.repeat(np.asarray(Xt[:1], dtype=np.float32), 3 * inner.size, axis=0)
    for k, node in enumerate(inner):
        v = np.float32(tree.threshold[node])
        for s, val in enumerate([v, np.nextafter(v, np.float32(np.inf)), np.nextafter(v, np.float32(-np.inf))]):
            rows[3 * k + s, tree.feature[node]] = val
    rows = rows[:-5]
    expect = et.predict(rows)
    np.testing.assert_allclose(flat.predict(rows)[:, 0], expect, rtol=0, atol=1e-12)
    np.testing.assert_allclose(flat.predict(np.asfortranarray(rows))[:, 0], expect, rtol=0, atol=1e-12)


# ---------------------------------------------------------------------------------------- FS_eps oracles
def dense_fs(Z, Y, eps, n_steps, scaling="standardize"):
    """Textbook FS_eps (ESL Alg. 3.4) on an explicitly standardised dense design: recomputes every correlation
    from the residual at every step, and stops when the chosen step would not lower the residual sum of squares.
    Returns the per-step (column, increments) and fitted values."""
    Z = np.asarray(Z, dtype=float)
    Y = np.asarray(Y, dtype=float).reshape(Z.shape[0], -1)
    n = Z.shape[0]
    Zc = Z - Z.mean(axis=0)
    sd = Zc.std(axis=0) if scaling == "standardize" else np.linalg.norm(Zc, axis=0)
    keep = sd > 1e-9
    Zt = np.zeros_like(Zc)
    Zt[:, keep] = Zc[:, keep] / sd[keep]
    R = (Y - Y.mean(axis=0)) / Y.std(axis=0)
    steps, fits = [], []
    F = np.zeros_like(R)
    for _ in range(n_steps):
        C = Zt.T @ R / n
        j = int(np.argmax(np.abs(C).sum(axis=1)))
        delta = eps * np.sign(C[j])
        R_next = R - np.outer(Zt[:, j], delta)
        if (R_next ** 2).sum() >= (R ** 2).sum():
            break
        R = R_next
        F = F + np.outer(Zt[:, j], delta)
        steps.append((j, delta))
        fits.append(F.copy())
    return steps, fits


def random_sparse_design(rng, n, q, density):
    Z = rng.standard_normal((n, q)) * (rng.random((n, q)) < density)
    return Z


@pytest.mark.parametrize("scaling", ["standardize", "unit_norm"])
def test_fs_steps_equal_dense_implementation(scaling):
    rng = np.random.default_rng(0)
    Z = random_sparse_design(rng, 60, 25, 0.3)
    y = Z[:, :5] @ rng.standard_normal(5) + 0.3 * rng.standard_normal(60)
    eps = 0.01 if scaling == "standardize" else 0.1
    path = forward_stagewise_path(sp.csr_matrix(Z), y, epsilon=eps, max_steps=300, column_scaling=scaling)
    steps, _ = dense_fs(Z, y, eps, 300, scaling)
    assert path.n_steps == len(steps) > 200  # same stopping step (the path reaches least squares before 300)
    np.testing.assert_array_equal(path.steps_j, [j for j, _ in steps])
    np.testing.assert_allclose(path.steps_delta[:, 0], [d[0] for _, d in steps])


def test_fs_multi_output_steps_equal_dense_implementation():
    rng = np.random.default_rng(1)
    Z = random_sparse_design(rng, 50, 20, 0.4)
    Y = Z[:, :4] @ rng.standard_normal((4, 3)) + 0.2 * rng.standard_normal((50, 3))
    path = forward_stagewise_path(Z, Y, epsilon=0.02, max_steps=150)
    steps, fits = dense_fs(Z, Y, 0.02, 150)
    assert path.n_steps == len(steps) > 100
    np.testing.assert_array_equal(path.steps_j, [j for j, _ in steps])
    np.testing.assert_allclose(path.steps_delta, np.array([d for _, d in steps]))
    # fitted values in whitened units after the last step
    Yw_fit = (path.predict(Z) - path.y_mean) / path.y_scale
    np.testing.assert_allclose(Yw_fit, fits[-1], atol=1e-9)


def test_fs_on_node_indicators_tracks_dense_fitted_values_step_by_step(friedman300):
    # node indicators have exact ties (the root's two children are complementary): the chosen column may differ
    # from the dense one on a tie, but the fitted values must not
    X, y, _, _ = friedman300
    X, y = X[:80], y[:80]
    et = ExtraTreesRegressor(4, max_features=1.0, random_state=0).fit(X, y)
    Z = forest_node_indicator(et, X)
    path = forward_stagewise_path(Z, y, epsilon=0.01, max_steps=200)
    _, fits = dense_fs(Z.toarray(), y, 0.01, 200)
    for s in (1, 10, 50, 120, 200):
        ours = (path.predict(Z, n_steps=s)[:, 0] - path.y_mean[0]) / path.y_scale[0]
        np.testing.assert_allclose(ours, fits[s - 1][:, 0], atol=1e-9, err_msg=f"step {s}")


def test_fs_never_selects_constant_columns(friedman300):
    X, y, _, _ = friedman300
    et = ExtraTreesRegressor(3, max_features=1.0, random_state=0).fit(X, y)
    Z, offsets = forest_node_indicator(et, X, return_offsets=True)
    mu, inv = column_scaling_factors(Z)
    np.testing.assert_array_equal(np.flatnonzero(inv == 0), offsets[:-1])  # the roots, and only them
    path = forward_stagewise_path(Z, y, max_steps=400)
    assert not np.isin(path.steps_j, offsets[:-1]).any()


def test_fs_path_tracks_the_lasso_path_as_epsilon_shrinks():
    """The FS_eps path tends to the monotone Lasso; on a design whose Lasso path is monotone (checked) the two
    coincide, so the training error at equal l1 norm must approach the Lasso's from above (the Lasso is optimal).
    The Lasso coefficients are piecewise linear in their l1 norm, so they are interpolated exactly between the
    breakpoints. Tolerance (measured excess 7e-5 and 7e-7, shrinking as eps^2): excess residual mean square
    <= 2e-4 at eps = 0.01 and <= 2e-6 at eps = 0.001 (whitened y); coefficients within eps of the Lasso's."""
    rng = np.random.default_rng(7)
    n, q = 200, 8
    Z = rng.standard_normal((n, q))
    Z[:, 1] += 0.5 * Z[:, 0]
    y = Z @ np.array([2.0, -1.5, 1.0, 0.5, 0, 0, 0, 0]) + rng.standard_normal(n)
    mu, inv = column_scaling_factors(Z)
    Zt = (Z - mu) * inv
    yw = (y - y.mean()) / y.std()
    # scikit-learn's Lasso path with positive coefficients on the signed-expanded design [Z, -Z]
    alphas, _, coefs = lars_path(np.hstack([Zt, -Zt]), yw, method="lasso", positive=True)
    signed = coefs[:q] - coefs[q:]
    l1 = np.abs(signed).sum(axis=0)
    assert np.all(np.diff(np.abs(signed), axis=1) >= -1e-12)  # the Lasso path is monotone here
    for eps, tol in ((0.01, 2e-4), (0.001, 2e-6)):
        t_max = 0.9 * l1[-1]
        path = forward_stagewise_path(Z, y, epsilon=eps, max_steps=int(t_max / eps))
        for s in np.linspace(0, path.n_steps, 12).astype(int)[1:]:
            beta = path.scaled_coef(s)[:, 0]
            b1 = np.abs(beta).sum()
            fs_rss = ((yw - Zt @ beta) ** 2).mean()
            k = np.searchsorted(l1, b1)
            lo, hi = max(k - 1, 0), min(k, l1.shape[0] - 1)
            frac = 0.0 if hi == lo else (b1 - l1[lo]) / (l1[hi] - l1[lo])
            beta_lasso = signed[:, lo] + frac * (signed[:, hi] - signed[:, lo])
            lasso_rss = ((yw - Zt @ beta_lasso) ** 2).mean()
            assert fs_rss >= lasso_rss - 1e-9, (eps, s)
            assert fs_rss - lasso_rss <= tol, (eps, s, fs_rss, lasso_rss)
            np.testing.assert_allclose(beta, beta_lasso, rtol=0, atol=eps)


def test_fs_rejects_bad_step_size():
    Z = np.eye(4)
    for eps in (0, -0.1, float("nan")):
        with pytest.raises(ValueError, match="epsilon"):
            forward_stagewise_path(Z, np.arange(4.0), epsilon=eps)
