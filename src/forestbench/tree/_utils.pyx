"""C helpers of the tree kernel: RNG seeding and an introspective sort.

The sort orders ``values[0:n]`` ascending and applies the same permutation to
``samples[0:n]``. It is a quicksort with a median-of-three pivot and a
three-way (less / equal / greater) partition, so runs of equal feature values
(common in sparse or discretised data) are settled in one pass; recursion
deeper than 2*log2(n) falls back to heapsort and short ranges use insertion
sort.
"""
from libc.math cimport log2

cdef uint64_t seed_state(uint64_t seed) noexcept nogil:
    # splitmix64 finaliser spreads small integer seeds over the 64-bit state
    cdef uint64_t z = seed + <uint64_t>11400714819323198485ULL
    z = (z ^ (z >> 30)) * <uint64_t>13787848793156543929ULL
    z = (z ^ (z >> 27)) * <uint64_t>10723151780598845931ULL
    z = z ^ (z >> 31)
    if z == 0:
        z = 88172645463325252ULL
    return z


cdef inline void _swap(float32_t* v, intp_t* s, intp_t i, intp_t j) noexcept nogil:
    cdef float32_t tv = v[i]
    cdef intp_t ts = s[i]
    v[i] = v[j]
    v[j] = tv
    s[i] = s[j]
    s[j] = ts


cdef inline float32_t _median_of_three(float32_t* v, intp_t n) noexcept nogil:
    cdef float32_t a = v[0]
    cdef float32_t b = v[n // 2]
    cdef float32_t c = v[n - 1]
    if a < b:
        if b < c:
            return b
        elif a < c:
            return c
        return a
    if a < c:
        return a
    elif b < c:
        return c
    return b


cdef void _insertion_sort(float32_t* v, intp_t* s, intp_t n) noexcept nogil:
    cdef intp_t i, j
    cdef float32_t key
    cdef intp_t ks
    for i in range(1, n):
        key = v[i]
        ks = s[i]
        j = i - 1
        while j >= 0 and v[j] > key:
            v[j + 1] = v[j]
            s[j + 1] = s[j]
            j -= 1
        v[j + 1] = key
        s[j + 1] = ks


cdef void _sift_down(float32_t* v, intp_t* s, intp_t root, intp_t end) noexcept nogil:
    cdef intp_t child, largest
    while True:
        child = 2 * root + 1
        if child >= end:
            return
        largest = root
        if v[child] > v[largest]:
            largest = child
        if child + 1 < end and v[child + 1] > v[largest]:
            largest = child + 1
        if largest == root:
            return
        _swap(v, s, root, largest)
        root = largest


cdef void _heapsort(float32_t* v, intp_t* s, intp_t n) noexcept nogil:
    cdef intp_t start = (n - 2) // 2
    cdef intp_t end
    while start >= 0:
        _sift_down(v, s, start, n)
        start -= 1
    end = n - 1
    while end > 0:
        _swap(v, s, 0, end)
        _sift_down(v, s, 0, end)
        end -= 1


cdef void _introsort(float32_t* v, intp_t* s, intp_t n, int depth_budget) noexcept nogil:
    cdef float32_t pivot
    cdef intp_t lo, i, hi
    while n > 16:
        if depth_budget <= 0:
            _heapsort(v, s, n)
            return
        depth_budget -= 1
        pivot = _median_of_three(v, n)
        lo = 0
        i = 0
        hi = n
        # invariant: v[0:lo] < pivot, v[lo:i] == pivot, v[hi:n] > pivot
        while i < hi:
            if v[i] < pivot:
                _swap(v, s, lo, i)
                lo += 1
                i += 1
            elif v[i] > pivot:
                hi -= 1
                _swap(v, s, i, hi)
            else:
                i += 1
        # recurse on the smaller side, loop on the larger one
        if lo < n - hi:
            _introsort(v, s, lo, depth_budget)
            v += hi
            s += hi
            n -= hi
        else:
            _introsort(v + hi, s + hi, n - hi, depth_budget)
            n = lo
    _insertion_sort(v, s, n)


cdef void sort_values(float32_t* values, intp_t* samples, intp_t n) noexcept nogil:
    if n <= 1:
        return
    _introsort(values, samples, n, 2 * <int>log2(<double>n))
