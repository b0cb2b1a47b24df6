"""build_experiment_report / build_index / the report CLI on a generated scores table with missing cells."""
from __future__ import annotations

import json

import matplotlib.image as mpimg
import numpy as np
import pandas as pd
import pytest
import yaml

from forestbench import cli
from forestbench.errors import ConfigError
from forestbench.report import REPORT_KINDS, build_experiment_report, build_index

from report_fixtures import DATASETS, EXPERIMENT_CFG, REFERENCE_DIR


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    import copy

    from report_fixtures import make_scores
    root = tmp_path_factory.mktemp("built")
    scores_csv = root / "scores.csv"
    make_scores().to_csv(scores_csv, index=False)
    out = root / "report"
    written = build_experiment_report(scores_csv, "table_5_1", copy.deepcopy(EXPERIMENT_CFG), REFERENCE_DIR, out)
    return out, written


def test_experiment_report_files(built):
    out, written = built
    assert all(p.exists() and p.stat().st_size > 0 for p in written)
    names = {p.relative_to(out).as_posix() for p in written}
    for expected in ("tables/01_table_lrap.csv", "tables/01_table_lrap.md", "tables/01_table_lrap.tex",
                     "figures/03_cd_diagram_lrap.pdf", "figures/03_cd_diagram_lrap.png",
                     "tables/04_pvalues_lrap_wilcoxon.md", "tables/05_pvalues_lrap_ttest.tex",
                     "figures/06_sweep_lrap_n_components.png", "figures/07_timing_n_components_fit_wall_s.pdf",
                     "figures/08_convergence_lrap.png", "reproduction.csv", "reproduction.md", "report.md",
                     "manifest.json"):
        assert expected in names, expected
    assert not list(out.rglob("*.part*")), "temporary files left behind"
    assert (out / "figures" / "03_cd_diagram_lrap.pdf").read_bytes().startswith(b"%PDF")
    img = mpimg.imread(out / "figures" / "03_cd_diagram_lrap.png")
    assert img.shape[0] > 100 and img.shape[1] > 300 and (img[..., :3] < 0.9).mean() > 0.01


def test_report_lists_missing_cells(built):
    out, _ = built
    manifest = json.loads((out / "manifest.json").read_text())
    missing = {(m["dataset"], m["variant"]) for m in manifest["missing_cells"]}
    # two holes in the generated records, and bibtex (configured, never run) for every variant
    assert {("medical", "rf-gaussian-q1"), ("enron", "rf-gaussian-qd")} <= missing
    assert {("bibtex", v) for v in ("rf", "rf-gaussian-q1", "rf-gaussian-qlnd", "rf-gaussian-qd")} <= missing
    assert len(missing) == 6
    report = (out / "report.md").read_text()
    assert "## Cells not run" in report and "- medical / rf-gaussian-q1 / lrap" in report
    table = pd.read_csv(out / "tables" / "01_table_lrap_cells.csv")
    assert set(table.loc[table.status == "not run", "dataset"]) == {"medical", "enron", "bibtex"}
    wide = pd.read_csv(out / "tables" / "01_table_lrap.csv").set_index("dataset")
    assert wide.loc["medical", "rf-gaussian-q1 mark"] == "not run"
    assert pd.isna(wide.loc["medical", "rf-gaussian-q1 mean"])
    assert wide.loc["scene", "rf-gaussian-q1 mark"] == "best +"
    assert wide.loc["yeast", "rf mean"] == pytest.approx(0.759) and wide.loc["yeast", "rf mark"] == "best"
    assert list(wide.index)[-1] == "avg. rank"
    cd = next(s for s in manifest["sections"] if s["kind"] == "cd_diagram")
    assert cd["data"]["n_datasets"] == 4 and any("medical" in n for n in cd["notes"])
    repro = pd.read_csv(out / "reproduction.csv")
    assert (repro.status == "OUT OF TOLERANCE").sum() == 1
    # only the configured datasets' published cells: the four never-run bibtex cells and the two holes
    assert set(repro.dataset) == set(DATASETS + ["bibtex"])
    assert (repro.status == "not run").sum() == 6
    assert "dataset(s) this experiment does not run are not listed" in (out / "report.md").read_text()


