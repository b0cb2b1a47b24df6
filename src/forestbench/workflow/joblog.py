"""The end of every workflow rule's shell command:
``<command> > {log} 2>&1 || python -m forestbench.workflow.joblog {log} $?``.

A rule sends its command's output to the job's log file, where Snakemake leaves it: on failure its console says
only which log to read. This module, run only when the command failed, repeats the error on the console (stderr):
the ``forestbench <command>: error: ...`` message of the command-line interface with the lines that continue it,
or else the log's last line (the exception line of a traceback, a message of a killed process). It exits with the
command's status.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

ERROR_LINE = re.compile(r"^forestbench [\w-]+(?: [\w-]+)?: error: ")
MAX_LINES = 12  # of a message that continues over several lines (a schema error lists up to ten)


def error_lines(text: str) -> list[str]:
    """The error message of a failed command's log: forestbench's error line and its continuation lines, else the
    last non-empty line."""
    lines = text.splitlines()
    for k, line in enumerate(lines):
        if ERROR_LINE.match(line):
            out = [line]
            for more in lines[k + 1:k + MAX_LINES]:
                if not more.strip() or ERROR_LINE.match(more):
                    break
                out.append(more)
            return out
    rest = [line for line in lines if line.strip()]
    return rest[-1:]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not 1 <= len(args) <= 2:
        print("usage: python -m forestbench.workflow.joblog <log file> [<exit status>]", file=sys.stderr)
        return 2
    try:
        status = int(args[1]) if len(args) == 2 else 1
    except ValueError:
        status = 1
    try:
        text = Path(args[0]).read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    for line in error_lines(text):
        print(line, file=sys.stderr)
    return status if status != 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
