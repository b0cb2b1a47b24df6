"""The method registry: what the workflow needs to know about each method, without importing its estimator.

A method is registered by one call, in a module of this package (every module here is imported when the registry
is first used) or in a plugin named by the configuration's ``plugins`` list (a module name, or the path of a
Python file: :func:`load_plugins`)::

    register("gbmort", "forestbench.boosting:GBMORTRegressor", cost=boosting_cost,
             description="multi-output gradient boosting, one shared tree per iteration")

What an entry declares:

- ``estimator``: ``"package.module:Name"`` of the estimator class (or of a factory function returning an
  estimator). It is imported only when a job builds the estimator or when the parameters of a variant are checked,
  never when the registry is read (a Snakefile parse on a cluster node imports no estimator).
- ``sparse_y``: the estimator accepts a scipy-sparse label matrix (otherwise the runner densifies it).
- ``cost``: ``cost(n, p, d, params, *, sparse=False, density=None) -> forestbench.workflow.resources.Cost``, the
  modelled single-thread seconds of fit + predict and the fitted model's memory. A hook that also takes
  ``label_density`` receives the share of non-zero labels of a multi-label set whose registry shape gives
  ``labels_per_row`` (``forestbench.workflow.resources.forest_cost`` charges sparse leaves by it); one that takes
  ``task`` receives the registry entry's task (``dte_mlp`` charges multi-label sets more). It sizes cluster
  requests and ``forestbench plan``. Every method of this package declares one; a plugin method without one is charged
  ``forestbench.workflow.resources.default_cost`` (a forest of its ``n_estimators``, else ten fully grown trees), and
  ``forestbench plan`` says so.
- ``classifier``: a scikit-learn single-label classifier whose ``predict`` is replaced by one score column per
  class (``forestbench.peers._classifier_scores.ClassifierScores``).
- ``task_params``: ``{dataset task: {parameter: value}}``, the parameters the workflow sets from the task of the
  dataset a job fits (``regression``, ``multioutput_regression``, ``multilabel``, ``binary``, ``multiclass``), so
  that an estimator never has to guess the task from the values of y (a two-valued regression target is not a
  binary class label). A variant that sets the parameter itself keeps its value.
- ``revision``: ``revision(params) -> str | None``, the name of a change of the estimator's results made after
  results were archived (a fix, a changed numerical rule), for the parameters it changes (None for the others). It
  enters the run specification of every job whose parameters or tuning candidates it names (``revisions``) and the
  key of every stored tuning candidate it names, so that records, selections and candidates computed before the
  change are not reused: ``archive restore`` leaves them out (budgets, which time the fits, stay) and the workflow
  refits them. Results of the parameters it does not name stay valid.
- ``stage_targets``: ``stage_targets(params, R, seed) -> [Z_1, ..., Z_t]``, for a staged (boosting) method: the
  regression targets of the trees one stage grows, from the first stage's residuals ``R`` (``n x d``, the outputs
  less their means): d columns for one tree per output, ``R`` for one shared tree, a projection of ``R`` for a
  tree on projected outputs. A budget timed with ``per_stage: sklearn_trees`` fits scikit-learn's decision trees on
  them as the clock of a stage (``forestbench.workflow.selection.sklearn_stage_seconds``); a method without it
  cannot be timed so.
- ``output_cost``: ``output_cost(n, d, params) -> seconds``, the modelled per-output work of one stage (gradient,
  projection, line search, score update) that ``per_stage: sklearn_trees_plus_outputs`` adds to the trees' time
  (``forestbench.workflow.selection.output_stage_seconds`` measures it); ``forestbench plan`` charges such a
  budget's caps with it.
- ``requires``: ``{module: install hint}`` of optional packages the estimator imports only when it is fitted (the
  ``peers`` extra). They are looked up, not imported, when a workflow or a plan is built: a run whose variants lack
  one is told so by name before its first job (:meth:`MethodSpec.missing`), instead of failing at fit time.

Capabilities are read from the estimator class, as scikit-learn does: ``staged_predict`` (staged scores in the
run record, staged selection of ``n_estimators``), ``run_info_()`` (extra record fields), ``__sklearn_tags__``.
Parameters of a variant are checked before any job runs against the class's signature and, when it declares them,
its scikit-learn ``_parameter_constraints``.
"""
from __future__ import annotations

