"""Check that the active environment holds exactly the versions of a constraints file (or rewrite the file from it).

    python .ci/check_constraints.py envs/constraints-py311.txt          # exit 1 listing every difference
    python .ci/check_constraints.py --write envs/constraints-py311.txt  # installed versions replace the pins

Build tools (the pins above the line ``# installed packages``) are not installed in the environment; they are
checked by the install itself (PIP_CONSTRAINT reaches pip's build environment) and kept as they are by --write.
"""
from __future__ import annotations

import argparse
import re
import sys
from importlib import metadata
from pathlib import Path

MARKER = "# installed packages"
# installed in every virtual environment by venv itself, or pinned above the marker for the build
BUILD_TOOLS = ("pip", "setuptools", "wheel", "cython")


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def installed() -> dict[str, tuple[str, str]]:
    """canonical name -> (name as distributed, version) of every installed distribution but forestbench."""
    out = {}
    for dist in metadata.distributions():
        name = dist.metadata["Name"]
        if name and canonical(name) != "forestbench":
            out[canonical(name)] = (name, dist.version)
    return out


def pins(lines: list[str]) -> dict[str, str]:
    out = {}
    for line in lines:
        line = line.split("#", 1)[0].strip()
        if line:
            name, sep, version = line.partition("==")
            if not sep:
                raise SystemExit(f"constraints line {line!r}: expected NAME==VERSION")
            out[canonical(name)] = version.strip()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("constraints", type=Path)
    parser.add_argument("--write", action="store_true", help="rewrite the installed-package pins from this environment")
    args = parser.parse_args(argv)
    lines = args.constraints.read_text().splitlines()
    if MARKER not in lines:
        raise SystemExit(f"{args.constraints}: no line {MARKER!r} separating build tools from installed packages")
    cut = lines.index(MARKER) + 1
    have = installed()
    if args.write:
        body = [f"{name}=={version}" for key, (name, version) in sorted(have.items())
                if key not in BUILD_TOOLS]
        args.constraints.write_text("\n".join(lines[:cut] + body) + "\n")
        print(f"{args.constraints}: {len(body)} packages pinned")
        return 0
    want = pins(lines[cut:])
    problems = [f"{name}: pinned {version}, installed {have[name][1] if name in have else 'nothing'}"
                for name, version in sorted(want.items()) if name not in have or have[name][1] != version]
    problems += [f"{have[name][0]}: installed {have[name][1]}, not pinned" for name in sorted(set(have) - set(want))
                 if name not in BUILD_TOOLS]
    if problems:
        print(f"{args.constraints}: the environment differs from the pins:\n  " + "\n  ".join(problems))
        return 1
    print(f"{args.constraints}: all {len(want)} pinned packages installed at their pinned versions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
