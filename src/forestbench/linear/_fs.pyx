# cython: language_level=3
"""Incremental forward stagewise regression (FS_eps, the monotone Lasso path) on a sparse design.

The design ``Z`` (n x q, CSC and CSR views of the same matrix) is used through its standardised columns
``z~_j = (z_j - mu_j) * inv_sigma_j`` without ever being densified. With ``r`` the (centred) residual, the
correlation of column k is ``c_k = z~_k' r / n = (H_k + S mu_k) inv_sigma_k / n`` where ``H = Z' r`` is kept up to
date from sparse column products ``Z' z_j`` after each step and ``S`` is a scalar carrying the centring terms. A step
on column j costs the non-zeros of the rows of column j plus one pass over the q correlations (for the arg-max).

Multi-output: ``H`` has one column per output; the selected column maximises the summed absolute correlation over
the outputs and every output moves its own coefficient by ``eps * sign(c_jo)``.
"""
import numpy as np
cimport numpy as cnp
from libc.math cimport fabs

from forestbench.tree._utils cimport intp_t, float64_t

cnp.import_array()


def forward_stagewise(const float64_t[::1] csc_data, const intp_t[::1] csc_indices, const intp_t[::1] csc_indptr,
                      const float64_t[::1] csr_data, const intp_t[::1] csr_indices, const intp_t[::1] csr_indptr,
                      const float64_t[::1] mu, const float64_t[::1] inv_sigma, const float64_t[::1] sqnorm,
                      float64_t[:, ::1] H, intp_t n, float64_t eps, intp_t max_steps, float64_t tol):
    """Run at most ``max_steps`` FS_eps steps; ``H`` (q x d) holds ``Z' y_c`` on entry and is updated in place.

    Columns with ``inv_sigma == 0`` (constant columns) are never selected. Stops early when the largest summed
    absolute correlation is <= ``tol``, or when the step on the selected column would not lower the training
    squared error any more: the step changes the residual sum of squares by
    ``sum_o (-2 eps |z~_j' r_o| + eps^2 ||z~_j||^2)``, so the path ends once
    ``2 sum_o |z~_j' r_o| <= d eps ||z~_j||^2`` (``sqnorm[j] = ||z~_j||^2``); from there on FS_eps would only
    oscillate around the least-squares fit. Returns ``(steps_j, steps_delta, max_corr)``: the selected column and the
    signed increment of every output at each step, and the largest summed |correlation| before each step."""
    cdef intp_t q = H.shape[0], d = H.shape[1], step, k, o, j, a, b, i, kk
    cdef float64_t best, score, c, zij, coef
    steps_j_arr = np.empty(max_steps, dtype=np.intp)
    steps_delta_arr = np.zeros((max_steps, d), dtype=np.float64)
    max_corr_arr = np.empty(max_steps, dtype=np.float64)
    S_arr = np.zeros(d, dtype=np.float64)
    cdef intp_t[::1] steps_j = steps_j_arr
    cdef float64_t[:, ::1] delta = steps_delta_arr
    cdef float64_t[::1] max_corr = max_corr_arr, S = S_arr
    cdef float64_t inv_n = 1.0 / n
    cdef intp_t n_steps = 0
    with nogil:
        for step in range(max_steps):
            best = -1.0
            j = -1
            for k in range(q):
                if inv_sigma[k] == 0.0:
                    continue
                score = 0.0
                for o in range(d):
                    score += fabs((H[k, o] + S[o] * mu[k]) * inv_sigma[k])
                if score > best:
                    best = score
                    j = k
            if j < 0:
                break
            if 2.0 * best <= d * eps * sqnorm[j]:
                break
            best *= inv_n
            if best <= tol:
                break
            max_corr[step] = best
            steps_j[step] = j
            for o in range(d):
                c = H[j, o] + S[o] * mu[j]
                if c > 0:
                    delta[step, o] = eps
                elif c < 0:
                    delta[step, o] = -eps
                else:
                    delta[step, o] = 0.0
                S[o] += delta[step, o] * inv_sigma[j] * n * mu[j]
            # H_k -= delta * inv_sigma_j * z_k' z_j, from the rows holding column j
            for a in range(csc_indptr[j], csc_indptr[j + 1]):
                i = csc_indices[a]
                zij = csc_data[a] * inv_sigma[j]
                for b in range(csr_indptr[i], csr_indptr[i + 1]):
                    kk = csr_indices[b]
                    coef = zij * csr_data[b]
                    for o in range(d):
                        H[kk, o] -= delta[step, o] * coef
            n_steps += 1
    return steps_j_arr[:n_steps].copy(), steps_delta_arr[:n_steps].copy(), max_corr_arr[:n_steps].copy()


def path_losses(const float64_t[::1] csc_data, const intp_t[::1] csc_indices, const intp_t[::1] csc_indptr,
                intp_t n_rows, const float64_t[::1] mu, const float64_t[::1] inv_sigma,
                const intp_t[::1] steps_j, const float64_t[:, ::1] delta, const float64_t[:, ::1] Y,
                const float64_t[::1] y_mean, const float64_t[::1] y_scale, int zero_one):
    """Loss on held-out rows after 0, 1, ..., n_steps steps of a stored path (no refit, no densification).

    The model after s steps predicts ``y_mean + y_scale * sum_{u<s} delta_u z~_{j_u}(x)``. ``zero_one=0``: mean
    squared error in units of ``y_scale`` (each output weighs the same); ``1``: misclassification rate of the
    thresholded score (>= 0.5) against 0/1 labels ``Y``."""
    cdef intp_t n_steps = steps_j.shape[0], d = Y.shape[1], s, a, i, o, j
    cdef float64_t err, p, tot
    P_arr = np.zeros((n_rows, d), dtype=np.float64)
    off_arr = np.zeros(d, dtype=np.float64)
    losses_arr = np.empty(n_steps + 1, dtype=np.float64)
    cdef float64_t[:, ::1] P = P_arr
    cdef float64_t[::1] off = off_arr, losses = losses_arr
    cdef float64_t denom = <float64_t> (n_rows * d)
    with nogil:
        for s in range(n_steps + 1):
            if s > 0:
                j = steps_j[s - 1]
                for o in range(d):
                    off[o] -= delta[s - 1, o] * mu[j] * inv_sigma[j]
                for a in range(csc_indptr[j], csc_indptr[j + 1]):
                    i = csc_indices[a]
                    for o in range(d):
                        P[i, o] += delta[s - 1, o] * csc_data[a] * inv_sigma[j]
            tot = 0.0
            for i in range(n_rows):
                for o in range(d):
                    p = y_mean[o] + y_scale[o] * (P[i, o] + off[o])
                    if zero_one:
                        if (p >= 0.5) != (Y[i, o] >= 0.5):
                            tot += 1.0
                    else:
                        err = (Y[i, o] - p) / y_scale[o]
                        tot += err * err
            losses[s] = tot / denom
    return losses_arr
