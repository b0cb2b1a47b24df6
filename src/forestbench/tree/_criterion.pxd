from forestbench.tree._utils cimport intp_t, float32_t, float64_t, int32_t


cdef class Criterion:
    """Multi-output variance of the split targets Z over a node [start, end)."""
    cdef object _keep                     # arrays whose buffers are referenced below
    cdef const float64_t* sample_weight   # NULL when all weights are 1
    cdef const intp_t* samples
    cdef intp_t n_outputs
    cdef intp_t start, pos, end
    cdef float64_t weighted_n_samples
    cdef float64_t weighted_n_node_samples
    cdef float64_t weighted_n_left
    cdef float64_t weighted_n_right
    cdef float64_t sq_sum_total           # sum_i w_i ||z_i||^2 over the node
    cdef float64_t* sum_total             # per output sum_i w_i z_ik over the node
    cdef float64_t* sum_left              # same over [start, pos)

    cdef void set_samples(self, const intp_t* samples, const float64_t* sample_weight,
                          float64_t weighted_n_samples) noexcept nogil
    cdef void init_node(self, intp_t start, intp_t end) noexcept nogil
    cdef void reset(self) noexcept nogil
    cdef void update(self, intp_t new_pos) noexcept nogil
    cdef float64_t node_impurity(self) noexcept nogil
    cdef float64_t proxy_impurity_improvement(self) noexcept nogil
    cdef void children_impurity(self, float64_t* impurity_left,
                                float64_t* impurity_right) noexcept nogil
    cdef float64_t impurity_improvement(self, float64_t impurity_parent,
                                        float64_t impurity_left,
                                        float64_t impurity_right) noexcept nogil


cdef class DenseCriterion(Criterion):
    cdef const float64_t* Z               # C-contiguous (n, n_outputs)
    cdef float64_t* sum_right

    cdef intp_t set_left_by_threshold(self, const float32_t* Xf, float64_t threshold) noexcept nogil


cdef class SparseCriterion(Criterion):
    cdef const int32_t* indptr            # CSR split targets
    cdef const int32_t* indices
    cdef const float64_t* data
    cdef float64_t sq_of_sums_total       # sum_k sum_total[k]^2
    cdef float64_t sq_of_sums_left        # sum_k sum_left[k]^2, kept incrementally
    cdef float64_t sq_of_sums_right       # sum_k (sum_total[k] - sum_left[k])^2, kept incrementally
    cdef int32_t* touched_total           # outputs with a non-zero in the node
    cdef intp_t n_touched_total
    cdef int32_t* touched_left            # outputs with a non-zero in [start, pos)
    cdef intp_t n_touched_left
    cdef char* mark_left


cdef class LeafTargets:
    """Weighted means of the leaf targets Y over a node, dense or sparse."""
    cdef object _keep
    cdef intp_t n_outputs
    cdef bint is_sparse
    cdef const float64_t* Y               # dense: C-contiguous (n, n_outputs)
    cdef const int32_t* indptr            # sparse: CSR
    cdef const int32_t* indices
    cdef const float64_t* data
    cdef float64_t* acc                   # dense accumulator of length n_outputs
    cdef int32_t* touched                 # sparse: outputs with a non-zero in the node
    cdef intp_t n_touched
    cdef char* mark

    cdef void node_mean(self, const intp_t* samples, const float64_t* sample_weight,
                        intp_t start, intp_t end) noexcept nogil
