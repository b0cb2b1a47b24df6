"""Honest verdicts (a reduced protocol is a comparison, not a verdict), the front page across configurations,
its anchors, and the package versions the fits ran with."""
from __future__ import annotations

import copy
import json
import re

import pandas as pd
import pytest

from forestbench import cli
from forestbench.errors import ConfigError
from forestbench.report import build_experiment_report, build_index, reproduction
from forestbench.report.data import load_scores, package_versions, summarise

from report_fixtures import EXPERIMENT_CFG, OFF_CELL, REFERENCE_DIR, make_scores

REDUCED = {"protocol": "reduced", "published_protocol": "100 trees, 10 random splits",
           "run_protocol": "30 trees, 3 random splits"}


def _scores(tmp_path, name="table_5_1", versions=None):
    frame = make_scores(name)
    if versions is not None:
        for package, per_repeat in versions.items():
            frame[f"package.{package}"] = frame["repeat"].map(per_repeat)
    path = tmp_path / "results" / name / "scores.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(path, index=False)
    return path


def _report(tmp_path, name="table_5_1", reference_extra=None, versions=None, protocol="demo"):
    cfg = copy.deepcopy(EXPERIMENT_CFG)
    cfg["reports"] = [{"kind": "table", "metric": "lrap", "baseline": "rf"}]
    cfg["protocol"] = protocol
    cfg["reference"].update(reference_extra or {})
    scores = _scores(tmp_path, name, versions)
    out = scores.parent / "report"
    build_experiment_report(scores, name, cfg, REFERENCE_DIR, out)
    return out, cfg


def test_reduced_protocol_cells_are_comparisons_not_verdicts(tmp_path):
    scores = load_scores(_scores(tmp_path), "table_5_1")
    rep = reproduction.compare_any(scores, dict(EXPERIMENT_CFG["reference"], **REDUCED), REFERENCE_DIR,
                                   "table_5_1", EXPERIMENT_CFG["datasets"], "demo")
    ran = rep.frame[rep.frame["status"] != reproduction.STATUS_NOT_RUN]
    assert len(ran) == 22 and set(ran["status"]) == {reproduction.STATUS_COMPARISON}
    off = rep.frame.set_index(["dataset", "variant"]).loc[OFF_CELL]
    assert off["difference_in_std"] == pytest.approx(10.0)      # the difference is still shown
    c = rep.counts()
    assert (c["judged"], c["comparison_only"], c["out_of_tolerance"], c["not_run"]) == (0, 22, 0, 6)
    md = rep.to_markdown()
    assert "OUT OF TOLERANCE" not in md and "✓" not in md
    assert "comparison only (reduced protocol: 30 trees, 3 random splits)" in md
    assert "Protocol run: `demo` (3 repeat(s) recorded): 30 trees, 3 random splits" in md
    assert "Published protocol: 100 trees, 10 random splits" in md
    assert "comparison only" in rep.to_html() and "OUT OF TOLERANCE" not in rep.to_html()


def test_published_protocol_is_judged_and_states_both_shares(tmp_path):
    scores = load_scores(_scores(tmp_path), "table_5_1")
    rep = reproduction.compare_any(scores, EXPERIMENT_CFG["reference"], REFERENCE_DIR, "table_5_1",
                                   EXPERIMENT_CFG["datasets"], "thesis_ch5")
    c = rep.counts()
    assert (c["judged"], c["within_tolerance"], c["out_of_tolerance"], c["comparison_only"]) == (22, 21, 1, 0)
    text = rep.summary_text()
    assert "22 judged: 21 within 1 published std (the configured rule), 1 out of tolerance" in text
    assert "21 of 22 (95%) within 2 published std" in text
    assert "Published protocol: not stated in the configuration" in rep.to_markdown()


def test_reduced_protocol_needs_its_description():
    ref = dict(EXPERIMENT_CFG["reference"], protocol="reduced")
    with pytest.raises(ConfigError, match="reduced needs run_protocol"):
        reproduction.check_reference(ref, REFERENCE_DIR, "e")
    with pytest.raises(ConfigError, match=r"protocol must be one of published, reduced"):
        reproduction.check_reference(dict(ref, protocol="small"), REFERENCE_DIR, "e")


