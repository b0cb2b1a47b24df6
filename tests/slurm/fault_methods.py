"""Fault injection for the SLURM tests, as a method plugin (``plugins: [fault_methods]`` in tiny.yaml).

``flaky_forest`` fails the first time it is fitted on given data when ``FORESTBENCH_TEST_FAULT_DIR`` names a
folder (a marker per training set is left there), so that every fit job fails on its first attempt and succeeds
when resubmitted; without the variable it is scikit-learn's forest. ``always_fails`` fails every fit.
"""
import hashlib
import os
from pathlib import Path

import numpy as np
from sklearn.ensemble import RandomForestRegressor

from forestbench.methods import register


class FlakyForest(RandomForestRegressor):
    def fit(self, X, y, sample_weight=None):
        folder = os.environ.get("FORESTBENCH_TEST_FAULT_DIR")
        if folder:
            marker = Path(folder) / hashlib.sha256(np.ascontiguousarray(X).tobytes()).hexdigest()[:16]
            if not marker.exists():
                marker.parent.mkdir(parents=True, exist_ok=True)
                marker.touch()
                raise RuntimeError("failing on purpose on the first fit of this training set (test fault injection)")
        return super().fit(X, y, sample_weight)


class AlwaysFails(RandomForestRegressor):
    def fit(self, X, y, sample_weight=None):
        raise RuntimeError("always_fails: this method fails every fit (test fault injection)")


register("flaky_forest", f"{__name__}:FlakyForest", description="test fault injection: fails on the first attempt")
register("always_fails", f"{__name__}:AlwaysFails", description="test fault injection: fails every fit")
