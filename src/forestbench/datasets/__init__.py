"""Datasets: the registry, embedded and downloaded sources, the canonical prepared form, and reproducible splits."""
from forestbench.datasets.store import Dataset, load_dataset, save_dataset

__all__ = ["Dataset", "load_dataset", "save_dataset"]