def test_cells_without_published_std_show_the_relative_gap(tmp_path):
    rows = [{"experiment": "e", "dataset": "sf2", "method": "m", "variant": "rf_et", "repeat": r, "metric": "arrmse",
             "value": v, "higher_is_better": False, "step": None} for r, v in enumerate((2.7, 2.9))]
    pd.DataFrame(rows).to_csv(tmp_path / "s.csv", index=False)
    ref = {"table": "dte_table_4", "metric": "arrmse", "methods": {"rf_et": "rf_et"}}
    rep = reproduction.compare_any(load_scores(tmp_path / "s.csv"), ref, REFERENCE_DIR, "e", ["sf2"])
    cell = rep.frame.iloc[0]
    assert cell["status"] == reproduction.STATUS_NO_STD
    assert f"({cell['difference_relative']:+.0%})" in rep.to_markdown() and cell["difference_relative"] > 0.5


def _links_and_anchors(md: str, page: str):
    md_links = set(re.findall(r"\]\(#([^)]+)\)", md))
    md_anchors = set(re.findall(r"<a id=\"([^\"]+)\"></a>", md))
    html_links = set(re.findall(r"href=['\"]#([^'\"]+)['\"]", page))
    html_anchors = set(re.findall(r"\sid=['\"]([^'\"]+)['\"]", page))
    return md_links, md_anchors, html_links, html_anchors


def test_front_page_links_have_their_anchors(tmp_path):
    out, _ = _report(tmp_path, "demo_projections", REDUCED)
    build_index({"demo_projections": out, "not_built_yet": None}, tmp_path / "index")
    md = (tmp_path / "index" / "index.md").read_text()
    page = (tmp_path / "index" / "index.html").read_text()
    md_links, md_anchors, html_links, html_anchors = _links_and_anchors(md, page)
    assert md_links == {"exp-demo_projections", "exp-not_built_yet"}
    nav = md.split("## Experiments")[1].split("<a id=")[0]        # the list of experiments comes first, whole
    assert "(#exp-demo_projections)" in nav and "(#exp-not_built_yet)" in nav
    assert md_links <= md_anchors, f"index.md links without anchor: {md_links - md_anchors}"
    assert html_links and html_links <= html_anchors, f"index.html links without anchor: {html_links - html_anchors}"


def test_front_page_verdict_counts_judged_cells_apart_from_comparisons(tmp_path):
    reduced, _ = _report(tmp_path / "a", "demo_projections", REDUCED)
    judged, _ = _report(tmp_path / "b", "table_5_1", protocol="thesis_ch5")
    build_index({"demo_projections": reduced, "table_5_1": judged}, tmp_path / "index")
    md = (tmp_path / "index" / "index.md").read_text()
    assert ("Published numbers, all experiments: 22 judged cell(s): 21 within tolerance (the configured rule), "
            "1 out of tolerance; 21 of 22 (95%) within 2 published std; 22 comparison only (reduced protocol)") in md
    section = md.split("## demo_projections")[1].split("## table_5_1")[0]
    assert "**Published numbers**: 0 judged cell(s)" in section and "22 comparison only" in section
    assert "Protocol run: `demo`" in section and "Published protocol: 100 trees, 10 random splits" in section
    report = (reduced / "report.md").read_text()
    assert "Protocol run: `demo` (3 repeat(s) recorded): 30 trees, 3 random splits" in report


def test_front_page_keeps_experiments_of_other_configurations(tmp_path):
    results = tmp_path / "results"
    _report(tmp_path, "demo_projections")
    _report(tmp_path, "table_5_1")
    # a second configuration names only one of them, and one not run yet
    experiments = {"table_5_1": {}, "my_new_one": {}}
    assert cli.main(["report", "index", "--experiments-json", json.dumps(experiments), "--results", str(results),
                     "--out", str(results / "report")]) == 0
    md = (results / "report" / "index.md").read_text()
    assert "## table_5_1" in md and "## my_new_one" in md
    assert "## demo_projections" in md, "an experiment of the other configuration vanished from the front page"
    assert md.index("## table_5_1") < md.index("## my_new_one") < md.index("## demo_projections")


