"""Presorted best-first regression tree builder of the boosting loop.

X does not change between boosting iterations, so each feature's sample order is computed once per fit; every
tree then either partitions these orders stably at each split (the "partition" layout) or keeps one of them and
takes a drawn feature's node order from its master order (the "gather" layout, for k much smaller than p), so no
node ever sorts its values. It
splits as the kernel's best splitter (``_splitter.pyx``) does, through the same rules and constants
(``tree/_utils.pxd``: ``same_value``, ``midpoint_threshold``, ``beats``, FEATURE_THRESHOLD, PROXY_RTOL, EPSILON),
which the comparison tests of the boosting trees against the kernel's trees check. See ``PresortBuilder``.
"""
from libc.stdlib cimport malloc, free
from libc.string cimport memcpy, memset
from libc.math cimport fabs, log2, INFINITY
from libc.stdint cimport uint64_t

import numpy as np

from forestbench.tree._utils cimport (intp_t, float32_t, float64_t, int32_t, rand_int, FEATURE_THRESHOLD,
                                      PROXY_RTOL, EPSILON, TREE_LEAF, TREE_UNDEFINED, beats, same_value,
                                      midpoint_threshold, sort_values)
from forestbench.tree._tree cimport Node


# from this many split targets on, the two-valued features of a node are summed in one pass over its rows
cdef intp_t BATCH_MIN_Q = 8

# the gather layout is chosen (layout="auto") where its estimated cost per tree, 2 (L - 2) k scans of n rows for
# the evaluated children, is below GATHER_RATIO times the partition layout's p n log2(L) (L leaves, k drawn
# features): on benchmarks/bench_presort_layout.py's shapes gather was the faster up to an estimate of about 1.3
# on continuous inputs (friedman1-ind, cal500: at 2.0, k = p / 2 and 8 leaves, partition was 1.2x faster) and
# beyond 2.0 on binary ones (corel5k, delicious, bibtex), whose small nodes gather by a sort of their ranks
cdef float64_t GATHER_RATIO = 1.5
# a node of m rows takes its order of a feature by sorting its rows' ranks in that order (O(m) radix passes, or a
# quicksort below 64 rows) rather than scanning the n rows of the master order where SORT_COST m < n
cdef intp_t SORT_COST = 8


def choose_layout(intp_t p, intp_t max_leaf_nodes, intp_t max_features):
    """The layout ``layout="auto"`` takes for p features, L leaves and k drawn features: "gather" or
    "partition"."""
    cdef float64_t gather_cost = 2.0 * (max_leaf_nodes - 2) * max_features
    cdef float64_t partition_cost = p * log2(<float64_t> max(max_leaf_nodes, 1))
    if max_features >= p or max_leaf_nodes <= 2:
        return "partition"
    return "gather" if gather_cost < GATHER_RATIO * partition_cost else "partition"


cdef inline void _side_squares(const float64_t* A, const float64_t* S, intp_t q, float64_t* a2,
                               float64_t* b2) noexcept nogil:
    """a2 = sum_k A_k^2 and b2 = sum_k (S_k - A_k)^2: the two sides' squared sums of one cut, with four
    independent accumulators per sum (the loop is then bound by throughput, not by the latency of one chain)."""
    cdef float64_t a0 = 0.0, a1 = 0.0, a2_ = 0.0, a3 = 0.0, b0 = 0.0, b1 = 0.0, b2_ = 0.0, b3 = 0.0, u, v
    cdef intp_t k = 0
    while k + 4 <= q:
        u = A[k]
        v = S[k] - u
        a0 += u * u
        b0 += v * v
        u = A[k + 1]
        v = S[k + 1] - u
        a1 += u * u
        b1 += v * v
        u = A[k + 2]
        v = S[k + 2] - u
        a2_ += u * u
        b2_ += v * v
        u = A[k + 3]
        v = S[k + 3] - u
        a3 += u * u
        b3 += v * v
        k += 4
    while k < q:
        u = A[k]
        v = S[k] - u
        a0 += u * u
        b0 += v * v
        k += 1
    a2[0] = (a0 + a1) + (a2_ + a3)
    b2[0] = (b0 + b1) + (b2_ + b3)


cdef int _fresh_doubles(float64_t** ptr, intp_t size) except -1 nogil:
    """Replace the buffer at ``ptr`` by an uninitialised one of ``size`` doubles (MemoryError if none)."""
    free(ptr[0])
    ptr[0] = <float64_t*> malloc(size * sizeof(float64_t))
    if ptr[0] == NULL:
        with gil:
            raise MemoryError()
    return 0


