"""Losses and line searches of the compiled boosting loop (:mod:`forestbench.boosting._loop`).

One output is one contiguous column of n samples. Losses: square (1/2 (y - f)^2), absolute (|y - f|) and logistic
(log(1 + exp(-2 y f)), labels coded -1/+1). Line search along a step g: square loss in closed form
(``rho = sum r g / sum g^2``; 0 when g is 0 everywhere), absolute loss exactly as the weighted median of
``(y - f) / g`` with weights ``|g|``, logistic loss by a root search on the derivative of the (convex) loss along the
step, kept inside the derivative's sign-change bracket: Halley steps for a tree step (one value per leaf, from the
kept ``E = exp(2 y f)``), Newton steps for a general direction, or Brent's method. The logistic step is bounded:
no score moves by more than ``LOGISTIC_STEP_BOUND`` (53 ln 2) in one step, see ``_step_bound``. The passes over
the samples of the logistic line search live in ``_logistic_pass.h`` (vectorised where the processor allows, same
bits); only this module includes it, so the implementation level chosen by :func:`logistic_pass_level` is one per
process.
"""
from libc.stdlib cimport malloc, free
from libc.math cimport exp, log1p, fabs, fmin, fmax, INFINITY

import numpy as np

from forestbench.tree._utils cimport intp_t, float64_t

cdef extern from "_logistic_pass.h" nogil:
    # one pass of the logistic line search, eight lanes wide, vectorised where the processor allows (same bits)
    void fb_logistic_pass(const float64_t* y, const float64_t* e, const intp_t* leaf, const float64_t* tab,
                          const float64_t* g, intp_t n_leaves, intp_t n, float64_t* out)
    int fb_logistic_pass_level(int wanted)
    void fb_logistic_update(const float64_t* y, float64_t* E, const intp_t* leaf, const float64_t* tab,
                            intp_t n_leaves, intp_t n)
    void fb_project_gradient(const float64_t* y, const float64_t* E, float64_t v, float64_t* z, intp_t zstride,
                             intp_t n)


LOSSES = {"square": SQUARE, "absolute": ABSOLUTE, "logistic": LOGISTIC}


# --------------------------------------------------------------------------------------------------------------
# losses (one output = one contiguous column of n samples)

cdef inline float64_t _logistic_loss(float64_t y, float64_t f) noexcept nogil:
    # log(1 + exp(-2 y f)), y in {-1, +1}, without overflow
    cdef float64_t t = -2.0 * y * f
    if t > 0:
        return t + log1p(exp(-t))
    return log1p(exp(t))


cdef float64_t column_loss(int loss, const float64_t* y, const float64_t* f, intp_t n) noexcept nogil:
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


