"""Feature access for the splitter: dense (C or Fortran) and sparse CSC inputs.

Dense input is read in the layout it was given through its two strides, so a
Fortran array is scanned column-contiguously and a C array is not copied.

Sparse CSC input follows thesis ch.8 (spec compress_sparse.md part B). A
mapping array keeps ``mapping[samples[p]] == p`` for every position p (every
swap of ``samples`` goes through ``_swap_mapped``), so "row i is in the node"
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
import scipy.sparse as sp

from forestbench.tree._utils cimport sort_values, same_value


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
        while q + 1 < end and same_value(Xf[q + 1], Xf[q]):
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


cdef inline void _swap_mapped(intp_t* samples, intp_t* mapping, intp_t a, intp_t b) noexcept nogil:
    # every move of a sample keeps mapping[samples[p]] == p (thesis Alg. 8.3)
    cdef intp_t s = samples[a]
    samples[a] = samples[b]
    samples[b] = s
    mapping[samples[a]] = a
    mapping[s] = b


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
        self.node_features = NULL

    def __init__(self, intp_t n_rows, data, indices, indptr):
        cdef intp_t i
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
        self.extract_switch = 0.1
        nnz = np.diff(indptr).astype(np.float64)
        with np.errstate(divide="ignore"):
            self._log_nnz = np.ascontiguousarray(np.log(np.maximum(nnz, 1.0)))
        cdef const float64_t[::1] lv = self._log_nnz
        self.log_nnz = &lv[0] if lv.shape[0] > 0 else NULL
        # the features of each row (the CSR pattern of X, without values): a node marks the
        # features that have a stored entry in one of its rows; the others are all zero there
        # (scipy's CSC -> CSR transposition: O(nnz), no sort)
        n_features = indptr.shape[0] - 1
        pattern = sp.csc_matrix((np.ones(indices.shape[0], dtype=np.int8), indices, indptr),
                                shape=(n_rows, n_features)).tocsr()
        row_features = np.ascontiguousarray(pattern.indices, dtype=np.int32)
        row_indptr = np.ascontiguousarray(pattern.indptr, dtype=np.intp)
        self._keep_rows = (row_features, row_indptr)
        cdef const int32_t[::1] rfv = row_features
        cdef const intp_t[::1] rpv = row_indptr
        self.row_features = &rfv[0] if rfv.shape[0] > 0 else NULL
        self.row_indptr = &rpv[0]
        self.node_features = <intp_t*> malloc((n_features if n_features > 0 else 1) * sizeof(intp_t))
        if self.node_features == NULL:
            raise MemoryError()
        for i in range(n_features):
            self.node_features[i] = -1
        self.node_stamp = -1

    def __dealloc__(self):
        free(self.mapping)
        free(self.sorted_samples)
        free(self.node_features)

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
        cdef intp_t p, k, row
        cdef intp_t* node_features = self.node_features
        cdef const int32_t* row_features = self.row_features
        cdef const intp_t* row_indptr = self.row_indptr
        cdef intp_t stamp
        self.start = start
        self.end = end
        self.is_samples_sorted = 0
        self.log_n = log(<double>(end - start)) if end > start else 0.0
        # features with a stored entry in the node: O(entries of the node's rows)
        self.node_stamp += 1
        stamp = self.node_stamp
        for p in range(start, end):
            row = self.samples[p]
            for k in range(row_indptr[row], row_indptr[row + 1]):
                node_features[row_features[k]] = stamp

    cdef void extract_nnz(self, intp_t f) noexcept nogil:
        cdef intp_t k_start = self.indptr[f], k_end = self.indptr[f + 1]
        cdef intp_t n_nz = k_end - k_start
        cdef intp_t start = self.start, end = self.end, n = end - start
        cdef intp_t k, idx, p, target
        # locals (built with -fno-strict-aliasing: fields would be reloaded in the loops)
        cdef intp_t end_negative = start, start_positive = end
        cdef intp_t* samples = self.samples
        cdef intp_t* mapping = self.mapping
        cdef intp_t* sorted_samples = self.sorted_samples
        cdef const int32_t* indices = self.indices
        cdef const float32_t* data = self.data
        cdef float32_t* Xf = self.Xf
        cdef float32_t v
        if n_nz > 0:
            if ((1 - self.is_samples_sorted) * n * self.log_n + n * self.log_nnz[f]
                    < self.extract_switch * n_nz):
                # binary search of each (sorted) node sample in the sorted column
                if not self.is_samples_sorted:
                    for p in range(start, end):
                        sorted_samples[p] = samples[p]
                    qsort(sorted_samples + start, n, sizeof(intp_t), _cmp_intp)
                    self.is_samples_sorted = 1
                k_start = _lower_bound(indices, k_start, k_end, sorted_samples[start])
                k_end = _lower_bound(indices, k_start, k_end, sorted_samples[end - 1] + 1)
                p = start
                while p < end and k_start < k_end:
                    target = sorted_samples[p]
                    k = _lower_bound(indices, k_start, k_end, target)
                    if k < k_end and indices[k] == target:
                        v = data[k]
                        idx = mapping[target]
                        if v > 0:
                            start_positive -= 1
                            Xf[start_positive] = v
                            _swap_mapped(samples, mapping, idx, start_positive)
                        elif v < 0:
                            Xf[end_negative] = v
                            _swap_mapped(samples, mapping, idx, end_negative)
                            end_negative += 1
                        k_start = k + 1
                    else:
                        k_start = k
                    p += 1
            else:
                # scan the column, O(1) membership test through the mapping array
                for k in range(k_start, k_end):
                    idx = mapping[indices[k]]
                    if start <= idx < end:
                        v = data[k]
                        if v > 0:
                            start_positive -= 1
                            Xf[start_positive] = v
                            _swap_mapped(samples, mapping, idx, start_positive)
                        elif v < 0:
                            Xf[end_negative] = v
                            _swap_mapped(samples, mapping, idx, end_negative)
                            end_negative += 1
                        # stored zeros stay in the zero block
        self.end_negative = end_negative
        self.start_positive = start_positive

    cdef void sort_feature(self, intp_t f) noexcept nogil:
        cdef intp_t p
        cdef intp_t* samples = self.samples
        cdef intp_t* mapping = self.mapping
        self.extract_nnz(f)
        sort_values(self.Xf + self.start, samples + self.start, self.end_negative - self.start)
        for p in range(self.start, self.end_negative):
            mapping[samples[p]] = p
        sort_values(self.Xf + self.start_positive, samples + self.start_positive,
                    self.end - self.start_positive)
        for p in range(self.start_positive, self.end):
            mapping[samples[p]] = p
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
        while q_next < self.end and same_value(self.Xf[q_next], self.Xf[q]):
            q = q_next
            q_next = q + 1 if q + 1 != self.end_negative else self.start_positive
        p_prev[0] = q
        p[0] = q_next

    cdef intp_t partition_samples(self, float64_t threshold) noexcept nogil:
        # valid right after extract_nnz (blocks not moved by sentinels)
        cdef intp_t p, stop
        cdef float32_t tv
        cdef float32_t* Xf = self.Xf
        if threshold < 0.0:
            p = self.start
            stop = self.end_negative
        elif threshold > 0.0:
            p = self.start_positive
            stop = self.end
        else:
            return self.start_positive
        while p < stop:
            if Xf[p] <= threshold:
                p += 1
            else:
                stop -= 1
                tv = Xf[p]
                Xf[p] = Xf[stop]
                Xf[stop] = tv
                _swap_mapped(self.samples, self.mapping, p, stop)
        return stop

    cdef void partition_final(self, intp_t f, float64_t threshold) noexcept nogil:
        self.extract_nnz(f)
        self.partition_samples(threshold)


def _extract_for_test(X, samples, intp_t start, intp_t end, intp_t feature, double switch):
    """Run the CSC extraction once (tests only).

    Returns ``(samples, mapping, Xf, end_negative, start_positive)`` after
    ``extract_nnz`` of ``feature`` on the node ``samples[start:end]``;
    ``switch`` = 0 forces the mapping scan, a huge value the binary search.
    """
    cdef SparsePartitioner part = SparsePartitioner(X.shape[0], X.data, X.indices, X.indptr)
    s = np.array(samples, dtype=np.intp)
    xf = np.zeros(s.shape[0], dtype=np.float32)
    cdef intp_t[::1] sv = s
    cdef float32_t[::1] xv = xf
    part.set_buffers(&sv[0], &xv[0], s.shape[0])
    part.extract_switch = switch
    part.init_node(start, end)
    part.extract_nnz(feature)
    mapping = np.array([part.mapping[i] for i in range(part.n_rows)], dtype=np.intp)
    return s, mapping, xf, part.end_negative, part.start_positive
