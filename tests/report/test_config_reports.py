"""Every experiment of the shipped configurations reports from plausible scores, before anyone spends the fits.

The reports of `config/thesis.yaml` run only after hours of cluster work; a report spec or reference entry that
does not fit the experiment would fail there. This builds, for each experiment, a scores table shaped like the one
`forestbench collect` writes (every planned dataset x runnable variant x repeat x metric, staged rows, the
variants' parameters, the `extra.*` columns the reports name) with random values, and builds its report.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from forestbench.workflow.experiments import Plan
from forestbench.metrics import get_metric
from forestbench.report.experiment import build_experiment_report

ROOT = Path(__file__).resolve().parents[2]
REPORT_DIR = ROOT / "config" / "reference"


def _named_columns(cfg: dict) -> set[str]:
    """The `extra.*` / `param.*` columns the experiment's reports and references name."""
    names = set()
    for spec in cfg.get("reports") or []:
        names |= {str(v) for k, v in spec.items() if k in ("metric", "x", "hue", "time")}
    refs = cfg.get("reference")
    for ref in refs if isinstance(refs, list) else ([refs] if refs else []):
        ours = ref.get("ours")
        names |= set(ours.values()) if isinstance(ours, dict) else ({ours} if ours else set())
    return {n for n in names if n.startswith(("extra.", "param."))}


def _scores(name: str, exp, rng: np.random.Generator) -> pd.DataFrame:
    rows = []
    named = _named_columns(exp.config)
    for dataset in exp.datasets:
        for v in exp.runnable_variants:
            params = {f"param.{k}": (json.dumps(val) if isinstance(val, (list, dict)) else val)
                      for k, val in v.params.items()}
            for repeat in range(3):
                common = {"experiment": name, "dataset": dataset, "method": v.method, "variant": v.name,
                          "repeat": repeat, "seed": repeat, "fit_wall_s": rng.uniform(0.1, 2),
                          "fit_cpu_s": rng.uniform(0.1, 2), "predict_wall_s": rng.uniform(0.01, 0.2),
                          "predict_cpu_s": rng.uniform(0.01, 0.2), "n_nodes": 101, "max_depth": 7,
                          "tree_sha256": f"{dataset}-{repeat}", "input_density": 0.5, "n_train": 100,
                          "n_test": 50, "model_bytes": 1000, "extra.n_layers": 2,
                          **{f"extra.train_layer_{k}": rng.uniform() for k in (1, 2, 3)},
                          **{c: rng.uniform(1, 10) for c in named if c.startswith("extra.")},
                          **params}
                for metric in exp.config["metrics"]:
                    hib = get_metric(metric).higher_is_better
                    rows.append({**common, "metric": metric, "value": rng.uniform(0.2, 0.9), "step": np.nan,
                                 "higher_is_better": hib})
                    for step in (1, 2, 5):
                        rows.append({**common, "metric": metric, "value": rng.uniform(0.2, 0.9), "step": step,
                                     "n_trees": step, "stage_fit_s": 0.01 * step, "higher_is_better": hib})
    return pd.DataFrame(rows)


def _experiments(configfile: str):
    cfg = yaml.safe_load((ROOT / configfile).read_text())
    plan = Plan(cfg, source=configfile, check_params=False)
    return [(name, exp) for name, exp in plan.experiments.items()]


@pytest.mark.parametrize("configfile", ["config/config.yaml", "config/thesis.yaml"])
def test_every_experiment_reports_from_plausible_scores(configfile, tmp_path):
    rng = np.random.default_rng(0)
    failures = []
    experiments = _experiments(configfile)
    assert experiments
    for name, exp in experiments:
        scores = _scores(name, exp, rng)
        csv = tmp_path / f"{name}.csv"
        scores.to_csv(csv, index=False)
        out = tmp_path / name
        stale = out / "tables" / "from_an_older_config.csv"
        try:
            build_experiment_report(csv, name, exp.config, REPORT_DIR, out)
            stale.parent.mkdir(parents=True, exist_ok=True)
            stale.write_text("x\n")
            (out / "manifest.json").unlink()        # Snakemake removes a job's declared output before it runs
            # a second build over the first: what it does not write again is removed, nothing it lists is
            written = build_experiment_report(csv, name, exp.config, REPORT_DIR, out)
        except Exception as exc:  # collected: one run names every experiment that fails
            failures.append(f"{name}: {type(exc).__name__}: {exc}")
            continue
        assert any(Path(p).name == "report.md" for p in written), name
        assert not stale.exists(), name
        manifest = json.loads((out / "manifest.json").read_text())
        listed = [f for sec in manifest["sections"] for f in [*sec["files"].values(), *sec["images"]]]
        missing = [f for f in listed if not (out / f).is_file()]
        assert not missing, f"{name}: {missing}"
        on_disk = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()}
        assert on_disk == {Path(p).relative_to(out).as_posix() for p in written}, name
    assert not failures, "\n".join(failures)