def test_direction_aware_table(built):
    out, _ = built
    ham = pd.read_csv(out / "tables" / "02_table_hamming_loss_cells.csv")
    scene = ham[ham.dataset == "scene"].set_index("variant")
    # lower hamming loss is better: the smallest mean is bold and marked "+" against the baseline
    best = scene["mean"].idxmin()
    assert scene.loc[best, "best"] and scene.loc[best, "mark_vs_baseline"] == "+"


def test_report_with_no_scores(tmp_path, experiment_cfg):
    out = tmp_path / "report"
    written = build_experiment_report(tmp_path / "absent.csv", "table_5_1", experiment_cfg, REFERENCE_DIR, out)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["n_rows"] == 0
    assert len(manifest["missing_cells"]) == 7 * 4  # configured datasets x referenced variants
    assert "Not run yet" in (out / "report.md").read_text()
    assert not [p for p in written if p.suffix == ".png"]
    index = build_index([out], tmp_path / "site")
    assert "Not run: no scores recorded yet" in index.read_text()


def test_unknown_kind_and_missing_keys(scores_csv, experiment_cfg, tmp_path):
    experiment_cfg["reports"] = [{"kind": "pie_chart", "metric": "lrap"}]
    with pytest.raises(ConfigError, match=r"reports\[0\].kind: unknown report kind 'pie_chart'"):
        build_experiment_report(scores_csv, "table_5_1", experiment_cfg, REFERENCE_DIR, tmp_path / "o")
    experiment_cfg["reports"] = [{"kind": "sweep", "metric": "lrap"}]
    with pytest.raises(ConfigError, match=r"reports\[0\].*missing key 'x'"):
        build_experiment_report(scores_csv, "table_5_1", experiment_cfg, REFERENCE_DIR, tmp_path / "o")
    experiment_cfg["reports"] = [{"kind": "sweep", "metric": "lrap", "x": "param.nope"}]
    with pytest.raises(ConfigError, match="param.nope"):
        build_experiment_report(scores_csv, "table_5_1", experiment_cfg, REFERENCE_DIR, tmp_path / "o")


def test_registry_is_extensible():
    assert {"table", "cd_diagram", "pvalues", "sweep", "timing", "convergence"} <= set(REPORT_KINDS)


def test_cli_experiment_and_index(scores_csv, tmp_path, capsys):
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"experiments": {"table_5_1": EXPERIMENT_CFG,
                                                      "table_6_5": {"description": "not run", "metrics": ["lrap"]}}}))
    results = scores_csv.parents[1]
    rc = cli.main(["report", "experiment", "--scores", str(scores_csv), "--experiment", "table_5_1",
                   "--configfile", str(config), "--reference-dir", str(REFERENCE_DIR),
                   "--out", str(results / "table_5_1" / "report")])
    assert rc == 0
    rc = cli.main(["report", "index", "--configfile", str(config), "--results", str(results),
                   "--out", str(results / "report")])
    assert rc == 0
    page = (results / "report" / "index.html").read_text()
    md = (results / "report" / "index.md").read_text()
    assert page.count("<img ") == 4 and "data:image/png;base64," in page
    assert "src='http" not in page and "href='http" not in page and "<link rel='stylesheet'" not in page
    assert "table_6_5" in page and "Not run" in page
    assert "../table_5_1/report/tables/01_table_lrap.tex" in page
    assert "(../table_5_1/report/figures/03_cd_diagram_lrap.png)" in md
    assert "## table_6_5" in md and "**Not run**" in md
    # every link in the page points to an existing file
    import re
    for href in re.findall(r"href='([^'#:]+)'", page):
        assert (results / "report" / href).exists(), href
    rc = cli.main(["report", "experiment", "--scores", str(scores_csv), "--experiment", "nope",
                   "--configfile", str(config), "--out", str(tmp_path / "x")])
    assert rc == 2 and "experiment 'nope' not found" in capsys.readouterr().err


