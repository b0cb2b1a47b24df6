"""Compiled boosting loop of the multi-output gradient boosting family (thesis ch. 6).

One call of :func:`boost` runs every iteration of gradient boosting without the GIL and without per-iteration
Python objects: negative gradient, (projected) split targets, one tree grown by the forestbench tree kernel (the same
``Splitter`` / ``TreeBuilder`` objects are reused: their target buffers are rewritten in place and the node store is
reset), per-output line search, update of the training scores and the append of the tree to flat model buffers.

Algorithms (``algo``):

* ``MORT`` (gbmort): one multi-output tree on the d-dimensional negative gradient; leaves hold d-vectors.
* ``RPO`` (gbrt-rpo): one single-output tree on ``z = phi r`` with a fresh 1 x d projection ``phi`` per iteration;
  the scalar tree is combined with a d-vector of step lengths rho.
* ``RELABEL`` (gbrt-relabel-rpo): a tree grown on ``q`` projected gradients whose leaves hold the means of the
  *unprojected* gradient (the kernel's leaf targets, computed in the same pass that creates the leaf).
* ``ST`` (st-gbrt / br-gbrt): one single-output model per output, trees fitted round-robin over the outputs; one
  stage is one round of d trees.

Model layout (returned as numpy arrays): the nodes of all trees concatenated (``node_ptr`` gives each tree's range,
child ids are local to a tree), the leaf values concatenated (``leaf_ptr`` in leaves; ``width`` values per leaf),
``coef`` (rpo: ``learning_rate * rho`` per tree and output) and ``output`` (st: the output a tree predicts).
Leaf values already include ``learning_rate * rho`` except for rpo, where they are multiplied by ``coef`` at
prediction time (one scalar per leaf plus one d-vector per tree).

Line search: square loss in closed form (``rho_j = sum r g / sum g^2``; 0 when the tree predicts 0 everywhere);
absolute loss exactly, as the weighted median of ``(y - f) / g`` with weights ``|g|`` (the minimiser of the same
convex piecewise-linear objective a Brent search would approach); logistic loss by a root search on the
derivative of the (convex) loss along the step, kept inside the derivative's sign-change bracket: Halley steps for
a tree step (the default), Newton steps for a general direction, or Brent's method (``brent=True``).
"""
from libc.stdlib cimport malloc, realloc, free
from libc.string cimport memcpy, memset
from libc.math cimport exp, log, log1p, fabs, sqrt, cos, INFINITY
from libc.stdint cimport uint64_t
from posix.time cimport clock_gettime, timespec, CLOCK_MONOTONIC

import numpy as np

from forestbench.tree._utils cimport (intp_t, float32_t, float64_t, int32_t, rng_next, rand_int, rand_uniform,
                                      seed_state, FEATURE_THRESHOLD, PROXY_RTOL, EPSILON, TREE_LEAF,
                                      TREE_UNDEFINED, beats, same_value, midpoint_threshold, grow_buffer)
from forestbench.tree._tree cimport TreeBuilder, Node
from forestbench.tree._splitter cimport Splitter
from forestbench.tree._criterion cimport DenseCriterion, LeafTargets
from forestbench.tree._partitioner cimport DensePartitioner

cdef extern from "_logistic_pass.h" nogil:
    # one pass of the logistic line search, eight lanes wide, vectorised where the processor allows (same bits)
    void fb_logistic_pass(const float64_t* y, const float64_t* e, const intp_t* leaf, const float64_t* tab,
                          const float64_t* g, intp_t n_leaves, intp_t n, float64_t* out)
    int fb_logistic_pass_level(int wanted)
    void fb_logistic_update(const float64_t* y, float64_t* E, const intp_t* leaf, const float64_t* tab,
                            intp_t n_leaves, intp_t n)
    void fb_project_gradient(const float64_t* y, const float64_t* E, float64_t v, float64_t* z, intp_t zstride,
                             intp_t n)

cdef enum:
    SQUARE = 0
    ABSOLUTE = 1
    LOGISTIC = 2

cdef enum:
    MORT = 0
    RPO = 1
    RELABEL = 2
    ST = 3

cdef enum:
    P_SUBSAMPLE = 0
    P_GAUSSIAN = 1
    P_RADEMACHER = 2
    P_ACHLIOPTAS = 3
    P_SPARSE = 4

LOSSES = {"square": SQUARE, "absolute": ABSOLUTE, "logistic": LOGISTIC}
ALGORITHMS = {"mort": MORT, "rpo": RPO, "relabel": RELABEL, "st": ST}
PROJECTIONS = {"subsample": P_SUBSAMPLE, "gaussian": P_GAUSSIAN, "rademacher": P_RADEMACHER,
               "achlioptas": P_ACHLIOPTAS, "sparse": P_SPARSE}

cdef intp_t ESTATE_REFRESH = 50


cdef inline float64_t _now() noexcept nogil:
    cdef timespec ts
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return ts.tv_sec + 1e-9 * ts.tv_nsec


# --------------------------------------------------------------------------------------------------------------
# losses (one output = one contiguous column of n samples)

cdef inline float64_t _logistic_loss(float64_t y, float64_t f) noexcept nogil:
    # log(1 + exp(-2 y f)), y in {-1, +1}, without overflow
    cdef float64_t t = -2.0 * y * f
    if t > 0:
        return t + log1p(exp(-t))
    return log1p(exp(t))


cdef float64_t _column_loss(int loss, const float64_t* y, const float64_t* f, intp_t n) noexcept nogil:
    cdef intp_t i
    cdef float64_t s = 0.0, e
    if loss == SQUARE:
        for i in range(n):
            e = y[i] - f[i]
            s += 0.5 * e * e
    elif loss == ABSOLUTE:
        for i in range(n):
            s += fabs(y[i] - f[i])
    else:
        for i in range(n):
            s += _logistic_loss(y[i], f[i])
    return s


cdef void _column_gradient(int loss, const float64_t* y, const float64_t* f, float64_t* r,
                           intp_t n) noexcept nogil:
    """Negative gradient of the loss at f."""
    cdef intp_t i
    cdef float64_t e
    if loss == SQUARE:
        for i in range(n):
            r[i] = y[i] - f[i]
    elif loss == ABSOLUTE:
        for i in range(n):
            e = y[i] - f[i]
            r[i] = 1.0 if e > 0 else (-1.0 if e < 0 else 0.0)
    else:
        for i in range(n):
            r[i] = 2.0 * y[i] / (1.0 + exp(2.0 * y[i] * f[i]))


# --------------------------------------------------------------------------------------------------------------
# line search along one output

cdef float64_t _logistic_slope(const float64_t* y, const float64_t* f, const float64_t* g, intp_t n,
                               float64_t rho) noexcept nogil:
    """d/drho of sum_i log(1 + exp(-2 y_i (f_i + rho g_i)))."""
    cdef intp_t i
    cdef float64_t s = 0.0
    for i in range(n):
        if g[i] != 0.0:
            s -= g[i] * 2.0 * y[i] / (1.0 + exp(2.0 * y[i] * (f[i] + rho * g[i])))
    return s


cdef float64_t _brent_root(const float64_t* y, const float64_t* f, const float64_t* g, intp_t n,
                           float64_t a, float64_t fa, float64_t b, float64_t fb, float64_t tol) noexcept nogil:
    """Brent's (1973) root finder on the logistic slope, given a bracket with fa * fb <= 0."""
    cdef float64_t c = a, fc = fa, d = b - a, e = b - a, m, p, q, r, s, tol1
    cdef int it
    for it in range(200):
        if (fb > 0 and fc > 0) or (fb < 0 and fc < 0):
            c = a
            fc = fa
            d = b - a
            e = d
        if fabs(fc) < fabs(fb):
            a = b
            b = c
            c = a
            fa = fb
            fb = fc
            fc = fa
        tol1 = 2.0 * 2.220446049250313e-16 * fabs(b) + 0.5 * tol
        m = 0.5 * (c - b)
        if fabs(m) <= tol1 or fb == 0.0:
            return b
        if fabs(e) >= tol1 and fabs(fa) > fabs(fb):
            s = fb / fa
            if a == c:
                p = 2.0 * m * s
                q = 1.0 - s
            else:
                q = fa / fc
                r = fb / fc
                p = s * (2.0 * m * q * (q - r) - (b - a) * (r - 1.0))
                q = (q - 1.0) * (r - 1.0) * (s - 1.0)
            if p > 0:
                q = -q
            else:
                p = -p
            if 2.0 * p < 3.0 * m * q - fabs(tol1 * q) and p < fabs(0.5 * e * q):
                e = d
                d = p / q
            else:
                d = m
                e = m
        else:
            d = m
            e = m
        a = b
        fa = fb
        if fabs(d) > tol1:
            b += d
        else:
            b += tol1 if m > 0 else -tol1
        fb = _logistic_slope(y, f, g, n, b)
    return b


cdef void _logistic_slope_curv(const float64_t* y, const float64_t* f, const float64_t* g, intp_t n,
                               float64_t rho, float64_t sign, float64_t* slope, float64_t* curv) noexcept nogil:
    """Slope and curvature in rho of sum_i log(1 + exp(-2 y_i (f_i + rho sign g_i))), one exp per sample."""
    cdef intp_t i
    cdef float64_t s = 0.0, h = 0.0, gi, a
    for i in range(n):
        gi = sign * g[i]
        if gi != 0.0:
            a = 2.0 / (1.0 + exp(2.0 * y[i] * (f[i] + rho * gi)))     # |negative gradient| at the point
            s -= gi * y[i] * a
            h += gi * gi * a * (2.0 - a)
    slope[0] = s
    curv[0] = h


# a Newton step this small (relative) ends the line search: quadratic convergence leaves an error of ~1e-14
cdef float64_t NEWTON_ACCEPT = 1e-7
# the same for a Halley step (cubic convergence: an error of ~1e-15)
cdef float64_t HALLEY_ACCEPT = 1e-5


