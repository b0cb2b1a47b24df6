"""Compiled boosting loop of the multi-output gradient boosting family (thesis ch. 6).

One call of :func:`boost` runs every iteration of gradient boosting without the GIL and without per-iteration
Python objects: negative gradient, (projected) split targets, one tree grown by the forestbench tree kernel, per-output
line search, update of the training scores and the append of the tree to flat model buffers. Trees come from the
kernel's presorted best-first builder (``tree/_presort.pyx``, default: X is sorted once per fit) or from its
``TreeBuilder`` (``presort=False``; the same ``Splitter`` / ``TreeBuilder`` objects are reused, their target buffers
rewritten in place and the node store reset); both split by the rules of ``tree/_utils.pxd``.

Algorithms (``algo``):

* ``MORT`` (gbmort): one multi-output tree on the d-dimensional negative gradient; leaves hold d-vectors.
* ``RPO`` (gbrt-rpo): one single-output tree on ``z = phi r`` with a fresh 1 x d projection ``phi`` per iteration;
  the scalar tree is combined with a d-vector of step lengths rho.
* ``RELABEL`` (gbrt-relabel-rpo): a tree grown on ``q`` projected gradients whose leaves hold the means of the
  *unprojected* gradient (the kernel's leaf targets, computed in the same pass that creates the leaf).
* ``ST`` (st-gbrt / br-gbrt): one single-output model per output, trees fitted round-robin over the outputs; one
  stage is one round of d trees.

Model layout (returned as numpy arrays): the nodes of all trees concatenated (``node_ptr`` gives each tree's range,
child ids are local to a tree), the leaf values concatenated (``leaf_ptr`` in leaves; ``width`` values per leaf),
``coef`` (rpo: ``learning_rate * rho`` per tree and output) and ``output`` (st: the output a tree predicts).
Leaf values already include ``learning_rate * rho`` except for rpo, where they are multiplied by ``coef`` at
prediction time (one scalar per leaf plus one d-vector per tree).

Losses, gradients and line searches live in :mod:`forestbench.boosting._losses` (with the Python helpers
``line_search``, ``logistic_pass`` and ``logistic_pass_level`` that the tests call): square loss in closed
form, absolute loss exactly (weighted median), logistic loss by a bracketed root search on the slope along the step
(Halley steps for a tree step, the default; Newton steps for a general direction; Brent's method with ``brent=True``),
bounded so that no score moves by more than ``_losses.LOGISTIC_STEP_BOUND`` in one step. ``boost`` returns, per
stage, how many line searches the bound decided (``bounded_steps``).
"""
from libc.stdlib cimport malloc, free
from libc.string cimport memcpy, memset
from libc.math cimport log, sqrt, cos
from libc.stdint cimport uint64_t
from posix.time cimport clock_gettime, timespec, CLOCK_MONOTONIC, CLOCK_PROCESS_CPUTIME_ID
from scipy.linalg.cython_blas cimport dgemm

import numpy as np

from forestbench.tree._utils cimport (intp_t, float32_t, float64_t, rand_int, rand_uniform, seed_state, TREE_LEAF,
                                      grow_buffer)
from forestbench.tree._tree cimport TreeBuilder, Node
from forestbench.tree._splitter cimport Splitter
from forestbench.tree._criterion cimport DenseCriterion, LeafTargets
from forestbench.tree._partitioner cimport DensePartitioner
from forestbench.tree._presort cimport PresortBuilder
from forestbench.boosting._losses cimport (LOGISTIC, WPair, column_loss, column_gradient,
                                           line_search_step, line_search_logistic_leaves,
                                           logistic_state_gradient, logistic_state_reset,
                                           logistic_state_update, project_gradient)

from forestbench.boosting._losses import LOSSES

cdef enum:
    MORT = 0
    RPO = 1
    RELABEL = 2
    ST = 3

cdef enum:
    P_SUBSAMPLE = 0
    P_GAUSSIAN = 1
    P_RADEMACHER = 2
    P_ACHLIOPTAS = 3
    P_SPARSE = 4

ALGORITHMS = {"mort": MORT, "rpo": RPO, "relabel": RELABEL, "st": ST}
PROJECTIONS = {"subsample": P_SUBSAMPLE, "gaussian": P_GAUSSIAN, "rademacher": P_RADEMACHER,
               "achlioptas": P_ACHLIOPTAS, "sparse": P_SPARSE}

cdef intp_t ESTATE_REFRESH = 50


cdef inline float64_t _now() noexcept nogil:
    cdef timespec ts
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return ts.tv_sec + 1e-9 * ts.tv_nsec


cdef inline float64_t _cpu_now() noexcept nogil:
    # CPU seconds of the process: what a stage costs, whatever else runs on the machine
    cdef timespec ts
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts)
    return ts.tv_sec + 1e-9 * ts.tv_nsec


# --------------------------------------------------------------------------------------------------------------
# projections: q x d dense rows, drawn with the loop's own generator

cdef inline float64_t _normal(uint64_t* state) noexcept nogil:
    cdef float64_t u1 = 1.0 - rand_uniform(0.0, 1.0, state), u2 = rand_uniform(0.0, 1.0, state)
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2)


