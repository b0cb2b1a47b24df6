import numpy as np
import pytest
from sklearn.metrics import r2_score

from forestbench.metrics import (METRICS, UndefinedScore, arrmse, coverage_error, get_metric, label_ranking_loss, lrap,
                                 lrap_all_rows, macro_r2, score_all)
from forestbench.errors import ConfigError

# thesis section 2.4.3 worked example (rf_projections spec section 3)
Y = np.array([[1, 0, 1, 0, 0], [1, 0, 0, 0, 0]])
F = np.array([[0.75, 0.6, 0.1, 0.8, 0.15], [0.25, 0.8, 0.1, 0.15, 0.3]])


def test_lrap_thesis_worked_example():
    assert lrap(Y, F) == pytest.approx(0.5 * (0.5 * (0.5 + 2 / 5) + 1 / 3))
    assert lrap(Y, F) == pytest.approx(0.391666666)


def test_worked_example_other_ranking_metrics():
    assert coverage_error(Y, F) == pytest.approx(4.0)
    assert label_ranking_loss(Y, F) == pytest.approx(7 / 12)


def test_lrap_drops_rows_without_labels():
    Y0 = np.vstack([Y, np.zeros(5)])
    F0 = np.vstack([F, np.linspace(0, 1, 5)])
    assert lrap(Y0, F0) == pytest.approx(lrap(Y, F))
    with pytest.raises(UndefinedScore, match="no test row has a positive label"):
        lrap(np.zeros((2, 3)), np.ones((2, 3)))
    assert np.isnan(get_metric("lrap")(np.zeros((2, 3)), np.ones((2, 3))))


def test_lrap_ties_count_against():
    # all scores tied: LRAP equals the fraction of positive labels
    assert lrap(np.array([[1, 0, 0, 1]]), np.zeros((1, 4))) == pytest.approx(0.5)


def _labels_and_scores(d, tied, seed, top, label_less):
    """300 rows of random 0/1 labels (rows 0-4 with every label, the next ``label_less`` rows without any, every
    other row with at least one) and scores, rounded to thirds when ``tied``."""
    rng = np.random.default_rng(seed)
    T = (rng.random((300, d)) < rng.uniform(0.05, top)).astype(float)
    T[:5] = 1.0
    T[5:5 + label_less] = 0.0
    rest = T[5 + label_less:]
    rest[rest.sum(axis=1) == 0, 0] = 1.0
    S = rng.random((300, d))
    return T, (np.round(S * 3) / 3 if tied else S)


@pytest.mark.parametrize("d", [1, 2, 6, 40, 79, 80, 150])
@pytest.mark.parametrize("tied", [False, True])
def test_lrap_agrees_with_sklearn(d, tied):
    # sklearn's own loop over rows is the oracle: random labels (rows with every label positive included), scores
    # with and without ties, dense and sparse labels
    import scipy.sparse as sp
    from sklearn.metrics import label_ranking_average_precision_score

    T, S = _labels_and_scores(d, tied, seed=d, top=0.9, label_less=0)
    expected = label_ranking_average_precision_score(T, S)
    assert lrap(T, S) == pytest.approx(expected, rel=1e-12, abs=0)
    assert lrap(sp.csr_matrix(T), S) == pytest.approx(expected, rel=1e-12, abs=0)


@pytest.mark.parametrize("d", [2, 6, 79, 80, 150])
@pytest.mark.parametrize("tied", [False, True])
def test_lrap_all_rows_is_sklearns_score_with_label_less_rows(d, tied):
    # scikit-learn's convention is the oracle: a row without a positive label scores 1, and the score is the mean
    # over every row; on the rows with labels it is our row-dropping LRAP, so the two are an affine map of each other
    from sklearn.metrics import label_ranking_average_precision_score

    T, S = _labels_and_scores(d, tied, seed=100 + d, top=0.5, label_less=135)   # 45 % label-less, as on birds
    expected = label_ranking_average_precision_score(T, S)
    assert lrap_all_rows(T, S) == pytest.approx(expected, rel=1e-12, abs=0)
    e = np.mean(T.sum(axis=1) == 0)
    assert lrap_all_rows(T, S) == pytest.approx((1 - e) * lrap(T, S) + e, rel=1e-12, abs=0)
    assert lrap_all_rows(T, S) > lrap(T, S) + 0.05   # the readings differ by far on such rows
    # without label-less rows the two readings agree
    assert lrap_all_rows(T[140:], S[140:]) == pytest.approx(lrap(T[140:], S[140:]), rel=1e-12, abs=0)


