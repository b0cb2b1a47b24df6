"""Best (CART) and random (Extra-Trees) node splitting.

Feature sampling: features are drawn uniformly without replacement and a
feature found constant in the node (all its values within 1e-7) is never
scored. Two rules for what counts towards ``max_features`` = K:

* default (``count_constant_features=False``, Extra-Trees paper): K
  non-constant features are scored (fewer if the node has fewer); constants
  found in the node do not count, and features known constant from an ancestor
  are not eligible at all (never drawn);
* ``count_constant_features=True`` (scikit-learn): every draw counts, including
  draws of ancestor constants and of new constants, except that drawing goes on
  past K until at least one non-constant feature has been scored.

With K = n_features both score every non-constant feature; then no feature is
drawn at all and the candidates are visited in the order of the ``features``
array (initially 0..p-1), which keeps the reads of the columns of X close to
sequential (a large gain on CSC input with many columns). The visiting order
only matters for exact ties and is the same for every input layout. ``features`` is
kept as
    [known constants not yet drawn | known constants drawn | new constants |
     unvisited | visited non-constant]
so that every draw is one uniform integer among the candidates; constants
found in a node are passed on to its children.

Best splitter: sort the node's values of the feature, sweep thresholds at the
midpoints between consecutive distinct values (x <= threshold goes left).
Random splitter: one threshold uniform in [min, max) of the node's values
(set to min if it rounds to max), then score it (dense X and Z: one pass that
sums the left side without moving samples; otherwise partition + update).
Both evaluate the proxy of the variance decrease and keep the best candidate
(a later one must beat it by the relative margin PROXY_RTOL); the samples are
partitioned on the chosen split and its exact impurities computed at the end.
"""
from libc.stdlib cimport malloc, free
from libc.string cimport memcpy
from libc.math cimport INFINITY
from libc.stdint cimport uint64_t

import numpy as np

cdef enum:
    SWEEP_MAX_OUTPUTS = 1024   # the fused multi-output sweep keeps its sums in local arrays of this size (8 KB each)
    SWEEP_BATCH = 4            # candidate positions whose proxies the fused sweep sums side by side

from forestbench.tree._utils cimport (rand_int, rand_uniform, seed_state, beats, same_value, midpoint_threshold,
                                      next_position, add_rows, subtract_rows)
from forestbench.tree._criterion cimport DenseCriterion
from forestbench.tree._partitioner cimport DensePartitioner, SparsePartitioner

# A candidate replaces the current best only if its proxy is larger by the
# relative margin PROXY_RTOL (``beats``, tree/_utils.pxd). Rounding-level
# differences (sums accumulated in another sample order, as happens between
# dense and CSC inputs or between weights and duplicated rows) then cannot
# break exact ties: the first candidate visited wins, and the visiting order
# does not depend on the input layout.


cdef inline float64_t _proxy(const float64_t* sl, float64_t wl, const float64_t* tot, float64_t W,
                             intp_t d) noexcept nogil:
    """The proxy of a multi-output cut whose left side has sums ``sl`` and weight ``wl`` (node totals ``tot``,
    ``W``): ``criterion.proxy_impurity_improvement``'s arithmetic, in its order."""
    cdef float64_t left = 0.0, right = 0.0, r
    cdef intp_t k
    for k in range(d):
        left += sl[k] * sl[k]
        r = tot[k] - sl[k]
        right += r * r
    return left / wl + right / (W - wl)


