# Shared C-level helpers of the tree kernel: fixed-width types, a small
# deterministic random number generator and the (value, sample) sort.
from libc.stdint cimport uint64_t, int32_t

ctypedef Py_ssize_t intp_t
ctypedef float float32_t
ctypedef double float64_t

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
