"""Thesis ch.8: the density-sweep data, identical trees in every input layout, CSR prediction, bad input."""
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from forestbench.datasets.embedded import density_sweep
from forestbench.errors import ConfigError, DataError
from forestbench.workflow.runner import input_density, predict_layout_of, tree_fingerprint, with_layout
from forestbench.tree import DecisionTreeRegressor


def _sweep(density, n=600, p=40, seed=0):
    ds = density_sweep(density, n_samples=n, n_features=p, seed=seed)
    return ds.X, ds.Y.ravel()


# --------------------------------------------------------------------------- the generator
def test_density_sweep_data():
    X, y = _sweep(0.05, n=4000, p=100)
    assert sp.issparse(X) and X.format == "csc" and X.dtype == np.float32
    assert abs(input_density(X) - 0.05) < 0.005
    assert np.all(X.data != 0)
    # non-zeros N(0, 1): mean ~ 0, variance ~ 1; y ~ U[0, 1]
    assert abs(X.data.mean()) < 0.05 and abs(X.data.var() - 1.0) < 0.1
    assert y.min() >= 0 and y.max() <= 1 and abs(y.mean() - 0.5) < 0.03
    # positions uniform: every column holds about density * n non-zeros
    per_col = np.diff(X.indptr)
    assert per_col.min() > 0.5 * 200 and per_col.max() < 1.5 * 200
    # deterministic, and the seed matters
    X2, y2 = _sweep(0.05, n=4000, p=100)
    assert (X != X2).nnz == 0 and np.array_equal(y, y2)
    X3, _ = _sweep(0.05, n=4000, p=100, seed=1)
    assert (X != X3).nnz > 0
    # the fit/predict split is every row for both
    ds = density_sweep(0.05, n_samples=50, n_features=5)
    (train, test), = ds.given_splits
    assert np.array_equal(train, np.arange(50)) and np.array_equal(test, np.arange(50))


def test_density_sweep_dense_end():
    X, _ = _sweep(1.0, n=300, p=20)
    assert isinstance(X, np.ndarray) and X.flags.c_contiguous and np.count_nonzero(X) == X.size
    X, _ = _sweep(0.6, n=300, p=20)
    assert isinstance(X, np.ndarray) and 0.5 < input_density(X) < 0.7


@pytest.mark.parametrize("density", [0.0, -0.1, 1.5, float("nan"), "0.1", True])
def test_density_outside_unit_interval_is_refused(density):
    with pytest.raises(ConfigError, match="density"):
        density_sweep(density, n_samples=10, n_features=3)


# --------------------------------------------------------------------------- identical trees in every layout
@pytest.mark.parametrize("density", [0.003, 0.03, 0.3, 1.0])
@pytest.mark.parametrize("splitter", ["best", "random"])
@pytest.mark.parametrize("max_depth", [1, None])
def test_layouts_grow_identical_trees(density, splitter, max_depth):
    X, y = _sweep(density, n=500, p=30)
    kw = dict(splitter=splitter, max_depth=max_depth, random_state=3)
    fits = {layout: DecisionTreeRegressor(**kw).fit(with_layout(X, layout), y) for layout in ("c", "fortran", "csc")}
    prints = {layout: tree_fingerprint(est) for layout, est in fits.items()}
    assert len(set(prints.values())) == 1, prints
    ref = fits["c"]
    if max_depth is None:
        # y is continuous and independent of X: fully grown means one leaf per distinct row
        assert ref.get_n_leaves() == np.unique(with_layout(X, "c"), axis=0).shape[0]
    for layout, est in fits.items():
        np.testing.assert_array_equal(est.tree_.feature, ref.tree_.feature)
        np.testing.assert_array_equal(est.tree_.threshold, ref.tree_.threshold)
        # CSR (the sparse predict layout) and the dense layouts reach the same leaves and predictions
        dense_pred = est.predict(with_layout(X, "c"))
        for pl in ("csr", "fortran"):
            np.testing.assert_array_equal(est.apply(with_layout(X, pl)), ref.apply(with_layout(X, "c")))
            np.testing.assert_allclose(est.predict(with_layout(X, pl)), dense_pred, rtol=0, atol=1e-12)


def test_fingerprint_sees_a_different_tree():
    X, y = _sweep(0.1, n=300, p=20)
    a = DecisionTreeRegressor(max_depth=3, random_state=0).fit(X, y)
    b = DecisionTreeRegressor(max_depth=3, random_state=0).fit(X, y)
    c = DecisionTreeRegressor(max_depth=4, random_state=0).fit(X, y)
    assert tree_fingerprint(a) == tree_fingerprint(b) != tree_fingerprint(c)
    d = DecisionTreeRegressor(max_depth=3, random_state=0).fit(X, y)
    d.tree_.threshold[0] = np.nextafter(d.tree_.threshold[0], np.inf)   # one ulp
    assert tree_fingerprint(d) != tree_fingerprint(a)
    assert tree_fingerprint(object()) is None


