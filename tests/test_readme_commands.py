"""Every command the README shows in a ``bash`` block runs here as a shell command on the real command line.

Snakemake commands run as dry runs (``-n``) and ``python -m forestbench`` commands as written, each in a copy of
the repository's own files, so that a change of Snakemake's command-line parsing (for instance nested ``--config``
values arriving as strings) or of our own CLI shows up as a failing test, not as a user's bug report. Set-up
commands (``pip``, ``pytest``, ``conda``, ``cp``) are not run. A README command of another kind fails the test until
it is taught here how to run it.
"""
from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SETUP_PREFIXES = ("pip ", "pytest", "conda ", "cp ", "bash ", "python .ci/", "git ", "while ")
# an environment assignment before a set-up command (PIP_CONSTRAINT=... pip install ...)
ASSIGNMENT = re.compile(r"^(?:[A-Z_][A-Z0-9_]*=\S+\s+)+")
# placeholders of the README's commands and the value each gets here
PLACEHOLDERS = {"<partition>": "debug", "<account>": "forestbench", "<qos>": "normal", "<feature>": "x86",
                # a local copy of Mulan's repository: an empty folder here (the tests never read the real one)
                "~/mulan": "local-copy-of-mulan"}
# commands another test runs as the README shows them, with the files they need
COVERED_ELSEWHERE = {
    "snakemake --cores 2 --configfile config/my_experiment.yaml": "tests/datasets/test_readme_datasets.py",
}
# commands whose exit status here is not 0 by design, with the line their output must hold
EXPECTED_FAILURES = {
    # this copy has no prepared data: restore refuses, naming the step that makes it
    "python -m forestbench archive restore --configfile config/thesis.yaml":
        "Prepare it first (snakemake --until split with the same --configfile)",
    # the empty copy holds neither named dataset: both are reported incomplete and the exit status says so
    "python -m forestbench datasets fetch --from ~/mulan emotions enron": "emotions: not in this source",
}


def readme_commands(text: str) -> list[str]:
    """The commands of the README's ``bash`` blocks: continuation lines joined, comments dropped, ``&&`` chains
    split into their commands."""
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            line = re.sub(r"\s+#\s.*$", "", line)
            commands.extend(part.strip() for part in line.split("&&"))
    return [" ".join(c.split()) for c in commands if c]


def runnable(command: str) -> list[str] | None:
    """The argument vector that runs ``command`` here (None for a set-up command)."""
    if ASSIGNMENT.sub("", command).startswith(SETUP_PREFIXES):
        return None
    for placeholder, value in PLACEHOLDERS.items():
        command = command.replace(placeholder, value)
    if re.search(r"<[^>]+>", command):
        raise AssertionError(f"README command {command!r} has a placeholder this test does not know: add it to "
                             "PLACEHOLDERS")
    argv = shlex.split(command)
    if argv[0] == "snakemake":
        return [sys.executable, "-m", "snakemake", *argv[1:], "-n", "--quiet", "rules"]
    if argv[:3] == ["python", "-m", "forestbench"]:
        return [sys.executable, *argv[1:]]
    raise AssertionError(f"README command {command!r}: this test does not know how to run it; teach runnable()")


COMMANDS = readme_commands((ROOT / "README.md").read_text())


def _known(command: str) -> bool:
    try:
        runnable(command)
    except AssertionError:
        return False
    return True


def test_every_readme_command_is_known_here():
    for command in COMMANDS:
        runnable(command)  # raises, naming the command, when this test does not know how to run it


def test_commands_run_elsewhere_are_run_there():
    for command, test_file in COVERED_ELSEWHERE.items():
        assert command in COMMANDS, f"{command!r} is no longer in the README"
        assert command.split("snakemake ", 1)[-1].split("--configfile ", 1)[-1] in (ROOT / "tests" / test_file.split(
            "tests/", 1)[1]).read_text(), f"{test_file} does not run {command!r}"


def test_the_readme_shows_commands():
    assert any(c.startswith("snakemake") for c in COMMANDS)
    assert any(c.startswith("python -m forestbench") for c in COMMANDS)
    assert "snakemake --cores 2 --configfile config/thesis.yaml --config 'select={available: true}'" in COMMANDS


def test_commands_are_split_as_a_shell_reads_them():
    text = "```bash\n# a comment\npip install -e . && snakemake --cores 2   # trailing\nsnakemake --profile p \\\n" \
           "    --configfile c.yaml\n```\n"
    assert readme_commands(text) == ["pip install -e .", "snakemake --cores 2",
                                     "snakemake --profile p --configfile c.yaml"]
    assert runnable("pip install -e .") is None
    assert runnable('PIP_CONSTRAINT=envs/c.txt pip install -e ".[test]"') is None
    with pytest.raises(AssertionError, match="does not know how to run"):
        runnable("make all")


@pytest.fixture(scope="module")
def checkout(tmp_path_factory) -> Path:
    """A copy of the repository's own files (what `git ls-files` lists), without produced data or results."""
    dest = tmp_path_factory.mktemp("checkout")
    (dest / PLACEHOLDERS["~/mulan"]).mkdir()
    try:
        files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
        paths = [Path(p) for p in files.splitlines()]
    except (OSError, subprocess.CalledProcessError):
        paths = [p.relative_to(ROOT) for d in ("workflow", "config", "envs") for p in (ROOT / d).rglob("*")
                 if p.is_file()] + [Path("Snakefile")]
    for rel in paths:
        if rel.parts[0] in ("data", "results", "src", "tests", "benchmarks") or not (ROOT / rel).is_file():
            continue
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, dest / rel)
    return dest


@pytest.mark.slow
@pytest.mark.parametrize("command", [c for c in COMMANDS if _known(c) and runnable(c) is not None
                                     and c not in COVERED_ELSEWHERE])
def test_readme_command_runs(command, checkout):
    argv = runnable(command)
    env = dict(os.environ)
    env.pop("FORESTBENCH_RAW", None)
    proc = subprocess.run(argv, cwd=checkout, capture_output=True, text=True, env=env, timeout=900)
    shown = f"{command}\n--- stdout\n{proc.stdout[-3000:]}\n--- stderr\n{proc.stderr[-3000:]}"
    if command in EXPECTED_FAILURES:
        assert proc.returncode != 0 and EXPECTED_FAILURES[command] in proc.stdout + proc.stderr, shown
    else:
        assert proc.returncode == 0, shown


def test_nested_command_line_values_are_typed_as_the_schema_says(checkout):
    """The Snakefile reads `select={available: true}` as a boolean, not the string Snakemake passes on."""
    ok = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--quiet", "rules", "--cores", "1", "--config",
                         "select={available: True, experiments: [demo_boosting]}", "max_repeats=1"],
                        cwd=checkout, capture_output=True, text=True, timeout=300)
    assert ok.returncode == 0, ok.stderr[-3000:]
    bad = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "1", "--config",
                          "select={available: maybe}"], cwd=checkout, capture_output=True, text=True, timeout=300)
    assert bad.returncode != 0
    assert ("select.available: 'maybe' is not a boolean; write it as 'select={available: true}'"
            in bad.stdout + bad.stderr)
