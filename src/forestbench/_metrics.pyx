# cython: language_level=3
"""Per-row label ranking average precision (LRAP) of many labels, one pass over each row's scores.

For a positive label j of a row, LRAP needs two counts: the labels scoring at least s_j (``rank_all``) and the
positive labels scoring at least s_j (``rank_rel``). ``forestbench.metrics`` sorted every row and searched the
positive scores in it: d log d comparisons per row, where the rows of the multi-label sets hold a few positive
labels among hundreds (delicious: 19 of 983). Here only the m positive scores of a row are sorted; one pass over
the row's d scores counts, for each score, the positive scores at or below it (a binary search among m), in a
histogram of m + 1 bins. A positive label whose score has ``lo`` positive scores strictly below it is reached by
exactly the scores whose count is above ``lo``, so its ``rank_all`` is a suffix sum of the histogram and its
``rank_rel`` is ``m - lo``: d log m comparisons per row, ties counted as scikit-learn's "max" ranks count them.

The per-row sum of ``rank_rel / rank_all`` over the positive labels, in label order, is formed as NumPy's
``add.reduceat`` formed it in the whole-matrix implementation this replaces (the first term, plus NumPy's pairwise
sum of the others, blocks of 128 with eight partial sums), so every score is the same number to the bit.
"""
import numpy as np

from libc.stdlib cimport malloc, free, qsort

from forestbench.tree._utils cimport intp_t, float64_t


cdef int _ascending(const void* a, const void* b) noexcept nogil:
    cdef float64_t x = (<const float64_t*> a)[0], y = (<const float64_t*> b)[0]
    return (x > y) - (x < y)


cdef inline intp_t _count_at_most(const float64_t* sorted_scores, intp_t m, float64_t x) noexcept nogil:
    """Positive scores <= x (m >= 1). Branch-free: the loop runs ceil(log2 m) steps whatever x is, and each step
    moves the base by a comparison's 0/1, which the compiler keeps out of the branch predictor (the scores of a
    row compare unpredictably with its positive scores)."""
    cdef intp_t base = 0, size = m, half
    while size > 1:
        half = size >> 1
        base += half * (sorted_scores[base + half - 1] <= x)
        size -= half
    return base + (sorted_scores[base] <= x)


#: up to this many positive labels in a row, their ranks are counted directly (m x d comparisons), above it
#: through a sort of the positive scores and a histogram (d log m)
cdef enum:
    FEW_POSITIVES = 32


cdef inline intp_t _count_at_least(const float64_t* values, intp_t size, float64_t x) noexcept nogil:
    """Values >= x."""
    cdef intp_t k, c = 0
    for k in range(size):
        c += values[k] >= x
    return c


cdef inline intp_t _count_below(const float64_t* sorted_scores, intp_t m, float64_t x) noexcept nogil:
    """Positive scores < x (the first position holding one >= x)."""
    cdef intp_t lo = 0, hi = m, mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if sorted_scores[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


cdef float64_t _pairwise_sum(const float64_t* a, intp_t n) noexcept nogil:
    """NumPy's pairwise summation of n doubles (its ``pairwise_sum`` for float64, block size 128)."""
    cdef float64_t res, r0, r1, r2, r3, r4, r5, r6, r7
    cdef intp_t i, n2
    if n < 8:
        res = 0.0
        for i in range(n):
            res += a[i]
        return res
    if n <= 128:
        r0, r1, r2, r3 = a[0], a[1], a[2], a[3]
        r4, r5, r6, r7 = a[4], a[5], a[6], a[7]
        i = 8
        while i < n - (n % 8):
            r0 += a[i]
            r1 += a[i + 1]
            r2 += a[i + 2]
            r3 += a[i + 3]
            r4 += a[i + 4]
            r5 += a[i + 5]
            r6 += a[i + 6]
            r7 += a[i + 7]
            i += 8
        res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
        while i < n:
            res += a[i]
            i += 1
        return res
    n2 = n // 2
    n2 -= n2 % 8
    return _pairwise_sum(a, n2) + _pairwise_sum(a + n2, n - n2)


def lrap_rows(const unsigned char[:, ::1] relevant, const float64_t[:, ::1] scores):
    """Each row's LRAP, for rows that hold at least one positive label (``relevant``: 0/1, ``scores``: finite; the
    caller, ``forestbench.metrics``, checks both). A row whose labels are all positive scores 1."""
    cdef intp_t n = scores.shape[0], d = scores.shape[1], i, j, m, c, lo
    cdef float64_t* positive = <float64_t*> malloc(max(d, 1) * sizeof(float64_t))
    cdef float64_t* sorted_scores = <float64_t*> malloc(max(d, 1) * sizeof(float64_t))
    cdef float64_t* ratio = <float64_t*> malloc(max(d, 1) * sizeof(float64_t))
    cdef intp_t* above = <intp_t*> malloc((d + 2) * sizeof(intp_t))
    out_arr = np.empty(n, dtype=np.float64)
    cdef float64_t[::1] out = out_arr
    cdef const float64_t* row
    cdef const unsigned char* rel
    if positive == NULL or sorted_scores == NULL or ratio == NULL or above == NULL:
        free(positive)
        free(sorted_scores)
        free(ratio)
        free(above)
        raise MemoryError()
    try:
        with nogil:
            for i in range(n):
                row = &scores[i, 0]
                rel = &relevant[i, 0]
                m = 0
                for j in range(d):
                    if rel[j]:
                        positive[m] = row[j]
                        m += 1
                if m == d:
                    out[i] = 1.0                      # every label positive: 1 (scikit-learn's rule)
                    continue
                if m == 0:
                    out[i] = 0.0                      # not called for such rows; defined anyway
                    continue
                if m <= FEW_POSITIVES:
                    # few positive labels: count each one's two ranks directly, d + m independent comparisons
                    # each (vectorised), with no sort and no histogram whose bins the scores would update in turn
                    for j in range(m):
                        ratio[j] = (<float64_t> _count_at_least(positive, m, positive[j])) / \
                            (<float64_t> _count_at_least(row, d, positive[j]))
                    if m == 1:
                        out[i] = ratio[0]
                    else:
                        out[i] = (ratio[0] + _pairwise_sum(ratio + 1, m - 1)) / m
                    continue
                for j in range(m):
                    sorted_scores[j] = positive[j]
                qsort(sorted_scores, m, sizeof(float64_t), _ascending)
                # above[c]: the scores with exactly c positive scores at or below them, then the suffix sums
                for c in range(m + 2):
                    above[c] = 0
                for j in range(d):
                    above[_count_at_most(sorted_scores, m, row[j])] += 1
                for c in range(m - 1, -1, -1):
                    above[c] += above[c + 1]
                for j in range(m):
                    lo = _count_below(sorted_scores, m, positive[j])
                    # scores >= s_j are those with more than lo positive scores at or below them
                    ratio[j] = (<float64_t> (m - lo)) / (<float64_t> above[lo + 1])
                if m == 1:
                    out[i] = ratio[0]
                else:
                    out[i] = (ratio[0] + _pairwise_sum(ratio + 1, m - 1)) / m
    finally:
        free(positive)
        free(sorted_scores)
        free(ratio)
        free(above)
    return out_arr
