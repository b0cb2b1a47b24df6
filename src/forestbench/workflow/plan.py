"""``python -m forestbench plan``: how many jobs a configuration makes, how many core-hours they will take, and how
to bundle them into SLURM jobs.

Jobs are counted per workflow rule from the experiments expansion (``forestbench.workflow.experiments``), as the
Snakefile derives them: one ``fetch`` per raw file of a downloaded dataset, one ``prepare`` per dataset, one ``split``
per (dataset, protocol), one ``fit`` per (experiment, dataset, runnable variant, repeat), the ``budget``, ``tune`` and
``select`` jobs of DAG-tuned variants, one ``collect`` and one ``report_experiment`` per experiment with fits, and
one ``report_index``. This counts everything a fresh run does; Snakemake skips what is already up to date. The SLURM
profile groups the fit and the tune jobs per experiment (``fit_{experiment}``, ``tune_{experiment}``): with chunks
of N, the fits of an experiment travel in ceil(fits / N) SLURM jobs, and so do its tune jobs.

Core-hours of a job are ``threads x wall``; the wall time of a (experiment, dataset, variant) comes from, in order:

1. ``recorded``: the mean ``(fit_cpu_s + predict_cpu_s) / threads`` of its own run records under ``--results``
   and in the results archive ``--archive`` (the repository's ``archive/`` by default: a fresh clone plans from
   what the archived runs measured) (what the fit takes on cores of its own: a record made on a loaded machine has
   a longer wall time, not more CPU; ``fit_wall_s + predict_wall_s`` for a record without CPU times), plus the job
   start-up (``resources.STARTUP_S``);
2. ``recorded-elsewhere``: the same from records of other experiments or variant names;
3. ``model``: the method's cost hook (``forestbench.workflow.methods``, ``forestbench.workflow.resources``) on the
   registry shape, with the protocol's training rows in place of the whole ``n`` (``training_shape``), and the
   variant's parameters;
4. ``model-scaled``: the model, times the median ratio recorded / model of the variants of the same method,
   dataset and threads that 1-2 estimate (``scale_model_estimates``): the first folds of a sweep size the rest.

A record counts only when its method, parameters, threads and tuning specification (``cost_signature``) and its
training rows (``rows_match``) are the planned fit's: a demo's 10-tree records do not stand for a 150-tree forest.
The time request of a fit covers ``resources.RUNTIME_MARGIN`` x the larger of the model's estimate and the mean of
its own matching records, and its memory request ``resources.MEM_MARGIN`` x the larger of the modelled peak and the
largest peak resident memory of those records (``recorded_fit``, which the workflow's resources call too): a
model that under-charges a dataset is corrected by the first folds that ran, here or on another machine.

A tuned variant's candidate-chunk jobs (``tune.mode: dag``) are charged by the method's cost hook, scaled by what
the candidates already scored under ``results/tuning/<experiment>/<dataset>/<variant>/candidates`` took
(``recorded``: measured seconds / modelled seconds over those candidates, so a first part of the grid calibrates
the rest, whichever candidates it holds). Run a few chunks, then plan, to size the remainder.

A budget job is charged its timed fits (``budget_cost``). Each other job (fetch, prepare, split, select, collect,
reports) is charged one start-up of one core.
Requests (memory and time of attempt 1) are capped at the partition limits (``resources.Limits``) as the workflow
caps them, and the capped ones are flagged. Per experiment, a chunk size is suggested so that a SLURM job lasts
about ``--target-minutes`` (``summarize``), and the experiments are gathered into Snakemake runs by chunk size
(``suggested_runs``).

Configuration files are read as the Snakefile reads them: ``--configfile`` files replace the default
``config/config.yaml`` (``--base``), and several ``--configfile`` merge in order, nested mappings key by key (as
Snakemake merges them); without ``--configfile`` the default is planned.
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import NamedTuple

from forestbench._io import read_json
from forestbench.workflow import resources as res
from forestbench.errors import ConfigError, DataError
from forestbench.workflow.tuning import SKLEARN_CLOCKS

DEFAULT_BASE = "config/config.yaml"
RULES = ("fetch", "prepare", "split", "budget", "tune", "select", "fit", "collect", "report_experiment", "report_index")
#: rules that run on the host Snakemake runs on, never as SLURM jobs (``localrules`` of workflow/rules/common.smk)
LOCAL_RULES = ("fetch", "fetch_all", "select", "collect", "report_experiment", "report_index")


def load_config(configfiles: list[str | Path], base: str | Path | None = DEFAULT_BASE,
                overrides: dict | None = None) -> tuple[dict, str]:
    """The configuration Snakemake would run with: the ``configfiles`` merged in order, else ``base`` alone, then
    the ``--config`` overrides."""
    from forestbench.workflow.experiments import load_config as merged

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
    fits: int  # jobs of this row: fit runs, or candidate-chunk jobs of a "(tuning)" row
    threads: int
    wall_s: float  # per job, start-up included
    source: str  # recorded | recorded-elsewhere | model | model-scaled
    n_records: int
    mem_mb: int  # request of attempt 1, capped at the partition limits
    runtime_min: int  # request of attempt 1, capped at the partition limits
    rule: str = "fit"  # fit | tune
    over: list[str] = field(default_factory=list)  # what the uncapped request of attempt 1 asked beyond the limits
    ignored_records: int = 0  # records of this (experiment, dataset, variant) whose parameters differ from the plan's
    default_cost: bool = False  # its method registers no cost hook (``resources.default_cost``)
    method: str = ""
    model_wall_s: float = float("nan")  # the cost model's wall per job, start-up included, whatever the source
    scale: float | None = None  # source "model-scaled": the factor applied to the model (scale_model_estimates)
    done: int = 0  # jobs of this row already done (``done_fits``, ``done_chunks``): a resumed run skips them

    @property
    def remaining_core_hours(self) -> float:
        return max(0, self.fits - self.done) * self.threads * self.wall_s / 3600.0

    @property
    def core_hours(self) -> float:
        return self.fits * self.threads * self.wall_s / 3600.0

    @property
    def short(self) -> bool:
        """Whether the time request is below the estimate x ``RUNTIME_MARGIN`` (a partition cap, or an estimate
        from other experiments' or variants' records that the rule does not read: recorded-elsewhere,
        model-scaled)."""
        return self.runtime_min * 60.0 < res.RUNTIME_MARGIN * self.wall_s - 60.0


@dataclass
class ExperimentSummary:
    experiment: str
    fits: int
    tune_jobs: int
    fit_core_hours: float
    tune_core_hours: float
    fit_chunk: int  # suggested fit runs per SLURM job
    tune_chunk: int  # suggested candidate-chunk jobs per SLURM job (1 when there are none)
    max_mem_mb: int
    max_runtime_min: int
    recorded_jobs: int  # jobs whose estimate comes from run records
    exclusive: bool  # a timing experiment: its SLURM jobs ask for whole nodes
    scaled_jobs: int = 0  # jobs estimated by the model scaled by other variants' records (scale_model_estimates)
    remaining_jobs: int = 0  # fit and tune jobs not done yet (VariantEstimate.done)
    remaining_core_hours: float = 0.0

    @property
    def core_hours(self) -> float:
        return self.fit_core_hours + self.tune_core_hours

    @property
    def slurm_jobs(self) -> int:
        return math.ceil(self.fits / self.fit_chunk) + (math.ceil(self.tune_jobs / self.tune_chunk)
                                                        if self.tune_jobs else 0)


@dataclass
class PlanReport:
    jobs: dict[str, int]
    slurm_jobs: dict[str, int]
    chunk: int
    variants: list[VariantEstimate] = field(default_factory=list)
    other_core_hours: float = 0.0
    tune_chunk: int = 0
    limits: res.Limits = field(default_factory=res.Limits)
    experiment_jobs: dict[str, dict[str, int]] = field(default_factory=dict)  # experiment -> {"fit", "tune"}
    timing: dict[str, bool] = field(default_factory=dict)  # experiment -> exclusive nodes
    budget_core_hours: float = 0.0   # the budget jobs' timed fits (budget_cost), start-up included

    @property
    def fit_core_hours(self) -> float:
        """Core-hours of the fit jobs and of the candidate-chunk jobs."""
        return sum(v.core_hours for v in self.variants)

    @property
    def core_hours(self) -> float:
        return self.fit_core_hours + self.budget_core_hours + self.other_core_hours

    def to_dict(self, target_minutes: float = 30.0, cores: int = 4) -> dict:
        summaries = summarize(self, target_minutes, cores)
        return {
            "jobs": self.jobs, "slurm_jobs": self.slurm_jobs, "chunk": self.chunk, "tune_chunk": self.tune_chunk,
            "core_hours": self.core_hours, "fit_core_hours": self.fit_core_hours,
            "other_core_hours": self.other_core_hours, "budget_core_hours": self.budget_core_hours,
            "limits": {"mem_mb": self.limits.mem_mb, "runtime_min": self.limits.runtime_min},
            "runtime_margin": res.RUNTIME_MARGIN,
            "experiments": [dict(asdict(s), core_hours=s.core_hours, slurm_jobs=s.slurm_jobs) for s in summaries],
            "suggested_runs": suggested_runs(summaries),
            "slurm_jobs_suggested": sum(s.slurm_jobs for s in summaries) + sum(
                n for rule, n in self.slurm_jobs.items() if rule not in ("fit", "tune")),
            "flagged": [dict(asdict(v), core_hours=v.core_hours) for v in flagged(self)],
            "variants": [dict(asdict(v), core_hours=v.core_hours, short=v.short) for v in self.variants],
        }


# ------------------------------------------------------------------------------------------------------------------
# Run records and what they calibrate

@dataclass(frozen=True)
class TimedRecord:
    """What a run record tells the plan: where it ran, how long, and the parameters its time depends on."""

    path: str
    experiment: str
    dataset: str
    variant: str
    wall_s: float  # fit_wall_s + predict_wall_s
    signature: str | None  # cost_signature of the record; None when the record lacks the fields
    n_train: int | None
    protocol: str | None
    # (fit_cpu_s + predict_cpu_s) / threads: the fit's duration on a machine it has to itself. A record made while
    # other work shared the cores has a wall time longer than that (by the load), not more CPU: core-hours are
    # charged from this; the wall time stays the floor of the time request. The wall time when a record lacks CPU.
    busy_s: float = float("nan")
    # the fit process's peak resident memory (``peak_rss_mb``, MB); None when the record lacks it
    peak_mb: float | None = None
    archived: bool = False  # read from the repository's archive rather than from --results


class RecordedFit(NamedTuple):
    """What a variant's own matching run records say of its next fit job: the mean wall time (start-up included)
    and the largest peak resident memory (MB); None where no record (or no record with the field) matches."""

    wall_s: float | None
    peak_mb: float | None


def cost_signature(method, params, threads, tune) -> str | None:
    """What a fit's time depends on besides the dataset and its rows: the method, every parameter, the threads and
    the tuning specification (its seed aside), as canonical JSON. Two runs calibrate each other only when these are
    equal; anything else (another forest size, cascade depth, ``max_features``, grid) is left to the model."""
    if method is None or params is None or threads is None:
        return None
    tune = {k: v for k, v in (tune or {}).items() if k != "seed"}
    doc = {"method": method, "params": params, "threads": int(threads), "tune": tune}
    return json.dumps(json.loads(json.dumps(doc, sort_keys=True, default=str)), sort_keys=True)


def _timed_record(path: Path, archived: bool = False) -> TimedRecord:
    try:
        record = read_json(path)
        key = (str(record["experiment"]), str(record["dataset"]), str(record["variant"]))
        wall = float(record["fit_wall_s"]) + float(record.get("predict_wall_s") or 0.0)
    except (OSError, EOFError, ValueError) as exc:
        raise DataError(f"run record {path} is unreadable ({exc}); delete it or rerun its job") from None
    except (KeyError, TypeError) as exc:
        raise DataError(f"run record {path} lacks the field {exc} (experiment, dataset, variant, "
                        "fit_wall_s are needed)") from None
    if not math.isfinite(wall) or wall < 0:
        raise DataError(f"run record {path}: fit_wall_s + predict_wall_s = {wall} is not a duration")
    spec = record.get("spec") if isinstance(record.get("spec"), dict) else {}
    signature = cost_signature(record.get("method", spec.get("method")), record.get("params", spec.get("params")),
                               spec.get("threads"), spec.get("tune"))
    n_train = record.get("n_train")
    return TimedRecord(str(path), *key, wall, signature,
                       int(n_train) if isinstance(n_train, int) and not isinstance(n_train, bool) else None,
                       spec.get("protocol"), _busy_seconds(record, spec, wall), _peak_mb(record), archived)


def _peak_mb(record: dict) -> float | None:
    peak = record.get("peak_rss_mb")
    if isinstance(peak, bool) or not isinstance(peak, (int, float)) or not math.isfinite(peak) or peak <= 0:
        return None
    return float(peak)


def _busy_seconds(record: dict, spec: dict, wall: float) -> float:
    try:
        cpu = float(record["fit_cpu_s"]) + float(record.get("predict_cpu_s") or 0.0)
        threads = max(1, int(spec.get("threads") or 1))
    except (KeyError, TypeError, ValueError):
        return wall
    return cpu / threads if math.isfinite(cpu) and cpu >= 0 else wall


def read_timings(results: str | Path, archive: str | Path | None = None,
                 datasets: set[str] | None = None) -> list[TimedRecord]:
    """The run records under ``results/runs``, then those of the results archive ``archive`` (when given and
    present) that ``results`` does not hold itself; only those of ``datasets`` when given. A record that is not
    valid JSON or lacks the timing fields is an error naming the file.

    The archive (``forestbench.archive``, a later layer, which this module does not import) keeps each run record
    gzip-compressed at ``<archive>/<experiment>/runs/<dataset>/<variant>/<name>.json.gz``, the exact bytes of
    ``results/runs/<experiment>/<dataset>/<variant>/<name>.json``: a record restored into ``results`` and still in
    the archive is counted once."""
    def wanted(dataset: str) -> bool:
        return datasets is None or dataset in datasets

    out, seen = [], set()
    root = Path(results) / "runs"
    if root.is_dir():
        # a name starting with "." is a temporary file of a record being written (or of a killed job)
        for path in sorted(root.rglob("*.json")):
            parts = path.relative_to(root).parts
            if path.name.startswith(".") or (len(parts) == 4 and not wanted(parts[1])):
                continue
            out.append(_timed_record(path))
            seen.add(parts)
    root = Path(archive) if archive else None
    if root is not None and root.is_dir():
        for path in sorted(root.glob("*/runs/*/*/*.json.gz")):
            experiment, _, dataset, variant, name = path.relative_to(root).parts
            if wanted(dataset) and (experiment, dataset, variant, name[:-len(".gz")]) not in seen:
                out.append(_timed_record(path, archived=True))
    return out


def read_own_timings(results: str | Path, experiment: str, dataset: str, variant: str) -> list[TimedRecord]:
    """The run records of one (experiment, dataset, variant): one folder, cheap enough for a rule's resources."""
    folder = Path(results) / "runs" / experiment / dataset / variant
    if not folder.is_dir():
        return []
    return [_timed_record(path) for path in sorted(folder.glob("*.json")) if not path.name.startswith(".")]