cdef void _draw_projection(int kind, intp_t q, intp_t d, float64_t* phi, intp_t* perm,
                           uint64_t* state) noexcept nogil:
    """Fill phi (q x d, row-major); rows that come out all zero are redrawn."""
    cdef intp_t k, j, t, tmp
    cdef float64_t s, v, prob
    cdef bint nonzero
    memset(phi, 0, q * d * sizeof(float64_t))
    if kind == P_SUBSAMPLE:
        # rows of the identity scaled by sqrt(d / q); without replacement while q <= d
        v = sqrt(<float64_t> d / q)
        if q <= d:
            for j in range(d):
                perm[j] = j
            for k in range(q):
                t = rand_int(k, d, state)
                tmp = perm[k]
                perm[k] = perm[t]
                perm[t] = tmp
                phi[k * d + perm[k]] = v
        else:
            for k in range(q):
                phi[k * d + rand_int(0, d, state)] = v
        return
    if kind == P_GAUSSIAN:
        s = 1.0 / sqrt(<float64_t> q)
        for k in range(q * d):
            phi[k] = s * _normal(state)
        return
    if kind == P_RADEMACHER:
        prob = 1.0
    elif kind == P_ACHLIOPTAS:
        prob = 1.0 / 3.0
    else:
        prob = 1.0 / sqrt(<float64_t> d)
    v = sqrt(1.0 / prob / q)
    for k in range(q):
        nonzero = False
        while not nonzero:
            for j in range(d):
                s = rand_uniform(0.0, 1.0, state)
                if s < prob:
                    phi[k * d + j] = v if s < 0.5 * prob else -v
                    nonzero = True
                else:
                    phi[k * d + j] = 0.0


# --------------------------------------------------------------------------------------------------------------
# model buffers

cdef struct Model:
    intp_t n_trees
    intp_t n_nodes
    intp_t n_leaves
    intp_t width              # values per leaf
    intp_t d
    intp_t* left
    intp_t* right
    intp_t* feature
    float64_t* threshold
    intp_t* leaf_index
    intp_t cap_left
    intp_t cap_right
    intp_t cap_feature
    intp_t cap_threshold
    intp_t cap_leaf_index
    float64_t* values
    intp_t values_cap
    intp_t* node_ptr
    intp_t* leaf_ptr
    intp_t cap_node_ptr
    intp_t cap_leaf_ptr
    float64_t* coef
    intp_t coef_cap
    intp_t* output
    intp_t output_cap


cdef int _append_tree(Model* M, Node* nodes, intp_t nn, const float64_t* leaf_values, intp_t nl,
                      intp_t output) except -1 nogil:
    """Copy a grown tree into the model buffers (values unscaled) and return 0."""
    cdef intp_t i, base = M.n_nodes
    cdef Node* nd
    grow_buffer(<void**> &M.left, &M.cap_left, base + nn, sizeof(intp_t))
    grow_buffer(<void**> &M.right, &M.cap_right, base + nn, sizeof(intp_t))
    grow_buffer(<void**> &M.feature, &M.cap_feature, base + nn, sizeof(intp_t))
    grow_buffer(<void**> &M.leaf_index, &M.cap_leaf_index, base + nn, sizeof(intp_t))
    grow_buffer(<void**> &M.threshold, &M.cap_threshold, base + nn, sizeof(float64_t))
    for i in range(nn):
        nd = &nodes[i]
        M.left[base + i] = nd.left_child
        M.right[base + i] = nd.right_child
        M.feature[base + i] = nd.feature
        M.threshold[base + i] = nd.threshold
        M.leaf_index[base + i] = nd.leaf_index
    grow_buffer(<void**> &M.values, &M.values_cap, (M.n_leaves + nl) * M.width, sizeof(float64_t))
    memcpy(M.values + M.n_leaves * M.width, leaf_values, nl * M.width * sizeof(float64_t))
    grow_buffer(<void**> &M.node_ptr, &M.cap_node_ptr, M.n_trees + 2, sizeof(intp_t))
    grow_buffer(<void**> &M.leaf_ptr, &M.cap_leaf_ptr, M.n_trees + 2, sizeof(intp_t))
    grow_buffer(<void**> &M.output, &M.output_cap, M.n_trees + 2, sizeof(intp_t))
    M.node_ptr[M.n_trees] = base
    M.leaf_ptr[M.n_trees] = M.n_leaves
    M.output[M.n_trees] = output
    M.n_nodes += nn
    M.n_leaves += nl
    M.node_ptr[M.n_trees + 1] = M.n_nodes
    M.leaf_ptr[M.n_trees + 1] = M.n_leaves
    M.n_trees += 1
    return 0


cdef void _free_model(Model* M) noexcept nogil:
    free(M.left)
    free(M.right)
    free(M.feature)
    free(M.threshold)
    free(M.leaf_index)
    free(M.values)
    free(M.node_ptr)
    free(M.leaf_ptr)
    free(M.coef)
    free(M.output)


cdef void _apply_builder(TreeBuilder builder, const float32_t* X, intp_t rs, intp_t cs, intp_t n,
                         intp_t* leaf) noexcept nogil:
    """Leaf row (in the builder's leaf store) of every training sample."""
    cdef intp_t i, node
    cdef Node* nodes = builder.nodes
    for i in range(n):
        node = 0
        while nodes[node].left_child != TREE_LEAF:
            if X[i * rs + nodes[node].feature * cs] <= nodes[node].threshold:
                node = nodes[node].left_child
            else:
                node = nodes[node].right_child
        leaf[i] = nodes[node].leaf_index


# --------------------------------------------------------------------------------------------------------------
# the loop

def _shape_error(name, arr, expected):
    return ValueError(f"boost: {name} has shape {getattr(arr, 'shape', None)}, expected {expected}")


