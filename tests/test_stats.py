"""forestbench.stats against golden numbers (Demšar 2006, thesis Fig. 6.7 / Tables 6.5-6.7) and scipy."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sst

from forestbench import stats
REF = Path(__file__).resolve().parents[1] / "config" / "reference"

# Demšar (2006), Table 5(a): critical values q_0.05 of the two-tailed Nemenyi test, k = 2..10
DEMSAR_Q05 = [1.960, 2.343, 2.569, 2.728, 2.850, 2.949, 3.031, 3.102, 3.164]
# Demšar (2006), Table 5(a): q_0.10
DEMSAR_Q10 = [1.645, 2.052, 2.291, 2.459, 2.589, 2.693, 2.780, 2.855, 2.920]


@pytest.mark.parametrize("k,expected", list(zip(range(2, 11), DEMSAR_Q05)))
def test_nemenyi_q_alpha_matches_demsar_table_005(k, expected):
    # the printed table is neither consistently rounded nor truncated (k=3: 2.3437 printed 2.343; k=7: 2.9483
    # printed 2.949), so agreement is to the last printed digit
    assert stats.nemenyi_q_alpha(k, 0.05) == pytest.approx(expected, abs=1e-3)


@pytest.mark.parametrize("k,expected", list(zip(range(2, 11), DEMSAR_Q10)))
def test_nemenyi_q_alpha_matches_demsar_table_010(k, expected):
    assert stats.nemenyi_q_alpha(k, 0.10) == pytest.approx(expected, abs=1e-3)


def test_nemenyi_cd_thesis_figure_6_7():
    ref = pd.read_csv(REF / "thesis_figure_6_7_cd.csv")
    published = float(ref.loc[ref.row_type == "critical_distance", "value"].iloc[0])
    k = int((ref.row_type == "average_rank").sum())
    assert (k, published) == (8, 2.29)
    cd = stats.nemenyi_critical_difference(k, 21, alpha=0.05)
    assert round(cd, 2) == published
    assert cd == pytest.approx(2.291, abs=5e-4)
    # the closed form with Demšar's printed q
    assert cd == pytest.approx(3.031 * math.sqrt(8 * 9 / (6 * 21)), abs=1e-3)
    # regression study: k = 8, N = 8 gives 3.712 (gb_rpo spec)
    assert stats.nemenyi_critical_difference(8, 8) == pytest.approx(3.712, abs=5e-4)


def test_nemenyi_bad_input():
    with pytest.raises(ValueError, match="n_methods"):
        stats.nemenyi_critical_difference(1, 10)
    with pytest.raises(ValueError, match="alpha"):
        stats.nemenyi_q_alpha(3, 1.5)


def test_ranks_with_ties_and_direction():
    scores = pd.DataFrame({"a": [0.9, 0.5, 0.7], "b": [0.9, 0.6, 0.7], "c": [0.1, 0.7, 0.7]},
                          index=["d1", "d2", "d3"])
    ranks = stats.rank_table(scores, higher_is_better=True)
    expected = pd.DataFrame({"a": [1.5, 3.0, 2.0], "b": [1.5, 2.0, 2.0], "c": [3.0, 1.0, 2.0]}, index=scores.index)
    pd.testing.assert_frame_equal(ranks, expected)
    avg = stats.average_ranks(scores)
    assert list(avg.index) == ["a", "b", "c"]
    np.testing.assert_allclose(avg.to_numpy(), [6.5 / 3, 5.5 / 3, 6 / 3])
    # lower-is-better: each rank r becomes k + 1 - r
    low = stats.average_ranks(scores, higher_is_better=False)
    np.testing.assert_allclose(low.to_numpy(), 4 - avg.to_numpy())
    # ranks in each row always sum to k(k+1)/2
    np.testing.assert_allclose(ranks.sum(axis=1), 6.0)


def test_ranks_reject_missing_cells_by_name():
    scores = pd.DataFrame({"a": [0.1, np.nan], "b": [0.2, 0.3]}, index=["yeast", "emotions"])
    with pytest.raises(ValueError, match=r"\(emotions, a\)"):
        stats.average_ranks(scores)


def _thesis_lrap_matrix() -> pd.DataFrame:
    ref = pd.concat([pd.read_csv(REF / "thesis_table_6_5.csv"), pd.read_csv(REF / "thesis_table_6_6.csv")])
    return ref, ref.pivot(index="dataset_id", columns="method_id", values="value").astype(float)


def test_ranks_reproduce_printed_thesis_ranks():
    ref, matrix = _thesis_lrap_matrix()
    assert matrix.shape == (21, 8)
    printed = ref.pivot(index="dataset_id", columns="method_id", values="rank").astype(float)
    pd.testing.assert_frame_equal(stats.rank_table(matrix), printed, check_names=False)
    cd = pd.read_csv(REF / "thesis_figure_6_7_cd.csv")
    derived = cd[cd.row_type == "average_rank"].set_index("method_id")["average_rank"]
    ours = stats.average_ranks(matrix)
    np.testing.assert_allclose(ours[derived.index].to_numpy(), derived.to_numpy(), atol=5e-5)


def test_friedman_thesis_numbers_and_scipy():
    _, matrix = _thesis_lrap_matrix()
    res = stats.friedman_test(matrix)
    scipy_res = sst.friedmanchisquare(*[matrix[c].to_numpy() for c in matrix.columns])
    assert res.statistic == pytest.approx(scipy_res.statistic, rel=1e-12)
    assert res.p_value == pytest.approx(scipy_res.pvalue, rel=1e-9)
    # spec gb_rpo §6.4: 62.53 tie-corrected, 61.79 without; p 4.7e-11 / 6.6e-11
    assert res.statistic == pytest.approx(62.53, abs=0.01)
    assert res.p_value == pytest.approx(4.7e-11, rel=0.03)
    plain = stats.friedman_test(matrix, tie_correction=False)
    assert plain.statistic == pytest.approx(61.79, abs=0.01)
    assert plain.p_value == pytest.approx(6.6e-11, rel=0.03)
    n, k = 21, 8
    ff = (n - 1) * plain.statistic / (n * (k - 1) - plain.statistic)
    tied = stats.friedman_test(matrix, tie_correction=True)
    assert tied.iman_davenport == pytest.approx((n - 1) * tied.statistic / (n * (k - 1) - tied.statistic))
    assert plain.iman_davenport == pytest.approx(ff)
    assert plain.iman_davenport_p_value == pytest.approx(sst.f.sf(ff, k - 1, (k - 1) * (n - 1)))
    assert (res.n_datasets, res.n_methods) == (21, 8)
    # the statistic is direction-free, the ranks are not
    low = stats.friedman_test(matrix, higher_is_better=False)
    assert low.statistic == pytest.approx(res.statistic)
    np.testing.assert_allclose(low.average_ranks, 9 - res.average_ranks)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_friedman_matches_scipy_on_random_tied_scores(seed):
    rng = np.random.default_rng(seed)
    matrix = pd.DataFrame(rng.integers(0, 4, size=(12, 5)).astype(float), columns=list("abcde"))
    res = stats.friedman_test(matrix)
    scipy_res = sst.friedmanchisquare(*[matrix[c] for c in matrix.columns])
    assert res.statistic == pytest.approx(scipy_res.statistic, rel=1e-12)
    assert res.p_value == pytest.approx(scipy_res.pvalue, rel=1e-9)


def test_friedman_demsar_iman_davenport_example():
    # Demšar (2006) section 3.2.2: k = 4, N = 14, average ranks 3.143, 2.000, 2.893, 1.964 give
    # chi2_F = 9.28 and F_F = 3.69. These 14 rank rows (rank 1 = best) have exactly those rank sums.
    ranks = np.array([[4, 3, 1.5, 1.5], [1, 3, 4, 2], [2, 1, 4, 3], [2, 3, 4, 1], [3, 1, 2, 4], [3, 2, 1, 4],
                      [3, 2, 4, 1], [3, 2, 4, 1], [3, 2, 4, 1], [4, 1, 2, 3], [4, 1, 3, 2], [4, 2, 3, 1],
                      [4, 2, 3, 1], [4, 3, 1, 2]])
    matrix = pd.DataFrame(-ranks, columns=list("ABCD"))  # higher score = better rank
    res = stats.friedman_test(matrix, tie_correction=False)
    np.testing.assert_allclose(res.average_ranks, [3.143, 2.000, 2.893, 1.964], atol=5e-4)
    assert res.statistic == pytest.approx(9.28, abs=0.01)
    assert res.iman_davenport == pytest.approx(3.69, abs=0.01)
    # Demšar: F(3, 39) critical value at 0.05 is 2.85, so the null hypothesis is rejected
    assert res.iman_davenport_p_value < 0.05
    assert sst.f.ppf(0.95, 3, 39) == pytest.approx(2.85, abs=0.01)


def test_nemenyi_pvalues_agree_with_cd_and_scikit_posthocs():
    sp = pytest.importorskip("scikit_posthocs")
    _, matrix = _thesis_lrap_matrix()
    p = stats.nemenyi_pvalues(matrix)
    ranks = stats.average_ranks(matrix)
    cd = stats.nemenyi_critical_difference(8, 21)
    gaps = np.abs(ranks.to_numpy()[:, None] - ranks.to_numpy()[None, :])
    off = ~np.eye(8, dtype=bool)
    assert np.array_equal((p.to_numpy() < 0.05)[off], (gaps > cd)[off])
    # scikit-posthocs ranks within each block too (its ranking is direction-free for the test statistic)
    theirs = sp.posthoc_nemenyi_friedman(matrix.to_numpy())
    np.testing.assert_allclose(p.to_numpy()[off], theirs.to_numpy()[off], atol=1e-6)


def test_holm_correction_closed_form():
    p = [0.01, 0.04, 0.03, 0.005, np.nan]
    adj = stats.holm_correction(p)
    # sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1 -> 0.02, 0.03, 0.06, 0.06 (monotone)
    np.testing.assert_allclose(adj[:4], [0.03, 0.06, 0.06, 0.02])
    assert np.isnan(adj[4])
    assert stats.holm_correction([0.5, 0.9])[1] == 1.0


def test_wilcoxon_matrix_matches_scipy_and_thesis_table_6_7():
    _, matrix = _thesis_lrap_matrix()
    raw = stats.wilcoxon_holm(matrix, correction=None)
    assert np.all(np.isnan(np.diag(raw.to_numpy())))
    pd.testing.assert_frame_equal(raw, raw.T)
    for a in matrix.columns:
        for b in matrix.columns:
            if a != b:
                assert raw.loc[a, b] == pytest.approx(sst.wilcoxon(matrix[a], matrix[b]).pvalue, rel=1e-12)
    holm = stats.wilcoxon_holm(matrix)
    iu = np.triu_indices(8, 1)
    np.testing.assert_allclose(holm.to_numpy()[iu], stats.holm_correction(raw.to_numpy()[iu]))
    assert np.all(holm.to_numpy()[iu] >= raw.to_numpy()[iu])
    # sign notation and magnitudes against the published table (rounded means: about 1 significant digit)
    ref = pd.read_csv(REF / "thesis_table_6_7.csv")
    signs = stats.pairwise_test(matrix, "wilcoxon").signs
    agree = 0
    for row in ref.itertuples():
        ours = raw.loc[row.row_method_id, row.col_method_id]
        sign = "" if pd.isna(row.sign) else row.sign
        agree += signs.loc[row.row_method_id, row.col_method_id] == sign
        if float(row.p_value) < 0.05:
            assert ours < 0.1, (row.row_method_id, row.col_method_id, ours, row.p_value)
    assert agree == len(ref) == 56  # every published sign is reproduced from the printed (rounded) means
    assert raw.loc["br_gbrt", "gbrt_relabel_rpo_gaussian"] == pytest.approx(6e-5, rel=0.1)
    assert signs.loc["br_gbrt", "gbrt_relabel_rpo_gaussian"] == "<"
    assert signs.loc["gbrt_relabel_rpo_gaussian", "br_gbrt"] == ">"


def test_pairwise_direction_aware():
    rng = np.random.default_rng(3)
    base = rng.normal(size=15)
    matrix = pd.DataFrame({"good": base + 1.0, "bad": base})
    hi = stats.pairwise_test(matrix, "wilcoxon", higher_is_better=True)
    lo = stats.pairwise_test(matrix, "wilcoxon", higher_is_better=False)
    assert hi.signs.loc["good", "bad"] == ">" and hi.signs.loc["bad", "good"] == "<"
    assert lo.signs.loc["good", "bad"] == "<"
    assert hi.p_values.loc["good", "bad"] == lo.p_values.loc["good", "bad"]


def test_paired_ttest_matches_scipy_and_edge_cases():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=5), rng.normal(size=5)
    t, p = stats.paired_ttest(a, b)
    ref = sst.ttest_rel(a, b)
    assert (t, p) == pytest.approx((ref.statistic, ref.pvalue))
    assert stats.paired_ttest([1, 2, 3], [1, 2, 3]) == (0.0, 1.0)
    assert stats.paired_ttest([2, 3, 4], [1, 2, 3])[1] == 0.0
    matrix = pd.DataFrame({"x": a, "y": b, "z": [1.5, 2.5, 0.0, 3.0, 1.0]})
    matrix["x"] = matrix["z"] - 0.5  # exactly constant differences
    res = stats.pairwise_test(matrix, "ttest")
    assert res.p_values.loc["y", "z"] == pytest.approx(sst.ttest_rel(b, matrix["z"]).pvalue)
    assert res.p_values.loc["z", "x"] == 0.0 and res.signs.loc["z", "x"] == ">"


def test_wilcoxon_all_zero_differences_is_not_significant():
    matrix = pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": [1.0, 2.0, 3.0], "c": [0.0, 1.0, 5.0]})
    p = stats.wilcoxon_holm(matrix, correction=None)
    assert p.loc["a", "b"] == 1.0


def test_iman_davenport_undefined_when_every_dataset_ranks_alike():
    """Before: F = inf, p = 0 was printed as if the evidence were infinite."""
    import math

    from forestbench.report.experiment import _iman_davenport_text

    scores = pd.DataFrame({"a": [0.9, 0.8, 0.7, 0.95], "b": [0.5, 0.4, 0.3, 0.6], "c": [0.1, 0.2, 0.0, 0.3]})
    res = stats.friedman_test(scores)
    assert res.statistic == pytest.approx(4 * 2) and res.p_value < 0.05
    assert math.isnan(res.iman_davenport) and math.isnan(res.iman_davenport_p_value)
    text = _iman_davenport_text({"iman_davenport": res.iman_davenport,
                                 "iman_davenport_p_value": res.iman_davenport_p_value})
    assert "undefined" in text and "inf" not in text


def test_smallest_p_value_is_the_most_extreme_outcome():
    # Wilcoxon: one method better on every unit, distinct margins: 2 / 2^n under scipy's exact distribution
    for n in range(2, 9):
        assert stats.smallest_p_value("wilcoxon", n) == pytest.approx(2.0 / 2 ** n)
        a = np.arange(1.0, n + 1.0) + 10.0
        assert stats.smallest_p_value("wilcoxon", n) == pytest.approx(sst.wilcoxon(a, np.full(n, 10.0)).pvalue)
    assert stats.smallest_p_value("wilcoxon", 5) > 0.05 > stats.smallest_p_value("wilcoxon", 6)
    # Friedman: every unit ranks the k methods alike, chi^2 = n (k - 1); it equals friedman_test's p there
    alike = pd.DataFrame([[3.0, 2.0, 1.0]] * 2, columns=list("abc"))
    assert stats.smallest_p_value("friedman", 2, 3) == pytest.approx(math.exp(-2.0))
    assert stats.smallest_p_value("friedman", 2, 3) == pytest.approx(stats.friedman_test(alike).p_value)
    assert stats.smallest_p_value("friedman", 2, 8) > 0.05 > stats.smallest_p_value("friedman", 3, 8)
    assert stats.smallest_p_value("ttest", 2) == 0.0
    with pytest.raises(ValueError, match="unknown test 'sign'"):
        stats.smallest_p_value("sign", 4)
    with pytest.raises(ValueError, match="n_units"):
        stats.smallest_p_value("wilcoxon", 0)
