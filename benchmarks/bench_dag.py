"""How long Snakemake takes to build (and dry-run) a configuration's DAG, and how much of it is ours.

    python benchmarks/bench_dag.py [--configfile config/thesis.yaml] [--repeats 3] [--profile] [--out F]

Each repeat runs ``snakemake -n --quiet rules --configfile ...`` in a scratch copy of the workflow and measures its
CPU time (user + system of the child process) and wall time. With ``--profile`` one more run goes under cProfile and
the CPU time is split into the time spent in forestbench's code (the Snakefile, the rules' input, params and
resource functions in ``workflow/rules/*.smk``, and the library they call, with everything those call) and in
Snakemake's own work; the functions of ours that cost the most are listed.
"""
from __future__ import annotations

import argparse
import json
import os
import pstats
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def scratch_copy(dest: Path) -> Path:
    for name in ("Snakefile", "workflow", "config", "envs"):
        src = REPO / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, dest / name)
    return dest


def timed_run(workdir: Path, configfile: str, prefix: list[str]) -> dict:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run([*prefix, "-m", "snakemake", "-n", "--quiet", "rules", "--cores", "2",
                           "--configfile", configfile], cwd=workdir, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"snakemake -n failed:\n{proc.stderr[-3000:]}")
    jobs = next((line.split()[-1] for line in proc.stdout.splitlines() if line.startswith("total")), "?")
    return {"wall_s": wall, "cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
            "jobs": jobs}


def ours(filename: str, workdir: Path) -> bool:
    return filename.startswith(str(workdir)) or "/forestbench/" in filename


def split_profile(path: Path, workdir: Path, top: int = 15) -> dict:
    """CPU seconds spent in our code (entered from Snakemake's, with everything it calls) vs the rest."""
    stats = pstats.Stats(str(path))
    total = stats.total_tt
    entries: dict[tuple, float] = {}
    for func, (_, _, _, _, callers) in stats.stats.items():
        if not ours(func[0], workdir):
            continue
        for caller, (_, _, _, ct) in callers.items():
            if not ours(caller[0], workdir):
                entries[func] = entries.get(func, 0.0) + ct
    ours_s = sum(entries.values())
    heaviest = sorted(entries.items(), key=lambda kv: -kv[1])[:top]
    return {"profiled_total_s": total, "ours_s": ours_s, "snakemake_s": total - ours_s,
            "ours_share": ours_s / total if total else float("nan"),
            "heaviest_entries": [{"function": f"{Path(f[0]).name}:{f[1]}:{f[2]}", "cumulative_s": round(s, 3)}
                                 for f, s in heaviest]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configfile", default="config/thesis.yaml")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--profile", action="store_true", help="one more run under cProfile: ours vs Snakemake's")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "out" / "bench_dag.json")
    args = parser.parse_args(argv)
    result: dict = {"configfile": args.configfile, "runs": []}
    with tempfile.TemporaryDirectory() as tmp:
        workdir = scratch_copy(Path(tmp))
        for _ in range(args.repeats):
            shutil.rmtree(workdir / ".snakemake", ignore_errors=True)
            run = timed_run(workdir, args.configfile, [sys.executable])
            result["runs"].append(run)
            print(f"dry run: {run['cpu_s']:.1f} s CPU, {run['wall_s']:.1f} s wall, {run['jobs']} jobs", flush=True)
        result["median_cpu_s"] = statistics.median(r["cpu_s"] for r in result["runs"])
        result["median_wall_s"] = statistics.median(r["wall_s"] for r in result["runs"])
        result["load_average"] = os.getloadavg()
        if args.profile:
            prof = Path(tmp) / "dag.prof"
            shutil.rmtree(workdir / ".snakemake", ignore_errors=True)
            timed_run(workdir, args.configfile, [sys.executable, "-m", "cProfile", "-o", str(prof)])
            result["profile"] = split_profile(prof, workdir)
            p = result["profile"]
            print(f"profiled: {p['profiled_total_s']:.1f} s, ours {p['ours_s']:.1f} s ({100 * p['ours_share']:.0f} %), "
                  f"Snakemake {p['snakemake_s']:.1f} s")
            for row in p["heaviest_entries"]:
                print(f"  {row['cumulative_s']:8.2f} s  {row['function']}")
    print(f"median over {args.repeats}: {result['median_cpu_s']:.1f} s CPU, {result['median_wall_s']:.1f} s wall "
          f"(load average {result['load_average'][0]:.1f})")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
