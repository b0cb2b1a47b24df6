"""Former name of :mod:`forestbench.report.input_layouts` (input layouts of the data, not page layout), kept so
that existing imports keep working."""
from forestbench.report.input_layouts import *  # noqa: F401,F403
from forestbench.report.input_layouts import __all__  # noqa: F401