def test_versions_on_the_front_page_and_a_warning_when_mixed(tmp_path):
    same, _ = _report(tmp_path / "a", "e_same", versions={"numpy": {0: "1.10.0", 1: "1.10.0", 2: "1.10.0"},
                                                           "forestbench": {0: "0.3.0", 1: "0.3.0", 2: "0.3.0"}})
    mixed, _ = _report(tmp_path / "b", "e_mixed", versions={"numpy": {0: "1.10.0", 1: "2.1.3", 2: "2.1.3"},
                                                             "forestbench": {0: "0.3.0", 1: "0.3.0", 2: "0.3.0"}})
    m_same = json.loads((same / "manifest.json").read_text())
    m_mixed = json.loads((mixed / "manifest.json").read_text())
    assert m_same["versions"]["numpy"] == {"1.10.0": 66} and m_same["mixed_versions"] == {}
    assert m_mixed["mixed_versions"] == {"numpy": {"1.10.0": 22, "2.1.3": 44}}
    assert "Warning: mixed versions" in (mixed / "report.md").read_text()
    assert "Warning" not in (same / "report.md").read_text()
    build_index({"e_same": same, "e_mixed": mixed}, tmp_path / "index")
    md = (tmp_path / "index" / "index.md").read_text()
    page = (tmp_path / "index" / "index.html").read_text()
    s_same, s_mixed = md.split("## e_same")[1].split("## e_mixed")
    assert "**Package versions**: forestbench 0.3.0, numpy 1.10.0" in s_same and "Warning" not in s_same
    assert "numpy 1.10.0 (22 fits) / 2.1.3 (44 fits)" in s_mixed
    assert "**Warning**: the fits of this experiment ran with different versions of numpy" in s_mixed
    assert "MIXED VERSIONS of numpy" in page and "class='warning'" in page


def test_versions_stay_text_and_collect_writes_them(tmp_path):
    from forestbench.workflow.collect import record_rows

    record = {"experiment": "e", "dataset": "d", "method": "m", "variant": "v", "repeat": 0, "params": {},
              "scores": {"mse": 1.0}, "higher_is_better": {"mse": False},
              "provenance": {"packages": {"numpy": "1.10", "scikit-learn": "1.5.2", "Cython": None}}}
    rows = pd.DataFrame(record_rows(record))
    assert rows.loc[0, "package.numpy"] == "1.10" and rows.loc[0, "package.scikit-learn"] == "1.5.2"
    rows.to_csv(tmp_path / "s.csv", index=False)
    versions = package_versions(load_scores(tmp_path / "s.csv"))
    assert versions == {"numpy": {"1.10": 1}, "scikit-learn": {"1.5.2": 1}}     # "1.10" is not the number 1.1
    assert summarise(load_scores(tmp_path / "s.csv"), "mse")["mean"].tolist() == [1.0]


@pytest.mark.parametrize("protocol,splits", [
    ({"type": "kfold", "n_splits": 10, "repeats": 1, "shuffle": False}, 10),
    ({"type": "random", "n_train": 300, "n_test": 4000, "repeats": 5}, 5),
    ({"type": "given", "n_given": 30}, 30),
    ({"type": "given"}, 1),
    (None, None),                          # a record that does not name its protocol
    ({"type": "no-such-type"}, None),
])
def test_collect_tabulates_the_protocols_split_count_and_summarise_keeps_it(tmp_path, protocol, splits):
    from forestbench.workflow.collect import record_rows

    record = {"experiment": "e", "dataset": "d", "method": "m", "variant": "v", "repeat": 0, "params": {},
              "scores": {"mse": 1.0}, "higher_is_better": {"mse": False}, "data": {"protocol": protocol}}
    rows = pd.DataFrame(record_rows(record))
    assert (rows["n_splits"].tolist() == [splits]) if splits is not None else rows["n_splits"].isna().all()
    rows.to_csv(tmp_path / "s.csv", index=False)
    summary = summarise(load_scores(tmp_path / "s.csv"), "mse")
    if splits is None:
        assert "n_splits" not in summary.columns
    else:
        assert summary["n_splits"].tolist() == [splits]


