"""Targets whose squares overflow: an exact power-of-two rescaling.

Squared-error criteria, losses, line searches and whitening square the targets (and sums of them), which overflows
float64 once |y| reaches about 1.3e154 and turns every prediction into NaN. The estimators that need it divide
their regression targets by ``scale = 2**e`` chosen so that max |y| / scale lies in [0.5, 1), fit on the scaled
targets, and multiply their predictions back by ``scale``. Dividing and multiplying by a power of two only changes
the exponent, so both steps are exact (no rounding), and every sum, square, square root and ratio the fit computes
on the scaled targets is the exactly scaled value of the same computation on the original ones (as long as nothing
overflows or underflows). The rescaling is used only above ``SAFE_MAX``; smaller targets are fitted unchanged.
"""
from __future__ import annotations

import math

import numpy as np

__all__ = ["SAFE_MAX", "power_of_two_scale"]

#: largest max |y| fitted without rescaling: sums of squares of up to 2**250 rows of such values stay finite
SAFE_MAX = 2.0 ** 256


def power_of_two_scale(Y, safe_max: float = SAFE_MAX) -> float:
    """1.0 when max |Y| <= ``safe_max`` (or Y is empty), else the power of two ``2**e`` with max |Y| / 2**e in
    [0.5, 1). ``Y`` must be finite. (A fit that turns targets into float32 features needs a lower ``safe_max``.)"""
    Y = np.asarray(Y)
    if Y.size == 0:
        return 1.0
    top = float(np.max(np.abs(Y)))
    if not top > safe_max:
        return 1.0
    return math.ldexp(1.0, math.frexp(top)[1])
