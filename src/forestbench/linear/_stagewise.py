"""Incremental forward stagewise regression (FS_eps) on a sparse design, with the whole path kept compactly.

FS_eps (Hastie, Taylor, Tibshirani & Walther 2007, "Forward stagewise regression and the monotone lasso"; ESL
Alg. 3.4) starts from the constant model and, at each step, moves the coefficient of the standardised column most
correlated with the residual by ``eps`` in the direction of that correlation. After ``s`` steps the l1 norm of the
coefficients is at most ``t = s * eps``; as ``eps -> 0`` the path is the monotone Lasso (in the signed-expanded set
``{z_j, -z_j}`` every coefficient is non-decreasing in ``t``). The thesis (Sec. 7.1) uses it with ``eps = 0.01``.

The path is stored as the list of (column, signed increment) of its steps, so the model at any ``t = s * eps`` is
recovered (or evaluated on held-out rows) without refitting.

**Column scaling** (why the default: config/README.md, "l1-compressed extra-trees"): ``"standardize"`` (default)
centres every column and scales it to unit variance, ``"unit_norm"`` centres and scales to unit Euclidean norm,
``"none"`` only centres. Columns of zero variance (a tree's root, any node every sample reaches) are never
selected. Outputs are whitened (zero mean, unit variance) before the path.
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from forestbench.linear import _fs

__all__ = ["ForwardStagewisePath", "forward_stagewise_path", "COLUMN_SCALINGS"]

COLUMN_SCALINGS = ("standardize", "unit_norm", "none")
_VAR_TOL = 1e-12


def _as_csr_csc(Z):
    if not sp.issparse(Z):
        Z = np.asarray(Z, dtype=np.float64)
        if Z.ndim != 2:
            raise ValueError(f"Z must be 2-D, got shape {Z.shape}")
    csr = sp.csr_matrix(Z, dtype=np.float64)
    csr.sum_duplicates()
    csc = csr.tocsc()
    csc.sort_indices()
    return csr, csc


def _arrays(M):
    return (np.ascontiguousarray(M.data, dtype=np.float64), np.ascontiguousarray(M.indices, dtype=np.intp),
            np.ascontiguousarray(M.indptr, dtype=np.intp))


def column_scaling_factors(Z, column_scaling="standardize"):
    """``(mu, inv_sigma)`` of the columns of ``Z``: mean and inverse scale (0 for a constant column)."""
    if column_scaling not in COLUMN_SCALINGS:
        raise ValueError(f"column_scaling must be one of {list(COLUMN_SCALINGS)}, got {column_scaling!r}")
    n = Z.shape[0]
    Zs = Z if sp.issparse(Z) else sp.csr_matrix(Z)
    mu = np.asarray(Zs.sum(axis=0), dtype=np.float64).ravel() / n
    sq = np.asarray(Zs.multiply(Zs).sum(axis=0), dtype=np.float64).ravel() / n
    var = np.maximum(sq - mu * mu, 0.0)
    constant = var <= _VAR_TOL * np.maximum(1.0, sq)
    if column_scaling == "standardize":
        sigma = np.sqrt(var)
    elif column_scaling == "unit_norm":
        sigma = np.sqrt(var * n)
    else:
        sigma = np.ones_like(var)
    inv = np.zeros_like(var)
    inv[~constant] = 1.0 / sigma[~constant]
    return mu, inv


@dataclass
class ForwardStagewisePath:
    """A stored FS_eps path. Step ``s`` moved the coefficient of column ``steps_j[s]`` by ``steps_delta[s]`` (one
    entry per output) in the scaled space ``z~ = (z - mu) * inv_sigma`` with whitened outputs
    ``(y - y_mean) / y_scale``."""

    steps_j: np.ndarray
    steps_delta: np.ndarray
    max_corr: np.ndarray
    mu: np.ndarray
    inv_sigma: np.ndarray
    y_mean: np.ndarray
    y_scale: np.ndarray
    epsilon: float
    column_scaling: str

    @property
    def n_steps(self):
        return int(self.steps_j.shape[0])

    @property
    def n_features(self):
        return int(self.mu.shape[0])

    @property
    def n_outputs(self):
        return int(self.y_mean.shape[0])

    @property
    def t(self):
        """l1 budgets of the path points 0, eps, 2 eps, ... (one per step, plus the constant model)."""
        return self.epsilon * np.arange(self.n_steps + 1)

    def _check_steps(self, n_steps):
        if n_steps is None:
            return self.n_steps
        if not isinstance(n_steps, numbers.Integral) or n_steps < 0:
            raise ValueError(f"n_steps must be a non-negative int, got {n_steps!r}")
        return min(int(n_steps), self.n_steps)

    def scaled_coef(self, n_steps=None):
        """``(q, d)`` coefficients of the scaled columns after ``n_steps`` steps (default: all)."""
        s = self._check_steps(n_steps)
        beta = np.zeros((self.n_features, self.n_outputs))
        np.add.at(beta, self.steps_j[:s], self.steps_delta[:s])
        return beta

    def linear_model(self, n_steps=None):
        """``(w, b)``: the model ``b + Z w`` on the raw columns and the original output scale."""
        beta = self.scaled_coef(n_steps)
        w = beta * self.inv_sigma[:, None] * self.y_scale[None, :]
        b = self.y_mean - self.y_scale * ((beta * (self.mu * self.inv_sigma)[:, None]).sum(axis=0))
        return w, b

    def predict(self, Z, n_steps=None):
        """``(n, d)`` predictions of the linear model after ``n_steps`` steps."""
        w, b = self.linear_model(n_steps)
        Zs = sp.csr_matrix(Z) if sp.issparse(Z) else np.asarray(Z, dtype=np.float64)
        return np.asarray(Zs @ w) + b[None, :]

    def losses(self, Z, Y, loss="squared"):
        """Loss on rows ``(Z, Y)`` of the model at every path point (``n_steps + 1`` values, t = 0 first).

        ``"squared"``: mean squared error in units of the training output scale; ``"zero_one"``: error rate of
        the score thresholded at 0.5 against 0/1 labels."""
        if loss not in ("squared", "zero_one"):
            raise ValueError(f"loss must be 'squared' or 'zero_one', got {loss!r}")
        Y = np.asarray(Y, dtype=np.float64)
        if Y.ndim == 1:
            Y = Y.reshape(-1, 1)
        if Z.shape[1] != self.n_features or Y.shape != (Z.shape[0], self.n_outputs):
            raise ValueError(f"Z {Z.shape} / Y {Y.shape} do not match a path on {self.n_features} columns and "
                             f"{self.n_outputs} outputs")
        csc = sp.csc_matrix(Z, dtype=np.float64)
        csc.sort_indices()
        data, indices, indptr = _arrays(csc)
        return _fs.path_losses(data, indices, indptr, Z.shape[0], self.mu, self.inv_sigma, self.steps_j,
                               np.ascontiguousarray(self.steps_delta), np.ascontiguousarray(Y), self.y_mean,
                               self.y_scale, 1 if loss == "zero_one" else 0)


def forward_stagewise_path(Z, Y, *, epsilon=0.01, max_steps=1000, column_scaling="standardize", tol=1e-10,
                           y_scale=None):
    """FS_eps path of outputs ``Y`` (n,) or (n, d) on the columns of ``Z`` (sparse or dense, n x q).

    Runs ``max_steps`` steps of size ``epsilon`` (t up to ``max_steps * epsilon``), or fewer: the path ends when a
    step of size ``epsilon`` on the most correlated column would no longer lower the training squared error
    (``|correlation| <= epsilon / 2`` for standardised columns; the path has then reached the least-squares fit up
    to the step size, and FS_eps would only oscillate) or when no column is correlated with the residual any more
    (largest summed |correlation| <= ``tol``). Outputs are whitened with
    their mean and standard deviation (``y_scale`` overrides the latter). Multi-output: the column with the
    largest summed |correlation| over the outputs is chosen and each output moves by ``eps * sign``.
    """
    if not isinstance(epsilon, numbers.Real) or not epsilon > 0 or not np.isfinite(epsilon):
        raise ValueError(f"epsilon must be a positive float, got {epsilon!r}")
    if not isinstance(max_steps, numbers.Integral) or max_steps < 0:
        raise ValueError(f"max_steps must be a non-negative int, got {max_steps!r}")
    Y = np.asarray(Y, dtype=np.float64)
    if Y.ndim == 1:
        Y = Y.reshape(-1, 1)
    if Y.ndim != 2 or Y.shape[0] != Z.shape[0]:
        raise ValueError(f"Y has shape {Y.shape}, expected ({Z.shape[0]},) or ({Z.shape[0]}, d)")
    if not np.all(np.isfinite(Y)):
        raise ValueError("Y contains NaN or infinite values")
    n = Z.shape[0]
    if n < 2:
        raise ValueError("FS_eps needs at least 2 samples")
    csr, csc = _as_csr_csc(Z)
    mu, inv_sigma = column_scaling_factors(csr, column_scaling)
    y_mean = Y.mean(axis=0)
    scale = Y.std(axis=0) if y_scale is None else np.broadcast_to(np.asarray(y_scale, dtype=np.float64),
                                                                   (Y.shape[1],)).copy()
    scale = np.where(scale > 0, scale, 1.0)
    Yw = (Y - y_mean) / scale
    H = np.ascontiguousarray(np.asarray(csr.T @ Yw), dtype=np.float64)
    sq = np.asarray(csr.multiply(csr).sum(axis=0), dtype=np.float64).ravel()
    sqnorm = (sq - n * mu * mu) * inv_sigma * inv_sigma  # ||z~_j||^2 of the centred, scaled columns
    steps_j, steps_delta, max_corr = _fs.forward_stagewise(*_arrays(csc), *_arrays(csr), mu, inv_sigma, sqnorm, H,
                                                           n, float(epsilon), int(max_steps), float(tol))
    return ForwardStagewisePath(steps_j, steps_delta, max_corr, mu, inv_sigma, y_mean, scale, float(epsilon),
                                column_scaling)