cdef float64_t _line_search_logistic_newton(const float64_t* y, const float64_t* f, const float64_t* r,
                                            const float64_t* g, intp_t n) noexcept nogil:
    """argmin_rho of the logistic loss along g: Newton steps kept inside the sign-change bracket of the slope
    (bisection when a step leaves it), so it converges for any start; one pass over the samples per step."""
    cdef intp_t i
    cdef float64_t slope0 = 0.0, curv = 0.0, ar, scale = 0.0, sign = 1.0
    cdef float64_t lo = 0.0, hi = INFINITY, rho, new, sl, cv
    cdef int it
    for i in range(n):
        if g[i] != 0.0:
            slope0 -= g[i] * r[i]
            ar = fabs(r[i])
            curv += g[i] * g[i] * ar * (2.0 - ar)
            scale += 2.0 * fabs(g[i])
    if slope0 == 0.0 or scale == 0.0:
        return 0.0
    if slope0 > 0:
        # solve along -g: the minimiser is then at a positive step
        sign = -1.0
        slope0 = -slope0
    rho = -slope0 / curv if curv > 0 else 1.0
    for it in range(100):
        _logistic_slope_curv(y, f, g, n, rho, sign, &sl, &cv)
        if sl < 0:
            lo = rho
        else:
            hi = rho
        if fabs(sl) <= 1e-13 * scale:
            break
        new = rho - sl / cv if cv > 0 else INFINITY
        if not (new > lo and new < hi):
            new = 0.5 * (lo + hi) if hi < INFINITY else 4.0 * rho
        elif fabs(new - rho) <= NEWTON_ACCEPT * fabs(new):
            # a Newton step of relative size delta leaves an error of order delta^2: accepted without another pass
            rho = new
            break
        rho = new
    return sign * rho


cdef float64_t _line_search_logistic_leaves(const float64_t* y, const intp_t* leaf, const float64_t* gl,
                                            intp_t gstride, intp_t n_leaves, intp_t n, const float64_t* e,
                                            float64_t* tab) noexcept nogil:
    """The bracketed search of :func:`_line_search_logistic_newton` for a tree step, with Halley's steps in place
    of Newton's. The step g_i = gl[leaf_i * gstride] takes one value per leaf, so exp(2 y_i (f_i + rho g_i)) =
    e_i exp(2 y_i rho g_i) with the kept e_i = exp(2 y_i f_i): 2 x n_leaves exponentials per step instead of one
    per sample. With a_i = 2 / (1 + exp(2 y_i (f_i + rho g_i))) the derivatives along the step are -sum g y a,
    sum g^2 a (2 - a) and -sum g^3 y a (2 - a) (2 - 2 a), all from one pass (``fb_logistic_pass``, a division per
    sample, eight lanes wide); at rho = 0 the pass gives the negative gradient y a = 2 y / (1 + e) itself, so no
    stored gradient is read. About 2.8 passes per search on the delicious-sized benchmark against 5 with Newton's
    steps. ``tab`` holds 3 x n_leaves doubles."""
    cdef intp_t l, it
    cdef float64_t slope0, curv, scale, sign = 1.0, sl, cv, third
    cdef float64_t lo = 0.0, hi = INFINITY, rho, new
    cdef float64_t sums[4]
    cdef float64_t* G = tab + 2 * n_leaves
    for l in range(n_leaves):
        G[l] = gl[l * gstride]
        tab[2 * l] = 1.0
        tab[2 * l + 1] = 1.0
    fb_logistic_pass(y, e, leaf, tab, G, n_leaves, n, sums)
    slope0 = -sums[0]
    curv = sums[1]
    third = -sums[2]
    scale = 2.0 * sums[3]
    if slope0 == 0.0 or scale == 0.0:
        return 0.0
    if slope0 > 0:
        sign = -1.0
        slope0 = -slope0
        third = -third
        for l in range(n_leaves):
            G[l] = -G[l]
    # Halley steps (slope, curvature and third derivative from the same pass: cubic convergence), kept inside the
    # sign-change bracket of the slope like the Newton search
    rho = _halley_step(0.0, slope0, curv, third)
    for it in range(100):
        for l in range(n_leaves):
            tab[2 * l] = exp(2.0 * rho * G[l])        # y = +1
            tab[2 * l + 1] = 1.0 / tab[2 * l] if tab[2 * l] > 0 else INFINITY
        fb_logistic_pass(y, e, leaf, tab, G, n_leaves, n, sums)
        sl = -sums[0]
        cv = sums[1]
        third = -sums[2]
        if sl < 0:
            lo = rho
        else:
            hi = rho
        if fabs(sl) <= 1e-13 * scale:
            break
        new = _halley_step(rho, sl, cv, third)
        if not (new > lo and new < hi):
            new = 0.5 * (lo + hi) if hi < INFINITY else 4.0 * rho
        elif fabs(new - rho) <= HALLEY_ACCEPT * fabs(new):
            # a Halley step of relative size delta leaves an error of order delta^3: accepted without another pass
            rho = new
            break
        rho = new
    return sign * rho


cdef inline float64_t _halley_step(float64_t rho, float64_t s, float64_t s1, float64_t s2) noexcept nogil:
    """The root of the slope s(rho) by Halley's method from (s, s', s''); Newton's step where Halley's
    denominator is not positive, and an infinite step (the caller's bracket then decides) without curvature."""
    cdef float64_t den
    if not (s1 > 0):
        return INFINITY
    den = 2.0 * s1 * s1 - s * s2
    if den > 0:
        return rho - 2.0 * s * s1 / den
    return rho - s / s1


cdef float64_t _line_search_logistic(const float64_t* y, const float64_t* f, const float64_t* r,
                                     const float64_t* g, intp_t n) noexcept nogil:
    """argmin_rho sum_i log(1 + exp(-2 y_i (f_i + rho g_i))); r is the negative gradient at f."""
    cdef intp_t i
    cdef float64_t slope0 = 0.0, curv = 0.0, ar, step, a, fa, b, fb, scale = 0.0, tol
    cdef int k
    for i in range(n):
        if g[i] != 0.0:
            slope0 -= g[i] * r[i]
            ar = fabs(r[i])
            curv += g[i] * g[i] * ar * (2.0 - ar)
            scale += fabs(g[i])
    if slope0 == 0.0 or scale == 0.0:
        return 0.0
    # Newton step as the first trial point, then double until the slope changes sign
    if curv > 0:
        step = -slope0 / curv
    else:
        step = -slope0 / scale / scale
    a = 0.0
    fa = slope0
    b = step
    fb = _logistic_slope(y, f, g, n, b)
    k = 0
    while (fb < 0) == (fa < 0) and fb != 0.0:
        if k >= 60 or fabs(fb) <= 1e-13 * fabs(slope0):
            # the loss keeps decreasing (a label never / always positive): stop at a finite step
            return b
        a = b
        fa = fb
        step *= 2.0
        b = a + step
        fb = _logistic_slope(y, f, g, n, b)
        k += 1
    tol = 1e-10 * (fabs(a) + fabs(b)) + 1e-300
    return _brent_root(y, f, g, n, a, fa, b, fb, tol)


cdef struct WPair:
    float64_t value
    float64_t weight


cdef float64_t _weighted_median(WPair* a, intp_t m, float64_t total) noexcept nogil:
    """The smallest value v of a[0:m] with 2 W(<= v) >= total (W the summed weights), by a three-way quickselect
    (expected O(m), where sorting took O(m log m) and most of an absolute-loss fit). a is reordered."""
    cdef intp_t lo = 0, hi = m, i, j, lt, gt, mid
    cdef float64_t below = 0.0, wl, we, pivot, x, y0, z, acc
    cdef WPair tmp
    while hi - lo > 16:
        # median of three as the pivot
        mid = lo + (hi - lo) // 2
        x = a[lo].value
        y0 = a[mid].value
        z = a[hi - 1].value
        if x > y0:
            x, y0 = y0, x
        if y0 > z:
            y0 = z
            if x > y0:
                y0 = x
        pivot = y0
        # a[lo:lt] < pivot, a[lt:i] == pivot, a[gt:hi] > pivot
        lt = lo
        i = lo
        gt = hi
        wl = 0.0
        we = 0.0
        while i < gt:
            if a[i].value < pivot:
                wl += a[i].weight
                tmp = a[i]; a[i] = a[lt]; a[lt] = tmp
                lt += 1
                i += 1
            elif a[i].value > pivot:
                gt -= 1
                tmp = a[i]; a[i] = a[gt]; a[gt] = tmp
            else:
                we += a[i].weight
                i += 1
        if 2.0 * (below + wl) >= total:
            hi = lt
        elif 2.0 * (below + wl + we) >= total or gt == hi:
            return pivot
        else:
            below += wl + we
            lo = gt
    # a short range: insertion sort, then the cumulative weights
    for i in range(lo + 1, hi):
        tmp = a[i]
        j = i - 1
        while j >= lo and a[j].value > tmp.value:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = tmp
    acc = below
    for i in range(lo, hi):
        acc += a[i].weight
        if 2.0 * acc >= total:
            return a[i].value
    return a[hi - 1].value


cdef float64_t _line_search_absolute(const float64_t* y, const float64_t* f, const float64_t* g, intp_t n,
                                     WPair* work) noexcept nogil:
    """argmin_rho sum_i |y_i - f_i - rho g_i| = weighted median of (y_i - f_i) / g_i, weights |g_i|."""
    cdef intp_t i, m = 0
    cdef float64_t total = 0.0
    for i in range(n):
        if g[i] != 0.0:
            work[m].value = (y[i] - f[i]) / g[i]
            work[m].weight = fabs(g[i])
            total += work[m].weight
            m += 1
    if m == 0:
        return 0.0
    return _weighted_median(work, m, total)


cdef float64_t _line_search(int loss, const float64_t* y, const float64_t* f, const float64_t* r,
                            const float64_t* g, intp_t n, WPair* work, bint brent=False) noexcept nogil:
    cdef intp_t i
    cdef float64_t num = 0.0, den = 0.0
    if loss == SQUARE:
        for i in range(n):
            num += r[i] * g[i]
            den += g[i] * g[i]
        return num / den if den > 0 else 0.0
    if loss == ABSOLUTE:
        return _line_search_absolute(y, f, g, n, work)
    if brent:
        return _line_search_logistic(y, f, r, g, n)
    return _line_search_logistic_newton(y, f, r, g, n)


