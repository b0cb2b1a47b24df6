"""Build the Cython extensions of forestbench.

Every ``.pyx`` file below ``src/forestbench`` becomes one extension module named after its path, so a new kernel
module needs no change here. Project metadata lives in ``pyproject.toml``.
"""
from pathlib import Path

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

SRC = Path(__file__).parent / "src"


def _extensions():
    extensions = []
    for pyx in sorted(SRC.glob("forestbench/**/*.pyx")):
        module = ".".join(pyx.relative_to(SRC).with_suffix("").parts)
        extensions.append(
            Extension(
                module,
                [str(pyx.relative_to(Path(__file__).parent))],
                include_dirs=[np.get_include()],
                define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
                extra_compile_args=["-O3", "-ffp-contract=off"],
            )
        )
    return cythonize(
        extensions,
        compiler_directives={
            "language_level": "3",
            "boundscheck": False,
            "wraparound": False,
            "cdivision": True,
            "initializedcheck": False,
        },
        include_path=[str(SRC)],
    )


setup(ext_modules=_extensions())
