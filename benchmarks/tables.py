"""Render benchmarks/README.md's result tables from the kept result files of benchmarks/results/.

Each table stands in the README between ``<!-- table:NAME:start -->`` and ``<!-- table:NAME:end -->``; the text
between the markers is generated here from one JSON file, so a table never disagrees with its result file. After a
benchmark writes a new result file into benchmarks/results/ (its ``--out``), rerun this script.

Usage: python benchmarks/tables.py            # rewrite the tables in benchmarks/README.md
       python benchmarks/tables.py --check    # exit 1 when a table differs from what its file gives
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
README = HERE / "README.md"
RESULTS = HERE / "results"
COMMAND = "python benchmarks/tables.py"


def _load(name: str) -> dict:
    return json.loads((RESULTS / name).read_text(encoding="utf-8"))


def _pct(x: float) -> str:
    return f"{100 * x:.1f} %"


def deep_profile() -> list[str]:
    data = _load("bench_deep_profile.json")
    args = data["args"]
    stages = ["embedding_forests", "path_extraction", "pca", "os_cv", "prediction_forests", "scoring"]
    lines = [f"`python benchmarks/bench_deep.py --rows {args['rows']} --trees {args['trees']} --layers "
             f"{args['layers']} --repeats {args['repeats']}` (PCA size {args['fraction']}), "
             "`benchmarks/results/bench_deep_profile.json`; CPU seconds of one thread, medians over the repeats; "
             "stage shares of the cascade's CPU time.", "",
             "| problem | cascade | embedding forests | paths | PCA | output-space CV | prediction forests | scoring "
             "| cascade / its forests alone (goal <= 1.25) | ours / scikit-learn (goal <= 0.5) |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for name, p in data["cascade_profile"].items():
        shares = " | ".join(_pct(p["median_split_share"][s]) for s in stages)
        lines.append(f"| {name} {p['rows']} x {p['features']}, d = {p['outputs']} | {p['median_cascade_s']:.1f} s | "
                     f"{shares} | {p['median_cascade_over_forests']:.2f} | {p['median_ours_over_sklearn']:.2f} |")
    kinds = ["embedding_rf", "embedding_et", "os_cv_rf", "os_cv_et", "prediction_rf", "prediction_et"]
    lines += ["", "Ours / scikit-learn per forest kind (medians over the repeats):", "",
              "| problem | " + " | ".join(k.replace("os_cv", "output-space").replace("_", " ") for k in kinds) + " |",
              "|---|" + "---|" * len(kinds)]
    for name, p in data["cascade_profile"].items():
        per = p["median_ours_over_sklearn_per_kind"]
        lines.append(f"| {name} | " + " | ".join(f"{per[k]:.2f}" for k in kinds) + " |")
    return lines


def deep_tuning() -> list[str]:
    data = _load("bench_deep_tuning.json")
    args, t = data["args"], data["tuning"]
    m = t["median"]
    return [f"`python benchmarks/bench_deep.py --tuning --rows {args['rows']} --trees {args['trees']} --layers "
            f"{args['layers']} --repeats {args['repeats']}` ({len(t['fractions'])} PCA sizes, {t['folds']} inner "
            "folds), `benchmarks/results/bench_deep_tuning.json`; CPU seconds of one thread.", "",
            "| fixed-size cascade | one inner fold, candidates alone | the same, sharing layer 1 | sharing / alone "
            "| whole search / fixed-size cascade, alone | the same, sharing |",
            "|---|---|---|---|---|---|",
            f"| {m['fixed_s']:.1f} s | {m['fold_alone_s']:.1f} s | {m['fold_shared_s']:.1f} s | "
            f"{m['shared_over_alone']:.2f} | {m['search_over_fixed_alone']:.1f} | "
            f"{m['search_over_fixed_shared']:.1f} |"]


_PROJ_LABELS = {"ours-original-dense": "ours, original outputs, dense labels (grown as CSR)",
                "ours-original-dense-criterion": "ours, original outputs, dense labels, dense criterion forced",
                "ours-original-sparse": "ours, original outputs, CSR labels",
                "sklearn-dense": "scikit-learn, original outputs, dense labels"}


def projections() -> list[str]:
    data = _load("bench_projections_delicious_sized.json")
    args = data["args"]
    lines = [f"n = {args['n']}, p = {args['p']}, d = {args['d']} ({args['labels']:g} labels per row), "
             f"{args['n_test']} test rows, t = {args['trees']} trees, {args['repeats']} repeats "
             f"({args['sklearn_repeats']} for scikit-learn), "
             "`benchmarks/results/bench_projections_delicious_sized.json`; medians over the repeats.", "",
             "| forest | CPU s | wall s | test LRAP |", "|---|---|---|---|"]
    for key, r in data["results"].items():
        label = _PROJ_LABELS.get(key) or f"ours, Gaussian projection q = {key.rsplit('q', 1)[1]}"
        lines.append(f"| {label} | {r['cpu_s_median']:.3g} | {r['wall_s_median']:.3g} | {r['lrap_test']:.4f} |")
    lines += ["", "| ratio of CPU times | |", "|---|---|"]
    lines += [f"| {name} | {r['cpu']:.3g} |" for name, r in data["ratios"].items()]
    return lines


def dag() -> list[str]:
    data = _load("bench_dag_thesis.json")
    prof = data["profile"]
    jobs = f"{int(data['runs'][0]['jobs']):,}".replace(",", " ")
    return [f"`{data['configfile']}`, {jobs} jobs, {len(data['runs'])} dry run(s), "
            "`benchmarks/results/bench_dag_thesis.json`:", "",
            "| CPU s (median) | wall s (median) | load average (1 min) | profiled s | ours | Snakemake's "
            "| ours share |",
            "|---|---|---|---|---|---|---|",
            f"| {data['median_cpu_s']:.1f} | {data['median_wall_s']:.1f} | {data['load_average'][0]:.1f} | "
            f"{prof['profiled_total_s']:.0f} | {prof['ours_s']:.0f} | {prof['snakemake_s']:.0f} | "
            f"{_pct(prof['ours_share'])} |"]


TABLES = {"deep_profile": deep_profile, "deep_tuning": deep_tuning, "projections": projections, "dag": dag}


def markers(name: str) -> tuple[str, str]:
    return f"<!-- table:{name}:start -->", f"<!-- table:{name}:end -->"


def render(text: str) -> str:
    """``text`` with every table between its markers regenerated; a missing marker pair is an error."""
    for name, make in TABLES.items():
        start, end = markers(name)
        i, j = text.find(start), text.find(end)
        if i < 0 or j < i:
            raise SystemExit(f"{README}: no '{start}' ... '{end}' markers")
        body = [f"<!-- generated by `{COMMAND}` from benchmarks/results/; do not edit by hand -->", *make()]
        text = text[:i + len(start)] + "\n" + "\n".join(body) + "\n" + text[j:]
    return text


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="only check that the README's tables are current")
    args = ap.parse_args(argv)
    text = README.read_text(encoding="utf-8")
    new = render(text)
    if args.check:
        if new != text:
            print(f"{README} is out of date: {COMMAND}", file=sys.stderr)
            return 1
        return 0
    if new != text:
        README.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
