"""Tree growing (depth-first and best-first), the fitted ``Tree`` and traversal.

Node ids: depth-first growth numbers nodes in pre-order (left subtree before
right subtree); best-first growth numbers a node when its parent is expanded
(left child first). In both, children have larger ids than their parent.

Leaf values are stored for leaves only: a dense ``(n_leaves, n_outputs)``
array, or a CSR matrix ``(n_leaves, n_outputs)`` holding the non-zero means
when the leaf targets are sparse. ``Tree.leaf_index[node]`` is the row of a
leaf (-1 for split nodes). The whole build runs without the GIL.
"""
from libc.stdlib cimport realloc, free
from libc.string cimport memcpy
from libc.math cimport INFINITY

import numpy as np
import scipy.sparse as sp

from forestbench.tree._utils cimport float32_t, EPSILON, TREE_LEAF, TREE_UNDEFINED, grow_buffer
from forestbench.tree._criterion cimport Criterion, DenseCriterion, SparseCriterion, LeafTargets
from forestbench.tree._partitioner cimport Partitioner, DensePartitioner, SparsePartitioner


cdef class TreeBuilder:
    def __cinit__(self, *args, **kwargs):
        self.nodes = NULL
        self.leaf_dense = NULL
        self.leaf_indptr = NULL
        self.leaf_indices = NULL
        self.leaf_data = NULL

    def __init__(self, Splitter splitter, intp_t n_outputs, bint sparse_leaves,
                 intp_t max_depth, intp_t min_samples_split, intp_t min_samples_leaf,
                 float64_t min_weight_leaf, float64_t min_impurity_decrease,
                 intp_t max_leaf_nodes, float64_t min_weight_split=0.0):
        self.splitter = splitter
        self.n_samples = self.splitter.n_samples
        self.n_outputs = n_outputs
        self.sparse_leaves = sparse_leaves
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.min_weight_leaf = min_weight_leaf
        self.min_weight_split = min_weight_split
        self.min_impurity_decrease = min_impurity_decrease
        self.max_leaf_nodes = max_leaf_nodes
        self.node_count = 0
        self.node_capacity = 0
        self.n_leaves = 0
        self.leaf_dense_capacity = 0
        self.leaf_indptr_capacity = 0
        self.leaf_nnz_capacity = 0
        self.depth_seen = 0

    def __dealloc__(self):
        free(self.nodes)
        free(self.leaf_dense)
        free(self.leaf_indptr)
        free(self.leaf_indices)
        free(self.leaf_data)

    cdef intp_t _add_node(self, intp_t parent, bint is_left, bint is_leaf, intp_t feature,
                          float64_t threshold, float64_t impurity, intp_t n_node_samples,
                          float64_t weighted_n_node_samples) except -1 nogil:
        cdef intp_t node_id = self.node_count
        cdef Node* node
        grow_buffer(<void**> &self.nodes, &self.node_capacity, node_id + 1, sizeof(Node))
        node = &self.nodes[node_id]
        node.impurity = impurity
        node.n_node_samples = n_node_samples
        node.weighted_n_node_samples = weighted_n_node_samples
        node.left_child = TREE_LEAF
        node.right_child = TREE_LEAF
        node.leaf_index = -1
        if is_leaf:
            node.feature = TREE_UNDEFINED
            node.threshold = TREE_UNDEFINED
        else:
            node.feature = feature
            node.threshold = threshold
        if parent >= 0:
            if is_left:
                self.nodes[parent].left_child = node_id
            else:
                self.nodes[parent].right_child = node_id
        self.node_count += 1
        return node_id

    cdef int _make_leaf(self, intp_t node_id, intp_t start, intp_t end) except -1 nogil:
        cdef intp_t j, k, nnz, d = self.n_outputs
        cdef float64_t v
        self.splitter.node_leaf_mean(start, end)
        self.nodes[node_id].leaf_index = self.n_leaves
        if not self.sparse_leaves:
            grow_buffer(<void**> &self.leaf_dense, &self.leaf_dense_capacity,
                        (self.n_leaves + 1) * d, sizeof(float64_t))
            memcpy(self.leaf_dense + self.n_leaves * d, self.splitter.leaf_targets.acc, d * sizeof(float64_t))
        else:
            grow_buffer(<void**> &self.leaf_indptr, &self.leaf_indptr_capacity,
                        self.n_leaves + 2, sizeof(intp_t))
            if self.n_leaves == 0:
                self.leaf_indptr[0] = 0
            nnz = self.leaf_indptr[self.n_leaves]
            grow_buffer(<void**> &self.leaf_indices, &self.leaf_nnz_capacity,
                        nnz + self.splitter.leaf_targets.n_touched + 1, sizeof(int32_t))
            # leaf_data shares the capacity of leaf_indices
            self.leaf_data = <float64_t*> realloc(self.leaf_data,
                                                  self.leaf_nnz_capacity * sizeof(float64_t))
            if self.leaf_data == NULL:
                with gil:
                    raise MemoryError("tree builder could not grow the leaf store")
            for j in range(self.splitter.leaf_targets.n_touched):
                k = self.splitter.leaf_targets.touched[j]
                v = self.splitter.leaf_targets.acc[k]
                if v != 0.0:
                    self.leaf_indices[nnz] = <int32_t>k
                    self.leaf_data[nnz] = v
                    nnz += 1
            self.leaf_indptr[self.n_leaves + 1] = nnz
        self.n_leaves += 1
        return 0

    cdef int _build_depth_first(self) except -1 nogil:
        cdef StackRecord* stack = NULL
        cdef intp_t stack_capacity = 0, stack_n = 0
        cdef StackRecord rec
        cdef SplitRecord split
        cdef intp_t n_node_samples, node_id
        cdef float64_t weighted_n_node_samples, impurity
        cdef bint is_leaf, first = 1
        try:
            grow_buffer(<void**> &stack, &stack_capacity, 1, sizeof(StackRecord))
            stack[0].start = 0
            stack[0].end = self.n_samples
            stack[0].depth = 0
            stack[0].parent = TREE_UNDEFINED
            stack[0].is_left = 0
            stack[0].impurity = INFINITY
            stack[0].n_constant_features = 0
            stack_n = 1
            while stack_n > 0:
                stack_n -= 1
                rec = stack[stack_n]
                n_node_samples = rec.end - rec.start
                self.splitter.node_reset(rec.start, rec.end, &weighted_n_node_samples)
                is_leaf = (rec.depth >= self.max_depth or
                           n_node_samples < self.min_samples_split or
                           n_node_samples < 2 * self.min_samples_leaf or
                           weighted_n_node_samples < 2 * self.min_weight_leaf or
                           weighted_n_node_samples < self.min_weight_split)
                impurity = rec.impurity
                if first:
                    impurity = self.splitter.node_impurity()
                    first = 0
                is_leaf = is_leaf or impurity <= EPSILON
                split.pos = rec.end
                split.feature = TREE_UNDEFINED
                split.threshold = TREE_UNDEFINED
                if not is_leaf:
                    self.splitter.node_split(impurity, rec.n_constant_features, &split)
                    is_leaf = (split.pos >= rec.end or
                               split.improvement + EPSILON < self.min_impurity_decrease)
                node_id = self._add_node(rec.parent, rec.is_left, is_leaf, split.feature,
                                         split.threshold, impurity, n_node_samples,
                                         weighted_n_node_samples)
                if rec.depth > self.depth_seen:
                    self.depth_seen = rec.depth
                if is_leaf:
                    self._make_leaf(node_id, rec.start, rec.end)
                else:
                    grow_buffer(<void**> &stack, &stack_capacity, stack_n + 2, sizeof(StackRecord))
                    # right pushed first so that the left subtree is grown first
                    stack[stack_n].start = split.pos
                    stack[stack_n].end = rec.end
                    stack[stack_n].depth = rec.depth + 1
                    stack[stack_n].parent = node_id
                    stack[stack_n].is_left = 0
                    stack[stack_n].impurity = split.impurity_right
                    stack[stack_n].n_constant_features = split.n_constant_features
                    stack[stack_n + 1].start = rec.start
                    stack[stack_n + 1].end = split.pos
                    stack[stack_n + 1].depth = rec.depth + 1
                    stack[stack_n + 1].parent = node_id
                    stack[stack_n + 1].is_left = 1
                    stack[stack_n + 1].impurity = split.impurity_left
                    stack[stack_n + 1].n_constant_features = split.n_constant_features
                    stack_n += 2
        finally:
            free(stack)
        return 0

    cdef int _add_split_node(self, intp_t start, intp_t end, bint is_first, bint is_left,
                             intp_t parent, intp_t depth, float64_t impurity,
                             FrontierRecord* res) except -1 nogil:
        cdef SplitRecord split
        cdef float64_t weighted_n_node_samples
        cdef intp_t n_node_samples = end - start
        cdef bint is_leaf
        self.splitter.node_reset(start, end, &weighted_n_node_samples)
        if is_first:
            impurity = self.splitter.node_impurity()
        is_leaf = (depth >= self.max_depth or
                   n_node_samples < self.min_samples_split or
                   n_node_samples < 2 * self.min_samples_leaf or
                   weighted_n_node_samples < 2 * self.min_weight_leaf or
                   weighted_n_node_samples < self.min_weight_split or
                   impurity <= EPSILON)
        split.pos = end
        split.feature = TREE_UNDEFINED
        split.threshold = TREE_UNDEFINED
        if not is_leaf:
            # constants are not carried over in best-first order (siblings are
            # expanded in any order), as in scikit-learn
            self.splitter.node_split(impurity, 0, &split)
            is_leaf = (split.pos >= end or
                       split.improvement + EPSILON < self.min_impurity_decrease)
        res.node_id = self._add_node(parent, is_left, is_leaf, split.feature, split.threshold,
                                     impurity, n_node_samples, weighted_n_node_samples)
        res.start = start
        res.end = end
        res.depth = depth
        res.impurity = impurity
        res.is_leaf = is_leaf
        if is_leaf:
            res.pos = end
            res.improvement = 0.0
            res.impurity_left = impurity
            res.impurity_right = impurity
        else:
            res.pos = split.pos
            res.improvement = split.improvement
            res.impurity_left = split.impurity_left
            res.impurity_right = split.impurity_right
        return 0

    cdef int _build_best_first(self) except -1 nogil:
        cdef FrontierRecord* heap = NULL
        cdef intp_t heap_capacity = 0, heap_n = 0
        cdef FrontierRecord rec, child
        cdef intp_t max_split_nodes = self.max_leaf_nodes - 1
        cdef Node* node
        try:
            grow_buffer(<void**> &heap, &heap_capacity, 1, sizeof(FrontierRecord))
            self._add_split_node(0, self.n_samples, 1, 0, TREE_UNDEFINED, 0, INFINITY, &child)
            _heap_push(heap, &heap_n, &child)
            while heap_n > 0:
                rec = _heap_pop(heap, &heap_n)
                node = &self.nodes[rec.node_id]
                if rec.depth > self.depth_seen:
                    self.depth_seen = rec.depth
                if rec.is_leaf or max_split_nodes <= 0:
                    node.left_child = TREE_LEAF
                    node.right_child = TREE_LEAF
                    node.feature = TREE_UNDEFINED
                    node.threshold = TREE_UNDEFINED
                    self._make_leaf(rec.node_id, rec.start, rec.end)
                else:
                    max_split_nodes -= 1
                    grow_buffer(<void**> &heap, &heap_capacity, heap_n + 2, sizeof(FrontierRecord))
                    self._add_split_node(rec.start, rec.pos, 0, 1, rec.node_id, rec.depth + 1,
                                         rec.impurity_left, &child)
                    _heap_push(heap, &heap_n, &child)
                    self._add_split_node(rec.pos, rec.end, 0, 0, rec.node_id, rec.depth + 1,
                                         rec.impurity_right, &child)
                    _heap_push(heap, &heap_n, &child)
        finally:
            free(heap)
        return 0

    def build(self):
        """Grow the tree (GIL released) and return its arrays as a dict."""
        with nogil:
            if self.max_leaf_nodes < 0:
                self._build_depth_first()
            else:
                self._build_best_first()
        return self._export()

    def _export(self):
        cdef intp_t i, n = self.node_count, d = self.n_outputs
        left = np.empty(n, dtype=np.intp)
        right = np.empty(n, dtype=np.intp)
        feature = np.empty(n, dtype=np.intp)
        threshold = np.empty(n, dtype=np.float64)
        impurity = np.empty(n, dtype=np.float64)
        n_node_samples = np.empty(n, dtype=np.intp)
        weighted = np.empty(n, dtype=np.float64)
        leaf_index = np.empty(n, dtype=np.intp)
        cdef intp_t[::1] lv = left, rv = right, fv = feature, nv = n_node_samples, liv = leaf_index
        cdef float64_t[::1] tv = threshold, iv = impurity, wv = weighted
        for i in range(n):
            lv[i] = self.nodes[i].left_child
            rv[i] = self.nodes[i].right_child
            fv[i] = self.nodes[i].feature
            tv[i] = self.nodes[i].threshold
            iv[i] = self.nodes[i].impurity
            nv[i] = self.nodes[i].n_node_samples
            wv[i] = self.nodes[i].weighted_n_node_samples
            liv[i] = self.nodes[i].leaf_index
        out = dict(children_left=left, children_right=right, feature=feature,
                   threshold=threshold, impurity=impurity, n_node_samples=n_node_samples,
                   weighted_n_node_samples=weighted, leaf_index=leaf_index,
                   max_depth=int(self.depth_seen))
        cdef intp_t nl = self.n_leaves, nnz
        if not self.sparse_leaves:
            values = np.empty((nl, d), dtype=np.float64)
            if nl * d > 0:
                memcpy(<void*> <size_t> values.ctypes.data,
                       self.leaf_dense, nl * d * sizeof(float64_t))
            out["leaf_values"] = values
        else:
            nnz = self.leaf_indptr[nl] if nl > 0 else 0
            indptr = np.zeros(nl + 1, dtype=np.intp)
            indices = np.empty(nnz, dtype=np.int32)
            data = np.empty(nnz, dtype=np.float64)
            if nl > 0:
                memcpy(<void*> <size_t> indptr.ctypes.data, self.leaf_indptr, (nl + 1) * sizeof(intp_t))
            if nnz > 0:
                memcpy(<void*> <size_t> indices.ctypes.data, self.leaf_indices, nnz * sizeof(int32_t))
                memcpy(<void*> <size_t> data.ctypes.data, self.leaf_data, nnz * sizeof(float64_t))
            if nnz < 2 ** 31 - 1:
                indptr = indptr.astype(np.int32)
            out["leaf_values"] = sp.csr_array((data, indices, indptr), shape=(nl, d))
        return out


