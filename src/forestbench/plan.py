"""``python -m forestbench plan``: how many jobs a configuration makes, and how many core-hours they will take.

Jobs are counted per workflow rule from the experiments expansion (``forestbench.experiments``), as the Snakefile
derives them: one ``fetch`` per raw file of a downloaded dataset, one ``prepare`` per dataset, one ``split`` per
(dataset, protocol), one ``fit`` per (experiment, dataset, runnable variant, repeat), one ``collect`` and one
``report_experiment`` per experiment with fits, and one ``report_index``. This counts everything a fresh run does;
Snakemake skips what is already up to date. With ``--chunk N`` (the SLURM profile's
``group-components: fit_{experiment}=N``) the fits of an experiment travel in ceil(fits / N) SLURM jobs.

Core-hours of a fit are ``threads x wall``; the wall time of a (experiment, dataset, variant) comes from, in order:

1. ``recorded``: the mean ``fit_wall_s + predict_wall_s`` of its existing run records under ``--results``, plus the
   job start-up (``resources.STARTUP_S``);
2. ``recorded-elsewhere``: the same from records of the same (dataset, variant) in other experiments;
3. ``model``: the stated cost model of ``forestbench.resources`` (``job_seconds``) from the registry shape, with the
   protocol's training rows in place of the whole ``n`` (``training_shape``), and the variant's parameters.

A tuned variant's candidate-chunk jobs (``tune.mode: dag``) are charged by the method's cost hook, scaled by what
the candidates already scored under ``results/tuning/<experiment>/<dataset>/<variant>/candidates`` took
(``recorded``: measured seconds / modelled seconds over those candidates, so a first part of the grid calibrates
the rest, whichever candidates it holds). Run a few chunks, then plan, to size the remainder.

Each other job (fetch, prepare, split, collect, reports) is charged one start-up of one core. The requested SLURM resources (memory and
time limit of attempt 1, from ``forestbench.resources``) are listed too, so that an allocation can be sized.

Configuration files are read as the Snakefile reads them: ``--configfile`` files replace the default
``config/config.yaml`` (``--base``), and several ``--configfile`` merge in order, nested mappings key by key (as
Snakemake merges them); without ``--configfile`` the default is planned.
"""
from __future__ import annotations

import json
import math
import sys
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path

from forestbench import resources as res
from forestbench.errors import ConfigError, DataError

DEFAULT_BASE = "config/config.yaml"
RULES = ("fetch", "prepare", "split", "budget", "tune", "select", "fit", "collect", "report_experiment", "report_index")


def load_config(configfiles: list[str | Path], base: str | Path | None = DEFAULT_BASE,
                overrides: dict | None = None) -> tuple[dict, str]:
    """The configuration Snakemake would run with: the ``configfiles`` merged in order, else ``base`` alone, then
    the ``--config`` overrides."""
    from forestbench.experiments import load_config as merged

    files = [Path(f) for f in configfiles] or ([Path(base)] if base else [])
    return merged(files, overrides)


def parse_overrides(items: list[str]) -> dict:
    """``--config`` items as the Snakefile reads them: parsed as Snakemake parses them, then each string that
    stands where the schema wants another type read as that type (``forestbench.validation``)."""
    from forestbench.validation import coerce_overrides, parse_cli_config

    return coerce_overrides(parse_cli_config(items))


@dataclass
class VariantEstimate:
    experiment: str
    dataset: str
    variant: str
    fits: int
    threads: int
    wall_s: float  # per fit job, start-up included
    source: str  # recorded | recorded-elsewhere | model
    n_records: int
    mem_mb: int  # request of attempt 1
    runtime_min: int  # request of attempt 1

    @property
    def core_hours(self) -> float:
        return self.fits * self.threads * self.wall_s / 3600.0