cdef void column_gradient(int loss, const float64_t* y, const float64_t* f, float64_t* r,
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
    cdef int _it
    for _it in range(200):
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


# The bound on a logistic step, in score units: where the loss keeps falling along the step (the step separates the
# output's labels), the exact minimiser is at infinity and the unbounded search ran the scores to inf / NaN. A
# probability 1 / (1 + exp(-2 f)) is within 2^-53 of 0 or 1 from |2 f| = 53 ln 2 on, so a move of 53 ln 2 in f
# takes any sample from certainly wrong to certainly right; past it a step gains nothing a double can show for the
# samples it moves most. The step is the exact minimiser where that lies within the bound, else the bound (the
# loss is convex, so it still falls at every step and the training loss stays non-increasing).
LOGISTIC_STEP_BOUND = 53.0 * 0.6931471805599453
cdef float64_t STEP_BOUND = LOGISTIC_STEP_BOUND


cdef inline float64_t _step_bound(float64_t gmax) noexcept nogil:
    """The largest |rho| of a logistic step along g with max_i |g_i| = gmax: no score moves by more than
    ``STEP_BOUND``."""
    return STEP_BOUND / gmax if gmax > 0 else INFINITY


# a Newton step this small (relative) ends the line search: quadratic convergence leaves an error of ~1e-14
cdef float64_t NEWTON_ACCEPT = 1e-7
# the same for a Halley step (cubic convergence: an error of ~1e-15)
cdef float64_t HALLEY_ACCEPT = 1e-5


cdef float64_t _line_search_logistic_newton(const float64_t* y, const float64_t* f, const float64_t* r,
                                            const float64_t* g, intp_t n, bint* bounded) noexcept nogil:
    """argmin_rho of the logistic loss along g: Newton steps kept inside the sign-change bracket of the slope
    (bisection when a step leaves it), so it converges for any start; one pass over the samples per step. |rho| is
    at most ``_step_bound``; ``bounded`` is set when the bound decided the step."""
    cdef intp_t i
    cdef float64_t slope0 = 0.0, curv = 0.0, ar, scale = 0.0, sign = 1.0, gmax = 0.0
    cdef float64_t lo = 0.0, hi = INFINITY, rho, new, sl, cv, rho_max
    cdef int _it
    for i in range(n):
        if g[i] != 0.0:
            slope0 -= g[i] * r[i]
            ar = fabs(r[i])
            curv += g[i] * g[i] * ar * (2.0 - ar)
            scale += 2.0 * fabs(g[i])
            gmax = fmax(gmax, fabs(g[i]))
    bounded[0] = False
    if slope0 == 0.0 or scale == 0.0:
        return 0.0
    if slope0 > 0:
        # solve along -g: the minimiser is then at a positive step
        sign = -1.0
        slope0 = -slope0
    rho_max = _step_bound(gmax)
    rho = -slope0 / curv if curv > 0 else 1.0
    for _it in range(100):
        _logistic_slope_curv(y, f, g, n, rho, sign, &sl, &cv)
        if sl < 0:
            lo = rho
            if lo >= rho_max:
                # the loss still falls at the bound: the minimiser lies past it
                break
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
    # the search's path is the unbounded one until it passes the bound, so below it the step is unchanged (bits)
    bounded[0] = rho > rho_max
    return sign * fmin(rho, rho_max)


cdef float64_t line_search_logistic_leaves(const float64_t* y, const intp_t* leaf, const float64_t* gl,
                                           intp_t gstride, intp_t n_leaves, intp_t n, const float64_t* e,
                                           float64_t* tab, bint* bounded) noexcept nogil:
    """The bracketed search of :func:`_line_search_logistic_newton` for a tree step, with Halley's steps in place
    of Newton's. The step g_i = gl[leaf_i * gstride] takes one value per leaf, so exp(2 y_i (f_i + rho g_i)) =
    e_i exp(2 y_i rho g_i) with the kept e_i = exp(2 y_i f_i): 2 x n_leaves exponentials per step instead of one
    per sample. With a_i = 2 / (1 + exp(2 y_i (f_i + rho g_i))) the derivatives along the step are -sum g y a,
    sum g^2 a (2 - a) and -sum g^3 y a (2 - a) (2 - 2 a), all from one pass (``fb_logistic_pass``, a division per
    sample, eight lanes wide); at rho = 0 the pass gives the negative gradient y a = 2 y / (1 + e) itself, so no
    stored gradient is read. About 2.8 passes per search on the delicious-sized benchmark against 5 with Newton's
    steps. ``tab`` holds 3 x n_leaves doubles. Bounded as the Newton search is (every leaf holds a training
    sample, so the largest |leaf value| is the largest |g_i|)."""
    cdef intp_t k, _it
    cdef float64_t slope0, curv, scale, sign = 1.0, sl, cv, third, gmax = 0.0
    cdef float64_t lo = 0.0, hi = INFINITY, rho, new, rho_max
    cdef float64_t sums[4]
    cdef float64_t* G = tab + 2 * n_leaves
    for k in range(n_leaves):
        G[k] = gl[k * gstride]
        gmax = fmax(gmax, fabs(G[k]))
        tab[2 * k] = 1.0
        tab[2 * k + 1] = 1.0
    bounded[0] = False
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
        for k in range(n_leaves):
            G[k] = -G[k]
    # Halley steps (slope, curvature and third derivative from the same pass: cubic convergence), kept inside the
    # sign-change bracket of the slope like the Newton search
    rho_max = _step_bound(gmax)
    rho = _halley_step(0.0, slope0, curv, third)
    for _it in range(100):
        for k in range(n_leaves):
            tab[2 * k] = exp(2.0 * rho * G[k])        # y = +1
            tab[2 * k + 1] = 1.0 / tab[2 * k] if tab[2 * k] > 0 else INFINITY
        fb_logistic_pass(y, e, leaf, tab, G, n_leaves, n, sums)
        sl = -sums[0]
        cv = sums[1]
        third = -sums[2]
        if sl < 0:
            lo = rho
            if lo >= rho_max:
                break
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
    bounded[0] = rho > rho_max
    return sign * fmin(rho, rho_max)


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
                                     const float64_t* g, intp_t n, bint* bounded) noexcept nogil:
    """argmin_rho sum_i log(1 + exp(-2 y_i (f_i + rho g_i))); r is the negative gradient at f. |rho| is at most
    ``_step_bound``, as in the Newton search."""
    cdef intp_t i
    cdef float64_t slope0 = 0.0, curv = 0.0, ar, step, a, fa, b, fb, scale = 0.0, tol, gmax = 0.0, rho_max
    cdef int k
    for i in range(n):
        if g[i] != 0.0:
            slope0 -= g[i] * r[i]
            ar = fabs(r[i])
            curv += g[i] * g[i] * ar * (2.0 - ar)
            scale += fabs(g[i])
            gmax = fmax(gmax, fabs(g[i]))
    bounded[0] = False
    if slope0 == 0.0 or scale == 0.0:
        return 0.0
    rho_max = _step_bound(gmax)
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
        if k >= 60 or fabs(fb) <= 1e-13 * fabs(slope0) or fabs(b) >= rho_max:
            # the loss keeps decreasing (a label never / always positive): stop at a finite step
            return _clip_step(b, rho_max, bounded)
        a = b
        fa = fb
        step *= 2.0
        b = a + step
        fb = _logistic_slope(y, f, g, n, b)
        k += 1
    tol = 1e-10 * (fabs(a) + fabs(b)) + 1e-300
    return _clip_step(_brent_root(y, f, g, n, a, fa, b, fb, tol), rho_max, bounded)


