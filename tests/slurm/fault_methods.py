"""Fault injection for the SLURM tests, as a method plugin (``plugins: [fault_methods]`` in tiny.yaml).

``flaky_forest`` is scikit-learn's forest, except that its fit fails when the fit command's ``--attempt`` (the
attempt number Snakemake passes to every fit job) is listed in ``FORESTBENCH_TEST_FAIL_ATTEMPTS`` (e.g. ``1``: every
fit fails on its first attempt and succeeds when resubmitted). ``always_fails`` fails every fit.
"""
import os
import sys

from sklearn.ensemble import RandomForestRegressor

from forestbench.workflow.methods import register


def _attempt() -> str | None:
    argv = sys.argv
    return argv[argv.index("--attempt") + 1] if "--attempt" in argv[:-1] else None


class FlakyForest(RandomForestRegressor):
    def fit(self, X, y, sample_weight=None):
        failing = os.environ.get("FORESTBENCH_TEST_FAIL_ATTEMPTS", "").split(",")
        if _attempt() in failing:
            raise RuntimeError(f"failing on purpose on attempt {_attempt()} (test fault injection)")
        return super().fit(X, y, sample_weight)


class AlwaysFails(RandomForestRegressor):
    def fit(self, X, y, sample_weight=None):
        raise RuntimeError("always_fails: this method fails every fit (test fault injection)")


register("flaky_forest", f"{__name__}:FlakyForest", description="test fault injection: fails on chosen attempts")
register("always_fails", f"{__name__}:AlwaysFails", description="test fault injection: fails every fit")
