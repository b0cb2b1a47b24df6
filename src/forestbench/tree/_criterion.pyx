"""Split criterion (multi-output variance) and leaf-value accumulation.

The criterion scores splits with the variance of the *split targets* Z summed
over outputs and divided by their number, exactly the scikit-learn
``squared_error`` criterion. The leaf targets Y (possibly different from Z,
e.g. Z = a random projection of Y) are averaged separately by ``LeafTargets``.

Sparse (CSR) targets: moving a sample from the right to the left child costs
O(non-zeros of that sample), never O(n_outputs). For each output k we keep
``sum_left[k]`` and, incrementally, the two scalars
``S_L = sum_k sum_left[k]^2`` and ``S_R = sum_k (sum_total[k] - sum_left[k])^2``;
adding ``u = w z_ik`` to ``sum_left[k] = a`` changes ``S_L`` by ``(a+u)^2 - a^2``
and ``S_R`` by ``(t-a-u)^2 - (t-a)^2``. Resets only clear the outputs that were
touched. With 0/1 targets and integer weights all these quantities are exact
integers, so sparse and dense targets give bit-identical scores.
"""
from libc.stdlib cimport malloc, calloc, free
from libc.string cimport memset, memcpy

from forestbench.tree._utils cimport add_rows, subtract_rows

import numpy as np

cdef enum:
    SIDE_BLOCK = 256   # set_left_by_threshold gathers the positions of one side this many rows at a time


cdef class Criterion:
    def __cinit__(self, intp_t n_outputs, *args, **kwargs):
        self.n_outputs = n_outputs
        self.sum_total = <float64_t*> calloc(n_outputs if n_outputs > 0 else 1, sizeof(float64_t))
        self.sum_left = <float64_t*> calloc(n_outputs if n_outputs > 0 else 1, sizeof(float64_t))
        if self.sum_total == NULL or self.sum_left == NULL:
            raise MemoryError()
        self.sample_weight = NULL
        self.samples = NULL

    def __dealloc__(self):
        free(self.sum_total)
        free(self.sum_left)

    cdef void set_samples(self, const intp_t* samples, const float64_t* sample_weight,
                          float64_t weighted_n_samples) noexcept nogil:
        self.samples = samples
        self.sample_weight = sample_weight
        self.weighted_n_samples = weighted_n_samples

    cdef void init_node(self, intp_t start, intp_t end) noexcept nogil:
        pass

    cdef void reset(self) noexcept nogil:
        pass

    cdef void update(self, intp_t new_pos) noexcept nogil:
        pass

    cdef float64_t node_impurity(self) noexcept nogil:
        return 0.0

    cdef float64_t proxy_impurity_improvement(self) noexcept nogil:
        return 0.0

    cdef void children_impurity(self, float64_t* impurity_left,
                                float64_t* impurity_right) noexcept nogil:
        pass

    cdef float64_t impurity_improvement(self, float64_t impurity_parent,
                                        float64_t impurity_left,
                                        float64_t impurity_right) noexcept nogil:
        # weighted decrease of impurity, relative to the whole training set
        return ((self.weighted_n_node_samples / self.weighted_n_samples) *
                (impurity_parent
                 - (self.weighted_n_right / self.weighted_n_node_samples) * impurity_right
                 - (self.weighted_n_left / self.weighted_n_node_samples) * impurity_left))


