"""Datasets that need no download: real data shipped inside PyPI wheels, and the papers' synthetic generators.

Real data is read from the installed packages' data files (no loader that could reach the network is called):
- Mulan's yeast (2417 x 103, 14 labels) and the sf2 solar-flare set (1066 x 10, 3 targets) from the ``river`` wheel;
- linnerud (20 x 3, 3 targets) from scikit-learn.
Every loader takes the entry's ``source.params`` as keyword arguments and returns a :class:`Dataset`.
"""
from __future__ import annotations

import hashlib
import importlib.util
import zipfile
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd
import scipy.sparse as sp

from forestbench.datasets.store import Dataset
from forestbench.errors import ConfigError, DataError

LOADERS: dict[str, Callable[..., Dataset]] = {}


def loader(name: str):
    def register(func):
        LOADERS[name] = func
        return func
    return register


def load_embedded(dataset: str, loader_name: str, params: dict | None = None) -> Dataset:
    try:
        func = LOADERS[loader_name]
    except KeyError:
        raise ConfigError(f"dataset {dataset}: unknown embedded loader {loader_name!r} "
                          f"(known: {', '.join(sorted(LOADERS))})") from None
    try:
        ds = func(**(params or {}))
    except TypeError as exc:
        raise ConfigError(f"dataset {dataset}: bad parameters for embedded loader {loader_name!r}: {exc}") from None
    ds.name = dataset
    return ds


def _package_file(package: str, relative: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise DataError(f"package {package!r} is not installed; it ships the data file {relative}")
    path = Path(spec.submodule_search_locations[0]) / relative
    if not path.exists():
        raise DataError(f"data file {path} is missing from the installed {package!r} package")
    return path


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# --------------------------------------------------------------------------------------------------------------
# real data shipped in wheels


@loader("river_yeast")
def river_yeast() -> Dataset:
    """Mulan yeast. Rows are in Mulan's ``yeast.arff`` order: the 917 test rows first, then the 1500 train rows, so
    the standard split (Elisseeff & Weston 2001) is given as train = rows 917..2416, test = rows 0..916."""
    path = _package_file("river", "datasets/yeast.csv.gz")
    frame = pd.read_csv(path)
    labels = [c for c in frame.columns if c.startswith("Class")]
    features = [c for c in frame.columns if c.startswith("Att")]
    X = frame[features].to_numpy(np.float32)
    Y = sp.csr_matrix(frame[labels].to_numpy(np.float64))
    n = X.shape[0]
    given = [(np.arange(917, n), np.arange(0, 917))]
    meta = {"source": {"package": "river", "file": "datasets/yeast.csv.gz", "sha256": _sha256(path)},
            "feature_names": features, "output_names": labels}
    return Dataset("yeast", X, Y, "multilabel", meta, given)


@loader("river_sf2")
def river_sf2(encoding: str = "ordinal") -> Dataset:
    """Mulan sf2 (UCI solar flare, second period): 10 inputs, 3 count targets.

    The three nominal inputs are encoded as ordinal codes in sorted order (``encoding="ordinal"``, keeping p = 10 as
    in the papers' tables) or one-hot (``encoding="onehot"``, p = 23)."""
    path = _package_file("river", "datasets/solar-flare.csv.zip")
    with zipfile.ZipFile(path) as archive:
        with archive.open(archive.namelist()[0]) as fh:
            frame = pd.read_csv(fh)
    targets = ["c-class-flares", "m-class-flares", "x-class-flares"]
    inputs = frame.drop(columns=targets)
    nominal = [c for c in inputs.columns if not pd.api.types.is_numeric_dtype(inputs[c])]
    if encoding == "ordinal":
        for c in nominal:
            inputs[c] = inputs[c].map({v: i for i, v in enumerate(sorted(inputs[c].unique()))})
    elif encoding == "onehot":
        inputs = pd.get_dummies(inputs, columns=nominal, dtype=np.float32)
    else:
        raise ConfigError(f"river_sf2: encoding must be 'ordinal' or 'onehot', not {encoding!r}")
    meta = {"source": {"package": "river", "file": "datasets/solar-flare.csv.zip", "sha256": _sha256(path)},
            "feature_names": list(inputs.columns), "output_names": targets, "encoding": encoding}
    return Dataset("sf2", inputs.to_numpy(np.float32), frame[targets].to_numpy(np.float64),
                   "multioutput_regression", meta)


@loader("sklearn_linnerud")
def sklearn_linnerud() -> Dataset:
    """Linnerud (20 x 3 exercise inputs, 3 physiological targets), read from scikit-learn's data files."""
    exercise = _package_file("sklearn", "datasets/data/linnerud_exercise.csv")
    physio = _package_file("sklearn", "datasets/data/linnerud_physiological.csv")
    X = pd.read_csv(exercise, sep=r"\s+")
    Y = pd.read_csv(physio, sep=r"\s+")
    meta = {"source": {"package": "scikit-learn",
                       "files": {p.name: _sha256(p) for p in (exercise, physio)}},
            "feature_names": list(X.columns), "output_names": list(Y.columns)}
    return Dataset("linnerud", X.to_numpy(np.float32), Y.to_numpy(np.float64), "multioutput_regression", meta)


# --------------------------------------------------------------------------------------------------------------
# synthetic generators (all deterministic given ``seed``)


def friedman1_function(X: np.ndarray) -> np.ndarray:
    """f(x) = 10 sin(pi x1 x2) + 20 (x3 - 1/2)^2 + 10 x4 + 5 x5 on the first five columns (gradient-boosting paper
    eq. 27; 5 x5 rather than 6 x5: config/README.md, "Datasets")."""
    return (10 * np.sin(np.pi * X[:, 0] * X[:, 1]) + 20 * (X[:, 2] - 0.5) ** 2 + 10 * X[:, 3] + 5 * X[:, 4])


def _inputs(rng, n, p, distribution):
    if distribution == "uniform":
        return rng.uniform(0.0, 1.0, size=(n, p))
    if distribution == "normal":
        return rng.standard_normal(size=(n, p))
    raise ConfigError(f"input distribution must be 'uniform' or 'normal', not {distribution!r}")


@loader("friedman1")
def friedman1(n_samples: int = 2300, n_features: int = 10, noise: float = 1.0, seed: int = 0) -> Dataset:
    """Classic Friedman1: x ~ U(0,1)^p (only 5 relevant), y = f(x) + N(0, noise^2)."""
    if n_features < 5:
        raise ConfigError("friedman1 needs n_features >= 5")
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n_samples, n_features))
    y = friedman1_function(X) + noise * rng.standard_normal(n_samples)
    return Dataset("friedman1", X.astype(np.float32), y[:, None], "regression",
                   {"generator": "friedman1", "seed": seed, "noise": noise})


