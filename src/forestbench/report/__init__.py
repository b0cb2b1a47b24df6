"""Reports: tables, figures and the reproduction comparison built from the tidy scores table.

Public API: ``build_experiment_report`` (one experiment, under ``results/<experiment>/report/``) and ``build_index``
(``results/report/index.html`` + ``index.md``). Reports read run records only; they never import estimators.
"""
from forestbench.report.experiment import REPORT_KINDS, build_experiment_report, report_kind
from forestbench.report.index import build_index

__all__ = ["REPORT_KINDS", "build_experiment_report", "build_index", "report_kind"]