cdef inline bint _heap_before(FrontierRecord* a, FrontierRecord* b) noexcept nogil:
    # larger improvement first; equal improvements: smaller node id first
    if a.improvement != b.improvement:
        return a.improvement > b.improvement
    return a.node_id < b.node_id


cdef void _heap_push(FrontierRecord* heap, intp_t* n, FrontierRecord* item) noexcept nogil:
    cdef intp_t i = n[0], parent
    cdef FrontierRecord tmp
    heap[i] = item[0]
    n[0] += 1
    while i > 0:
        parent = (i - 1) // 2
        if _heap_before(&heap[i], &heap[parent]):
            tmp = heap[i]
            heap[i] = heap[parent]
            heap[parent] = tmp
            i = parent
        else:
            break


cdef FrontierRecord _heap_pop(FrontierRecord* heap, intp_t* n) noexcept nogil:
    cdef FrontierRecord top = heap[0], tmp
    cdef intp_t i = 0, child, best
    n[0] -= 1
    heap[0] = heap[n[0]]
    while True:
        child = 2 * i + 1
        if child >= n[0]:
            break
        best = child
        if child + 1 < n[0] and _heap_before(&heap[child + 1], &heap[child]):
            best = child + 1
        if _heap_before(&heap[best], &heap[i]):
            tmp = heap[i]
            heap[i] = heap[best]
            heap[best] = tmp
            i = best
        else:
            break
    return top


