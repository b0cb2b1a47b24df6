"""When a dense label matrix is grown as CSR: the rule the tree kernel applies and the cost model charges.

A 0/1 label matrix with few labels per row grows the same trees, to the bit, with the O(non-zeros) sparse criterion
as with the dense one (with 0/1 targets and integer weights every sum is an integer, exact in float64 while the
sums of squares stay below 2^53), and stores its leaf values sparsely. ``forestbench.tree`` converts such a
matrix; ``forestbench.workflow.resources`` charges its fits for it. Measured with 4 forests of 4 000 rows on this
kernel: 1 000 outputs at 1 % non-zeros grow 5.9x faster as CSR, 300 at 3 % 2.9x, 50 at 1 % 1.4x; at 10 % non-zeros,
or with 16 outputs, CSR is no faster. These set the limits.
"""
from __future__ import annotations

#: fewest outputs for which the sparse criterion pays off
SPARSE_LABELS_MIN_OUTPUTS = 32
#: largest share of non-zero entries for which it pays off
SPARSE_LABELS_MAX_DENSITY = 0.05


def grows_sparse(n_outputs: int, density: float) -> bool:
    """Whether a 0/1 label matrix of ``n_outputs`` columns with this share of non-zeros is grown as CSR."""
    return n_outputs >= SPARSE_LABELS_MIN_OUTPUTS and density <= SPARSE_LABELS_MAX_DENSITY