# choose the implementation once, at import, before any thread runs a pass
fb_logistic_pass_level(-1)


def logistic_pass_level(int wanted=-1):
    """Cap the implementation of the logistic line-search passes for the whole process (0 portable, 1 AVX2,
    2 AVX-512; -1 the best this processor has) and return the level in use. Every level gives the same bits; tests
    use this to show it."""
    return fb_logistic_pass_level(wanted)


def logistic_pass(y, e, leaf, tab, g, int level=-1):
    """The four sums of one line-search pass (``_logistic_pass.h``), for tests. ``level`` caps the implementation
    (0 portable, 1 AVX2, 2 AVX-512; -1 the best this processor has). Returns (sums, level used); the level is reset
    to the best one afterwards."""
    cdef float64_t[::1] yv = np.ascontiguousarray(y, dtype=np.float64)
    cdef float64_t[::1] ev = np.ascontiguousarray(e, dtype=np.float64)
    cdef intp_t[::1] lv = np.ascontiguousarray(leaf, dtype=np.intp)
    cdef float64_t[::1] tv = np.ascontiguousarray(tab, dtype=np.float64)
    cdef float64_t[::1] gv = np.ascontiguousarray(g, dtype=np.float64)
    cdef intp_t n = yv.shape[0], i, nl = gv.shape[0]
    cdef float64_t out[4]
    cdef int used
    if ev.shape[0] != n or lv.shape[0] != n:
        raise ValueError("y, e and leaf must have the same length")
    if tv.shape[0] != 2 * nl:
        raise ValueError(f"tab must hold 2 values per leaf ({2 * nl}), got {tv.shape[0]}")
    for i in range(n):
        if lv[i] < 0 or lv[i] >= nl:
            raise ValueError(f"leaf[{i}] = {lv[i]} is not a leaf of g (length {nl})")
    used = fb_logistic_pass_level(level)
    if used == 2 and nl > 8:
        used = 1
    if n:
        fb_logistic_pass(&yv[0], &ev[0], &lv[0], &tv[0], &gv[0], nl, n, out)
    else:
        out[0] = out[1] = out[2] = out[3] = 0.0
    fb_logistic_pass_level(-1)
    return np.array([out[0], out[1], out[2], out[3]]), used


def line_search(str loss, y, f, g, str method="newton"):
    """Step length rho minimising ``sum_i loss(y_i, f_i + rho g_i)`` for one output (exposed for testing)."""
    cdef int code = LOSSES[loss]
    y = np.ascontiguousarray(y, dtype=np.float64)
    f = np.ascontiguousarray(f, dtype=np.float64)
    g = np.ascontiguousarray(g, dtype=np.float64)
    cdef intp_t n = y.shape[0]
    if y.ndim != 1 or f.shape != y.shape or g.shape != y.shape or n < 1:
        raise ValueError(f"line_search: y, f and g must be 1-D of one length >= 1, got shapes {y.shape}, "
                         f"{f.shape}, {g.shape}")
    r = np.empty(n)
    cdef float64_t[::1] yv = y, fv = f, gv = g, rv = r
    cdef WPair* work = <WPair*> malloc((n + 1) * sizeof(WPair))
    cdef float64_t rho
    try:
        _column_gradient(code, &yv[0], &fv[0], &rv[0], n)
        rho = _line_search(code, &yv[0], &fv[0], &rv[0], &gv[0], n, work, method == "brent")
    finally:
        free(work)
    return rho


cdef void _logistic_state_gradient(const float64_t* y, const float64_t* E, float64_t* r, intp_t n) noexcept nogil:
    """Negative logistic gradient 2 y / (1 + exp(2 y f)) from the kept E = exp(2 y f)."""
    cdef intp_t i
    for i in range(n):
        r[i] = 2.0 * y[i] / (1.0 + E[i])


cdef void _logistic_state_reset(const float64_t* y, const float64_t* f, float64_t* E, intp_t n) noexcept nogil:
    cdef intp_t i
    for i in range(n):
        E[i] = exp(2.0 * y[i] * f[i])


cdef void _logistic_state_update(const float64_t* y, float64_t* E, const intp_t* leaf, const float64_t* delta,
                                 intp_t stride, float64_t scale, intp_t n_leaves, intp_t n,
                                 float64_t* tab) noexcept nogil:
    """E_i *= exp(2 y_i scale delta[leaf_i * stride]): the scores moved by one value per leaf, 2 exps per leaf."""
    cdef intp_t l
    for l in range(n_leaves):
        tab[2 * l] = exp(2.0 * scale * delta[l * stride])
        tab[2 * l + 1] = 1.0 / tab[2 * l] if tab[2 * l] > 0 else INFINITY
    fb_logistic_update(y, E, leaf, tab, n_leaves, n)


# --------------------------------------------------------------------------------------------------------------
# projections: q x d dense rows, drawn with the loop's own generator

cdef inline float64_t _normal(uint64_t* state) noexcept nogil:
    cdef float64_t u1 = 1.0 - rand_uniform(0.0, 1.0, state), u2 = rand_uniform(0.0, 1.0, state)
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2)


cdef void _draw_projection(int kind, intp_t q, intp_t d, float64_t* phi, intp_t* perm,
                           uint64_t* state) noexcept nogil:
    """Fill phi (q x d, row-major); rows that come out all zero are redrawn."""
    cdef intp_t k, j, t, tmp
    cdef float64_t s, v, prob
    cdef bint nonzero
    memset(phi, 0, q * d * sizeof(float64_t))
    if kind == P_SUBSAMPLE:
        # rows of the identity scaled by sqrt(d / q); without replacement while q <= d
        v = sqrt(<float64_t> d / q)
        if q <= d:
            for j in range(d):
                perm[j] = j
            for k in range(q):
                t = rand_int(k, d, state)
                tmp = perm[k]
                perm[k] = perm[t]
                perm[t] = tmp
                phi[k * d + perm[k]] = v
        else:
            for k in range(q):
                phi[k * d + rand_int(0, d, state)] = v
        return
    if kind == P_GAUSSIAN:
        s = 1.0 / sqrt(<float64_t> q)
        for k in range(q * d):
            phi[k] = s * _normal(state)
        return
    if kind == P_RADEMACHER:
        prob = 1.0
    elif kind == P_ACHLIOPTAS:
        prob = 1.0 / 3.0
    else:
        prob = 1.0 / sqrt(<float64_t> d)
    v = sqrt(1.0 / prob / q)
    for k in range(q):
        nonzero = False
        while not nonzero:
            for j in range(d):
                s = rand_uniform(0.0, 1.0, state)
                if s < prob:
                    phi[k * d + j] = v if s < 0.5 * prob else -v
                    nonzero = True
                else:
                    phi[k * d + j] = 0.0


# --------------------------------------------------------------------------------------------------------------
# model buffers

cdef struct Model:
    intp_t n_trees
    intp_t n_nodes
    intp_t n_leaves
    intp_t width              # values per leaf
    intp_t d
    intp_t* left
    intp_t* right
    intp_t* feature
    float64_t* threshold
    intp_t* leaf_index
    intp_t cap_left
    intp_t cap_right
    intp_t cap_feature
    intp_t cap_threshold
    intp_t cap_leaf_index
    float64_t* values
    intp_t values_cap
    intp_t* node_ptr
    intp_t* leaf_ptr
    intp_t cap_node_ptr
    intp_t cap_leaf_ptr
    float64_t* coef
    intp_t coef_cap
    intp_t* output
    intp_t output_cap


cdef int _append_tree(Model* M, Node* nodes, intp_t nn, const float64_t* leaf_values, intp_t nl,
                      intp_t output) except -1 nogil:
    """Copy a grown tree into the model buffers (values unscaled) and return 0."""
    cdef intp_t i, base = M.n_nodes
    cdef Node* nd
    grow_buffer(<void**> &M.left, &M.cap_left, base + nn, sizeof(intp_t))
    grow_buffer(<void**> &M.right, &M.cap_right, base + nn, sizeof(intp_t))
    grow_buffer(<void**> &M.feature, &M.cap_feature, base + nn, sizeof(intp_t))
    grow_buffer(<void**> &M.leaf_index, &M.cap_leaf_index, base + nn, sizeof(intp_t))
    grow_buffer(<void**> &M.threshold, &M.cap_threshold, base + nn, sizeof(float64_t))
    for i in range(nn):
        nd = &nodes[i]
        M.left[base + i] = nd.left_child
        M.right[base + i] = nd.right_child
        M.feature[base + i] = nd.feature
        M.threshold[base + i] = nd.threshold
        M.leaf_index[base + i] = nd.leaf_index
    grow_buffer(<void**> &M.values, &M.values_cap, (M.n_leaves + nl) * M.width, sizeof(float64_t))
    memcpy(M.values + M.n_leaves * M.width, leaf_values, nl * M.width * sizeof(float64_t))
    grow_buffer(<void**> &M.node_ptr, &M.cap_node_ptr, M.n_trees + 2, sizeof(intp_t))
    grow_buffer(<void**> &M.leaf_ptr, &M.cap_leaf_ptr, M.n_trees + 2, sizeof(intp_t))
    grow_buffer(<void**> &M.output, &M.output_cap, M.n_trees + 2, sizeof(intp_t))
    M.node_ptr[M.n_trees] = base
    M.leaf_ptr[M.n_trees] = M.n_leaves
    M.output[M.n_trees] = output
    M.n_nodes += nn
    M.n_leaves += nl
    M.node_ptr[M.n_trees + 1] = M.n_nodes
    M.leaf_ptr[M.n_trees + 1] = M.n_leaves
    M.n_trees += 1
    return 0


cdef void _free_model(Model* M) noexcept nogil:
    free(M.left)
    free(M.right)
    free(M.feature)
    free(M.threshold)
    free(M.leaf_index)
    free(M.values)
    free(M.node_ptr)
    free(M.leaf_ptr)
    free(M.coef)
    free(M.output)