cdef inline float64_t _clip_step(float64_t rho, float64_t rho_max, bint* bounded) noexcept nogil:
    """rho with |rho| <= rho_max, and whether the bound decided it."""
    bounded[0] = fabs(rho) > rho_max
    if rho > rho_max:
        return rho_max
    if rho < -rho_max:
        return -rho_max
    return rho


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
                tmp = a[i]
                a[i] = a[lt]
                a[lt] = tmp
                lt += 1
                i += 1
            elif a[i].value > pivot:
                gt -= 1
                tmp = a[i]
                a[i] = a[gt]
                a[gt] = tmp
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


cdef float64_t line_search_step(int loss, const float64_t* y, const float64_t* f, const float64_t* r,
                                const float64_t* g, intp_t n, WPair* work, bint brent, bint* bounded) noexcept nogil:
    """The step length along g for one output; ``bounded`` is set when the logistic step bound decided it."""
    cdef intp_t i
    cdef float64_t num = 0.0, den = 0.0
    bounded[0] = False
    if loss == SQUARE:
        for i in range(n):
            num += r[i] * g[i]
            den += g[i] * g[i]
        return num / den if den > 0 else 0.0
    if loss == ABSOLUTE:
        return _line_search_absolute(y, f, g, n, work)
    if brent:
        return _line_search_logistic(y, f, r, g, n, bounded)
    return _line_search_logistic_newton(y, f, r, g, n, bounded)


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


def line_search(str loss, y, f, g, str method="newton", bint return_bounded=False):
    """Step length rho minimising ``sum_i loss(y_i, f_i + rho g_i)`` for one output (exposed for testing); with
    ``return_bounded``, also whether the logistic step bound decided it."""
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
    cdef bint bounded = False
    try:
        column_gradient(code, &yv[0], &fv[0], &rv[0], n)
        rho = line_search_step(code, &yv[0], &fv[0], &rv[0], &gv[0], n, work, method == "brent", &bounded)
    finally:
        free(work)
    return (rho, bool(bounded)) if return_bounded else rho


cdef void logistic_state_gradient(const float64_t* y, const float64_t* E, float64_t* r, intp_t n) noexcept nogil:
    """Negative logistic gradient 2 y / (1 + exp(2 y f)) from the kept E = exp(2 y f)."""
    cdef intp_t i
    for i in range(n):
        r[i] = 2.0 * y[i] / (1.0 + E[i])


cdef void logistic_state_reset(const float64_t* y, const float64_t* f, float64_t* E, intp_t n) noexcept nogil:
    cdef intp_t i
    for i in range(n):
        E[i] = exp(2.0 * y[i] * f[i])


cdef void logistic_state_update(const float64_t* y, float64_t* E, const intp_t* leaf, const float64_t* delta,
                                intp_t stride, float64_t scale, intp_t n_leaves, intp_t n,
                                float64_t* tab) noexcept nogil:
    """E_i *= exp(2 y_i scale delta[leaf_i * stride]): the scores moved by one value per leaf, 2 exps per leaf."""
    cdef intp_t k
    for k in range(n_leaves):
        tab[2 * k] = exp(2.0 * scale * delta[k * stride])
        tab[2 * k + 1] = 1.0 / tab[2 * k] if tab[2 * k] > 0 else INFINITY
    fb_logistic_update(y, E, leaf, tab, n_leaves, n)


cdef void project_gradient(const float64_t* y, const float64_t* E, float64_t v, float64_t* z, intp_t zstride,
                           intp_t n) noexcept nogil:
    """z[i * zstride] += v * (negative logistic gradient of sample i), the gradient read from the kept
    E = exp(2 y f) (``_logistic_pass.h``; every module shares this one copy of its implementation choice)."""
    fb_project_gradient(y, E, v, z, zstride, n)