cdef inline void _batch_proxies(const float64_t* held, const float64_t* wl, const float64_t* tot, float64_t W,
                                intp_t d, float64_t* out) noexcept nogil:
    """``_proxy`` of the ``SWEEP_BATCH`` (4) left sums stored one after the other in ``held``: eight independent
    chains of additions instead of two, each with the same operations in the same order as ``_proxy``."""
    cdef const float64_t* a = held
    cdef const float64_t* b = held + d
    cdef const float64_t* c = held + 2 * d
    cdef const float64_t* e = held + 3 * d
    cdef float64_t la = 0.0, lb = 0.0, lc = 0.0, le = 0.0
    cdef float64_t ra = 0.0, rb = 0.0, rc = 0.0, re = 0.0, t
    cdef intp_t k
    for k in range(d):
        la += a[k] * a[k]
        t = tot[k] - a[k]
        ra += t * t
        lb += b[k] * b[k]
        t = tot[k] - b[k]
        rb += t * t
        lc += c[k] * c[k]
        t = tot[k] - c[k]
        rc += t * t
        le += e[k] * e[k]
        t = tot[k] - e[k]
        re += t * t
    out[0] = la / wl[0] + ra / (W - wl[0])
    out[1] = lb / wl[1] + rb / (W - wl[1])
    out[2] = lc / wl[2] + rc / (W - wl[2])
    out[3] = le / wl[3] + re / (W - wl[3])


cdef inline float64_t _add_rows_from(float64_t* acc, const float64_t* src, const float64_t* Z, intp_t d,
                                     const intp_t* samples, const float64_t* sw, intp_t lo, intp_t hi,
                                     float64_t wsum) noexcept nogil:
    """``add_rows`` into ``acc`` starting from the sums ``src`` instead of ``acc``'s own (``hi > lo``): the first
    row's additions read ``src`` and write ``acc``, with the same operations as copying first."""
    cdef intp_t k, i = samples[lo]
    cdef float64_t w = 1.0 if sw == NULL else sw[i]
    cdef const float64_t* row = Z + i * d
    for k in range(d):
        acc[k] = src[k] + w * row[k]
    return add_rows(acc, Z, d, samples, sw, lo + 1, hi, wsum + w)


cdef inline void _judge(intp_t feature, const intp_t* ps, const intp_t* qs, const float64_t* proxies, intp_t n,
                        const float32_t* Xf, intp_t end, BestSplit* best) noexcept nogil:
    """Judge ``n`` candidate positions of ``feature`` in position order against the best split so far, as the
    sweep would one by one (``ps[j]`` cuts between the sorted values at ``qs[j]`` and ``ps[j]``; ``best.pos ==
    end``: no candidate yet)."""
    cdef intp_t j
    for j in range(n):
        if best.pos == end or beats(proxies[j], best.proxy):
            best.proxy = proxies[j]
            best.pos = ps[j]
            best.feature = feature
            best.threshold = midpoint_threshold(Xf[qs[j]], Xf[ps[j]])


cdef inline float64_t _masked(uint64_t bits, uint64_t keep) noexcept nogil:
    # the double whose bits are ``bits`` if keep == 1, else +0.0 (adding it changes nothing)
    cdef uint64_t b = bits & (<uint64_t>0 - keep)
    cdef float64_t x
    memcpy(&x, &b, sizeof(float64_t))   # not a pointer cast: reading b as a double would break aliasing rules
    return x