def test_deterministic_outputs(scores_csv, experiment_cfg, tmp_path):
    experiment_cfg["reports"] = [r for r in experiment_cfg["reports"] if r["kind"] in ("table", "cd_diagram", "sweep")]
    a = build_experiment_report(scores_csv, "table_5_1", experiment_cfg, REFERENCE_DIR, tmp_path / "a")
    b = build_experiment_report(scores_csv, "table_5_1", experiment_cfg, REFERENCE_DIR, tmp_path / "b")
    for pa, pb in zip(a, b):
        if pa.suffix in (".csv", ".md", ".tex", ".pdf", ".png"):
            assert pa.read_bytes() == pb.read_bytes(), pa.name


def test_several_references_thesis_chapter_6(tmp_path):
    """Results, CD-figure and Wilcoxon references side by side, on the thesis' own printed means."""
    from report_fixtures import thesis_lrap_scores
    scores = thesis_lrap_scores()
    csv = tmp_path / "scores.csv"
    scores.to_csv(csv, index=False)
    ids = sorted(set(scores["variant"]))
    methods = {i: i for i in ids}
    cfg = {"metrics": ["lrap"], "reports": [{"kind": "cd_diagram", "metric": "lrap"}],
           "reference": [{"table": t, "metric": "lrap", "methods": methods}
                         for t in ("thesis_table_6_5", "thesis_table_6_6", "thesis_figure_6_7_cd", "thesis_table_6_7")]}
    out = tmp_path / "report"
    build_experiment_report(csv, "e", cfg, REFERENCE_DIR, out)
    manifest = json.loads((out / "manifest.json").read_text())
    repro = [s for s in manifest["sections"] if s["kind"] == "reproduction"]
    assert [s["data"].get("within_tolerance", s["data"].get("agree")) for s in repro] == [12 * 8, 9 * 8, 10, 56]
    assert manifest["missing_cells"] == []
    cd = next(s for s in manifest["sections"] if s["kind"] == "cd_diagram")
    assert round(cd["data"]["critical_difference"], 2) == 2.29
    for name in ("reproduction.csv", "reproduction_2.md", "reproduction_3.csv", "reproduction_4.md"):
        assert (out / name).exists()
    # a second diagram of the same metric over fewer variants, told apart by its label
    cfg["reports"].append({"kind": "cd_diagram", "metric": "lrap", "variants": ids[:4], "label": "four methods"})
    build_experiment_report(csv, "e", cfg, REFERENCE_DIR, out)
    cds = [s for s in json.loads((out / "manifest.json").read_text())["sections"] if s["kind"] == "cd_diagram"]
    assert [s["title"].endswith("(four methods)") for s in cds] == [False, True]
    assert cds[1]["data"]["n_methods"] == 4 and round(cds[1]["data"]["critical_difference"], 2) != 2.29


def test_numeric_sweep_and_timing_axes():
    import matplotlib.pyplot as plt

    from forestbench.report import figures
    rows = pd.DataFrame([{"dataset": d, "variant": f"q{q}", "variant_group": "gbrt-rpo", "param.q": q,
                          "value": 0.5 + 0.01 * q + 0.001 * r, "fit_wall_s": 0.01 * q * (1 + 0.1 * r), "repeat": r}
                         for d in ("a", "b") for q in (1, 10, 100, 1000) for r in range(3)])
    fig = figures.timing_plot(rows, "param.q", "fit_wall_s", "variant_group")
    axes = fig.axes
    assert len([ax for ax in axes if ax.get_title() in ("a", "b")]) == 2
    panel = next(ax for ax in axes if ax.get_title() == "a")
    assert panel.get_yscale() == "log" and panel.get_xscale() == "log"
    # the plotted means are the means over repeats
    line = panel.get_lines()[0]
    assert list(line.get_xdata()) == [1, 10, 100, 1000]
    np.testing.assert_allclose(line.get_ydata(), [0.011 * q for q in (1, 10, 100, 1000)])
    plt.close(fig)
    fig = figures.sweep_plot(rows, "param.q", "lrap", None)
    panel = next(ax for ax in fig.axes if ax.get_title() == "a")
    assert panel.get_xscale() == "log"  # spans three decades
    plt.close(fig)


