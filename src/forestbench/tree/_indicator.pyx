# cython: language_level=3
"""Node-indicator lifting of a forest and a flat (concatenated) forest predictor.

A forest of M trees lifts a sample ``x`` to the binary vector of the nodes it goes through in every tree (root,
internal nodes and leaf): thesis Sec. 7.1, ``z(x) = (1_{1,1}(x), ..., 1_{M,N_M}(x))``. The kernels below work on the
trees' node arrays concatenated into one "flat forest": global node ids, ``offsets[m]`` being the first id of tree m.
Children of a node always have larger ids than the node (depth-first numbering), which the passes rely on.
"""
import numpy as np
cimport numpy as cnp

from forestbench.tree._utils cimport intp_t, float64_t, float32_t, int32_t

cdef enum:
    PREDICT_LANES = 8  # rows that descend one tree together in flat_forest_predict

cnp.import_array()


def parent_depth(const intp_t[::1] left, const intp_t[::1] right, const intp_t[::1] offsets):
    """Parent (global id, -1 at a root) and depth (0 at a root) of every node of a flat forest."""
    cdef intp_t q = left.shape[0], m, node, lo, hi, c
    parent_arr = np.full(q, -1, dtype=np.intp)
    depth_arr = np.zeros(q, dtype=np.intp)
    cdef intp_t[::1] parent = parent_arr, depth = depth_arr
    with nogil:
        for m in range(offsets.shape[0] - 1):
            lo = offsets[m]
            hi = offsets[m + 1]
            for node in range(lo, hi):
                if left[node] >= 0:
                    c = lo + left[node]
                    parent[c] = node
                    depth[c] = depth[node] + 1
                    c = lo + right[node]
                    parent[c] = node
                    depth[c] = depth[node] + 1
    return parent_arr, depth_arr


def fill_indicator(const intp_t[:, ::1] leaves, const intp_t[::1] parent, const intp_t[::1] depth,
                   const intp_t[::1] offsets):
    """CSR ``(indptr, indices)`` of the node indicator from the leaf reached in each tree.

    ``leaves[i, m]`` is the local id of the leaf of tree m reached by sample i. Row i lists, tree after tree, the
    global ids of the root-to-leaf path in increasing order (so the indices of a row are sorted)."""
    cdef intp_t n = leaves.shape[0], n_trees = leaves.shape[1], i, m, node, pos, d
    indptr_arr = np.empty(n + 1, dtype=np.intp)
    cdef intp_t[::1] indptr = indptr_arr
    cdef intp_t nnz = 0
    with nogil:
        indptr[0] = 0
        for i in range(n):
            for m in range(n_trees):
                nnz += depth[offsets[m] + leaves[i, m]] + 1
            indptr[i + 1] = nnz
    indices_arr = np.empty(nnz, dtype=np.intp)
    cdef intp_t[::1] indices = indices_arr
    with nogil:
        for i in range(n):
            pos = indptr[i]
            for m in range(n_trees):
                node = offsets[m] + leaves[i, m]
                d = depth[node]
                while node >= 0:
                    indices[pos + d] = node
                    node = parent[node]
                    d -= 1
                pos += depth[offsets[m] + leaves[i, m]] + 1
    return indptr_arr, indices_arr


def flat_forest_apply(const int32_t[::1] left, const int32_t[::1] right, const int32_t[::1] feature,
                      const float64_t[::1] threshold, const intp_t[::1] roots, const float32_t[:, :] X):
    """Global leaf id of every row in every tree of a flat forest (children ids are global)."""
    cdef intp_t n = X.shape[0], n_trees = roots.shape[0], i, m, node
    out = np.empty((n, n_trees), dtype=np.intp)
    cdef intp_t[:, ::1] ov = out
    with nogil:
        for i in range(n):
            for m in range(n_trees):
                node = roots[m]
                while left[node] >= 0:
                    if X[i, feature[node]] <= threshold[node]:
                        node = left[node]
                    else:
                        node = right[node]
                ov[i, m] = node
    return out