cdef class DenseCriterion(Criterion):
    def __cinit__(self, intp_t n_outputs, *args, **kwargs):
        self.sum_right = <float64_t*> calloc(n_outputs if n_outputs > 0 else 1, sizeof(float64_t))
        if self.sum_right == NULL:
            raise MemoryError()

    def __init__(self, intp_t n_outputs, Z):
        Z = np.ascontiguousarray(Z, dtype=np.float64)
        if Z.ndim != 2 or Z.shape[1] != n_outputs:
            raise ValueError("Z must be 2-D with n_outputs columns")
        self._keep = Z
        cdef const float64_t[:, ::1] zv = Z
        self.Z = &zv[0, 0] if Z.size > 0 else NULL

    def __dealloc__(self):
        free(self.sum_right)

    cdef void init_node(self, intp_t start, intp_t end) noexcept nogil:
        # locals, not fields: through self, the running sum of squares would be stored and reloaded after every
        # store to sum_total (which may alias it for the compiler), doubling the latency of its chain of additions;
        # the order of the additions is unchanged
        cdef intp_t p, i, k, d = self.n_outputs
        cdef float64_t w = 1.0, z, sq = 0.0, wn = 0.0
        cdef const float64_t* row
        cdef const float64_t* Z = self.Z
        cdef const float64_t* sw = self.sample_weight
        cdef const intp_t* samples = self.samples
        cdef float64_t* sum_total = self.sum_total
        self.start = start
        self.end = end
        memset(sum_total, 0, d * sizeof(float64_t))
        for p in range(start, end):
            i = samples[p]
            if sw != NULL:
                w = sw[i]
            row = Z + i * d
            for k in range(d):
                z = w * row[k]
                sum_total[k] += z
                sq += z * row[k]
            wn += w
        self.sq_sum_total = sq
        self.weighted_n_node_samples = wn
        self.reset()

    cdef void reset(self) noexcept nogil:
        self.pos = self.start
        self.weighted_n_left = 0.0
        self.weighted_n_right = self.weighted_n_node_samples
        memset(self.sum_left, 0, self.n_outputs * sizeof(float64_t))
        memcpy(self.sum_right, self.sum_total, self.n_outputs * sizeof(float64_t))

    cdef void update(self, intp_t new_pos) noexcept nogil:
        # locals: the extension is built with -fno-strict-aliasing, so fields
        # read through self would be reloaded in every iteration
        cdef intp_t p, i, k, d = self.n_outputs
        cdef float64_t w = 1.0, wsum, acc
        cdef const float64_t* Z = self.Z
        cdef const float64_t* sw = self.sample_weight
        cdef const intp_t* samples = self.samples
        cdef float64_t* sum_left = self.sum_left
        cdef float64_t* sum_right = self.sum_right
        cdef float64_t* sum_total = self.sum_total
        cdef intp_t lo, hi
        cdef bint forward = (new_pos - self.pos) <= (self.end - new_pos)
        if forward:
            # add [pos, new_pos) to the left
            lo = self.pos
            hi = new_pos
        else:
            # fewer moves from the other end: start from "all left", remove [new_pos, end)
            memcpy(sum_left, sum_total, d * sizeof(float64_t))
            self.weighted_n_left = self.weighted_n_node_samples
            lo = new_pos
            hi = self.end
        wsum = self.weighted_n_left
        if d == 1:
            acc = sum_left[0]
            if forward:
                for p in range(lo, hi):
                    i = samples[p]
                    if sw != NULL:
                        w = sw[i]
                    acc += w * Z[i]
                    wsum += w
            else:
                for p in range(hi - 1, lo - 1, -1):
                    i = samples[p]
                    if sw != NULL:
                        w = sw[i]
                    acc -= w * Z[i]
                    wsum -= w
            sum_left[0] = acc
        elif forward:
            wsum = add_rows(sum_left, Z, d, samples, sw, lo, hi, wsum)
        else:
            wsum = subtract_rows(sum_left, Z, d, samples, sw, lo, hi, wsum)
        self.weighted_n_left = wsum
        self.weighted_n_right = self.weighted_n_node_samples - self.weighted_n_left
        for k in range(d):
            sum_right[k] = sum_total[k] - sum_left[k]
        self.pos = new_pos

    cdef intp_t set_left_by_threshold(self, const float32_t* Xf, float64_t threshold) noexcept nogil:
        """Left statistics of the rule Xf[p] <= threshold, without moving samples.

        One pass over the node (branch-free for a single output), used by the
        random splitter on dense inputs instead of partition + update. Returns
        the number of samples going left. ``pos`` is set to start + that
        number, but samples are not reordered: call ``reset``/``update`` after
        partitioning before ``children_impurity``.
        """
        cdef intp_t p, i, k, d = self.n_outputs, n_left = 0
        cdef float64_t w = 1.0, wl = 0.0, acc = 0.0, m
        cdef intp_t side[SIDE_BLOCK]
        cdef intp_t p0, p1, j, n_side
        cdef bint left_side
        cdef const float64_t* row
        cdef const float64_t* Z = self.Z
        cdef const float64_t* sw = self.sample_weight
        cdef const intp_t* samples = self.samples
        cdef float64_t* sum_left = self.sum_left
        if d == 1:
            if sw == NULL:
                for p in range(self.start, self.end):
                    m = Xf[p] <= threshold
                    acc += m * Z[samples[p]]
                    n_left += <intp_t>m
                wl = <float64_t>n_left
            else:
                for p in range(self.start, self.end):
                    i = samples[p]
                    m = Xf[p] <= threshold
                    w = m * sw[i]
                    acc += w * Z[i]
                    wl += w
                    n_left += <intp_t>m
            sum_left[0] = acc
        else:
            # count first (cheap), then accumulate the smaller side only. The positions of that side are
            # gathered branch-free, a block at a time, before the accumulation: testing each row's side inside the
            # accumulation mispredicts about every other row under a random threshold. Same rows, same order.
            for p in range(self.start, self.end):
                n_left += Xf[p] <= threshold
            left_side = 2 * n_left <= self.end - self.start
            if left_side:
                memset(sum_left, 0, d * sizeof(float64_t))
            else:
                memcpy(sum_left, self.sum_total, d * sizeof(float64_t))
                wl = self.weighted_n_node_samples
            p0 = self.start
            while p0 < self.end:
                p1 = min(p0 + SIDE_BLOCK, self.end)
                n_side = 0
                if left_side:
                    for p in range(p0, p1):
                        side[n_side] = p
                        n_side += Xf[p] <= threshold
                else:
                    for p in range(p0, p1):
                        side[n_side] = p
                        n_side += not (Xf[p] <= threshold)
                for j in range(n_side):
                    i = samples[side[j]]
                    if sw != NULL:
                        w = sw[i]
                    row = Z + i * d
                    if left_side:
                        for k in range(d):
                            sum_left[k] += w * row[k]
                        wl += w
                    else:
                        for k in range(d):
                            sum_left[k] -= w * row[k]
                        wl -= w
                p0 = p1
        self.weighted_n_left = wl
        self.weighted_n_right = self.weighted_n_node_samples - wl
        for k in range(d):
            self.sum_right[k] = self.sum_total[k] - sum_left[k]
        self.pos = self.start + n_left
        return n_left

    cdef float64_t node_impurity(self) noexcept nogil:
        cdef intp_t k
        cdef float64_t W = self.weighted_n_node_samples
        cdef float64_t impurity = self.sq_sum_total / W
        for k in range(self.n_outputs):
            impurity -= (self.sum_total[k] / W) * (self.sum_total[k] / W)
        return impurity / self.n_outputs

    cdef float64_t proxy_impurity_improvement(self) noexcept nogil:
        cdef intp_t k
        cdef float64_t left = 0.0, right = 0.0
        for k in range(self.n_outputs):
            left += self.sum_left[k] * self.sum_left[k]
            right += self.sum_right[k] * self.sum_right[k]
        return left / self.weighted_n_left + right / self.weighted_n_right

    cdef void children_impurity(self, float64_t* impurity_left,
                                float64_t* impurity_right) noexcept nogil:
        cdef intp_t p, i, k, d = self.n_outputs
        cdef float64_t w = 1.0, sq_left = 0.0, z
        cdef const float64_t* row
        cdef float64_t wl = self.weighted_n_left, wr = self.weighted_n_right
        for p in range(self.start, self.pos):
            i = self.samples[p]
            if self.sample_weight != NULL:
                w = self.sample_weight[i]
            row = self.Z + i * d
            for k in range(d):
                z = row[k]
                sq_left += w * z * z
        impurity_left[0] = sq_left / wl
        impurity_right[0] = (self.sq_sum_total - sq_left) / wr
        for k in range(d):
            impurity_left[0] -= (self.sum_left[k] / wl) * (self.sum_left[k] / wl)
            impurity_right[0] -= (self.sum_right[k] / wr) * (self.sum_right[k] / wr)
        impurity_left[0] /= d
        impurity_right[0] /= d


