"""The workflow side, in the order data flows through it: experiments and method variants from the configuration
(``experiments``, ``variants``), the method registry (``methods``), cost model, plan and cluster requests
(``resources``, ``plan``), hyper-parameter tuning and selection (``tuning``, ``selection``, ``dag_selection``), the
job that fits and scores one run (``pipeline``, ``runner``), run records and their collection into score tables
(``records``, ``collect``) and the rules' error reporting (``joblog``). The results archive
(``forestbench.archive``) comes after the reports, which it rebuilds.

Nothing is imported here: the Snakefile imports only the modules it needs, and no estimator, when it parses."""