cdef void _apply_builder(TreeBuilder builder, const float32_t* X, intp_t rs, intp_t cs, intp_t n,
                         intp_t* leaf) noexcept nogil:
    """Leaf row (in the builder's leaf store) of every training sample."""
    cdef intp_t i, node
    cdef Node* nodes = builder.nodes
    for i in range(n):
        node = 0
        while nodes[node].left_child != TREE_LEAF:
            if X[i * rs + nodes[node].feature * cs] <= nodes[node].threshold:
                node = nodes[node].left_child
            else:
                node = nodes[node].right_child
        leaf[i] = nodes[node].leaf_index


# --------------------------------------------------------------------------------------------------------------
# presorted best-first tree builder

# from this many split targets on, the two-valued features of a node are summed in one pass over its rows
cdef intp_t BATCH_MIN_Q = 8


cdef inline void _side_squares(const float64_t* A, const float64_t* S, intp_t q, float64_t* a2,
                               float64_t* b2) noexcept nogil:
    """a2 = sum_k A_k^2 and b2 = sum_k (S_k - A_k)^2: the two sides' squared sums of one cut, with four
    independent accumulators per sum (the loop is then bound by throughput, not by the latency of one chain)."""
    cdef float64_t a0 = 0.0, a1 = 0.0, a2_ = 0.0, a3 = 0.0, b0 = 0.0, b1 = 0.0, b2_ = 0.0, b3 = 0.0, u, v
    cdef intp_t k = 0
    while k + 4 <= q:
        u = A[k]; v = S[k] - u; a0 += u * u; b0 += v * v
        u = A[k + 1]; v = S[k + 1] - u; a1 += u * u; b1 += v * v
        u = A[k + 2]; v = S[k + 2] - u; a2_ += u * u; b2_ += v * v
        u = A[k + 3]; v = S[k + 3] - u; a3 += u * u; b3 += v * v
        k += 4
    while k < q:
        u = A[k]; v = S[k] - u; a0 += u * u; b0 += v * v
        k += 1
    a2[0] = (a0 + a1) + (a2_ + a3)
    b2[0] = (b0 + b1) + (b2_ + b3)


cdef struct Candidate:
    intp_t node_id
    intp_t start
    intp_t end
    intp_t feature           # -1: no split (leaf)
    intp_t pos
    float64_t threshold
    float64_t improvement
    intp_t order_feature     # a feature whose range [start, end) holds exactly the node's samples
    bint in_master           # the root: its ranges are read from the master orders


cdef int _fresh_doubles(float64_t** ptr, intp_t size) except -1 nogil:
    """Replace the buffer at ``ptr`` by an uninitialised one of ``size`` doubles (MemoryError if none)."""
    free(ptr[0])
    ptr[0] = <float64_t*> malloc(size * sizeof(float64_t))
    if ptr[0] == NULL:
        with gil:
            raise MemoryError()
    return 0


cdef inline void _take_cut(Candidate* c, intp_t f, intp_t pos, const float32_t* xv) noexcept nogil:
    """Make the cut before position ``pos`` of feature f's node order the node's split: the threshold halfway
    between the two values around the cut (the lower value where the halfway point rounds onto the upper one or
    overflows)."""
    c.feature = f
    c.pos = pos
    c.threshold = midpoint_threshold(xv[pos - 1], xv[pos])


cdef inline void _scan_single(Candidate* c, intp_t f, const int32_t* ix, const float32_t* xv, const float64_t* Z,
                              intp_t start, intp_t end, float64_t s_total, const float64_t* inv,
                              float64_t* best_io) noexcept nogil:
    """Score every cut of feature f over the node [start, end) for one split target (Z is n x 1) and take it into c
    when it beats *best_io by the relative margin; the arithmetic and the order of the multi-target scan of
    ``PresortBuilder._evaluate`` (forward, or backward past a leading run of equal values), so the same cut wins.
    The running side sum lives in a register instead of the sums array."""
    cdef intp_t r, b0 = start, fpos
    cdef float64_t sl = 0.0, pl, pr, proxy, fbest, best = best_io[0], t
    while b0 < end - 1 and same_value(xv[b0 + 1], xv[b0]):
        b0 += 1
    if b0 - start > end - b0:
        # sl: the sum over [r, end), the right side of a cut between r - 1 and r
        fpos = -1
        fbest = -INFINITY
        for r in range(end - 1, b0, -1):
            sl += Z[ix[r]]
            if same_value(xv[r], xv[r - 1]):
                continue
            t = s_total - sl
            proxy = t * t * inv[r - start] + sl * sl * inv[end - r]
            if fpos < 0 or proxy >= fbest - PROXY_RTOL * fabs(fbest):
                fbest = proxy
                fpos = r
        if fpos >= 0 and (c.feature < 0 or beats(fbest, best)):
            best_io[0] = fbest
            _take_cut(c, f, fpos, xv)
        return
    for r in range(start, end - 1):
        sl += Z[ix[r]]
        if same_value(xv[r + 1], xv[r]):
            continue
        t = s_total - sl
        proxy = sl * sl * inv[r + 1 - start] + t * t * inv[end - r - 1]
        if c.feature < 0 or beats(proxy, best):
            best = proxy
            _take_cut(c, f, r + 1, xv)
    best_io[0] = best


