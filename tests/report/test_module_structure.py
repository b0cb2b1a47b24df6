"""The package's import graph has no cycle, and the report kinds are listed once (the registry) and checked
against the configuration schema's enum."""
from __future__ import annotations

import ast
from pathlib import Path

import yaml

SRC = Path(__file__).resolve().parents[2] / "src"
PACKAGE = SRC / "forestbench"
SCHEMA = Path(__file__).resolve().parents[2] / "workflow" / "schemas" / "config.schema.yaml"


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    for path in PACKAGE.rglob("*.pyx"):           # compiled modules: import targets without Python imports
        out.setdefault(".".join(path.relative_to(SRC).with_suffix("").parts), path)
    return out


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST):
    """Every import statement, at module level or inside a function, except under ``if TYPE_CHECKING``."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and _is_type_checking(node):
            yield from (n for child in node.orelse for n in _imports_of(child))
            continue
        yield from _imports_of(node)


def _imports_of(node: ast.AST):
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        yield node
    else:
        yield from _imports(node)


def import_graph() -> dict[str, set[str]]:
    """module -> the forestbench modules it imports. ``from package import name`` points at the submodule when
    ``name`` is one, else at the package; importing a module is not counted as importing its parent packages
    (their ``__init__`` runs first either way, and a lazy ``__init__`` imports nothing on its own)."""
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        if path.suffix != ".py":
            continue
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges = set()
        for node in _imports(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                edges |= {a.name for a in node.names if a.name in modules}
                continue
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:
                target = f"{source}.{alias.name}"
                if target in modules:
                    edges.add(target)
                elif source in modules:
                    edges.add(source)
        edges.discard(name)
        graph[name] = edges
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as [m0, m1, ..., m0], or None."""
    state: dict[str, int] = {}        # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_find_cycle_sees_a_function_level_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


def test_forestbench_has_no_import_cycle():
    # Every import counts, including those deferred into functions: a deferred import is still a dependency of
    # the module, and a cycle through one makes what a module provides depend on import order.
    graph = import_graph()
    assert "forestbench.report.experiment" in graph and "forestbench.cli" in graph
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_report_leaf_modules_import_no_other_report_module():
    graph = import_graph()
    for leaf, allowed in (("forestbench.report.kinds", set()), ("forestbench.report.verdicts", set()),
                          ("forestbench.report.reference_tables", {"forestbench.report.verdicts"})):
        inside = {m for m in graph[leaf] if m.startswith("forestbench.report")}
        assert inside <= allowed, f"{leaf} imports {sorted(inside - allowed)}"


def test_report_kind_registry_equals_the_schema_enum():
    from forestbench.report import REPORT_KINDS

    schema = yaml.safe_load(SCHEMA.read_text(encoding="utf-8"))
    enum = schema["$defs"]["report"]["properties"]["kind"]["enum"]
    assert len(enum) == len(set(enum))
    assert set(enum) == set(REPORT_KINDS)


def test_every_report_kind_is_registered_by_its_own_module():
    # importing the registry module alone registers nothing; the defining modules register their kinds on import
    import forestbench.report.experiment  # noqa: F401
    from forestbench.report.kinds import REPORT_KINDS

    assert REPORT_KINDS["oob_curve"].__module__ == "forestbench.report.teaching"
    assert REPORT_KINDS["table"].__module__ == "forestbench.report.experiment"
