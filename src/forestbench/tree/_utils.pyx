"""C helpers of the tree kernel: RNG seeding and an introspective sort.

The sort orders ``values[0:n]`` ascending and applies the same permutation to
``samples[0:n]``. Ranges of n >= RADIX_MIN (64) use a stable LSD radix sort on
the 32-bit keys of the floats (sign-flipped so that unsigned order equals
float order; 8-bit digits, passes whose digit is the same for every key are
skipped). Shorter ranges use a quicksort with a median-of-three pivot and a
three-way (less / equal / greater) partition, so runs of equal feature values
(common in sparse or discretised data) are settled in one pass; recursion
deeper than 2*log2(n) falls back to heapsort and short ranges use insertion
sort.
"""
from libc.stdlib cimport malloc, realloc, free
from libc.string cimport memset, memcpy
from libc.stdint cimport uint32_t

cdef intp_t RADIX_MIN = 64
cdef enum:
    RADIX_STACK = 1024

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


# The bit reinterpretations below go through memcpy (one register move once compiled): a pointer cast would read
# an object through another type, which C's aliasing rules leave undefined at -O3.
cdef inline uint32_t _float_key(float32_t x) noexcept nogil:
    cdef uint32_t u
    memcpy(&u, &x, sizeof(uint32_t))
    if u >> 31:
        return ~u
    return u | 0x80000000u


cdef inline float32_t _key_float(uint32_t k) noexcept nogil:
    cdef uint32_t u
    if k >> 31:
        u = k ^ 0x80000000u
    else:
        u = ~k
    cdef float32_t x
    memcpy(&x, &u, sizeof(float32_t))
    return x


cdef int _radix_sort(float32_t* v, intp_t* s, intp_t n) noexcept nogil:
    # short ranges use stack scratch space, long ones the heap
    cdef uint32_t stack_keys[2 * RADIX_STACK]
    cdef intp_t stack_s2[RADIX_STACK]
    if n <= RADIX_STACK:
        _radix_pass(v, s, n, stack_keys, stack_keys + RADIX_STACK, stack_s2)
        return 0
    cdef uint32_t* keys = <uint32_t*> malloc(n * sizeof(uint32_t))
    cdef uint32_t* keys2 = <uint32_t*> malloc(n * sizeof(uint32_t))
    cdef intp_t* s2 = <intp_t*> malloc(n * sizeof(intp_t))
    if keys == NULL or keys2 == NULL or s2 == NULL:
        free(keys)
        free(keys2)
        free(s2)
        return -1
    _radix_pass(v, s, n, keys, keys2, s2)
    free(keys)
    free(keys2)
    free(s2)
    return 0


cdef void _radix_pass(float32_t* v, intp_t* s, intp_t n, uint32_t* keys, uint32_t* keys2,
                      intp_t* s2) noexcept nogil:
    cdef intp_t hist[4][256]
    cdef intp_t i, b, total, c, shift, pos
    cdef int d
    cdef uint32_t u, first
    cdef uint32_t* src
    cdef uint32_t* dst
    cdef uint32_t* tk
    cdef intp_t* ssrc
    cdef intp_t* sdst
    cdef intp_t* ts
    memset(&hist[0][0], 0, sizeof(hist))
    for i in range(n):
        u = _float_key(v[i])
        keys[i] = u
        hist[0][u & 0xFF] += 1
        hist[1][(u >> 8) & 0xFF] += 1
        hist[2][(u >> 16) & 0xFF] += 1
        hist[3][u >> 24] += 1
    src = keys
    dst = keys2
    ssrc = s
    sdst = s2
    first = keys[0]
    for d in range(4):
        shift = 8 * d
        if hist[d][(first >> shift) & 0xFF] == n:
            continue            # every key has the same digit: nothing to do
        total = 0
        for b in range(256):
            c = hist[d][b]
            hist[d][b] = total
            total += c
        for i in range(n):
            u = src[i]
            b = (u >> shift) & 0xFF
            pos = hist[d][b]
            hist[d][b] = pos + 1
            dst[pos] = u
            sdst[pos] = ssrc[i]
        tk = src
        src = dst
        dst = tk
        ts = ssrc
        ssrc = sdst
        sdst = ts
    if ssrc != s:
        memcpy(s, ssrc, n * sizeof(intp_t))
    for i in range(n):
        v[i] = _key_float(src[i])


cdef void sort_values(float32_t* values, intp_t* samples, intp_t n) noexcept nogil:
    if n <= 1:
        return
    cdef int depth = 0
    cdef intp_t m = n
    if n >= RADIX_MIN and _radix_sort(values, samples, n) == 0:
        return
    while m > 1:
        m >>= 1
        depth += 1
    _introsort(values, samples, n, 2 * depth)


cdef int grow_buffer(void** ptr, intp_t* capacity, intp_t needed, size_t item_size) except -1 nogil:
    """Make the malloc'ed buffer at ``ptr`` hold at least ``needed`` items of ``item_size`` bytes: its capacity
    (in items) doubles from 16 until it does, the contents are kept. MemoryError if the allocation fails."""
    cdef intp_t new_cap = capacity[0] if capacity[0] > 0 else 16
    cdef void* new_ptr
    if needed <= capacity[0]:
        return 0
    while new_cap < needed:
        new_cap *= 2
    new_ptr = realloc(ptr[0], new_cap * item_size)
    if new_ptr == NULL:
        with gil:
            raise MemoryError(f"could not grow a buffer to {new_cap} items of {item_size} bytes")
    ptr[0] = new_ptr
    capacity[0] = new_cap
    return 0