def _check_boost_inputs(X, Y, F0, algo_name, loss_name, n_iter, max_leaf_nodes, max_features, projection, q,
                        X_val, Y_val):
    """Refuse, before any compiled loop runs, inputs whose shapes or types would make it read out of bounds."""
    if algo_name not in ALGORITHMS:
        raise ValueError(f"boost: unknown algorithm {algo_name!r} (one of {sorted(ALGORITHMS)})")
    if loss_name not in LOSSES:
        raise ValueError(f"boost: unknown loss {loss_name!r} (one of {sorted(LOSSES)})")
    if algo_name in ("rpo", "relabel") and projection not in PROJECTIONS:
        raise ValueError(f"boost: unknown projection {projection!r} (one of {sorted(PROJECTIONS)})")
    if not (isinstance(X, np.ndarray) and X.ndim == 2 and X.dtype == np.float32):
        raise ValueError(f"boost: X must be a 2-D float32 array, got {type(X).__name__} "
                         f"{getattr(X, 'dtype', '')} {getattr(X, 'shape', '')}")
    n, p = X.shape
    if n < 1 or p < 1:
        raise _shape_error("X", X, "(n >= 1, p >= 1)")
    if not (isinstance(Y, np.ndarray) and Y.ndim == 2 and Y.shape[0] == n and Y.shape[1] >= 1):
        raise _shape_error("Y", Y, f"({n}, d >= 1) like X's {n} rows")
    d = Y.shape[1]
    if np.ndim(F0) != 1 or np.shape(F0)[0] != d:
        raise _shape_error("F0", F0, f"({d},), one constant per output")
    if n_iter < 1 or max_leaf_nodes < 2:
        raise ValueError(f"boost: n_iter={n_iter} must be >= 1 and max_leaf_nodes={max_leaf_nodes} >= 2")
    if not 1 <= max_features <= p:
        raise ValueError(f"boost: max_features={max_features} must lie in [1, {p}]")
    if algo_name == "relabel" and q < 1:
        raise ValueError(f"boost: q={q} projected outputs must be >= 1")
    if (X_val is None) != (Y_val is None):
        raise ValueError("boost: give both X_val and Y_val or neither")
    if X_val is not None:
        if not (isinstance(X_val, np.ndarray) and X_val.ndim == 2 and X_val.dtype == np.float32
                and X_val.shape[1] == p):
            raise _shape_error("X_val", X_val, f"(m, {p}) float32, the columns of X")
        if not (isinstance(Y_val, np.ndarray) and Y_val.ndim == 2 and Y_val.shape == (X_val.shape[0], d)):
            raise _shape_error("Y_val", Y_val, f"({X_val.shape[0]}, {d}): X_val's rows and Y's outputs")


cdef enum:
    PROJECT_BLOCK = 8             # projected columns summed together (the gradient is read once per block)
    TILE = 64                     # side of the tiles of the output-major -> row-major copies

#: projected columns a block of the loop sums; Gaussian and Rademacher projections onto more go by the BLAS
PROJECTED_COLUMNS_PER_BLOCK = PROJECT_BLOCK


cdef struct Loop:
    # what one fit reads and writes while it runs without the GIL (set up by boost())
    int algo
    int loss
    int pkind                     # projection family (rpo, relabel)
    bint estate                   # logistic loss with the kept E = exp(2 y f) (not with Brent's search)
    bint brent
    bint presort
    intp_t n, d
    intp_t q                      # projected outputs (rpo: 1)
    intp_t qz                     # split targets per sample
    intp_t width                  # values per leaf
    intp_t trees_per_stage
    float64_t lr
    const float32_t* X            # training inputs, element (i, f) at X[i * rs + f * cs]
    intp_t rs, cs
    float64_t* Yt                 # output-major (d, n): targets, scores, gradient, kept exp(2 y f)
    float64_t* Ft
    float64_t* Rt
    float64_t* Et
    float64_t* Z                  # split targets (n, qz), row-major
    float64_t* L                  # leaf targets (n, width): Z, or the unprojected gradient (relabel)
    intp_t* leaf                  # leaf of each training sample in the last tree
    float64_t* gcol               # one output's tree prediction per sample
    float64_t* phi                # projection (q, d)
    float64_t* zacc               # PROJECT_BLOCK projected columns being summed, each contiguous over the samples
    intp_t* perm
    float64_t* rho
    intp_t n_bounded              # line searches of the current stage that the logistic step bound decided
    WPair* work
    float64_t* tab
    uint64_t pstate               # projection generator
    uint64_t tstate               # feature draws of the presorted builder
    # validation set: scores updated every stage, per-output squared error recorded
    intp_t nv, vrs, vcs
    const float32_t* Xv
    const float64_t* Yv           # (nv, d) row-major, as Fv
    float64_t* Fv
    # the CPU the trees' growth has taken so far (counted only with time_trees: two clock reads a tree)
    bint time_trees
    float64_t tree_cpu


cdef intp_t _stage_targets(Loop* L, intp_t t) noexcept nogil:
    """Negative gradient and the split / leaf targets of the t-th tree of a stage; returns the output the tree
    predicts (st) or -1 (a tree for every output)."""
    cdef intp_t n = L.n, d = L.d, q = L.q, j, k, out
    cdef float64_t v
    cdef float64_t* Yt = L.Yt
    cdef float64_t* Ft = L.Ft
    cdef float64_t* Rt = L.Rt
    cdef float64_t* Et = L.Et
    cdef float64_t* Zb = L.Z
    cdef float64_t* Lb = L.L
    if L.algo == ST:
        out = t
        if L.estate:
            logistic_state_gradient(Yt + out * n, Et + out * n, Rt + out * n, n)
        else:
            column_gradient(L.loss, Yt + out * n, Ft + out * n, Rt + out * n, n)
        memcpy(Zb, Rt + out * n, n * sizeof(float64_t))
        return out
    if L.algo == RPO and L.estate:
        # no gradient is stored: the projected one is summed straight from E = exp(2 y f),
        # and the line searches read E too (a sub-sampling projection touches one column)
        _draw_projection(L.pkind, q, d, L.phi, L.perm, &L.pstate)
        memset(Zb, 0, n * q * sizeof(float64_t))
        for k in range(q):
            for j in range(d):
                v = L.phi[k * d + j]
                if v != 0.0:
                    project_gradient(Yt + j * n, Et + j * n, v, Zb + k, q, n)
        return -1
    for j in range(d):
        if L.estate:
            logistic_state_gradient(Yt + j * n, Et + j * n, Rt + j * n, n)
        else:
            column_gradient(L.loss, Yt + j * n, Ft + j * n, Rt + j * n, n)
    if L.algo == MORT:
        _to_row_major(Rt, n, d, Zb)
        return -1
    _draw_projection(L.pkind, q, d, L.phi, L.perm, &L.pstate)
    if (L.pkind == P_GAUSSIAN or L.pkind == P_RADEMACHER) and q > PROJECT_BLOCK:
        # up to one block the loop reads the gradient once, as the product does, and costs less to start
        _project_dense(L.phi, Rt, n, d, q, L.zacc, Zb)
    else:
        _project(L.phi, Rt, n, d, q, L.zacc, Zb)
    if L.algo == RELABEL:
        _to_row_major(Rt, n, d, Lb)
    return -1


