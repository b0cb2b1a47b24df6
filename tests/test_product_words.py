"""The repository speaks of the project itself: no development-process references (issue numbers, internal spec
files and their decision labels, development sessions, work-item names, notes of unfinished work), no paths of a
development machine, no test hooks in product code. One test per tracked file, so each can be fixed on its own."""
import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SUFFIXES = {".py", ".pyx", ".pxd", ".smk", ".md", ".yaml", ".yml", ".toml", ".cfg", ".sh", ""}

# everywhere: product code, documents, configuration, tests and CI scripts
PATTERNS = {
    "issue reference": re.compile(r"\b(?:issue|issues) (?:#?\d+)\b|\blater issues?\b", re.I),
    "internal spec reference": re.compile(r"\bthe spec(?:'s)?\b|\bspec §|\(A\d{1,2}\)|\bdecision A\d{1,2}\b"
                                          r"|\b[A-Z]{2,4} spec\b|\bspec Sec\."),
    "development machine path": re.compile(r"/work/|\.\./shared/|/root/"),
    "development machine": re.compile(r"2-core CI machine", re.I),
}
# product code only (tests/ and .ci/ may name the hooks they use)
PRODUCT_PATTERNS = {
    "test hook in product code": re.compile(r"FORESTBENCH_FAIL_ATTEMPTS|_tree_class\b"),
}
# everywhere but the documents (every *.md, everything under config/) not listed in DOC_FILES
PROCESS_PATTERNS = {
    "development session": re.compile(r"\b(?:this|that|other|another|earlier|previous|next|later) sessions?\b",
                                      re.I),
    "work-item name": re.compile(r"\bhardening\b|\bwork items?\b", re.I),
    "note of unfinished work": re.compile(r"(?i:\bleft for later\b)|\bTODO\b|\bFIXME\b|\bXXX\b"),
    # lab-notebook material: results are stated with their setting, not with when or on which build they were taken
    "dated entry": re.compile(r"\b20\d\d-[01]\d-[0-3]\d\b"),
    "commit of a measurement": re.compile(r"(?<!pinned to )\bcommit [0-9a-f]{7,40}\b|-[0-9a-f]{7,40}\.json\b"),
    "one sitting": re.compile(r"\bthe 2-core machine\b|\bprevious build\b|\bthis build\b", re.I),
}
# Documents checked for PROCESS_PATTERNS too, as paths relative to the repository: the READMEs and the
# configuration (tests/ and the code are checked as they are not documents).
DOC_FILES: list[str] = ["README.md", "benchmarks/README.md", "config/README.md", "archive/README.md",
                        "config/config.yaml", "config/thesis.yaml", "config/datasets.yaml"]


def _tracked() -> list[str]:
    out = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True)
    if out.returncode != 0:
        return []
    this = Path(__file__).resolve().relative_to(REPO).as_posix()  # it spells the patterns out
    return [p for p in out.stdout.splitlines()
            if p != this and Path(p).suffix in SUFFIXES and (REPO / p).is_file()]


def _is_document(path: str) -> bool:
    return path.endswith(".md") or path.startswith("config/")


def _patterns_for(path: str) -> dict[str, re.Pattern]:
    patterns = dict(PATTERNS)
    if not path.startswith(("tests/", ".ci/")):
        patterns.update(PRODUCT_PATTERNS)
    if not _is_document(path) or path in DOC_FILES:
        patterns.update(PROCESS_PATTERNS)
    return patterns


def find_words(path: str, text: str) -> list[str]:
    """One line per hit: ``path:line: what: the line``."""
    patterns = _patterns_for(path)
    return [f"{path}:{lineno}: {what}: {line.strip()[:120]}"
            for lineno, line in enumerate(text.splitlines(), 1)
            for what, pattern in patterns.items() if pattern.search(line)]


TRACKED = _tracked()


def test_the_checkout_lists_its_files():
    if not TRACKED:
        pytest.skip("not a git checkout")
    assert "README.md" in TRACKED and any(p.startswith("tests/") for p in TRACKED)


@pytest.mark.parametrize("path", TRACKED)
def test_file_speaks_of_the_project_only(path):
    try:
        text = (REPO / path).read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return
    bad = find_words(path, text)
    assert not bad, "\n".join(bad)


def test_doc_files_are_tracked_documents():
    assert all(_is_document(p) and p in TRACKED for p in DOC_FILES), DOC_FILES


@pytest.mark.parametrize("path,line,expected", [
    ("tests/x.py", 'Path("/work/shared/spec/datasets.md")', "development machine path"),
    ("tests/x.py", "# left for later: the sparse case", "note of unfinished work"),
    ("src/forestbench/x.py", "# measured in this session", "development session"),
    ("tests/test_hardening_config.py", '"""See the hardening work item."""', "work-item name"),
    ("src/forestbench/x.py", "FORESTBENCH_FAIL_ATTEMPTS = 2", "test hook in product code"),
    ("README.md", "see issue 12", "issue reference"),
    ("config/thesis.yaml", "# the pass criterion (GB spec Sec. 11)", "internal spec reference"),
    ("benchmarks/README.md", "Run of 2026-11-21 (07:15 UTC)", "dated entry"),
    ("benchmarks/README.md", "5 repeats, commit 113fe29, idle", "commit of a measurement"),
    ("benchmarks/README.md", "kept as `benchmarks/results/bench_deep_profile-198886d.json`", "commit of a measurement"),
    ("config/README.md", "406 jobs in 84 min on the 2-core machine", "one sitting"),
    ("benchmarks/README.md", "A/B, the previous build vs this one", "one sitting"),
    ("tests/test_x.py", "# measured on 2026-11-24", "dated entry"),
])
def test_words_are_found(path, line, expected):
    assert any(f": {expected}: " in hit for hit in find_words(path, line))


@pytest.mark.parametrize("path,line", [
    ("tests/slurm/conftest.py", '@pytest.fixture(scope="session")'),
    ("tests/x.py", "monkeypatch.setenv('FORESTBENCH_FAIL_ATTEMPTS', '1')"),
    ("notes/not_in_doc_files.md", "The machine gave this session one core"),  # a document not in DOC_FILES
    ("config/datasets.yaml", "# Mulan GitHub pinned to commit 43f6389"),  # a source pinned, not a measurement
    ("benchmarks/README.md", "on a 2-core x86-64 Linux machine shared with other work"),  # the machine class
])
def test_allowed_lines(path, line):
    assert not find_words(path, line)