@loader("friedman1_multioutput")
def friedman1_multioutput(kind: str = "chain", n_samples: int = 4300, n_outputs: int = 16,
                          n_noise_outputs: int = 0, input_distribution: str = "uniform", n_irrelevant_inputs: int = 0,
                          seed: int = 0) -> Dataset:
    """The gradient-boosting paper's friedman1-{chain, group, ind} (eqs. 29-32).

    chain: y_1 = f(x) + e_1, y_j = y_{j-1} + e_j; group: y_j = f(x) + e_j; ind: x has 5d columns and output j uses
    its own block of five (columns 5(j-1)..5j-1). e ~ N(0, I). Inputs are U(0,1) by default,
    ``input_distribution="normal"`` gives N(0, I) (why: config/README.md, "Datasets").
    ``n_noise_outputs`` appends that many outputs that are row permutations of original outputs (the noisy-output
    study): output j's noise copy permutes output j mod d with its own permutation.
    ``n_irrelevant_inputs`` appends that many inputs of the same distribution that no output depends on (the
    thesis' appendix defines Friedman1 with p = 10, five of them irrelevant; the chapter's text gives x five
    columns, our default): drawn after everything else, so the other columns and outputs are those of the
    default reading.
    """
    if n_irrelevant_inputs < 0:
        raise ConfigError(f"friedman1_multioutput: n_irrelevant_inputs must be >= 0, not {n_irrelevant_inputs}")
    rng = np.random.default_rng(seed)
    d = n_outputs
    p = 5 * d if kind == "ind" else 5
    X = _inputs(rng, n_samples, p, input_distribution)
    eps = rng.standard_normal(size=(n_samples, d))
    if kind == "chain":
        Y = friedman1_function(X)[:, None] + np.cumsum(eps, axis=1)
    elif kind == "group":
        Y = friedman1_function(X)[:, None] + eps
    elif kind == "ind":
        Y = np.column_stack([friedman1_function(X[:, 5 * j:5 * j + 5]) for j in range(d)]) + eps
    else:
        raise ConfigError(f"friedman1_multioutput: kind must be chain, group or ind, not {kind!r}")
    if n_noise_outputs:
        noise = [Y[rng.permutation(n_samples), j % d] for j in range(n_noise_outputs)]
        Y = np.column_stack([Y, *noise])
    meta = {"generator": f"friedman1-{kind}", "seed": seed, "input_distribution": input_distribution,
            "n_noise_outputs": n_noise_outputs}
    if n_irrelevant_inputs:
        X = np.column_stack([X, _inputs(rng, n_samples, n_irrelevant_inputs, input_distribution)])
        meta["n_irrelevant_inputs"] = n_irrelevant_inputs
    return Dataset(f"friedman1_{kind}", X.astype(np.float32), Y, "multioutput_regression", meta)


