from forestbench.tree._utils cimport intp_t, float64_t, int32_t
from forestbench.tree._splitter cimport Splitter, SplitRecord


cdef struct Node:
    intp_t left_child
    intp_t right_child
    intp_t feature
    float64_t threshold
    float64_t impurity
    intp_t n_node_samples
    float64_t weighted_n_node_samples
    intp_t leaf_index            # row in the leaf-value store, -1 for a split node


cdef struct StackRecord:
    intp_t start
    intp_t end
    intp_t depth
    intp_t parent
    bint is_left
    float64_t impurity
    intp_t n_constant_features


cdef struct FrontierRecord:
    intp_t node_id
    intp_t start
    intp_t end
    intp_t pos
    intp_t depth
    bint is_leaf
    float64_t impurity
    float64_t impurity_left
    float64_t impurity_right
    float64_t improvement


cdef class TreeBuilder:
    cdef Splitter splitter
    cdef intp_t n_samples
    cdef intp_t max_depth
    cdef intp_t min_samples_split
    cdef intp_t min_samples_leaf
    cdef float64_t min_weight_leaf
    cdef float64_t min_weight_split
    cdef float64_t min_impurity_decrease
    cdef intp_t max_leaf_nodes          # -1: unlimited, depth-first growth
    # node store
    cdef Node* nodes
    cdef intp_t node_count
    cdef intp_t node_capacity
    cdef intp_t depth_seen
    # leaf store: dense rows, or CSR rows when the leaf targets are sparse
    cdef bint sparse_leaves
    cdef intp_t n_outputs
    cdef intp_t n_leaves
    cdef float64_t* leaf_dense
    cdef intp_t leaf_dense_capacity     # in leaves
    cdef intp_t* leaf_indptr
    cdef intp_t leaf_indptr_capacity
    cdef int32_t* leaf_indices
    cdef float64_t* leaf_data
    cdef intp_t leaf_nnz_capacity

    cdef intp_t _add_node(self, intp_t parent, bint is_left, bint is_leaf, intp_t feature,
                          float64_t threshold, float64_t impurity, intp_t n_node_samples,
                          float64_t weighted_n_node_samples) except -1 nogil
    cdef int _make_leaf(self, intp_t node_id, intp_t start, intp_t end) except -1 nogil
    cdef int _build_depth_first(self) except -1 nogil
    cdef int _add_split_node(self, intp_t start, intp_t end, bint is_first, bint is_left,
                             intp_t parent, intp_t depth, float64_t impurity,
                             FrontierRecord* res) except -1 nogil
    cdef int _build_best_first(self) except -1 nogil