cdef void _project_dense(const float64_t* phi, const float64_t* Rt, intp_t n, intp_t d, intp_t q, float64_t* acc,
                         float64_t* Z) noexcept nogil:
    """Z (n, q, row-major) = the gradient Rt (d, n, output-major) projected by a projection phi (q, d) without zero
    entries (Gaussian, Rademacher) onto more than PROJECT_BLOCK columns, as one matrix product of the BLAS that
    SciPy links (dgemm: a blocked kernel, several times faster than ``_project``'s loop from q of a few tens on;
    up to one block the loop reads the gradient once too, and at q = 1 it is about 7 ms faster a stage on the
    delicious-sized gradient). Read as column-major arrays, phi is
    d x q, Rt is n x d and Z is q x n, so Z = phi^T Rt^T: dgemm with both operands transposed. The BLAS sums each
    entry in an order of its own, so Z agrees with ``_project``'s to rounding, not to the bit; with one BLAS thread
    (the workflow's jobs) it is the same from run to run on one machine. Sizes past the BLAS' 32-bit integers go
    through ``_project`` (acc: its buffer)."""
    cdef int m_, n_, k_
    cdef float64_t one = 1.0, zero = 0.0
    cdef char trans = b'T'
    if q > 2147483647 or n > 2147483647 or d > 2147483647:
        _project(phi, Rt, n, d, q, acc, Z)
        return
    m_ = <int> q
    n_ = <int> n
    k_ = <int> d
    dgemm(&trans, &trans, &m_, &n_, &k_, &one, <float64_t*> phi, &k_, <float64_t*> Rt, &n_, &zero, Z, &m_)


cdef void _project(const float64_t* phi, const float64_t* Rt, intp_t n, intp_t d, intp_t q, float64_t* acc,
                   float64_t* Z) noexcept nogil:
    """Z (n, q, row-major) = the gradient Rt (d, n, output-major) projected by phi (q, d). PROJECT_BLOCK projected
    columns are summed at a time, each in a contiguous buffer, so that the gradient (n x d doubles, beyond any
    cache on the multi-label sets) is read once per block rather than once per projected column, and no sum writes
    with a stride of q doubles; then they are scattered into Z. Every entry is the sum a column-by-column loop
    forms, in the same order: 0, then phi[k, j] * r[j, i] added for j = 0, 1, ... wherever phi[k, j] is not 0."""
    cdef intp_t kb, nb, b, j, i
    cdef float64_t v
    cdef const float64_t* r
    cdef float64_t* a
    kb = 0
    while kb < q:
        nb = min(<intp_t> PROJECT_BLOCK, q - kb)
        memset(acc, 0, nb * n * sizeof(float64_t))
        for j in range(d):
            r = Rt + j * n
            for b in range(nb):
                v = phi[(kb + b) * d + j]
                if v != 0.0:
                    a = acc + b * n
                    for i in range(n):
                        a[i] += v * r[i]
        for i in range(n):
            for b in range(nb):
                Z[i * q + kb + b] = acc[b * n + i]
        kb += PROJECT_BLOCK


cdef void _to_row_major(const float64_t* Rt, intp_t n, intp_t d, float64_t* out) noexcept nogil:
    """out (n, d, row-major) = Rt (d, n): copied in tiles of TILE x TILE, so that both sides are read and written
    a cache line at a time."""
    cdef intp_t i0 = 0, j0, i, j, i1, j1
    while i0 < n:
        i1 = min(i0 + TILE, n)
        j0 = 0
        while j0 < d:
            j1 = min(j0 + TILE, d)
            for i in range(i0, i1):
                for j in range(j0, j1):
                    out[i * d + j] = Rt[j * n + i]
            j0 += TILE
        i0 += TILE


cdef intp_t _grow_tree(Loop* L, Model* M, PresortBuilder pbuilder, TreeBuilder builder,
                       intp_t out) except -1 nogil:
    """Grow one tree on the split targets (the builder's stores are reset, its buffers kept), append it to the
    model and set every training sample's leaf; returns the number of leaves."""
    if L.presort:
        pbuilder.build(L.Z, L.qz, L.L, L.width, L.leaf, &L.tstate)
        _append_tree(M, pbuilder.nodes, pbuilder.node_count, pbuilder.leaf_values, pbuilder.n_leaves, out)
        return pbuilder.n_leaves
    builder.node_count = 0
    builder.n_leaves = 0
    builder.depth_seen = 0
    builder._build_best_first()
    _apply_builder(builder, L.X, L.rs, L.cs, L.n, L.leaf)
    _append_tree(M, builder.nodes, builder.node_count, builder.leaf_dense, builder.n_leaves, out)
    return builder.n_leaves


