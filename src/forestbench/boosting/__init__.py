"""Multi-output gradient tree boosting (thesis ch.6): gbmort (one shared tree per iteration), st-gbrt (one model per
output), gbrt-rpo and gbrt-relabel-rpo (trees grown on random output projections or output sub-samples) and the
artificial-data variant of the thesis's Table 6.1.

Split by concern: the estimators (``_gradient_boosting``), the compiled boosting loop (``_loop``), and the losses
and line searches (``_losses``). The trees themselves are the kernel's (``forestbench.tree``): the presorted
best-first builder the loop grows them with is ``forestbench.tree._presort``."""
from forestbench.boosting._gradient_boosting import (ArtificialGBRTRegressor, GBMORTRegressor, GBRTRelabelRPORegressor,
                                                     GBRTRPORegressor, STGradientBoostingRegressor)

__all__ = ["GBMORTRegressor", "STGradientBoostingRegressor", "GBRTRPORegressor", "GBRTRelabelRPORegressor",
           "ArtificialGBRTRegressor"]