def rows_match(record: TimedRecord, rows: int | None, protocol: str) -> bool:
    """Whether a record's fit saw the rows the plan charges: its training rows within 5 % of the protocol's (the
    folds of a K-fold split differ by a row), or, for a given split whose size only the data knows, the same
    protocol."""
    if rows is None:
        return record.protocol == protocol
    return record.n_train is not None and abs(record.n_train - rows) <= max(1.0, 0.05 * rows)


def matching(records, signature: str | None, rows: int | None, protocol: str) -> list[TimedRecord]:
    if signature is None:
        return []
    return [r for r in records if r.signature == signature and rows_match(r, rows, protocol)]


def recorded_fit(results: str | Path, exp, dataset: str, variant, rows: int | None) -> RecordedFit:
    """The variant's own matching run records as floors of its fit job's requests
    (``resources.fit_requests(recorded_s=..., recorded_mb=...)``), which the rule and the plan share."""
    records = read_own_timings(results, exp.name, dataset, variant.name)
    return _recorded(matching(records, cost_signature(variant.method, variant.params, exp.threads, variant.tune),
                              rows, exp.protocol))


def _recorded(records: list[TimedRecord]) -> RecordedFit:
    walls = [r.wall_s for r in records]
    peaks = [r.peak_mb for r in records if r.peak_mb is not None]
    return RecordedFit(res.STARTUP_S + sum(walls) / len(walls) if walls else None, max(peaks) if peaks else None)