cdef int _step_and_update(Loop* L, Model* M, intp_t out, intp_t nl) except -1 nogil:
    """Line search per output on the last tree, its scaling by the learning rate and the update of the training
    scores (and of the kept exp(2 y f))."""
    cdef intp_t n = L.n, d = L.d, width = L.width, i, j, k
    cdef float64_t lr = L.lr
    cdef float64_t* Yt = L.Yt
    cdef float64_t* Ft = L.Ft
    cdef float64_t* Rt = L.Rt
    cdef float64_t* Et = L.Et
    cdef intp_t* leaf = L.leaf
    cdef float64_t* gcol = L.gcol
    cdef float64_t* rho = L.rho
    cdef float64_t* V = M.values + M.leaf_ptr[M.n_trees - 1] * width
    cdef bint bounded = False
    if L.algo == ST:
        for i in range(n):
            gcol[i] = V[leaf[i]]
        if L.estate:
            rho[0] = lr * line_search_logistic_leaves(Yt + out * n, leaf, V, 1, nl, n, Et + out * n, L.tab,
                                                      &bounded)
        else:
            rho[0] = lr * line_search_step(L.loss, Yt + out * n, Ft + out * n, Rt + out * n, gcol, n, L.work,
                                           L.brent, &bounded)
        L.n_bounded += bounded
        for k in range(nl):
            V[k] *= rho[0]
        for i in range(n):
            Ft[out * n + i] += V[leaf[i]]
        if L.estate:
            logistic_state_update(Yt + out * n, Et + out * n, leaf, V, 1, 1.0, nl, n, L.tab)
    elif L.algo == RPO:
        for i in range(n):
            gcol[i] = V[leaf[i]]
        grow_buffer(<void**> &M.coef, &M.coef_cap, M.n_trees * d, sizeof(float64_t))
        for j in range(d):
            if L.estate:
                rho[j] = lr * line_search_logistic_leaves(Yt + j * n, leaf, V, 1, nl, n, Et + j * n, L.tab,
                                                          &bounded)
            else:
                rho[j] = lr * line_search_step(L.loss, Yt + j * n, Ft + j * n, Rt + j * n, gcol, n, L.work,
                                               L.brent, &bounded)
            L.n_bounded += bounded
            M.coef[(M.n_trees - 1) * d + j] = rho[j]
            if rho[j] != 0.0:
                for i in range(n):
                    Ft[j * n + i] += rho[j] * gcol[i]
                if L.estate:
                    logistic_state_update(Yt + j * n, Et + j * n, leaf, V, 1, rho[j], nl, n, L.tab)
    else:
        for j in range(d):
            for i in range(n):
                gcol[i] = V[leaf[i] * d + j]
            if L.estate:
                rho[j] = lr * line_search_logistic_leaves(Yt + j * n, leaf, V + j, d, nl, n, Et + j * n, L.tab,
                                                          &bounded)
            else:
                rho[j] = lr * line_search_step(L.loss, Yt + j * n, Ft + j * n, Rt + j * n, gcol, n, L.work,
                                               L.brent, &bounded)
            L.n_bounded += bounded
            for k in range(nl):
                V[k * d + j] *= rho[j]
            for i in range(n):
                Ft[j * n + i] += V[leaf[i] * d + j]
            if L.estate:
                logistic_state_update(Yt + j * n, Et + j * n, leaf, V + j, d, 1.0, nl, n, L.tab)
    return 0


cdef void _validate_stage(Loop* L, Model* M, float64_t* sse) noexcept nogil:
    """Add the last stage's trees to the validation scores and the per-output squared errors to sse (d,)."""
    cdef intp_t d = L.d, width = L.width, nv = L.nv, tt, i, j, node, nbase, row
    cdef float64_t e
    cdef float64_t* V
    cdef float64_t* Fv = L.Fv
    for tt in range(M.n_trees - L.trees_per_stage, M.n_trees):
        nbase = M.node_ptr[tt]
        V = M.values + M.leaf_ptr[tt] * width
        for i in range(nv):
            node = 0
            while M.left[nbase + node] != TREE_LEAF:
                if L.Xv[i * L.vrs + M.feature[nbase + node] * L.vcs] <= M.threshold[nbase + node]:
                    node = M.left[nbase + node]
                else:
                    node = M.right[nbase + node]
            row = M.leaf_index[nbase + node]
            if L.algo == ST:
                Fv[i * d + M.output[tt]] += V[row]
            elif L.algo == RPO:
                for j in range(d):
                    Fv[i * d + j] += M.coef[tt * d + j] * V[row]
            else:
                for j in range(d):
                    Fv[i * d + j] += V[row * d + j]
    for i in range(nv):
        for j in range(d):
            e = L.Yv[i * d + j] - Fv[i * d + j]
            sse[j] += e * e


cdef float64_t _train_loss(Loop* L) noexcept nogil:
    cdef float64_t s = 0.0
    cdef intp_t j
    for j in range(L.d):
        s += column_loss(L.loss, L.Yt + j * L.n, L.Ft + j * L.n, L.n)
    return s


cdef int _run_stage(Loop* L, Model* M, PresortBuilder pbuilder, TreeBuilder builder,
                    intp_t stage) except -1 nogil:
    """One boosting stage: one tree (st: one per output, round-robin), each followed by its line search and the
    update of the training scores."""
    cdef intp_t j, t, out, nl
    cdef float64_t t0 = 0.0
    if L.estate and stage % ESTATE_REFRESH == 0:
        # the kept exp(2 y f) is recomputed exactly every ESTATE_REFRESH stages so that rounding cannot drift
        for j in range(L.d):
            logistic_state_reset(L.Yt + j * L.n, L.Ft + j * L.n, L.Et + j * L.n, L.n)
    for t in range(L.trees_per_stage):
        out = _stage_targets(L, t)
        if L.time_trees:
            t0 = _cpu_now()
        nl = _grow_tree(L, M, pbuilder, builder, out)
        if L.time_trees:
            L.tree_cpu += _cpu_now() - t0
        _step_and_update(L, M, out, nl)
    return 0


cdef int _alloc_scratch(Loop* L, intp_t max_leaf_nodes) except -1:
    """The per-fit scratch buffers of the loop (freed by _free_scratch, also after a failure)."""
    L.leaf = <intp_t*> malloc(L.n * sizeof(intp_t))
    L.gcol = <float64_t*> malloc(L.n * sizeof(float64_t))
    L.phi = <float64_t*> malloc(max(L.q, 1) * L.d * sizeof(float64_t))
    L.zacc = <float64_t*> malloc(max(min(L.q, PROJECT_BLOCK) * L.n, 1) * sizeof(float64_t))
    L.perm = <intp_t*> malloc(L.d * sizeof(intp_t))
    L.rho = <float64_t*> malloc(L.d * sizeof(float64_t))
    L.work = <WPair*> malloc((L.n + 1) * sizeof(WPair))
    L.tab = <float64_t*> malloc((3 * max_leaf_nodes + 3) * sizeof(float64_t))
    if (L.leaf == NULL or L.gcol == NULL or L.phi == NULL or L.zacc == NULL or L.perm == NULL or L.rho == NULL
            or L.work == NULL or L.tab == NULL):
        raise MemoryError()
    return 0


