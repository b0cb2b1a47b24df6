from libc.stdint cimport uint64_t
from forestbench.tree._utils cimport intp_t, float32_t, float64_t
from forestbench.tree._criterion cimport Criterion, LeafTargets
from forestbench.tree._partitioner cimport Partitioner


cdef struct SplitRecord:
    intp_t feature
    intp_t pos                   # samples[start:pos] go left; pos == end means "no split"
    float64_t threshold
    float64_t improvement
    float64_t impurity_left
    float64_t impurity_right
    intp_t n_constant_features   # constants known for the children


cdef struct BestSplit:
    float64_t proxy
    intp_t pos
    intp_t feature
    float64_t threshold


cdef class Splitter:
    cdef object _keep
    cdef Criterion criterion
    cdef Partitioner partitioner
    cdef LeafTargets leaf_targets
    cdef intp_t* samples
    cdef intp_t n_samples
    cdef float32_t* Xf
    cdef float64_t* zf                # random splitter, one dense target: the node's targets in sample order
    cdef float64_t* wf                # ... and their weights (NULL without weights)
    cdef intp_t* features
    cdef intp_t* constant_features
    cdef intp_t* scratch_features
    cdef intp_t n_features
    cdef const float64_t* sample_weight
    cdef float64_t weighted_n_samples
    cdef intp_t max_features
    cdef intp_t min_samples_leaf
    cdef float64_t min_weight_leaf
    cdef bint random_split
    cdef bint count_constant_features
    cdef bint scan_random             # dense X and dense Z: score random thresholds in one pass
    cdef bint sweep_1d                # one dense split target: the fused best-split sweep
    cdef bint sweep_nd                # 2..SWEEP_MAX_OUTPUTS (1024) dense split targets: the fused sweep
    cdef bint sparse_input            # CSC input (the sweep jumps over the block of zeros)
    cdef uint64_t rng_state
    cdef intp_t start, end

    cdef void node_reset(self, intp_t start, intp_t end,
                         float64_t* weighted_n_node_samples) noexcept nogil
    cdef float64_t node_impurity(self) noexcept nogil
    cdef bint _score_feature(self, intp_t feature, BestSplit* best) noexcept nogil
    cdef intp_t _left_by_threshold_1d(self, float64_t threshold) noexcept nogil
    cdef void _gather_node_targets(self) noexcept nogil
    cdef void _sweep_1d(self, intp_t feature, intp_t jump_from, intp_t jump_to,
                        BestSplit* best) noexcept nogil
    cdef void _sweep_nd(self, intp_t feature, intp_t jump_from, intp_t jump_to,
                        BestSplit* best) noexcept nogil
    cdef void node_split(self, float64_t impurity, intp_t n_known_constants,
                         SplitRecord* split) noexcept nogil
    cdef void node_leaf_mean(self, intp_t start, intp_t end) noexcept nogil
