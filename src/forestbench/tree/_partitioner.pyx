"""Feature access for the splitter: dense (C or Fortran) and sparse CSC inputs.

Dense input is read in the layout it was given through its two strides, so a
Fortran array is scanned column-contiguously and a C array is not copied.

Sparse CSC input follows thesis ch.8 (spec compress_sparse.md part B). A
mapping array keeps ``mapping[samples[p]] == p`` for every position p (every
swap of ``samples`` goes through ``_sparse_swap``), so "row i is in the node"
is the O(1) test ``start <= mapping[i] < end``. For feature j the non-zeros of
the node are extracted either by scanning the column and testing each row with
the mapping (cost O(nnz_j)) or, when the node is small compared to the column,
by binary searching each of the node's samples (sorted once per node) in the
column (cost O(n log nnz_j) + O(n log n) for the sort). The switch is
scikit-learn's form of Eq. 8.6 (the thesis text has the branches reversed):
binary search iff (1 - sorted) n ln n + n ln nnz_j < 0.1 nnz_j.
Extraction leaves a three-way partition of ``samples[start:end]``:
negatives | zeros | positives; only the non-zero blocks are sorted, and the
zero block is swept in one step with two 0 sentinels in ``Xf``.
"""
from libc.stdlib cimport malloc, free, qsort
from libc.math cimport log

import numpy as np

from forestbench.tree._utils cimport sort_values

cdef float32_t FEATURE_THRESHOLD = 1e-7


cdef class Partitioner:
    cdef int set_buffers(self, intp_t* samples, float32_t* Xf, intp_t n_samples) except -1:
        self.samples = samples
        self.Xf = Xf
        self.n_samples = n_samples
        return 0

    cdef void init_node(self, intp_t start, intp_t end) noexcept nogil:
        self.start = start
        self.end = end

    cdef void sort_feature(self, intp_t f) noexcept nogil:
        pass

    cdef void find_min_max(self, intp_t f, float32_t* min_value, float32_t* max_value) noexcept nogil:
        pass

    cdef void next_p(self, intp_t* p_prev, intp_t* p) noexcept nogil:
        pass

    cdef intp_t partition_samples(self, float64_t threshold) noexcept nogil:
        return 0

    cdef void partition_final(self, intp_t f, float64_t threshold) noexcept nogil:
        pass


cdef class DensePartitioner(Partitioner):
    def __init__(self, X):
        if X.dtype != np.float32 or X.ndim != 2:
            raise ValueError("X must be a 2-D float32 array")
        if not (X.flags.c_contiguous or X.flags.f_contiguous):
            raise ValueError("X must be C or Fortran contiguous")
        self._keep = X
        cdef const float32_t[:, :] xv = X
        self.X = &xv[0, 0] if X.size > 0 else NULL
        self.row_stride = X.strides[0] // 4
        self.col_stride = X.strides[1] // 4

    cdef void sort_feature(self, intp_t f) noexcept nogil:
        cdef intp_t p, rs = self.row_stride
        cdef const float32_t* col = self.X + f * self.col_stride
        cdef float32_t* Xf = self.Xf
        cdef const intp_t* samples = self.samples
        if rs == 1:
            for p in range(self.start, self.end):
                Xf[p] = col[samples[p]]
        else:
            for p in range(self.start, self.end):
                Xf[p] = col[samples[p] * rs]
        sort_values(self.Xf + self.start, self.samples + self.start, self.end - self.start)

    cdef void find_min_max(self, intp_t f, float32_t* min_value, float32_t* max_value) noexcept nogil:
        cdef intp_t p, rs = self.row_stride
        cdef const float32_t* col = self.X + f * self.col_stride
        cdef float32_t v, lo, hi
        cdef float32_t* Xf = self.Xf
        cdef const intp_t* samples = self.samples
        v = col[samples[self.start] * rs]
        Xf[self.start] = v
        lo = v
        hi = v
        for p in range(self.start + 1, self.end):
            v = col[samples[p] * rs]
            Xf[p] = v
            if v < lo:
                lo = v
            elif v > hi:
                hi = v
        min_value[0] = lo
        max_value[0] = hi

    cdef void next_p(self, intp_t* p_prev, intp_t* p) noexcept nogil:
        cdef intp_t q = p[0], end = self.end
        cdef const float32_t* Xf = self.Xf
        while q + 1 < end and Xf[q + 1] <= Xf[q] + FEATURE_THRESHOLD:
            q += 1
        p_prev[0] = q
        p[0] = q + 1

    cdef intp_t partition_samples(self, float64_t threshold) noexcept nogil:
        cdef intp_t p = self.start, stop = self.end, ts
        cdef float32_t tv
        cdef float32_t* Xf = self.Xf
        cdef intp_t* samples = self.samples
        while p < stop:
            if Xf[p] <= threshold:
                p += 1
            else:
                stop -= 1
                tv = Xf[p]
                Xf[p] = Xf[stop]
                Xf[stop] = tv
                ts = samples[p]
                samples[p] = samples[stop]
                samples[stop] = ts
        return stop

    cdef void partition_final(self, intp_t f, float64_t threshold) noexcept nogil:
        cdef intp_t p = self.start, stop = self.end, ts, rs = self.row_stride
        cdef const float32_t* col = self.X + f * self.col_stride
        cdef intp_t* samples = self.samples
        while p < stop:
            if col[samples[p] * rs] <= threshold:
                p += 1
            else:
                stop -= 1
                ts = samples[p]
                samples[p] = samples[stop]
                samples[stop] = ts