def test_bad_config_writes_nothing(scores_csv, experiment_cfg, tmp_path):
    experiment_cfg["reference"]["methods"]["rf"] = "no_such_method"
    out = tmp_path / "o"
    with pytest.raises(ConfigError, match="no_such_method"):
        build_experiment_report(scores_csv, "table_5_1", experiment_cfg, REFERENCE_DIR, out)
    assert not out.exists() or not any(out.rglob("*"))


def test_variant_group_labels():
    from forestbench.report.data import add_variant_group
    rows = pd.DataFrame({"method": ["a", "a", "a", "a", "b"], "param.q": [1, 2, 1, 2, 5],
                         "param.loss": ["ls", "ls", "lad", "lad", "ls"], "param.k": [1.0, 1.0, 1.0, 1.0, 2.0]})
    labels = add_variant_group(rows, rows, "param.q")["variant_group"].tolist()
    assert labels == ["a (loss=ls)", "a (loss=ls)", "a (loss=lad)", "a (loss=lad)", "b"]


def test_variant_group_labels_by_the_variants_name_template():
    """Lines named by their variants' shared name prefix (the configuration's `rf-shared-q{n_components}`), as
    the sweep's matches name them; an unset parameter reads `default`, never `nan`; names with no shared prefix
    per line keep the method-and-parameters label."""
    from forestbench.report.data import add_variant_group

    rows = pd.DataFrame({"method": ["rf"] * 4 + ["tree"] * 2,
                         "variant": ["rf-shared-q1", "rf-shared-q5", "rf-pertree-q1", "rf-pertree-q5",
                                     "tree-q1", "tree-q5"],
                         "param.q": [1, 5, 1, 5, 1, 5],
                         "param.sharing": ["shared", "shared", "per_tree", "per_tree", np.nan, np.nan],
                         "param.bootstrap": [np.nan, np.nan, np.nan, np.nan, False, False]})
    labels = add_variant_group(rows, rows, "param.q")["variant_group"].tolist()
    assert labels == ["rf-shared-q*"] * 2 + ["rf-pertree-q*"] * 2 + ["tree-q*"] * 2
    unnamed = rows.assign(variant=["a", "b", "c", "d", "e", "f"])
    labels = add_variant_group(unnamed, unnamed, "param.q")["variant_group"].tolist()
    assert labels == ["rf (sharing=shared)"] * 2 + ["rf (sharing=per_tree)"] * 2 + ["tree"] * 2
    unset = pd.DataFrame({"method": ["rf", "rf"], "param.q": [1, 1], "param.k": [np.nan, 3.0]})
    assert add_variant_group(unset, unset, "param.q")["variant_group"].tolist() == ["rf (k=default)", "rf (k=3)"]


