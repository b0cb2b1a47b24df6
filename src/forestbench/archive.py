"""``forestbench archive``: finished results kept in the repository, so that they outlive the machine that computed
them.

The archive (``archive/`` at the top of the repository) holds, per experiment, what the fits and the tuning jobs
produced, never the prepared data::

    archive/<experiment>/experiment.json                       the configuration the files were produced under
    archive/<experiment>/runs/<dataset>/<variant>/repeat-<r>.json.gz
    archive/<experiment>/tuning/<dataset>/<variant>/budget.json.gz, candidates/<key>.json.gz (only those no
                                 finished chunk holds), repeat-<r>/chunk-<c>.json.gz, repeat-<r>/selected.json.gz,
                                 repeat-<r>/pending/chunk-<c>.json.gz (the chunks of a split not fitted yet)
    archive/<experiment>/tuning/<dataset>/budget-measurements/<key>.json.gz
                                 the budget jobs' timings of a dataset whose budgets are not all finished
    archive/<experiment>/imported/scores.csv, SOURCE.md        a scores table kept without its run records

Every archived file is the exact bytes of its ``results/`` counterpart, gzip-compressed without a time stamp (the
same file always gives the same archive file, so adding twice changes nothing and two machines adding the same
part agree). A run record carries its resolved run specification (``spec``: parameters, seed, protocol, tuning),
its scores and its provenance (package versions, commit, host): that, and ``experiment.json``, say what produced it.

* ``archive add`` copies every finished, valid run record and tuning file of ``results/`` into the archive;
* ``archive restore`` puts them back under ``results/``, with modification times ordered as the workflow made them
  (budget and candidates, chunks, selection, record) and newer than the prepared data, so that the next
  ``snakemake`` fits only what the archive lacks; a record whose specification differs from what the current
  configuration would run is not restored (it is refitted); when only its scored ``metrics`` differ, its budget,
  chunks and selection are restored, so the refit skips the tuning (the selection reads ``tune.metric`` alone);
* ``archive report`` rebuilds every archived experiment's tables and report, and the index, from the archive alone;
* ``archive import`` keeps a scores table whose run records are gone (reports are rebuilt from it);
* ``archive readme`` writes the reproduction summary table of ``README.md`` from the archive.
"""
from __future__ import annotations

import gzip
import json
import math
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from forestbench._io import atomic_path, write_text
from forestbench.errors import ConfigError, DataError

ARCHIVE = Path("archive")
SNAPSHOT = "experiment.json"
IMPORTED = "imported"
PENDING = "pending"      # archive/<E>/tuning/<d>/<v>/repeat-<r>/pending/: chunk files of splits not fitted yet
MEASUREMENTS = "budget-measurements"   # tuning/<E>/<d>/budget-measurements/: the budget jobs' timings of a dataset
TABLE_START = "<!-- archive-table:start -->"
TABLE_END = "<!-- archive-table:end -->"
# experiment keys that change how results are shown, not which results are produced (max_repeats only says how many
# of the protocol's splits run; every record names its own repeat)
PRESENTATION_KEYS = ("description", "source", "reports", "reference", "max_repeats")

# the files of one experiment's results, as (kind, glob under results/) and their modification-time order on restore
KINDS = {
    "record": ("runs/{e}/*/*/repeat-*.json", 3),
    "budget": ("tuning/{e}/*/*/budget.json", 0),
    "candidate": ("tuning/{e}/*/*/candidates/*.json", 0),
    "chunk": ("tuning/{e}/*/*/repeat-*/chunk-*.json", 1),
    "selected": ("tuning/{e}/*/*/repeat-*/selected.json", 2),
    "measurement": ("tuning/{e}/*/" + MEASUREMENTS + "/*.json", 0),
}


# ---------------------------------------------------------------------------------------------------- file level
def _compress(data: bytes) -> bytes:
    return gzip.compress(data, compresslevel=9, mtime=0)


def _write_bytes(path: Path, data: bytes) -> None:
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


def read_archived(path: Path) -> bytes:
    """The original bytes of an archived file."""
    try:
        return gzip.decompress(Path(path).read_bytes())
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise DataError(f"archived file {path} is unreadable ({exc}); restore it with git (git checkout -- {path})") \
            from None


def _archived_name(rel: str) -> str:
    """``runs/<E>/d/v/repeat-0.json`` -> ``<E>/runs/d/v/repeat-0.json.gz`` (and tuning/<E>/... alike)."""
    top, experiment, rest = rel.split("/", 2)
    return f"{experiment}/{top}/{rest}.gz"


def _pending_name(rel: str) -> str:
    """``tuning/<E>/d/v/repeat-0/chunk-3.json`` -> ``<E>/tuning/d/v/repeat-0/pending/chunk-3.json.gz``: where the
    chunk file of a split whose run record is not finished yet is archived. The finished splits' chunk files stay
    out of git (``.gitignore``, archive/README.md); these are kept, so that a tuned run cut off by the end of a
    sitting or a machine resumes from every chunk it finished."""
    head, name = _archived_name(rel).rsplit("/", 1)
    return f"{head}/{PENDING}/{name}"


def _results_name(archived_rel: str) -> str:
    experiment, top, rest = archived_rel.split("/", 2)
    parts = rest.split("/")
    if top == "tuning" and len(parts) == 5 and parts[3] == PENDING:     # d/v/repeat-r/pending/chunk-c.json.gz
        del parts[3]
    return f"{top}/{experiment}/{'/'.join(parts).removesuffix('.gz')}"


def _kind_of(rel: str) -> str:
    """The kind of a path relative to results/ (``runs/...`` or ``tuning/...``)."""
    name = rel.rsplit("/", 1)[-1]
    if rel.startswith("runs/"):
        return "record"
    if f"/{MEASUREMENTS}/" in rel:
        return "measurement"
    if "/candidates/" in rel:
        return "candidate"
    if name == "budget.json":
        return "budget"
    if name == "selected.json":
        return "selected"
    return "chunk"


