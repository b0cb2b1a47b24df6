"""Random (and PCA) projections of the output space, for trees grown on ``Z = Y Φᵀ``.

Every family returns a matrix ``Φ`` of shape ``(q, d)`` (``q`` = ``n_components``, ``d`` = number of outputs); the
projected outputs of a sample ``y`` (a row of ``Y``) are ``z = Φ y``, i.e. ``Z = Y Φᵀ`` for the whole matrix.
The families and their exact entry distributions (Joly et al. 2014, thesis ch. 5):

``"gaussian"``
    ``Φ_ij`` i.i.d. ``N(0, 1/q)``. Dense ``ndarray``.
``"rademacher"`` (sparse Rademacher with ``s = 1``)
    ``Φ_ij = ±1/√q`` with probability 1/2 each. Dense ``ndarray``.
``"achlioptas"`` (``s = 3``)
    ``Φ_ij = ±√(3/q)`` with probability 1/6 each, 0 with probability 2/3. ``scipy.sparse`` CSR.
``"sparse"`` (Li et al., ``s = √d``)
    ``Φ_ij = ±√(s/q)`` with probability ``1/(2s)`` each, 0 otherwise. CSR. The paper's "about 2%" of non-zeros
    disagrees with ``1/√d`` (3.2% on delicious); we follow the formula. ``density=`` overrides ``1/s``.
``"subsample"`` (random output subspace)
    each row of ``Φ`` is a row of the identity ``I_d`` scaled by ``√(d/q)``: component ``i`` is one original label.
    Rows are drawn **without** replacement when ``q <= d`` (so ``q = d`` is a permutation of the outputs and grows the
    same trees as the original outputs) and with replacement when ``q > d``; ``with_replacement=True`` forces the
    reference implementation's default. CSR.
``"hadamard"`` (sub-sampled Hadamard)
    ``q`` rows and ``d`` columns, both drawn without replacement, of the ``N × N`` Sylvester–Hadamard matrix,
    ``N = 2^ceil(log2(max(q, d)))``, scaled by ``1/√q`` (entries ``±1/√q``). The entries are computed from the
    closed form ``H_ij = (-1)^popcount(i & j)`` so the ``N × N`` matrix is never built. Dense.
``"pca"``
    the ``q`` leading principal axes of the (centered) output matrix ``Y``, in decreasing order of eigenvalue,
    unwhitened (orthonormal rows). Deterministic given ``Y`` (up to the sign of each axis, which is fixed so that
    each axis' largest-magnitude entry is positive), hence identical for every tree. Dense.

Global positive scalings (``1/√q``, ``√(s/q)``, ``√(d/q)``) never change which split is best; they are kept exactly as
specified so that ``E‖Φy‖² = ‖y‖²`` for the random families (Johnson–Lindenstrauss normalisation).
"""
from __future__ import annotations

import math
import numbers

import numpy as np
import scipy.sparse as sp

from forestbench.errors import ConfigError


class ParameterError(ConfigError, ValueError):
    """An invalid estimator or projection parameter (a ``ConfigError`` for the CLI, a ``ValueError`` for
    scikit-learn style callers)."""

__all__ = [
    "PROJECTION_KINDS",
    "ParameterError",
    "make_projection",
    "project_outputs",
    "resolve_n_components",
    "split_projection",
]

PROJECTION_KINDS = ("gaussian", "rademacher", "achlioptas", "sparse", "subsample", "hadamard", "pca")

# named sizes accepted by ``resolve_n_components``; each maps d -> q
_NAMED_COMPONENTS = {
    # thesis tables: "ln d rounded to the nearest integer", header floor(0.5 + ln d)
    "ln_d": lambda d: math.floor(0.5 + math.log(d)),
    # k x q figures: floor(0.5 + 2 ln d) (config/README.md, D16)
    "2ln_d": lambda d: math.floor(0.5 + 2.0 * math.log(d)),
    "sqrt_d": lambda d: math.floor(0.5 + math.sqrt(d)),
}


