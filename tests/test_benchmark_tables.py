"""benchmarks/README.md's result tables are what benchmarks/tables.py renders from the kept result files."""
import importlib.util
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _tables_module():
    spec = importlib.util.spec_from_file_location("benchmark_tables", REPO / "benchmarks" / "tables.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_benchmark_tables_are_current():
    tables = _tables_module()
    text = tables.README.read_text(encoding="utf-8")
    assert tables.render(text) == text, "benchmarks/README.md is out of date: python benchmarks/tables.py"


def test_every_table_has_its_result_file_and_markers():
    tables = _tables_module()
    text = tables.README.read_text(encoding="utf-8")
    for name, make in tables.TABLES.items():
        start, end = tables.markers(name)
        assert text.count(start) == 1 and text.count(end) == 1, name
        assert any(line.startswith("|") for line in make()), name


def test_missing_markers_are_an_error():
    tables = _tables_module()
    with pytest.raises(SystemExit, match="markers"):
        tables.render("no tables here\n")