cdef class PresortBuilder:
    """Best-first regression tree on a fixed X whose columns are sorted once.

    X does not change between boosting iterations, so each feature's sample order is computed once; a tree then
    starts from copies of these orders and every split partitions each feature's node range stably (a node is one
    contiguous range [start, end) in every feature's order), so no node ever sorts. Splits are chosen exactly as the
    forestbench kernel's best splitter does: thresholds halfway between consecutive distinct values (values closer
    than 1e-7 are equal), the multi-output variance proxy sum_k S_L,k^2 / n_L + S_R,k^2 / n_R, a later candidate
    must be better by a relative 1e-10, features visited in index order when all are candidates, else
    ``max_features`` non-constant features drawn without replacement; the frontier is expanded by largest impurity
    decrease (ties: smaller node id). A node's children are only evaluated while a split is still allowed.

    With many split targets (q >= 8, gbmort's gradient) and every feature scored, the two-valued features of a node
    (binary inputs) are summed in one pass over the node's rows (``_binary_sums``) instead of one gather of the
    target rows per feature; they have a single cut, scored from those sums with the same rule.
    """
    cdef object _keep
    cdef intp_t n, p, max_leaf_nodes, max_features
    cdef int32_t* master_idx      # p x n: samples of each feature in increasing value order
    cdef float32_t* master_val
    cdef int32_t* idx             # working copies, partitioned per node
    cdef float32_t* val
    cdef int32_t* tmp_idx
    cdef float32_t* tmp_val
    cdef char* goleft
    cdef intp_t* feats
    cdef float64_t* sum_total
    cdef float64_t* sum_left
    cdef float64_t* best_left
    cdef Candidate* frontier
    cdef Node* nodes
    cdef intp_t node_count
    cdef float64_t* leaf_values
    cdef intp_t n_leaves
    cdef intp_t cap_q, cap_w
    cdef float64_t* inv           # inv[k] = 1 / k: no division per scanned position
    # two-valued (binary) inputs: their split sums by one pass over the node's samples (see _binary_sums)
    cdef intp_t n_bin
    cdef intp_t* bin_of           # p: index among the two-valued features, -1 for the others
    cdef char* bin_minor_high     # n_bin: 1 when the rarer of the two values is the larger one
    cdef int32_t* row_ptr         # n + 1: CSR rows of the rarer values
    cdef int32_t* row_bins        # the two-valued features (their bin index) where the row holds the rarer value
    cdef float64_t* bin_sums      # n_bin x q: sum of the split targets over the node's rows holding the rarer value
    cdef intp_t* bin_counts       # n_bin: number of those rows
    cdef intp_t cap_bq

    def __cinit__(self, *args, **kwargs):
        self.inv = NULL
        self.master_idx = NULL
        self.master_val = NULL
        self.idx = NULL
        self.val = NULL
        self.tmp_idx = NULL
        self.tmp_val = NULL
        self.goleft = NULL
        self.feats = NULL
        self.sum_total = NULL
        self.sum_left = NULL
        self.best_left = NULL
        self.frontier = NULL
        self.nodes = NULL
        self.leaf_values = NULL
        self.cap_q = 0
        self.cap_w = 0
        self.n_bin = 0
        self.bin_of = NULL
        self.bin_minor_high = NULL
        self.row_ptr = NULL
        self.row_bins = NULL
        self.bin_sums = NULL
        self.bin_counts = NULL
        self.cap_bq = 0

    def __init__(self, X, intp_t max_leaf_nodes, intp_t max_features):
        cdef intp_t n = X.shape[0], p = X.shape[1], f, r
        order = np.argsort(X, axis=0, kind="stable").T.astype(np.int32)      # (p, n)
        values = np.take_along_axis(np.asarray(X), order.T.astype(np.intp), axis=0).T.astype(np.float32)
        order = np.ascontiguousarray(order)
        values = np.ascontiguousarray(values)
        cdef int32_t[:, ::1] ov = order
        cdef float32_t[:, ::1] vv = values
        self._keep = (order, values)
        self.n = n
        self.p = p
        self.max_leaf_nodes = max_leaf_nodes
        self.max_features = max_features
        self.master_idx = &ov[0, 0] if n * p > 0 else NULL
        self.master_val = &vv[0, 0] if n * p > 0 else NULL
        self.idx = <int32_t*> malloc(max(n * p, 1) * sizeof(int32_t))
        self.val = <float32_t*> malloc(max(n * p, 1) * sizeof(float32_t))
        self.tmp_idx = <int32_t*> malloc(max(n, 1) * sizeof(int32_t))
        self.tmp_val = <float32_t*> malloc(max(n, 1) * sizeof(float32_t))
        self.goleft = <char*> malloc(max(n, 1))
        self.feats = <intp_t*> malloc(max(p, 1) * sizeof(intp_t))
        self.frontier = <Candidate*> malloc((2 * max_leaf_nodes + 2) * sizeof(Candidate))
        self.nodes = <Node*> malloc((2 * max_leaf_nodes + 2) * sizeof(Node))
        if (self.idx == NULL or self.val == NULL or self.tmp_idx == NULL or self.tmp_val == NULL
                or self.goleft == NULL or self.feats == NULL or self.frontier == NULL or self.nodes == NULL):
            raise MemoryError()
        for f in range(p):
            self.feats[f] = f
        self.inv = <float64_t*> malloc((n + 1) * sizeof(float64_t))
        if self.inv == NULL:
            raise MemoryError()
        self.inv[0] = 0.0
        for r in range(1, n + 1):
            self.inv[r] = 1.0 / r
        self._index_two_valued(np.asarray(X, dtype=np.float32), values)

    def _index_two_valued(self, X, values):
        """Find the features with exactly two distinct values and list, row by row, those where the row holds the
        feature's rarer value (CSR), for _binary_sums. ``values``: each column of X in increasing order."""
        cdef intp_t n = self.n, p = self.p
        if n < 2 or p == 0:
            return
        lo = values[:, 0]
        hi = values[:, n - 1]
        is_lo = values == lo[:, None]
        two = (hi > lo + FEATURE_THRESHOLD) & (is_lo | (values == hi[:, None])).all(axis=1)
        feats = np.flatnonzero(two)
        if feats.size == 0:
            return
        n_lo = is_lo[feats].sum(axis=1)
        minor_high = n_lo >= n - n_lo                       # the larger value is the rarer (or as frequent) one
        rarer = np.where(minor_high, hi[feats], lo[feats])
        Xs = X[:, feats] == rarer[None, :]                  # rows x two-valued features: holds the rarer value
        counts = Xs.sum(axis=1)
        row_ptr = np.zeros(n + 1, dtype=np.int32)
        np.cumsum(counts, out=row_ptr[1:])
        row_bins = np.ascontiguousarray(np.nonzero(Xs)[1].astype(np.int32))
        bin_of = np.full(p, -1, dtype=np.intp)
        bin_of[feats] = np.arange(feats.size)
        minor = np.ascontiguousarray(minor_high.astype(np.int8))
        if row_bins.size == 0:
            row_bins = np.zeros(1, dtype=np.int32)
        self._keep = self._keep + (row_ptr, row_bins, bin_of, minor)
        cdef int32_t[::1] rp = row_ptr
        cdef int32_t[::1] rb = row_bins
        cdef intp_t[::1] bo = bin_of
        cdef signed char[::1] mh = minor
        self.n_bin = feats.size
        self.row_ptr = &rp[0]
        self.row_bins = &rb[0]
        self.bin_of = &bo[0]
        self.bin_minor_high = <char*> &mh[0]
        self.bin_counts = <intp_t*> malloc(self.n_bin * sizeof(intp_t))
        if self.bin_counts == NULL:
            raise MemoryError()

    def __dealloc__(self):
        free(self.inv)
        free(self.idx); free(self.val); free(self.tmp_idx); free(self.tmp_val); free(self.goleft)
        free(self.feats); free(self.sum_total); free(self.sum_left); free(self.best_left)
        free(self.frontier); free(self.nodes); free(self.leaf_values)
        free(self.bin_sums); free(self.bin_counts)

    cdef int _ensure(self, intp_t q, intp_t w) except -1 nogil:
        if q > self.cap_q:
            _fresh_doubles(&self.sum_total, q)
            _fresh_doubles(&self.sum_left, q)
            _fresh_doubles(&self.best_left, q)
            self.cap_q = q
        if self.n_bin > 0 and q >= BATCH_MIN_Q and q > self.cap_bq:
            _fresh_doubles(&self.bin_sums, self.n_bin * q)
            self.cap_bq = q
        if w > self.cap_w:
            _fresh_doubles(&self.leaf_values, (self.max_leaf_nodes + 1) * w)
            self.cap_w = w
        return 0

    cdef void _binary_sums(self, Candidate* c, const float64_t* Z, intp_t q) noexcept nogil:
        """Sums of the split targets over the node's rows that hold each two-valued feature's rarer value.

        One pass over the node's rows: each target row is read once and added to the sums of the features where it
        holds the rarer value. The per-feature scan would instead gather the same rows from memory once per
        feature, which with many targets (a 983-output gradient) is bound by memory traffic; the n_bin x q sums
        stay in cache."""
        cdef const int32_t* ix = (self.master_idx if c.in_master else self.idx) + c.order_feature * self.n
        cdef intp_t r, i, t, k, b
        cdef const float64_t* zrow
        cdef float64_t* dst
        memset(self.bin_sums, 0, self.n_bin * q * sizeof(float64_t))
        memset(self.bin_counts, 0, self.n_bin * sizeof(intp_t))
        for r in range(c.start, c.end):
            i = ix[r]
            zrow = Z + i * q
            for t in range(self.row_ptr[i], self.row_ptr[i + 1]):
                b = self.row_bins[t]
                self.bin_counts[b] += 1
                dst = self.bin_sums + b * q
                for k in range(q):
                    dst[k] += zrow[k]

    cdef void _evaluate(self, Candidate* c, const float64_t* Z, intp_t q, uint64_t* state) noexcept nogil:
        """Find the best split of the node c (c.feature = -1 if it must be a leaf)."""
        cdef const int32_t* base_idx = self.master_idx if c.in_master else self.idx
        cdef const float32_t* base_val = self.master_val if c.in_master else self.val
        cdef intp_t n = self.n, start = c.start, end = c.end, m = end - start
        cdef intp_t r, k, i, f, fi, n_scored = 0, n_drawn = 0, tmp
        cdef const int32_t* ix
        cdef const float32_t* xv
        cdef float64_t* S = self.sum_total
        cdef float64_t* SL = self.sum_left
        cdef float64_t sq = 0.0, ss = 0.0, z, proxy, best = -INFINITY, nl, nr, pl, pr, s1
        cdef intp_t b0, fpos
        cdef float64_t fbest
        cdef const float64_t* zrow
        cdef bint use_all = self.max_features >= self.p
        cdef const float64_t* inv = self.inv
        cdef bint batch
        cdef intp_t b, nb
        c.feature = -1
        c.improvement = 0.0
        if m < 2:
            return
        memset(S, 0, q * sizeof(float64_t))
        ix = base_idx + c.order_feature * n
        if q == 1:
            # one split target (st-gbrt, the rpo variants): the sums in registers, same additions in the same order
            s1 = 0.0
            for r in range(start, end):
                z = Z[ix[r]]
                s1 += z
                sq += z * z
            S[0] = s1
        else:
            for r in range(start, end):
                i = ix[r]
                for k in range(q):
                    z = Z[i * q + k]
                    S[k] += z
                    sq += z * z
        for k in range(q):
            ss += S[k] * S[k]
        if (sq / m - ss / (<float64_t> m * m)) / q <= EPSILON:
            return
        batch = use_all and q >= BATCH_MIN_Q and self.n_bin > 0
        if batch:
            self._binary_sums(c, Z, q)
        fi = 0
        while True:
            if use_all:
                if fi >= self.p:
                    break
                f = fi
                fi += 1
            else:
                if n_scored >= self.max_features or n_drawn >= self.p:
                    break
                k = rand_int(n_drawn, self.p, state)
                tmp = self.feats[n_drawn]
                self.feats[n_drawn] = self.feats[k]
                self.feats[k] = tmp
                f = self.feats[n_drawn]
                n_drawn += 1
            ix = base_idx + f * n
            xv = base_val + f * n
            if batch and self.bin_of[f] >= 0:
                # a two-valued feature: one cut, its side sums from _binary_sums
                b = self.bin_of[f]
                nb = self.bin_counts[b]
                if nb == 0 or nb == m:
                    continue
                n_scored += 1
                if self.bin_minor_high[b]:
                    fpos = end - nb
                    _side_squares(self.bin_sums + b * q, S, q, &pr, &pl)
                else:
                    fpos = start + nb
                    _side_squares(self.bin_sums + b * q, S, q, &pl, &pr)
                proxy = pl * inv[fpos - start] + pr * inv[end - fpos]
                if c.feature < 0 or beats(proxy, best):
                    best = proxy
                    _take_cut(c, f, fpos, xv)
                continue
            if same_value(xv[end - 1], xv[start]):
                continue
            n_scored += 1
            if q == 1:
                # one split target: the scan of _scan_single, the left sum kept in a register
                _scan_single(c, f, ix, xv, Z, start, end, S[0], inv, &best)
                continue
            # several split targets. A long run of equal values at the start (the zeros of a sparse or binary
            # input) is never summed: the scan then runs backwards over the other samples, with S_L = S - S_R
            b0 = start
            while b0 < end - 1 and same_value(xv[b0 + 1], xv[b0]):
                b0 += 1
            memset(SL, 0, q * sizeof(float64_t))
            if b0 - start > end - b0:
                fpos = -1
                fbest = -INFINITY
                for r in range(end - 1, b0, -1):
                    # SL holds the sums over [r, end) (the right side of a cut between r - 1 and r)
                    zrow = Z + ix[r] * q
                    for k in range(q):
                        SL[k] += zrow[k]
                    if same_value(xv[r], xv[r - 1]):
                        continue
                    _side_squares(SL, S, q, &pr, &pl)
                    proxy = pl * inv[r - start] + pr * inv[end - r]
                    # cuts visited right to left: a cut further left replaces the feature's best unless it is
                    # worse by the margin (the forward scan's preference for the leftmost of near-equal cuts)
                    if fpos < 0 or proxy >= fbest - PROXY_RTOL * fabs(fbest):
                        fbest = proxy
                        fpos = r
                if fpos >= 0 and (c.feature < 0 or beats(fbest, best)):
                    best = fbest
                    _take_cut(c, f, fpos, xv)
                continue
            for r in range(start, end - 1):
                # per sample only the q sums move (a vectorisable loop); the proxy's O(q) sums of squares are
                # formed at cuts only, which a feature with few distinct values (binary inputs) rarely has
                zrow = Z + ix[r] * q
                for k in range(q):
                    SL[k] += zrow[k]
                if same_value(xv[r + 1], xv[r]):
                    continue
                _side_squares(SL, S, q, &pl, &pr)
                proxy = pl * inv[r + 1 - start] + pr * inv[end - r - 1]
                if c.feature < 0 or beats(proxy, best):
                    best = proxy
                    _take_cut(c, f, r + 1, xv)
        if c.feature >= 0:
            # decrease of the summed-over-outputs impurity, relative to the whole set (same order as the kernel)
            c.improvement = (best - ss / m) / (<float64_t> n * q)

    cdef void _partition(self, Candidate* c, bint all_features) noexcept nogil:
        """Stable partition of the node range of every feature (or of the split feature only, when the children
        will not be split) into [left | right], in the working orders."""
        cdef intp_t n = self.n, f, r, a, b, start = c.start, end = c.end
        cdef const int32_t* src_base = self.master_idx if c.in_master else self.idx
        cdef const float32_t* src_vbase = self.master_val if c.in_master else self.val
        cdef const int32_t* sx = src_base + c.feature * n
        cdef const float32_t* sv
        cdef int32_t* ix
        cdef float32_t* xv
        cdef int32_t i
        cdef float32_t v
        cdef intp_t gl
        if c.in_master:
            # the split feature's range is already [left | right]: copy it to the working orders
            memcpy(self.idx + c.feature * n + start, sx + start, (end - start) * sizeof(int32_t))
            memcpy(self.val + c.feature * n + start, src_vbase + c.feature * n + start,
                   (end - start) * sizeof(float32_t))
        if not all_features:
            return
        for r in range(start, c.pos):
            self.goleft[sx[r]] = 1
        for r in range(c.pos, end):
            self.goleft[sx[r]] = 0
        for f in range(self.p):
            if f == c.feature:
                continue
            sx = src_base + f * n
            sv = src_vbase + f * n
            ix = self.idx + f * n
            xv = self.val + f * n
            a = start
            b = 0
            # branch-free: every sample is written to both sides and only its side's count moves (the side of a
            # sample is a coin flip for the branch predictor); in place, a <= r, so no unread entry is overwritten
            for r in range(start, end):
                i = sx[r]
                v = sv[r]
                gl = self.goleft[i]
                ix[a] = i
                xv[a] = v
                self.tmp_idx[b] = i
                self.tmp_val[b] = v
                a += gl
                b += 1 - gl
            memcpy(ix + a, self.tmp_idx, b * sizeof(int32_t))
            memcpy(xv + a, self.tmp_val, b * sizeof(float32_t))

    cdef intp_t _new_node(self, intp_t parent, bint is_left) noexcept nogil:
        cdef intp_t node_id = self.node_count
        cdef Node* nd = &self.nodes[node_id]
        nd.left_child = TREE_LEAF
        nd.right_child = TREE_LEAF
        nd.feature = TREE_UNDEFINED
        nd.threshold = TREE_UNDEFINED
        nd.impurity = 0.0
        nd.n_node_samples = 0
        nd.weighted_n_node_samples = 0.0
        nd.leaf_index = -1
        if parent >= 0:
            if is_left:
                self.nodes[parent].left_child = node_id
            else:
                self.nodes[parent].right_child = node_id
        self.node_count += 1
        return node_id

    cdef void _make_leaf(self, Candidate* c, const float64_t* L, intp_t w, intp_t* leaf_of) noexcept nogil:
        cdef intp_t r, k, i, m = c.end - c.start
        cdef float64_t* v = self.leaf_values + self.n_leaves * w
        cdef const int32_t* ix = (self.master_idx if c.in_master else self.idx) + c.order_feature * self.n
        memset(v, 0, w * sizeof(float64_t))
        for r in range(c.start, c.end):
            i = ix[r]
            leaf_of[i] = self.n_leaves
            for k in range(w):
                v[k] += L[i * w + k]
        for k in range(w):
            v[k] /= m
        self.nodes[c.node_id].leaf_index = self.n_leaves
        self.nodes[c.node_id].n_node_samples = m
        self.n_leaves += 1

    cdef int build(self, const float64_t* Z, intp_t q, const float64_t* L, intp_t w, intp_t* leaf_of,
                   uint64_t* state) except -1 nogil:
        """Grow one tree on split targets Z (n x q) with leaves holding the means of L (n x w)."""
        cdef intp_t n_front = 0, splits_left = self.max_leaf_nodes - 1, b, j, s
        cdef Candidate c, child
        cdef Node* nd
        self._ensure(q, w)
        self.node_count = 0
        self.n_leaves = 0
        c.node_id = self._new_node(-1, 0)
        c.start = 0
        c.end = self.n
        c.order_feature = 0
        c.in_master = True
        self._evaluate(&c, Z, q, state)
        self.frontier[0] = c
        n_front = 1
        while n_front > 0:
            b = 0
            for j in range(1, n_front):
                if (self.frontier[j].improvement > self.frontier[b].improvement or
                        (self.frontier[j].improvement == self.frontier[b].improvement and
                         self.frontier[j].node_id < self.frontier[b].node_id)):
                    b = j
            c = self.frontier[b]
            self.frontier[b] = self.frontier[n_front - 1]
            n_front -= 1
            if c.feature < 0 or splits_left <= 0:
                self._make_leaf(&c, L, w, leaf_of)
                continue
            splits_left -= 1
            nd = &self.nodes[c.node_id]
            nd.feature = c.feature
            nd.threshold = c.threshold
            nd.n_node_samples = c.end - c.start
            self._partition(&c, splits_left > 0)
            for s in range(2):
                child.node_id = self._new_node(c.node_id, s == 0)
                child.start = c.start if s == 0 else c.pos
                child.end = c.pos if s == 0 else c.end
                child.order_feature = 0 if splits_left > 0 else c.feature
                child.in_master = False
                child.feature = -1
                child.improvement = 0.0
                if splits_left > 0:
                    self._evaluate(&child, Z, q, state)
                self.frontier[n_front] = child
                n_front += 1
        return 0


