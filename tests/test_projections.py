"""Entry distributions, scalings and helpers of forestbench.projections (fixed seeds, so every test is exact)."""
import csv
import math
from pathlib import Path

import numpy as np
import pytest
import scipy.linalg
import scipy.sparse as sp
from scipy import stats

from forestbench.projections import (
    PROJECTION_KINDS,
    ParameterError,
    make_projection,
    project_outputs,
    resolve_n_components,
    split_projection,
)

REFERENCE = Path(__file__).resolve().parents[1] / "config" / "reference" / "thesis_table_5_1.csv"
ALPHA = 1e-3  # significance of the distribution tests (seeds are fixed, so the outcome is deterministic)


def _dense(phi):
    return phi.toarray() if sp.issparse(phi) else np.asarray(phi)


# ---------------------------------------------------------------------------------------------------------- sizes
@pytest.mark.parametrize(
    "value, d, expected",
    [(1, 983, 1), (25, 983, 25), (2000, 983, 2000), (1.0, 983, 983), (0.5, 7, 4), (0.01, 10, 1),
     ("ln_d", 6, 2), ("ln_d", 14, 3), ("ln_d", 983, 7), ("ln_d", 3993, 8), ("ln_d", 1, 1), ("ln_d", 2, 1),
     ("2ln_d", 1554, 15), ("2ln_d", 983, 14), ("sqrt_d", 983, 31), (np.int64(3), 10, 3)],
)
def test_resolve_n_components(value, d, expected):
    assert resolve_n_components(value, d) == expected


def test_ln_d_matches_the_published_tables():
    if not REFERENCE.exists():
        pytest.fail(f"reference table {REFERENCE} is missing")
    rows = [r for r in csv.DictReader(REFERENCE.open()) if r["method_id"] == "rf_gaussian_q_ln_d"]
    assert len(rows) == 24
    for r in rows:
        assert resolve_n_components("ln_d", int(r["d"])) == int(r["q"]), r["dataset"]
    for r in csv.DictReader(REFERENCE.open()):
        if r["method_id"] == "rf_gaussian_q_d":
            assert resolve_n_components(1.0, int(r["d"])) == int(r["q"])


@pytest.mark.parametrize("bad", [0, -3, 0.0, 1.5, "log", True, None, [2]])
def test_resolve_n_components_rejects(bad):
    with pytest.raises(ParameterError):
        resolve_n_components(bad, 10)


def test_unknown_kind_and_options_are_rejected():
    with pytest.raises(ParameterError, match="unknown output projection"):
        make_projection("fourier", 2, 10, 0)
    with pytest.raises(ParameterError, match="option"):
        make_projection("gaussian", 2, 10, 0, density=0.5)
    with pytest.raises(ParameterError, match="needs the output matrix"):
        make_projection("pca", 2, 10, 0)
    with pytest.raises(ParameterError, match="q <= d"):
        make_projection("subsample", 11, 10, 0, with_replacement=False)
    with pytest.raises(ValueError):  # ParameterError is also a ValueError for scikit-learn callers
        make_projection("gaussian", 0, 10, 0)


# ---------------------------------------------------------------------------------------------- shapes, determinism
@pytest.mark.parametrize("kind", PROJECTION_KINDS)
def test_shape_type_and_determinism(kind):
    rng = np.random.default_rng(3)
    Y = (rng.random((60, 20)) < 0.2).astype(float)
    a = make_projection(kind, 5, 20, random_state=11, Y=Y)
    b = make_projection(kind, 5, 20, random_state=11, Y=Y)
    assert a.shape == (5, 20)
    assert a.dtype == np.float64
    assert sp.issparse(a) == (kind in ("achlioptas", "sparse", "subsample"))
    np.testing.assert_array_equal(_dense(a), _dense(b))
    if kind != "pca":
        c = make_projection(kind, 5, 20, random_state=12)
        assert not np.array_equal(_dense(a), _dense(c))


# ------------------------------------------------------------------------------------------ entry distributions
def test_gaussian_entries_are_normal_with_variance_one_over_q():
    q, d = 40, 500
    phi = make_projection("gaussian", q, d, random_state=0)
    entries = phi.ravel() * math.sqrt(q)  # should be i.i.d. N(0, 1)
    assert stats.kstest(entries, "norm").pvalue > ALPHA
    # variance test: (N-1) s^2 ~ chi2(N-1) around 1/q
    n = entries.size
    chi = (n - 1) * entries.var(ddof=1)
    assert stats.chi2.sf(chi, n - 1) > ALPHA / 2 and stats.chi2.cdf(chi, n - 1) > ALPHA / 2
    assert abs(phi.var() * q - 1) < 0.03