def _selection_rows(variant, n: int) -> tuple[int, int]:
    """``(validation folds, rows each candidate fit sees)`` of a tuned variant on ``n`` training rows."""
    validation = variant.tune["validation"]
    folds = int(validation.get("kfold", 1))
    fraction = (folds - 1) / folds if "kfold" in validation else 1.0 - float(validation["holdout"])
    return folds, max(1, int(n * fraction))


def staged_scoring_seconds(variant, params: dict, fit_seconds: float, capped_seconds: float, n: int,
                           d: int) -> float:
    """Seconds a staged candidate spends scoring its validation rows (all folds), beyond its fits: one scored stage
    (``resources.staged_score_seconds``) per stage ``tuning.scored_stages`` scores, of the stages it runs (its
    staged parameter, fewer when a budget caps its fit at ``capped_seconds`` of the uncapped ``fit_seconds``)."""
    from forestbench.workflow.tuning import MAX_SCORED_STAGES

    staged = variant.tune.get("staged")
    total = int(params.get(staged) or 0) if staged else 0
    if total <= 0:
        return 0.0
    folds, n_fit = _selection_rows(variant, n)
    stages = total if capped_seconds >= fit_seconds or fit_seconds <= 0 else total * capped_seconds / fit_seconds
    scored = min(max(stages, 1.0), MAX_SCORED_STAGES)
    return folds * scored * res.staged_score_seconds(max(1, n - n_fit), d, variant.tune["metric"])


def variant_cost(exp, variant, shape: dict | None, sparse: bool,
                 task: str | None = None) -> tuple[res.Cost, res.Cost | None]:
    """``(cost of the final fit job, cost of one candidate-chunk job or None)`` of a variant on a dataset shape,
    from its method's cost hook. An in-job selection (``tune.mode: inner``) adds every candidate's validation
    fits to the final fit; a DAG selection charges them to its chunk jobs. A ``tune.budget`` caps the candidates'
    and the refit's cost at its multiple of one reference stage."""
    from forestbench.workflow.methods import get_method

    method = get_method(variant.method)
    n, p, d = res.shape_of(shape)
    labels, density = res.label_density(shape), res.input_density(shape)
    final = method.cost_of(n, p, d, variant.params, sparse=sparse, density=density, label_density=labels, task=task)
    if not variant.tune:
        return final, None
    folds, n_fit = _selection_rows(variant, n)
    candidates = [{**variant.params, **c} for c in exp.candidates(variant)]
    costs = [method.cost_of(n_fit, p, d, c, sparse=sparse, density=density, label_density=labels, task=task)
             for c in candidates]
    capped = costs
    budget = variant.tune.get("budget")
    if budget:
        # a budget caps every candidate's staged parameter so that its fit lasts at most `multiple` stages of the
        # reference method, and the refit of the selection runs at most as many stages. The budget job times T as
        # a fit of PROBE_STAGES stages on the training part, divided by PROBE_STAGES; the reference's cost model
        # is charged the same way (one stage alone would carry the whole presort: 2-7x a stage on the real sets)
        from forestbench.workflow.selection import MARGINAL_STAGES, PROBE_STAGES

        staged = variant.tune["staged"]
        reference = budget["reference"]
        ref_method = get_method(reference["method"])

        def probe(m, params, rows, stages, **hints):
            return m.cost_of(rows, p, d, {**params, staged: stages}, sparse=sparse, density=density,
                             **hints).fit_seconds

        if budget.get("per_stage", "average") == "average":
            cap = budget["multiple"] * probe(ref_method, reference["params"], n, PROBE_STAGES) / PROBE_STAGES
            capped = [res.Cost(min(c.fit_seconds, cap), c.model_mb) for c in costs]
        elif budget["per_stage"] in SKLEARN_CLOCKS:
            # the caps are counted in scikit-learn's tree fits (their cost model), plus the stages' per-output
            # work under sklearn_trees_plus_outputs; the capped fits run ours
            def clock(m, params, rows):
                return sklearn_stage_cost(m, params, rows, p, d, density) + (
                    output_stage_cost(m, params, rows, d) if budget["per_stage"] == "sklearn_trees_plus_outputs"
                    else 0.0)

            T = clock(ref_method, reference["params"], n)
            capped = []
            for c, cand in zip(costs, candidates):
                stages = max(1, int(budget["multiple"] * T / max(clock(method, cand, n_fit), 1e-12)))
                limit = cand.get(staged) if isinstance(cand.get(staged), int) else stages
                capped.append(res.Cost(min(c.fit_seconds, probe(method, cand, n_fit, min(stages, limit),
                                                                label_density=labels, task=task)), c.model_mb))
            # the refit runs the selected candidate's cap, on the whole training part
            cap = max(cut.fit_seconds for cut in capped)
        else:
            # T and the caps count the stages' own work; a capped fit costs its set-up on top of the budget
            def marginal(m, params, rows, **hints):
                short = probe(m, params, rows, PROBE_STAGES, **hints)
                per = max(probe(m, params, rows, MARGINAL_STAGES, **hints) - short, 0.0) / (
                    MARGINAL_STAGES - PROBE_STAGES)
                return per, max(short - PROBE_STAGES * per, 0.0)

            cap = budget["multiple"] * marginal(ref_method, reference["params"], n)[0]
            capped = [res.Cost(min(c.fit_seconds, cap + marginal(method, cand, n_fit, label_density=labels,
                                                                 task=task)[1]), c.model_mb)
                      for c, cand in zip(costs, candidates)]
        final = res.Cost(min(final.fit_seconds, cap * n / n_fit), final.model_mb)
    # staged candidates also score their validation rows at every scored stage
    scoring = sum(staged_scoring_seconds(variant, c, full.fit_seconds, cut.fit_seconds, n, d)
                  for c, full, cut in zip(candidates, costs, capped))
    search = res.Cost(folds * sum(c.fit_seconds for c in capped) + scoring, max(c.model_mb for c in capped),
                      scoring)
    if variant.tuned_in_dag:
        chunks = max(1, exp.n_chunks(variant))
        return final, res.Cost(search.fit_seconds / chunks, search.model_mb, scoring / chunks)
    return res.Cost(final.fit_seconds + search.fit_seconds, max(final.model_mb, search.model_mb), scoring), None