def test_a_sweep_draws_its_matched_baselines_as_horizontal_lines(tmp_path, monkeypatch):
    """The baselines a sweep's curves are matched against have no x: they are drawn across each panel (the
    thesis' figures show the original-output forest so), not left out of the figure."""
    import copy

    from forestbench.report import figures
    from report_fixtures import make_scores

    drawn = []
    real = figures.sweep_plot

    def spy(rows, x, metric, hue, baselines=None):
        drawn.append(None if baselines is None else sorted(set(baselines["variant"])))
        fig = real(rows, x, metric, hue, baselines)
        drawn.append(sum(len(ax.lines) for ax in fig.axes))
        return fig

    monkeypatch.setattr(figures, "sweep_plot", spy)
    scores = make_scores()
    scores.loc[scores["variant"] == "rf", "param.n_components"] = np.nan
    # a numeric axis: q = 1, 10 (for ln d) and 100 (for d)
    scores["param.n_components"] = scores["param.n_components"].replace({"ln_d": "10", "d": "100"})
    scores_csv = tmp_path / "scores.csv"
    scores.to_csv(scores_csv, index=False)
    cfg = copy.deepcopy(EXPERIMENT_CFG)
    cfg["reports"] = [{"kind": "sweep", "metric": "lrap", "x": "param.n_components",
                       "matches": [{"curve": "rf-gaussian-q", "baseline": "rf", "claimed": 10}]}]
    build_experiment_report(scores_csv, "table_5_1", cfg, REFERENCE_DIR, tmp_path / "out")
    md = (tmp_path / "out" / "report.md").read_text()
    assert drawn[0] == ["rf"] and "horizontal lines (mean ± std over repeats): rf" in md
    assert "left out (no n_components)" not in md
    plain = copy.deepcopy(cfg)
    plain["reports"][0].pop("matches")
    build_experiment_report(scores_csv, "table_5_1", plain, REFERENCE_DIR, tmp_path / "plain")
    assert drawn[2] is None and drawn[1] > drawn[3]     # one line more per panel with the baseline drawn
    assert "left out (no n_components): rf" in (tmp_path / "plain" / "report.md").read_text()


def test_timing_report_puts_ratios_beside_the_published_times(tmp_path):
    """The thesis' timing claims are ratios (the plain forest over each projected one): the report gives ours beside
    them. Fixture CPU times: rf 2.0 s, q = 1 0.5 s, q = d 1.6 s."""
    import copy

    from report_fixtures import make_scores
    scores_csv = tmp_path / "scores.csv"
    scores = make_scores()
    scores.loc[scores["variant"] == "rf", "param.n_components"] = np.nan   # the baseline has no place on the axis
    scores.to_csv(scores_csv, index=False)
    cfg = copy.deepcopy(EXPERIMENT_CFG)
    cfg["reports"] = [{"kind": "timing", "x": "param.n_components", "time": "fit_cpu_s", "baseline": "rf",
                       "published": {"rf": 30.0, "rf-gaussian-q1": 6.0, "rf-gaussian-qd": 20.0}}]
    build_experiment_report(scores_csv, "table_5_1", cfg, REFERENCE_DIR, tmp_path / "out")
    md = (tmp_path / "out" / "report.md").read_text()
    assert "| rf | 18 | 2 | 1 | 30 | 1 |" in md
    assert "| rf-gaussian-q1 | 15 | 0.5 | 4 | 6 | 5 |" in md      # 6 datasets x 3 repeats, one cell missing
    assert "| rf-gaussian-qd | 15 | 1.6 | 1.25 | 20 | 1.5 |" in md
    assert "rf-gaussian-qlnd |" not in md.split("published s")[1].split("\n\n")[0]
    cfg["reports"][0]["baseline"] = "nope"
    with pytest.raises(ConfigError, match="baseline 'nope'"):
        build_experiment_report(scores_csv, "table_5_1", cfg, REFERENCE_DIR, tmp_path / "out2")