cdef void _free_scratch(Loop* L) noexcept nogil:
    free(L.leaf)
    free(L.gcol)
    free(L.phi)
    free(L.zacc)
    free(L.perm)
    free(L.rho)
    free(L.work)
    free(L.tab)


def boost(X, Y, F0, str algo_name, str loss_name, intp_t n_iter, float64_t learning_rate,
          intp_t max_leaf_nodes, intp_t max_features, str projection, intp_t q,
          unsigned long long tree_seed, unsigned long long proj_seed, bint track_loss=False,
          bint presort=True, X_val=None, Y_val=None, bint brent=False, bint count_constant_features=False,
          bint time_trees=False):
    """Run gradient boosting. X: float32 (n, p) C or Fortran; Y: float64 (n, d), already coded for the loss
    (logistic: -1/+1); F0: float64 (d,) initial constants. Returns a dict of model arrays and stage records.

    With X_val (float32) and Y_val (float64, coded as Y), the validation scores are updated in the loop and the
    per-output sum of squared errors of the scores after each stage is returned as ``val_sse`` (n_stages, d).
    ``count_constant_features``: the trees' rule for features constant in a node (scikit-learn's when true; see
    ``forestbench.tree._presort.PresortBuilder``).
    ``time_trees``: the process' CPU spent growing trees (the split search, the partitions and the leaf values the
    builder computes) is read around every tree and returned as ``stage_tree_cpu_seconds``, cumulative after each
    stage like ``stage_cpu_seconds`` (zeros without it); the rest of a stage is its per-output work (gradient,
    projection, line search, score update).
    """
    # the stage times count from here: the one-off work (copies, the sort of every input column) is included
    cdef float64_t t_start = _now()
    cdef float64_t cpu_start = _cpu_now()
    _check_boost_inputs(X, Y, F0, algo_name, loss_name, n_iter, max_leaf_nodes, max_features, projection, q,
                        X_val, Y_val)
    cdef Loop L
    memset(&L, 0, sizeof(Loop))
    L.algo = ALGORITHMS[algo_name]
    L.loss = LOSSES[loss_name]
    L.pkind = PROJECTIONS[projection] if L.algo in (RPO, RELABEL) else 0
    L.brent = brent
    L.presort = presort
    L.lr = learning_rate
    L.time_trees = time_trees
    # logistic loss: E = exp(2 y f) is kept and updated multiplicatively (one exp per leaf value)
    L.estate = L.loss == LOGISTIC and not brent
    cdef intp_t n = X.shape[0], p = X.shape[1], d = Y.shape[1], stage
    L.n = n
    L.d = d
    L.trees_per_stage = d if L.algo == ST else 1
    L.qz = 1 if L.algo in (ST, RPO) else (d if L.algo == MORT else q)
    L.width = d if L.algo in (MORT, RELABEL) else 1
    L.q = 1 if L.algo == RPO else q
    # output-major copies: column j of Y / F / R is contiguous over the samples
    Yt_arr = np.ascontiguousarray(np.asarray(Y, dtype=np.float64).T)
    Ft_arr = np.empty((d, n), dtype=np.float64)
    Ft_arr[:] = np.asarray(F0, dtype=np.float64)[:, None]
    # gbrt-rpo with the kept exp(2 y f) stores no gradient column (its projection is summed straight from it)
    Rt_arr = np.zeros((1 if L.algo == RPO and L.estate else d, n), dtype=np.float64)
    Z_arr = np.zeros((n, L.qz), dtype=np.float64)                 # split targets, row-major (kernel layout)
    L_arr = np.zeros((n, d), dtype=np.float64) if L.algo == RELABEL else Z_arr
    Et_arr = np.empty((d if L.estate else 0, n), dtype=np.float64)
    cdef float64_t[:, ::1] Ytv = Yt_arr, Ftv = Ft_arr, Rtv = Rt_arr, Zv = Z_arr, Lv = L_arr, Etv = Et_arr
    L.Yt = &Ytv[0, 0]
    L.Ft = &Ftv[0, 0]
    L.Rt = &Rtv[0, 0]
    L.Z = &Zv[0, 0]
    L.L = &Lv[0, 0]
    L.Et = &Etv[0, 0] if L.estate and n * d > 0 else NULL
    cdef const float32_t[:, :] Xv = X
    L.X = &Xv[0, 0]
    L.rs = X.strides[0] // 4
    L.cs = X.strides[1] // 4

    criterion = DenseCriterion(L.qz, Z_arr)
    leaf_targets = LeafTargets(L.width, L_arr)
    partitioner = DensePartitioner(X)
    splitter = Splitter(criterion, partitioner, leaf_targets, np.arange(n, dtype=np.intp), None,
                        p, max_features, 1, 0.0, False, tree_seed, count_constant_features)
    cdef TreeBuilder builder = TreeBuilder(splitter, L.width, False, n + 1, 2, 1, 0.0, 0.0, max_leaf_nodes, 0.0)
    cdef PresortBuilder pbuilder = None
    if presort:
        pbuilder = PresortBuilder(X, max_leaf_nodes, max_features, count_constant_features)
    L.tstate = seed_state(tree_seed)
    L.pstate = proj_seed if proj_seed != 0 else 88172645463325252ULL

    L.nv = X_val.shape[0] if X_val is not None else 0
    Fv_arr = np.empty((L.nv, d), dtype=np.float64)
    Fv_arr[:] = np.asarray(F0, dtype=np.float64)[None, :]
    Yv_arr = np.ascontiguousarray(Y_val, dtype=np.float64) if X_val is not None else np.zeros((0, d))
    Xv_arr = np.asarray(X_val, dtype=np.float32) if X_val is not None else np.zeros((0, p), dtype=np.float32)
    val_sse_arr = np.zeros((n_iter if X_val is not None else 0, d), dtype=np.float64)
    cdef float64_t[:, ::1] Fvv = Fv_arr, Yvv = Yv_arr, val_sse = val_sse_arr
    cdef const float32_t[:, :] Xvv = Xv_arr
    L.vrs = Xv_arr.strides[0] // 4
    L.vcs = Xv_arr.strides[1] // 4
    L.Xv = &Xvv[0, 0] if L.nv > 0 else NULL
    L.Fv = &Fvv[0, 0] if L.nv > 0 else NULL
    L.Yv = &Yvv[0, 0] if L.nv > 0 else NULL
    stage_seconds_arr = np.zeros(n_iter, dtype=np.float64)
    stage_cpu_arr = np.zeros(n_iter, dtype=np.float64)
    stage_tree_cpu_arr = np.zeros(n_iter, dtype=np.float64)
    train_loss_arr = np.full(n_iter + 1, np.nan, dtype=np.float64)
    bounded_arr = np.zeros(n_iter, dtype=np.intp)
    cdef float64_t[::1] stage_seconds = stage_seconds_arr, train_loss = train_loss_arr, stage_cpu = stage_cpu_arr
    cdef float64_t[::1] stage_tree_cpu = stage_tree_cpu_arr
    cdef intp_t[::1] bounded_steps = bounded_arr

    cdef Model M
    memset(&M, 0, sizeof(Model))
    M.width = L.width
    M.d = d
    try:
        _alloc_scratch(&L, max_leaf_nodes)
        with nogil:
            if track_loss:
                train_loss[0] = _train_loss(&L)
            for stage in range(n_iter):
                L.n_bounded = 0
                _run_stage(&L, &M, pbuilder, builder, stage)
                bounded_steps[stage] = L.n_bounded
                if L.nv > 0:
                    _validate_stage(&L, &M, &val_sse[stage, 0])
                stage_seconds[stage] = _now() - t_start
                stage_cpu[stage] = _cpu_now() - cpu_start
                stage_tree_cpu[stage] = L.tree_cpu
                if track_loss:
                    train_loss[stage + 1] = _train_loss(&L)
        out_dict = _export(&M, L.algo)
    finally:
        _free_scratch(&L)
        _free_model(&M)
    out_dict["stage_seconds"] = stage_seconds_arr
    out_dict["stage_cpu_seconds"] = stage_cpu_arr
    out_dict["stage_tree_cpu_seconds"] = stage_tree_cpu_arr
    out_dict["train_loss"] = train_loss_arr
    out_dict["bounded_steps"] = bounded_arr
    out_dict["train_scores"] = np.ascontiguousarray(Ft_arr.T)
    out_dict["val_sse"] = val_sse_arr
    return out_dict