@loader("two_norm")
def two_norm(n_samples: int = 2300, n_features: int = 20, seed: int = 0) -> Dataset:
    """Breiman's Two-norm: equiprobable classes, x ~ N(-a 1, I) or N(+a 1, I) with a = 2 / sqrt(p).
    Bayes error Phi(-2) ~ 0.0228 for p = 20."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, size=n_samples)
    a = 2.0 / np.sqrt(n_features)
    X = rng.standard_normal(size=(n_samples, n_features)) + np.where(y[:, None] == 1, a, -a)
    return Dataset("two_norm", X.astype(np.float32), y[:, None].astype(np.float64), "binary",
                   {"generator": "two_norm", "seed": seed})


@loader("multilabel")
def multilabel(n_samples: int = 2000, n_features: int = 50, n_labels: int = 40, mean_labels: float = 4.0,
               n_informative: int = 10, seed: int = 0) -> Dataset:
    """A multi-label problem with correlated labels: each label is a noisy threshold of a random linear function of
    a small shared latent space, calibrated so a row has about ``mean_labels`` positives. Y is sparse 0/1."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal(size=(n_samples, n_features))
    latent_dim = min(5, n_informative)
    W1 = rng.standard_normal(size=(n_informative, latent_dim))
    latent = X[:, :n_informative] @ W1 / np.sqrt(n_informative)
    W2 = rng.standard_normal(size=(latent_dim, n_labels))
    scores = latent @ W2 / np.sqrt(latent_dim) + 0.5 * rng.standard_normal(size=(n_samples, n_labels))
    # per-label thresholds: label frequencies decay geometrically, summing to about mean_labels per row
    freqs = np.geomspace(1.0, 0.05, n_labels)
    freqs *= mean_labels / freqs.sum()
    quantiles = 1 - np.clip(freqs, 1e-3, 0.95)
    thresholds = np.array([np.quantile(scores[:, j], quantiles[j]) for j in range(n_labels)])
    Y = (scores > thresholds).astype(np.float64)
    meta = {"generator": "multilabel", "seed": seed, "mean_labels": mean_labels}
    return Dataset("multilabel", X.astype(np.float32), sp.csr_matrix(Y), "multilabel", meta)


@loader("sparse_inputs")
def sparse_inputs(n_samples: int = 2000, n_features: int = 1000, density: float = 0.01, n_informative: int = 20,
                  seed: int = 0) -> Dataset:
    """Binary classification on sparse non-negative inputs (tf-idf like) with a given input density; the class is
    the sign of a sparse linear function of the inputs. X is CSR."""
    rng = np.random.default_rng(seed)
    X = sp.random(n_samples, n_features, density=density, format="csr", random_state=rng,
                  data_rvs=lambda k: rng.exponential(1.0, size=k)).astype(np.float32)
    w = np.zeros(n_features)
    w[rng.choice(n_features, size=min(n_informative, n_features), replace=False)] = rng.standard_normal(
        min(n_informative, n_features))
    margin = X @ w
    y = (margin > np.median(margin)).astype(np.float64)
    meta = {"generator": "sparse_inputs", "seed": seed, "density": density}
    return Dataset("sparse_inputs", X, y[:, None], "binary", meta)