def _check_sparse_rademacher(phi, q, s):
    values = _dense(phi).ravel()
    magnitude = math.sqrt(s / q)
    nz = values[values != 0]
    np.testing.assert_allclose(np.abs(nz), magnitude, rtol=1e-12)
    n = values.size
    # number of non-zeros ~ Binomial(n, 1/s); signs ~ Binomial(nnz, 1/2)
    if s > 1:
        assert stats.binomtest(nz.size, n, 1.0 / s).pvalue > ALPHA
    else:
        assert nz.size == n
    assert stats.binomtest(int((nz > 0).sum()), nz.size, 0.5).pvalue > ALPHA
    # independence of the support across rows: the per-row counts follow Binomial(d, 1/s)
    return nz


def test_rademacher_dense_is_plus_minus_one_over_sqrt_q():
    q, d = 30, 400
    phi = make_projection("rademacher", q, d, random_state=1)
    assert isinstance(phi, np.ndarray)
    _check_sparse_rademacher(phi, q, 1)


def test_achlioptas_s3():
    q, d = 30, 400
    phi = make_projection("achlioptas", q, d, random_state=2)
    _check_sparse_rademacher(phi, q, 3)


def test_sparse_li_s_sqrt_d():
    q, d = 60, 900
    phi = make_projection("sparse", q, d, random_state=3)
    _check_sparse_rademacher(phi, q, math.sqrt(d))
    counts = np.diff(phi.indptr)
    # per-row non-zero counts follow Binomial(d, 1/sqrt(d)): compare mean and variance
    p = 1 / math.sqrt(d)
    assert abs(counts.mean() - d * p) < 4 * math.sqrt(d * p * (1 - p) / q)
    # explicit density overrides 1/sqrt(d)
    phi2 = make_projection("sparse", q, d, random_state=3, density=0.1)
    _check_sparse_rademacher(phi2, q, 10.0)


def test_subsample_rows_are_scaled_identity_rows():
    q, d = 12, 40
    phi = make_projection("subsample", q, d, random_state=4)
    dense = _dense(phi)
    assert (np.count_nonzero(dense, axis=1) == 1).all()
    np.testing.assert_allclose(dense[dense != 0], math.sqrt(d / q))
    cols = dense.argmax(axis=1)
    assert len(set(cols)) == q  # without replacement when q <= d
    # q = d is a scaled permutation of the outputs
    perm = _dense(make_projection("subsample", d, d, random_state=5))
    np.testing.assert_allclose(perm @ perm.T, np.eye(d))
    # chosen labels are uniform over draws
    hits = np.zeros(d)
    for seed in range(400):
        hits += np.bincount(make_projection("subsample", 3, d, random_state=seed).indices, minlength=d)
    assert stats.chisquare(hits).pvalue > ALPHA
    # with replacement: allowed beyond d and may repeat
    rep = make_projection("subsample", 2 * d, d, random_state=6)
    assert rep.shape == (2 * d, d) and len(set(rep.indices)) < 2 * d
    rep2 = make_projection("subsample", d, d, random_state=6, with_replacement=True)
    assert len(set(rep2.indices)) < d


def test_hadamard_is_a_scaled_subsampled_sylvester_matrix():
    q, d = 5, 12
    phi = make_projection("hadamard", q, d, random_state=7)
    # replay the documented draws and compare with scipy's Sylvester construction
    rng = np.random.default_rng(7)
    order = 16
    rows = rng.choice(order, size=q, replace=False)
    cols = rng.choice(order, size=d, replace=False)
    expected = scipy.linalg.hadamard(order)[np.ix_(rows, cols)] / math.sqrt(q)
    np.testing.assert_array_equal(phi, expected)
    # q = d = 2^k: rows are orthogonal, Phi Phi^T = (d / q) I
    full = make_projection("hadamard", 32, 32, random_state=8)
    np.testing.assert_allclose(full @ full.T, np.eye(32), atol=1e-12)
    # sign balance over a larger matrix (Hadamard rows other than row 0 are balanced)
    big = make_projection("hadamard", 64, 1000, random_state=9)
    np.testing.assert_allclose(np.abs(big), 1 / 8)