def resolve_n_components(n_components, n_outputs):
    """Turn a user value of ``n_components`` into the integer ``q`` for ``d = n_outputs`` outputs.

    - ``int`` (not ``bool``) ``>= 1``: used as is (``q > d`` is allowed; Gaussian and Rademacher families accept it);
    - ``float`` in ``(0, 1]``: a fraction of ``d``, ``q = max(1, floor(0.5 + fraction * d))`` (so ``1.0`` gives ``d``);
    - ``"ln_d"``: ``max(1, floor(0.5 + ln d))`` as in thesis Tables 5.1/5.2; ``"2ln_d"``: ``floor(0.5 + 2 ln d)``;
      ``"sqrt_d"``: ``floor(0.5 + √d)``.
    """
    d = _check_n_outputs(n_outputs)
    if isinstance(n_components, str):
        try:
            rule = _NAMED_COMPONENTS[n_components]
        except KeyError:
            raise ParameterError(
                f"n_components={n_components!r} is not a known name; use an int, a fraction in (0, 1] or one of "
                f"{sorted(_NAMED_COMPONENTS)}"
            ) from None
        return max(1, int(rule(d)))
    if isinstance(n_components, (bool, np.bool_)):
        raise ParameterError(f"n_components must be an int, a float fraction or a name, got the boolean {n_components}")
    if isinstance(n_components, numbers.Integral):
        if n_components < 1:
            raise ParameterError(f"n_components must be >= 1, got {n_components}")
        return int(n_components)
    if isinstance(n_components, numbers.Real):
        frac = float(n_components)
        if not (0.0 < frac <= 1.0):
            raise ParameterError(f"a float n_components is a fraction of d and must lie in (0, 1], got {frac}")
        return max(1, math.floor(0.5 + frac * d))
    raise ParameterError(f"n_components must be an int, a float fraction or a name, got {type(n_components).__name__}")


def _check_n_outputs(n_outputs):
    if isinstance(n_outputs, (bool, np.bool_)) or not isinstance(n_outputs, numbers.Integral) or n_outputs < 1:
        raise ParameterError(f"n_outputs must be a positive integer, got {n_outputs!r}")
    return int(n_outputs)


def _rng(random_state):
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        # derive a Generator deterministically from the legacy state
        return np.random.default_rng(random_state.randint(0, 2**31 - 1, size=4))
    return np.random.default_rng(random_state)


def make_projection(kind, n_components, n_outputs, random_state=None, Y=None, **options):
    """Draw a projection matrix ``Φ`` of shape ``(q, d)`` of family ``kind``.

    Parameters
    ----------
    kind : str
        One of :data:`PROJECTION_KINDS`.
    n_components : int, float or str
        ``q``, resolved by :func:`resolve_n_components`.
    n_outputs : int
        ``d``.
    random_state : None, int, ``numpy.random.SeedSequence``, ``Generator`` or ``RandomState``
        Source of randomness; the same value always gives the same ``Φ``.
    Y : array or sparse matrix of shape (n, d), optional
        The learning-set outputs; required by ``"pca"`` only.
    **options
        ``density`` (``"sparse"`` only, overriding ``1/√d``) and ``with_replacement`` (``"subsample"`` only).

    Returns
    -------
    ``numpy.ndarray`` (float64) for the dense families, ``scipy.sparse.csr_matrix`` (float64) for ``"achlioptas"``,
    ``"sparse"`` and ``"subsample"``.
    """
    d = _check_n_outputs(n_outputs)
    q = resolve_n_components(n_components, d)
    allowed = {"sparse": {"density"}, "subsample": {"with_replacement"}}.get(kind, set())
    unknown = set(options) - allowed
    if unknown:
        raise ParameterError(f"projection {kind!r} does not take option(s) {sorted(unknown)}")
    rng = _rng(random_state)
    if kind == "gaussian":
        return rng.standard_normal((q, d)) / math.sqrt(q)
    if kind == "rademacher":
        signs = rng.integers(0, 2, size=(q, d), dtype=np.int8) * 2 - 1
        return signs.astype(np.float64) / math.sqrt(q)
    if kind == "achlioptas":
        return _sparse_rademacher(rng, q, d, density=1.0 / 3.0)
    if kind == "sparse":
        density = options.get("density", 1.0 / math.sqrt(d))
        if not (0.0 < density <= 1.0):
            raise ParameterError(f"projection 'sparse': density must lie in (0, 1], got {density}")
        return _sparse_rademacher(rng, q, d, density=float(density))
    if kind == "subsample":
        return _subsample(rng, q, d, options.get("with_replacement", None))
    if kind == "hadamard":
        return _subsampled_hadamard(rng, q, d)
    if kind == "pca":
        if Y is None:
            raise ParameterError("projection 'pca' needs the output matrix Y")
        return _pca(Y, q, d)
    raise ParameterError(f"unknown output projection {kind!r}; choose one of {list(PROJECTION_KINDS)} or None")