def test_timing_report_takes_a_published_speed_up_without_its_seconds(tmp_path):
    """A text that states only a ratio (the boosting paper's "about 7x faster at q = 20") gives it as
    ``published_ratios``: the table shows ours beside it, and no published seconds."""
    import copy

    from report_fixtures import make_scores
    scores_csv = tmp_path / "scores.csv"
    scores = make_scores()
    scores.loc[scores["variant"] == "rf", "param.n_components"] = np.nan
    scores.to_csv(scores_csv, index=False)
    cfg = copy.deepcopy(EXPERIMENT_CFG)
    cfg["reports"] = [{"kind": "timing", "x": "param.n_components", "time": "fit_cpu_s", "baseline": "rf",
                       "published_ratios": {"rf-gaussian-q1": 7.0}}]
    build_experiment_report(scores_csv, "table_5_1", cfg, REFERENCE_DIR, tmp_path / "out")
    md = (tmp_path / "out" / "report.md").read_text()
    assert "| rf | 18 | 2 | 1 |  | 1 |" in md
    assert "| rf-gaussian-q1 | 15 | 0.5 | 4 |  | 7 |" in md
    for bad, match in [({"published_ratios": {"rf": 2.0}}, "baseline variant that is not one of its keys"),
                       ({"published_ratios": {"rf-gaussian-q1": -1}}, "positive ratios"),
                       ({"published": {"rf": 1.0}, "published_ratios": {"rf-gaussian-q1": 7.0}}, "not both")]:
        cfg["reports"] = [{"kind": "timing", "x": "param.n_components", "baseline": "rf", **bad}]
        with pytest.raises(ConfigError, match=match):
            build_experiment_report(scores_csv, "table_5_1", cfg, REFERENCE_DIR, tmp_path / "out3")


def test_cd_diagram_leaves_out_a_dataset_whose_cell_is_under_way(tmp_path):
    """A cell with fewer repeats than the others (a run under way) is not ranked on its partial mean: its dataset
    leaves the diagram, and the note names the cell with its count."""
    import copy

    from report_fixtures import make_scores
    scores = make_scores()
    repeats = sorted(set(scores["repeat"]))
    assert len(repeats) >= 2
    cut = (scores["dataset"] == "scene") & (scores["variant"] == "rf") & (scores["repeat"] == repeats[0])
    scores_csv = tmp_path / "scores.csv"
    scores[~cut].to_csv(scores_csv, index=False)
    out = tmp_path / "report"
    build_experiment_report(scores_csv, "table_5_1", copy.deepcopy(EXPERIMENT_CFG), REFERENCE_DIR, out)
    manifest = json.loads((out / "manifest.json").read_text())
    cd = next(s for s in manifest["sections"] if s["kind"] == "cd_diagram")
    assert cd["data"]["n_datasets"] == 3      # 4 complete datasets in the full table
    notes = " ".join(cd["notes"])
    assert f"scene / rf ({len(repeats) - 1} of {len(repeats)})" in notes and "scene" in notes.split("left out")[-1]
    # the table shows the partial mean but ranks without scene; the p-values over datasets leave it out too
    table = next(s for s in manifest["sections"] if s["kind"] == "table" and "lrap" in s["title"])
    assert any("scene / rf" in n and "left out of the average ranks" in n for n in table["notes"])
    wide = pd.read_csv(out / "tables" / "01_table_lrap.csv").set_index("dataset")
    assert not pd.isna(wide.loc["scene", "rf mean"])
    # ranked as if the cell had not run at all
    gone = tmp_path / "gone"
    gone.mkdir()
    scores[~((scores["dataset"] == "scene") & (scores["variant"] == "rf"))].to_csv(gone / "scores.csv", index=False)
    build_experiment_report(gone / "scores.csv", "table_5_1", copy.deepcopy(EXPERIMENT_CFG), REFERENCE_DIR,
                            gone / "report")
    ranks = wide.loc["avg. rank"]
    assert ranks.equals(pd.read_csv(gone / "report" / "tables" / "01_table_lrap.csv").set_index("dataset")
                        .loc["avg. rank"])
    assert ranks.notna().any()
    wilcoxon = (out / "tables" / "04_pvalues_lrap_wilcoxon.md").read_text()
    assert "scene / rf" in wilcoxon and "over 3 datasets" in wilcoxon
