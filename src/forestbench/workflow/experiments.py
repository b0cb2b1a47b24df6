"""Experiments are data: expand the configuration into method variants and fit jobs.

An experiment names datasets, a split protocol, methods (registry name + parameters + an optional grid whose
cartesian product gives one *variant* per combination), metrics, reports and the published table to compare with.
A job is one (experiment, dataset, variant, repeat). This module is shared by the Snakefile, the CLI and ``plan``.
"""
from __future__ import annotations

import json

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from forestbench.datasets.registry import (checked_shape, get_entry, is_available, load_registry, needs_network,
                                          protocol_of)
from forestbench.datasets.splits import n_splits_of
from forestbench.errors import ConfigError
from forestbench.workflow import tuning
from forestbench.workflow.methods import PLANNED, get_method, is_planned, load_plugins
from forestbench.metrics import get_metric
from forestbench.validation import load_yaml, validate
from forestbench.workflow.variants import RUN_PARAMETERS, expand_entry

DEFAULT_REGISTRY = "config/datasets.yaml"


@dataclass(frozen=True)
class Variant:
    name: str
    method: str
    params: dict = field(hash=False)
    tune: dict | None = field(default=None, hash=False)  # normalised ``tune`` block (forestbench.workflow.tuning)

    @property
    def tuned_in_dag(self) -> bool:
        return bool(self.tune) and self.tune["mode"] == "dag"


@dataclass(frozen=True)
class TuneJob:
    """One chunk of candidates of a DAG-tuned variant on one split."""

    experiment: str
    dataset: str
    variant: str
    repeat: int
    chunk: int


@dataclass(frozen=True)
class Job:
    experiment: str
    dataset: str
    variant: str
    repeat: int


def _did_you_mean(names, known) -> str:
    import difflib

    close = [c for n in names for c in difflib.get_close_matches(n, list(known), n=1)]
    return f" (did you mean {', '.join(map(repr, close))}?)" if close else ""


def expand_variants(experiment: str, methods: list[dict], metrics: list[str] | None = None) -> list[Variant]:
    variants: list[Variant] = []
    for entry in methods:
        if not is_planned(entry["method"]):
            try:
                get_method(entry["method"])  # fail early on an unknown method
            except ConfigError as exc:
                raise ConfigError(f"experiment {experiment}, methods entry {entry.get('name', entry['method'])!r}: "
                                  f"{exc}") from None
        for name, params in expand_entry(experiment, entry):
            tune = None
            if entry.get("tune") is not None:
                tune = tuning.normalise(entry["tune"], where=f"experiment {experiment}, variant {name}",
                                        metrics=metrics or [])
            variants.append(Variant(name, entry["method"], params, tune))
    seen = set()
    for v in variants:
        if v.name in seen:
            raise ConfigError(f"experiment {experiment}: two method configurations are both named {v.name!r}; "
                              "give them distinct names")
        seen.add(v.name)
    return variants


def missing_package_note(missing: dict[str, str]) -> str:
    """What a variant missing the optional packages ``{module: install hint}`` is told before any job runs."""
    needs = "; ".join(f"{hint} (module {module!r} not found)" for module, hint in missing.items())
    return (f"needs an optional package that is not installed, so its fit jobs would fail: {needs}; or leave it "
            "out with --config 'select={variants: [...]}'")