cdef class SparseCriterion(Criterion):
    def __cinit__(self, intp_t n_outputs, *args, **kwargs):
        cdef intp_t m = n_outputs if n_outputs > 0 else 1
        self.touched_total = <int32_t*> malloc(m * sizeof(int32_t))
        self.touched_left = <int32_t*> malloc(m * sizeof(int32_t))
        self.mark_left = <char*> calloc(m, sizeof(char))
        if self.touched_total == NULL or self.touched_left == NULL or self.mark_left == NULL:
            raise MemoryError()
        self.n_touched_total = 0
        self.n_touched_left = 0

    def __init__(self, intp_t n_outputs, indptr, indices, data):
        indptr = np.ascontiguousarray(indptr, dtype=np.int32)
        indices = np.ascontiguousarray(indices, dtype=np.int32)
        data = np.ascontiguousarray(data, dtype=np.float64)
        self._keep = (indptr, indices, data)
        cdef const int32_t[::1] ip = indptr
        cdef const int32_t[::1] ix = indices
        cdef const float64_t[::1] dt = data
        self.indptr = &ip[0]
        self.indices = &ix[0] if ix.shape[0] > 0 else NULL
        self.data = &dt[0] if dt.shape[0] > 0 else NULL

    def __dealloc__(self):
        free(self.touched_total)
        free(self.touched_left)
        free(self.mark_left)

    cdef void init_node(self, intp_t start, intp_t end) noexcept nogil:
        cdef intp_t p, i, j, k
        cdef float64_t w = 1.0, v, s
        # clear what the previous node left behind (sum_total[k] != 0 only on touched k;
        # mark_left doubles as the "seen" flag while building the touched list)
        for j in range(self.n_touched_left):
            k = self.touched_left[j]
            self.sum_left[k] = 0.0
            self.mark_left[k] = 0
        self.n_touched_left = 0
        for j in range(self.n_touched_total):
            self.sum_total[self.touched_total[j]] = 0.0
        self.n_touched_total = 0
        self.start = start
        self.end = end
        self.sq_sum_total = 0.0
        self.weighted_n_node_samples = 0.0
        for p in range(start, end):
            i = self.samples[p]
            if self.sample_weight != NULL:
                w = self.sample_weight[i]
            for j in range(self.indptr[i], self.indptr[i + 1]):
                k = self.indices[j]
                v = self.data[j]
                if not self.mark_left[k]:
                    self.mark_left[k] = 1
                    self.touched_total[self.n_touched_total] = <int32_t>k
                    self.n_touched_total += 1
                self.sum_total[k] += w * v
                self.sq_sum_total += w * v * v
            self.weighted_n_node_samples += w
        self.sq_of_sums_total = 0.0
        for j in range(self.n_touched_total):
            k = self.touched_total[j]
            self.mark_left[k] = 0
            s = self.sum_total[k]
            self.sq_of_sums_total += s * s
        self.reset()

    cdef void reset(self) noexcept nogil:
        cdef intp_t j, k
        for j in range(self.n_touched_left):
            k = self.touched_left[j]
            self.sum_left[k] = 0.0
            self.mark_left[k] = 0
        self.n_touched_left = 0
        self.pos = self.start
        self.weighted_n_left = 0.0
        self.weighted_n_right = self.weighted_n_node_samples
        self.sq_of_sums_left = 0.0
        self.sq_of_sums_right = self.sq_of_sums_total

    cdef void update(self, intp_t new_pos) noexcept nogil:
        cdef intp_t p, i, j, k
        cdef float64_t w = 1.0, a, b, t, u
        cdef float64_t sl = self.sq_of_sums_left, sr = self.sq_of_sums_right
        for p in range(self.pos, new_pos):
            i = self.samples[p]
            if self.sample_weight != NULL:
                w = self.sample_weight[i]
            for j in range(self.indptr[i], self.indptr[i + 1]):
                k = self.indices[j]
                u = w * self.data[j]
                a = self.sum_left[k]
                b = a + u
                t = self.sum_total[k]
                sl += b * b - a * a
                sr += (t - b) * (t - b) - (t - a) * (t - a)
                self.sum_left[k] = b
                if not self.mark_left[k]:
                    self.mark_left[k] = 1
                    self.touched_left[self.n_touched_left] = <int32_t>k
                    self.n_touched_left += 1
            self.weighted_n_left += w
        self.sq_of_sums_left = sl
        self.sq_of_sums_right = sr
        self.weighted_n_right = self.weighted_n_node_samples - self.weighted_n_left
        self.pos = new_pos

    cdef float64_t node_impurity(self) noexcept nogil:
        cdef float64_t W = self.weighted_n_node_samples
        return (self.sq_sum_total / W - self.sq_of_sums_total / (W * W)) / self.n_outputs

    cdef float64_t proxy_impurity_improvement(self) noexcept nogil:
        return (self.sq_of_sums_left / self.weighted_n_left +
                self.sq_of_sums_right / self.weighted_n_right)

    cdef void children_impurity(self, float64_t* impurity_left,
                                float64_t* impurity_right) noexcept nogil:
        cdef intp_t p, i, j
        cdef float64_t w = 1.0, sq_left = 0.0, v
        cdef float64_t wl = self.weighted_n_left, wr = self.weighted_n_right
        for p in range(self.start, self.pos):
            i = self.samples[p]
            if self.sample_weight != NULL:
                w = self.sample_weight[i]
            for j in range(self.indptr[i], self.indptr[i + 1]):
                v = self.data[j]
                sq_left += w * v * v
        impurity_left[0] = (sq_left / wl - self.sq_of_sums_left / (wl * wl)) / self.n_outputs
        impurity_right[0] = ((self.sq_sum_total - sq_left) / wr
                             - self.sq_of_sums_right / (wr * wr)) / self.n_outputs