cdef dict _export(Model* M, int algo):
    cdef intp_t nn = M.n_nodes, nt = M.n_trees
    out = {}
    for name, size, dtype in (("left", nn, np.intp), ("right", nn, np.intp), ("feature", nn, np.intp),
                              ("leaf_index", nn, np.intp), ("threshold", nn, np.float64),
                              ("node_ptr", nt + 1, np.intp), ("leaf_ptr", nt + 1, np.intp),
                              ("output", nt, np.intp)):
        out[name] = np.zeros(size, dtype=dtype)
    out["values"] = np.zeros(M.n_leaves * M.width, dtype=np.float64)
    out["coef"] = np.zeros((nt if algo == RPO else 0, M.d), dtype=np.float64)
    cdef intp_t[::1] a
    cdef float64_t[::1] b
    if nn > 0:
        a = out["left"]
        memcpy(&a[0], M.left, nn * sizeof(intp_t))
        a = out["right"]
        memcpy(&a[0], M.right, nn * sizeof(intp_t))
        a = out["feature"]
        memcpy(&a[0], M.feature, nn * sizeof(intp_t))
        a = out["leaf_index"]
        memcpy(&a[0], M.leaf_index, nn * sizeof(intp_t))
        b = out["threshold"]
        memcpy(&b[0], M.threshold, nn * sizeof(float64_t))
    if nt > 0:
        a = out["node_ptr"]
        memcpy(&a[0], M.node_ptr, (nt + 1) * sizeof(intp_t))
        a = out["leaf_ptr"]
        memcpy(&a[0], M.leaf_ptr, (nt + 1) * sizeof(intp_t))
        a = out["output"]
        memcpy(&a[0], M.output, nt * sizeof(intp_t))
        if algo == RPO:
            b = out["coef"].reshape(-1)
            memcpy(&b[0], M.coef, nt * M.d * sizeof(float64_t))
    if M.n_leaves * M.width > 0:
        b = out["values"]
        memcpy(&b[0], M.values, M.n_leaves * M.width * sizeof(float64_t))
    return out