# --------------------------------------------------------------------------------------------------------------
# the loop

def _shape_error(name, arr, expected):
    return ValueError(f"boost: {name} has shape {getattr(arr, 'shape', None)}, expected {expected}")


def _check_boost_inputs(X, Y, F0, algo_name, loss_name, n_iter, max_leaf_nodes, max_features, projection, q,
                        X_val, Y_val):
    """Refuse, before any compiled loop runs, inputs whose shapes or types would make it read out of bounds."""
    if algo_name not in ALGORITHMS:
        raise ValueError(f"boost: unknown algorithm {algo_name!r} (one of {sorted(ALGORITHMS)})")
    if loss_name not in LOSSES:
        raise ValueError(f"boost: unknown loss {loss_name!r} (one of {sorted(LOSSES)})")
    if algo_name in ("rpo", "relabel") and projection not in PROJECTIONS:
        raise ValueError(f"boost: unknown projection {projection!r} (one of {sorted(PROJECTIONS)})")
    if not (isinstance(X, np.ndarray) and X.ndim == 2 and X.dtype == np.float32):
        raise ValueError(f"boost: X must be a 2-D float32 array, got {type(X).__name__} "
                         f"{getattr(X, 'dtype', '')} {getattr(X, 'shape', '')}")
    n, p = X.shape
    if n < 1 or p < 1:
        raise _shape_error("X", X, "(n >= 1, p >= 1)")
    if not (isinstance(Y, np.ndarray) and Y.ndim == 2 and Y.shape[0] == n and Y.shape[1] >= 1):
        raise _shape_error("Y", Y, f"({n}, d >= 1) like X's {n} rows")
    d = Y.shape[1]
    if np.ndim(F0) != 1 or np.shape(F0)[0] != d:
        raise _shape_error("F0", F0, f"({d},), one constant per output")
    if n_iter < 1 or max_leaf_nodes < 2:
        raise ValueError(f"boost: n_iter={n_iter} must be >= 1 and max_leaf_nodes={max_leaf_nodes} >= 2")
    if not 1 <= max_features <= p:
        raise ValueError(f"boost: max_features={max_features} must lie in [1, {p}]")
    if algo_name == "relabel" and q < 1:
        raise ValueError(f"boost: q={q} projected outputs must be >= 1")
    if (X_val is None) != (Y_val is None):
        raise ValueError("boost: give both X_val and Y_val or neither")
    if X_val is not None:
        if not (isinstance(X_val, np.ndarray) and X_val.ndim == 2 and X_val.dtype == np.float32
                and X_val.shape[1] == p):
            raise _shape_error("X_val", X_val, f"(m, {p}) float32, the columns of X")
        if not (isinstance(Y_val, np.ndarray) and Y_val.ndim == 2 and Y_val.shape == (X_val.shape[0], d)):
            raise _shape_error("Y_val", Y_val, f"({X_val.shape[0]}, {d}): X_val's rows and Y's outputs")