def descent_tables(const int32_t[::1] left, const int32_t[::1] right, const int32_t[::1] feature):
    """Tables of :func:`flat_forest_predict`: ``child[2 v + (x > threshold_v)]`` is the node after v without a
    branch, and a leaf points to itself (its ``feat`` is 0: read but without effect), so a row that has reached its
    leaf stays there."""
    cdef intp_t n_nodes = left.shape[0], node
    child_arr = np.empty(2 * n_nodes, dtype=np.int32)
    feat_arr = np.empty(n_nodes, dtype=np.int32)
    cdef int32_t[::1] child = child_arr, feat = feat_arr
    with nogil:
        for node in range(n_nodes):
            if left[node] >= 0:
                child[2 * node] = left[node]
                child[2 * node + 1] = right[node]
                feat[node] = feature[node]
            else:
                child[2 * node] = <int32_t> node
                child[2 * node + 1] = <int32_t> node
                feat[node] = 0
    return child_arr, feat_arr


cdef inline void _descend(intp_t* lanes, const float32_t** rows, intp_t g, const int32_t* child,
                          const int32_t* feat, const float32_t* threshold) noexcept nogil:
    """Move the g rows' nodes down one level at a time until none moves (each has reached its leaf)."""
    cdef intp_t k, node, nxt, moved = 1
    while moved:
        moved = 0
        for k in range(g):
            node = lanes[k]
            nxt = child[2 * node + (rows[k][feat[node]] > threshold[node])]
            moved |= nxt != node
            lanes[k] = nxt


def flat_forest_predict(const int32_t[::1] child, const int32_t[::1] feat, const float32_t[::1] threshold,
                        const float64_t[:, ::1] value, const intp_t[::1] roots, const float32_t[:, ::1] X,
                        const float64_t[::1] intercept):
    """``intercept + sum over trees of value[leaf]``: shape (n, n_outputs), with the tables of
    :func:`descent_tables` (global node ids) and float32 thresholds rounded down from the float64 ones
    (:func:`float32_thresholds`: for a float32 x, x > t exactly when x > t rounded down); X: float32,
    C-contiguous.

    Tree by tree (one tree's nodes stay in cache while all rows go through it), PREDICT_LANES rows at a time
    descending together: each step of a row is a chain of dependent loads (feature, input value, next node), and
    interleaving the rows' chains overlaps their latencies; a group stops when none of its rows moved."""
    cdef intp_t n = X.shape[0], n_trees = roots.shape[0], d = value.shape[1], i, m, o
    cdef intp_t g, k, i0, width = PREDICT_LANES
    cdef intp_t lanes[PREDICT_LANES]
    cdef const float32_t* rows[PREDICT_LANES]
    out = np.empty((n, d), dtype=np.float64)
    cdef float64_t[:, ::1] ov = out
    with nogil:
        for i in range(n):
            for o in range(d):
                ov[i, o] = intercept[o]
        for m in range(n_trees):
            i0 = 0
            while i0 < n:
                g = min(width, n - i0)
                for k in range(g):
                    lanes[k] = roots[m]
                    rows[k] = &X[i0 + k, 0]
                if g == PREDICT_LANES:
                    # a full group: a constant trip count, which the inlined loop unrolls
                    _descend(lanes, rows, PREDICT_LANES, &child[0], &feat[0], &threshold[0])
                else:
                    _descend(lanes, rows, g, &child[0], &feat[0], &threshold[0])
                if d == 1:
                    for k in range(g):
                        ov[i0 + k, 0] += value[lanes[k], 0]
                else:
                    for k in range(g):
                        for o in range(d):
                            ov[i0 + k, o] += value[lanes[k], o]
                i0 += g
    return out