@dataclass
class PlanReport:
    jobs: dict[str, int]
    slurm_jobs: dict[str, int]
    chunk: int
    variants: list[VariantEstimate] = field(default_factory=list)
    other_core_hours: float = 0.0

    @property
    def fit_core_hours(self) -> float:
        return sum(v.core_hours for v in self.variants)

    @property
    def core_hours(self) -> float:
        return self.fit_core_hours + self.other_core_hours

    def to_dict(self) -> dict:
        return {
            "jobs": self.jobs, "slurm_jobs": self.slurm_jobs, "chunk": self.chunk,
            "core_hours": self.core_hours, "fit_core_hours": self.fit_core_hours,
            "other_core_hours": self.other_core_hours,
            "variants": [dict(asdict(v), core_hours=v.core_hours) for v in self.variants],
        }


def read_timings(results: str | Path) -> dict[tuple[str, str, str], list[float]]:
    """``{(experiment, dataset, variant): [fit_wall_s + predict_wall_s, ...]}`` of the run records under
    ``results/runs``; a record that is not valid JSON or lacks the timing fields is an error naming the file."""
    timings: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    root = Path(results) / "runs"
    if not root.is_dir():
        return {}
    for path in sorted(root.rglob("*.json")):
        if path.name.startswith("."):  # a temporary file of a record being written (or of a killed job)
            continue
        try:
            record = json.loads(path.read_text())
            key = (str(record["experiment"]), str(record["dataset"]), str(record["variant"]))
            wall = float(record["fit_wall_s"]) + float(record.get("predict_wall_s") or 0.0)
        except (OSError, ValueError) as exc:
            raise DataError(f"run record {path} is unreadable ({exc}); delete it or rerun its job") from None
        except (KeyError, TypeError) as exc:
            raise DataError(f"run record {path} lacks the field {exc} (experiment, dataset, variant, "
                            "fit_wall_s are needed)") from None
        if not math.isfinite(wall) or wall < 0:
            raise DataError(f"run record {path}: fit_wall_s + predict_wall_s = {wall} is not a duration")
        timings[key].append(wall)
    return dict(timings)


def _selection_rows(variant, n: int) -> tuple[int, int]:
    """``(validation folds, rows each candidate fit sees)`` of a tuned variant on ``n`` training rows."""
    validation = variant.tune["validation"]
    folds = int(validation.get("kfold", 1))
    fraction = (folds - 1) / folds if "kfold" in validation else 1.0 - float(validation["holdout"])
    return folds, max(1, int(n * fraction))


def variant_cost(exp, variant, shape: dict | None, sparse: bool) -> tuple[res.Cost, res.Cost | None]:
    """``(cost of the final fit job, cost of one candidate-chunk job or None)`` of a variant on a dataset shape,
    from its method's cost hook. An in-job selection (``tune.mode: inner``) adds every candidate's validation
    fits to the final fit; a DAG selection charges them to its chunk jobs. A ``tune.budget`` caps the candidates'
    and the refit's cost at its multiple of one reference stage."""
    from forestbench.methods import get_method

    method = get_method(variant.method)
    n, p, d = res.shape_of(shape)
    final = method.cost_of(n, p, d, variant.params, sparse=sparse)
    if not variant.tune:
        return final, None
    folds, n_fit = _selection_rows(variant, n)
    costs = [method.cost_of(n_fit, p, d, {**variant.params, **c}, sparse=sparse) for c in exp.candidates(variant)]
    budget = variant.tune.get("budget")
    if budget:
        # a budget caps every candidate's staged parameter so that its fit lasts at most `multiple` stages of the
        # reference method (the budget job measures that time; here the reference's cost model gives it), and the
        # refit of the selection runs at most as many stages
        reference = budget["reference"]
        one_stage = get_method(reference["method"]).cost_of(
            n_fit, p, d, {**reference["params"], variant.tune["staged"]: 1}, sparse=sparse)
        cap = budget["multiple"] * one_stage.fit_seconds
        costs = [res.Cost(min(c.fit_seconds, cap), c.model_mb) for c in costs]
        final = res.Cost(min(final.fit_seconds, cap * n / n_fit), final.model_mb)
    search = res.Cost(folds * sum(c.fit_seconds for c in costs), max(c.model_mb for c in costs))
    if variant.tuned_in_dag:
        per_chunk = search.fit_seconds / max(1, exp.n_chunks(variant))
        return final, res.Cost(per_chunk, search.model_mb)
    return res.Cost(final.fit_seconds + search.fit_seconds, max(final.model_mb, search.model_mb)), None