# --------------------------------------------------------------------------- bad input
def test_unknown_layout_is_refused():
    X, _ = _sweep(0.1, n=50, p=5)
    with pytest.raises(ConfigError, match="input_layout.*'coo'"):
        with_layout(X, "coo")
    with pytest.raises(ConfigError, match="input_layout"):
        predict_layout_of({"input_layout": "dense"})
    with pytest.raises(ConfigError, match="predict_layout"):
        predict_layout_of({"input_layout": "c", "predict_layout": "lil"})
    assert predict_layout_of({"input_layout": "csc"}) == "csr"
    assert predict_layout_of({"input_layout": "fortran"}) == "fortran"
    assert predict_layout_of({"input_layout": "csc", "predict_layout": "c"}) == "c"
    assert predict_layout_of({}) is None


def _shuffled_csc(X, rng, duplicate):
    """The same matrix with the row indices of every column in random order, and optionally each value split
    into two stored entries at the same position (a + b == value)."""
    X = sp.csc_matrix(X)
    data, indices, indptr = [], [], [0]
    for j in range(X.shape[1]):
        rows, vals = X.indices[X.indptr[j]:X.indptr[j + 1]], X.data[X.indptr[j]:X.indptr[j + 1]]
        if duplicate:
            part = np.float32(0.25) * vals
            rows, vals = np.concatenate([rows, rows]), np.concatenate([part, vals - part])
        order = rng.permutation(rows.size)
        data.append(vals[order])
        indices.append(rows[order])
        indptr.append(indptr[-1] + rows.size)
    out = sp.csc_matrix((np.concatenate(data), np.concatenate(indices), np.array(indptr)), shape=X.shape)
    assert not out.has_sorted_indices
    return out


@pytest.mark.parametrize("duplicate", [False, True])
def test_unsorted_or_duplicate_sparse_indices(duplicate):
    """A CSC / CSR matrix with unsorted or duplicate entries is read as the matrix it represents (duplicates
    summed), never as a wrong tree."""
    rng = np.random.RandomState(0)
    X = rng.randn(300, 12).astype(np.float32)
    X[rng.rand(300, 12) < 0.7] = 0
    if duplicate:   # the summed duplicates must reproduce the values exactly
        X = (np.float32(0.25) * X + (X - np.float32(0.25) * X)).astype(np.float32)
    y = rng.rand(300)
    bad = _shuffled_csc(X, rng, duplicate)
    indices_before = bad.indices.copy()
    ref = DecisionTreeRegressor(random_state=0).fit(X, y)
    est = DecisionTreeRegressor(random_state=0).fit(bad, y)
    assert tree_fingerprint(est) == tree_fingerprint(ref)
    np.testing.assert_array_equal(bad.indices, indices_before)   # the caller's matrix is not modified
    bad_csr = _shuffled_csc(X.T, rng, duplicate).T.tocsr()
    bad_csr = sp.csr_matrix((bad_csr.data, bad_csr.indices, bad_csr.indptr), shape=bad_csr.shape)
    np.testing.assert_array_equal(ref.apply(bad_csr), ref.apply(X))


# --------------------------------------------------------------------------- the report's checks
def _fits(prints, density=0.01, times=None):
    rows = []
    for (dataset, repeat, layout), sha in prints.items():
        rows.append({"experiment": "e", "dataset": dataset, "method": "decision_tree", "variant": f"tree-{layout}",
                     "repeat": repeat, "step": np.nan, "metric": "mse", "value": 0.0, "higher_is_better": False,
                     "fit_wall_s": (times or {}).get(layout, 1.0), "predict_wall_s": 0.1, "max_depth": 5,
                     "tree_sha256": sha, "input_density": density, "param.input_layout": layout})
    return pd.DataFrame(rows)


def test_report_flags_different_trees():
    from forestbench.report import layouts
    same = {("d", r, lay): f"h{r}" for r in range(2) for lay in ("c", "fortran", "csc")}
    assert layouts.fingerprint_mismatches(layouts.fit_rows(_fits(same))).empty
    differ = dict(same)
    differ[("d", 1, "csc")] = "other"
    bad = layouts.fingerprint_mismatches(layouts.fit_rows(_fits(differ)))
    assert list(bad["repeat"]) == [1] and "csc" in bad["layouts"].iloc[0]
    missing = dict(same)
    missing[("d", 0, "c")] = None
    assert list(layouts.fingerprint_mismatches(layouts.fit_rows(_fits(missing)))["problem"]) == [
        "no tree fingerprint in the run record"]


def test_report_fails_on_different_trees(tmp_path):
    from forestbench.report.experiment import build_experiment_report
    prints = {("d", 0, lay): "h" for lay in ("c", "fortran")}
    prints[("d", 0, "csc")] = "x"
    _fits(prints).to_csv(tmp_path / "scores.csv", index=False)
    cfg = {"datasets": ["d"], "metrics": ["mse"], "methods": [], "reports": [{"kind": "layouts", "figure": []}]}
    with pytest.raises(DataError, match="identical trees.*d repeat 0"):
        build_experiment_report(tmp_path / "scores.csv", "e", cfg, tmp_path, tmp_path / "out")
    cfg["reports"][0]["on_mismatch"] = "flag"
    build_experiment_report(tmp_path / "scores.csv", "e", cfg, tmp_path, tmp_path / "out")
    assert "IDENTICAL-TREE CHECK FAILED" in (tmp_path / "out" / "report.md").read_text()