def sklearn_stage_cost(method, params: dict, n: int, p: int, d: int, density: float | None = None) -> float:
    """Modelled seconds of scikit-learn's trees fitting one stage of ``method`` with ``params`` (``per_stage:
    sklearn_trees``): one tree per regression target of the method's ``stage_targets``, on dense inputs (two-valued
    ones when the registry gives their ``density``), charged by ``resources.sklearn_tree_seconds``."""
    import numpy as np

    from forestbench.workflow.selection import SKLEARN_TREE_PARAMS

    if method.stage_targets is None:
        raise ConfigError(f"method {method.name!r} declares no stage_targets: a budget with per_stage "
                          "sklearn_trees cannot time its stages")
    widths = [Z.shape[1] for Z in method.stage_targets(params, np.zeros((2, d)), 0)]
    tree = {k: params[k] for k in SKLEARN_TREE_PARAMS if params.get(k) is not None}
    return sum(res.sklearn_tree_seconds(n, p, w, tree, density) for w in widths)


def output_stage_cost(method, params: dict, n: int, d: int) -> float:
    """Modelled seconds of one stage's per-output work of ``method`` (``per_stage: sklearn_trees_plus_outputs``),
    by the registry's ``output_cost`` hook."""
    if method.output_cost is None:
        raise ConfigError(f"method {method.name!r} declares no output_cost: a budget with per_stage "
                          "sklearn_trees_plus_outputs cannot be planned for it")
    return float(method.output_cost(n, d, params))


def budget_cost(exp, variant, shape: dict | None, sparse: bool, task: str | None = None) -> res.Cost:
    """The cost of a variant's budget job on a dataset shape (its training part): the reference's timed fits
    (5 repeats) and every candidate's (3 repeats), each of ``PROBE_STAGES`` stages, or of ``MARGINAL_STAGES``
    under ``per_stage: marginal`` (``forestbench.workflow.selection.seconds_per_stage``). The reference is
    charged to every variant, though the first budget job of a dataset stores it for the others; a zero cost for a
    variant without a budget."""
    from forestbench.workflow.methods import get_method
    from forestbench.workflow.selection import (CANDIDATE_REPEATS, MARGINAL_STAGES, PROBE_STAGES,
                                                REFERENCE_REPEATS)

    budget = (variant.tune or {}).get("budget")
    if not budget:
        return res.Cost(0.0, 0.0)
    n, p, d = res.shape_of(shape)
    labels, density = res.label_density(shape), res.input_density(shape)
    staged = variant.tune["staged"]
    stages = [MARGINAL_STAGES] if budget.get("per_stage", "average") == "marginal" else [PROBE_STAGES]

    def timed(method, params, repeats):
        costs = [method.cost_of(n, p, d, {**params, staged: k}, sparse=sparse, density=density,
                                label_density=labels, task=task) for k in stages]
        return repeats * sum(c.fit_seconds for c in costs), max(c.model_mb for c in costs)

    reference = budget["reference"]
    method = get_method(variant.method)
    if budget.get("per_stage") in SKLEARN_CLOCKS:
        from forestbench.workflow.selection import OUTPUT_PROBE, output_stage_key, sklearn_stage_key

        # scikit-learn's trees on one stage's targets: the reference 5 times, each distinct tree of the
        # candidates (their learning rates and losses share one) 3 times
        ref_method = get_method(reference["method"])
        seconds = REFERENCE_REPEATS * sklearn_stage_cost(ref_method, reference["params"], n, p, d, density)
        trees, outputs = {}, {}
        for candidate in exp.candidates(variant):
            params = {**variant.params, **candidate}
            trees.setdefault(json.dumps(sklearn_stage_key(params, staged), sort_keys=True, default=str), params)
            outputs.setdefault(json.dumps(output_stage_key(params, staged), sort_keys=True, default=str), params)
        seconds += sum(CANDIDATE_REPEATS * sklearn_stage_cost(method, params, n, p, d, density)
                       for params in trees.values())
        model_mb = n * p * 4 / 2**20  # the dense float32 copy of X the trees are given
        if budget["per_stage"] == "sklearn_trees_plus_outputs":
            # the per-output work: one fit of MARGINAL_STAGES stages of the kernel's trees on one feature per
            # split (charged as scikit-learn's trees on one feature, which sort alike) and the stages' per-output
            # work, for the reference 5 times and for each loss and leaves of the candidates 3 times
            def probe(m, params, repeats):
                params = {**output_stage_key(params, staged), **OUTPUT_PROBE}
                return repeats * MARGINAL_STAGES * (sklearn_stage_cost(m, params, n, p, d, density)
                                                    + output_stage_cost(m, params, n, d))

            seconds += probe(ref_method, reference["params"], REFERENCE_REPEATS)
            seconds += sum(probe(method, params, CANDIDATE_REPEATS) for params in outputs.values())
        return res.Cost(seconds, model_mb)
    seconds, model_mb = timed(get_method(reference["method"]), reference["params"], REFERENCE_REPEATS)
    for candidate in exp.candidates(variant):
        more, mb = timed(method, {**variant.params, **candidate}, CANDIDATE_REPEATS)
        seconds, model_mb = seconds + more, max(model_mb, mb)
    return res.Cost(seconds, model_mb)


def training_shape(shape: dict | None, protocol: dict) -> dict | None:
    """The registry ``shape`` with ``n`` replaced by the rows a fit sees under ``protocol`` (its training part:
    300 of friedman1-chain's 4300 rows under the boosting paper's protocol), which is what a fit's time depends on.
    A ``given`` split's training part is known only from the data: the whole ``n`` then stands for it, an upper
    bound. Memory requests keep the whole shape, since a fit job loads every row of the prepared data."""
    from forestbench.workflow.tuning import training_rows

    if not shape:
        return shape
    rows = training_rows(protocol, shape)
    return shape if rows is None else {**shape, "n": rows}


def _scored_candidates(folder: Path, kept: Path | None = None):
    """``(where, candidate document)`` of every candidate a tuned variant has scored: the files of its candidate cache
    (``<folder>/candidates/<fingerprint>.json``), then those its chunk files hold (``<folder>/repeat-*/chunk-*.json``,
    ``results``) that the cache does not: a resumed run restores the chunks of its unfinished splits without their
    candidate files (``forestbench.archive``); then the same from the variant's folder of the archive, ``kept``
    (``candidates/<fingerprint>.json.gz``, ``repeat-*/pending/chunk-*.json.gz``). Each fingerprint once; files being
    written (a leading ".") are skipped."""
    seen = set()
    sources = [(folder / "candidates", "*.json", folder, "repeat-*/chunk-*.json")]
    if kept is not None:
        sources.append((kept / "candidates", "*.json.gz", kept, "repeat-*/pending/chunk-*.json.gz"))
    for cache, pattern, root, chunks in sources:
        for path in sorted(cache.glob(pattern)):
            if path.name.startswith("."):
                continue
            try:
                doc = read_json(path)
            except (OSError, EOFError, ValueError) as exc:
                raise DataError(f"tuning candidate {path} is unreadable ({exc}); delete it and rerun its chunk") \
                    from None
            key = doc.get("fingerprint", path.name.split(".")[0]) if isinstance(doc, dict) else path.name
            if key not in seen:
                seen.add(key)
                yield path, doc
        for path in sorted(root.glob(chunks)):
            if path.name.startswith("."):
                continue
            try:
                results = read_json(path)["results"]
                docs = [doc for doc in results if doc.get("fingerprint") not in seen]
            except (OSError, EOFError, ValueError, KeyError, TypeError, AttributeError) as exc:
                raise DataError(f"tuning chunk {path} is unreadable ({exc}); delete it and rerun its chunk") \
                    from None
            for doc in docs:
                seen.add(doc.get("fingerprint"))
                yield path, doc