cdef class Splitter:
    def __cinit__(self, *args, **kwargs):
        self.scratch_features = NULL
        self.features = NULL
        self.constant_features = NULL
        self.Xf = NULL
        self.zf = NULL
        self.wf = NULL

    def __init__(self, Criterion criterion, Partitioner partitioner, LeafTargets leaf_targets,
                 samples, sample_weight, intp_t n_features, intp_t max_features,
                 intp_t min_samples_leaf, float64_t min_weight_leaf, bint random_split,
                 unsigned long long seed, bint count_constant_features=False):
        """``samples``: int array of the rows used (weight > 0); ``sample_weight``: float64
        array over all rows, or None."""
        cdef intp_t i
        samples = np.ascontiguousarray(samples, dtype=np.intp).copy()
        cdef intp_t[::1] sv = samples
        cdef const float64_t[::1] wv
        self.criterion = criterion
        self.partitioner = partitioner
        self.leaf_targets = leaf_targets
        self.n_samples = samples.shape[0]
        self.samples = &sv[0]
        if sample_weight is not None:
            sample_weight = np.ascontiguousarray(sample_weight, dtype=np.float64)
            wv = sample_weight
            self.sample_weight = &wv[0]
            self.weighted_n_samples = float(sample_weight[samples].sum())
        else:
            self.sample_weight = NULL
            self.weighted_n_samples = float(self.n_samples)
        self._keep = (samples, sample_weight)
        self.n_features = n_features
        self.features = <intp_t*> malloc(n_features * sizeof(intp_t))
        self.constant_features = <intp_t*> malloc(n_features * sizeof(intp_t))
        self.scratch_features = <intp_t*> malloc(n_features * sizeof(intp_t))
        self.Xf = <float32_t*> malloc(self.n_samples * sizeof(float32_t))
        if (self.features == NULL or self.constant_features == NULL or self.Xf == NULL
                or self.scratch_features == NULL):
            raise MemoryError()
        for i in range(n_features):
            self.features[i] = i
        self.max_features = max_features
        self.min_samples_leaf = min_samples_leaf
        self.min_weight_leaf = min_weight_leaf
        self.random_split = random_split
        self.count_constant_features = count_constant_features
        self.scan_random = (isinstance(criterion, DenseCriterion) and
                            isinstance(partitioner, DensePartitioner))
        self.sweep_1d = isinstance(criterion, DenseCriterion) and criterion.n_outputs == 1
        self.sweep_nd = (isinstance(criterion, DenseCriterion) and
                         1 < criterion.n_outputs <= SWEEP_MAX_OUTPUTS)
        if self.scan_random and self.sweep_1d and random_split:
            # the node's split targets (and weights) in sample order, gathered once per node
            self.zf = <float64_t*> malloc((self.n_samples if self.n_samples > 0 else 1) * sizeof(float64_t))
            if self.zf == NULL:
                raise MemoryError()
            if self.sample_weight != NULL:
                self.wf = <float64_t*> malloc((self.n_samples if self.n_samples > 0 else 1) * sizeof(float64_t))
                if self.wf == NULL:
                    raise MemoryError()
        self.sparse_input = isinstance(partitioner, SparsePartitioner)
        self.rng_state = seed_state(seed)
        criterion.set_samples(self.samples, self.sample_weight, self.weighted_n_samples)
        partitioner.set_buffers(self.samples, self.Xf, self.n_samples)

    def __dealloc__(self):
        free(self.features)
        free(self.constant_features)
        free(self.scratch_features)
        free(self.Xf)
        free(self.zf)
        free(self.wf)

    cdef void node_reset(self, intp_t start, intp_t end,
                         float64_t* weighted_n_node_samples) noexcept nogil:
        self.start = start
        self.end = end
        self.criterion.init_node(start, end)
        self.partitioner.init_node(start, end)
        weighted_n_node_samples[0] = self.criterion.weighted_n_node_samples

    cdef float64_t node_impurity(self) noexcept nogil:
        return self.criterion.node_impurity()

    cdef void node_leaf_mean(self, intp_t start, intp_t end) noexcept nogil:
        self.leaf_targets.node_mean(self.samples, self.sample_weight, start, end)

    cdef bint _score_feature(self, intp_t feature, BestSplit* best) noexcept nogil:
        """Score the candidate split(s) on ``feature``; return 1 if it is constant in the node."""
        cdef intp_t start = self.start, end = self.end
        cdef float32_t* Xf = self.Xf
        cdef intp_t msl = self.min_samples_leaf
        cdef float64_t mwl = self.min_weight_leaf
        cdef intp_t p, p_prev, pos
        cdef float64_t proxy, threshold
        cdef float32_t min_value, max_value
        if self.sparse_input and ((<SparsePartitioner>self.partitioner).node_features[feature]
                                  != (<SparsePartitioner>self.partitioner).node_stamp):
            # no stored entry in the node's rows: all zero, constant (what scoring would find,
            # without touching the samples or drawing a threshold)
            return 1
        if not self.random_split:
            self.partitioner.sort_feature(feature)
            if same_value(Xf[end - 1], Xf[start]):
                return 1
            if self.sweep_1d:
                if self.sparse_input:
                    self._sweep_1d(feature, (<SparsePartitioner>self.partitioner).end_negative,
                                   (<SparsePartitioner>self.partitioner).start_positive, best)
                else:
                    self._sweep_1d(feature, -1, -1, best)
                return 0
            if self.sweep_nd:
                if self.sparse_input:
                    self._sweep_nd(feature, (<SparsePartitioner>self.partitioner).end_negative,
                                   (<SparsePartitioner>self.partitioner).start_positive, best)
                else:
                    self._sweep_nd(feature, -1, -1, best)
                return 0
            self.criterion.reset()
            p = start
            while p < end:
                self.partitioner.next_p(&p_prev, &p)
                if p >= end:
                    break
                if p - start < msl or end - p < msl:
                    continue
                self.criterion.update(p)
                if self.criterion.weighted_n_left < mwl or self.criterion.weighted_n_right < mwl:
                    continue
                proxy = self.criterion.proxy_impurity_improvement()
                if best.pos == end or beats(proxy, best.proxy):
                    best.proxy = proxy
                    best.pos = p
                    best.feature = feature
                    best.threshold = midpoint_threshold(Xf[p_prev], Xf[p])
            return 0
        self.partitioner.find_min_max(feature, &min_value, &max_value)
        if same_value(max_value, min_value):
            return 1
        threshold = rand_uniform(min_value, max_value, &self.rng_state)
        if threshold == max_value:
            threshold = min_value
        if self.zf != NULL:
            pos = start + self._left_by_threshold_1d(threshold)
            if pos - start < msl or end - pos < msl:
                return 0
        elif self.scan_random:
            pos = start + (<DenseCriterion>self.criterion).set_left_by_threshold(Xf, threshold)
            if pos - start < msl or end - pos < msl:
                return 0
        else:
            pos = self.partitioner.partition_samples(threshold)
            if pos - start < msl or end - pos < msl:
                return 0
            self.criterion.reset()
            self.criterion.update(pos)
        if self.criterion.weighted_n_left < mwl or self.criterion.weighted_n_right < mwl:
            return 0
        proxy = self.criterion.proxy_impurity_improvement()
        if best.pos == end or beats(proxy, best.proxy):
            best.proxy = proxy
            best.pos = pos
            best.feature = feature
            best.threshold = threshold
        return 0

    cdef void _sweep_1d(self, intp_t feature, intp_t jump_from, intp_t jump_to,
                        BestSplit* best) noexcept nogil:
        """The threshold sweep of the best splitter for one dense split target, in one loop.

        Does what the generic sweep does through ``next_p``, ``criterion.update`` and
        ``proxy_impurity_improvement`` with the same arithmetic in the same order (so the
        same proxies, bit for bit, and the same tree), without three indirect calls per
        position. ``jump_from``/``jump_to``: the sparse partitioner's skip over the block
        of zeros (position ``jump_from`` is followed by ``jump_to``); -1 for dense input.
        """
        cdef const float64_t* Z = (<DenseCriterion> self.criterion).Z
        cdef const float64_t* sw = self.sample_weight
        cdef const intp_t* samples = self.samples
        cdef const float32_t* Xf = self.Xf
        cdef intp_t start = self.start, end = self.end
        cdef intp_t msl = self.min_samples_leaf
        cdef float64_t mwl = self.min_weight_leaf
        cdef float64_t W = self.criterion.weighted_n_node_samples
        cdef float64_t total = self.criterion.sum_total[0]
        cdef float64_t acc = 0.0, wl = 0.0, w = 1.0, wr, sr, proxy
        cdef float64_t best_proxy = best.proxy
        cdef intp_t best_pos = best.pos
        cdef intp_t pos = start, p = start, q, k, i
        while p < end:
            p = next_position(Xf, p, end, jump_from, jump_to, &q)
            if p >= end:
                break
            if p - start < msl or end - p < msl:
                continue
            # update(p): add [pos, p) to the left, or rebuild from the total when fewer moves
            if (p - pos) <= (end - p):
                if sw == NULL:
                    for k in range(pos, p):
                        acc += w * Z[samples[k]]
                        wl += w
                else:
                    for k in range(pos, p):
                        i = samples[k]
                        w = sw[i]
                        acc += w * Z[i]
                        wl += w
            else:
                acc = total
                wl = W
                if sw == NULL:
                    for k in range(end - 1, p - 1, -1):
                        acc -= w * Z[samples[k]]
                        wl -= w
                else:
                    for k in range(end - 1, p - 1, -1):
                        i = samples[k]
                        w = sw[i]
                        acc -= w * Z[i]
                        wl -= w
            pos = p
            wr = W - wl
            if wl < mwl or wr < mwl:
                continue
            sr = total - acc
            proxy = (acc * acc) / wl + (sr * sr) / wr
            if best_pos == end or beats(proxy, best_proxy):
                best_proxy = proxy
                best_pos = p
                best.feature = feature
                best.threshold = midpoint_threshold(Xf[q], Xf[p])
        best.proxy = best_proxy
        best.pos = best_pos

    cdef void _sweep_nd(self, intp_t feature, intp_t jump_from, intp_t jump_to,
                        BestSplit* best) noexcept nogil:
        """The threshold sweep of the best splitter for 2 to ``SWEEP_MAX_OUTPUTS`` dense split targets, in one
        loop: what ``_sweep_1d`` is for one target.

        The left sums live in a local array, which the compiler knows no target row can alias, so it keeps them
        out of the loads and stores the criterion's fields cost and vectorises the per-output loops; the right
        sums are never stored (``total - left`` inside the proxy). Same arithmetic in the same order as
        ``criterion.update`` and ``proxy_impurity_improvement`` (forward additions, or the total minus the rows
        on the right when fewer moves; the proxy's sums in output order), so the same proxies, bit for bit.

        A proxy's two sums over the outputs are chains of dependent additions (their order is fixed, above), so one
        position's proxy waits on the adder's latency. The left sums of up to ``SWEEP_BATCH`` consecutive candidate
        positions are therefore kept, each in its own slot, and their proxies summed side by side, one independent
        chain per candidate and side; the candidates are then judged in position order, as one by one.
        """
        cdef intp_t d = self.criterion.n_outputs
        cdef const float64_t* Z = (<DenseCriterion> self.criterion).Z
        cdef const float64_t* sum_total = self.criterion.sum_total
        cdef const float64_t* sw = self.sample_weight
        cdef const intp_t* samples = self.samples
        cdef const float32_t* Xf = self.Xf
        cdef intp_t start = self.start, end = self.end
        cdef intp_t msl = self.min_samples_leaf
        cdef float64_t mwl = self.min_weight_leaf
        cdef float64_t W = self.criterion.weighted_n_node_samples
        cdef float64_t tot[SWEEP_MAX_OUTPUTS]
        # The running left sums live in the slot of the next pending candidate: a candidate keeps its slot, and
        # the next update writes the following slot, reading the kept one (``prev``) as it adds the first row.
        cdef float64_t held[SWEEP_BATCH * SWEEP_MAX_OUTPUTS]
        cdef float64_t held_wl[SWEEP_BATCH]
        cdef float64_t proxies[SWEEP_BATCH]
        cdef intp_t held_p[SWEEP_BATCH]
        cdef intp_t held_q[SWEEP_BATCH]
        cdef float64_t* cur = held
        cdef const float64_t* prev = NULL
        cdef intp_t n_held = 0, j
        cdef float64_t wl = 0.0, wr
        cdef intp_t pos = start, p = start, q, k
        for k in range(d):
            cur[k] = 0.0
            tot[k] = sum_total[k]
        while p < end:
            p = next_position(Xf, p, end, jump_from, jump_to, &q)
            if p >= end:
                break
            if p - start < msl or end - p < msl:
                continue
            # update(p): add [pos, p) to the left, or rebuild from the total when fewer moves
            if (p - pos) <= (end - p):
                if prev != NULL:
                    wl = _add_rows_from(cur, prev, Z, d, samples, sw, pos, p, wl)
                else:
                    wl = add_rows(cur, Z, d, samples, sw, pos, p, wl)
            else:
                for k in range(d):
                    cur[k] = tot[k]
                wl = subtract_rows(cur, Z, d, samples, sw, p, end, W)
            prev = NULL
            pos = p
            wr = W - wl
            if wl < mwl or wr < mwl:
                continue
            held_wl[n_held] = wl
            held_p[n_held] = p
            held_q[n_held] = q
            n_held += 1
            prev = cur
            if n_held == SWEEP_BATCH:
                _batch_proxies(held, held_wl, tot, W, d, proxies)
                _judge(feature, held_p, held_q, proxies, n_held, Xf, end, best)
                n_held = 0
            cur = held + n_held * d
        for j in range(n_held):
            proxies[j] = _proxy(held + j * d, held_wl[j], tot, W, d)
        _judge(feature, held_p, held_q, proxies, n_held, Xf, end, best)

    cdef intp_t _left_by_threshold_1d(self, float64_t threshold) noexcept nogil:
        """``DenseCriterion.set_left_by_threshold`` for one split target, reading the node's
        targets (and weights) gathered in sample order (``zf``, ``wf``) instead of one random
        access per sample and feature; same arithmetic in the same order."""
        cdef const float32_t* Xf = self.Xf
        cdef const float64_t* zf = self.zf
        cdef const float64_t* wf = self.wf
        cdef intp_t p, n_left = 0, start = self.start, end = self.end
        cdef float64_t acc = 0.0, wl = 0.0, w
        cdef float64_t a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0
        cdef uint64_t n0 = 0, n1 = 0, n2 = 0, n3 = 0, m0, m1, m2, m3
        cdef const uint64_t* zbits = <const uint64_t*> zf
        if wf == NULL:
            # branch-free (a comparison gives 0/1, its negation masks the bits of the target)
            # with four independent partial sums
            p = start
            while p + 4 <= end:
                m0 = Xf[p] <= threshold
                m1 = Xf[p + 1] <= threshold
                m2 = Xf[p + 2] <= threshold
                m3 = Xf[p + 3] <= threshold
                a0 += _masked(zbits[p], m0)
                a1 += _masked(zbits[p + 1], m1)
                a2 += _masked(zbits[p + 2], m2)
                a3 += _masked(zbits[p + 3], m3)
                n0 += m0
                n1 += m1
                n2 += m2
                n3 += m3
                p += 4
            while p < end:
                m0 = Xf[p] <= threshold
                a0 += _masked(zbits[p], m0)
                n0 += m0
                p += 1
            acc = (a0 + a1) + (a2 + a3)
            n_left = <intp_t>((n0 + n1) + (n2 + n3))
            wl = <float64_t>n_left
        else:
            for p in range(start, end):
                m0 = Xf[p] <= threshold
                w = _masked((<const uint64_t*> wf)[p], m0)
                acc += w * zf[p]
                wl += w
                n_left += <intp_t>m0
        self.criterion.sum_left[0] = acc
        self.criterion.weighted_n_left = wl
        self.criterion.weighted_n_right = self.criterion.weighted_n_node_samples - wl
        (<DenseCriterion>self.criterion).sum_right[0] = self.criterion.sum_total[0] - acc
        self.criterion.pos = start + n_left
        return n_left

    cdef void _gather_node_targets(self) noexcept nogil:
        cdef const float64_t* Z = (<DenseCriterion>self.criterion).Z
        cdef const float64_t* sw = self.sample_weight
        cdef const intp_t* samples = self.samples
        cdef float64_t* zf = self.zf
        cdef float64_t* wf = self.wf
        cdef intp_t p
        for p in range(self.start, self.end):
            zf[p] = Z[samples[p]]
        if wf != NULL:
            for p in range(self.start, self.end):
                wf[p] = sw[samples[p]]

    cdef void node_split(self, float64_t impurity, intp_t n_known_constants,
                         SplitRecord* split) noexcept nogil:
        cdef intp_t end = self.end
        cdef intp_t* features = self.features
        cdef intp_t* scratch = self.scratch_features
        cdef intp_t f_i = self.n_features, f_j, j, tmp, feature
        cdef intp_t n_visited = 0, n_found_constants = 0, n_drawn_constants = 0
        cdef intp_t n_total_constants = n_known_constants, n_scored = 0
        cdef BestSplit best
        cdef intp_t best_pos, best_feature
        cdef float64_t best_threshold
        best.proxy = -INFINITY
        best.pos = end
        best.feature = 0
        best.threshold = 0.0
        if self.zf != NULL:
            self._gather_node_targets()

        if self.max_features >= self.n_features:
            # every candidate is scored whatever the draws: visit them in array
            # order (no draws), which reads the columns of X nearly sequentially.
            # Stable partition: new constants first, scored features keep their order.
            for j in range(n_known_constants, self.n_features):
                feature = features[j]
                if self._score_feature(feature, &best):
                    features[n_known_constants + n_found_constants] = feature
                    n_found_constants += 1
                else:
                    scratch[n_scored] = feature
                    n_scored += 1
            n_total_constants = n_known_constants + n_found_constants
            memcpy(features + n_total_constants, scratch, n_scored * sizeof(intp_t))
        else:
            if not self.count_constant_features:
                # ancestors' constants are not eligible: treat them as already drawn
                n_drawn_constants = n_known_constants
            while (f_i > n_total_constants and
                   ((self.count_constant_features and
                     (n_visited < self.max_features or
                      n_visited <= n_found_constants + n_drawn_constants)) or
                    (not self.count_constant_features and
                     self.n_features - f_i < self.max_features))):
                n_visited += 1
                f_j = rand_int(n_drawn_constants, f_i - n_found_constants, &self.rng_state)
                if f_j < n_known_constants:
                    # constant in an ancestor: skip, it moves to the drawn-constants block
                    tmp = features[n_drawn_constants]
                    features[n_drawn_constants] = features[f_j]
                    features[f_j] = tmp
                    n_drawn_constants += 1
                    continue
                f_j += n_found_constants
                feature = features[f_j]
                if self._score_feature(feature, &best):
                    features[f_j] = features[n_total_constants]
                    features[n_total_constants] = feature
                    n_found_constants += 1
                    n_total_constants += 1
                else:
                    f_i -= 1
                    features[f_j] = features[f_i]
                    features[f_i] = feature

        best_pos = best.pos
        best_feature = best.feature
        best_threshold = best.threshold
        split.pos = best_pos
        split.feature = best_feature
        split.threshold = best_threshold
        split.improvement = -INFINITY
        split.impurity_left = INFINITY
        split.impurity_right = INFINITY
        if best_pos < end:
            self.partitioner.partition_final(best_feature, best_threshold)
            self.criterion.reset()
            self.criterion.update(best_pos)
            self.criterion.children_impurity(&split.impurity_left, &split.impurity_right)
            split.improvement = self.criterion.impurity_improvement(
                impurity, split.impurity_left, split.impurity_right)

        # ancestors' constants keep their order at the front for siblings and
        # descendants; the constants found here are appended for the children
        memcpy(features, self.constant_features, n_known_constants * sizeof(intp_t))
        memcpy(self.constant_features + n_known_constants, features + n_known_constants,
               n_found_constants * sizeof(intp_t))
        split.n_constant_features = n_total_constants