def test_crossover_density():
    from forestbench.report import layouts
    # csc time grows 10x per decade of density, fortran is flat: equal at density 0.01 (log-linear in between)
    frames = []
    for d in (0.001, 0.003, 0.03, 0.1):
        prints = {(f"s{d}", 0, lay): "h" for lay in ("c", "fortran", "csc")}
        frames.append(_fits(prints, density=d, times={"csc": d * 100, "fortran": 1.0, "c": 2.0}))
    summary = layouts.layout_summary(layouts.fit_rows(pd.concat(frames)))
    cross = layouts.crossovers(summary)
    assert len(cross) == 1 and cross[0] == pytest.approx(0.01, rel=1e-9)
    ratios = layouts.time_ratios(summary)
    np.testing.assert_allclose(ratios["fortran_over_csc"], [10, 1 / 0.3, 1 / 3, 0.1])
    np.testing.assert_allclose(ratios["c_over_csc"], [20, 2 / 0.3, 2 / 3, 0.2])


def test_published_ratios_and_densities():
    from pathlib import Path
    from forestbench.report import layouts
    ref_dir = Path(__file__).resolve().parents[2] / "config" / "reference"
    paper = layouts.published(ref_dir, "thesis_table_8_2", "thesis_table_8_1").set_index("dataset")
    assert paper.loc["20newsgroup", "paper_fortran_over_csc"] == pytest.approx(20.1)
    assert paper.loc["20newsgroup", "paper_c_over_csc"] == pytest.approx(213.18 / 0.79)
    assert paper.loc["covtype", "paper_density"] == pytest.approx(0.2110)
    assert np.isnan(paper.loc["news20_binary", "paper_fortran_over_csc"])


def test_report_ratios_beside_tables_8_1_and_8_2(tmp_path):
    from pathlib import Path
    from forestbench.report.experiment import build_experiment_report
    ref_dir = Path(__file__).resolve().parents[2] / "config" / "reference"
    frames = []
    # 20newsgroup: csc 10x faster than fortran (paper: 20.1); covtype: csc slower (paper: 1.1, sparse faster)
    for dataset, density, t in (("20newsgroup", 0.0012, {"c": 50.0, "fortran": 10.0, "csc": 1.0}),
                                ("covtype", 0.22, {"c": 3.0, "fortran": 2.0, "csc": 4.0})):
        for r in range(3):
            prints = {(dataset, r, lay): f"{dataset}{r}" for lay in ("c", "fortran", "csc")}
            frames.append(_fits(prints, density=density, times=t))
    pd.concat(frames).to_csv(tmp_path / "scores.csv", index=False)
    cfg = {"datasets": ["20newsgroup", "covtype", "news20_binary"], "metrics": ["mse"], "methods": [],
           "reports": [{"kind": "layouts", "figure": [],
                        "reference": {"times": "thesis_table_8_2", "densities": "thesis_table_8_1"}}]}
    build_experiment_report(tmp_path / "scores.csv", "e", cfg, ref_dir, tmp_path / "out")
    md = (tmp_path / "out" / "report.md").read_text()
    assert "| 20newsgroup | 0.0012 | 0.0012 | 10.00 (20.10) | 50.00 (269.85) |" in md
    assert "| covtype | 0.22 | 0.211 | 0.50 (1.10) **✗** | 0.75 (1.66) **✗** |" in md
    assert "| news20_binary |  | 0.0003 | not run (N/A) | not run (N/A) |" in md   # configured, not run
    ratios = pd.read_csv(next((tmp_path / "out" / "tables").glob("*_ratios.csv")))
    assert list(ratios.loc[ratios["dataset"] == "covtype", "fortran_agrees"]) == ["NO"]


def test_thesis_csc_example_and_row_pattern():
    """Thesis Sec. 8.1.2: a 4 x 5 matrix with non-zeros a, b, c at (0, 0), (0, 3), (1, 3) is data = [a, b, c],
    indices = [0, 0, 1], indptr = [0, 1, 1, 1, 3, 3]; a tree on it equals the dense one (all-zero columns and rows
    included)."""
    A = np.zeros((4, 5), dtype=np.float32)
    A[0, 0], A[0, 3], A[1, 3] = 1.5, -2.0, 3.0
    X = sp.csc_matrix(A)
    np.testing.assert_array_equal(X.data, [1.5, -2.0, 3.0])
    np.testing.assert_array_equal(X.indices, [0, 0, 1])
    np.testing.assert_array_equal(X.indptr, [0, 1, 1, 1, 3, 3])
    y = np.array([0.1, 0.7, 0.3, 0.9])
    a = DecisionTreeRegressor(random_state=0).fit(X, y)
    b = DecisionTreeRegressor(random_state=0).fit(A, y)
    assert tree_fingerprint(a) == tree_fingerprint(b)
    # rows 2 and 3 are all zero: no feature can separate them, they share a leaf
    assert a.apply(X)[2] == a.apply(X)[3] and len(set(a.apply(X))) == 3