def candidate_calibration(results: str | Path, experiment: str, dataset: str, variant, exp, shape: dict | None,
                          sparse: bool, archive: str | Path | None = None) -> tuple[float, int, float, float]:
    """``(measured / modelled fit seconds, number of candidates, measured fit seconds per candidate, modelled scoring
    seconds per candidate)`` over the candidates of a tuned variant already scored under
    ``results/tuning/<experiment>/<dataset>/<variant>`` (every repeat: its candidate files and its chunk files,
    ``_scored_candidates``), and in the results archive ``archive``; ``(1.0, 0, 0.0, 0.0)`` when none is. A
    candidate is the chunk job's record of it: its ``params``, ``fit_seconds`` (summed over validation folds, the
    fits only) and, when staged, the ``stages`` it scored, each charged ``resources.staged_score_seconds``."""
    from forestbench.workflow.methods import get_method

    folder = Path(results) / "tuning" / experiment / dataset / variant.name
    kept = Path(archive) / experiment / "tuning" / dataset / variant.name if archive else None
    if not folder.is_dir() and not (kept is not None and kept.is_dir()):
        return 1.0, 0, 0.0, 0.0
    method = get_method(variant.method)
    n, p, d = res.shape_of(shape)
    folds, n_fit = _selection_rows(variant, n)
    one_stage = res.staged_score_seconds(max(1, n - n_fit), d, variant.tune["metric"])
    density = res.input_density(shape)
    measured = modelled = scoring = 0.0
    count = 0
    for path, doc in _scored_candidates(folder, kept):
        try:
            seconds, params = float(doc["fit_seconds"]), dict(doc["params"])
            scored = len(doc.get("stages") or [])
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise DataError(f"tuning candidate in {path} is unreadable ({exc}); delete it and rerun its chunk") \
                from None
        if not (math.isfinite(seconds) and seconds >= 0.0):
            raise DataError(f"tuning candidate in {path}: fit_seconds = {seconds} is not a duration; delete it and "
                            "rerun its chunk")
        model = folds * method.cost_of(n_fit, p, d, {**variant.params, **params}, sparse=sparse,
                                       density=density).fit_seconds
        measured += seconds
        modelled += model
        scoring += folds * scored * one_stage
        count += 1
    if not count or modelled <= 0.0:
        return 1.0, 0, 0.0, 0.0
    return measured / modelled, count, measured / count, scoring / count


def _raw_file_count(name: str, entry: dict) -> int:
    if (entry.get("source") or {}).get("kind") != "download":
        return 0
    from forestbench.datasets.download import remote_files, unavailable_reason

    return 0 if unavailable_reason(name, entry) else len(remote_files(entry))


def make_plan(plan, results: str | Path = "results", chunk: int = 1, tune_chunk: int | None = None,
              limits: res.Limits | None = None, archive: str | Path | None = None) -> PlanReport:
    """Count jobs and estimate core-hours for an expanded ``forestbench.workflow.experiments.Plan``. ``chunk`` and
    ``tune_chunk`` (default ``chunk``) are the profile's ``group-components`` of the fit and tune groups, for the
    SLURM job counts; ``limits`` the partition limits (default ``resources.limits_from_env()``); ``archive`` a
    results archive whose run records calibrate alongside those under ``results`` (``read_timings``)."""
    from forestbench.datasets.registry import get_entry
    from forestbench.workflow.methods import get_method

    tune_chunk = chunk if tune_chunk is None else tune_chunk
    for name, value in (("--chunk", chunk), ("--tune-chunk", tune_chunk)):
        if not isinstance(value, int) or value < 1:
            raise ConfigError(f"{name} must be >= 1 (an integer: jobs per SLURM job), got {value!r}")
    limits = limits or res.limits_from_env()
    records = read_timings(results, archive, {d for exp in plan.experiments.values() if exp.jobs()
                                              for d in exp.datasets})
    by_dataset: dict[str, list[TimedRecord]] = defaultdict(list)
    for record in records:
        by_dataset[record.dataset].append(record)

    datasets, splits = set(), set()
    jobs = dict.fromkeys(RULES, 0)
    slurm = {"fit": 0, "tune": 0}
    experiment_jobs: dict[str, dict[str, int]] = {}
    timing: dict[str, bool] = {}
    variants: list[VariantEstimate] = []
    budget_s = 0.0
    for name, exp in plan.experiments.items():
        n_fits = n_tune = 0
        if not exp.jobs():
            continue
        for dataset in exp.datasets:
            datasets.add(dataset)
            splits.add((dataset, exp.protocol))
            entry = get_entry(plan.registry, dataset)
            shape, sparse = entry.get("shape"), res.is_sparse_entry(entry)
            fit_shape = training_shape(shape, plan.protocol_spec(dataset, exp.protocol))
            rows = fit_shape.get("n") if fit_shape is not shape and fit_shape else None
            for variant in exp.runnable_variants:
                fits = exp.repeats[dataset]
                n_fits += fits
                signature = cost_signature(variant.method, variant.params, exp.threads, variant.tune)
                matched = matching(by_dataset.get(dataset, ()), signature, rows, exp.protocol)
                own = [r.busy_s for r in matched if (r.experiment, r.variant) == (name, variant.name)]
                other = [r.busy_s for r in matched if (r.experiment, r.variant) != (name, variant.name)]
                ignored = sum(1 for r in by_dataset.get(dataset, ())
                              if (r.experiment, r.variant) == (name, variant.name)) - len(own)
                final, chunk_cost = variant_cost(exp, variant, fit_shape, sparse, entry.get("task"))
                # the requests' floors: what the fit took on the machine it ran on (wall) and its peak memory; the
                # estimate of core-hours: what it would take alone (busy)
                # (the rules read --results alone: archived records floor nothing until restored)
                recorded = _recorded([r for r in matched if (r.experiment, r.variant) == (name, variant.name)
                                      and not r.archived])
                finished = done_fits(matched, name, variant.name, fits)
                if own:
                    wall, source, n_rec = res.STARTUP_S + sum(own) / len(own), "recorded", len(own)
                elif other:
                    wall, source, n_rec = res.STARTUP_S + sum(other) / len(other), "recorded-elsewhere", len(other)
                else:
                    wall = res.cost_job_seconds(final, threads=exp.threads)
                    source, n_rec = "model", 0
                no_hook = get_method(variant.method).cost is None
                req = res.fit_requests(shape, variant.params, 1, cost=final, threads=exp.threads, sparse=sparse,
                                       recorded_s=recorded.wall_s, recorded_mb=recorded.peak_mb)
                capped = limits.cap(req)
                variants.append(VariantEstimate(name, dataset, variant.name, fits, exp.threads, wall, source,
                                                n_rec, capped["mem_mb"], capped["runtime"], "fit",
                                                limits.exceeded(req), ignored, no_hook, variant.method,
                                                res.cost_job_seconds(final, threads=exp.threads),
                                                done=len(finished)))
                if variant.tune and variant.tune["budget"]:
                    jobs["budget"] += 1
                    budget_s += res.cost_job_seconds(budget_cost(exp, variant, fit_shape, sparse, entry.get("task")),
                                                     threads=exp.threads)
                if chunk_cost is not None:
                    n_chunks = fits * exp.n_chunks(variant)
                    n_tune += n_chunks
                    jobs["select"] += fits
                    factor, n_done, mean_s, mean_scoring = candidate_calibration(results, name, dataset, variant,
                                                                                 exp, fit_shape, sparse, archive)
                    req = res.fit_requests(shape, variant.params, 1, cost=chunk_cost, threads=exp.threads,
                                           sparse=sparse)
                    model_chunk_s = res.cost_job_seconds(chunk_cost, threads=exp.threads)
                    if n_done and variant.tune.get("budget"):
                        # a budget gives every candidate about the same time, measured by the budget job, which the
                        # model's cap does not know: the measured mean per candidate, times a chunk's candidates
                        # (candidate files time the fits only; their scored stages give the scoring)
                        per_chunk = len(exp.candidates(variant)) / max(1, exp.n_chunks(variant))
                        chunk_cost = res.Cost((mean_s + mean_scoring) * per_chunk, chunk_cost.model_mb,
                                              mean_scoring * per_chunk)
                    elif n_done:
                        fits_only = chunk_cost.fit_seconds - chunk_cost.scoring_seconds
                        chunk_cost = res.Cost(fits_only * factor + chunk_cost.scoring_seconds, chunk_cost.model_mb,
                                              chunk_cost.scoring_seconds)
                    capped = limits.cap(req)
                    variants.append(VariantEstimate(name, dataset, f"{variant.name} (tuning)", n_chunks,
                                                    exp.threads, res.cost_job_seconds(chunk_cost, threads=exp.threads),
                                                    "recorded" if n_done else "model", n_done, capped["mem_mb"],
                                                    capped["runtime"], "tune", limits.exceeded(req), 0, no_hook,
                                                    variant.method, model_chunk_s,
                                                    done=done_chunks(results, archive, name, dataset, variant.name,
                                                                     fits, exp.n_chunks(variant), finished)))
        jobs["fit"] += n_fits
        jobs["tune"] += n_tune
        slurm["fit"] += math.ceil(n_fits / chunk) if n_fits else 0
        slurm["tune"] += math.ceil(n_tune / tune_chunk) if n_tune else 0
        experiment_jobs[name] = {"fit": n_fits, "tune": n_tune}
        timing[name] = bool(exp.config.get("timing"))
        jobs["collect"] += 1
        jobs["report_experiment"] += 1
    scale_model_estimates(variants)
    jobs["report_index"] = 1
    jobs["fetch"] = sum(_raw_file_count(dataset, get_entry(plan.registry, dataset)) for dataset in datasets)
    jobs["prepare"] = len(datasets)
    jobs["split"] = len(splits)
    # the fit and tune groups bundle their jobs; the local rules submit none; every other job is one
    slurm_jobs = dict(jobs, **slurm, **dict.fromkeys(LOCAL_RULES, 0))
    other = (sum(jobs.values()) - jobs["fit"] - jobs["tune"] - jobs["budget"]) * res.STARTUP_S / 3600.0
    return PlanReport(jobs, slurm_jobs, chunk, variants, other, tune_chunk, limits, experiment_jobs, timing,
                      budget_s / 3600.0)


