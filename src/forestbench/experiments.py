"""Experiments are data: expand the configuration into method variants and fit jobs.

An experiment names datasets, a split protocol, methods (registry name + parameters + an optional grid whose
cartesian product gives one *variant* per combination), metrics, reports and the published table to compare with.
A job is one (experiment, dataset, variant, repeat). This module is shared by the Snakefile, the CLI and ``plan``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from forestbench.datasets.registry import get_entry, is_available, load_registry, protocol_of
from forestbench.datasets.splits import n_splits_of
from forestbench.errors import ConfigError
from forestbench.methods import PLANNED, get_method, is_planned
from forestbench.metrics import get_metric
from forestbench.validation import load_yaml, validate
from forestbench.variants import NAME_PATTERN, expand_entry

DEFAULT_REGISTRY = "config/datasets.yaml"


@dataclass(frozen=True)
class Variant:
    name: str
    method: str
    params: dict = field(hash=False)


@dataclass(frozen=True)
class Job:
    experiment: str
    dataset: str
    variant: str
    repeat: int


def expand_variants(experiment: str, methods: list[dict]) -> list[Variant]:
    variants: list[Variant] = []
    for entry in methods:
        if not is_planned(entry["method"]):
            get_method(entry["method"])  # fail early on an unknown method
        variants += [Variant(name, entry["method"], params) for name, params in expand_entry(experiment, entry)]
    seen = set()
    for v in variants:
        if v.name in seen:
            raise ConfigError(f"experiment {experiment}: two method configurations are both named {v.name!r}; "
                              "give them distinct names")
        seen.add(v.name)
    return variants


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

    def jobs(self) -> list[Job]:
        return [Job(self.name, d, v.name, r) for d in self.datasets for v in self.runnable_variants
                for r in range(self.repeats[d])]

    def variant(self, name: str) -> Variant:
        for v in self.variants:
            if v.name == name:
                return v
        raise ConfigError(f"experiment {self.name}: no variant {name!r}")


class Plan:
    """The expanded configuration: experiments, their jobs and file paths."""

    def __init__(self, config: dict, source: str = "config", schema_dir: str | Path | None = None,
                 registry: dict | None = None):
        validate(config, "config", source, schema_dir)
        self.config = config
        self.registry = registry if registry is not None else load_registry(
            config.get("datasets_registry", DEFAULT_REGISTRY), schema_dir)
        self.protocols = config.get("protocols", {})
        select = config.get("select", {})
        self.experiments: dict[str, ExperimentPlan] = {}
        wanted = select.get("experiments")
        for name, cfg in config["experiments"].items():
            if wanted and name not in wanted:
                continue
            self.experiments[name] = self._expand(name, cfg, select)
        if wanted:
            missing = set(wanted) - set(config["experiments"])
            if missing:
                raise ConfigError(f"{source}: select.experiments names unknown experiment(s) {sorted(missing)}")
        self._check_selection(config, select, source)

    def _check_selection(self, config: dict, select: dict, source: str) -> None:
        """A select.variants / select.datasets name that no selected experiment has is an error listing the known
        names (a typo would otherwise select nothing and succeed)."""
        wanted = select.get("experiments")
        scope = [cfg for name, cfg in config["experiments"].items() if not wanted or name in wanted]
        known = {"datasets": sorted({d for cfg in scope for d in cfg.get("datasets", [])}),
                 "variants": sorted({v.name for name, cfg in config["experiments"].items()
                                     if not wanted or name in wanted
                                     for v in expand_variants(name, cfg["methods"])})}
        for key, names in known.items():
            unknown = sorted(set(select.get(key) or []) - set(names))
            if unknown:
                raise ConfigError(f"{source}: select.{key} names unknown {key[:-1]}(s) {unknown}; known: "
                                  f"{', '.join(names)}")

    def _expand(self, name: str, cfg: dict, select: dict) -> ExperimentPlan:
        for metric in cfg["metrics"]:
            get_metric(metric)
        variants = expand_variants(name, cfg["methods"])
        if select.get("variants"):
            variants = [v for v in variants if v.name in select["variants"]]
        datasets, unavailable, repeats = [], {}, {}
        max_repeats = cfg.get("max_repeats", self.config.get("max_repeats"))
        for dataset in cfg["datasets"]:
            if select.get("datasets") and dataset not in select["datasets"]:
                continue
            entry = get_entry(self.registry, dataset)
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
        return lines

    # ------------------------------------------------------------------ what a job needs
    def protocol_spec(self, dataset: str, protocol: str) -> dict:
        return protocol_of(self.registry, dataset, protocol, self.protocols)

    def run_spec(self, job: Job) -> dict:
        exp = self.experiments[job.experiment]
        variant = exp.variant(job.variant)
        seed = int(np.random.SeedSequence([exp.seed, job.repeat]).generate_state(1)[0])
        return {
            "experiment": job.experiment, "dataset": job.dataset, "variant": job.variant,
            "method": variant.method, "params": variant.params, "metrics": list(exp.config["metrics"]),
            "repeat": job.repeat, "seed": seed, "threads": exp.threads, "protocol": exp.protocol,
            "expected_shape": get_entry(self.registry, job.dataset).get("shape"),
        }


def load_plan(configfiles: list[str | Path], overrides: dict | None = None,
              schema_dir: str | Path | None = None) -> Plan:
    """Merge configuration files (later ones win, key by key at the top level), then expand."""
    config: dict = {}
    for path in configfiles:
        config.update(load_yaml(path))
    config.update(overrides or {})
    return Plan(config, source=", ".join(map(str, configfiles)), schema_dir=schema_dir)