def test_lrap_all_rows_edge_cases():
    from sklearn.metrics import label_ranking_average_precision_score

    # no row with a label: every row scores 1 under this convention (scikit-learn's), where the dropping LRAP
    # is undefined
    zeros = np.zeros((3, 4))
    assert lrap_all_rows(zeros, np.ones((3, 4))) == label_ranking_average_precision_score(zeros, np.ones((3, 4))) == 1
    # a diverging model's scores on the rows that count leave it undefined, like the dropping LRAP
    with pytest.raises(UndefinedScore, match="NaN or infinite"):
        lrap_all_rows(np.array([[1.0, 0.0], [0.0, 0.0]]), np.array([[np.nan, 0.2], [0.1, 0.2]]))
    with pytest.raises(ValueError, match="lrap_all_rows: y_true has shape"):
        lrap_all_rows(np.ones((2, 3)), np.ones((2, 2)))
    assert METRICS["lrap_all_rows"].higher_is_better


@pytest.mark.parametrize("d", [1, 3, 12, 120])
def test_both_lrap_paths_agree_with_sklearn_row_by_row(d):
    # the sorted-rows path (few labels) and the searched path (many labels) on the same rows, each row alone
    from sklearn.metrics import label_ranking_average_precision_score

    from forestbench.metrics import _lrap_searched, _lrap_sorted_rows

    rng = np.random.default_rng(100 + d)
    T = rng.random((60, d)) < 0.3
    T[T.sum(axis=1) == 0, -1] = True
    T[0] = True
    S = np.round(rng.normal(size=(60, d)), 1)            # many ties
    expected = [label_ranking_average_precision_score(T[i:i + 1], S[i:i + 1]) for i in range(60)]
    np.testing.assert_allclose(_lrap_sorted_rows(T, S), expected, rtol=1e-13, atol=0)
    np.testing.assert_allclose(_lrap_searched(T, S), expected, rtol=1e-13, atol=0)


