# Shared helpers: the expanded plan (forestbench.workflow.experiments) and the inputs/parameters rules derive from it.
import json
import os
import sys

try:
    import forestbench
except ImportError as _exc:
    raise WorkflowError(
        f"forestbench is not importable by the Python running Snakemake ({sys.executable}): {_exc}. "
        'Activate the environment where you ran `pip install -e ".[test]"` (or install it into this one) '
        "and run snakemake from there."
    )
from forestbench.datasets.download import raw_root, remote_files, unavailable_reason
from forestbench.datasets.registry import write_entry_file
from forestbench.workflow.experiments import Job, Plan, TuneJob
from forestbench.workflow.variants import NAME_PATTERN

# Parameters are checked against the estimators (which imports them) once, by the Snakemake process that builds the
# DAG; the re-parses of cluster and subprocess jobs skip it, and so does their printing of the plan.
_MAIN = workflow.is_main_process
PLAN = Plan(config, source=", ".join(map(str, workflow.configfiles)) or "config", check_params=_MAIN)
# the plan without `select`: a partial rerun still collects every finished record of an experiment
FULL_PLAN = (
    Plan({k: v for k, v in config.items() if k != "select"}, registry=PLAN.registry, check_params=False)
    if config.get("select")
    else PLAN
)

if _MAIN:
    # every reference entry against its published table now, not in the report job after the fits
    from forestbench.report.reproduction import check_references

    check_references({name: config["experiments"][name] for name in PLAN.experiments}, "config/reference")
    for _line in PLAN.describe():
        print(f"forestbench: {_line}", file=sys.stderr)


# Every rule's shell command ends with `> {log} 2>&1 || python -m forestbench.workflow.joblog {log} $?`: the output goes to the
# job's log and, when the command fails, its error line is repeated on the console (forestbench.workflow.joblog).


localrules:
    fetch,  # downloads run where the network is: on the login node under a cluster profile
    fetch_all,
    select,
    collect,
    report_experiment,
    report_index,


wildcard_constraints:
    dataset=NAME_PATTERN,
    experiment=NAME_PATTERN,
    variant=NAME_PATTERN,
    protocol=NAME_PATTERN,
    repeat=r"\d+",


def job_of(wildcards):
    return Job(wildcards.experiment, wildcards.dataset, wildcards.variant, int(wildcards.repeat))


def run_spec_json(wildcards):
    return json.dumps(PLAN.run_spec(job_of(wildcards)), sort_keys=True)


def tune_job_of(wildcards):
    return TuneJob(wildcards.experiment, wildcards.dataset, wildcards.variant, int(wildcards.repeat),
                   int(wildcards.chunk))


def tune_spec_json(wildcards):
    return json.dumps(PLAN.tune_spec(tune_job_of(wildcards)), sort_keys=True)


def _variant_of(wildcards):
    return PLAN.experiments[wildcards.experiment].variant(wildcards.variant)


def chunks_of_job(wildcards):
    """The candidate chunks a selection is made from; none for a fitted split restored without them (its selection
    stands: forestbench.workflow.experiments.Plan.selection_stands)."""
    job = job_of(wildcards)
    return [] if PLAN.selection_stands(job) else PLAN.chunk_paths(job)


def _budget_input(wildcards):
    tune = _variant_of(wildcards).tune
    if tune and tune["budget"]:
        return {"budget": PLAN.budget_path(wildcards.experiment, wildcards.dataset, wildcards.variant)}
    return {}


def selected_of_job(wildcards):
    """The selection file a DAG-tuned variant's fit reads, the budget file of an in-job selection with a time
    budget (none for other variants)."""
    variant = _variant_of(wildcards)
    if variant.tuned_in_dag:
        return {"selected": PLAN.selected_path(job_of(wildcards))}
    return _budget_input(wildcards) if variant.tune else {}


def _recompute_tuning_when_forced():
    """A forced tune or budget job (--forcerun tune/budget, --forceall) recomputes its stored candidates and
    timings instead of reusing them (forestbench.workflow.dag_selection reads FORESTBENCH_RECOMPUTE_TUNING). Called from the
    input functions of those rules, i.e. once the DAG settings are known; the jobs inherit the environment."""
    import forestbench.workflow.tuning

    settings = workflow.dag_settings
    if _MAIN and settings is not None and (
        settings.forceall or {"tune", "budget"} & set(map(str, settings.forcerun))
    ):
        forestbench.workflow.tuning.request_recompute()


def budget_of_chunk(wildcards):
    _recompute_tuning_when_forced()
    return _budget_input(wildcards)


def candidates_dir(wildcards):
    """Where the tune jobs of a variant store their scored candidates, one file each (shared by its chunks)."""
    return f"results/tuning/{wildcards.experiment}/{wildcards.dataset}/{wildcards.variant}/candidates"


def budget_arg(wildcards, input):
    return f"--budget {input.budget}" if "budget" in input.keys() else ""


def budget_spec_json(wildcards):
    return json.dumps(PLAN.budget_spec(wildcards.experiment, wildcards.dataset, wildcards.variant), sort_keys=True)