@loader("density_sweep")
def density_sweep(density: float, n_samples: int = 100_000, n_features: int = 1_000, seed: int = 0,
                  dense_from: float = 0.5) -> Dataset:
    """The synthetic regression problem of thesis Sec. 8.3.1 (Figs 8.2-8.3) at one input density.

    Every entry of X is non-zero independently with probability ``density`` (so the non-zeros sit at uniformly
    random positions), a non-zero is N(0, 1) in float32, and y ~ U[0, 1] independently of X. The data is meant to
    be fitted and predicted on all rows (protocol ``given``: train = test = every row, as the thesis times
    prediction on the training set). X is returned as CSC, or as a dense C array when ``density >= dense_from``
    (a sparse copy would be no smaller); the runner turns it into whichever layout a variant asks for.
    """
    if isinstance(density, bool) or not isinstance(density, (int, float)) or not 0.0 < float(density) <= 1.0:
        raise ConfigError(f"density_sweep: density must be a number in (0, 1], not {density!r}")
    if n_samples < 1 or n_features < 1:
        raise ConfigError(f"density_sweep: n_samples and n_features must be >= 1 (got {n_samples}, {n_features})")
    density = float(density)
    rng = np.random.default_rng(seed)
    columns, rows, counts = [], [], np.zeros(n_features + 1, dtype=np.int64)
    for j in range(n_features):
        present = np.flatnonzero(rng.random(n_samples) < density) if density < 1.0 else np.arange(n_samples)
        values = rng.standard_normal(present.size).astype(np.float32)
        zero = values == 0  # a draw that rounds to 0 would not be stored: redraw it
        while zero.any():
            values[zero] = rng.standard_normal(int(zero.sum())).astype(np.float32)
            zero = values == 0
        rows.append(present.astype(np.int32))
        columns.append(values)
        counts[j + 1] = present.size
    X = sp.csc_matrix((np.concatenate(columns), np.concatenate(rows), np.cumsum(counts)),
                      shape=(n_samples, n_features))
    del columns, rows
    if density >= dense_from:
        X = np.ascontiguousarray(X.toarray(), dtype=np.float32)
    y = rng.uniform(0.0, 1.0, size=n_samples)
    n_nonzero = int(counts.sum())
    meta = {"generator": "density_sweep", "seed": seed, "density": density,
            "measured_density": n_nonzero / float(n_samples * n_features)}
    everything = np.arange(n_samples)
    return Dataset("density_sweep", X, y[:, None], "regression", meta, [(everything, everything)])


# --------------------------------------------------------------------------------------------------------------
# the lecture slides' teaching problems (CART / bagging / random forests)


def slides_sine_function(x: np.ndarray) -> np.ndarray:
    """The slides' regression function (the Bayes predictor under squared loss): f(x) = (1 - x/2) sin(8x) on [0, 2]."""
    x = np.asarray(x, dtype=np.float64)
    return (1.0 - x / 2.0) * np.sin(8.0 * x)


def _slides_training_noise(n_train: int, sd: float) -> np.ndarray:
    """The training noise exactly as the slides' scripts draw it: a legacy ``RandomState(1)`` that first draws 80 and
    then 16 uniforms for an unrelated toy set it throws away, then ``n_train`` normals of standard deviation ``sd``."""
    rng = np.random.RandomState(1)
    rng.rand(80, 1)
    rng.rand(16)
    return rng.normal(0.0, sd, (n_train, 1)).ravel()