def _sparse_rademacher(rng, q, d, density):
    """Entries ±√(s/q) w.p. density/2 each (s = 1/density), 0 otherwise, i.i.d.; built row by row in CSR.

    Drawing, for every row, a Binomial(d, density) number of non-zeros, then that many distinct columns uniformly
    and independent fair signs, gives exactly i.i.d. Bernoulli(density) supports, without touching the zeros.
    """
    scale = math.sqrt(1.0 / (density * q))
    if density >= 1.0:
        counts = np.full(q, d, dtype=np.int64)
    else:
        counts = rng.binomial(d, density, size=q).astype(np.int64)
    indptr = np.zeros(q + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    indices = np.empty(indptr[-1], dtype=np.int64)
    for i in range(q):
        cols = rng.choice(d, size=counts[i], replace=False) if counts[i] < d else np.arange(d)
        indices[indptr[i]:indptr[i + 1]] = np.sort(cols)
    data = (rng.integers(0, 2, size=indptr[-1]) * 2 - 1).astype(np.float64) * scale
    return sp.csr_matrix((data, indices, indptr), shape=(q, d))


def _subsample(rng, q, d, with_replacement):
    if with_replacement is None:
        with_replacement = q > d
    if not with_replacement and q > d:
        raise ParameterError(f"projection 'subsample' without replacement needs q <= d, got q={q}, d={d}")
    rows = rng.choice(d, size=q, replace=bool(with_replacement))
    data = np.full(q, math.sqrt(d / q))
    return sp.csr_matrix((data, rows.astype(np.int64), np.arange(q + 1, dtype=np.int64)), shape=(q, d))


def _subsampled_hadamard(rng, q, d):
    order = 1 << max(0, math.ceil(math.log2(max(q, d))))
    rows = rng.choice(order, size=q, replace=False).astype(np.uint64)
    cols = rng.choice(order, size=d, replace=False).astype(np.uint64)
    # Sylvester construction: H[i, j] = (-1) ** popcount(i & j)
    parity = np.bitwise_count(np.bitwise_and(rows[:, None], cols[None, :])) & 1
    return (1.0 - 2.0 * parity.astype(np.float64)) / math.sqrt(q)


def _pca(Y, q, d):
    n = Y.shape[0]
    if Y.ndim != 2 or Y.shape[1] != d:
        raise ParameterError(f"projection 'pca': Y has shape {Y.shape}, expected (n, {d})")
    if q > d:
        raise ParameterError(f"projection 'pca' keeps at most d={d} components, got q={q}")
    if sp.issparse(Y):
        Yc = sp.csr_matrix(Y, dtype=np.float64)
        mean = np.asarray(Yc.sum(axis=0)).ravel() / n
        gram = (Yc.T @ Yc).toarray()
    else:
        Yd = np.asarray(Y, dtype=np.float64)
        mean = Yd.sum(axis=0) / n
        gram = Yd.T @ Yd
    cov = (gram - n * np.outer(mean, mean)) / max(n, 1)
    cov = 0.5 * (cov + cov.T)
    eigval, eigvec = np.linalg.eigh(cov)
    order = np.argsort(eigval, kind="stable")[::-1][:q]
    axes = eigvec[:, order].T.copy()
    # fix the arbitrary sign of each axis
    pivot = np.argmax(np.abs(axes), axis=1)
    signs = np.sign(axes[np.arange(q), pivot])
    signs[signs == 0] = 1.0
    return axes * signs[:, None]


def split_projection(projection):
    """The projection a tree splits with: ``projection`` itself, or its 0/1 pattern when it is sparse and its
    non-zeros share one positive value (a random output subspace, scaled by sqrt(d / q)).

    Dividing every split target by the same constant multiplies every candidate's impurity decrease by the same
    square, so it changes no ranking of candidates in exact arithmetic. In floating point it settles ties: on a 0/1
    ``Z`` candidates that tie (frequent with 0/1 targets) tie exactly and the first found wins, as on the labels
    themselves, where on the scaled values their proxies round apart. The pattern also keeps ``Z`` a 0/1 matrix
    where ``Y`` is one, exact under the sparse criterion, which the trees then grow on as CSR
    (``forestbench.tree._classes.labels_for_growth``)."""
    if not sp.issparse(projection) or projection.nnz == 0:
        return projection
    values = projection.data
    if values[0] <= 0 or values[0] == 1 or not np.all(values == values[0]):
        return projection
    pattern = projection.copy()
    pattern.data = np.ones_like(values)
    return pattern


def project_outputs(Y, projection, dense_threshold=0.25):
    """Return ``Z = Y Φᵀ`` (shape ``(n, q)``) cheaply for dense or sparse ``Y`` and ``Φ``.

    A sparse ``Y`` times a dense ``Φᵀ`` costs ``O(nnz(Y) q)`` and gives a dense C-contiguous float64 array. When both
    are sparse the product is kept in CSR unless its density exceeds ``dense_threshold``, in which case it is
    densified (trees on dense split targets are faster than on a nearly full CSR matrix).
    """
    if sp.issparse(Y):
        Y = Y.tocsr()
    if sp.issparse(projection):
        Z = Y @ projection.T.tocsc()
    else:
        Z = Y @ np.asarray(projection, dtype=np.float64).T
    if sp.issparse(Z):
        Z = Z.tocsr()
        n, q = Z.shape
        if n * q == 0 or Z.nnz / (n * q) > dense_threshold:
            return np.ascontiguousarray(Z.toarray(), dtype=np.float64)
        Z.sort_indices()
        return Z.astype(np.float64)
    return np.ascontiguousarray(Z, dtype=np.float64)