#: a variant's recorded / model ratio scales the model only when the model charges it at least this many seconds
#: of compute: below, the estimate is start-up and timer noise, and its ratio says nothing of the others'
MIN_SCALING_S = 1.0


def _repeat_of(record: TimedRecord) -> str:
    """``repeat-<r>`` of a record's file (``.json`` under --results, ``.json.gz`` in the archive)."""
    return Path(record.path).name.split(".", 1)[0]


def done_fits(matched: list[TimedRecord], experiment: str, variant: str, fits: int) -> set[str]:
    """The planned repeats (``repeat-<r>``, r < ``fits``) of a variant that already have a run record of their own
    matching the plan (``matching``), under --results or in the archive: a run resumed after ``archive restore``
    skips them."""
    planned = {f"repeat-{r}" for r in range(fits)}
    return {_repeat_of(r) for r in matched if (r.experiment, r.variant) == (experiment, variant)} & planned


def done_chunks(results: str | Path, archive: str | Path | None, experiment: str, dataset: str, variant: str,
                fits: int, n_chunks: int, finished: set[str]) -> int:
    """Candidate-chunk jobs of a DAG-tuned variant that a resumed run skips: every chunk of a repeat whose run
    record is done (``finished``) or whose selection file exists, else its chunk files under --results and its
    pending chunks in the archive (``forestbench.archive`` keeps a split's chunks there until its record is)."""
    tuning = Path(results) / "tuning" / experiment / dataset / variant
    kept = Path(archive) / experiment / "tuning" / dataset / variant if archive else None
    done = 0
    for r in range(fits):
        name = f"repeat-{r}"
        if name in finished or (tuning / name / "selected.json").is_file() or (
                kept is not None and (kept / name / "selected.json.gz").is_file()):
            done += n_chunks
            continue
        chunks = {k for k in range(n_chunks) if (tuning / name / f"chunk-{k}.json").is_file()}
        if kept is not None:
            chunks |= {k for k in range(n_chunks) if (kept / name / "pending" / f"chunk-{k}.json.gz").is_file()}
        done += len(chunks)
    return done


def scale_model_estimates(variants: list[VariantEstimate]) -> None:
    """Correct the model where records show it is off: per (dataset, method, threads) and kind of row (fit jobs, or
    candidate-chunk jobs calibrated by their scored candidates), each row estimated from records gives the ratio of
    its recorded compute seconds to the model's (start-up aside); the rows of that group left to the model are
    charged the model times the median of those ratios (source ``model-scaled``);
    a ratio counts when the model charges its variant at least ``MIN_SCALING_S`` of compute.
    The cost hooks are calibrated on a few datasets; on another one a method's hook tends to be off by a similar
    factor for all its parameter settings (measured on delicious, thesis Fig 5.4: the Gaussian forests' records
    took 0.37 x the model at q = 1 and 0.52 x at q = 983), so the first variants that ran size the rest. Only the
    core-hour estimate changes: the rules' time and memory requests follow the model and each variant's own
    records (``recorded_fit``), not another variant's."""
    groups: dict[tuple, list[VariantEstimate]] = defaultdict(list)
    for v in variants:
        if v.method and not v.default_cost:
            groups[(v.dataset, v.method, v.threads, v.rule)].append(v)
    for rows in groups.values():
        ratios = [(v.wall_s - res.STARTUP_S) / (v.model_wall_s - res.STARTUP_S) for v in rows
                  if v.source != "model" and v.model_wall_s - res.STARTUP_S >= MIN_SCALING_S
                  and v.wall_s >= res.STARTUP_S]
        if not ratios:
            continue
        factor = statistics.median(ratios)
        for v in rows:
            if v.source == "model":
                v.wall_s = res.STARTUP_S + factor * (v.model_wall_s - res.STARTUP_S)
                v.source, v.scale, v.n_records = "model-scaled", factor, len(ratios)


