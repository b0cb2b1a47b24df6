from forestbench.tree._utils cimport intp_t, float32_t, float64_t, int32_t


cdef class Partitioner:
    """Access to one input feature over the samples of a node.

    Owns no sample array: ``samples`` and ``Xf`` (feature values aligned with
    ``samples``) belong to the splitter. Every permutation of ``samples``
    happens here, so the sparse partitioner can keep its mapping array valid.
    """
    cdef object _keep
    cdef intp_t* samples
    cdef float32_t* Xf
    cdef intp_t n_samples
    cdef intp_t start, end

    cdef int set_buffers(self, intp_t* samples, float32_t* Xf, intp_t n_samples) except -1
    cdef void init_node(self, intp_t start, intp_t end) noexcept nogil
    cdef void sort_feature(self, intp_t f) noexcept nogil
    cdef void find_min_max(self, intp_t f, float32_t* min_value, float32_t* max_value) noexcept nogil
    cdef void next_p(self, intp_t* p_prev, intp_t* p) noexcept nogil
    cdef intp_t partition_samples(self, float64_t threshold) noexcept nogil
    cdef void partition_final(self, intp_t f, float64_t threshold) noexcept nogil


cdef class DensePartitioner(Partitioner):
    cdef const float32_t* X
    cdef intp_t row_stride      # in elements: 1 for Fortran order
    cdef intp_t col_stride      # in elements: 1 for C order


cdef class SparsePartitioner(Partitioner):
    cdef const float32_t* data   # CSC
    cdef const int32_t* indices
    cdef const int32_t* indptr
    cdef intp_t n_rows
    cdef intp_t* mapping         # mapping[samples[p]] == p; -1 for rows not in the sample set
    cdef intp_t* sorted_samples  # sorted copy of samples[start:end], built on demand
    cdef bint is_samples_sorted
    cdef intp_t end_negative     # Xf[start:end_negative] < 0
    cdef intp_t start_positive   # Xf[start_positive:end] > 0, zeros in between

    cdef object _log_nnz
    cdef const float64_t* log_nnz  # ln(nnz of each column), for the extraction switch
    cdef float64_t log_n           # ln(node size)
    cdef public float64_t extract_switch   # 0.1 (Eq. 8.6); tests force one path
    cdef object _keep_rows
    cdef const int32_t* row_features     # CSR pattern of X: the features of row i are
    cdef const intp_t* row_indptr        # row_features[row_indptr[i]:row_indptr[i + 1]]
    cdef intp_t* node_features           # == node_stamp: the feature has an entry in the current node
    cdef intp_t node_stamp

    cdef void extract_nnz(self, intp_t f) noexcept nogil
