"""The package tree follows the data flow: every forestbench module imports only modules of its own layer or of the
layers before it (datasets → tree kernel and shared library → the algorithm families → the peers → the workflow →
the reports → the archive and the command line). Estimators therefore know nothing of the workflow, and the reports
never import an estimator."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "report"))
from test_module_structure import PACKAGE, SRC, import_graph  # noqa: E402

#: the layers, first to last; a top-level module or package of ``forestbench`` belongs to exactly one
LAYERS = [
    ("shared utilities", {"errors", "_io", "validation", "_label_layout"}),
    ("datasets", {"datasets"}),
    ("kernel and shared library", {"tree", "linear", "projections", "metrics", "_metrics", "stats", "_target_scale"}),
    ("family: output-projection forests", {"forest"}),
    ("family: gradient boosting", {"boosting"}),
    ("families built on forests: compression, deep cascades", {"compression", "deep"}),
    ("peers", {"peers"}),
    ("workflow", {"workflow"}),
    ("reports", {"report"}),
    ("archive and command line", {"archive", "cli", "__main__", ""}),
]
#: the packages of the research's algorithm families
FAMILIES = {"forest", "boosting", "compression", "deep"}
#: imports that the order alone would allow but the design forbids: the reports and the workflow never import an
#: estimator (the workflow names estimators by import path and imports one only in the job that fits it)
ESTIMATORS = FAMILIES | {"peers", "tree", "linear"}
FORBIDDEN = {"report": ESTIMATORS, "workflow": ESTIMATORS - {"peers"}}


def _unit(module: str) -> str:
    """The top-level unit of a dotted ``forestbench...`` module name ('' for the package itself)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _layer_of(unit: str) -> int:
    for i, (_, units) in enumerate(LAYERS):
        if unit in units:
            return i
    raise AssertionError(f"forestbench.{unit} is in no layer of {__name__}.LAYERS: add it where the data flow "
                         f"puts it")


def violations(graph: dict[str, set[str]]) -> list[str]:
    out = []
    for module, targets in sorted(graph.items()):
        layer = _layer_of(_unit(module))
        for target in sorted(targets):
            other = _layer_of(_unit(target))
            if other > layer:
                out.append(f"{module} ({LAYERS[layer][0]}) imports {target} ({LAYERS[other][0]})")
            elif _unit(target) in FORBIDDEN.get(_unit(module), ()):
                out.append(f"{module} imports the estimator module {target}")
    return out


def test_every_top_level_unit_has_a_layer():
    # a unit is a module (Python, or a Cython kernel compiled into one) or a package
    units = {p.stem if p.is_file() else p.name for p in PACKAGE.iterdir()
             if (p.is_file() and p.suffix in (".py", ".pyx")) or (p.is_dir() and (p / "__init__.py").exists())}
    units = {"" if u == "__init__" else u for u in units}
    for unit in units:
        _layer_of(unit)
    named = set().union(*(u for _, u in LAYERS))
    assert named - units == set(), f"layers name units that do not exist: {sorted(named - units)}"


def test_modules_import_only_earlier_layers():
    assert violations(import_graph()) == []


def test_families_are_subpackages_with_public_estimators():
    import importlib

    for family in FAMILIES | {"peers"}:
        package = importlib.import_module(f"forestbench.{family}")
        assert (SRC / "forestbench" / family / "__init__.py").exists()
        assert package.__all__, f"forestbench.{family} exports nothing"
        for name in package.__all__:
            assert getattr(package, name).__module__.startswith(f"forestbench.{family}.")


def test_registry_names_public_paths():
    from forestbench.workflow.methods import METHODS, _discover

    _discover()
    private = {name: spec.estimator for name, spec in METHODS.items()
               if spec.estimator.startswith("forestbench.") and "._" in spec.estimator.split(":")[0]}
    assert private == {}


@pytest.mark.parametrize("bad", [
    ("forestbench.forest._forest", "forestbench.workflow.runner"),
    ("forestbench.report.tables", "forestbench.deep._cascade"),
    ("forestbench.datasets.store", "forestbench.tree._classes"),
])
def test_the_check_sees_a_backward_import(bad):
    source, target = bad
    assert violations({source: {target}}) != []
