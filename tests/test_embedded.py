import numpy as np
import pytest
import scipy.sparse as sp

from forestbench.datasets.embedded import friedman1_function, load_embedded
from forestbench.datasets.splits import make_splits
from forestbench.errors import ConfigError


def test_yeast_shape_labels_and_standard_split():
    ds = load_embedded("yeast", "river_yeast")
    assert ds.X.shape == (2417, 103) and ds.Y.shape == (2417, 14) and sp.issparse(ds.Y)
    # label counts of Mulan yeast (spec/datasets.md section 4.1)
    counts = np.asarray(ds.Y.sum(axis=0)).ravel().astype(int)
    assert counts.tolist() == [762, 1038, 983, 862, 722, 597, 428, 480, 178, 253, 289, 1816, 1799, 34]
    train, test = make_splits({"type": "given"}, ds.n_samples, ds.given_splits)[0]
    assert (len(train), len(test)) == (1500, 917)
    assert not set(train) & set(test)


def test_sf2_and_linnerud():
    sf2 = load_embedded("sf2", "river_sf2")
    assert sf2.X.shape == (1066, 10) and sf2.Y.shape == (1066, 3)
    assert load_embedded("sf2", "river_sf2", {"encoding": "onehot"}).X.shape == (1066, 23)
    lin = load_embedded("linnerud", "sklearn_linnerud")
    assert lin.X.shape == (20, 3) and lin.Y.shape == (20, 3)


def test_friedman1_multioutput_structure():
    chain = load_embedded("c", "friedman1_multioutput", {"kind": "chain", "n_samples": 20000, "n_outputs": 4})
    f = friedman1_function(chain.X.astype(float))
    residual = chain.Y - f[:, None]
    # chain: output j carries the sum of j unit-variance noises
    np.testing.assert_allclose(residual.var(axis=0), [1, 2, 3, 4], rtol=0.05)
    ind = load_embedded("i", "friedman1_multioutput", {"kind": "ind", "n_samples": 50, "n_outputs": 3})
    assert ind.X.shape == (50, 15)
    noisy = load_embedded("g", "friedman1_multioutput", {"kind": "group", "n_samples": 50, "n_outputs": 4,
                                                        "n_noise_outputs": 4})
    assert noisy.Y.shape == (50, 8)
    np.testing.assert_allclose(np.sort(noisy.Y[:, 4]), np.sort(noisy.Y[:, 0]))  # a permutation of output 0


def test_friedman1_irrelevant_inputs_leave_the_default_reading_unchanged():
    params = {"kind": "group", "n_samples": 400, "n_outputs": 3, "seed": 4}
    base = load_embedded("g", "friedman1_multioutput", params)
    wide = load_embedded("g", "friedman1_multioutput", {**params, "n_irrelevant_inputs": 5})
    assert wide.X.shape == (400, 10)
    # the five columns of f and every output are those of the default reading; the extra ones are U(0, 1) noise
    np.testing.assert_array_equal(wide.X[:, :5], base.X)
    np.testing.assert_array_equal(wide.Y, base.Y)
    extra = wide.X[:, 5:].astype(float)
    assert extra.min() >= 0 and extra.max() <= 1 and abs(extra.mean() - 0.5) < 0.05
    assert np.abs(np.corrcoef(extra.T, wide.Y[:, 0])[-1, :-1]).max() < 0.2
    with pytest.raises(ConfigError, match="n_irrelevant_inputs"):
        load_embedded("g", "friedman1_multioutput", {**params, "n_irrelevant_inputs": -1})


def test_generators_are_deterministic_and_validated():
    a = load_embedded("m", "multilabel", {"seed": 1})
    b = load_embedded("m", "multilabel", {"seed": 1})
    assert (a.Y != b.Y).nnz == 0 and np.array_equal(a.X, b.X)
    assert 2 < a.Y.sum() / a.Y.shape[0] < 6
    s = load_embedded("s", "sparse_inputs", {"n_samples": 200, "n_features": 500, "density": 0.02})
    assert sp.issparse(s.X) and abs(s.X.nnz / (200 * 500) - 0.02) < 0.005
    tn = load_embedded("t", "two_norm", {"n_samples": 4000})
    assert set(np.unique(tn.Y)) == {0.0, 1.0}
    with pytest.raises(ConfigError, match="unknown embedded loader 'nope'"):
        load_embedded("x", "nope")
    with pytest.raises(ConfigError, match="bad parameters"):
        load_embedded("x", "two_norm", {"n_sample": 3})