def compress_flat_forest(const intp_t[::1] left, const intp_t[::1] right, const intp_t[::1] feature,
                         const float64_t[::1] threshold, const intp_t[::1] offsets, const float64_t[:, ::1] w):
    """Prune and re-weight a flat forest with node weights ``w`` (one row per global node, one column per output).

    A node stays a test node iff one of its strict descendants has a non-zero weight; its two children are kept
    (a child without non-zero descendants becomes a leaf). A leaf's value is the sum of ``w`` along its root path,
    so the pruned tree predicts exactly ``sum_j w_j 1_j(x)`` restricted to that tree. A tree whose only non-zero
    weight could be its root (or none) vanishes: its contribution ``w[root]`` is returned in ``constant``.

    Returns ``(left, right, feature, threshold, value, roots, constant)`` of the pruned flat forest with global
    int32 children ids (-1 at leaves) and feature -2 at leaves.
    """
    cdef intp_t q = left.shape[0], d = w.shape[1], n_trees = offsets.shape[0] - 1
    cdef intp_t m, lo, hi, node, o, top, cur, new_id, child, k
    nz_arr = np.zeros(q, dtype=np.uint8)       # node or a descendant has a non-zero weight
    split_arr = np.zeros(q, dtype=np.uint8)    # a strict descendant has a non-zero weight
    cdef unsigned char[::1] nz = nz_arr, split = split_arr
    constant_arr = np.zeros(d, dtype=np.float64)
    cdef float64_t[::1] constant = constant_arr
    cdef intp_t n_new = 0, n_roots = 0
    with nogil:
        for m in range(n_trees):
            lo = offsets[m]
            hi = offsets[m + 1]
            for node in range(hi - 1, lo - 1, -1):
                if left[node] >= 0:
                    split[node] = nz[lo + left[node]] | nz[lo + right[node]]
                    nz[node] = split[node]
                for o in range(d):
                    if w[node, o] != 0.0:
                        nz[node] = 1
            if split[lo]:
                n_roots += 1
                for node in range(lo, hi):
                    # a kept node is the root or a child of a kept test node
                    if node == lo:
                        n_new += 1
                    if split[node]:
                        n_new += 2
            else:
                for o in range(d):
                    constant[o] += w[lo, o]
    new_left_arr = np.full(n_new, -1, dtype=np.int32)
    new_right_arr = np.full(n_new, -1, dtype=np.int32)
    new_feature_arr = np.full(n_new, -2, dtype=np.int32)
    new_threshold_arr = np.full(n_new, -2.0, dtype=np.float64)
    value_arr = np.zeros((n_new, d), dtype=np.float64)
    roots_arr = np.empty(n_roots, dtype=np.intp)
    stack_old_arr = np.empty(max(q, 1), dtype=np.intp)
    stack_new_arr = np.empty(max(q, 1), dtype=np.intp)
    cdef int32_t[::1] nl = new_left_arr, nr = new_right_arr, nf = new_feature_arr
    cdef float64_t[::1] nt = new_threshold_arr
    cdef float64_t[:, ::1] val = value_arr
    cdef intp_t[::1] roots = roots_arr, stack_old = stack_old_arr, stack_new = stack_new_arr
    cdef intp_t next_id = 0, r = 0
    with nogil:
        for m in range(n_trees):
            lo = offsets[m]
            if not split[lo]:
                continue
            roots[r] = next_id
            r += 1
            for o in range(d):
                val[next_id, o] = w[lo, o]
            stack_old[0] = lo
            stack_new[0] = next_id
            next_id += 1
            top = 1
            while top > 0:
                top -= 1
                cur = stack_old[top]
                new_id = stack_new[top]
                if not split[cur]:
                    continue
                nf[new_id] = <int32_t> feature[cur]
                nt[new_id] = threshold[cur]
                for k in range(2):
                    child = lo + (left[cur] if k == 0 else right[cur])
                    for o in range(d):
                        val[next_id, o] = val[new_id, o] + w[child, o]
                    if k == 0:
                        nl[new_id] = <int32_t> next_id
                    else:
                        nr[new_id] = <int32_t> next_id
                    stack_old[top] = child
                    stack_new[top] = next_id
                    top += 1
                    next_id += 1
        # internal nodes keep no value (it is never read); zero it so the stored model is canonical
        for node in range(n_new):
            if nl[node] >= 0:
                for o in range(d):
                    val[node, o] = 0.0
    return new_left_arr, new_right_arr, new_feature_arr, new_threshold_arr, value_arr, roots_arr, constant_arr