@dataclass
class ExperimentPlan:
    name: str
    config: dict
    protocol: str
    datasets: list[str]
    unavailable: dict[str, str]
    variants: list[Variant]
    repeats: dict[str, int]
    seed: int
    threads: int

    @property
    def runnable_variants(self) -> list[Variant]:
        return [v for v in self.variants if not is_planned(v.method)]

    @property
    def pending(self) -> dict[str, str]:
        """Variants whose method is not implemented yet -> why."""
        return {v.name: f"method {v.method!r} is not implemented yet ({PLANNED[v.method]})"
                for v in self.variants if is_planned(v.method)}

    @property
    def missing_packages(self) -> dict[str, dict[str, str]]:
        """Runnable variants whose method needs optional packages not installed here -> ``{module: install
        hint}`` (``MethodSpec.requires``; looked up, not imported)."""
        found = {v.name: get_method(v.method).missing() for v in self.runnable_variants}
        return {name: missing for name, missing in found.items() if missing}

    def jobs(self) -> list[Job]:
        return [Job(self.name, d, v.name, r) for d in self.datasets for v in self.runnable_variants
                for r in range(self.repeats[d])]

    def candidates(self, variant: Variant) -> list[dict]:
        """Candidate parameter sets of a tuned variant (seeded by the experiment's seed). Expanded once per variant
        (the DAG asks for them once per chunk job): the list and its dicts are shared, callers copy before changing
        them."""
        if not variant.tune:
            return []
        cache = self.__dict__.setdefault("_candidates", {})
        if variant.name not in cache:
            cache[variant.name] = tuning.candidates(variant.tune, self.seed)
        return cache[variant.name]

    def revisions(self, variant: Variant) -> list[str]:
        """The method revisions (``forestbench.workflow.methods``, ``revision``) that a job of ``variant`` fits
        under: of its parameters and of any of its tuning candidates. Computed once per variant."""
        cache = self.__dict__.setdefault("_revisions", {})
        if variant.name not in cache:
            cache[variant.name] = get_method(variant.method).revisions(variant.params, self.candidates(variant))
        return cache[variant.name]

    def n_chunks(self, variant: Variant) -> int:
        return len(tuning.chunks(len(self.candidates(variant)), variant.tune["chunk"])) if variant.tuned_in_dag \
            else 0

    def tune_jobs(self) -> list[TuneJob]:
        """Candidate-chunk jobs of the DAG-tuned variants."""
        return [TuneJob(self.name, d, v.name, r, k) for d in self.datasets for v in self.runnable_variants
                if v.tuned_in_dag for r in range(self.repeats[d]) for k in range(self.n_chunks(v))]

    def variant(self, name: str) -> Variant:
        for v in self.variants:
            if v.name == name:
                return v
        raise ConfigError(f"experiment {self.name}: no variant {name!r}")


