"""Methods that configurations name ahead of their implementation. Their variants are skipped and reported by
name; registering the method (in its own module of this package) supersedes the entry here."""
from forestbench.workflow.methods import plan_method

for _name, _why in {
    "dte_dstars": "DSTARS, the DTE paper's regression competitor: no installable implementation exists and it has "
                  "not been rebuilt from its paper",
}.items():
    plan_method(_name, _why)