def build_tree(X, Y, Z, sample_weight, *, bint random_split, intp_t max_features,
               intp_t max_depth, intp_t min_samples_split, intp_t min_samples_leaf,
               float64_t min_weight_leaf, float64_t min_impurity_decrease,
               intp_t max_leaf_nodes, unsigned long long seed, float64_t min_weight_split=0.0,
               bint count_constant_features=False):
    """Grow one tree and return the dict of its arrays.

    X: 2-D float32 C- or Fortran-contiguous array, or scipy CSC (float32 data,
    int32 sorted indices, no stored zeros). Y (leaf targets) and Z (split
    targets): 2-D float64 C-contiguous arrays or scipy CSR with int32 indices.
    sample_weight: float64 array or None. max_leaf_nodes: -1 for depth-first.
    min_weight_split: a node whose weighted sample count is below it is a leaf.
    """
    cdef intp_t n_rows = X.shape[0], n_features = X.shape[1]
    cdef Partitioner partitioner
    cdef Criterion criterion
    cdef LeafTargets leaf_targets
    if sp.issparse(X):
        partitioner = SparsePartitioner(n_rows, X.data, X.indices, X.indptr)
    else:
        partitioner = DensePartitioner(X)
    if sp.issparse(Z):
        criterion = SparseCriterion(Z.shape[1], Z.indptr, Z.indices, Z.data)
    else:
        criterion = DenseCriterion(Z.shape[1], Z)
    if sp.issparse(Y):
        leaf_targets = LeafTargets(Y.shape[1], None, Y.indptr, Y.indices, Y.data)
    else:
        leaf_targets = LeafTargets(Y.shape[1], Y)
    if sample_weight is None:
        samples = np.arange(n_rows, dtype=np.intp)
    else:
        samples = np.flatnonzero(np.asarray(sample_weight) != 0).astype(np.intp)
    splitter = Splitter(criterion, partitioner, leaf_targets, samples, sample_weight,
                        n_features, max_features, min_samples_leaf, min_weight_leaf,
                        random_split, seed, count_constant_features)
    builder = TreeBuilder(splitter, Y.shape[1], sp.issparse(Y), max_depth, min_samples_split,
                          min_samples_leaf, min_weight_leaf, min_impurity_decrease,
                          max_leaf_nodes, min_weight_split)
    return builder.build()


