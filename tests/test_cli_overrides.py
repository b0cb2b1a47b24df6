"""`--config KEY=VALUE` values read as Snakemake passes them on, then typed by the configuration schema."""
import pytest

from forestbench.errors import ConfigError
from forestbench.workflow.plan import parse_overrides
from forestbench.validation import apply_cli_overrides, coerce_overrides, parse_cli_config


def test_nested_values_arrive_as_strings_like_snakemake_passes_them():
    assert parse_cli_config(["select={available: true}", "max_repeats=2", "threads=true"]) == {
        "select": {"available": "true"}, "max_repeats": 2, "threads": True}


@pytest.mark.parametrize("typed", ["true", "True", "yes", "1"])
def test_booleans_as_users_type_them(typed):
    assert coerce_overrides(parse_cli_config([f"select={{available: {typed}}}"])) == {"select": {"available": True}}


def test_json_lists_numbers_and_nested_experiment_keys():
    got = coerce_overrides(parse_cli_config([
        'select={"available": "false", "datasets": ["yeast", "sf2"]}',
        "experiments={demo_boosting: {threads: 2, max_repeats: 3}}"]))
    assert got["select"] == {"available": False, "datasets": ["yeast", "sf2"]}
    assert got["experiments"]["demo_boosting"]["threads"] == 2
    assert isinstance(got["experiments"]["demo_boosting"]["max_repeats"], int)


def test_strings_stay_strings_where_the_schema_wants_strings():
    got = coerce_overrides(parse_cli_config(["select={datasets: [1, true]}"]))
    assert got == {"select": {"datasets": ["1", "true"]}}


@pytest.mark.parametrize("item, message", [
    ("select={available: maybe}", "select.available: 'maybe' is not a boolean; write it as 'select={available: true}'"),
    ("max_repeats=many", "max_repeats: 'many' is not an integer; write it as 'max_repeats=1'"),
    ("select={experiments: demo}",
     "select.experiments: 'demo' is not a list; write it as 'select={experiments: [a, b]}'"),
])
def test_a_value_of_the_wrong_type_shows_the_accepted_form(item, message):
    with pytest.raises(ConfigError) as err:
        coerce_overrides(parse_cli_config([item]))
    assert message in str(err.value)


def test_overrides_merge_into_the_configuration_key_by_key():
    config = {"select": {"datasets": ["yeast"]}, "seed": 0}
    apply_cli_overrides(config, {"select": {"available": "true"}})
    assert config == {"select": {"datasets": ["yeast"], "available": True}, "seed": 0}


def test_plan_reads_the_command_line_as_the_snakefile_does():
    assert parse_overrides(["select={available: true}", "max_repeats=1"]) == {
        "select": {"available": True}, "max_repeats": 1}
    with pytest.raises(ConfigError, match="not a boolean"):
        parse_overrides(["select={available: maybe}"])
