"""Methods that configurations name ahead of their implementation. Their variants are skipped and reported by
name; registering the method (in its own module of this package) supersedes the entry here."""
from forestbench.methods import plan_method

for _name, _why in {
    "st_gbrt": "single-target gradient boosting, thesis ch.6",
    "gbmort": "multi-output gradient boosting with one shared tree per step, thesis ch.6",
    "gbrt_rpo": "gradient boosting on random projections of the residuals, thesis ch.6",
    "gbrt_relabel_rpo": "gradient boosting on projected residuals with relabelled leaves, thesis ch.6",
    "artificial_gbrt": "the optimal artificial strategy of the friedman1 study, thesis ch.6",
    "st_random_forest": "one random forest per output (binary relevance), thesis ch.6",
    "compressed_extra_trees": "l1-compressed extra-trees (rET), thesis ch.7",
    "dte_dstars": "DSTARS, the DTE paper's regression competitor: no installable implementation exists and it has "
                  "not been rebuilt from its paper",
}.items():
    plan_method(_name, _why)
