#!/usr/bin/env bash
# Runs inside a conda environment that `snakemake --use-conda` has just created from forestbench.yaml:
# installs forestbench (and compiles its Cython kernels) from the workflow's working directory.
set -euo pipefail
python -m pip install --no-deps --no-build-isolation -e "${PWD}"