cdef class LeafTargets:
    def __cinit__(self, *args, **kwargs):
        self.acc = NULL
        self.touched = NULL
        self.mark = NULL

    def __init__(self, intp_t n_outputs, Y=None, indptr=None, indices=None, data=None):
        cdef intp_t m = n_outputs if n_outputs > 0 else 1
        self.n_outputs = n_outputs
        self.acc = <float64_t*> calloc(m, sizeof(float64_t))
        if self.acc == NULL:
            raise MemoryError()
        cdef const float64_t[:, ::1] yv
        cdef const int32_t[::1] ip
        cdef const int32_t[::1] ix
        cdef const float64_t[::1] dt
        if Y is not None:
            self.is_sparse = False
            Y = np.ascontiguousarray(Y, dtype=np.float64)
            self._keep = Y
            yv = Y
            self.Y = &yv[0, 0] if Y.size > 0 else NULL
        else:
            self.is_sparse = True
            indptr = np.ascontiguousarray(indptr, dtype=np.int32)
            indices = np.ascontiguousarray(indices, dtype=np.int32)
            data = np.ascontiguousarray(data, dtype=np.float64)
            self._keep = (indptr, indices, data)
            ip = indptr
            ix = indices
            dt = data
            self.indptr = &ip[0]
            self.indices = &ix[0] if ix.shape[0] > 0 else NULL
            self.data = &dt[0] if dt.shape[0] > 0 else NULL
            self.touched = <int32_t*> malloc(m * sizeof(int32_t))
            self.mark = <char*> calloc(m, sizeof(char))
            if self.touched == NULL or self.mark == NULL:
                raise MemoryError()
        self.n_touched = 0

    def __dealloc__(self):
        free(self.acc)
        free(self.touched)
        free(self.mark)

    cdef void node_mean(self, const intp_t* samples, const float64_t* sample_weight,
                        intp_t start, intp_t end) noexcept nogil:
        """Leave the weighted mean of Y over samples[start:end] in ``acc``.

        Sparse Y: only ``acc[touched[0:n_touched]]`` is meaningful; the
        touched outputs are left sorted ascending. Costs O(nnz of the node)
        plus the sort of the touched outputs, never O(n_outputs).
        """
        cdef intp_t p, i, j, k, d = self.n_outputs
        cdef float64_t w = 1.0, W = 0.0
        cdef const float64_t* row
        if not self.is_sparse:
            memset(self.acc, 0, d * sizeof(float64_t))
            for p in range(start, end):
                i = samples[p]
                if sample_weight != NULL:
                    w = sample_weight[i]
                row = self.Y + i * d
                for k in range(d):
                    self.acc[k] += w * row[k]
                W += w
            for k in range(d):
                self.acc[k] /= W
            return
        for j in range(self.n_touched):
            self.acc[self.touched[j]] = 0.0
        self.n_touched = 0
        for p in range(start, end):
            i = samples[p]
            if sample_weight != NULL:
                w = sample_weight[i]
            for j in range(self.indptr[i], self.indptr[i + 1]):
                k = self.indices[j]
                if not self.mark[k]:
                    self.mark[k] = 1
                    self.touched[self.n_touched] = <int32_t>k
                    self.n_touched += 1
                self.acc[k] += w * self.data[j]
            W += w
        for j in range(self.n_touched):
            k = self.touched[j]
            self.mark[k] = 0
            self.acc[k] /= W
        _sort_int32(self.touched, self.n_touched)


cdef void _sort_int32(int32_t* a, intp_t n) noexcept nogil:
    # shell sort: the touched lists are short (labels of a leaf)
    cdef intp_t gap = 1, i, j
    cdef int32_t v
    while gap < n // 3:
        gap = 3 * gap + 1
    while gap >= 1:
        for i in range(gap, n):
            v = a[i]
            j = i
            while j >= gap and a[j - gap] > v:
                a[j] = a[j - gap]
                j -= gap
            a[j] = v
        gap //= 3