def chunk_for(walls: list[tuple[int, int, float, int]], target_minutes: float, cores: int,
              max_runtime_min: int) -> int:
    """Jobs per SLURM job for one group: ``walls`` holds ``(jobs, threads, wall seconds, runtime request)`` per
    variant. A chunk runs ``cores // threads`` jobs side by side, in waves; it is sized so that its waves of the
    mean job last about ``target_minutes``, and so that Snakemake's request for it (the sum of its waves' largest
    time requests) stays within the partition's ``max_runtime_min``. Rounded down to a power of two, so that
    experiments share a few sizes (``suggested_runs``)."""
    total = sum(n for n, _, _, _ in walls)
    if not total:
        return 1
    mean_wall = sum(n * w for n, _, w, _ in walls) / total
    threads = max(t for _, t, _, _ in walls)
    side_by_side = max(1, cores // threads)
    waves = max(1, int(target_minutes * 60.0 // max(mean_wall, 1e-9)))
    largest = max(r for _, _, _, r in walls)
    waves = min(waves, max(1, max_runtime_min // max(largest, 1)))
    return 2 ** int(math.floor(math.log2(side_by_side * waves)))


def summarize(report: PlanReport, target_minutes: float = 30.0, cores: int = 4) -> list[ExperimentSummary]:
    """One row per experiment: its jobs, core-hours, suggested chunks and largest requests."""
    if target_minutes <= 0 or cores < 1:
        raise ConfigError(f"--target-minutes must be > 0 and --cores >= 1, got {target_minutes} and {cores}")
    rows: dict[str, list[VariantEstimate]] = defaultdict(list)
    for v in report.variants:
        rows[v.experiment].append(v)
    out = []
    for name, counts in report.experiment_jobs.items():
        mine = rows.get(name, [])
        chunks = {}
        for rule in ("fit", "tune"):
            walls = [(v.fits, v.threads, v.wall_s, v.runtime_min) for v in mine if v.rule == rule and v.fits]
            chunks[rule] = min(chunk_for(walls, target_minutes, cores, report.limits.runtime_min),
                               max(1, counts[rule]))
        out.append(ExperimentSummary(
            name, counts["fit"], counts["tune"],
            sum(v.core_hours for v in mine if v.rule == "fit"), sum(v.core_hours for v in mine if v.rule == "tune"),
            chunks["fit"], chunks["tune"], max((v.mem_mb for v in mine), default=0),
            max((v.runtime_min for v in mine), default=0),
            sum(v.fits for v in mine if v.source.startswith("recorded")), report.timing.get(name, False),
            sum(v.fits for v in mine if v.source == "model-scaled"),
            sum(max(0, v.fits - v.done) for v in mine), sum(v.remaining_core_hours for v in mine)))
    return out


def suggested_runs(summaries: list[ExperimentSummary]) -> list[dict]:
    """Snakemake invocations that apply the suggested chunks. Snakemake (9.x) looks a ``group-components`` entry up
    by the group's pattern (``fit_{experiment}``), never by an experiment's resolved group name (an entry
    ``fit_table_5_1=16`` is silently ignored), so one invocation has one fit chunk and one tune chunk. Experiments
    are gathered by their pair of chunks, one invocation each (``--config select=...`` with
    ``--group-components``), to be run one after another. An experiment whose jobs of a kind fit in one SLURM job
    anyway joins the invocation with the largest chunk of that kind."""
    def need(jobs, chunk):
        return 0 if jobs <= chunk else chunk  # 0: any chunk >= jobs will do

    fixed: dict[tuple[int, int], list[str]] = defaultdict(list)
    loose: list[tuple[ExperimentSummary, int, int]] = []
    for s in summaries:
        if not (s.fits or s.tune_jobs):
            continue
        fit, tune = need(s.fits, s.fit_chunk), need(s.tune_jobs, s.tune_chunk)
        if fit and tune:
            fixed[(fit, tune)].append(s.experiment)
        else:
            loose.append((s, fit, tune))
    for s, fit, tune in loose:
        fits_here = [k for k in fixed if (k[0] == fit if fit else k[0] >= s.fits)
                     and (k[1] == tune if tune else k[1] >= s.tune_jobs)]
        if fits_here:
            fixed[max(fits_here)].append(s.experiment)
        else:
            own = (fit or 2 ** math.ceil(math.log2(max(s.fits, 1))),
                   tune or 2 ** math.ceil(math.log2(max(s.tune_jobs, 1))))
            fixed[own].append(s.experiment)
    tuned = {s.experiment for s in summaries if s.tune_jobs}
    out = []
    for (fit, tune), names in sorted(fixed.items()):
        components = f"'fit_{{experiment}}={fit}'" + (f" 'tune_{{experiment}}={tune}'" if tuned & set(names) else "")
        out.append({"experiments": names, "fit_chunk": fit, "tune_chunk": tune,
                    "args": f"--config 'select={{experiments: [{', '.join(names)}]}}' --group-components {components}"})
    return out


def suggest_chunk(report: PlanReport, target_minutes: float = 30.0, cores: int = 1) -> int:
    """One chunk for every fit (the smallest of the experiments' suggestions; ``summarize`` gives one per
    experiment)."""
    fits = [s.fit_chunk for s in summarize(report, target_minutes, cores) if s.fits]
    return min(fits) if fits else 1


def flagged(report: PlanReport) -> list[VariantEstimate]:
    """Rows whose request went beyond the partition limits (capped there), or whose time request is below the
    estimate x the margin."""
    return [v for v in report.variants if v.over or v.short]


def format_report(report: PlanReport, target_minutes: float = 30.0, cores: int = 4, verbose: bool = False,
                  source: str = "") -> str:
    summaries = summarize(report, target_minutes, cores)
    suggested = sum(s.slurm_jobs for s in summaries)
    gb = lambda mb: f"{mb / 1024:.1f} GB"  # noqa: E731
    lines = [f"Plan{' of ' + source if source else ''}: {len(summaries)} experiments, {report.jobs['fit']} fit runs, "
             f"{report.jobs['tune']} candidate-chunk (tune) jobs, {report.core_hours:.1f} core-hours.",
             "",
             f"Per experiment (core-hours of its fit and tune jobs; chunk = jobs per SLURM job for ~{target_minutes:g}"
             f"-minute SLURM jobs on {cores} cores; largest request of attempt 1):",
             f"  {'experiment':<32} {'fits':>6} {'tune':>6} {'core-h':>9} {'to run':>9} {'fit/job':>7} "
             f"{'tune/job':>8} {'SLURM':>6} {'max mem':>9} {'max time':>9}  estimated from"]
    for s in summaries:
        jobs = s.fits + s.tune_jobs
        calibrated = ", ".join(f"{what} {100.0 * n / jobs:.0f}%" for what, n in
                               (("records", s.recorded_jobs), ("scaled model", s.scaled_jobs)) if n) or "model"
        lines.append(f"  {s.experiment:<32} {s.fits:>6} {s.tune_jobs:>6} {s.core_hours:>9.1f} "
                     f"{s.remaining_core_hours:>9.1f} {s.fit_chunk:>7} "
                     f"{(s.tune_chunk if s.tune_jobs else '-'):>8} {s.slurm_jobs:>6} {gb(s.max_mem_mb):>9} "
                     f"{_duration(s.max_runtime_min * 60.0):>9}  {calibrated}"
                     + ("  (exclusive nodes)" if s.exclusive else ""))
    lines.append(f"  {'total':<32} {report.jobs['fit']:>6} {report.jobs['tune']:>6} "
                 f"{sum(s.core_hours for s in summaries):>9.1f} "
                 f"{sum(s.remaining_core_hours for s in summaries):>9.1f} {'':>7} {'':>8} {suggested:>6}")
    lines.append(f"  to run: the fit and tune jobs without a matching run record, selection or chunk file under "
                 f"--results or in --archive ({sum(s.remaining_jobs for s in summaries)} of "
                 f"{report.jobs['fit'] + report.jobs['tune']}), what a run resumed after `archive restore` fits; "
                 "core-h counts every job, as a fresh run fits them all.")
    lines.append("")
    lines.append("Jobs per rule: " + ", ".join(f"{rule} {report.jobs[rule]}" for rule in RULES)
                 + f" (total {sum(report.jobs.values())}).")
    others = sum(n for rule, n in report.slurm_jobs.items() if rule not in ("fit", "tune"))
    lines.append(f"SLURM jobs: {suggested + others} with the suggested chunks, {sum(report.slurm_jobs.values())} "
                 f"with fit_{{experiment}}={report.chunk} and tune_{{experiment}}={report.tune_chunk} (--chunk, "
                 f"--tune-chunk; the profile's default is 8); {others} of them are the other rules' jobs, one each "
                 f"({', '.join(LOCAL_RULES)} run where Snakemake runs).")
    sources = defaultdict(int)
    for v in report.variants:
        sources[v.source] += v.fits
    lines.append(f"Core-hours: {report.core_hours:.2f} (fit and tune jobs {report.fit_core_hours:.2f}, budget jobs "
                 f"{report.budget_core_hours:.2f}, other jobs "
                 f"{report.other_core_hours:.2f}); jobs estimated from "
                 + ", ".join(f"{k}: {n}" for k, n in sorted(sources.items())) + ".")
    lines.append("  model: each method's cost hook (forestbench.workflow.resources, forestbench/workflow/methods/*.py) "
                 f"plus {res.STARTUP_S:g} s of start-up per job; run records (under --results, then in --archive) "
                 "replace it where their method, parameters, threads, tuning and training rows match the plan's; "
                 "model-scaled: the model times the median ratio recorded / model of the same method's other "
                 "variants on the dataset.")
    ignored = sum(v.ignored_records for v in report.variants)
    if ignored:
        lines.append(f"  {ignored} run record(s) of planned variants were not used: their parameters or rows differ "
                     "from the configuration's (see --verbose).")
    lines.append("")
    runs = suggested_runs(summaries)
    lines.append(f"Suggested chunks, as {len(runs)} Snakemake run(s) to start one after another: add a line to "
                 "`snakemake --profile workflow/profiles/slurm --configfile ...`")
    lines.append("(Snakemake reads one group-components entry per group pattern, fit_{experiment} and "
                 "tune_{experiment}: experiments with other chunks need runs of their own)")
    for run in runs:
        lines.append("  " + run["args"])
    lines.append("")
    bad = flagged(report)
    limit = (f"{gb(report.limits.mem_mb)} of memory, {_duration(report.limits.runtime_min * 60.0)} of time; "
             "--max-mem-gb / --max-hours here, FORESTBENCH_MAX_MEM_MB / FORESTBENCH_MAX_RUNTIME_MIN for the workflow")
    if bad:
        lines.append(f"Flagged requests (partition limits: {limit}; requests beyond are capped there; time "
                     f"requests are {res.RUNTIME_MARGIN:g} x the estimate):")
        for v in bad[:40]:
            why = list(v.over)
            if v.short and not v.over:
                why.append(f"time request {v.runtime_min} min < {res.RUNTIME_MARGIN:g} x estimate "
                           f"{_duration(v.wall_s)}")
            lines.append(f"  {v.experiment} / {v.dataset} / {v.variant}: " + "; ".join(why))
        if len(bad) > 40:
            lines.append(f"  ... and {len(bad) - 40} more (--verbose or --json)")
    else:
        lines.append(f"No request beyond the partition limits ({limit}).")
    defaults = sorted({v.variant for v in report.variants if v.default_cost})
    if defaults:
        lines.append("Charged forestbench.workflow.resources.default_cost (their method registers no cost hook): "
                     + ", ".join(defaults))
    if verbose:
        lines.append("")
        lines.append("Per variant (wall per job incl. start-up; requests of attempt 1, capped):")
        lines.append(f"  {'experiment':<22} {'dataset':<20} {'variant':<24} {'jobs':>5} {'thr':>3} {'wall/job':>10} "
                     f"{'core-h':>9} {'mem_mb':>7} {'time':>6}  source")
        for v in report.variants:
            what = "candidates" if v.rule == "tune" else "runs"
            lines.append(f"  {v.experiment:<22} {v.dataset:<20} {v.variant:<24} {v.fits:>5} {v.threads:>3} "
                         f"{_duration(v.wall_s):>10} {v.core_hours:>9.3f} {v.mem_mb:>7} {v.runtime_min:>5}m  "
                         f"{v.source}" + (f" (x{v.scale:.2f}, median of {v.n_records} recorded variant(s))"
                                          if v.scale is not None else f" ({v.n_records} {what})" if v.n_records
                                          else "")
                         + (f", {v.ignored_records} record(s) not matching" if v.ignored_records else ""))
    else:
        lines.append("Per-variant estimates: --verbose (or --json).")
    return "\n".join(lines)


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.1f}s"
    if seconds < 7200:
        return f"{seconds / 60:.1f}m"
    return f"{seconds / 3600:.1f}h"


def _run(args) -> int:
    from forestbench.workflow.experiments import Plan

    configfiles = [f for group in args.configfile for f in group]
    config, source = load_config(configfiles, args.base, parse_overrides([c for g in args.config for c in g]))
    plan = Plan(config, source=source)
    env = res.limits_from_env()
    limits = res.Limits(
        mem_mb=int(round(args.max_mem_gb * 1024)) if args.max_mem_gb is not None else env.mem_mb,
        runtime_min=int(round(args.max_hours * 60)) if args.max_hours is not None else env.runtime_min)
    report = make_plan(plan, results=args.results, chunk=args.chunk, tune_chunk=args.tune_chunk, limits=limits,
                       archive=None if args.no_archive else args.archive)
    if args.json:
        print(json.dumps(report.to_dict(args.target_minutes, args.cores), indent=2, sort_keys=True))
    else:
        print(format_report(report, args.target_minutes, args.cores, args.verbose, source))
        for note in plan.missing_package_notes():
            print(note)
    sys.stdout.flush()
    return 0


def _positive(kind):
    def parse(text):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
        if not value > 0:
            raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
        return value
    return parse


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
    p.add_argument("--archive", default="archive",
                   help="a results archive whose run records also calibrate the estimate, where --results holds "
                        "none of the same name (default archive, the repository's; skipped when absent)")
    p.add_argument("--no-archive", action="store_true",
                   help="estimate from --results and the cost model alone")
    p.add_argument("--chunk", type=_positive(int), default=8,
                   help="fit runs per SLURM job to count SLURM jobs with (the profile's fit_{experiment}=N; default 8)")
    p.add_argument("--tune-chunk", type=_positive(int), default=None,
                   help="candidate-chunk jobs per SLURM job (the profile's tune_{experiment}=N; default --chunk)")
    p.add_argument("--target-minutes", type=_positive(float), default=30.0,
                   help="SLURM job length the chunk suggestions aim at (default 30)")
    p.add_argument("--cores", type=_positive(int), default=4,
                   help="cores of one SLURM job (the profile's `cores`, default 4): a chunk runs that many "
                        "single-thread jobs side by side")
    p.add_argument("--max-mem-gb", type=_positive(float), default=None,
                   help="memory of a node / partition limit, GB (default FORESTBENCH_MAX_MEM_MB, else 256)")
    p.add_argument("--max-hours", type=_positive(float), default=None,
                   help="time limit of the partition, hours (default FORESTBENCH_MAX_RUNTIME_MIN, else 48)")
    p.add_argument("--verbose", action="store_true", help="also list every (experiment, dataset, variant)")
    p.add_argument("--json", action="store_true", help="print the plan as JSON (every variant included)")
    p.set_defaults(func=_run)