def budget_split(wildcards):
    _recompute_tuning_when_forced()
    return PLAN.split_path(wildcards.dataset, PLAN.experiments[wildcards.experiment].protocol)


def selected_arg(wildcards, input):
    keys = input.keys()
    return " ".join(f"--{name} {input[name]}" for name in ("selected", "budget") if name in keys)


def protocol_json(wildcards):
    return json.dumps(PLAN.protocol_spec(wildcards.dataset, wildcards.protocol), sort_keys=True)


def split_of_job(wildcards):
    return PLAN.split_path(wildcards.dataset, PLAN.experiments[wildcards.experiment].protocol)


def records_of(wildcards):
    exp = PLAN.experiments[wildcards.experiment]
    return [PLAN.record_path(job) for job in exp.jobs()]


def all_records_of(wildcards):
    exp = FULL_PLAN.experiments[wildcards.experiment]
    return " ".join(FULL_PLAN.record_path(job) for job in exp.jobs())


def expected_runs_of(wildcards):
    """results/<experiment>/expected_runs.json: what the full configuration expects of each run of the experiment
    (forestbench.workflow.collect.expected_runs), rewritten only when that changes."""
    from forestbench.workflow.collect import write_expected

    path = f"results/{wildcards.experiment}/expected_runs.json"
    return str(write_expected(FULL_PLAN, wildcards.experiment, path))


def experiments_json(wildcards, all_experiments=False):
    experiments = FULL_PLAN.config["experiments"]
    if not all_experiments:
        experiments = {wildcards.experiment: experiments[wildcards.experiment]}
    return json.dumps(experiments, sort_keys=True)


def all_experiments_json(wildcards):
    return experiments_json(wildcards, all_experiments=True)


def report_manifests(wildcards):
    return [f"results/{name}/report/manifest.json" for name, exp in PLAN.experiments.items() if exp.jobs()]


def all_targets():
    # run records are targets too: a deleted record is recomputed (only its job), then collected again
    targets = [PLAN.record_path(job) for job in PLAN.jobs()]
    for name, exp in PLAN.experiments.items():
        if exp.jobs():
            targets.append(PLAN.scores_path(name))
    return targets + report_manifests(None) + ["results/report/index.html"]


# ---------------------------------------------------------------- raw files of downloaded datasets


# the raw-file cache: $FORESTBENCH_RAW or data/raw, the same folder for fetch, prepare and `forestbench datasets`
RAW_ROOT = os.path.normpath(raw_root())


def raw_root_of(wildcards):
    return RAW_ROOT


def raw_files(dataset):
    """The raw files the prepare step of ``dataset`` reads (empty for embedded sources)."""
    entry = PLAN.registry.get(dataset)
    if entry is None or entry["source"]["kind"] != "download" or unavailable_reason(dataset, entry):
        return []
    return [os.path.join(RAW_ROOT, dataset, rf.name) for rf in remote_files(entry)]


def registry_entry(wildcards):
    """data/registry/<dataset>.json: the part of the dataset's registry entry that determines its prepared file,
    rewritten only when that part changes. As an input of prepare, an edited entry (a generator seed, an encoding
    option) reruns exactly that dataset's prepare and what depends on it, whatever the rerun triggers."""
    try:
        entry = PLAN.registry[wildcards.dataset]
    except KeyError:
        raise WorkflowError(
            f"dataset {wildcards.dataset!r} is not in the registry "
            f"{config.get('datasets_registry', 'config/datasets.yaml')}"
        )
    return str(write_entry_file(wildcards.dataset, entry))


def raw_inputs(wildcards):
    return raw_files(wildcards.dataset)


def all_raw_files():
    return [path for name in sorted(PLAN.registry) for path in raw_files(name)]


# ---------------------------------------------------------------- fetch (download.smk)
def local_source_of(wildcards):
    """For a dataset supplied by local_path: data/registry/<dataset>.local.json, the sha256 of its local files,
    rewritten only when their content changes, so that an edited local file reruns its fetch and everything built
    from it. Built once, by the Snakemake process: a local file that differs from the sha256 recorded in the lock
    file stops the run here, before any job, with the command that accepts it."""
    entry = PLAN.registry.get(wildcards.dataset)
    if entry is None or not entry.get("local_path") or entry["source"]["kind"] != "download":
        return []
    path = os.path.join("data", "registry", f"{wildcards.dataset}.local.json")
    if not _MAIN:
        return [path]
    if wildcards.dataset not in _LOCAL_SIGNATURES:
        from forestbench.datasets.download import ShaLock, local_signature
        from forestbench.errors import ForestbenchError

        try:
            _LOCAL_SIGNATURES[wildcards.dataset] = str(
                local_signature(wildcards.dataset, entry, ShaLock(), registry=_REGISTRY_PATH)
            )
        except ForestbenchError as exc:
            raise WorkflowError(str(exc))
    return [_LOCAL_SIGNATURES[wildcards.dataset]]


_LOCAL_SIGNATURES = {}
_REGISTRY_PATH = config.get("datasets_registry", "config/datasets.yaml")