def training_shape(shape: dict | None, protocol: dict) -> dict | None:
    """The registry ``shape`` with ``n`` replaced by the rows a fit sees under ``protocol`` (its training part:
    300 of friedman1-chain's 4300 rows under the boosting paper's protocol), which is what a fit's time depends on.
    A ``given`` split's training part is known only from the data: the whole ``n`` then stands for it, an upper
    bound. Memory requests keep the whole shape, since a fit job loads every row of the prepared data."""
    from forestbench.tuning import training_rows

    if not shape:
        return shape
    rows = training_rows(protocol, shape)
    return shape if rows is None else {**shape, "n": rows}


def candidate_calibration(results: str | Path, experiment: str, dataset: str, variant, exp, shape: dict | None,
                          sparse: bool) -> tuple[float, int]:
    """``(measured / modelled seconds, number of candidates)`` over the candidates of a tuned variant already scored
    under ``results/tuning/<experiment>/<dataset>/<variant>/candidates`` (every repeat); ``(1.0, 0)`` when none is.
    A candidate file is the chunk job's cache: its ``params`` and ``fit_seconds`` (summed over validation folds)."""
    from forestbench.methods import get_method

    folder = Path(results) / "tuning" / experiment / dataset / variant.name / "candidates"
    if not folder.is_dir():
        return 1.0, 0
    method = get_method(variant.method)
    n, p, d = res.shape_of(shape)
    folds, n_fit = _selection_rows(variant, n)
    measured = modelled = 0.0
    count = 0
    for path in sorted(folder.glob("*.json")):
        if path.name.startswith("."):  # a cache file being written
            continue
        try:
            doc = json.loads(path.read_text())
            seconds, params = float(doc["fit_seconds"]), dict(doc["params"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise DataError(f"tuning candidate {path} is unreadable ({exc}); delete it and rerun its chunk") from None
        if not (math.isfinite(seconds) and seconds >= 0.0):
            raise DataError(f"tuning candidate {path}: fit_seconds = {seconds} is not a duration; delete it and "
                            "rerun its chunk")
        model = folds * method.cost_of(n_fit, p, d, {**variant.params, **params}, sparse=sparse).fit_seconds
        measured += seconds
        modelled += model
        count += 1
    if not count or modelled <= 0.0:
        return 1.0, 0
    return measured / modelled, count


def _raw_file_count(name: str, entry: dict) -> int:
    if (entry.get("source") or {}).get("kind") != "download":
        return 0
    from forestbench.datasets.download import remote_files, unavailable_reason

    return 0 if unavailable_reason(name, entry) else len(remote_files(entry))


def make_plan(plan, results: str | Path = "results", chunk: int = 1) -> PlanReport:
    """Count jobs and estimate core-hours for an expanded ``forestbench.experiments.Plan``."""
    from forestbench.datasets.registry import get_entry

    if chunk < 1:
        raise ConfigError(f"--chunk must be >= 1 (fits per SLURM job), got {chunk}")
    timings = read_timings(results)
    by_dataset_variant: dict[tuple[str, str], list[float]] = defaultdict(list)
    for (_, dataset, variant), walls in timings.items():
        by_dataset_variant[(dataset, variant)].extend(walls)

    datasets, splits = set(), set()
    jobs = dict.fromkeys(RULES, 0)
    slurm_fit_jobs = 0
    variants: list[VariantEstimate] = []
    for name, exp in plan.experiments.items():
        n_fits = 0
        if not exp.jobs():
            continue
        for dataset in exp.datasets:
            datasets.add(dataset)
            splits.add((dataset, exp.protocol))
            entry = get_entry(plan.registry, dataset)
            shape, sparse = entry.get("shape"), res.is_sparse_entry(entry)
            fit_shape = training_shape(shape, plan.protocol_spec(dataset, exp.protocol))
            for variant in exp.runnable_variants:
                fits = exp.repeats[dataset]
                n_fits += fits
                own = timings.get((name, dataset, variant.name), [])
                other = by_dataset_variant.get((dataset, variant.name), [])
                final, chunk_cost = variant_cost(exp, variant, fit_shape, sparse)
                if own:
                    wall, source, n_rec = res.STARTUP_S + sum(own) / len(own), "recorded", len(own)
                elif other:
                    wall, source, n_rec = res.STARTUP_S + sum(other) / len(other), "recorded-elsewhere", len(other)
                else:
                    wall = res.cost_job_seconds(final, threads=exp.threads)
                    source, n_rec = "model", 0
                req = res.fit_requests(shape, variant.params, 1, cost=final, threads=exp.threads, sparse=sparse)
                variants.append(VariantEstimate(name, dataset, variant.name, fits, exp.threads, wall, source,
                                                n_rec, req["mem_mb"], req["runtime"]))
                if variant.tune and variant.tune["budget"]:
                    jobs["budget"] += 1
                if chunk_cost is not None:
                    n_chunks = fits * exp.n_chunks(variant)
                    jobs["tune"] += n_chunks
                    jobs["select"] += fits
                    req = res.fit_requests(shape, variant.params, 1, cost=chunk_cost, threads=exp.threads,
                                           sparse=sparse)
                    factor, n_done = candidate_calibration(results, name, dataset, variant, exp, fit_shape,
                                                           sparse)
                    if n_done:
                        chunk_cost = res.Cost(chunk_cost.fit_seconds * factor, chunk_cost.model_mb)
                    variants.append(VariantEstimate(name, dataset, f"{variant.name} (tuning)", n_chunks,
                                                    exp.threads, res.cost_job_seconds(chunk_cost, threads=exp.threads),
                                                    "recorded" if n_done else "model", n_done, req["mem_mb"],
                                                    req["runtime"]))
        jobs["fit"] += n_fits
        slurm_fit_jobs += math.ceil(n_fits / chunk) if n_fits else 0
        jobs["collect"] += 1
        jobs["report_experiment"] += 1
    jobs["report_index"] = 1
    jobs["fetch"] = sum(_raw_file_count(dataset, get_entry(plan.registry, dataset)) for dataset in datasets)
    jobs["prepare"] = len(datasets)
    jobs["split"] = len(splits)
    slurm_jobs = dict(jobs, fit=slurm_fit_jobs)  # candidate chunks are SLURM jobs of their own
    other = (sum(jobs.values()) - jobs["fit"]) * res.STARTUP_S / 3600.0
    return PlanReport(jobs, slurm_jobs, chunk, variants, other)


def suggest_chunk(report: PlanReport, target_minutes: float = 30.0) -> int:
    """Fits per SLURM job so that a chunk of the average fit lasts about ``target_minutes`` (at least 1)."""
    fits = sum(v.fits for v in report.variants)
    if not fits:
        return 1
    mean_wall = sum(v.fits * v.wall_s for v in report.variants) / fits
    return max(1, int(target_minutes * 60.0 // mean_wall))


def format_report(report: PlanReport, target_minutes: float = 30.0) -> str:
    lines = ["Jobs per rule (SLURM jobs with chunk %d):" % report.chunk]
    for rule in RULES:
        lines.append(f"  {rule:<17} {report.jobs[rule]:>8}  ({report.slurm_jobs[rule]} SLURM job(s))")
    lines.append(f"  {'total':<17} {sum(report.jobs.values()):>8}  ({sum(report.slurm_jobs.values())} SLURM job(s))")
    lines.append("")
    lines.append("Fit estimates (wall per fit job incl. start-up; requests of attempt 1):")
    header = f"  {'experiment':<22} {'dataset':<20} {'variant':<24} {'fits':>5} {'thr':>3} {'wall/fit':>10} " \
             f"{'core-h':>9} {'mem_mb':>7} {'time':>6}  source"
    lines.append(header)
    for v in report.variants:
        lines.append(f"  {v.experiment:<22} {v.dataset:<20} {v.variant:<24} {v.fits:>5} {v.threads:>3} "
                     f"{_duration(v.wall_s):>10} {v.core_hours:>9.3f} {v.mem_mb:>7} {v.runtime_min:>5}m  "
                     f"{v.source}" + (f" ({v.n_records} {'candidates' if v.variant.endswith('(tuning)') else 'runs'})"
                                      if v.n_records else ""))
    sources = defaultdict(int)
    for v in report.variants:
        sources[v.source] += v.fits
    lines.append("")
    lines.append(f"Core-hours: {report.core_hours:.2f} (fits {report.fit_core_hours:.2f}, other jobs "
                 f"{report.other_core_hours:.2f}); fits estimated from "
                 + ", ".join(f"{k}: {n}" for k, n in sorted(sources.items())))
    if any(v.source == "model" for v in report.variants):
        lines.append("  model: forestbench.resources.job_seconds = start-up "
                     f"{res.STARTUP_S:.0f} s + C_FIT x trees x candidate features x n x levels (log2 n, or the depth/leaf "
                     "cap) x (1 + d/"
                     f"{res.D_HALF:.0f}) x (1 + {res.PREDICT_FRACTION}), C_FIT = {res.C_FIT:g} s "
                     "(measured with scikit-learn's RF); other methods use their own cost hooks; records of "
                     "earlier runs replace the model")
    if report.variants:
        mem = max(v.mem_mb for v in report.variants)
        lines.append(f"Largest fit request: {mem} MB. Suggested chunk for ~{target_minutes:.0f}-minute SLURM jobs: "
                     "--group-components 'fit_{experiment}=" + f"{suggest_chunk(report, target_minutes)}'")
    return "\n".join(lines)


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.1f}s"
    if seconds < 7200:
        return f"{seconds / 60:.1f}m"
    return f"{seconds / 3600:.1f}h"


def _run(args) -> int:
    from forestbench.experiments import Plan

    configfiles = [f for group in args.configfile for f in group]
    config, source = load_config(configfiles, args.base, parse_overrides([c for g in args.config for c in g]))
    plan = Plan(config, source=source)
    report = make_plan(plan, results=args.results, chunk=args.chunk)
    if args.json:
        print(json.dumps(report.to_dict(), indent=2, sort_keys=True))
    else:
        print(format_report(report, args.target_minutes))
    sys.stdout.flush()
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "plan", help="count jobs per rule and estimate core-hours for a configuration (size a cluster allocation)")
    p.add_argument("--configfile", action="append", nargs="+", default=[], metavar="FILE",
                   help="configuration file(s), as given to `snakemake --configfile` (they replace --base)")
    p.add_argument("--base", default=DEFAULT_BASE,
                   help=f"the Snakefile's default configuration, planned without --configfile (default {DEFAULT_BASE})")
    p.add_argument("--config", action="append", nargs="+", default=[], metavar="KEY=VALUE",
                   help="override configuration keys as `snakemake --config` does, e.g. 'select={available: true}'")
    p.add_argument("--results", default="results", help="where earlier run records are (results/runs/...)")
    p.add_argument("--chunk", type=int, default=1, help="fits per SLURM job (the profile's group-components fit=N)")
    p.add_argument("--target-minutes", type=float, default=30.0, help="SLURM job length the chunk suggestion aims at")
    p.add_argument("--json", action="store_true", help="print the plan as JSON")
    p.set_defaults(func=_run)
