# Losses and line searches of the boosting loop (see _losses.pyx); one output = one contiguous column of n samples.
from forestbench.tree._utils cimport intp_t, float64_t

cdef enum:
    SQUARE = 0
    ABSOLUTE = 1
    LOGISTIC = 2

cdef struct WPair:
    # one term of the absolute loss' weighted median
    float64_t value
    float64_t weight

cdef float64_t column_loss(int loss, const float64_t* y, const float64_t* f, intp_t n) noexcept nogil
cdef void column_gradient(int loss, const float64_t* y, const float64_t* f, float64_t* r, intp_t n) noexcept nogil
cdef float64_t line_search_step(int loss, const float64_t* y, const float64_t* f, const float64_t* r,
                                const float64_t* g, intp_t n, WPair* work, bint brent,
                                bint* bounded) noexcept nogil
cdef float64_t line_search_logistic_leaves(const float64_t* y, const intp_t* leaf, const float64_t* gl,
                                           intp_t gstride, intp_t n_leaves, intp_t n, const float64_t* e,
                                           float64_t* tab, bint* bounded) noexcept nogil
cdef void logistic_state_gradient(const float64_t* y, const float64_t* E, float64_t* r, intp_t n) noexcept nogil
cdef void logistic_state_reset(const float64_t* y, const float64_t* f, float64_t* E, intp_t n) noexcept nogil
cdef void logistic_state_update(const float64_t* y, float64_t* E, const intp_t* leaf, const float64_t* delta,
                                intp_t stride, float64_t scale, intp_t n_leaves, intp_t n,
                                float64_t* tab) noexcept nogil
cdef void project_gradient(const float64_t* y, const float64_t* E, float64_t v, float64_t* z, intp_t zstride,
                           intp_t n) noexcept nogil
