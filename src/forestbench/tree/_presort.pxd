# Presorted best-first regression tree builder (see _presort.pyx), used by the boosting loop.
from libc.stdint cimport uint64_t

from forestbench.tree._utils cimport intp_t, float32_t, float64_t, int32_t
from forestbench.tree._tree cimport Node


cdef struct Candidate:
    intp_t node_id
    intp_t start
    intp_t end
    intp_t feature           # -1: no split (leaf)
    intp_t pos
    float64_t threshold
    float64_t improvement
    intp_t order_feature     # a feature whose range [start, end) holds exactly the node's samples
    bint in_master           # the root: its ranges are read from the master orders


cdef class PresortBuilder:
    cdef object _keep
    cdef intp_t n, p, max_leaf_nodes, max_features
    cdef bint count_constant_features
    cdef int32_t* master_idx      # p x n: samples of each feature in increasing value order
    cdef float32_t* master_val
    cdef int32_t* idx             # working copies, partitioned per node
    cdef float32_t* val
    cdef int32_t* tmp_idx
    cdef float32_t* tmp_val
    cdef char* goleft
    cdef intp_t* feats
    cdef float64_t* sum_total
    cdef float64_t* sum_left
    cdef float64_t* best_left
    cdef Candidate* frontier
    cdef Node* nodes
    cdef intp_t node_count
    cdef float64_t* leaf_values
    cdef intp_t n_leaves
    cdef intp_t cap_q, cap_w
    cdef float64_t* inv           # inv[k] = 1 / k: no division per scanned position
    # two-valued (binary) inputs: their split sums by one pass over the node's samples (see _binary_sums)
    cdef intp_t n_bin
    cdef intp_t* bin_of           # p: index among the two-valued features, -1 for the others
    cdef char* bin_minor_high     # n_bin: 1 when the rarer of the two values is the larger one
    cdef int32_t* row_ptr         # n + 1: CSR rows of the rarer values
    cdef int32_t* row_bins        # the two-valued features (their bin index) where the row holds the rarer value
    cdef float64_t* bin_sums      # n_bin x q: sum of the split targets over the node's rows holding the rarer value
    cdef intp_t* bin_counts       # n_bin: number of those rows
    cdef intp_t cap_bq
    # gather mode (see PresortBuilder): only the rows' order of feature 0 is partitioned; a drawn feature's node
    # order is gathered from its master order by the rows' node ids
    cdef bint gather
    cdef int32_t* node_of         # n: the current tree's node of each row (the deepest node split so far)
    cdef int32_t* gidx            # n: the drawn feature's samples in the node, in its value order
    cdef float32_t* gval
    cdef float32_t* xcol          # p x n: X column by column in row order (the split feature's side of a row)
    cdef int32_t* rank            # p x n: each row's position in each feature's master order
    cdef float32_t* skey          # n: sort keys (ranks) of a small node's rows
    cdef intp_t* sperm            # n: the ranks they carry

    cdef int _ensure(self, intp_t q, intp_t w) except -1 nogil
    cdef void _binary_sums(self, Candidate* c, const float64_t* Z, intp_t q) noexcept nogil
    cdef void _evaluate(self, Candidate* c, const float64_t* Z, intp_t q, uint64_t* state) noexcept nogil
    cdef void _partition(self, Candidate* c, bint all_features) noexcept nogil
    cdef void _gather(self, intp_t f, int32_t node_id, intp_t start, intp_t end) noexcept nogil
    cdef void _split_rows(self, Candidate* c, int32_t left_id, int32_t right_id, bint children_split) noexcept nogil
    cdef intp_t _new_node(self, intp_t parent, bint is_left) noexcept nogil
    cdef void _make_leaf(self, Candidate* c, const float64_t* L, intp_t w, intp_t* leaf_of) noexcept nogil
    cdef int build(self, const float64_t* Z, intp_t q, const float64_t* L, intp_t w, intp_t* leaf_of,
                   uint64_t* state) except -1 nogil
