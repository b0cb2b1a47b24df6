# Shared C-level helpers of the tree kernel: fixed-width types, the kernel's constants and split rules (every
# splitter and tree builder, the presorted one of the boosting loop included, reads them from here), a small
# deterministic random number generator, the (value, sample) sort and the growth of C buffers.
from libc.stdint cimport uint64_t, int32_t
from libc.math cimport INFINITY, fabs

ctypedef Py_ssize_t intp_t
ctypedef float float32_t
ctypedef double float64_t

cdef extern from *:
    """
    /* forestbench tree kernel constants: defined here once, for every module that cimports _utils */
    #if defined(__GNUC__)
    #define FB_CONSTANT static const __attribute__((unused))
    #else
    #define FB_CONSTANT static const
    #endif
    FB_CONSTANT float FB_FEATURE_THRESHOLD = 1e-7;         /* feature values closer than this are equal */
    FB_CONSTANT double FB_PROXY_RTOL = 1e-10;              /* relative margin a later split candidate must beat */
    FB_CONSTANT double FB_EPSILON = 2.220446049250313e-16; /* float64 machine epsilon: impurity taken as 0 */
    FB_CONSTANT Py_ssize_t FB_TREE_LEAF = -1;              /* child id of a leaf */
    FB_CONSTANT Py_ssize_t FB_TREE_UNDEFINED = -2;         /* feature and threshold of a leaf */
    """
    const float32_t FEATURE_THRESHOLD "FB_FEATURE_THRESHOLD"
    const float64_t PROXY_RTOL "FB_PROXY_RTOL"
    const float64_t EPSILON "FB_EPSILON"
    const intp_t TREE_LEAF "FB_TREE_LEAF"
    const intp_t TREE_UNDEFINED "FB_TREE_UNDEFINED"


cdef inline bint beats(float64_t proxy, float64_t best) noexcept nogil:
    """A split candidate's proxy replaces the best so far only if larger by the relative margin PROXY_RTOL: rounding
    differences between sample orders then cannot break exact ties (the first candidate visited wins)."""
    return proxy > best + PROXY_RTOL * fabs(best)


cdef inline bint same_value(float32_t next_value, float32_t value) noexcept nogil:
    """Two consecutive sorted feature values are one value (no cut between them)."""
    return next_value <= value + FEATURE_THRESHOLD


cdef inline intp_t next_position(const float32_t* Xf, intp_t p, intp_t end, intp_t jump_from, intp_t jump_to,
                                 intp_t* last) noexcept nogil:
    """The first position after ``p``'s run of equal sorted values (``end`` or beyond if none); ``last[0]`` gets the
    run's last position. From ``jump_from`` the walk continues at ``jump_to`` (the sparse partitioner's block of
    zeros; -1 for dense input)."""
    cdef intp_t q = p, q_next = p + 1
    if q_next == jump_from:
        q_next = jump_to
    while q_next < end and same_value(Xf[q_next], Xf[q]):
        q = q_next
        q_next = q + 1
        if q_next == jump_from:
            q_next = jump_to
    last[0] = q
    return q_next


cdef inline float64_t add_rows(float64_t* acc, const float64_t* Z, intp_t d, const intp_t* samples,
                               const float64_t* sw, intp_t lo, intp_t hi, float64_t wsum) noexcept nogil:
    """``acc[k] += w_i Z[i, k]`` for the samples at positions ``lo`` .. ``hi - 1``, in that order; returns ``wsum``
    plus their weights, added one by one (``sw`` NULL: unit weights)."""
    cdef intp_t j, k, i
    cdef float64_t w = 1.0
    cdef const float64_t* row
    for j in range(lo, hi):
        i = samples[j]
        if sw != NULL:
            w = sw[i]
        row = Z + i * d
        for k in range(d):
            acc[k] += w * row[k]
        wsum += w
    return wsum


cdef inline float64_t subtract_rows(float64_t* acc, const float64_t* Z, intp_t d, const intp_t* samples,
                                    const float64_t* sw, intp_t lo, intp_t hi, float64_t wsum) noexcept nogil:
    """``acc[k] -= w_i Z[i, k]`` for the samples at positions ``hi - 1`` down to ``lo``, in that order; returns
    ``wsum`` minus their weights, subtracted one by one."""
    cdef intp_t j, k, i
    cdef float64_t w = 1.0
    cdef const float64_t* row
    for j in range(hi - 1, lo - 1, -1):
        i = samples[j]
        if sw != NULL:
            w = sw[i]
        row = Z + i * d
        for k in range(d):
            acc[k] -= w * row[k]
        wsum -= w
    return wsum


cdef inline float64_t midpoint_threshold(float32_t low, float32_t high) noexcept nogil:
    """Threshold of a cut between two consecutive distinct sorted values: halfway, or ``low`` where the halfway
    point rounds onto ``high`` or overflows (x <= threshold goes left)."""
    cdef float64_t threshold = low / 2.0 + high / 2.0
    if threshold == high or threshold == INFINITY or threshold == -INFINITY:
        threshold = low
    return threshold

cdef inline uint64_t rng_next(uint64_t* state) noexcept nogil:
    """xorshift64* step: 64 bits of output, state must never be 0."""
    cdef uint64_t x = state[0]
    x ^= x >> 12
    x ^= x << 25
    x ^= x >> 27
    state[0] = x
    return x * <uint64_t>2685821657736338717ULL


cdef inline intp_t rand_int(intp_t low, intp_t high, uint64_t* state) noexcept nogil:
    """Integer in [low, high) (0 < high - low < 2^32): multiply-shift of the top 32 bits."""
    return low + <intp_t>(((rng_next(state) >> 32) * <uint64_t>(high - low)) >> 32)


cdef inline float64_t rand_uniform(float64_t low, float64_t high, uint64_t* state) noexcept nogil:
    """Double in [low, high) from the top 53 bits of one draw."""
    return low + (high - low) * (<float64_t>(rng_next(state) >> 11) * (1.0 / 9007199254740992.0))


cdef uint64_t seed_state(uint64_t seed) noexcept nogil

cdef void sort_values(float32_t* values, intp_t* samples, intp_t n) noexcept nogil

cdef int grow_buffer(void** ptr, intp_t* capacity, intp_t needed, size_t item_size) except -1 nogil