cdef inline void _take_cut(Candidate* c, intp_t f, intp_t pos, const float32_t* xv) noexcept nogil:
    """Make the cut before position ``pos`` of feature f's node order the node's split: the threshold halfway
    between the two values around the cut (the lower value where the halfway point rounds onto the upper one or
    overflows)."""
    c.feature = f
    c.pos = pos
    c.threshold = midpoint_threshold(xv[pos - 1], xv[pos])


cdef inline void _scan_single(Candidate* c, intp_t f, const int32_t* ix, const float32_t* xv, const float64_t* Z,
                              intp_t start, intp_t end, float64_t s_total, const float64_t* inv,
                              float64_t* best_io) noexcept nogil:
    """Score every cut of feature f over the node [start, end) for one split target (Z is n x 1) and take it into c
    when it beats *best_io by the relative margin; the arithmetic and the order of the multi-target scan of
    ``PresortBuilder._evaluate`` (forward, or backward past a leading run of equal values), so the same cut wins.
    The running side sum lives in a register instead of the sums array."""
    cdef intp_t r, b0 = start, fpos
    cdef float64_t sl = 0.0, proxy, fbest, best = best_io[0], t
    while b0 < end - 1 and same_value(xv[b0 + 1], xv[b0]):
        b0 += 1
    if b0 - start > end - b0:
        # sl: the sum over [r, end), the right side of a cut between r - 1 and r
        fpos = -1
        fbest = -INFINITY
        for r in range(end - 1, b0, -1):
            sl += Z[ix[r]]
            if same_value(xv[r], xv[r - 1]):
                continue
            t = s_total - sl
            proxy = t * t * inv[r - start] + sl * sl * inv[end - r]
            if fpos < 0 or proxy >= fbest - PROXY_RTOL * fabs(fbest):
                fbest = proxy
                fpos = r
        if fpos >= 0 and (c.feature < 0 or beats(fbest, best)):
            best_io[0] = fbest
            _take_cut(c, f, fpos, xv)
        return
    for r in range(start, end - 1):
        sl += Z[ix[r]]
        if same_value(xv[r + 1], xv[r]):
            continue
        t = s_total - sl
        proxy = sl * sl * inv[r + 1 - start] + t * t * inv[end - r - 1]
        if c.feature < 0 or beats(proxy, best):
            best = proxy
            _take_cut(c, f, r + 1, xv)
    best_io[0] = best