@loader("slides_sine")
def slides_sine(n_train: int = 70, n_test: int = 100_000, n_test_sets: int = 30, noise_variance: float = 0.7,
                training_noise: str = "slides", seed: int = 0) -> Dataset:
    """The lecture slides' bagging / random-forest problem: y = (1 - x/2) sin(8x) + e, e ~ N(0, noise_variance).

    The noise *variance* is 0.7 (the slides' scripts draw with standard deviation sqrt(0.7) and print "Bayes risk
    7.00E-01"), so the Bayes risk under squared loss is ``noise_variance``. Training inputs are the fixed design
    ``linspace(0, 2, n_train)``. Test inputs are x ~ U(0, 2) with fresh noise.

    The rows hold one training set and ``n_test_sets`` independent test sets of ``n_test`` rows each; the dataset's
    given splits pair them, split ``r`` = (the training rows, test set ``r``), so that every repeat of a ``given``
    protocol with ``n_given = n_test_sets`` is scored on its own fresh test set. ``training_noise``:

    - ``"slides"``: one training set whose noise is the slides' own draw (see ``_slides_training_noise``): the exact
      data of the slides, fixed across repeats; only the model seed and the test set vary (as on the slides);
    - ``"redrawn"``: every split gets its own training noise (seeded by ``seed`` and the split), for statistics over
      training samples (e.g. out-of-bag error against test error). Rows are then [train_r, test_r] per split.

    The slides measure test error on 10^6 points; the default ``n_test`` is 10^5 per split so that 30 splits stay a
    36 MB file. Its Monte-Carlo standard error on one split's MSE is about sqrt(2 s^4 + 4 s^2 e) / sqrt(n_test)
    (s^2 the noise variance, e the excess risk): ~0.005 at 10^5 points, ~0.0015 at 10^6.
    """
    if training_noise not in ("slides", "redrawn"):
        raise ConfigError(f"slides_sine: training_noise must be 'slides' or 'redrawn', not {training_noise!r}")
    if n_train < 2 or n_test < 1 or n_test_sets < 1 or not noise_variance >= 0:
        raise ConfigError(f"slides_sine: need n_train >= 2, n_test >= 1, n_test_sets >= 1 and noise_variance >= 0 "
                          f"(got {n_train}, {n_test}, {n_test_sets}, {noise_variance})")
    sd = float(np.sqrt(noise_variance))
    x_train = np.linspace(0.0, 2.0, n_train)
    f_train = slides_sine_function(x_train)
    xs, ys, given = [], [], []
    start = 0
    if training_noise == "slides":
        xs.append(x_train)
        ys.append(f_train + _slides_training_noise(n_train, sd))
        train_rows = np.arange(n_train)
        start = n_train
    for r in range(n_test_sets):
        if training_noise == "redrawn":
            noise = np.random.default_rng([seed, r, 1]).normal(0.0, sd, n_train)
            xs.append(x_train)
            ys.append(f_train + noise)
            train_rows = np.arange(start, start + n_train)
            start += n_train
        rng = np.random.default_rng([seed, r, 0])
        # the target is computed from the stored float32 input, so f is exactly the Bayes predictor of the rows
        x = rng.uniform(0.0, 2.0, n_test).astype(np.float32).astype(np.float64)
        xs.append(x)
        ys.append(slides_sine_function(x) + rng.normal(0.0, sd, n_test))
        given.append((train_rows, np.arange(start, start + n_test)))
        start += n_test
    X = np.concatenate(xs).astype(np.float32)[:, None]
    Y = np.concatenate(ys)[:, None]
    meta = {"generator": "slides_sine", "function": "(1 - x/2) sin(8x)", "noise_variance": noise_variance,
            "bayes_risk": noise_variance, "n_train": n_train, "n_test": n_test, "n_test_sets": n_test_sets,
            "training_noise": training_noise, "seed": seed}
    return Dataset("slides_sine", X, Y, "regression", meta, given)


FISH_FEATURES = ("length", "weight", "birth_hour")


def fish_samples(n_per_class: int = 400, blurred: bool = True, seed=0) -> tuple[np.ndarray, np.ndarray]:
    """The slides' fish data: ``n_per_class`` tuna (class 0) then as many salmon (class 1).

    length (cm) ~ N(45, 6) for tuna, N(30, 6) for salmon; weight (kg) ~ N(4, 1) for salmon and N(6, 3) for tuna
    (``blurred``) or N(7, 1.5); the blurred version adds an uninformative birth hour ~ U(0, 10). Returns X (n, 2 or 3)
    float64 and the class vector."""
    rng = np.random.default_rng(seed)
    n = n_per_class
    length = np.concatenate([rng.normal(45.0, 6.0, n), rng.normal(30.0, 6.0, n)])
    tuna_weight = rng.normal(6.0, 3.0, n) if blurred else rng.normal(7.0, 1.5, n)
    weight = np.concatenate([tuna_weight, rng.normal(4.0, 1.0, n)])
    columns = [length, weight]
    if blurred:
        columns.append(rng.uniform(0.0, 10.0, 2 * n))
    return np.column_stack(columns), np.repeat([0.0, 1.0], n)


@loader("fish")
def fish(n_per_class: int = 400, blurred: bool = True, seed: int = 0) -> Dataset:
    """The lecture slides' tuna / salmon classification example (see :func:`fish_samples`): binary, class 1 = salmon."""
    X, y = fish_samples(n_per_class, blurred, seed)
    names = list(FISH_FEATURES[:X.shape[1]])
    meta = {"generator": "fish", "blurred": blurred, "seed": seed, "feature_names": names,
            "classes": ["tuna", "salmon"]}
    return Dataset("fish", X.astype(np.float32), y[:, None], "binary", meta)
