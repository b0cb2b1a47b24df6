import numpy as np
import pytest
from sklearn.metrics import r2_score

from forestbench.metrics import METRICS, arrmse, coverage_error, get_metric, label_ranking_loss, lrap, macro_r2
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
    assert np.isnan(lrap(np.zeros((2, 3)), np.ones((2, 3))))


def test_lrap_ties_count_against():
    # all scores tied: LRAP equals the fraction of positive labels
    assert lrap(np.array([[1, 0, 0, 1]]), np.zeros((1, 4))) == pytest.approx(0.5)


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