def boost(X, Y, F0, str algo_name, str loss_name, intp_t n_iter, float64_t learning_rate,
          intp_t max_leaf_nodes, intp_t max_features, str projection, intp_t q,
          unsigned long long tree_seed, unsigned long long proj_seed, bint track_loss=False,
          bint presort=True, X_val=None, Y_val=None, bint brent=False):
    """Run gradient boosting. X: float32 (n, p) C or Fortran; Y: float64 (n, d), already coded for the loss
    (logistic: -1/+1); F0: float64 (d,) initial constants. Returns a dict of model arrays and stage records.

    With X_val (float32) and Y_val (float64, coded as Y), the validation scores are updated in the loop and the
    per-output sum of squared errors of the scores after each stage is returned as ``val_sse`` (n_stages, d).
    """
    # the stage times count from here: the one-off work (copies, the sort of every input column) is included
    cdef float64_t t_start = _now()
    _check_boost_inputs(X, Y, F0, algo_name, loss_name, n_iter, max_leaf_nodes, max_features, projection, q,
                        X_val, Y_val)
    cdef int algo = ALGORITHMS[algo_name], loss = LOSSES[loss_name]
    cdef int pkind = PROJECTIONS[projection] if algo in (RPO, RELABEL) else 0
    cdef intp_t n = X.shape[0], p = X.shape[1], d = Y.shape[1], i, j, k, l, m, t
    cdef intp_t n_stages = n_iter
    cdef intp_t trees_per_stage = d if algo == ST else 1
    cdef intp_t qz = 1 if algo in (ST, RPO) else (d if algo == MORT else q)
    cdef intp_t width = d if algo in (MORT, RELABEL) else 1
    if algo == RPO:
        q = 1
    # output-major copies: column j of Y / F / R is contiguous over the samples
    Yt_arr = np.ascontiguousarray(np.asarray(Y, dtype=np.float64).T)
    Ft_arr = np.empty((d, n), dtype=np.float64)
    Ft_arr[:] = np.asarray(F0, dtype=np.float64)[:, None]
    # gbrt-rpo with the kept exp(2 y f) stores no gradient column (its projection is summed straight from it)
    Rt_arr = np.zeros((1 if algo == RPO and loss == LOGISTIC and not brent else d, n), dtype=np.float64)
    Z_arr = np.zeros((n, qz), dtype=np.float64)                 # split targets, row-major (kernel layout)
    if algo == RELABEL:
        L_arr = np.zeros((n, d), dtype=np.float64)              # leaf targets: the unprojected gradient
    else:
        L_arr = Z_arr
    cdef float64_t[:, ::1] Ytv = Yt_arr, Ftv = Ft_arr, Rtv = Rt_arr, Zv = Z_arr, Lv = L_arr
    cdef float64_t* Yt = &Ytv[0, 0]
    cdef float64_t* Ft = &Ftv[0, 0]
    cdef float64_t* Rt = &Rtv[0, 0]
    cdef float64_t* Zb = &Zv[0, 0]
    cdef float64_t* Lb = &Lv[0, 0]
    cdef const float32_t[:, :] Xv = X
    cdef const float32_t* Xp = &Xv[0, 0]
    cdef intp_t rs = X.strides[0] // 4, cs = X.strides[1] // 4

    criterion = DenseCriterion(qz, Z_arr)
    leaf_targets = LeafTargets(width, L_arr)
    partitioner = DensePartitioner(X)
    splitter = Splitter(criterion, partitioner, leaf_targets, np.arange(n, dtype=np.intp), None,
                        p, max_features, 1, 0.0, False, tree_seed, False)
    cdef TreeBuilder builder = TreeBuilder(splitter, width, False, n + 1, 2, 1, 0.0, 0.0, max_leaf_nodes, 0.0)
    cdef PresortBuilder pbuilder = PresortBuilder(X, max_leaf_nodes, max_features) if presort else None
    cdef uint64_t tstate = seed_state(tree_seed)

    cdef bint has_val = X_val is not None
    cdef intp_t nv = X_val.shape[0] if has_val else 0, tt, row, node, nbase
    Fv_arr = np.empty((nv, d), dtype=np.float64)
    Fv_arr[:] = np.asarray(F0, dtype=np.float64)[None, :]
    Yv_arr = np.ascontiguousarray(Y_val, dtype=np.float64) if has_val else np.zeros((0, d))
    Xv_arr = np.asarray(X_val, dtype=np.float32) if has_val else np.zeros((0, p), dtype=np.float32)
    val_sse_arr = np.zeros((n_stages if has_val else 0, d), dtype=np.float64)
    cdef float64_t[:, ::1] Fvv = Fv_arr, Yvv = Yv_arr, val_sse = val_sse_arr
    cdef const float32_t[:, :] Xvv = Xv_arr
    cdef intp_t vrs = Xv_arr.strides[0] // 4, vcs = Xv_arr.strides[1] // 4
    cdef const float32_t* Xvp = &Xvv[0, 0] if nv > 0 else NULL
    cdef float64_t e
    stage_seconds_arr = np.zeros(n_stages, dtype=np.float64)
    train_loss_arr = np.full(n_stages + 1, np.nan, dtype=np.float64)
    cdef float64_t[::1] stage_seconds = stage_seconds_arr, train_loss = train_loss_arr

    cdef Model M
    memset(&M, 0, sizeof(Model))
    M.width = width
    M.d = d
    cdef intp_t* leaf = <intp_t*> malloc(n * sizeof(intp_t))
    cdef float64_t* gcol = <float64_t*> malloc(n * sizeof(float64_t))
    cdef float64_t* phi = <float64_t*> malloc(max(q, 1) * d * sizeof(float64_t))
    cdef intp_t* perm = <intp_t*> malloc(d * sizeof(intp_t))
    cdef float64_t* rho = <float64_t*> malloc(d * sizeof(float64_t))
    cdef WPair* work = <WPair*> malloc((n + 1) * sizeof(WPair))
    cdef float64_t* ebuf = <float64_t*> malloc((n + 1) * sizeof(float64_t))
    # logistic loss: E = exp(2 y f) is kept and updated multiplicatively (one exp per leaf value), and recomputed
    # exactly every ESTATE_REFRESH stages so that rounding cannot drift
    cdef bint estate = loss == LOGISTIC and not brent
    Et_arr = np.empty((d if estate else 0, n), dtype=np.float64)
    cdef float64_t[:, ::1] Etv = Et_arr
    cdef float64_t* Et = &Etv[0, 0] if estate and n * d > 0 else NULL
    cdef float64_t* tab = <float64_t*> malloc((3 * max_leaf_nodes + 3) * sizeof(float64_t))
    cdef uint64_t pstate = proj_seed if proj_seed != 0 else 88172645463325252ULL
    cdef float64_t t0, v, s, scale, lr = learning_rate
    cdef intp_t stage, nl, lb, out
    cdef float64_t* V
    if (leaf == NULL or gcol == NULL or phi == NULL or perm == NULL or rho == NULL or work == NULL
            or ebuf == NULL or tab == NULL):
        free(leaf); free(gcol); free(phi); free(perm); free(rho); free(work); free(ebuf); free(tab)
        raise MemoryError()
    try:
        with nogil:
            if track_loss:
                s = 0.0
                for j in range(d):
                    s += _column_loss(loss, Yt + j * n, Ft + j * n, n)
                train_loss[0] = s
            t0 = t_start
            for stage in range(n_stages):
                if estate and stage % ESTATE_REFRESH == 0:
                    for j in range(d):
                        _logistic_state_reset(Yt + j * n, Ft + j * n, Et + j * n, n)
                for t in range(trees_per_stage):
                    # 1. negative gradient and split / leaf targets
                    if algo == ST:
                        out = t
                        if estate:
                            _logistic_state_gradient(Yt + out * n, Et + out * n, Rt + out * n, n)
                        else:
                            _column_gradient(loss, Yt + out * n, Ft + out * n, Rt + out * n, n)
                        memcpy(Zb, Rt + out * n, n * sizeof(float64_t))
                    else:
                        out = -1
                        if algo == RPO and estate:
                            # no gradient is stored: the projected one is summed straight from E = exp(2 y f),
                            # and the line searches read E too (a sub-sampling projection touches one column)
                            _draw_projection(pkind, q, d, phi, perm, &pstate)
                            memset(Zb, 0, n * q * sizeof(float64_t))
                            for k in range(q):
                                for j in range(d):
                                    v = phi[k * d + j]
                                    if v != 0.0:
                                        fb_project_gradient(Yt + j * n, Et + j * n, v, Zb + k, q, n)
                        else:
                            for j in range(d):
                                if estate:
                                    _logistic_state_gradient(Yt + j * n, Et + j * n, Rt + j * n, n)
                                else:
                                    _column_gradient(loss, Yt + j * n, Ft + j * n, Rt + j * n, n)
                        if algo == MORT:
                            for i in range(n):
                                for j in range(d):
                                    Zb[i * d + j] = Rt[j * n + i]
                        elif not (algo == RPO and estate):
                            _draw_projection(pkind, q, d, phi, perm, &pstate)
                            memset(Zb, 0, n * q * sizeof(float64_t))
                            for k in range(q):
                                for j in range(d):
                                    v = phi[k * d + j]
                                    if v != 0.0:
                                        for i in range(n):
                                            Zb[i * q + k] += v * Rt[j * n + i]
                            if algo == RELABEL:
                                for i in range(n):
                                    for j in range(d):
                                        Lb[i * d + j] = Rt[j * n + i]
                    # 2. grow the tree (the builder's stores are reset, its buffers kept)
                    if presort:
                        pbuilder.build(Zb, qz, Lb, width, leaf, &tstate)
                        _append_tree(&M, pbuilder.nodes, pbuilder.node_count, pbuilder.leaf_values,
                                     pbuilder.n_leaves, out)
                        nl = pbuilder.n_leaves
                    else:
                        builder.node_count = 0
                        builder.n_leaves = 0
                        builder.depth_seen = 0
                        builder._build_best_first()
                        _apply_builder(builder, Xp, rs, cs, n, leaf)
                        _append_tree(&M, builder.nodes, builder.node_count, builder.leaf_dense,
                                     builder.n_leaves, out)
                        nl = builder.n_leaves
                    lb = M.leaf_ptr[M.n_trees - 1]
                    V = M.values + lb * width
                    # 3. line search per output, scaling and update of the training scores
                    if algo == ST:
                        for i in range(n):
                            gcol[i] = V[leaf[i]]
                        if estate:
                            rho[0] = lr * _line_search_logistic_leaves(Yt + out * n, leaf, V, 1, nl, n,
                                                                       Et + out * n, tab)
                        else:
                            rho[0] = lr * _line_search(loss, Yt + out * n, Ft + out * n, Rt + out * n, gcol, n,
                                                       work, brent)
                        for l in range(nl):
                            V[l] *= rho[0]
                        for i in range(n):
                            Ft[out * n + i] += V[leaf[i]]
                        if estate:
                            _logistic_state_update(Yt + out * n, Et + out * n, leaf, V, 1, 1.0, nl, n, tab)
                    elif algo == RPO:
                        for i in range(n):
                            gcol[i] = V[leaf[i]]
                        grow_buffer(<void**> &M.coef, &M.coef_cap, M.n_trees * d, sizeof(float64_t))
                        for j in range(d):
                            if estate:
                                rho[j] = lr * _line_search_logistic_leaves(Yt + j * n, leaf, V, 1, nl, n,
                                                                           Et + j * n, tab)
                            else:
                                rho[j] = lr * _line_search(loss, Yt + j * n, Ft + j * n, Rt + j * n, gcol, n,
                                                           work, brent)
                            M.coef[(M.n_trees - 1) * d + j] = rho[j]
                            if rho[j] != 0.0:
                                for i in range(n):
                                    Ft[j * n + i] += rho[j] * gcol[i]
                                if estate:
                                    _logistic_state_update(Yt + j * n, Et + j * n, leaf, V, 1, rho[j], nl, n, tab)
                    else:
                        for j in range(d):
                            for i in range(n):
                                gcol[i] = V[leaf[i] * d + j]
                            if estate:
                                rho[j] = lr * _line_search_logistic_leaves(Yt + j * n, leaf, V + j, d, nl, n,
                                                                           Et + j * n, tab)
                            else:
                                rho[j] = lr * _line_search(loss, Yt + j * n, Ft + j * n, Rt + j * n, gcol, n,
                                                           work, brent)
                            for l in range(nl):
                                V[l * d + j] *= rho[j]
                            for i in range(n):
                                Ft[j * n + i] += V[leaf[i] * d + j]
                            if estate:
                                _logistic_state_update(Yt + j * n, Et + j * n, leaf, V + j, d, 1.0, nl, n, tab)
                if has_val and nv > 0:
                    for tt in range(M.n_trees - trees_per_stage, M.n_trees):
                        nbase = M.node_ptr[tt]
                        V = M.values + M.leaf_ptr[tt] * width
                        for i in range(nv):
                            node = 0
                            while M.left[nbase + node] != TREE_LEAF:
                                if Xvp[i * vrs + M.feature[nbase + node] * vcs] <= M.threshold[nbase + node]:
                                    node = M.left[nbase + node]
                                else:
                                    node = M.right[nbase + node]
                            row = M.leaf_index[nbase + node]
                            if algo == ST:
                                Fvv[i, M.output[tt]] += V[row]
                            elif algo == RPO:
                                for j in range(d):
                                    Fvv[i, j] += M.coef[tt * d + j] * V[row]
                            else:
                                for j in range(d):
                                    Fvv[i, j] += V[row * d + j]
                    for i in range(nv):
                        for j in range(d):
                            e = Yvv[i, j] - Fvv[i, j]
                            val_sse[stage, j] += e * e
                stage_seconds[stage] = _now() - t0
                if track_loss:
                    s = 0.0
                    for j in range(d):
                        s += _column_loss(loss, Yt + j * n, Ft + j * n, n)
                    train_loss[stage + 1] = s
        out_dict = _export(&M, algo)
    finally:
        free(leaf); free(gcol); free(phi); free(perm); free(rho); free(work); free(ebuf); free(tab)
        _free_model(&M)
    out_dict["stage_seconds"] = stage_seconds_arr
    out_dict["train_loss"] = train_loss_arr
    out_dict["train_scores"] = np.ascontiguousarray(Ft_arr.T)
    out_dict["val_sse"] = val_sse_arr
    return out_dict


