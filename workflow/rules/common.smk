# Shared helpers: the expanded plan (forestbench.experiments) and the inputs/parameters rules derive from it.
import json
import sys

from forestbench.experiments import NAME_PATTERN, Job, Plan

PLAN = Plan(config, source=", ".join(map(str, workflow.configfiles)) or "config")
PYTHON = sys.executable

for _experiment, _missing in PLAN.unavailable().items():
    for _dataset, _reason in _missing.items():
        print(
            f"forestbench: experiment {_experiment}: dataset {_dataset} is unavailable and skipped "
            f"({_reason}); supply it with 'local_path' in config/datasets.yaml",
            file=sys.stderr,
        )


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


def protocol_json(wildcards):
    return json.dumps(PLAN.protocol_spec(wildcards.dataset, wildcards.protocol), sort_keys=True)


def split_of_job(wildcards):
    return PLAN.split_path(wildcards.dataset, PLAN.experiments[wildcards.experiment].protocol)


def records_of(wildcards):
    exp = PLAN.experiments[wildcards.experiment]
    return [PLAN.record_path(job) for job in exp.jobs()]


def all_targets():
    targets = []
    for name in PLAN.experiments:
        targets += [PLAN.scores_path(name), f"results/{name}/summary.md"]
    return targets
