"""Methods that configurations name ahead of their implementation. Their variants are skipped and reported by
name; registering the method (in its own module of this package) supersedes the entry here."""
from forestbench.methods import plan_method

for _name, _why in {
    "deep_tree_ensemble": "deep tree-ensembles with tree embeddings, DTE paper",
    "dte_competitor": "a competitor of the DTE paper (MLP, ERC, DSTARS, ML-kNN, RAkEL, ECC, MLDF)",
}.items():
    plan_method(_name, _why)