cdef dict _export(Model* M, int algo):
    cdef intp_t nn = M.n_nodes, nt = M.n_trees
    out = {}
    for name, size, dtype in (("left", nn, np.intp), ("right", nn, np.intp), ("feature", nn, np.intp),
                              ("leaf_index", nn, np.intp), ("threshold", nn, np.float64),
                              ("node_ptr", nt + 1, np.intp), ("leaf_ptr", nt + 1, np.intp),
                              ("output", nt, np.intp)):
        out[name] = np.zeros(size, dtype=dtype)
    out["values"] = np.zeros(M.n_leaves * M.width, dtype=np.float64)
    out["coef"] = np.zeros((nt if algo == RPO else 0, M.d), dtype=np.float64)
    cdef intp_t[::1] a
    cdef float64_t[::1] b
    if nn > 0:
        a = out["left"]; memcpy(&a[0], M.left, nn * sizeof(intp_t))
        a = out["right"]; memcpy(&a[0], M.right, nn * sizeof(intp_t))
        a = out["feature"]; memcpy(&a[0], M.feature, nn * sizeof(intp_t))
        a = out["leaf_index"]; memcpy(&a[0], M.leaf_index, nn * sizeof(intp_t))
        b = out["threshold"]; memcpy(&b[0], M.threshold, nn * sizeof(float64_t))
    if nt > 0:
        a = out["node_ptr"]; memcpy(&a[0], M.node_ptr, (nt + 1) * sizeof(intp_t))
        a = out["leaf_ptr"]; memcpy(&a[0], M.leaf_ptr, (nt + 1) * sizeof(intp_t))
        a = out["output"]; memcpy(&a[0], M.output, nt * sizeof(intp_t))
        if algo == RPO:
            b = out["coef"].reshape(-1); memcpy(&b[0], M.coef, nt * M.d * sizeof(float64_t))
    if M.n_leaves * M.width > 0:
        b = out["values"]; memcpy(&b[0], M.values, M.n_leaves * M.width * sizeof(float64_t))
    return out


cdef int _check_predict_inputs(object X, const intp_t[::1] left, const intp_t[::1] right,
                               const intp_t[::1] feature, const float64_t[::1] threshold,
                               const intp_t[::1] leaf_index, const intp_t[::1] node_ptr, const intp_t[::1] leaf_ptr,
                               const float64_t[::1] values, const float64_t[:, ::1] coef, const intp_t[::1] output,
                               int kind, intp_t t_start, intp_t t_end, intp_t n_rows, intp_t d) except -1:
    """Refuse, before the compiled traversal runs, inputs it would read out of bounds: X against the split
    features of trees [t_start, t_end), F (``n_rows`` x ``d``) against X's rows and the model's outputs, the tree
    range and the leaf tables. The model arrays are the ones ``boost`` exported (their sizes are checked here).
    Typed loops over the range's nodes only, so that a staged prediction (one call per stage) stays cheap."""
    cdef intp_t n_trees = node_ptr.shape[0] - 1, nn = left.shape[0], t, node, lo, hi, width, p
    if not (isinstance(X, np.ndarray) and X.ndim == 2 and X.dtype == np.float32):
        raise ValueError(f"predict_add: X must be a 2-D float32 array, got {type(X).__name__} "
                         f"{getattr(X, 'dtype', '')} {getattr(X, 'shape', '')}")
    p = X.shape[1]
    if not 0 <= t_start <= t_end <= n_trees:
        raise ValueError(f"predict_add: tree range [{t_start}, {t_end}) outside the model's {n_trees} trees")
    if n_rows != X.shape[0]:
        raise ValueError(f"predict_add: F has {n_rows} rows, X has {X.shape[0]}")
    if not (right.shape[0] == nn and feature.shape[0] == nn and threshold.shape[0] == nn
            and leaf_index.shape[0] == nn and leaf_ptr.shape[0] == n_trees + 1
            and (output.shape[0] == 0 or output.shape[0] == n_trees)):
        raise ValueError("predict_add: the model's node arrays disagree in length")
    if t_end == t_start:
        return 0
    lo, hi = node_ptr[t_start], node_ptr[t_end]
    if not 0 <= lo <= hi <= nn:
        raise ValueError("predict_add: node_ptr points outside the node arrays")
    for node in range(lo, hi):
        if left[node] != TREE_LEAF and (feature[node] < 0 or feature[node] >= p):
            raise ValueError(f"predict_add: X has {p} columns but the trees split on feature {feature[node]}")
    width = d if kind == 0 else 1
    if leaf_ptr[t_end] * width > values.shape[0]:
        raise ValueError(f"predict_add: values holds {values.shape[0]} numbers, the trees need "
                         f"{leaf_ptr[t_end] * width}")
    if kind == 1 and (coef.shape[0] < t_end or coef.shape[1] != d):
        raise ValueError(f"predict_add: coef has shape ({coef.shape[0]}, {coef.shape[1]}), expected "
                         f"({n_trees}, {d})")
    if kind == 2:
        if output.shape[0] < t_end:
            raise ValueError("predict_add: the model has no output column per tree")
        for t in range(t_start, t_end):
            if output[t] < 0 or output[t] >= d:
                raise ValueError(f"predict_add: a tree adds to output {output[t]}, F has {d} columns")
    return 0


def predict_add(X, const intp_t[::1] left, const intp_t[::1] right, const intp_t[::1] feature,
                const float64_t[::1] threshold, const intp_t[::1] leaf_index, const intp_t[::1] node_ptr,
                const intp_t[::1] leaf_ptr, const float64_t[::1] values, const float64_t[:, ::1] coef,
                const intp_t[::1] output, int kind, intp_t t_start, intp_t t_end, float64_t[:, ::1] F):
    """Add the contributions of trees [t_start, t_end) to the scores F (n, d), in place.

    kind 0: leaves hold d-vectors; 1: scalar leaves times the tree's ``coef`` row; 2: scalar leaves added to the
    tree's ``output`` column."""
    cdef const float32_t[:, :] Xv = X
    cdef intp_t n = X.shape[0], d = F.shape[1], i, j, t, node, base, row
    cdef intp_t rs = X.strides[0] // 4, cs = X.strides[1] // 4
    cdef const float32_t* Xp = &Xv[0, 0] if n > 0 else NULL
    cdef float64_t v
    _check_predict_inputs(X, left, right, feature, threshold, leaf_index, node_ptr, leaf_ptr, values, coef, output,
                          kind, t_start, t_end, F.shape[0], d)
    if n == 0:
        return
    with nogil:
        for t in range(t_start, t_end):
            base = node_ptr[t]
            for i in range(n):
                node = 0
                while left[base + node] != TREE_LEAF:
                    if Xp[i * rs + feature[base + node] * cs] <= threshold[base + node]:
                        node = left[base + node]
                    else:
                        node = right[base + node]
                row = leaf_ptr[t] + leaf_index[base + node]
                if kind == 0:
                    for j in range(d):
                        F[i, j] += values[row * d + j]
                elif kind == 1:
                    v = values[row]
                    for j in range(d):
                        F[i, j] += coef[t, j] * v
                else:
                    F[i, output[t]] += values[row]
