"""The data the sweep and timing figures are drawn from: readable parameter values on the x axis, the legend
titled by the parameter, no 'nan' entry, and labelled y ticks on every panel of a log time axis."""
from __future__ import annotations

import numpy as np
import pandas as pd

from forestbench.report import figures


def _sweep_rows() -> pd.DataFrame:
    rows = []
    for dataset in ("yeast", "synthetic"):
        for sharing in ("per_tree", "shared", None):
            for q in ("1", "ln_d", "1.0"):
                for r in range(2):
                    rows.append({"dataset": dataset, "method": "random_forest",
                                 "variant": f"rf-{sharing}-q{q}" if sharing else f"rf-q{q}", "repeat": r,
                                 "value": 0.5 + 0.01 * r + (0.1 if q == "1.0" else 0.0),
                                 "param.n_components": q, "param.projection_sharing": sharing})
    return pd.DataFrame(rows)


def _legend_texts(fig) -> tuple[str, list[str]]:
    legend = fig.legends[0] if fig.legends else fig.axes[0].get_legend()
    return legend.get_title().get_text(), [t.get_text() for t in legend.get_texts()]


def test_sweep_axis_reads_parameter_values_in_size_order():
    fig = figures.sweep_plot(_sweep_rows(), "param.n_components", "lrap", "param.projection_sharing")
    fig.canvas.draw()
    for ax in fig.axes[:2]:
        assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "ln d", "d"]
    assert fig.axes[0].get_xlabel() == "n_components"
    title, entries = _legend_texts(fig)
    assert title == "projection_sharing"
    assert "nan" not in entries and "None" not in entries
    assert {"per_tree", "shared", "rf-q1"} <= set(entries)
    figures.plt.close(fig)


def test_sweep_report_leaves_out_variants_without_the_swept_parameter(tmp_path):
    from forestbench.report import build_experiment_report

    rows = _sweep_rows().assign(experiment="e", metric="lrap", higher_is_better=True, step=np.nan)
    base = rows[rows["variant"] == "rf-q1"].assign(variant="rf", **{"param.n_components": None})
    pd.concat([rows, base]).to_csv(tmp_path / "scores.csv", index=False)
    cfg = {"datasets": ["yeast", "synthetic"], "metrics": ["lrap"], "methods": [],
           "reports": [{"kind": "sweep", "metric": "lrap", "x": "param.n_components",
                        "hue": "param.projection_sharing"}]}
    build_experiment_report(tmp_path / "scores.csv", "e", cfg, tmp_path, tmp_path / "out")
    assert "left out (no n_components): rf" in (tmp_path / "out" / "report.md").read_text()


def test_param_value_labels():
    label = figures.param_value_label
    assert [label("param.n_components", v) for v in ("1", "ln_d", "1.0", "0.5", "sqrt_d")] == [
        "1", "ln d", "d", "0.5 d", "√d"]
    assert label("param.max_depth", "3.0") == "3" and label("param.input_layout", "csc") == "csc"


def test_every_panel_of_a_log_time_axis_has_tick_labels():
    rng = np.random.default_rng(0)
    rows = []
    # the left panel spans less than a decade with no power of ten, 2 or 5 inside: 0.31 .. 0.45 s
    for dataset, times in (("yeast", {"rf": 0.31, "sklearn-rf": 0.45}), ("synthetic", {"rf": 0.02, "sklearn-rf": 3.0})):
        for variant, t in times.items():
            for r in range(3):
                rows.append({"dataset": dataset, "variant": variant, "repeat": r,
                             "fit_wall_s": t * (1 + 0.01 * rng.random())})
    fig = figures.timing_plot(pd.DataFrame(rows), "variant", "fit_wall_s", "variant")
    fig.canvas.draw()
    for ax in fig.axes[:2]:
        labels = figures.visible_tick_labels(ax.yaxis)
        assert len(labels) >= 2, (ax.get_title(), ax.get_ylim(), labels)
    figures.plt.close(fig)


def test_a_curve_against_fit_time_puts_each_stage_at_one_place():
    """Against the cumulative fit time, each repeat times a stage differently: the curve places the stage at the
    mean of its repeats' times, so its line runs through the stages in order (it zigzagged between repeats, Figs
    6.1-6.4); against the stage, nothing moves."""
    from forestbench.report.experiment import stage_positions

    rng = np.random.default_rng(1)
    rows = []
    for variant, per_stage in (("gbmort", 0.01), ("st_gbrt", 0.03)):
        for r in range(3):
            speed = per_stage * (1 + 0.5 * r)                      # the repeats run at different speeds
            for step in range(1, 21):
                rows.append({"dataset": "friedman1_chain", "variant": variant, "repeat": r, "step": step,
                             "stage_fit_s": speed * step * (1 + 0.05 * rng.random()),
                             "value": 1 - 1 / step + 0.01 * r})
    rows = pd.DataFrame(rows)
    placed = stage_positions(rows, "stage_fit_s")
    assert stage_positions(rows, "step").equals(rows)
    for variant, group in placed.groupby("variant"):
        per_stage = group.groupby("step")["stage_fit_s"]
        assert (per_stage.nunique() == 1).all()
        expected = rows[rows["variant"] == variant].groupby("step")["stage_fit_s"].mean()
        np.testing.assert_allclose(per_stage.first().to_numpy(), expected.to_numpy())
        assert np.all(np.diff(per_stage.first().to_numpy()) > 0)   # the line follows the stages
    for data, points in ((placed, 20), (rows, 60)):         # one point per stage; before, one per repeat and stage
        fig = figures.convergence_plot(data, "macro_r2", x="stage_fit_s", logx=True)
        lengths = {len(line.get_xdata()) for line in fig.axes[0].get_lines() if len(line.get_xdata()) > 2}
        assert lengths == {points}, lengths
        figures.plt.close(fig)
    # before: one point per repeat and stage, so the sorted times alternate between the repeats
    raw = rows[rows["variant"] == "gbmort"].sort_values("stage_fit_s")
    assert raw["repeat"].diff().fillna(0).ne(0).sum() > 10
