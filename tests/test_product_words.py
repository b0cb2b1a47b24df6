"""Product code and documents speak of the project itself: no development-process references (issue numbers,
internal spec files and their decision labels), no paths of a development machine, no test hooks in product
code."""
import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PATTERNS = {
    "issue reference": re.compile(r"\b(?:issue|issues) (?:#?\d+)\b|\blater issues?\b", re.I),
    "internal spec reference": re.compile(r"\bthe spec(?:'s)?\b|\bspec §|\(A\d{1,2}\)|\bdecision A\d{1,2}\b"),
    "development machine path": re.compile(r"/work/|\.\./shared/|/root/"),
    "development machine": re.compile(r"2-core CI machine", re.I),
    "test hook in product code": re.compile(r"FORESTBENCH_FAIL_ATTEMPTS|_tree_class\b"),
}
SUFFIXES = {".py", ".pyx", ".pxd", ".smk", ".md", ".yaml", ".yml", ".toml", ".cfg", ".sh", ""}


def _tracked() -> list[Path]:
    out = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True)
    if out.returncode != 0:
        pytest.skip("not a git checkout")
    return [REPO / p for p in out.stdout.splitlines()
            if not p.startswith(("tests/", ".ci/")) and Path(p).suffix in SUFFIXES and (REPO / p).is_file()]


def test_product_files_speak_of_the_project_only():
    bad = []
    for path in _tracked():
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        for lineno, line in enumerate(text.splitlines(), 1):
            for what, pattern in PATTERNS.items():
                if pattern.search(line):
                    bad.append(f"{path.relative_to(REPO)}:{lineno}: {what}: {line.strip()[:120]}")
    assert not bad, "\n".join(bad)
