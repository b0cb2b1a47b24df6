"""Reports: tables, figures and the reproduction comparison built from the tidy scores table.

Public API: ``build_experiment_report`` (one experiment, under ``results/<experiment>/report/``) and ``build_index``
(``results/report/index.html`` + ``index.md``). Reports read run records only; they never import estimators.

Report kinds (``experiments.<E>.reports`` entries) are registered in ``REPORT_KINDS``
(:mod:`forestbench.report.kinds`) by the module that defines each one; a kind's options are in its function's
docstring, and a test keeps the schema's ``kind`` enum equal to the registry. Every kind accepts ``variants: [...]``
and ``datasets: [...]`` to restrict and order it.

``experiments.<E>.reference`` is one mapping or a list of them: ``table`` (stem of a CSV in config/reference),
``metric``, ``methods`` (our variant -> reference method_id), optional ``datasets`` (our dataset -> reference
dataset_id), ``tolerance_std`` (1.0), ``tolerance_abs`` (for cells printed without std), ``tolerance_rank`` (0.5, CD
figures), ``alpha`` (0.05). Results tables are compared cell by cell, p-value tables by sign notation, CD figures by
average ranks, Friedman p (side of alpha) and CD; a CD figure with ``cells: <results table>`` is judged against those
published cells re-ranked over the methods and datasets we ran (``reproduction.compare_ranks``). A table whose cells are
indexed by parameters (the lecture slides' (method, B, max depth) grid, no std) maps each variant to ``{method_id,
n_estimators, max_depth}`` and may add ``rerun`` (variant -> [mean, sd] of an independent rerun), ``oracle`` (variant ->
its oracle twin) and ``claims`` (the slides' qualitative claims, see ``forestbench.report.teaching``). ``protocol``
(``published`` | ``reduced``), ``published_protocol`` and ``run_protocol`` say whether the cells are judged or only
compared (see ``forestbench.report.verdicts``).

Modules: ``kinds`` (registry), ``verdicts`` (statuses, comparison tables), ``reference_tables`` (the published
tables), ``reproduction`` (our numbers beside them), ``experiment`` (one experiment's report and the general
kinds), ``input_layouts`` (one problem in several input layouts, thesis ch.8), ``teaching`` (the lecture slides'
table, ``oob_curve``), ``paired`` (variant against variant on the same splits), ``tables``, ``figures``, ``data``,
``index`` (the front page), ``cli``.
"""
__all__ = ["REPORT_KINDS", "build_experiment_report", "build_index", "report_kind"]

# the public names are imported on first use: plotting (matplotlib, seaborn, pandas) costs about a second, which
# every command of the CLI (it lists the report commands among the others) and every fit job would otherwise pay
_LAZY = {"REPORT_KINDS": "experiment", "build_experiment_report": "experiment", "report_kind": "kinds",
         "build_index": "index"}


def __getattr__(name):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f"forestbench.report.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'forestbench.report' has no attribute {name!r}")