def _load_json(data: bytes, where: str) -> dict:
    try:
        doc = json.loads(data)
    except ValueError as exc:
        raise DataError(f"{where}: not valid JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise DataError(f"{where}: not a JSON object")
    return doc


def _normal(obj):
    """``obj`` as it reads back from JSON (tuples become lists, keys strings): how a spec reaches the fit job."""
    return json.loads(json.dumps(obj, sort_keys=True))


def _result_defining(spec: dict) -> dict:
    """``spec`` as far as it decides a run's results: of the expected shape, the keys the data is checked against
    (a cost-model hint added to the registry later, e.g. ``labels_per_row``, leaves a record valid)."""
    from forestbench.datasets.registry import checked_shape

    spec = _normal(spec)
    if "expected_shape" in spec:
        spec["expected_shape"] = checked_shape(spec["expected_shape"])
    return spec


def _spec_difference(recorded: dict, current: dict) -> list[str]:
    recorded, current = _result_defining(recorded), _result_defining(current)
    return sorted(k for k in set(recorded) | set(current) if recorded.get(k) != current.get(k))


#: run-specification keys that decide only what a fit job scores, never what its tuning chose (a selection reads
#: ``tune.metric``, which is part of ``tune``): a record differing in these alone is refitted on its tuning
SCORING_ONLY_KEYS = frozenset({"metrics"})


#: run-specification keys that decide what the fits give but not how long they take: a record differing in these
#: (and scoring keys) alone keeps its budget (its stage caps time the candidates), its tuning is recomputed
FIT_ONLY_KEYS = frozenset({"revisions"})


def _tuning_still_valid(spec: dict | None, difference: list[str]) -> bool:
    """Whether the budget, chunks and selection of a record whose specification differs by ``difference`` from the
    configuration's ``spec`` still hold for it."""
    return spec is not None and set(difference) <= SCORING_ONLY_KEYS


def _budget_still_valid(spec: dict | None, difference: list[str]) -> bool:
    """Whether the budget of such a record still holds (a method revision changes the fits, not their times)."""
    return spec is not None and set(difference) <= SCORING_ONLY_KEYS | FIT_ONLY_KEYS


# ------------------------------------------------------------------------------------------- configuration side
def _plan(configfile: Path):
    from forestbench.workflow.experiments import Plan, load_config

    config, source = load_config([configfile])
    return Plan(config, source=source, check_params=False)


def snapshot(plan, experiment: str) -> dict:
    """What determines the results of ``experiment``: its run-defining configuration (methods, datasets, protocol,
    metrics, seed, threads, plugins), the method revisions of its variants and, per dataset, the registry entry
    part that determines the prepared data and the split protocol. Descriptions, reports and reference entries are
    left out: editing them changes no result."""
    from forestbench.datasets.registry import get_entry, prepare_entry

    cfg = plan.config["experiments"][experiment]
    exp = plan.experiments[experiment]
    datasets = {}
    for dataset in cfg.get("datasets", []):
        if dataset in plan.registry:
            datasets[dataset] = {"entry": prepare_entry(get_entry(plan.registry, dataset)),
                                 "protocol": plan.protocol_spec(dataset, cfg["protocol"])}
    # the method revisions its fits run under (only those that have any: an experiment without keeps its snapshot)
    revisions = {v.name: found for v in exp.runnable_variants if (found := exp.revisions(v))}
    return _normal({"experiment": experiment,
                    "configuration": {k: v for k, v in cfg.items() if k not in PRESENTATION_KEYS},
                    "seed": exp.seed, "threads": exp.threads, "plugins": list(plan.config.get("plugins") or []),
                    "datasets": datasets, **({"revisions": revisions} if revisions else {})})


def _job_spec(plan, experiment: str, dataset: str, variant: str, repeat: int) -> dict | None:
    """The run specification the configuration gives this job, or None when it has no such job."""
    from forestbench.workflow.experiments import Job

    exp = plan.experiments[experiment]
    if dataset not in plan.config["experiments"][experiment].get("datasets", []) or dataset not in plan.registry:
        return None
    if variant not in {v.name for v in exp.variants}:
        return None
    return plan.run_spec(Job(experiment, dataset, variant, repeat))


def _check_file(kind: str, rel: str, data: bytes, plan, experiment: str) -> None:
    """Refuse (DataError naming the file and the problem) a file that is not a finished product of its job."""
    where = f"results/{rel}"
    doc = _load_json(data, where)
    parts = rel.split("/")
    if kind == "record":
        from forestbench.workflow.collect import REQUIRED_KEYS, record_rows

        _, _, dataset, variant, name = parts
        missing = [k for k in (*REQUIRED_KEYS, "spec", "provenance", "schema_version") if k not in doc]
        if missing:
            raise DataError(f"{where}: run record lacks {', '.join(missing)} (an unfinished or foreign file)")
        repeat = int(name.removeprefix("repeat-").removesuffix(".json"))
        if (doc["experiment"], doc["dataset"], doc["variant"], doc["repeat"]) != (experiment, dataset, variant,
                                                                                  repeat):
            raise DataError(f"{where}: the record is of {doc['experiment']}/{doc['dataset']}/{doc['variant']} "
                            f"repeat {doc['repeat']}, not of its path")
        try:
            record_rows(doc)
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise DataError(f"{where}: malformed run record ({type(exc).__name__}: {exc})") from None
        current = _job_spec(plan, experiment, dataset, variant, repeat)
        if current is None:
            raise DataError(f"{where}: {plan.source} has no job {experiment}/{dataset}/{variant}")
        diff = _spec_difference(doc["spec"], current)
        if diff and _tuning_still_valid(current, diff):
            raise DataError(f"{where}: scored with other metrics than {plan.source} asks for (its spec differs in "
                            f"{', '.join(diff)}); snakemake refits it on its tuning, then archive the refit")
        if diff and _budget_still_valid(current, diff):
            revisions = ", ".join(current.get("revisions", []))
            raise DataError(f"{where}: fitted before a revision of its method ({revisions}; its spec differs in "
                            f"{', '.join(diff)}); snakemake refits it and its tuning on the archived budget, then "
                            "archive the refit")
        if diff:
            raise DataError(f"{where}: produced by another configuration than {plan.source} (its spec differs in "
                            f"{', '.join(diff)}); archive it with the configuration it was run with")
    elif kind == "chunk":
        if not isinstance(doc.get("results"), list) or f"chunk-{doc.get('chunk')}.json" != parts[-1]:
            raise DataError(f"{where}: not a finished tuning chunk (no results list, or another chunk number)")
    elif kind == "selected":
        if not {"params", "score", "selection"} <= set(doc):
            raise DataError(f"{where}: not a finished selection (needs params, score, selection)")
    elif kind == "budget":
        if not isinstance(doc.get("caps"), dict):
            raise DataError(f"{where}: not a finished budget (no caps)")
    elif kind == "measurement":
        seconds = doc.get("seconds_per_stage")
        if doc.get("fingerprint") != parts[-1].removesuffix(".json") or not (
                isinstance(seconds, (int, float)) and not isinstance(seconds, bool) and math.isfinite(seconds)
                and seconds > 0):
            raise DataError(f"{where}: not a finished budget measurement (needs the fingerprint of its name and a "
                            "positive seconds_per_stage)")
    elif not {"params", "score"} <= set(doc):
        raise DataError(f"{where}: not a finished candidate (needs params, score)")


# --------------------------------------------------------------------------------------------------------- add
@dataclass
class Outcome:
    written: list[str] = field(default_factory=list)
    unchanged: int = 0
    kept: list[str] = field(default_factory=list)       # present with other content, left as it is
    refused: list[str] = field(default_factory=list)    # messages
    covered: int = 0                                    # candidates a finished chunk file already holds
    pruned: int = 0                                     # pending chunk files whose split has its run record now
    timed: int = 0                                      # budget measurements of datasets whose budgets are finished
    skipped: list[str] = field(default_factory=list)    # experiments the configuration does not have
    removed: list[str] = field(default_factory=list)    # archived files a reconfiguration made stale
    incomplete: list[str] = field(default_factory=list)  # restored records whose tuning inputs are missing

    def line(self, verb: str) -> str:
        extra = (f", {self.covered} tuning candidate(s) left to their chunk files, {self.pruned} pending chunk "
                 f"file(s) pruned (their runs are finished), {self.timed} budget measurement(s) left out or pruned "
                 f"(their dataset's budgets are finished), {len(self.refused)} refused")
        return (f"{len(self.written)} file(s) {verb}, {self.unchanged} already there, {len(self.kept)} kept "
                "(different content present)" + (extra if verb == "archived" else ""))


def _results_files(results: Path, experiment: str) -> list[tuple[str, str]]:
    """(kind, path relative to results/) of every file of ``experiment`` under ``results``; temporary files (their
    names start with a dot) never match."""
    out = []
    for kind, (pattern, _) in KINDS.items():
        for path in sorted(results.glob(pattern.format(e=experiment))):
            if path.is_file() and not path.name.startswith("."):
                out.append((kind, path.relative_to(results).as_posix()))
    return out


def results_experiments(results: Path) -> list[str]:
    names = {p.name for top in ("runs", "tuning") for p in (results / top).glob("*") if p.is_dir()}
    return sorted(names)


def archived_experiments(archive: Path) -> list[str]:
    return sorted(p.name for p in Path(archive).glob("*")
                  if p.is_dir() and ((p / "runs").is_dir() or (p / "tuning").is_dir() or (p / IMPORTED).is_dir()))


def _snapshot_text(snap: dict) -> str:
    return json.dumps(snap, indent=2, sort_keys=True) + "\n"


def _canonical(doc) -> str:
    return json.dumps(doc, sort_keys=True)


def _chunk_results(results: Path, files: list[tuple[str, str]]) -> dict[tuple[str, str], set[str]]:
    """The candidate results held by the finished chunk files, per (dataset, variant). The candidate store of a
    variant repeats them one file each; it matters only for the candidates of a chunk that did not finish (the
    finished chunk files are archived and restored), so only those are archived."""
    out: dict[tuple[str, str], set[str]] = {}
    for kind, rel in files:
        if kind != "chunk":
            continue
        try:
            doc = json.loads((results / rel).read_bytes())
            found = {_canonical(r) for r in doc["results"]}
        except (OSError, ValueError, KeyError, TypeError):
            continue                                     # refused with its reason by _check_file
        out.setdefault(tuple(rel.split("/")[2:4]), set()).update(found)
    return out


def reconfigure(archive: Path, plan, experiment: str) -> list[str]:
    """Make ``experiment``'s archive that of the configuration's new run-defining part: remove the archived records
    whose specification the configuration no longer gives, with the budgets, chunks and selections of their
    (dataset, variant) unless only the scored metrics changed (the tuning candidates are kept: their names hash
    everything that makes their scores), and write the new ``experiment.json``. The records the configuration still
    gives stay (a changed method leaves the other methods' runs valid). Returns the removed files; git keeps them."""
    archive = Path(archive)
    root = archive / experiment
    removed, stale_pairs, timed_pairs = [], set(), set()
    for arch in sorted((root / "runs").glob("*/*/repeat-*.json.gz")):
        _, _, dataset, variant, name = _results_name(arch.relative_to(archive).as_posix()).split("/")
        doc = _load_json(read_archived(arch), str(arch))
        spec = _job_spec(plan, experiment, dataset, variant, int(name.removeprefix("repeat-").removesuffix(".json")))
        difference = [] if spec is None else _spec_difference(doc.get("spec", {}), spec)
        if spec is None or difference:
            if not _tuning_still_valid(spec, difference):
                stale_pairs.add((dataset, variant))
            if not _budget_still_valid(spec, difference):
                timed_pairs.add((dataset, variant))
            arch.unlink()
            removed.append(str(arch))
    for arch in sorted((root / "tuning").glob("*/*/**/*.json.gz")):
        dataset, variant = arch.relative_to(root / "tuning").parts[:2]
        if "candidates" in arch.parts:
            continue
        if (dataset, variant) in timed_pairs or ((dataset, variant) in stale_pairs and arch.name != "budget.json.gz"):
            arch.unlink()
            removed.append(str(arch))
    write_text(root / SNAPSHOT, _snapshot_text(snapshot(plan, experiment)))
    return removed


def _budgeted_variants(plan, experiment: str) -> list[str]:
    """The variants of ``experiment`` whose tuning is time-budgeted (they have a budget job per dataset)."""
    return [v.name for v in plan.experiments[experiment].runnable_variants
            if v.tune and v.tune.get("budget")]


def _budgets_finished(tuning_dir: Path, variants: list[str], suffix: str = "") -> bool:
    """Whether every budgeted variant has its budget file in ``tuning_dir``, a dataset's tuning folder (of
    results/, or of the archive with ``suffix`` ``.gz``)."""
    return bool(variants) and all((tuning_dir / v / f"budget.json{suffix}").is_file() for v in variants)


def _prune_measurements(archive: Path, plan, experiment: str) -> int:
    """Remove the archived budget measurements of every dataset of ``experiment`` whose budgets are all archived:
    the budget files hold what a later run needs (the caps), and the timings are hundreds of small files per
    dataset. Returns how many were removed."""
    variants = _budgeted_variants(plan, experiment)
    removed = 0
    for folder in sorted((archive / experiment / "tuning").glob(f"*/{MEASUREMENTS}")):
        if _budgets_finished(folder.parent, variants, ".gz"):
            for path in sorted(folder.glob("*.json.gz")):
                path.unlink()
                removed += 1
            if not any(folder.iterdir()):
                folder.rmdir()
    return removed


def add(results: Path, archive: Path, plan, experiments: list[str] | None = None, replace: bool = False,
        reconfigure_changed: bool = False) -> Outcome:
    """Copy every finished file of ``experiments`` (default: every experiment of the configuration with files under
    ``results``) into ``archive``; see the module docstring. With ``reconfigure_changed``, an experiment archived
    under another run-defining configuration is first made that of the current one (:func:`reconfigure`)."""
    results, archive = Path(results), Path(archive)
    names = experiments or [e for e in results_experiments(results) if e in plan.experiments]
    unknown = [e for e in names if e not in plan.experiments]
    if unknown:
        raise ConfigError(f"{plan.source} has no experiment(s) {', '.join(unknown)}")
    outcome = Outcome()
    if not experiments:
        outcome.skipped = [e for e in results_experiments(results) if e not in plan.experiments]
    for experiment in names:
        files = _results_files(results, experiment)
        snap_path = archive / experiment / SNAPSHOT
        snap = _snapshot_text(snapshot(plan, experiment))
        changed = snap_path.exists() and snap_path.read_text(encoding="utf-8") != snap
        if not files and not (changed and reconfigure_changed and experiments):
            continue   # nothing to archive (a named experiment is still reconfigured: the switch precedes its refits)
        if changed:
            if not reconfigure_changed:
                raise ConfigError(
                    f"{snap_path}: {experiment} was archived under another configuration than {plan.source} "
                    f"(methods, datasets, protocol, seed or dataset entry differ); archive with the configuration it "
                    f"was run with, or add --reconfigure to drop the archived runs the configuration no longer "
                    f"gives (git keeps them) and archive the new ones beside the others")
            outcome.removed += reconfigure(archive, plan, experiment)
        if not snap_path.exists():
            write_text(snap_path, snap)
        in_chunks = _chunk_results(results, files)
        # splits (dataset, variant, repeat-r) whose run record is finished: their chunk files are left out of git
        fitted = {(*rel.split("/")[2:4], rel.split("/")[4].removesuffix(".json")) for kind, rel in files
                  if kind == "record"}
        # a dataset's budget measurements are archived while any of its budgets is unfinished, so that a budget
        # cut off by the end of a sitting resumes from every candidate it timed; then the budget files suffice
        budgeted = _budgeted_variants(plan, experiment)
        timing = {rel.split("/")[2] for kind, rel in files if kind == "measurement"}
        timing = {d for d in timing if not _budgets_finished(results / "tuning" / experiment / d, budgeted)}
        for kind, rel in files:
            if kind == "measurement" and rel.split("/")[2] not in timing:
                outcome.timed += 1
                continue
            data = (results / rel).read_bytes()
            try:
                _check_file(kind, rel, data, plan, experiment)
            except DataError as exc:
                outcome.refused.append(str(exc))
                continue
            if kind == "candidate" and _canonical(json.loads(data)) in in_chunks.get(tuple(rel.split("/")[2:4]), ()):
                outcome.covered += 1
                continue
            target = archive / _archived_name(rel)
            pending = archive / _pending_name(rel) if kind == "chunk" else None
            if pending is not None and tuple(rel.split("/")[2:5]) not in fitted:
                target = pending
            if target.exists():
                if read_archived(target) == data:
                    outcome.unchanged += 1
                elif not replace:
                    outcome.kept.append(str(target))
                else:
                    _write_bytes(target, _compress(data))
                    outcome.written.append(str(target))
            else:
                _write_bytes(target, _compress(data))
                outcome.written.append(str(target))
            if pending is not None and target != pending and pending.exists() and read_archived(target) == data:
                pending.unlink()                 # the finished split's copy (left out of git) replaces it
                outcome.pruned += 1
        outcome.timed += _prune_measurements(archive, plan, experiment)
    return outcome


# ----------------------------------------------------------------------------------------------------- restore
def _data_inputs(plan, experiment: str, dataset: str, data: Path) -> list[Path]:
    protocol = plan.config["experiments"][experiment]["protocol"]
    split = Path(plan.split_path(dataset, protocol)).relative_to("data")
    prepared = Path(plan.prepared_path(dataset)).relative_to("data")
    return [data / prepared, data / split, data / split.with_suffix(".json")]


def _missing_tuning_inputs(plan, results: Path, chosen) -> list[str]:
    """Restored records of tuned variants whose selection or budget file will be neither restored nor present:
    Snakemake would recompute those and then refit the record. (Their chunk files are not needed: a restored
    selection of a fitted split stands without them.)"""
    from forestbench.workflow.experiments import Job

    restored = {rel for _, rel, _, _ in chosen}
    out = []
    for experiment, rel, _, order in chosen:
        if order != KINDS["record"][1]:
            continue
        _, _, dataset, variant_name, name = rel.split("/")
        job = Job(experiment, dataset, variant_name, int(name.removeprefix("repeat-").removesuffix(".json")))
        variant = plan.experiments[experiment].variant(variant_name)
        needed = []
        if variant.tuned_in_dag:
            # a restored selection stands without its chunks (Plan.selection_stands): only a missing one retunes
            needed.append(plan.selected_path(job))
        if variant.tune and variant.tune.get("budget"):
            needed.append(plan.budget_path(experiment, dataset, variant_name))
        lacking = [p for p in (n.removeprefix("results/") for n in needed)
                   if p not in restored and not (results / p).exists()]
        if lacking:
            out.append(f"results/{rel} (lacks {lacking[0]}" + (f" and {len(lacking) - 1} more" if len(lacking) > 1
                                                                else "") + ")")
    return out


def restore(archive: Path, results: Path, plan, experiments: list[str] | None = None, data: Path = Path("data"),
            allow_missing_data: bool = False, datasets: list[str] | None = None) -> tuple[Outcome, list[str]]:
    """Put the archived files of ``experiments`` (default: every archived experiment the configuration has) back
    under ``results``, of ``datasets`` only when given (a run of some datasets needs only theirs, and their
    prepared data only). Returns the outcome and the records not restored because the configuration now runs them
    differently. See the module docstring for the modification times."""
    archive, results, data = Path(archive), Path(results), Path(data)
    names = experiments or [e for e in archived_experiments(archive) if e in plan.experiments]
    unknown = [e for e in names if e not in plan.experiments]
    if unknown:
        raise ConfigError(f"{plan.source} has no experiment(s) {', '.join(unknown)}")
    outcome, stale = Outcome(), []
    if not experiments:
        outcome.skipped = [e for e in archived_experiments(archive) if e not in plan.experiments]
    chosen: list[tuple[str, str, bytes, int]] = []        # (experiment, results-relative path, bytes, order)
    inputs: set[Path] = set()
    for experiment in names:
        same_config = _archived_snapshot(archive, experiment) == _snapshot_text(
            snapshot(plan, experiment))
        files = sorted(p.relative_to(archive).as_posix() for p in (archive / experiment).glob("**/*.json.gz"))
        by_kind: dict[str, list[tuple[str, bytes]]] = {k: [] for k in KINDS}
        for arel in files:
            rel = _results_name(arel)
            by_kind[_kind_of(rel)].append((rel, read_archived(archive / arel)))
        current_runs: set[tuple[str, str, str]] = set()      # (dataset, variant, repeat) whose tuning holds
        timed: set[tuple[str, str]] = set()                   # (dataset, variant) whose budget holds
        for rel, raw in by_kind["record"]:
            _, _, dataset, variant, name = rel.split("/")
            if datasets and dataset not in datasets:
                continue
            repeat = int(name.removeprefix("repeat-").removesuffix(".json"))
            doc = _load_json(raw, str(archive / _archived_name(rel)))
            spec = _job_spec(plan, experiment, dataset, variant, repeat)
            difference = [] if spec is None else _spec_difference(doc.get("spec", {}), spec)
            if spec is None or difference:
                stale.append(f"results/{rel}")
                if _tuning_still_valid(spec, difference):
                    current_runs.add((dataset, variant, f"repeat-{repeat}"))
                if _budget_still_valid(spec, difference):
                    timed.add((dataset, variant))
                continue
            current_runs.add((dataset, variant, f"repeat-{repeat}"))
            chosen.append((experiment, rel, raw, KINDS["record"][1]))
            inputs.update(_data_inputs(plan, experiment, dataset, data))
        variants_current = {(d, v) for d, v, _ in current_runs} | timed
        for kind in ("budget", "candidate", "measurement", "chunk", "selected"):
            for rel, raw in by_kind[kind]:
                parts = rel.split("/")          # tuning/E/dataset/variant/... (tuning/E/dataset/budget-measurements/)
                dataset, variant = parts[2], parts[3]
                if datasets and dataset not in datasets:
                    continue
                # a candidate or a measurement is stored under a hash of everything that makes its score or its
                # time: always safe to reuse
                keep = kind in ("candidate", "measurement") or same_config or (
                    (dataset, variant, parts[4]) in current_runs if kind in ("chunk", "selected")
                    else (dataset, variant) in variants_current)
                if keep:
                    chosen.append((experiment, rel, raw, KINDS[kind][1]))
                    if kind not in ("candidate", "measurement"):   # budget and tune jobs read the prepared data
                        inputs.update(_data_inputs(plan, experiment, dataset, data))
    outcome.incomplete = _missing_tuning_inputs(plan, results, chosen)
    missing = sorted(str(p) for p in inputs if not p.exists())
    if missing and not allow_missing_data:
        raise DataError(
            f"the prepared data the restored records were fitted on is missing ({', '.join(missing[:3])}"
            + (f" and {len(missing) - 3} more" if len(missing) > 3 else "") + "): Snakemake would prepare it and "
            "then refit everything. Prepare it first (snakemake --until split with the same --configfile), then "
            "restore (--datasets restores only the datasets a run selects); --allow-missing-data restores anyway")
    newest = max((p.stat().st_mtime for p in inputs if p.exists()), default=0.0)
    # whole seconds apart (file systems with coarse time stamps) and newer than every data input
    base = math.ceil(max(time.time() - 3, newest + 1))
    for experiment, rel, raw, order in chosen:
        path = results / rel
        if path.exists():
            if path.read_bytes() == raw:
                outcome.unchanged += 1
            else:
                outcome.kept.append(str(path))
            continue
        _write_bytes(path, raw)
        os.utime(path, (base + order, base + order))
        outcome.written.append(str(path))
    return outcome, stale


# ------------------------------------------------------------------------------------------------------ import
def _same_value(cell, value) -> bool:
    """A scores-table cell (as pandas reads it) against a configured parameter value (as collect writes it)."""
    if isinstance(value, (list, dict)):
        value = json.dumps(value)
    if isinstance(value, bool) or isinstance(cell, bool):
        return str(cell).lower() == str(value).lower()
    try:
        return float(cell) == float(value)
    except (TypeError, ValueError):
        return str(cell) == str(value)


def import_scores(scores_csv: Path, archive: Path, plan, experiment: str, note: str = "") -> Path:
    """Keep a scores table whose run records are gone (``archive/<E>/imported/scores.csv``, its exact bytes).

    Reports and the README table read only the scores table, so they are rebuilt faithfully from it; restore has
    no records to put back, so a rerun fits those runs again. The table is checked against the configuration: each
    (dataset, variant, repeat) must be a job of ``experiment`` with the seed and fixed parameters the configuration
    gives it now."""
    import pandas as pd

    from forestbench.workflow.collect import REQUIRED_COLUMNS

    scores_csv, archive = Path(scores_csv), Path(archive)
    if experiment not in plan.experiments:
        raise ConfigError(f"{plan.source} has no experiment {experiment!r}")
    try:
        frame = pd.read_csv(scores_csv)
    except (OSError, ValueError) as exc:
        raise DataError(f"{scores_csv}: unreadable scores table ({exc})") from None
    missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
    if missing:
        raise DataError(f"{scores_csv}: not a scores table of forestbench collect (lacks {', '.join(missing)})")
    if frame.empty or not (frame["experiment"] == experiment).all():
        raise DataError(f"{scores_csv}: holds no rows, or rows of another experiment than {experiment}")
    for (dataset, variant, repeat), rows in frame.groupby(["dataset", "variant", "repeat"]):
        spec = _job_spec(plan, experiment, str(dataset), str(variant), int(repeat))
        where = f"{scores_csv}: {dataset}/{variant} repeat {repeat}"
        if spec is None:
            raise DataError(f"{where}: not a job of {experiment} in {plan.source}")
        if set(rows["seed"]) != {spec["seed"]}:
            raise DataError(f"{where}: seed {sorted(set(rows['seed']))} is not the configuration's {spec['seed']}")
        for key, value in spec["params"].items():
            column = f"param.{key}"
            got = list(rows[column]) if column in rows else ["(absent)"]
            if not all(_same_value(g, value) for g in got):
                raise DataError(f"{where}: {column} is {sorted(set(map(str, got)))}, the configuration gives "
                                f"{value!r}")
    folder = archive / experiment / IMPORTED
    snap_path = archive / experiment / SNAPSHOT
    snap = _snapshot_text(snapshot(plan, experiment))
    if snap_path.exists() and snap_path.read_text(encoding="utf-8") != snap:
        raise ConfigError(f"{snap_path}: {experiment} was archived under another configuration than {plan.source}")
    if not snap_path.exists():
        write_text(snap_path, snap)
    data = scores_csv.read_bytes()
    _write_bytes(folder / "scores.csv", data)
    import hashlib

    n_runs = frame[["dataset", "variant", "repeat"]].drop_duplicates().shape[0]
    write_text(folder / "SOURCE.md",
               f"# Imported scores table of `{experiment}`\n\n"
               f"`scores.csv` is `{scores_csv.as_posix()}` (sha256 {hashlib.sha256(data).hexdigest()}), as "
               f"`forestbench collect` wrote it: {len(frame)} rows, {n_runs} runs. Its run records were not kept, "
               "so `archive restore` has nothing to put back for them and a rerun fits them again; the "
               "selection table (validation scores of every candidate) is not part of it."
               + (f"\n\n{note.strip()}\n" if note.strip() else "\n"))
    return folder / "scores.csv"


# ------------------------------------------------------------------------------------------------------ tables
def collected(archive: Path, experiment: str, max_repeats: int | None = None, with_selection: bool = True):
    """The experiment's scores and selection tables from its archived records (``forestbench.workflow.collect``, which
    reads them compressed as they are) and its imported scores table; a record replaces the imported rows of
    its (dataset, variant, repeat). ``max_repeats`` (the experiment's) caps the repeats a complete cell has.
    ``with_selection=False``: the selection table is left empty (the verdicts read the scores alone, and the
    candidates' validation curves of the tuned experiments are most of the work)."""
    import pandas as pd

    from forestbench.workflow.collect import COLUMNS, REQUIRED_COLUMNS, collect, collect_selection

    archive = Path(archive)
    paths = sorted((archive / experiment / "runs").glob("*/*/repeat-*.json.gz"))
    scores = collect(paths, experiment=experiment, max_repeats=max_repeats)
    selection = collect_selection(paths if with_selection else [])
    imported = archive / experiment / IMPORTED / "scores.csv"
    if imported.exists():
        extra = pd.read_csv(imported)
        if not set(REQUIRED_COLUMNS) <= set(extra.columns):
            raise DataError(f"{imported}: lacks the scores column(s) "
                            f"{', '.join(c for c in REQUIRED_COLUMNS if c not in extra.columns)}")
        extra = extra.reindex(columns=list(dict.fromkeys([*extra.columns, *COLUMNS])))  # added columns: empty
        if not (extra["experiment"] == experiment).all():
            raise DataError(f"{imported}: holds rows of another experiment than {experiment}")
        if not scores.empty:
            have = set(zip(scores["dataset"], scores["variant"], scores["repeat"]))
            extra = extra[[k not in have for k in zip(extra["dataset"], extra["variant"], extra["repeat"])]]
        if not extra.empty:
            frame = pd.concat([scores, extra], ignore_index=True) if not scores.empty else extra
            params = sorted(c for c in frame.columns if c not in COLUMNS)
            scores = frame[COLUMNS + params].sort_values(["dataset", "variant", "repeat", "metric", "step"],
                                                         na_position="first", kind="stable").reset_index(drop=True)
        sel = archive / experiment / IMPORTED / "selection.csv"
        if with_selection and sel.exists():
            selection = pd.concat([selection, pd.read_csv(sel)], ignore_index=True)
    return scores, selection


def _write_tables(archive: Path, experiment: str, out_dir: Path, max_repeats: int | None = None,
                  with_selection: bool = True) -> tuple[Path, Path | None, int]:
    """``out_dir``/scores.csv and, ``with_selection``, ``out_dir``/selection.csv (else None) of an archived
    experiment, and its number of run records."""
    from forestbench.workflow.collect import write_scores

    scores, selection = collected(archive, experiment, max_repeats, with_selection)
    n_records = len(list((archive / experiment / "runs").glob("*/*/repeat-*.json.gz")))
    imported = archive / experiment / IMPORTED / "scores.csv"
    scores_csv, selection_csv = out_dir / "scores.csv", out_dir / "selection.csv"
    if n_records == 0 and imported.exists():
        _write_bytes(scores_csv, imported.read_bytes())     # exactly the imported table
    else:
        write_scores(scores, scores_csv)
    if not with_selection:
        return scores_csv, None, n_records
    write_scores(selection, selection_csv)
    return scores_csv, selection_csv, n_records


def report(archive: Path, experiments_cfg: dict, reference_dir: Path, out: Path,
           experiments: list[str] | None = None) -> list[str]:
    """Every archived experiment's scores.csv, selection.csv and report under ``out`` (as the workflow lays them
    out), then ``out``/report/index.{html,md}; no fit, no prepared data. Returns the experiments built."""
    from forestbench.report import build_experiment_report, build_index

    archive, out = Path(archive), Path(out)
    archived = archived_experiments(archive)
    names = experiments or archived
    for name in names:
        if name not in archived:
            raise DataError(f"{archive} holds no results of experiment {name!r} (archived: "
                            f"{', '.join(archived) or 'none'})")
        if name not in experiments_cfg:
            raise ConfigError(f"experiment {name!r} is archived but not in the configuration; give the "
                              "--configfile it belongs to")
    for name in names:
        scores_csv, selection_csv, _ = _write_tables(archive, name, out / name,
                                                     (experiments_cfg[name] or {}).get("max_repeats"))
        build_experiment_report(scores_csv, name, experiments_cfg[name] or {}, reference_dir, out / name / "report",
                                selection_csv=selection_csv)
    build_index({name: out / name / "report" for name in names}, out / "report")
    return names


# ------------------------------------------------------------------------------------------- README summary table
def _headings(readme: Path) -> set[str]:
    return {line.lstrip("#").strip() for line in Path(readme).read_text(encoding="utf-8").splitlines()
            if line.startswith("#")}


def _explained_mask(comparison, ref_cfg: dict, where: str, headings: set[str]):
    """Rows of ``comparison.frame`` named by the reference entry's ``explained`` list (each item: column -> value
    of the reproduction table, and ``see``: the heading of config/README.md that explains the miss)."""
    import pandas as pd

    frame = comparison.frame
    mask = pd.Series(False, index=frame.index)
    items = ref_cfg.get("explained") or []
    if not isinstance(items, list):
        raise ConfigError(f"{where}.explained must be a list")
    for i, item in enumerate(items):
        if not isinstance(item, dict) or "see" not in item or len(item) < 2:
            raise ConfigError(f"{where}.explained[{i}] must map reproduction-table columns to values and give "
                              "'see': a heading of config/README.md")
        if str(item["see"]) not in headings:
            raise ConfigError(f"{where}.explained[{i}].see: config/README.md has no heading {item['see']!r}")
        keys = [k for k in item if k != "see"]
        unknown = [k for k in keys if k not in frame.columns]
        if unknown:
            raise ConfigError(f"{where}.explained[{i}]: {', '.join(unknown)} is not a column of the reproduction "
                              f"table of {comparison.table} (columns: {', '.join(frame.columns)})")
        hit = pd.Series(True, index=frame.index)
        for k in keys:
            hit &= frame[k].astype(str) == str(item[k])
        mask |= hit
    return mask


def _references(cfg: dict) -> list[dict]:
    refs = cfg.get("reference")
    return refs if isinstance(refs, list) else ([refs] if refs else [])


def _explained_by_reading(comparison, ref_cfg: dict, where: str, headings: set[str], experiments_cfg: dict,
                          archived: list[str], comparisons):
    """Rows of ``comparison.frame`` that one of the entry's ``explained_by`` readings reproduces: the same published
    cell (published dataset and variant) within tolerance in any reference entry of the same table of the
    experiment that runs that reading of record (``experiment``), optionally only on ``datasets``; ``see`` names the
    heading of config/README.md that says why that reading is the one of record. ``explained_by`` is one reading
    or a list of them (e.g. the forests' and the boosting budget's, each run by an experiment of its own). Nothing
    is explained by a reading whose experiment has no archived results yet."""
    import pandas as pd

    frame = comparison.frame
    mask = pd.Series(False, index=frame.index)
    specs = ref_cfg.get("explained_by")
    if not specs:
        return mask
    if isinstance(specs, dict):
        return _explained_by_one(comparison, specs, where + ".explained_by", headings, experiments_cfg, archived,
                                 comparisons)
    if not isinstance(specs, list):
        raise ConfigError(f"{where}.explained_by must be a reading (experiment, see) or a list of them, "
                          f"not {type(specs).__name__}")
    for j, spec in enumerate(specs):
        mask |= _explained_by_one(comparison, spec, f"{where}.explained_by[{j}]", headings, experiments_cfg,
                                  archived, comparisons)
    return mask


def _explained_by_one(comparison, spec, where: str, headings: set[str], experiments_cfg: dict,
                      archived: list[str], comparisons):
    """The rows that one ``explained_by`` reading (``where`` names it in errors) reproduces."""
    import pandas as pd

    from forestbench.report.reproduction import STATUS_OK

    frame = comparison.frame
    mask = pd.Series(False, index=frame.index)
    if not isinstance(spec, dict) or not spec.get("experiment") or not spec.get("see"):
        raise ConfigError(f"{where} must give 'experiment' (the run of the reading of record) and "
                          "'see' (a heading of config/README.md)")
    other = spec["experiment"]
    if other not in experiments_cfg:
        raise ConfigError(f"{where}.experiment: no experiment {other!r} in the configuration")
    if str(spec["see"]) not in headings:
        raise ConfigError(f"{where}.see: config/README.md has no heading {spec['see']!r}")
    if not {"dataset_id", "variant", "dataset"} <= set(frame.columns):
        raise ConfigError(f"{where}: the comparison with {comparison.table} has no cells per dataset "
                          "and variant to explain")
    if other not in archived:
        return mask
    reproduced = set()
    for other_ref, other_comp in comparisons(other)[1]:
        if other_comp.table != comparison.table or not {"dataset_id", "variant"} <= set(other_comp.frame.columns):
            continue
        ok = other_comp.frame[other_comp.frame["status"] == STATUS_OK]
        reproduced |= set(zip(ok["dataset_id"].astype(str), ok["variant"].astype(str)))
    mask = pd.Series([key in reproduced for key in zip(frame["dataset_id"].astype(str),
                                                         frame["variant"].astype(str))], index=frame.index)
    if spec.get("datasets") is not None:
        mask &= frame["dataset"].astype(str).isin([str(d) for d in spec["datasets"]])
    return mask


@dataclass
class TableRow:
    experiment: str
    table: str
    what: str
    source: str
    cells: int
    run: int
    within: int
    out: int
    explained: int
    chance: float | None = None      # out of tolerance expected by chance alone (Reproduction.chance), std rule only


def summary_rows(archive: Path, experiments_cfg: dict, reference_dir: Path, config_readme: Path) -> tuple[
        list[TableRow], list[str]]:
    """One row per (archived experiment, reference entry) with the reproduction verdicts of the reports
    (``forestbench.report.reproduction.compare_any``); and the archived experiments without reference entries or
    missing from the configuration."""
    from forestbench.report.data import load_scores
    from forestbench.report.reproduction import STATUS_DISAGREE, STATUS_NOT_RUN, STATUS_OK, STATUS_OUT, compare_any

    headings = _headings(config_readme)
    archived = archived_experiments(archive)
    cache: dict[str, tuple[int, list]] = {}

    def comparisons(name: str) -> tuple[int, list]:
        """(run records, [(reference entry, comparison)]) of an archived experiment, computed once."""
        if name not in cache:
            cfg = experiments_cfg[name]
            with tempfile.TemporaryDirectory(prefix="forestbench-archive-") as tmp:
                scores_csv, _, n_records = _write_tables(archive, name, Path(tmp) / "tables",
                                                         cfg.get("max_repeats"), with_selection=False)
                scores = load_scores(scores_csv, name)
            cache[name] = (n_records, [(ref_cfg, compare_any(scores, ref_cfg, reference_dir, name,
                                                             cfg.get("datasets")))
                                       for ref_cfg in _references(cfg)])
        return cache[name]

    rows, others = [], []
    for name in archived:
        cfg = experiments_cfg.get(name)
        refs = _references(cfg or {})
        if not refs:
            others.append(name + ("" if cfg is not None else " (not in the configuration)"))
            continue
        n_records, comps = comparisons(name)
        source = (f"{n_records} run records" if n_records
                  else "imported scores table" if (archive / name / IMPORTED).is_dir() else "no run records yet")
        for j, (ref_cfg, comp) in enumerate(comps):
            where = f"experiments.{name}.reference" + (f"[{j}]" if len(refs) > 1 else "")
            status = comp.frame["status"]
            out = status.isin([STATUS_OUT, STATUS_DISAGREE])
            explained = out & (_explained_mask(comp, ref_cfg, where, headings)
                               | _explained_by_reading(comp, ref_cfg, where, headings, experiments_cfg, archived,
                                                       comparisons))
            what = getattr(comp, "what", "published scores")
            run_protocol = " ".join(str(ref_cfg.get("run_protocol") or "").split())
            if run_protocol:   # two entries of one table (e.g. the same cells run two ways) stay told apart
                what += f"; run: {run_protocol}"
            chance = comp.chance() if hasattr(comp, "chance") else None
            rows.append(TableRow(name, comp.table, what, source,
                                 int(len(status)), int((status != STATUS_NOT_RUN).sum()),
                                 int((status == STATUS_OK).sum()), int(out.sum()), int(explained.sum()),
                                 None if chance is None else chance["expected_out"]))
    return rows, others


#: the claims a sweep report checks (forestbench.report.experiment.sweep_claims), as the README's table names them
CLAIM_TEXT = {"matches": "the swept value from which a curve matches its baseline, beside the value claimed",
              "more_robust": "a curve loses less than the baseline curve from its best point to the largest value",
              "beats_best": "a curve's best point against the baseline's best (better, or not)"}


@dataclass
class ClaimRow:
    experiment: str
    source: str
    claim: str
    checked: int
    agrees: int
    differs: int
    unjudged: int


def claim_rows(archive: Path, experiments_cfg: dict, reference_dir: Path) -> list[ClaimRow]:
    """Per archived experiment whose sweep reports check a text's claims (``matches`` with a claimed value,
    ``against_curve``), per claim: the (dataset, curve) pairs checked and their verdicts, as the reports give them."""
    from forestbench.report.experiment import experiment_claims

    out = []
    for name in archived_experiments(archive):
        cfg = experiments_cfg.get(name) or {}
        sweeps = [r for r in cfg.get("reports") or [] if isinstance(r, dict) and r.get("kind") == "sweep"
                  and (r.get("against_curve") or any(isinstance(m, dict) and m.get("claimed") is not None
                                                     for m in r.get("matches") or []))]
        if not sweeps:
            continue
        with tempfile.TemporaryDirectory(prefix="forestbench-archive-") as tmp:
            scores_csv, _, _ = _write_tables(archive, name, Path(tmp), cfg.get("max_repeats"),
                                             with_selection=False)
            claims = experiment_claims(scores_csv, name, cfg, reference_dir)
        for claim in CLAIM_TEXT:
            verdicts = [c["verdict"] for c in claims if c["claim"] == claim]
            if verdicts:
                out.append(ClaimRow(name, " ".join(str(cfg.get("source", "")).split()), claim, len(verdicts),
                                    verdicts.count("agrees"), verdicts.count("differs"),
                                    verdicts.count("unjudged")))
    return out


def readme_table(archive: Path, experiments_cfg: dict, reference_dir: Path, config_readme: Path,
                 configfile: str) -> str:
    """The Markdown that goes between the README's archive-table markers."""
    rows, others = summary_rows(archive, experiments_cfg, reference_dir, config_readme)
    claims = claim_rows(archive, experiments_cfg, reference_dir)
    command = f"python -m forestbench archive readme --configfile {configfile}"
    lines = [f"<!-- generated by `{command}`; do not edit by hand -->", ""]
    if not rows and not others:
        return "\n".join(lines + ["The archive holds no results yet."]) + "\n"
    if rows:
        lines += ["| published table | experiment | compared | source | cells published | run | within tolerance "
                  "| out of tolerance | explained | out by chance |", "|---|---|---|---|---:|---:|---:|---:|---:|---:|"]
        lines += [f"| {r.table} | `{r.experiment}` | {r.what} | {r.source} | {r.cells} | {r.run} | {r.within} | "
                  f"{r.out} | {r.explained} | {'' if r.chance is None else f'{r.chance:.1f}'} |" for r in rows]
        lines += ["", "Within tolerance: the report's verdict (each reference entry's `tolerance_std` published std, "
                  "or `tolerance_abs` / `tolerance_rel` where no std is printed; p-values and ranks: the published "
                  "decision, re-tested or re-ranked on the published cells of the datasets we ran where the entry "
                  "names `cells`). "
                  "Explained: out-of-tolerance cells whose miss `config/README.md` explains (the entry's "
                  "`explained` list names the cells and the heading, or its `explained_by` names the experiment of "
                  "the reading of record, which has the same cell within tolerance). Out by chance: the cells "
                  "the std rule would leave out by chance alone, were our means and the published ones two draws "
                  "of the same protocol (each over the cell's splits, with the two stds as measured; the report's "
                  "reproduction section gives the probability of the count seen). Cells run but neither within "
                  "nor out are "
                  "unjudged: a dataset's run still under way, a reduced protocol, or a test over too few datasets "
                  "to reach significance at all (Wilcoxon needs 6 at 0.05)."]
    if others:
        lines += ["", "Archived without published numbers to compare with: " + ", ".join(f"`{o}`" for o in others)
                  + "."]
    if claims:
        lines += ["", "Claims of the texts on figures without published numbers, checked by the experiments' sweep "
                  "reports (`matches`, `against_curve`; `config/README.md`, \"Published numbers beside ours\"), per "
                  "dataset and curve:", "",
                  "| source | experiment | claim | checked | agrees | differs | unjudged |",
                  "|---|---|---|---:|---:|---:|---:|"]
        lines += [f"| {c.source} | `{c.experiment}` | `{c.claim}`: {CLAIM_TEXT[c.claim]} | {c.checked} | "
                  f"{c.agrees} | {c.differs} | {c.unjudged} |" for c in claims]
        lines += ["", "Unjudged: a curve or its baseline with a point not run or still under way."]
    return "\n".join(lines) + "\n"


def replace_table(readme_text: str, table: str, readme: Path) -> str:
    start, end = readme_text.find(TABLE_START), readme_text.find(TABLE_END)
    if start < 0 or end < start:
        raise ConfigError(f"{readme}: no '{TABLE_START}' ... '{TABLE_END}' markers")
    return readme_text[:start + len(TABLE_START)] + "\n" + table + readme_text[end:]


def current_table(readme_text: str, readme: Path) -> str:
    start, end = readme_text.find(TABLE_START), readme_text.find(TABLE_END)
    if start < 0 or end < start:
        raise ConfigError(f"{readme}: no '{TABLE_START}' ... '{TABLE_END}' markers")
    return readme_text[start + len(TABLE_START):end].removeprefix("\n")


# --------------------------------------------------------------------------------------------------------- CLI
def _archived_snapshot(archive: Path, experiment: str) -> str | None:
    """The text of ``experiment``'s archived ``experiment.json``, None when it has none."""
    path = Path(archive) / experiment / SNAPSHOT
    return path.read_text(encoding="utf-8") if path.exists() else None


def check_current(archive: Path, configfile: Path, experiments: list[str] | None = None) -> None:
    """Refuse to show archived results as those of ``configfile`` when an experiment was archived under another
    configuration (its ``experiment.json`` is not what the configuration now gives): a table would silently show
    the results of other parameters."""
    plan = _plan(configfile)
    archive = Path(archive)
    stale = []
    for name in experiments or archived_experiments(archive):
        archived = _archived_snapshot(archive, name)
        if name in plan.experiments and archived is not None and archived != _snapshot_text(snapshot(plan, name)):
            stale.append(str(archive / name / SNAPSHOT))
    if stale:
        raise ConfigError(f"{', '.join(stale)}: archived under another configuration than {configfile} (methods, "
                          "datasets, protocol or a method revision changed since): these results are not the "
                          "configuration's. Give the --configfile they were run with, or rerun what the change "
                          "affects and archive it with `archive add --reconfigure` (git keeps the old results)")


def _experiments_cfg(configfile: Path) -> dict:
    from forestbench.report.cli import _load_experiments

    return _load_experiments(configfile)


def _add(args) -> int:
    outcome = add(args.results, args.archive, _plan(args.configfile), args.experiments, replace=args.replace,
                  reconfigure_changed=args.reconfigure)
    print(f"archive add: {outcome.line('archived')} -> {args.archive}")
    if outcome.removed:
        print(f"  reconfigured: {len(outcome.removed)} archived file(s) the configuration no longer gives removed "
              f"(git keeps them), e.g. {outcome.removed[0]}")
    if outcome.skipped:
        print(f"  not archived, not experiments of {args.configfile}: {', '.join(outcome.skipped)}")
    for path in outcome.kept:
        print(f"  kept the archived {path} (results/ holds another version; --replace to archive that one)")
    for message in outcome.refused:
        print(f"  refused: {message}", file=sys.stderr)
    if not args.no_readme:
        _refresh_readme(args)
    return 1 if outcome.refused else 0


def _refresh_readme(args) -> None:
    """After ``archive add``: rewrite the README's reproduction table, so that a commit of the archive can carry
    a current table (a test checks it). Only the README beside the archive (``README.md`` of the folder holding
    ``archive/``), and only when its table was generated from the same ``--configfile``; otherwise say how."""
    readme = Path(args.archive).resolve().parent / "README.md"
    if not readme.is_file():
        return
    text = readme.read_text(encoding="utf-8")
    try:
        table = current_table(text, readme)
    except ConfigError:
        return
    if f"archive readme --configfile {args.configfile}`" not in table.splitlines()[0]:
        print(f"  {readme}: its table is not generated from {args.configfile}; `python -m forestbench archive "
              f"readme --configfile ...` with that table's configuration rewrites it")
        return
    new = replace_table(text, readme_table(args.archive, _experiments_cfg(args.configfile), args.reference_dir,
                                           args.config_readme, str(args.configfile)), readme)
    if new != text:
        write_text(readme, new)
    print(f"  {readme}: reproduction table {'updated' if new != text else 'already current'}")


def _restore(args) -> int:
    outcome, stale = restore(args.archive, args.results, _plan(args.configfile), args.experiments, data=args.data,
                             allow_missing_data=args.allow_missing_data, datasets=args.datasets)
    print(f"archive restore: {outcome.line('restored')} -> {args.results}")
    if outcome.skipped:
        print(f"  not restored, not experiments of {args.configfile}: {', '.join(outcome.skipped)}")
    for path in outcome.kept:
        print(f"  kept {path} (it differs from the archived one)")
    imported = [e for e in (args.experiments or archived_experiments(args.archive))
                if (args.archive / e / IMPORTED).is_dir()]
    if imported:
        print(f"  {', '.join(imported)}: an imported scores table has no run records to restore (a rerun fits "
              "those runs)")
    if outcome.incomplete:
        print(f"  {len(outcome.incomplete)} restored record(s) lack archived tuning files, so Snakemake will tune "
              f"and refit them: {'; '.join(outcome.incomplete[:3])}")
    if stale:
        print(f"  {len(stale)} archived record(s) not restored: {args.configfile} now runs them differently (they "
              f"will be refitted), e.g. {stale[0]}")
    return 0


def _report(args) -> int:
    check_current(args.archive, args.configfile, args.experiments)
    names = report(args.archive, _experiments_cfg(args.configfile), args.reference_dir, args.out, args.experiments)
    print(f"archive report: {len(names)} experiment(s) rebuilt under {args.out} "
          f"({', '.join(names) or 'the archive is empty'}); index: {args.out / 'report' / 'index.html'}")
    return 0


def _readme(args) -> int:
    check_current(args.archive, args.configfile)
    table = readme_table(args.archive, _experiments_cfg(args.configfile), args.reference_dir, args.config_readme,
                         str(args.configfile))
    text = Path(args.readme).read_text(encoding="utf-8")
    if args.check:
        if current_table(text, args.readme) != table:
            print(f"{args.readme}: the archive table is out of date; run `python -m forestbench archive readme "
                  f"--configfile {args.configfile}`", file=sys.stderr)
            return 1
        print(f"{args.readme}: the archive table is current")
        return 0
    new = replace_table(text, table, args.readme)
    if new != text:
        write_text(args.readme, new)
    print(f"archive readme: {args.readme} {'updated' if new != text else 'already current'}")
    return 0


def _import(args) -> int:
    path = import_scores(args.scores, args.archive, _plan(args.configfile), args.experiment, args.note or "")
    print(f"archive import: {args.scores} -> {path}")
    return 0


def register(subparsers) -> None:
    parser = subparsers.add_parser("archive", help="keep finished results in the repository's archive/, put them "
                                                   "back, rebuild reports from them")
    sub = parser.add_subparsers(dest="archive_command", required=True)

    def common(p, configfile=True):
        p.add_argument("--archive", type=Path, default=ARCHIVE, help="the archive folder (default: archive)")
        if configfile:
            p.add_argument("--configfile", type=Path, default=Path("config/thesis.yaml"),
                           help="the configuration the results belong to (default: config/thesis.yaml)")
        p.add_argument("--experiments", nargs="+", default=None, metavar="E",
                       help="only these experiments (default: all)")

    p = sub.add_parser("add", help="copy every finished run record and tuning file of results/ into the archive")
    common(p)
    p.add_argument("--results", type=Path, default=Path("results"), help="results folder (default: results)")
    p.add_argument("--replace", action="store_true",
                   help="overwrite an archived file whose results/ counterpart differs (a refitted run)")
    p.add_argument("--reconfigure", action="store_true",
                   help="an experiment archived under another configuration: remove its archived runs that the "
                        "configuration no longer gives (and their tuning files), keep the others, then archive")
    p.add_argument("--no-readme", action="store_true",
                   help="leave README.md's reproduction table as it is (by default `add` rewrites it from the "
                        "archive when README.md sits beside the archive and its table comes from --configfile)")
    p.add_argument("--reference-dir", type=Path, default=Path("config/reference"))
    p.add_argument("--config-readme", type=Path, default=Path("config/README.md"),
                   help="where explained misses are explained (for the README's table)")
    p.set_defaults(func=_add)

    p = sub.add_parser("restore", help="put archived files back under results/ so that snakemake fits only what "
                                       "the archive lacks (prepare the data first: snakemake --until split)")
    common(p)
    p.add_argument("--results", type=Path, default=Path("results"), help="results folder (default: results)")
    p.add_argument("--data", type=Path, default=Path("data"), help="data folder (default: data)")
    p.add_argument("--datasets", nargs="+", default=None, metavar="D",
                   help="only the files of these datasets (default: all), e.g. those of select={datasets: [...]}")
    p.add_argument("--allow-missing-data", action="store_true",
                   help="restore even if the prepared data of the records is missing (snakemake would refit them)")
    p.set_defaults(func=_restore)

    p = sub.add_parser("report", help="rebuild every archived experiment's tables and report, and the index, from "
                                      "the archive (no fit, no data)")
    common(p)
    p.add_argument("--reference-dir", type=Path, default=Path("config/reference"))
    p.add_argument("--out", type=Path, default=Path("results"), help="results root to write (default: results)")
    p.set_defaults(func=_report)

    p = sub.add_parser("import", help="keep a scores table whose run records are gone (reports are rebuilt from "
                                      "it; a rerun fits its runs again)")
    p.add_argument("--archive", type=Path, default=ARCHIVE, help="the archive folder (default: archive)")
    p.add_argument("--configfile", type=Path, default=Path("config/thesis.yaml"))
    p.add_argument("--experiment", required=True)
    p.add_argument("--scores", type=Path, required=True, help="a scores.csv written by forestbench collect")
    p.add_argument("--note", default=None, help="a sentence on where the table comes from (kept in SOURCE.md)")
    p.set_defaults(func=_import)

    p = sub.add_parser("readme", help="write (or --check) the reproduction table of README.md from the archive")
    p.add_argument("--archive", type=Path, default=ARCHIVE, help="the archive folder (default: archive)")
    p.add_argument("--configfile", type=Path, default=Path("config/thesis.yaml"))
    p.add_argument("--reference-dir", type=Path, default=Path("config/reference"))
    p.add_argument("--config-readme", type=Path, default=Path("config/README.md"),
                   help="where explained misses are explained (its headings are checked)")
    p.add_argument("--readme", type=Path, default=Path("README.md"))
    p.add_argument("--check", action="store_true", help="only check that the README's table is current")
    p.set_defaults(func=_readme)