def test_collect_counts_the_repeats_the_configuration_runs(tmp_path):
    """Under ``max_repeats`` a cell is complete with fewer repeats than its protocol's splits: the split count
    comes from what the configuration expects (the workflow's expected runs) or is capped by the experiment's
    ``max_repeats`` (the archive), never from the protocol alone."""
    import json

    from forestbench.workflow.collect import collect, expected_splits

    protocol = {"type": "kfold", "n_splits": 10, "repeats": 1}
    paths = []
    for repeat in (0, 1):
        record = {"experiment": "e", "dataset": "d", "method": "m", "variant": "v", "repeat": repeat, "params": {},
                  "scores": {"mse": 1.0}, "higher_is_better": {"mse": False}, "data": {"protocol": protocol}}
        paths.append(tmp_path / f"r{repeat}.json")
        paths[-1].write_text(json.dumps(record))
    assert set(collect(paths)["n_splits"]) == {10}
    assert set(collect(paths, max_repeats=2)["n_splits"]) == {2}
    expected = {"runs": {"d/v/0": {}, "d/v/1": {}, "d/w/0": {}}}
    assert expected_splits(expected) == {("d", "v"): 2, ("d", "w"): 1}
    frame = collect(paths, splits=expected_splits(expected))
    assert set(frame["n_splits"]) == {2}
    frame.to_csv(tmp_path / "s.csv", index=False)
    summary = summarise(load_scores(tmp_path / "s.csv"), "mse")
    assert (summary["n"].tolist(), summary["n_splits"].tolist()) == ([2], [2])


def _cells(rows):
    base = {**dict.fromkeys(reproduction.COLUMNS, None), "dataset": "d", "variant": "v", "method_id": "m",
            "paper_printed": "0.5 ± 0.1"}
    return pd.DataFrame([{**base, **r} for r in rows], columns=reproduction.COLUMNS)


def test_chance_counts_the_misses_two_draws_of_one_protocol_would_give():
    # paper_std = ours_std = 0.1 over 2 splits: the difference of the means has std 0.1, so a 1-std rule misses
    # with P(|Z| > 1) = 0.3173 and a 2-std rule with P(|Z| > 2) = 0.0455
    cell = {"paper_std": 0.1, "ours_std": 0.1, "n_repeats": 2, "difference_in_std": 0.5}
    frame = _cells([{**cell, "status": reproduction.STATUS_OK}, {**cell, "status": reproduction.STATUS_OUT},
                    {**cell, "status": reproduction.STATUS_NOT_RUN, "ours_std": None},
                    {**cell, "status": reproduction.STATUS_OK, "paper_std": None}])      # no published std
    rep = reproduction.Reproduction("t", "lrap", 1.0, None, frame)
    c = rep.chance()
    assert c["cells"] == 2 and c["out"] == 1
    assert c["expected_out"] == pytest.approx(2 * 0.317311, abs=1e-5)
    assert c["p_at_least"] == pytest.approx(1 - (1 - 0.317311) ** 2, abs=1e-5)
    wide = reproduction.Reproduction("t", "lrap", 2.0, None, frame).chance()
    assert wide["expected_out"] == pytest.approx(2 * 0.0455003, abs=1e-5)
    # ten repeats of the same stds shrink the difference's std by sqrt(5): a miss gets rarer
    ten = reproduction.Reproduction("t", "lrap", 1.0, None, frame.assign(n_repeats=10)).chance()
    assert ten["expected_out"] == pytest.approx(2 * 0.0253473, abs=1e-5)
    text = rep.to_markdown()
    assert "would leave 0.6 of these 2 judged cells out of tolerance by chance alone; 1 are out" in text
    assert "probability of at least 1 by chance: 0.53" in text
    assert "by chance alone" in rep.to_html()


def test_chance_is_not_stated_under_a_reduced_protocol_or_without_stds():
    cell = {"paper_std": 0.1, "ours_std": 0.1, "n_repeats": 3, "status": reproduction.STATUS_OUT,
            "difference_in_std": 3.0}
    reduced = reproduction.Reproduction("t", "lrap", 1.0, None, _cells([cell]),
                                        protocol=reproduction.Protocol(reduced=True))
    assert reduced.chance() is None and "by chance" not in reduced.to_markdown()
    no_std = reproduction.Reproduction("t", "lrap", 1.0, 0.01, _cells([{**cell, "paper_std": None}]))
    assert no_std.chance() is None
