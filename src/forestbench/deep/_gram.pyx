# cython: language_level=3
"""Dense cross products of two weighted node-indicator matrices: the kernel of the embedding's Gram matrix.

The embedding's matrices are 0/1 node indicators with each node column scaled by one weight, so column ``c`` of
``B`` is ``col_value[c]`` on the rows that reach node ``c`` and 0 elsewhere. ``add_indicator_cross_products``
adds ``A @ B.T`` to a dense ``out`` for a CSR ``A`` (any values) and such a ``B`` given by its CSC structure and
``col_value``. Row ``i`` of the result is accumulated in ``out[i]`` itself: each stored entry ``(i, c)`` of ``A``
adds ``A[i, c] * col_value[c]`` to ``out[i, j]`` for every row ``j`` of column ``c``. The output row stays in cache
while it is filled and the inner loop reads only the 32-bit row ids of the column, where a general sparse-sparse
product builds a sparse result through a hash or a sort first.

The order of the additions into ``out[i, j]`` is fixed: the columns shared by rows ``i`` and ``j`` in the order
row ``i`` of ``A`` lists them (the embedding lists every row's nodes in decreasing order). For ``A == B``
(``symmetric``), whose rows all list their columns in one monotone order, the products for ``(i, j)`` and
``(j, i)`` are the same numbers added in the same order, so only ``j <= i`` is accumulated and the result is
mirrored: bit for bit what the full product gives, for half the work.
"""
import numpy as np

from forestbench.tree._utils cimport intp_t, int32_t, float64_t


def add_indicator_cross_products(float64_t[:, ::1] out,
                                 const intp_t[::1] a_indptr, const int32_t[::1] a_indices,
                                 const float64_t[::1] a_data,
                                 const intp_t[::1] b_indptr, const int32_t[::1] b_indices,
                                 const float64_t[::1] col_value, bint symmetric):
    """``out += A @ B.T`` (see the module docstring). ``b_indices`` must be sorted within each column when
    ``symmetric``; the caller checks shapes and index ranges (``_embedding._cross_products``)."""
    cdef intp_t n_rows = out.shape[0], n_cols = out.shape[1], i, j, p, q, q_end, c
    cdef float64_t v
    cdef float64_t* row
    with nogil:
        for i in range(n_rows):
            row = &out[i, 0]
            for p in range(a_indptr[i], a_indptr[i + 1]):
                c = a_indices[p]
                v = a_data[p] * col_value[c]
                q_end = b_indptr[c + 1]
                if symmetric:
                    for q in range(b_indptr[c], q_end):
                        if b_indices[q] > i:
                            break
                        row[b_indices[q]] += v
                else:
                    for q in range(b_indptr[c], q_end):
                        row[b_indices[q]] += v
        if symmetric:
            for i in range(n_rows):
                for j in range(i + 1, n_cols):
                    out[i, j] = out[j, i]


def select_columns(const intp_t[::1] indptr, const int32_t[::1] indices, const float64_t[::1] data,
                   const intp_t[::1] colmap, const float64_t[::1] scale, bint reverse):
    """The columns ``c`` of a CSR matrix with ``colmap[c] >= 0``, renumbered to ``colmap[c]``: returns the CSR
    arrays ``(indptr, indices, data)`` of the selection in one pass over the stored entries.

    Each row keeps its entries' order, or lists them in reverse with ``reverse``; a kept entry's value is
    ``data[p]``, times ``scale[colmap[c]]`` when ``scale`` is not empty. That is what scipy's column indexing
    ``M[:, kept]`` (then a row reversal and a column scaling) gives, the same numbers in the same order, without
    its intermediate copies."""
    cdef intp_t n_rows = indptr.shape[0] - 1, i, p, k, lo, hi, c2, n_out = 0
    cdef bint scaled = scale.shape[0] > 0
    out_indptr = np.empty(n_rows + 1, dtype=np.intp)
    out_indices = np.empty(indices.shape[0], dtype=np.int32)
    out_data = np.empty(indices.shape[0], dtype=np.float64)
    cdef intp_t[::1] o_ptr = out_indptr
    cdef int32_t[::1] o_ind = out_indices
    cdef float64_t[::1] o_dat = out_data
    with nogil:
        o_ptr[0] = 0
        for i in range(n_rows):
            lo = indptr[i]
            hi = indptr[i + 1]
            for k in range(hi - lo):
                p = hi - 1 - k if reverse else lo + k
                c2 = colmap[indices[p]]
                if c2 >= 0:
                    o_ind[n_out] = <int32_t> c2
                    o_dat[n_out] = data[p] * scale[c2] if scaled else data[p]
                    n_out += 1
            o_ptr[i + 1] = n_out
    return out_indptr, out_indices[:n_out].copy(), out_data[:n_out].copy()


def dense_columns(const intp_t[::1] indptr, const int32_t[::1] indices, const float64_t[::1] data,
                  const intp_t[::1] colmap, intp_t n_out_cols):
    """The columns ``c`` of a CSR matrix with ``colmap[c] >= 0`` as a dense C-order array, column ``c`` at
    ``colmap[c]``: scipy's ``M[:, kept].toarray()`` (entries added into zeros in their stored order)."""
    cdef intp_t n_rows = indptr.shape[0] - 1, i, p, c2
    out = np.zeros((n_rows, n_out_cols), dtype=np.float64)
    cdef float64_t[:, ::1] o = out
    with nogil:
        for i in range(n_rows):
            for p in range(indptr[i], indptr[i + 1]):
                c2 = colmap[indices[p]]
                if c2 >= 0:
                    o[i, c2] += data[p]
    return out