class Plan:
    """The expanded configuration: experiments, their jobs and file paths."""

    def __init__(self, config: dict, source: str = "config", schema_dir: str | Path | None = None,
                 registry: dict | None = None, check_params: bool = True):
        validate(config, "config", source, schema_dir)
        self.config = config
        self.source = source
        load_plugins(config.get("plugins"))
        self.registry = registry if registry is not None else load_registry(
            config.get("datasets_registry", DEFAULT_REGISTRY), schema_dir)
        self.protocols = config.get("protocols", {})
        select = config.get("select", {})
        self.experiments: dict[str, ExperimentPlan] = {}
        wanted = select.get("experiments")
        if wanted:
            missing = sorted(set(wanted) - set(config["experiments"]))
            if missing:
                raise ConfigError(f"{source}: select.experiments names unknown experiment(s) {missing}"
                                  f"{_did_you_mean(missing, config['experiments'])}; known: "
                                  f"{', '.join(config['experiments'])}")
        for name, cfg in config["experiments"].items():
            if wanted and name not in wanted:
                continue
            try:
                self.experiments[name] = self._expand(name, cfg, select)
            except ConfigError as exc:
                # name the configuration file and the experiment, once
                where = "" if str(exc).startswith(f"experiment {name}") else f"experiment {name}: "
                raise ConfigError(f"{source}: {where}{exc}") from None
        self._check_selection(config, select, source)
        if check_params:
            self.check_parameters()

    def _check_selection(self, config: dict, select: dict, source: str) -> None:
        """A select.variants / select.datasets name that no selected experiment has is an error listing the known
        names (a typo would otherwise select nothing and succeed)."""
        wanted = select.get("experiments")
        scope = [cfg for name, cfg in config["experiments"].items() if not wanted or name in wanted]
        known = {"datasets": sorted({d for cfg in scope for d in cfg.get("datasets", [])}),
                 "variants": sorted({v.name for name, cfg in config["experiments"].items()
                                     if not wanted or name in wanted
                                     for v in expand_variants(name, cfg["methods"], cfg["metrics"])})}
        for key, names in known.items():
            unknown = sorted(set(select.get(key) or []) - set(names))
            if unknown:
                raise ConfigError(f"{source}: select.{key} names unknown {key[:-1]}(s) {unknown}; known: "
                                  f"{', '.join(names)}")

    def check_parameters(self) -> None:
        """Refuse, before any job runs, a variant whose parameters (or tuning candidates) its estimator would
        refuse: unknown names, values outside the estimator's parameter constraints, a k-fold larger than the
        training part. Imports the estimators of the planned variants."""
        # A grid's candidates are checked value by value: a candidate is built and validated only when one of its
        # values is new for this method and fixed parameters (scikit-learn's parameter constraints hold for each
        # parameter alone), so a 490-point grid costs about as many checks as it has values, not 490.
        checked = set()  # (method, fixed parameters, name, value) already accepted: variants share candidates
        for name, exp in self.experiments.items():
            for v in exp.runnable_variants:
                spec = get_method(v.method)
                run_params = {k: val for k, val in v.params.items() if k not in RUN_PARAMETERS}
                candidates = exp.candidates(v) or [{}]
                try:
                    for cand in candidates:
                        params = {**run_params, **cand}
                        fixed = json.dumps({k: val for k, val in run_params.items() if k not in cand},
                                           sort_keys=True, default=repr)
                        keys = {(v.method, fixed, k, json.dumps(val, sort_keys=True, default=repr))
                                for k, val in params.items()} or {(v.method, fixed)}
                        if not keys <= checked:
                            spec.check_params(params)
                            checked |= keys
                    if v.tune and v.tune["budget"]:
                        ref = v.tune["budget"]["reference"]
                        if is_planned(ref["method"]) and not is_planned(v.method):
                            raise ConfigError(f"tune.budget.reference: method {ref['method']!r} is not "
                                              "implemented yet")
                        if not is_planned(ref["method"]):
                            get_method(ref["method"]).check_params(ref["params"])
                    if v.tune and v.tune["staged"] and not spec.supports("staged_predict"):
                        raise ConfigError(f"tune.staged needs an estimator with staged_predict, and "
                                          f"{spec.estimator} has none")
                except ConfigError as exc:
                    raise ConfigError(f"{self.source}: experiment {name}, variant {v.name}: {exc}") from None
                if v.tune and "kfold" in v.tune["validation"]:
                    for dataset in exp.datasets:
                        n_train = tuning.training_rows(self.protocol_spec(dataset, exp.protocol),
                                                       get_entry(self.registry, dataset).get("shape"))
                        if n_train is not None and v.tune["validation"]["kfold"] > n_train:
                            raise ConfigError(f"{self.source}: experiment {name}, variant {v.name}: "
                                              f"tune.validation.kfold {v.tune['validation']['kfold']} is larger "
                                              f"than the training part of {dataset} ({n_train} rows)")

    def _expand(self, name: str, cfg: dict, select: dict) -> ExperimentPlan:
        for metric in cfg["metrics"]:
            get_metric(metric)
        self._check_report_metrics(name, cfg)
        variants = expand_variants(name, cfg["methods"], cfg["metrics"])
        if select.get("variants"):
            variants = [v for v in variants if v.name in select["variants"]]
        datasets, unavailable, repeats = [], {}, {}
        max_repeats = cfg.get("max_repeats", self.config.get("max_repeats"))
        for dataset in cfg["datasets"]:
            if select.get("datasets") and dataset not in select["datasets"]:
                continue
            entry = get_entry(self.registry, dataset)
            if select.get("available") and needs_network(entry):
                unavailable[dataset] = "left out by select.available: its files must be downloaded"
                continue
            if not is_available(entry):
                unavailable[dataset] = entry.get("unavailable_reason", "no public source is known")
                continue
            if not any(get_metric(m).applies_to(entry["task"]) for m in cfg["metrics"]):
                raise ConfigError(f"experiment {name}: none of the metrics {cfg['metrics']} applies to dataset "
                                  f"{dataset} (task {entry['task']})")
            protocol = protocol_of(self.registry, dataset, cfg["protocol"], self.protocols)
            n = n_splits_of(protocol)
            repeats[dataset] = min(n, max_repeats) if max_repeats else n
            datasets.append(dataset)
        return ExperimentPlan(name, cfg, cfg["protocol"], datasets, unavailable, variants, repeats,
                              int(cfg.get("seed", self.config.get("seed", 0))),
                              int(cfg.get("threads", self.config.get("threads", 1))))

    def _check_report_metrics(self, name: str, cfg: dict) -> None:
        """A report or reference entry (its ``ours`` metric if given) may only show a metric the experiment scores
        (or an ``extra.<key>`` run-info column): another one would have no score row, and every one of its cells
        would read "not run"."""
        refs = cfg.get("reference") or []
        entries = [("reports", i, spec) for i, spec in enumerate(cfg.get("reports") or [])]
        entries += [("reference", i, spec) for i, spec in enumerate(refs if isinstance(refs, list) else [refs])]
        for key, i, spec in entries:
            if not isinstance(spec, dict):
                continue
            # a reference entry's ``ours`` names our metric (or one per dataset) when the published table labels
            # it otherwise
            metric = spec.get("ours", spec.get("metric")) if key == "reference" else spec.get("metric")
            names = list(metric.values()) if isinstance(metric, dict) else [metric]
            metric = next((m for m in names if m is not None and not str(m).startswith("extra.")
                           and m not in cfg["metrics"]), None)
            if metric is None:
                continue
            raise ConfigError(f"{self.source}: experiment {name}, {key}[{i}]: metric {metric!r} is not one the "
                              f"experiment scores (metrics: {', '.join(cfg['metrics'])}); add it to the "
                              "experiment's metrics or show one of them")

    # ------------------------------------------------------------------ jobs and paths
    def jobs(self) -> list[Job]:
        return [job for exp in self.experiments.values() for job in exp.jobs()]

    @staticmethod
    def prepared_path(dataset: str) -> str:
        return f"data/prepared/{dataset}.npz"

    @staticmethod
    def split_path(dataset: str, protocol: str) -> str:
        return f"data/splits/{dataset}/{protocol}.npz"

    @staticmethod
    def record_path(job: Job) -> str:
        return f"results/runs/{job.experiment}/{job.dataset}/{job.variant}/repeat-{job.repeat}.json"

    @staticmethod
    def scores_path(experiment: str) -> str:
        return f"results/{experiment}/scores.csv"

    def unavailable(self) -> dict[str, dict[str, str]]:
        return {name: exp.unavailable for name, exp in self.experiments.items() if exp.unavailable}

    def describe(self) -> list[str]:
        """One line per experiment (datasets, variants, jobs), then what is left out and why."""
        lines = []
        for name, exp in self.experiments.items():
            source = f" [{exp.config['source']}]" if exp.config.get("source") else ""
            lines.append(f"experiment {name}{source}: {len(exp.datasets)} dataset(s), "
                         f"{len(exp.runnable_variants)} variant(s), {len(exp.jobs())} fit job(s)")
            for dataset, why in exp.unavailable.items():
                lines.append(f"  dataset {dataset} is unavailable and skipped ({why}); "
                             "supply it with 'local_path' in the dataset registry")
            for variant, why in exp.pending.items():
                lines.append(f"  variant {variant} is skipped: {why}")
            for variant, missing in exp.missing_packages.items():
                lines.append(f"  variant {variant} {missing_package_note(missing)}")
        return lines

    def missing_package_notes(self) -> list[str]:
        """One line per planned variant whose method needs an optional package that is not installed."""
        return [f"experiment {name}, variant {variant} {missing_package_note(missing)}"
                for name, exp in self.experiments.items() for variant, missing in exp.missing_packages.items()]

    # ------------------------------------------------------------------ what a job needs
    def protocol_spec(self, dataset: str, protocol: str) -> dict:
        return protocol_of(self.registry, dataset, protocol, self.protocols)

    def run_spec(self, job: Job) -> dict:
        exp = self.experiments[job.experiment]
        variant = exp.variant(job.variant)
        seed = int(np.random.SeedSequence([exp.seed, job.repeat]).generate_state(1)[0])
        revisions = exp.revisions(variant)
        return {
            "experiment": job.experiment, "dataset": job.dataset, "variant": job.variant,
            "method": variant.method, "params": variant.params, "metrics": list(exp.config["metrics"]),
            "repeat": job.repeat, "seed": seed, "threads": exp.threads, "protocol": exp.protocol,
            # n, p and d only: a cost-model hint of the registry (labels_per_row, input_density) changes no result,
            # so it must not change the specification either (Snakemake would rerun every job of the dataset)
            "expected_shape": checked_shape(get_entry(self.registry, job.dataset).get("shape")),
            **({"tune": {**variant.tune, "seed": exp.seed}} if variant.tune else {}),
            **({"plugins": list(self.config["plugins"])} if self.config.get("plugins") else {}),
            **({"revisions": revisions} if revisions else {}),
        }

    def tune_spec(self, job: TuneJob) -> dict:
        """What a candidate-chunk job needs: the run specification of its split plus its candidates."""
        spec = self.run_spec(Job(job.experiment, job.dataset, job.variant, job.repeat))
        exp = self.experiments[job.experiment]
        variant = exp.variant(job.variant)
        cands = exp.candidates(variant)
        rows = tuning.chunks(len(cands), variant.tune["chunk"])[job.chunk]
        return {**spec, "chunk": job.chunk, "candidates": [cands[i] for i in rows]}

    @staticmethod
    def tune_dir(job) -> str:
        return f"results/tuning/{job.experiment}/{job.dataset}/{job.variant}/repeat-{job.repeat}"

    def budget_spec(self, experiment: str, dataset: str, variant: str) -> dict:
        """What the budget job of a tuned variant needs: the run specification of repeat 0 and every candidate."""
        spec = self.run_spec(Job(experiment, dataset, variant, 0))
        exp = self.experiments[experiment]
        return {**spec, "candidates": exp.candidates(exp.variant(variant))}

    @staticmethod
    def budget_path(experiment: str, dataset: str, variant: str) -> str:
        return f"results/tuning/{experiment}/{dataset}/{variant}/budget.json"

    @classmethod
    def chunk_path(cls, job: TuneJob) -> str:
        return f"{cls.tune_dir(job)}/chunk-{job.chunk}.json"

    @classmethod
    def selected_path(cls, job) -> str:
        return f"{cls.tune_dir(job)}/selected.json"

    def chunk_paths(self, job: Job) -> list[str]:
        exp = self.experiments[job.experiment]
        variant = exp.variant(job.variant)
        return [self.chunk_path(TuneJob(job.experiment, job.dataset, job.variant, job.repeat, k))
                for k in range(exp.n_chunks(variant))]

    def selection_stands(self, job: Job, root: Path = Path(".")) -> bool:
        """Whether the selection of a DAG-tuned job stands without its candidate chunks: its selection file and
        its run record exist under ``root``, the record is not older than the selection, and not one of its chunk
        files exists. That is a fitted split restored from the archive, which keeps the selections and records of
        fitted splits but not their chunks (tens of MB per dataset): the workflow then neither tunes nor refits
        it. A split with any chunk file on disk is tuned as usual (its missing chunks are scored, then selected
        again); deleting the selection file makes a standing split tune again."""
        selected, record = root / self.selected_path(job), root / self.record_path(job)
        if not (selected.is_file() and record.is_file()):
            return False
        if any((root / path).exists() for path in self.chunk_paths(job)):
            return False
        return record.stat().st_mtime >= selected.stat().st_mtime


def merge_config(base: dict, update: dict) -> dict:
    """Recursive merge as Snakemake does for ``--configfile`` and ``--config``: mappings merge key by key, other
    values replace."""
    out = dict(base)
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge_config(out[key], value)
        else:
            out[key] = value
    return out


def load_config(configfiles: list[str | Path], overrides: dict | None = None) -> tuple[dict, str]:
    """The configuration Snakemake runs with: the files merged in order (nested mappings key by key), then
    ``overrides`` (``--config``) merged on top; returns it with a description of its source."""
    config: dict = {}
    for path in configfiles:
        config = merge_config(config, load_yaml(path) or {})
    config = merge_config(config, overrides or {})
    return config, ", ".join(map(str, configfiles)) or "config"


def load_plan(configfiles: list[str | Path], overrides: dict | None = None,
              schema_dir: str | Path | None = None) -> Plan:
    """Merge configuration files and overrides as Snakemake does, then expand."""
    config, source = load_config(configfiles, overrides)
    return Plan(config, source=source, schema_dir=schema_dir)