@pytest.mark.parametrize("sparse_y", [False, True])
def test_pca_matches_sklearn(sparse_y):
    from sklearn.decomposition import PCA

    rng = np.random.default_rng(10)
    Y = (rng.random((200, 15)) < rng.random(15)).astype(float)
    phi = make_projection("pca", 4, 15, random_state=None, Y=sp.csr_matrix(Y) if sparse_y else Y)
    ref = PCA(n_components=4, svd_solver="full").fit(Y).components_
    for i in range(4):
        sign = np.sign(phi[i] @ ref[i])
        np.testing.assert_allclose(phi[i], sign * ref[i], atol=1e-8)
    np.testing.assert_allclose(phi @ phi.T, np.eye(4), atol=1e-10)  # unwhitened: orthonormal axes


# ------------------------------------------------------------------------------------------ JL normalisation
@pytest.mark.parametrize("kind", ["gaussian", "rademacher", "achlioptas", "sparse", "subsample", "hadamard"])
def test_norms_are_preserved_in_expectation(kind):
    """E ||Phi y||^2 = ||y||^2: the projections' scalings are the JL normalisation."""
    rng = np.random.default_rng(12)
    d, q = 64, 8
    y = (rng.random(d) < 0.3).astype(float)
    ratios = [np.sum(project_outputs(y[None, :], make_projection(kind, q, d, random_state=s)) ** 2) / y.sum()
              for s in range(3000)]
    assert abs(np.mean(ratios) - 1.0) < 4 * np.std(ratios) / math.sqrt(len(ratios))


def test_variance_is_preserved_as_q_grows():
    """Theorem 1: Var(Phi y) / Var(y) concentrates on 1 as q grows (reference-implementation example, smaller)."""
    rng = np.random.default_rng(13)
    Y = (rng.random((500, 200)) < 0.1).astype(float)
    var_y = Y.var(axis=0).sum()
    spread = []
    for q in (1, 10, 50, 200):
        r = [project_outputs(Y, make_projection("gaussian", q, 200, random_state=s)).var(axis=0).sum() / var_y
             for s in range(10)]
        spread.append(np.max(np.abs(np.array(r) - 1)))
    assert spread[-1] < 0.3
    assert spread[0] > spread[-1] and spread[1] > spread[-1]


# ------------------------------------------------------------------------------------------- project_outputs
@pytest.mark.parametrize("kind", ["gaussian", "achlioptas", "subsample"])
@pytest.mark.parametrize("sparse_y", [False, True])
def test_project_outputs_equals_dense_product(kind, sparse_y):
    rng = np.random.default_rng(14)
    Y = (rng.random((50, 30)) < 0.1).astype(float)
    phi = make_projection(kind, 6, 30, random_state=1)
    Z = project_outputs(sp.csr_matrix(Y) if sparse_y else Y, phi)
    np.testing.assert_allclose(_dense(Z), Y @ _dense(phi).T, atol=1e-12)
    assert Z.shape == (50, 6) and Z.dtype == np.float64
    if not sp.issparse(Z):
        assert Z.flags.c_contiguous
    if kind == "subsample" and sparse_y:
        assert sp.issparse(Z)  # selecting labels of a sparse Y stays sparse


def test_split_projection_drops_only_a_common_positive_scale():
    """A random output subspace splits on its 0/1 pattern (the same rows and columns, every value 1); a projection
    whose non-zeros differ in value or sign, a dense one and an already unscaled one are returned as they are."""
    phi = make_projection("subsample", 12, 40, random_state=4)
    pattern = split_projection(phi)
    assert sp.issparse(pattern) and (pattern != 0).toarray().tolist() == (phi != 0).toarray().tolist()
    np.testing.assert_array_equal(pattern.data, 1.0)
    np.testing.assert_allclose(phi.toarray(), math.sqrt(40 / 12) * pattern.toarray())
    assert phi.data[0] == math.sqrt(40 / 12)  # the projection itself is not touched
    for kind in ("sparse", "achlioptas", "gaussian", "hadamard"):
        other = make_projection(kind, 12, 40, random_state=4)
        assert split_projection(other) is other
    assert split_projection(pattern) is pattern
    assert split_projection(-phi).data[0] < 0  # a negative common value is a reflection, not a scale: kept
