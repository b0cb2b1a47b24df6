"""Deep tree-ensembles for multi-output prediction: a cascade of forest layers whose features are the inputs, the
previous layer's output-space predictions and tree embeddings (PCA of the forests' node indicators)."""
from forestbench.deep._cascade import DeepTreeEnsemble
from forestbench.deep._embedding import TreeEmbedding

__all__ = ["DeepTreeEnsemble", "TreeEmbedding"]
