# forestbench: datasets -> splits -> fit/predict/score -> collect -> report.
# Usage: snakemake --cores 2 (embedded offline suite); snakemake --cores N --configfile config/thesis.yaml.
from snakemake.utils import min_version, validate

min_version("9.0")


# The embedded offline suite is the default; a --configfile on the command line replaces it (instead of being
# merged into it), so `--configfile config/thesis.yaml` runs exactly the thesis experiments.
if not workflow.overwrite_configfiles:

    configfile: "config/config.yaml"


try:
    from forestbench.errors import ForestbenchError
    from forestbench.validation import apply_cli_overrides, check_workflow_config
except ImportError:
    pass  # common.smk explains how to make forestbench importable
else:
    try:
        # nested `--config` values arrive as strings (`select={available: true}`): read them as the schema's types
        apply_cli_overrides(config, workflow.config_settings.overwrite_config)
        # duplicate keys and schema errors, naming the config file and the key
        check_workflow_config(config, workflow.configfiles)
    except ForestbenchError as _exc:
        raise WorkflowError(str(_exc))
validate(config, "workflow/schemas/config.schema.yaml")  # also fills in the schema's defaults


# Timing experiments (`timing: true`): locally their fit jobs hold one `timing_slot` each and only one slot exists,
# so they run one at a time (never two timed fits competing for the cores); `--resources timing_slot=N` overrides it.
# On a cluster they get exclusive nodes instead (workflow/rules/resources.smk) and no slot limit applies.
if workflow.local_exec and "timing_slot" not in workflow.global_resources:
    workflow.register_resource("timing_slot", 1)


include: "workflow/rules/common.smk"
include: "workflow/rules/download.smk"
include: "workflow/rules/resources.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/tune.smk"
include: "workflow/rules/fit.smk"
include: "workflow/rules/report.smk"


# Snakemake reads the signature of an input, params or resources function at every call (about ten per job);
# stored once, every later read is a lookup (forestbench.workflow.snakefile)
from forestbench.workflow.snakefile import freeze_signatures

freeze_signatures(globals())


rule all:
    input:
        all_targets(),
    default_target: True