cdef int _check_predict_inputs(object X, const intp_t[::1] left, const intp_t[::1] right,
                               const intp_t[::1] feature, const float64_t[::1] threshold,
                               const intp_t[::1] leaf_index, const intp_t[::1] node_ptr, const intp_t[::1] leaf_ptr,
                               const float64_t[::1] values, const float64_t[:, ::1] coef, const intp_t[::1] output,
                               int kind, intp_t t_start, intp_t t_end, intp_t n_rows, intp_t d) except -1:
    """Refuse, before the compiled traversal runs, inputs it would read out of bounds: X against the split
    features of trees [t_start, t_end), F (``n_rows`` x ``d``) against X's rows and the model's outputs, the tree
    range and the leaf tables. The model arrays are the ones ``boost`` exported (their sizes are checked here).
    Typed loops over the range's nodes only, so that a staged prediction (one call per stage) stays cheap."""
    cdef intp_t n_trees = node_ptr.shape[0] - 1, nn = left.shape[0], t, node, lo, hi, width, p
    if not (isinstance(X, np.ndarray) and X.ndim == 2 and X.dtype == np.float32):
        raise ValueError(f"predict_add: X must be a 2-D float32 array, got {type(X).__name__} "
                         f"{getattr(X, 'dtype', '')} {getattr(X, 'shape', '')}")
    p = X.shape[1]
    if not 0 <= t_start <= t_end <= n_trees:
        raise ValueError(f"predict_add: tree range [{t_start}, {t_end}) outside the model's {n_trees} trees")
    if n_rows != X.shape[0]:
        raise ValueError(f"predict_add: F has {n_rows} rows, X has {X.shape[0]}")
    if not (right.shape[0] == nn and feature.shape[0] == nn and threshold.shape[0] == nn
            and leaf_index.shape[0] == nn and leaf_ptr.shape[0] == n_trees + 1
            and (output.shape[0] == 0 or output.shape[0] == n_trees)):
        raise ValueError("predict_add: the model's node arrays disagree in length")
    if t_end == t_start:
        return 0
    lo, hi = node_ptr[t_start], node_ptr[t_end]
    if not 0 <= lo <= hi <= nn:
        raise ValueError("predict_add: node_ptr points outside the node arrays")
    for node in range(lo, hi):
        if left[node] != TREE_LEAF and (feature[node] < 0 or feature[node] >= p):
            raise ValueError(f"predict_add: X has {p} columns but the trees split on feature {feature[node]}")
    width = d if kind == 0 else 1
    if leaf_ptr[t_end] * width > values.shape[0]:
        raise ValueError(f"predict_add: values holds {values.shape[0]} numbers, the trees need "
                         f"{leaf_ptr[t_end] * width}")
    if kind == 1 and (coef.shape[0] < t_end or coef.shape[1] != d):
        raise ValueError(f"predict_add: coef has shape ({coef.shape[0]}, {coef.shape[1]}), expected "
                         f"({n_trees}, {d})")
    if kind == 2:
        if output.shape[0] < t_end:
            raise ValueError("predict_add: the model has no output column per tree")
        for t in range(t_start, t_end):
            if output[t] < 0 or output[t] >= d:
                raise ValueError(f"predict_add: a tree adds to output {output[t]}, F has {d} columns")
    return 0


def predict_add(X, const intp_t[::1] left, const intp_t[::1] right, const intp_t[::1] feature,
                const float64_t[::1] threshold, const intp_t[::1] leaf_index, const intp_t[::1] node_ptr,
                const intp_t[::1] leaf_ptr, const float64_t[::1] values, const float64_t[:, ::1] coef,
                const intp_t[::1] output, int kind, intp_t t_start, intp_t t_end, float64_t[:, ::1] F):
    """Add the contributions of trees [t_start, t_end) to the scores F (n, d), in place.

    kind 0: leaves hold d-vectors; 1: scalar leaves times the tree's ``coef`` row; 2: scalar leaves added to the
    tree's ``output`` column."""
    cdef const float32_t[:, :] Xv = X
    cdef intp_t n = X.shape[0], d = F.shape[1], i, j, t, node, base, row
    cdef intp_t rs = X.strides[0] // 4, cs = X.strides[1] // 4
    cdef const float32_t* Xp = &Xv[0, 0] if n > 0 else NULL
    cdef float64_t v
    _check_predict_inputs(X, left, right, feature, threshold, leaf_index, node_ptr, leaf_ptr, values, coef, output,
                          kind, t_start, t_end, F.shape[0], d)
    if n == 0:
        return
    with nogil:
        for t in range(t_start, t_end):
            base = node_ptr[t]
            for i in range(n):
                node = 0
                while left[base + node] != TREE_LEAF:
                    if Xp[i * rs + feature[base + node] * cs] <= threshold[base + node]:
                        node = left[base + node]
                    else:
                        node = right[base + node]
                row = leaf_ptr[t] + leaf_index[base + node]
                if kind == 0:
                    for j in range(d):
                        F[i, j] += values[row * d + j]
                elif kind == 1:
                    v = values[row]
                    for j in range(d):
                        F[i, j] += coef[t, j] * v
                else:
                    F[i, output[t]] += values[row]


def project(phi, R, str method="blas"):
    """Z = R phi^T for a gradient R (n x d) and a projection phi (q x d), computed as a stage of the loop computes
    it: ``method="blas"`` by the matrix product of the dense projections (Gaussian, Rademacher), ``"blocked"`` by
    the loop of the sparse ones, which skips the zero entries. A hook for tests and benchmarks."""
    if method not in ("blas", "blocked"):
        raise ValueError(f"method must be 'blas' or 'blocked', got {method!r}")
    P = np.ascontiguousarray(phi, dtype=np.float64)
    G = np.asarray(R, dtype=np.float64)
    if P.ndim != 2 or G.ndim != 2 or P.shape[1] != G.shape[1] or min(P.shape + G.shape) < 1:
        raise ValueError(f"phi (q x d) and R (n x d) must be non-empty 2-D arrays with the same d; "
                         f"got phi {P.shape}, R {G.shape}")
    cdef float64_t[:, ::1] Pv = P
    cdef float64_t[:, ::1] Rt = np.ascontiguousarray(G.T)
    cdef intp_t n = G.shape[0], d = G.shape[1], q = P.shape[0]
    Z = np.empty((n, q), dtype=np.float64)
    acc = np.empty(min(q, <intp_t> PROJECT_BLOCK) * n, dtype=np.float64)
    cdef float64_t[:, ::1] Zv = Z
    cdef float64_t[::1] av = acc
    cdef bint blas = method == "blas"
    with nogil:
        if blas:
            _project_dense(&Pv[0, 0], &Rt[0, 0], n, d, q, &av[0], &Zv[0, 0])
        else:
            _project(&Pv[0, 0], &Rt[0, 0], n, d, q, &av[0], &Zv[0, 0])
    return Z