import importlib
import inspect
import os
import pkgutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from forestbench.errors import ConfigError


@dataclass(frozen=True)
class MethodSpec:
    name: str
    estimator: str  # "package.module:Name"
    sparse_y: bool = False
    cost: Callable[..., Any] | None = None
    description: str = ""
    classifier: bool = False
    registered_by: str = field(default="", compare=False)
    task_params: dict | None = field(default=None, compare=False)
    requires: dict | None = field(default=None, compare=False)
    revision: Callable[[dict], str | None] | None = field(default=None, compare=False)
    stage_targets: Callable[..., list] | None = field(default=None, compare=False)
    output_cost: Callable[..., float] | None = field(default=None, compare=False)

    # ------------------------------------------------------------------ the estimator, imported on demand
    def estimator_class(self):
        """The class (or factory) named by ``estimator``, imported now."""
        module, _, attr = self.estimator.partition(":")
        try:
            return getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as exc:
            raise ConfigError(f"method {self.name!r}: cannot import its estimator {self.estimator!r} ({exc}); "
                              "is the optional dependency installed?") from None

    def parameters(self) -> list[str]:
        """Names of the parameters the estimator accepts (read from its signature once per estimator)."""
        if self.estimator not in _PARAMETER_NAMES:
            target = self.estimator_class()
            if inspect.isclass(target) and hasattr(target, "_get_param_names"):
                names = list(target._get_param_names())
            else:
                names = [n for n, p in inspect.signature(target).parameters.items()
                         if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
            _PARAMETER_NAMES[self.estimator] = tuple(names)
        return list(_PARAMETER_NAMES[self.estimator])

    def accepts(self, name: str) -> bool:
        return name in self.parameters()

    def params_for_task(self, task: str | None, params: dict | None = None) -> dict:
        """The parameters the workflow sets for a dataset of ``task`` (those ``params`` does not set itself)."""
        if task is None or not self.task_params:
            return {}
        return {k: v for k, v in self.task_params.get(task, {}).items() if k not in (params or {})}

    def build(self, params: dict, seed: int | None = None, task: str | None = None):
        """A new estimator with ``params``; ``random_state`` comes from ``seed`` unless ``params`` sets it, and
        the ``task_params`` of ``task`` (the dataset's task) fill the parameters ``params`` leaves unset."""
        params = {**self.params_for_task(task, params), **params}
        if seed is not None and "random_state" not in params and self.accepts("random_state"):
            params["random_state"] = int(seed)
        self.check_names(params)
        try:
            estimator = self.estimator_class()(**params)
        except TypeError as exc:
            raise ConfigError(f"method {self.name!r}: invalid parameters {sorted(params)}: {exc}") from None
        if self.classifier:
            from forestbench.peers._classifier_scores import ClassifierScores

            estimator = ClassifierScores(estimator)
        return estimator

    def revision_of(self, params: dict) -> str | None:
        """The revision (see the module docstring) of the estimator's results with ``params``, None for none."""
        return self.revision(params) if self.revision is not None else None

    def revisions(self, params: dict, candidates: list[dict] | None = None) -> list[str]:
        """The revisions of a job fitting ``params``, and every tuning candidate of ``candidates`` over them."""
        if self.revision is None:
            return []
        found = {self.revision(params)} | {self.revision({**params, **c}) for c in candidates or []}
        return sorted(r for r in found if r is not None)

    def check_names(self, params: dict) -> None:
        known = self.parameters()
        unknown = sorted(set(params) - set(known))
        if unknown:
            raise ConfigError(f"method {self.name!r} has no parameter(s) {unknown}; its parameters are: "
                              f"{', '.join(sorted(known))}")

    def check_params(self, params: dict) -> None:
        """Refuse parameters the estimator would refuse at fit time: unknown names, and values outside the
        estimator's scikit-learn ``_parameter_constraints`` (when it declares them)."""
        self.check_names(params)
        target = self.estimator_class()
        try:
            estimator = target(**params)
        except TypeError as exc:
            raise ConfigError(f"method {self.name!r}: invalid parameters {sorted(params)}: {exc}") from None
        except (ValueError, ConfigError) as exc:
            raise ConfigError(f"method {self.name!r}: {exc}") from None
        if hasattr(estimator, "_validate_params") and getattr(estimator, "_parameter_constraints", None):
            from sklearn.utils._param_validation import InvalidParameterError

            try:
                estimator._validate_params()
            except (InvalidParameterError, ValueError, TypeError) as exc:
                raise ConfigError(f"method {self.name!r}: {exc}") from None

    def missing(self) -> dict[str, str]:
        """``{module: install hint}`` of the optional packages in ``requires`` that cannot be imported here (looked
        up with ``importlib.util.find_spec``, never imported)."""
        import importlib.util

        return {module: hint for module, hint in (self.requires or {}).items()
                if importlib.util.find_spec(module) is None}

    # ------------------------------------------------------------------ capabilities and costs
    def supports(self, capability: str) -> bool:
        """Whether the estimator class has ``capability`` (e.g. ``"staged_predict"``); imports it."""
        return hasattr(self.estimator_class(), capability)

    def cost_of(self, n: int, p: int, d: int, params: dict, *, sparse: bool = False, density: float | None = None,
                label_density: float | None = None, task: str | None = None):
        """The method's :class:`~forestbench.workflow.resources.Cost` on an ``n x p`` input with ``d`` outputs.
        ``label_density`` and ``task`` (the registry entry's) reach the hooks that take them."""
        from forestbench.workflow import resources
        hook = self.cost or resources.default_cost
        given = {"label_density": label_density, "task": task}
        extra = {k: v for k, v in given.items() if v is not None and _takes(hook, k)}
        return hook(n, p, d, params or {}, sparse=sparse, density=density, **extra)


_TAKES: dict[tuple[Any, str], bool] = {}


def _takes(hook, keyword: str) -> bool:
    """Whether the cost hook ``hook`` accepts ``keyword`` (read once per hook: the DAG build asks per variant)."""
    key = (hook, keyword)
    if key not in _TAKES:
        params = inspect.signature(hook).parameters
        _TAKES[key] = keyword in params or any(p.kind is p.VAR_KEYWORD for p in params.values())
    return _TAKES[key]


METHODS: dict[str, MethodSpec] = {}
_PARAMETER_NAMES: dict[str, tuple[str, ...]] = {}  # estimator ("module:Name") -> its parameter names

# Methods that experiments may name but that are not implemented yet: their variants are left out of the plan and
# reported by name (``ExperimentPlan.pending``), so that a configuration can list them ahead of their code.
PLANNED: dict[str, str] = {}


def register(name: str, estimator: str, *, sparse_y: bool = False, cost: Callable[..., Any] | None = None,
             description: str = "", classifier: bool = False, task_params: dict | None = None,
             requires: dict | None = None, revision: Callable[[dict], str | None] | None = None,
             stage_targets: Callable[..., list] | None = None,
             output_cost: Callable[..., float] | None = None) -> MethodSpec:
    """Register ``name``; see the module docstring. Registering a name twice is an error."""
    if not isinstance(estimator, str) or ":" not in estimator:
        raise ValueError(f"method {name!r}: estimator must be 'package.module:Name', got {estimator!r}")
    if name in METHODS and METHODS[name].estimator != estimator:
        raise ValueError(f"method {name!r} is registered twice ({METHODS[name].estimator} and {estimator})")
    # the registering module, from the caller's frame (inspect.stack() would read every frame's source: ~20 ms a call)
    caller = sys._getframe(1).f_globals.get("__name__", "")
    spec = MethodSpec(name, estimator, sparse_y, cost, description, classifier, caller,
                      {task: dict(values) for task, values in (task_params or {}).items()} or None,
                      dict(requires) if requires else None, revision, stage_targets, output_cost)
    METHODS[name] = spec
    PLANNED.pop(name, None)
    return spec


def peers_extra(module: str, package: str | None = None) -> dict[str, str]:
    """``requires`` of a method whose estimator imports ``module`` (the distribution ``package``, by default the
    module's name) from the optional extra ``peers``."""
    return {module: f"{package or module}: pip install 'forestbench[peers]'"}


def plan_method(name: str, why: str) -> None:
    """Declare a method that experiments name but that is not implemented yet."""
    if name not in METHODS:
        PLANNED[name] = why


def is_planned(name: str) -> bool:
    return name in PLANNED and name not in METHODS


def get_method(name: str) -> MethodSpec:
    try:
        return METHODS[name]
    except KeyError:
        import difflib

        hint = f"; it is planned but not implemented yet ({PLANNED[name]})" if name in PLANNED else ""
        close = difflib.get_close_matches(str(name), list(METHODS), n=1)
        hint += f"; did you mean {close[0]!r}?" if close and not hint else ""
        raise ConfigError(f"unknown method {name!r}{hint} (known: {', '.join(sorted(METHODS))})") from None


def build_estimator(name: str, params: dict, seed: int | None, task: str | None = None):
    return get_method(name).build(params, seed, task)


def load_plugins(plugins) -> None:
    """Import the plugins a configuration names (each registers its methods when imported): a module name
    (``my_methods``, found on ``sys.path``/``PYTHONPATH``) or the path of a Python file (``plugins/my_methods.py``;
    a relative path is read from the working directory, where Snakemake runs and ``datasets_registry`` is read).
    A file is imported as the module named by its stem, so its estimators are named ``"my_methods:MyForest"``."""
    for plugin in plugins or ():
        if plugin.endswith(".py") or "/" in plugin or os.sep in plugin:
            _load_plugin_file(plugin)
            continue
        try:
            importlib.import_module(plugin)
        except ImportError as exc:
            if exc.name and plugin.split(".")[0] == exc.name.split(".")[0]:
                raise ConfigError(f"plugins: no module {plugin!r} on the Python path; put the folder holding "
                                  f"{plugin.replace('.', '/')}.py on PYTHONPATH, or name the file itself, e.g. "
                                  f"plugins: [path/to/{plugin.split('.')[-1]}.py]") from None
            raise ConfigError(f"plugins: cannot import method module {plugin!r} ({exc})") from None


def _load_plugin_file(path: str) -> None:
    import importlib.util

    file = Path(path)
    if not file.is_file():
        where = "" if file.is_absolute() else f" (a relative path is read from the working directory {Path.cwd()})"
        raise ConfigError(f"plugins: no file {path!r}{where}")
    name = file.stem
    if not name.isidentifier():
        raise ConfigError(f"plugins: {path!r} is imported as module {name!r}, which is not a Python identifier; "
                          "rename the file")
    loaded = sys.modules.get(name)
    if loaded is not None:
        if getattr(loaded, "__file__", None) and Path(loaded.__file__).resolve() == file.resolve():
            return  # already imported (a second Plan in the same process)
        raise ConfigError(f"plugins: {path!r} would be imported as module {name!r}, which is already "
                          f"{getattr(loaded, '__file__', None) or 'a built-in module'}; rename the file")
    spec = importlib.util.spec_from_file_location(name, file)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except ImportError as exc:
        del sys.modules[name]
        raise ConfigError(f"plugins: cannot import {path!r} ({exc})") from None
    except BaseException:
        del sys.modules[name]
        raise


def _discover() -> None:
    """Import every module of this package: each registers its methods."""
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        importlib.import_module(f"{__name__}.{info.name}")


_discover()