def apply_dense(const intp_t[::1] left, const intp_t[::1] right, const intp_t[::1] feature,
                const float64_t[::1] threshold, const float32_t[:, :] X):
    """Leaf id reached by each row of a dense float32 X (any layout)."""
    cdef intp_t n = X.shape[0], i, node
    out = np.empty(n, dtype=np.intp)
    cdef intp_t[::1] ov = out
    with nogil:
        for i in range(n):
            node = 0
            while left[node] != TREE_LEAF:
                if X[i, feature[node]] <= threshold[node]:
                    node = left[node]
                else:
                    node = right[node]
            ov[i] = node
    return out


def apply_csr(const intp_t[::1] left, const intp_t[::1] right, const intp_t[::1] feature,
              const float64_t[::1] threshold, const float32_t[::1] data,
              const int32_t[::1] indices, const int32_t[::1] indptr, intp_t n_rows,
              intp_t n_features):
    """Leaf id reached by each row of a CSR X (thesis Sec. 8.2).

    The thesis (and scikit-learn) keep a value array plus a mask array telling
    which entries belong to the current row. Here the value array is all zeros
    between rows instead: a row's non-zeros are written in, the tree is
    traversed reading ``value[feature]`` directly (no mask test per node), and
    the same entries are set back to zero, O(non-zeros of the row) either way.
    """
    cdef intp_t i, k, node
    out = np.empty(n_rows, dtype=np.intp)
    cdef intp_t[::1] ov = out
    value_arr = np.zeros(max(n_features, 1), dtype=np.float32)
    cdef float32_t[::1] value = value_arr
    with nogil:
        for i in range(n_rows):
            for k in range(indptr[i], indptr[i + 1]):
                value[indices[k]] = data[k]
            node = 0
            while left[node] != TREE_LEAF:
                if value[feature[node]] <= threshold[node]:
                    node = left[node]
                else:
                    node = right[node]
            ov[i] = node
            for k in range(indptr[i], indptr[i + 1]):
                value[indices[k]] = 0.0
    return out


def path_to_leaves(const intp_t[::1] parent, const intp_t[::1] leaves, intp_t max_depth):
    """CSR (indptr, indices) of the root-to-leaf node ids of each leaf in ``leaves``.

    Walks up through ``parent`` (-1 at the root) and writes the path in
    increasing id order (a parent always has a smaller id than its children).
    """
    cdef intp_t n = leaves.shape[0], i, node, length, j, nnz = 0
    indptr = np.empty(n + 1, dtype=np.intp)
    indices = np.empty(n * (max_depth + 1), dtype=np.intp)
    cdef intp_t[::1] pv = indptr, iv = indices
    with nogil:
        pv[0] = 0
        for i in range(n):
            length = 0
            node = leaves[i]
            while node >= 0:
                length += 1
                node = parent[node]
            node = leaves[i]
            j = nnz + length - 1
            while node >= 0:
                iv[j] = node
                j -= 1
                node = parent[node]
            nnz += length
            pv[i + 1] = nnz
    return indptr, indices[:nnz]