def _previous_search():
    """The searched LRAP as forestbench computed it before its compiled pass, kept in the metrics benchmark (which
    times both): the oracle of the pass's numbers."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_metrics.py"
    spec = importlib.util.spec_from_file_location("bench_metrics", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.previous_searched


@pytest.mark.parametrize("seed", range(6))
def test_compiled_lrap_gives_the_whole_matrix_search_to_the_bit(seed):
    """Every row's LRAP from the compiled pass equals the previous whole-matrix search's, bit for bit, on rows with few
    positive labels (counted directly) and many (histogram), ties of every kind (integer scores, a score shared
    by every label, zeros of both signs) and rows whose labels are all positive, so that scores, selections and
    archived tuning stay what they were."""
    from forestbench.metrics import _lrap_searched

    previous = _previous_search()
    rng = np.random.default_rng(seed)
    few = many = 0
    for trial in range(40):
        n, d = int(rng.integers(1, 40)), int(rng.integers(80, 400))
        T = rng.random((n, d)) < rng.choice([0.005, 0.02, 0.1, 0.5, 0.95, 1.0])
        T[np.arange(n), rng.integers(0, d, size=n)] = True          # every row has a positive label
        kind = trial % 4
        if kind == 0:
            S = rng.normal(size=(n, d))
        elif kind == 1:
            S = rng.integers(0, 4, size=(n, d)).astype(float)
        elif kind == 2:
            S = np.round(rng.random((n, d)), 1) - 0.5
            S[S == 0] = rng.choice([0.0, -0.0], size=int((S == 0).sum()))
        else:
            S = np.full((n, d), 0.25)
            S[:, : d // 3] = rng.normal(size=(n, d // 3))
        got, want = _lrap_searched(T, S), previous(T, S)
        assert got.tobytes() == want.tobytes(), (trial, np.flatnonzero(got != want)[:5])
        m = T.sum(axis=1)
        few += int(((m > 8) & (m <= 32)).sum())      # counted directly, NumPy's pairwise sum past 8 terms
        many += int(((m > 32) & (m < d)).sum())      # through the histogram
    assert few > 20 and many > 20


def test_lrap_rejects_malformed_input():
    with pytest.raises(ValueError, match="0/1 label"):
        lrap(np.array([[2.0, 0.0]]), np.array([[0.1, 0.2]]))
    with pytest.raises(ValueError, match="shape"):
        lrap(np.ones((2, 3)), np.ones((2, 2)))


def test_lrap_of_a_diverging_model_is_undefined_not_an_error():
    # a staged tuning job met a boosting candidate whose scores overflowed: the stage is undefined (NaN), and the
    # job goes on (forestbench.workflow.selection skips undefined stages)
    for bad in (np.nan, np.inf, -np.inf):
        with pytest.raises(UndefinedScore, match="1 score"):
            lrap(np.array([[1.0, 0.0]]), np.array([[bad, 0.2]]))
        assert np.isnan(get_metric("lrap")(np.array([[1.0, 0.0]]), np.array([[bad, 0.2]])))
    with pytest.raises(ValueError, match="shape"):
        lrap(np.ones((2, 3)), np.ones((2, 2)))


def test_macro_r2_matches_sklearn_uniform_average():
    rng = np.random.default_rng(0)
    T, P = rng.normal(size=(50, 4)), rng.normal(size=(50, 4))
    assert macro_r2(T, P) == pytest.approx(r2_score(T, P, multioutput="uniform_average"))


def test_arrmse_uses_training_mean():
    T = np.array([[1.0, 10.0], [3.0, 14.0]])
    train = np.array([[0.0, 12.0], [0.0, 12.0]])
    # predicting the training mean gives exactly 1; perfect prediction 0
    assert arrmse(T, np.zeros_like(T) + train.mean(axis=0), train) == pytest.approx(1.0)
    assert arrmse(T, T, train) == pytest.approx(0.0)
    pred = np.array([[2.0, 12.0], [2.0, 12.0]])
    expected = np.mean([np.sqrt(2 / 10), np.sqrt(8 / 8)])
    assert arrmse(T, pred, train) == pytest.approx(expected)


def test_directions_and_unknown_metric():
    assert METRICS["lrap"].higher_is_better and not METRICS["coverage_error"].higher_is_better
    with pytest.raises(ConfigError, match="unknown metric 'lrapp'"):
        get_metric("lrapp")


# ---------------------------------------------------------------- undefined scores: a convention, never -inf or NaN
def test_macro_r2_with_one_constant_test_output_follows_sklearn():
    """Before: -inf (one constant output, as sf2's third output in a CV fold) and NaN when predicted exactly."""
    rng = np.random.default_rng(0)
    Yt = np.column_stack([rng.normal(size=20), rng.normal(size=20), np.zeros(20)])
    Yp = Yt + rng.normal(scale=0.3, size=Yt.shape)
    assert macro_r2(Yt, Yp) == pytest.approx(r2_score(Yt, Yp))
    Yp[:, 2] = 0.0  # the constant output predicted exactly: 1, as scikit-learn
    assert macro_r2(Yt, Yp) == pytest.approx(r2_score(Yt, Yp))


@pytest.mark.parametrize("name,Y_true,Y_pred,reason", [
    ("macro_r2", np.ones((5, 1)), np.zeros((5, 1)), "constant"),
    ("macro_r2", np.ones((5, 2)), np.ones((5, 2)), "constant"),
    ("half_macro_r2", np.arange(5.0)[:, None], np.zeros((5, 1)), "no test output"),
    ("normalized_mse", np.column_stack([np.arange(5.0), np.ones(5)]), np.zeros((5, 2)), "zero variance"),
    ("lrap", np.zeros((4, 3)), np.ones((4, 3)), "positive"),
    ("micro_auc", np.zeros((4, 3)), np.ones((4, 3)), "negative"),
    ("micro_average_precision", np.zeros((4, 3)), np.ones((4, 3)), "negative"),
    ("micro_auc", np.ones((4, 3)), np.ones((4, 3)), "positive"),
])
def test_undefined_scores_have_a_reason(name, Y_true, Y_pred, reason):
    value, why = get_metric(name).evaluate(Y_true, Y_pred)
    assert value is None and reason in why


def test_arrmse_undefined_when_test_equals_training_mean():
    value, why = get_metric("arrmse").evaluate(np.ones((3, 1)), np.zeros((3, 1)), np.ones((4, 1)))
    assert value is None and "training mean" in why


def test_score_all_writes_null_reason_and_warns():
    messages = []
    metrics = [get_metric("macro_r2"), get_metric("mse")]
    scores, undefined = score_all(metrics, np.ones((4, 1)), np.zeros((4, 1)), context="d/v repeat 0",
                                  log=messages.append)
    assert scores == {"macro_r2": None, "mse": 1.0}
    assert set(undefined) == {"macro_r2"}
    assert len(messages) == 1 and "d/v repeat 0: macro_r2 is undefined" in messages[0]