cdef int _cmp_intp(const void* a, const void* b) noexcept nogil:
    cdef intp_t x = (<const intp_t*> a)[0]
    cdef intp_t y = (<const intp_t*> b)[0]
    return (x > y) - (x < y)


cdef inline intp_t _lower_bound(const int32_t* a, intp_t lo, intp_t hi, intp_t target) noexcept nogil:
    # first k in [lo, hi) with a[k] >= target
    cdef intp_t mid
    while lo < hi:
        mid = lo + (hi - lo) // 2
        if a[mid] < target:
            lo = mid + 1
        else:
            hi = mid
    return lo


cdef class SparsePartitioner(Partitioner):
    def __cinit__(self, *args, **kwargs):
        self.mapping = NULL
        self.sorted_samples = NULL

    def __init__(self, intp_t n_rows, data, indices, indptr):
        data = np.ascontiguousarray(data, dtype=np.float32)
        indices = np.ascontiguousarray(indices, dtype=np.int32)
        indptr = np.ascontiguousarray(indptr, dtype=np.int32)
        self._keep = (data, indices, indptr)
        cdef const float32_t[::1] dv = data
        cdef const int32_t[::1] iv = indices
        cdef const int32_t[::1] pv = indptr
        self.data = &dv[0] if dv.shape[0] > 0 else NULL
        self.indices = &iv[0] if iv.shape[0] > 0 else NULL
        self.indptr = &pv[0]
        self.n_rows = n_rows

    def __dealloc__(self):
        free(self.mapping)
        free(self.sorted_samples)

    cdef int set_buffers(self, intp_t* samples, float32_t* Xf, intp_t n_samples) except -1:
        cdef intp_t i
        Partitioner.set_buffers(self, samples, Xf, n_samples)
        free(self.mapping)
        free(self.sorted_samples)
        self.mapping = <intp_t*> malloc((self.n_rows if self.n_rows > 0 else 1) * sizeof(intp_t))
        self.sorted_samples = <intp_t*> malloc((n_samples if n_samples > 0 else 1) * sizeof(intp_t))
        if self.mapping == NULL or self.sorted_samples == NULL:
            raise MemoryError()
        for i in range(self.n_rows):
            self.mapping[i] = -1
        for i in range(n_samples):
            self.mapping[samples[i]] = i
        return 0

    cdef void init_node(self, intp_t start, intp_t end) noexcept nogil:
        self.start = start
        self.end = end
        self.is_samples_sorted = 0

    cdef void _sparse_swap(self, intp_t a, intp_t b) noexcept nogil:
        cdef intp_t s = self.samples[a]
        self.samples[a] = self.samples[b]
        self.samples[b] = s
        self.mapping[self.samples[a]] = a
        self.mapping[s] = b

    cdef void _take(self, intp_t position, float32_t value) noexcept nogil:
        # the sample at `position` has non-zero `value`: move it to its block
        if value > 0:
            self.start_positive -= 1
            self.Xf[self.start_positive] = value
            self._sparse_swap(position, self.start_positive)
        elif value < 0:
            self.Xf[self.end_negative] = value
            self._sparse_swap(position, self.end_negative)
            self.end_negative += 1
        # stored zeros stay in the zero block

    cdef void extract_nnz(self, intp_t f) noexcept nogil:
        cdef intp_t k_start = self.indptr[f], k_end = self.indptr[f + 1]
        cdef intp_t n_nz = k_end - k_start
        cdef intp_t start = self.start, end = self.end, n = end - start
        cdef intp_t k, idx, p, target
        self.end_negative = start
        self.start_positive = end
        if n_nz == 0:
            return
        if ((1 - self.is_samples_sorted) * n * log(<double>n) + n * log(<double>n_nz)
                < 0.1 * n_nz):
            # binary search of each (sorted) node sample in the sorted column
            if not self.is_samples_sorted:
                for p in range(start, end):
                    self.sorted_samples[p] = self.samples[p]
                qsort(self.sorted_samples + start, n, sizeof(intp_t), _cmp_intp)
                self.is_samples_sorted = 1
            k_start = _lower_bound(self.indices, k_start, k_end, self.sorted_samples[start])
            k_end = _lower_bound(self.indices, k_start, k_end, self.sorted_samples[end - 1] + 1)
            p = start
            while p < end and k_start < k_end:
                target = self.sorted_samples[p]
                k = _lower_bound(self.indices, k_start, k_end, target)
                if k < k_end and self.indices[k] == target:
                    self._take(self.mapping[target], self.data[k])
                    k_start = k + 1
                else:
                    k_start = k
                p += 1
        else:
            # scan the column, O(1) membership test through the mapping array
            for k in range(k_start, k_end):
                idx = self.mapping[self.indices[k]]
                if start <= idx < end:
                    self._take(idx, self.data[k])

    cdef void sort_feature(self, intp_t f) noexcept nogil:
        cdef intp_t p
        self.extract_nnz(f)
        sort_values(self.Xf + self.start, self.samples + self.start, self.end_negative - self.start)
        for p in range(self.start, self.end_negative):
            self.mapping[self.samples[p]] = p
        sort_values(self.Xf + self.start_positive, self.samples + self.start_positive,
                    self.end - self.start_positive)
        for p in range(self.start_positive, self.end):
            self.mapping[self.samples[p]] = p
        # zero sentinels so that next_p moves the whole zero block at once
        if self.end_negative < self.start_positive:
            self.start_positive -= 1
            self.Xf[self.start_positive] = 0.0
            if self.end_negative != self.start_positive:
                self.Xf[self.end_negative] = 0.0
                self.end_negative += 1

    cdef void find_min_max(self, intp_t f, float32_t* min_value, float32_t* max_value) noexcept nogil:
        cdef intp_t p
        cdef float32_t lo, hi, v
        self.extract_nnz(f)
        if self.end_negative < self.start_positive:
            lo = 0.0
            hi = 0.0
        elif self.end_negative > self.start:
            lo = self.Xf[self.start]
            hi = lo
        else:
            lo = self.Xf[self.start_positive]
            hi = lo
        for p in range(self.start, self.end_negative):
            v = self.Xf[p]
            if v < lo:
                lo = v
            elif v > hi:
                hi = v
        for p in range(self.start_positive, self.end):
            v = self.Xf[p]
            if v < lo:
                lo = v
            elif v > hi:
                hi = v
        min_value[0] = lo
        max_value[0] = hi

    cdef void next_p(self, intp_t* p_prev, intp_t* p) noexcept nogil:
        cdef intp_t q = p[0]
        cdef intp_t q_next = q + 1 if q + 1 != self.end_negative else self.start_positive
        while q_next < self.end and self.Xf[q_next] <= self.Xf[q] + FEATURE_THRESHOLD:
            q = q_next
            q_next = q + 1 if q + 1 != self.end_negative else self.start_positive
        p_prev[0] = q
        p[0] = q_next

    cdef intp_t partition_samples(self, float64_t threshold) noexcept nogil:
        # valid right after extract_nnz (blocks not moved by sentinels)
        cdef intp_t p, stop
        cdef float32_t tv
        if threshold < 0.0:
            p = self.start
            stop = self.end_negative
        elif threshold > 0.0:
            p = self.start_positive
            stop = self.end
        else:
            return self.start_positive
        while p < stop:
            if self.Xf[p] <= threshold:
                p += 1
            else:
                stop -= 1
                tv = self.Xf[p]
                self.Xf[p] = self.Xf[stop]
                self.Xf[stop] = tv
                self._sparse_swap(p, stop)
        return stop

    cdef void partition_final(self, intp_t f, float64_t threshold) noexcept nogil:
        self.extract_nnz(f)
        self.partition_samples(threshold)
