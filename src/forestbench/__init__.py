"""forestbench: reproducible benchmarks of tree ensembles on multi-output, projected and sparse problems."""

__version__ = "0.1.0"