cdef class PresortBuilder:
    """Best-first regression tree on a fixed X whose columns are sorted once.

    X does not change between boosting iterations, so each feature's sample order is computed once; a tree then
    starts from copies of these orders and every split partitions each feature's node range stably (a node is one
    contiguous range [start, end) in every feature's order), so no node ever sorts. Splits are chosen exactly as the
    forestbench kernel's best splitter does: thresholds halfway between consecutive distinct values (values closer
    than 1e-7 are equal), the multi-output variance proxy sum_k S_L,k^2 / n_L + S_R,k^2 / n_R, a later candidate
    must be better by a relative 1e-10, features visited in index order when all are candidates, else
    ``max_features`` non-constant features drawn without replacement (``count_constant_features``: ``max_features``
    draws, constant features among them, and more only until one non-constant feature is scored: scikit-learn's
    rule, the kernel splitter's option of the same name); the frontier is expanded by largest impurity
    decrease (ties: smaller node id). A node's children are only evaluated while a split is still allowed.

    With many split targets (q >= 8, gbmort's gradient) and every feature scored, the two-valued features of a node
    (binary inputs) are summed in one pass over the node's rows (``_binary_sums``) instead of one gather of the
    target rows per feature; they have a single cut, scored from those sums with the same rule.

    ``layout``: how a node's samples are found in each feature's order. "partition" partitions every feature's
    order at every split, O(p m) for a node of m samples whatever the number k of features drawn. "gather" keeps
    only feature 0's order partitioned (the order in which a node's sums and leaf values are added) and each row's
    node id; a drawn feature's order within a node is taken from its master order, the rows of other nodes
    skipped, O(n) per drawn feature and node, and the split's sides come from the split feature's column of X.
    The orders so found are the same sequences, so both layouts grow the same trees bit for bit (a test checks
    it); gather pays where k is much smaller than p (max_features="sqrt" on hundreds of inputs). "auto" (the
    default) picks by the two costs (``choose_layout``).
    """

    def __cinit__(self, *args, **kwargs):
        self.inv = NULL
        self.master_idx = NULL
        self.master_val = NULL
        self.idx = NULL
        self.val = NULL
        self.tmp_idx = NULL
        self.tmp_val = NULL
        self.goleft = NULL
        self.feats = NULL
        self.sum_total = NULL
        self.sum_left = NULL
        self.best_left = NULL
        self.frontier = NULL
        self.nodes = NULL
        self.leaf_values = NULL
        self.cap_q = 0
        self.cap_w = 0
        self.n_bin = 0
        self.bin_of = NULL
        self.bin_minor_high = NULL
        self.row_ptr = NULL
        self.row_bins = NULL
        self.bin_sums = NULL
        self.bin_counts = NULL
        self.cap_bq = 0
        self.gather = False
        self.node_of = NULL
        self.gidx = NULL
        self.gval = NULL
        self.xcol = NULL
        self.rank = NULL
        self.skey = NULL
        self.sperm = NULL

    def __init__(self, X, intp_t max_leaf_nodes, intp_t max_features, bint count_constant_features=False,
                 layout="auto"):
        cdef intp_t n = X.shape[0], p = X.shape[1], f, r
        if layout == "auto":
            layout = choose_layout(p, max_leaf_nodes, max_features)
        if layout not in ("partition", "gather"):
            raise ValueError(f"layout={layout!r}: expected 'auto', 'partition' or 'gather'")
        order = np.argsort(X, axis=0, kind="stable").T.astype(np.int32)      # (p, n)
        values = np.take_along_axis(np.asarray(X), order.T.astype(np.intp), axis=0).T.astype(np.float32)
        order = np.ascontiguousarray(order)
        values = np.ascontiguousarray(values)
        cdef int32_t[:, ::1] ov = order
        cdef float32_t[:, ::1] vv = values
        self._keep = (order, values)
        self.n = n
        self.p = p
        self.max_leaf_nodes = max_leaf_nodes
        self.max_features = max_features
        self.count_constant_features = count_constant_features
        self.master_idx = &ov[0, 0] if n * p > 0 else NULL
        self.master_val = &vv[0, 0] if n * p > 0 else NULL
        self.idx = <int32_t*> malloc(max(n * p, 1) * sizeof(int32_t))
        self.val = <float32_t*> malloc(max(n * p, 1) * sizeof(float32_t))
        self.tmp_idx = <int32_t*> malloc(max(n, 1) * sizeof(int32_t))
        self.tmp_val = <float32_t*> malloc(max(n, 1) * sizeof(float32_t))
        self.goleft = <char*> malloc(max(n, 1))
        self.feats = <intp_t*> malloc(max(p, 1) * sizeof(intp_t))
        self.frontier = <Candidate*> malloc((2 * max_leaf_nodes + 2) * sizeof(Candidate))
        self.nodes = <Node*> malloc((2 * max_leaf_nodes + 2) * sizeof(Node))
        if (self.idx == NULL or self.val == NULL or self.tmp_idx == NULL or self.tmp_val == NULL
                or self.goleft == NULL or self.feats == NULL or self.frontier == NULL or self.nodes == NULL):
            raise MemoryError()
        for f in range(p):
            self.feats[f] = f
        self.inv = <float64_t*> malloc((n + 1) * sizeof(float64_t))
        if self.inv == NULL:
            raise MemoryError()
        self.inv[0] = 0.0
        for r in range(1, n + 1):
            self.inv[r] = 1.0 / r
        self._index_two_valued(np.asarray(X, dtype=np.float32), values)
        self.gather = layout == "gather"
        if self.gather:
            columns = np.ascontiguousarray(np.asarray(X, dtype=np.float32).T)     # (p, n)
            ranks = np.empty((p, n), dtype=np.int32)                              # inverse of each order
            np.put_along_axis(ranks, order.astype(np.intp), np.arange(n, dtype=np.int32)[None, :], axis=1)
            self._keep = self._keep + (columns, ranks)
            self._set_columns(columns, ranks)
            self.skey = <float32_t*> malloc(max(n, 1) * sizeof(float32_t))
            self.sperm = <intp_t*> malloc(max(n, 1) * sizeof(intp_t))
            if self.skey == NULL or self.sperm == NULL:
                raise MemoryError()
            self.node_of = <int32_t*> malloc(max(n, 1) * sizeof(int32_t))
            self.gidx = <int32_t*> malloc(max(n, 1) * sizeof(int32_t))
            self.gval = <float32_t*> malloc(max(n, 1) * sizeof(float32_t))
            if self.node_of == NULL or self.gidx == NULL or self.gval == NULL:
                raise MemoryError()

    def _set_columns(self, float32_t[:, ::1] columns, int32_t[:, ::1] ranks):
        cdef bint empty = columns.shape[0] * columns.shape[1] == 0
        self.xcol = NULL if empty else &columns[0, 0]
        self.rank = NULL if empty else &ranks[0, 0]

    @property
    def layout(self):
        return "gather" if self.gather else "partition"

    def grow(self, Z, L=None, uint64_t seed=1, intp_t repeat=1):
        """Grow one tree on the split targets Z (n x q), leaves holding the means of L (n x w, default Z), feature
        draws from ``seed``: the tree as arrays (feature, threshold, left, right, leaf_index, n_node_samples), the
        leaf values (n_leaves x w) and each row's leaf. ``repeat`` > 1 grows that many trees in a row (the draws
        going on from one to the next) and returns the last. The boosting loop calls ``build`` itself; this is for
        tests and benchmarks."""
        Zc = np.ascontiguousarray(Z, dtype=np.float64).reshape(self.n, -1)
        Lc = Zc if L is None else np.ascontiguousarray(L, dtype=np.float64).reshape(self.n, -1)
        leaf = np.empty(self.n, dtype=np.intp)
        cdef const float64_t[:, ::1] zv = Zc
        cdef const float64_t[:, ::1] lv = Lc
        cdef intp_t[::1] lf = leaf
        cdef uint64_t state = seed if seed != 0 else 1
        cdef intp_t q = Zc.shape[1], w = Lc.shape[1], j, _t
        if repeat < 1:
            raise ValueError(f"repeat={repeat}: at least one tree")
        with nogil:
            for _t in range(repeat):
                self.build(&zv[0, 0], q, &lv[0, 0], w, &lf[0], &state)
        m = self.node_count
        tree = {"feature": np.array([self.nodes[j].feature for j in range(m)]),
                "threshold": np.array([self.nodes[j].threshold for j in range(m)]),
                "left": np.array([self.nodes[j].left_child for j in range(m)]),
                "right": np.array([self.nodes[j].right_child for j in range(m)]),
                "leaf_index": np.array([self.nodes[j].leaf_index for j in range(m)]),
                "n_node_samples": np.array([self.nodes[j].n_node_samples for j in range(m)])}
        values = np.array([self.leaf_values[j] for j in range(self.n_leaves * w)]).reshape(self.n_leaves, w)
        return tree, values, leaf

    def _index_two_valued(self, X, values):
        """Find the features with exactly two distinct values and list, row by row, those where the row holds the
        feature's rarer value (CSR), for _binary_sums. ``values``: each column of X in increasing order."""
        cdef intp_t n = self.n, p = self.p
        if n < 2 or p == 0:
            return
        lo = values[:, 0]
        hi = values[:, n - 1]
        is_lo = values == lo[:, None]
        two = (hi > lo + FEATURE_THRESHOLD) & (is_lo | (values == hi[:, None])).all(axis=1)
        feats = np.flatnonzero(two)
        if feats.size == 0:
            return
        n_lo = is_lo[feats].sum(axis=1)
        minor_high = n_lo >= n - n_lo                       # the larger value is the rarer (or as frequent) one
        rarer = np.where(minor_high, hi[feats], lo[feats])
        Xs = X[:, feats] == rarer[None, :]                  # rows x two-valued features: holds the rarer value
        counts = Xs.sum(axis=1)
        row_ptr = np.zeros(n + 1, dtype=np.int32)
        np.cumsum(counts, out=row_ptr[1:])
        row_bins = np.ascontiguousarray(np.nonzero(Xs)[1].astype(np.int32))
        bin_of = np.full(p, -1, dtype=np.intp)
        bin_of[feats] = np.arange(feats.size)
        minor = np.ascontiguousarray(minor_high.astype(np.int8))
        if row_bins.size == 0:
            row_bins = np.zeros(1, dtype=np.int32)
        self._keep = self._keep + (row_ptr, row_bins, bin_of, minor)
        cdef int32_t[::1] rp = row_ptr
        cdef int32_t[::1] rb = row_bins
        cdef intp_t[::1] bo = bin_of
        cdef signed char[::1] mh = minor
        self.n_bin = feats.size
        self.row_ptr = &rp[0]
        self.row_bins = &rb[0]
        self.bin_of = &bo[0]
        self.bin_minor_high = <char*> &mh[0]
        self.bin_counts = <intp_t*> malloc(self.n_bin * sizeof(intp_t))
        if self.bin_counts == NULL:
            raise MemoryError()

    def __dealloc__(self):
        free(self.inv)
        free(self.idx)
        free(self.val)
        free(self.tmp_idx)
        free(self.tmp_val)
        free(self.goleft)
        free(self.feats)
        free(self.sum_total)
        free(self.sum_left)
        free(self.best_left)
        free(self.frontier)
        free(self.nodes)
        free(self.leaf_values)
        free(self.bin_sums)
        free(self.bin_counts)
        free(self.node_of)
        free(self.gidx)
        free(self.gval)
        free(self.skey)
        free(self.sperm)

    cdef int _ensure(self, intp_t q, intp_t w) except -1 nogil:
        if q > self.cap_q:
            _fresh_doubles(&self.sum_total, q)
            _fresh_doubles(&self.sum_left, q)
            _fresh_doubles(&self.best_left, q)
            self.cap_q = q
        if self.n_bin > 0 and q >= BATCH_MIN_Q and q > self.cap_bq:
            _fresh_doubles(&self.bin_sums, self.n_bin * q)
            self.cap_bq = q
        if w > self.cap_w:
            _fresh_doubles(&self.leaf_values, (self.max_leaf_nodes + 1) * w)
            self.cap_w = w
        return 0

    cdef void _binary_sums(self, Candidate* c, const float64_t* Z, intp_t q) noexcept nogil:
        """Sums of the split targets over the node's rows that hold each two-valued feature's rarer value.

        One pass over the node's rows: each target row is read once and added to the sums of the features where it
        holds the rarer value. The per-feature scan would instead gather the same rows from memory once per
        feature, which with many targets (a 983-output gradient) is bound by memory traffic; the n_bin x q sums
        stay in cache."""
        cdef const int32_t* ix = (self.master_idx if c.in_master else self.idx) + c.order_feature * self.n
        cdef intp_t r, i, t, k, b
        cdef const float64_t* zrow
        cdef float64_t* dst
        memset(self.bin_sums, 0, self.n_bin * q * sizeof(float64_t))
        memset(self.bin_counts, 0, self.n_bin * sizeof(intp_t))
        for r in range(c.start, c.end):
            i = ix[r]
            zrow = Z + i * q
            for t in range(self.row_ptr[i], self.row_ptr[i + 1]):
                b = self.row_bins[t]
                self.bin_counts[b] += 1
                dst = self.bin_sums + b * q
                for k in range(q):
                    dst[k] += zrow[k]

    cdef void _evaluate(self, Candidate* c, const float64_t* Z, intp_t q, uint64_t* state) noexcept nogil:
        """Find the best split of the node c (c.feature = -1 if it must be a leaf)."""
        cdef const int32_t* base_idx = self.master_idx if c.in_master else self.idx
        cdef const float32_t* base_val = self.master_val if c.in_master else self.val
        cdef intp_t n = self.n, start = c.start, end = c.end, m = end - start
        cdef intp_t r, k, i, f, fi, n_scored = 0, n_drawn = 0, tmp
        cdef const int32_t* ix
        cdef const float32_t* xv
        cdef float64_t* S = self.sum_total
        cdef float64_t* SL = self.sum_left
        cdef float64_t sq = 0.0, ss = 0.0, z, proxy, best = -INFINITY, pl, pr, s1
        cdef intp_t b0, fpos
        cdef float64_t fbest
        cdef const float64_t* zrow
        cdef bint use_all = self.max_features >= self.p
        cdef const float64_t* inv = self.inv
        cdef bint batch
        cdef intp_t b, nb
        c.feature = -1
        c.improvement = 0.0
        if m < 2:
            return
        memset(S, 0, q * sizeof(float64_t))
        ix = base_idx + c.order_feature * n
        if q == 1:
            # one split target (st-gbrt, the rpo variants): the sums in registers, same additions in the same order
            s1 = 0.0
            for r in range(start, end):
                z = Z[ix[r]]
                s1 += z
                sq += z * z
            S[0] = s1
        else:
            for r in range(start, end):
                i = ix[r]
                for k in range(q):
                    z = Z[i * q + k]
                    S[k] += z
                    sq += z * z
        for k in range(q):
            ss += S[k] * S[k]
        if (sq / m - ss / (<float64_t> m * m)) / q <= EPSILON:
            return
        batch = use_all and q >= BATCH_MIN_Q and self.n_bin > 0
        if batch:
            self._binary_sums(c, Z, q)
        fi = 0
        while True:
            if use_all:
                if fi >= self.p:
                    break
                f = fi
                fi += 1
            else:
                if n_drawn >= self.p:
                    break
                if self.count_constant_features:
                    if n_drawn >= self.max_features and n_scored > 0:
                        break
                elif n_scored >= self.max_features:
                    break
                k = rand_int(n_drawn, self.p, state)
                tmp = self.feats[n_drawn]
                self.feats[n_drawn] = self.feats[k]
                self.feats[k] = tmp
                f = self.feats[n_drawn]
                n_drawn += 1
            if self.gather and not c.in_master:
                self._gather(f, <int32_t> c.node_id, start, end)
                ix = self.gidx
                xv = self.gval
            else:
                ix = base_idx + f * n
                xv = base_val + f * n
            if batch and self.bin_of[f] >= 0:
                # a two-valued feature: one cut, its side sums from _binary_sums
                b = self.bin_of[f]
                nb = self.bin_counts[b]
                if nb == 0 or nb == m:
                    continue
                n_scored += 1
                if self.bin_minor_high[b]:
                    fpos = end - nb
                    _side_squares(self.bin_sums + b * q, S, q, &pr, &pl)
                else:
                    fpos = start + nb
                    _side_squares(self.bin_sums + b * q, S, q, &pl, &pr)
                proxy = pl * inv[fpos - start] + pr * inv[end - fpos]
                if c.feature < 0 or beats(proxy, best):
                    best = proxy
                    _take_cut(c, f, fpos, xv)
                continue
            if same_value(xv[end - 1], xv[start]):
                continue
            n_scored += 1
            if q == 1:
                # one split target: the scan of _scan_single, the left sum kept in a register
                _scan_single(c, f, ix, xv, Z, start, end, S[0], inv, &best)
                continue
            # several split targets. A long run of equal values at the start (the zeros of a sparse or binary
            # input) is never summed: the scan then runs backwards over the other samples, with S_L = S - S_R
            b0 = start
            while b0 < end - 1 and same_value(xv[b0 + 1], xv[b0]):
                b0 += 1
            memset(SL, 0, q * sizeof(float64_t))
            if b0 - start > end - b0:
                fpos = -1
                fbest = -INFINITY
                for r in range(end - 1, b0, -1):
                    # SL holds the sums over [r, end) (the right side of a cut between r - 1 and r)
                    zrow = Z + ix[r] * q
                    for k in range(q):
                        SL[k] += zrow[k]
                    if same_value(xv[r], xv[r - 1]):
                        continue
                    _side_squares(SL, S, q, &pr, &pl)
                    proxy = pl * inv[r - start] + pr * inv[end - r]
                    # cuts visited right to left: a cut further left replaces the feature's best unless it is
                    # worse by the margin (the forward scan's preference for the leftmost of near-equal cuts)
                    if fpos < 0 or proxy >= fbest - PROXY_RTOL * fabs(fbest):
                        fbest = proxy
                        fpos = r
                if fpos >= 0 and (c.feature < 0 or beats(fbest, best)):
                    best = fbest
                    _take_cut(c, f, fpos, xv)
                continue
            for r in range(start, end - 1):
                # per sample only the q sums move (a vectorisable loop); the proxy's O(q) sums of squares are
                # formed at cuts only, which a feature with few distinct values (binary inputs) rarely has
                zrow = Z + ix[r] * q
                for k in range(q):
                    SL[k] += zrow[k]
                if same_value(xv[r + 1], xv[r]):
                    continue
                _side_squares(SL, S, q, &pl, &pr)
                proxy = pl * inv[r + 1 - start] + pr * inv[end - r - 1]
                if c.feature < 0 or beats(proxy, best):
                    best = proxy
                    _take_cut(c, f, r + 1, xv)
        if c.feature >= 0:
            # decrease of the summed-over-outputs impurity, relative to the whole set (same order as the kernel)
            c.improvement = (best - ss / m) / (<float64_t> n * q)

    cdef void _partition(self, Candidate* c, bint all_features) noexcept nogil:
        """Stable partition of the node range of every feature (or of the split feature only, when the children
        will not be split) into [left | right], in the working orders."""
        cdef intp_t n = self.n, f, r, a, b, start = c.start, end = c.end
        cdef const int32_t* src_base = self.master_idx if c.in_master else self.idx
        cdef const float32_t* src_vbase = self.master_val if c.in_master else self.val
        cdef const int32_t* sx = src_base + c.feature * n
        cdef const float32_t* sv
        cdef int32_t* ix
        cdef float32_t* xv
        cdef int32_t i
        cdef float32_t v
        cdef intp_t gl
        if c.in_master:
            # the split feature's range is already [left | right]: copy it to the working orders
            memcpy(self.idx + c.feature * n + start, sx + start, (end - start) * sizeof(int32_t))
            memcpy(self.val + c.feature * n + start, src_vbase + c.feature * n + start,
                   (end - start) * sizeof(float32_t))
        if not all_features:
            return
        for r in range(start, c.pos):
            self.goleft[sx[r]] = 1
        for r in range(c.pos, end):
            self.goleft[sx[r]] = 0
        for f in range(self.p):
            if f == c.feature:
                continue
            sx = src_base + f * n
            sv = src_vbase + f * n
            ix = self.idx + f * n
            xv = self.val + f * n
            a = start
            b = 0
            # branch-free: every sample is written to both sides and only its side's count moves (the side of a
            # sample is a coin flip for the branch predictor); in place, a <= r, so no unread entry is overwritten
            for r in range(start, end):
                i = sx[r]
                v = sv[r]
                gl = self.goleft[i]
                ix[a] = i
                xv[a] = v
                self.tmp_idx[b] = i
                self.tmp_val[b] = v
                a += gl
                b += 1 - gl
            memcpy(ix + a, self.tmp_idx, b * sizeof(int32_t))
            memcpy(xv + a, self.tmp_val, b * sizeof(float32_t))

    cdef void _gather(self, intp_t f, int32_t node_id, intp_t start, intp_t end) noexcept nogil:
        """gidx / gval[start, end): the node's samples of feature f in f's value order, i.e. its master order with
        the other nodes' rows left out. A small node sorts its rows' ranks in that order (exact integers as float
        keys, n < 2^24); a large one scans the master order, branch-free: every entry is written, only a row of
        the node moves on, and the scan stops at the node's last row. The node's rows are feature 0's order of
        its range."""
        cdef intp_t n = self.n
        cdef const int32_t* mi = self.master_idx + f * n
        cdef const float32_t* mv = self.master_val + f * n
        cdef const int32_t* node_of = self.node_of
        cdef const int32_t* rk = self.rank + f * n
        cdef const int32_t* rows = self.idx
        cdef int32_t* gi = self.gidx
        cdef float32_t* gv = self.gval
        cdef intp_t j = start, r = 0, m = end - start
        cdef int32_t i
        if SORT_COST * m < n and n < 16777216:
            for r in range(m):
                self.sperm[r] = rk[rows[start + r]]
                self.skey[r] = <float32_t> self.sperm[r]
            sort_values(self.skey, self.sperm, m)
            for r in range(m):
                gi[start + r] = mi[self.sperm[r]]
                gv[start + r] = mv[self.sperm[r]]
            return
        while j < end:
            i = mi[r]
            gi[j] = i
            gv[j] = mv[r]
            j += node_of[i] == node_id
            r += 1

    cdef void _split_rows(self, Candidate* c, int32_t left_id, int32_t right_id, bint children_split) noexcept nogil:
        """Gather mode's split of the node c: feature 0's order of its range stably into [left | right], each
        row's side read off the split feature's column (x <= threshold: the values before the cut; the threshold
        lies in [low, high) of the cut's two values), and the rows' node ids moved to the children. When the
        children will not be split, their leaves are summed in the split feature's order, as in the partition
        layout: that order of the range is gathered instead."""
        cdef intp_t n = self.n, r, a, b, start = c.start, end = c.end, f = c.feature
        cdef const int32_t* src
        cdef const float32_t* xc = self.xcol + f * n
        cdef int32_t* ix = self.idx
        cdef int32_t i
        cdef intp_t gl
        cdef float64_t thr = c.threshold
        if not children_split:
            if c.in_master:
                memcpy(self.idx + f * n + start, self.master_idx + f * n + start, (end - start) * sizeof(int32_t))
            else:
                self._gather(f, <int32_t> c.node_id, start, end)
                memcpy(self.idx + f * n + start, self.gidx + start, (end - start) * sizeof(int32_t))
            return
        src = self.master_idx if c.in_master else self.idx
        a = start
        b = 0
        for r in range(start, end):
            i = src[r]
            gl = xc[i] <= thr
            ix[a] = i
            self.tmp_idx[b] = i
            a += gl
            b += 1 - gl
        memcpy(ix + a, self.tmp_idx, b * sizeof(int32_t))
        for r in range(start, a):
            self.node_of[ix[r]] = left_id
        for r in range(a, end):
            self.node_of[ix[r]] = right_id

    cdef intp_t _new_node(self, intp_t parent, bint is_left) noexcept nogil:
        cdef intp_t node_id = self.node_count
        cdef Node* nd = &self.nodes[node_id]
        nd.left_child = TREE_LEAF
        nd.right_child = TREE_LEAF
        nd.feature = TREE_UNDEFINED
        nd.threshold = TREE_UNDEFINED
        nd.impurity = 0.0
        nd.n_node_samples = 0
        nd.weighted_n_node_samples = 0.0
        nd.leaf_index = -1
        if parent >= 0:
            if is_left:
                self.nodes[parent].left_child = node_id
            else:
                self.nodes[parent].right_child = node_id
        self.node_count += 1
        return node_id

    cdef void _make_leaf(self, Candidate* c, const float64_t* L, intp_t w, intp_t* leaf_of) noexcept nogil:
        cdef intp_t r, k, i, m = c.end - c.start
        cdef float64_t* v = self.leaf_values + self.n_leaves * w
        cdef const int32_t* ix = (self.master_idx if c.in_master else self.idx) + c.order_feature * self.n
        memset(v, 0, w * sizeof(float64_t))
        for r in range(c.start, c.end):
            i = ix[r]
            leaf_of[i] = self.n_leaves
            for k in range(w):
                v[k] += L[i * w + k]
        for k in range(w):
            v[k] /= m
        self.nodes[c.node_id].leaf_index = self.n_leaves
        self.nodes[c.node_id].n_node_samples = m
        self.n_leaves += 1

    cdef int build(self, const float64_t* Z, intp_t q, const float64_t* L, intp_t w, intp_t* leaf_of,
                   uint64_t* state) except -1 nogil:
        """Grow one tree on split targets Z (n x q) with leaves holding the means of L (n x w)."""
        cdef intp_t n_front = 0, splits_left = self.max_leaf_nodes - 1, b, j, s
        cdef Candidate c, child
        cdef Node* nd
        self._ensure(q, w)
        self.node_count = 0
        self.n_leaves = 0
        c.node_id = self._new_node(-1, 0)
        c.start = 0
        c.end = self.n
        c.order_feature = 0
        c.in_master = True
        self._evaluate(&c, Z, q, state)
        self.frontier[0] = c
        n_front = 1
        while n_front > 0:
            b = 0
            for j in range(1, n_front):
                if (self.frontier[j].improvement > self.frontier[b].improvement or
                        (self.frontier[j].improvement == self.frontier[b].improvement and
                         self.frontier[j].node_id < self.frontier[b].node_id)):
                    b = j
            c = self.frontier[b]
            self.frontier[b] = self.frontier[n_front - 1]
            n_front -= 1
            if c.feature < 0 or splits_left <= 0:
                self._make_leaf(&c, L, w, leaf_of)
                continue
            splits_left -= 1
            nd = &self.nodes[c.node_id]
            nd.feature = c.feature
            nd.threshold = c.threshold
            nd.n_node_samples = c.end - c.start
            if self.gather:
                # the children's ids are the next two (created just below, left first)
                self._split_rows(&c, <int32_t> self.node_count, <int32_t> (self.node_count + 1), splits_left > 0)
            else:
                self._partition(&c, splits_left > 0)
            for s in range(2):
                child.node_id = self._new_node(c.node_id, s == 0)
                child.start = c.start if s == 0 else c.pos
                child.end = c.pos if s == 0 else c.end
                child.order_feature = 0 if splits_left > 0 else c.feature
                child.in_master = False
                child.feature = -1
                child.improvement = 0.0
                if splits_left > 0:
                    self._evaluate(&child, Z, q, state)
                self.frontier[n_front] = child
                n_front += 1
        return 0
