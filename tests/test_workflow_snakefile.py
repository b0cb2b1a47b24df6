"""The Snakefile's mechanics helpers (forestbench.workflow.snakefile)."""
import functools
import inspect
import re
from pathlib import Path

from snakemake.common import get_input_function_aux_params

from forestbench.workflow.snakefile import freeze_signatures

REPO = Path(__file__).resolve().parents[1]


def _namespace():
    def resources_fn(wildcards, attempt):
        return attempt

    def params_fn(wildcards, input, **kwargs):
        return input

    def decorated(wildcards):
        return wildcards

    decorated.__signature__ = inspect.Signature()   # a decorator's own choice, kept
    return {"resources_fn": resources_fn, "params_fn": params_fn, "decorated": decorated,
            "partial": functools.partial(resources_fn, attempt=1), "cls": dict, "builtin": len, "number": 3}


def test_every_plain_function_gets_the_signature_inspect_computes():
    ns = _namespace()
    before = {name: inspect.signature(f) for name, f in ns.items() if inspect.isfunction(f)}
    assert freeze_signatures(ns) == 2
    for name in ("resources_fn", "params_fn"):
        assert ns[name].__dict__["__signature__"] == before[name]
        assert inspect.signature(ns[name]) is ns[name].__dict__["__signature__"]   # a lookup from now on
    assert ns["decorated"].__signature__ == inspect.Signature()
    assert "__signature__" not in ns["partial"].__dict__
    assert freeze_signatures(ns) == 0   # idempotent


def test_snakemake_passes_the_same_arguments_after_freezing():
    ns = _namespace()
    candidates = {"wildcards": "w", "input": "i", "attempt": 2, "threads": 4, "rulename": "fit"}
    before = {name: get_input_function_aux_params(ns[name], candidates) for name in ("resources_fn", "params_fn")}
    freeze_signatures(ns)
    for name, expected in before.items():
        assert get_input_function_aux_params(ns[name], candidates) == expected
    assert set(before["resources_fn"]) == {"wildcards", "attempt"}
    assert before["params_fn"] == candidates   # **kwargs takes every candidate


def test_rules_call_named_functions_only():
    # freeze_signatures reaches the Snakefile's globals; a lambda in a rule would be a per-job function it misses
    for path in sorted((REPO / "workflow" / "rules").glob("*.smk")) + [REPO / "Snakefile"]:
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            assert not re.search(r"\blambda\b", line.split("#")[0]), f"{path.name}:{number}: {line.strip()}"
