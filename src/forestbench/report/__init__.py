"""Reports: tables, figures and the reproduction comparison built from the tidy scores table.

Public API: ``build_experiment_report`` (one experiment, under ``results/<experiment>/report/``) and ``build_index``
(``results/report/index.html`` + ``index.md``). Reports read run records only; they never import estimators.

Report kinds (``experiments.<E>.reports`` entries; the registry is ``REPORT_KINDS``, extended with
``@report_kind("name")``). Every kind accepts ``variants: [...]`` and ``datasets: [...]`` to restrict and order it.

- ``table``: ``metric``, optional ``baseline`` (a variant), ``decimals`` (3), ``sig_rule`` (``max_std`` |
  ``baseline_std`` | ``method_std``). Mean ± std per dataset x variant, best per row in bold, cells more than one
  std from the baseline marked, average-rank row; CSV (long form), Markdown, LaTeX (booktabs).
- ``cd_diagram``: ``metric``, ``alpha`` (0.05). Friedman test + Nemenyi CD over the datasets where every variant
  ran; PDF + PNG and a ranks CSV.
- ``pvalues``: ``metric``, ``test`` (``wilcoxon`` | ``ttest``), ``over`` (``datasets`` | ``repeats``; default
  datasets for Wilcoxon, repeats for the t-test, as in the thesis), ``correction`` (none | ``holm``; default none,
  as the published tables), ``alpha``. '>' / '<' sign notation, row versus column.
- ``sweep``: ``metric``, ``x`` (a ``param.<name>`` column), ``hue`` (default ``variant_group``: the method plus its
  parameters other than ``x`` that vary). Mean ± std over repeats, one panel per dataset.
- ``timing``: ``x``, ``time`` (``fit_wall_s`` | ``fit_cpu_s`` | ``predict_wall_s`` | ``predict_cpu_s``), ``hue``;
  log time axis (log x when numeric and spanning more than a decade).
- ``convergence``: ``metric``, ``hue`` (``variant``); staged rows (``step`` set) against the step.
- ``oob_curve``: ``metric``, ``x``, ``oob`` (default ``extra.oob_mse``): the out-of-bag and the test score against
  ``x`` (e.g. the number of trees), and a table of their paired gap.
- ``layouts``: one problem grown from several input layouts (thesis ch.8; variants differ by ``input_layout``).
  ``time`` (``fit_wall_s``), ``sparse`` (``csc``), ``dense`` (``fortran``: the layout the crossover is taken
  against), ``figure`` (quantities among ``fit_wall_s``, ``predict_wall_s``, ``max_depth``; ``[]`` for none),
  ``crossover_reference`` (a published crossover density, drawn beside ours), ``on_mismatch`` (``fail`` |
  ``flag``), ``reference`` (``times``: a Table 8.2/8.3 CSV, ``densities``: the Table 8.1 CSV, ``datasets``: our
  name -> dataset_id). Fails (or flags) when the layouts of a (dataset, repeat) grew different trees (record field
  ``tree_sha256``); per-layout medians and quartiles, dense / sparse time ratios beside the published ones, measured
  densities beside Table 8.1's, the crossover density, and the figure against the measured density (log x, median
  and inter-quartile band per layout, repeats as dots).
- ``layers``: ``metric``; a cascade's per-layer training scores (``extra.train_layer_<L>``) beside its staged
  test scores, and the mean selected layer count (``extra.n_layers``).

``experiments.<E>.reference`` is one mapping or a list of them: ``table`` (stem of a CSV in config/reference),
``metric``, ``methods`` (our variant -> reference method_id), optional ``datasets`` (our dataset -> reference
dataset_id), ``tolerance_std`` (1.0), ``tolerance_abs`` (for cells printed without std), ``tolerance_rank`` (0.5,
CD figures), ``alpha`` (0.05). Results tables are compared cell by cell, p-value tables by sign notation, CD
figures by average ranks, Friedman p (side of alpha) and CD. A table whose cells are indexed by parameters (the
lecture slides' (method, B, max depth) grid, no std) maps each variant to ``{method_id, n_estimators, max_depth}``
and may add ``rerun`` (variant -> [mean, sd] of an independent rerun), ``oracle`` (variant -> its oracle twin) and
``claims`` (the slides' qualitative claims, see ``forestbench.report.teaching``).
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
