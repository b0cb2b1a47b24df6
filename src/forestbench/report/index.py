"""The report front page: ``index.html`` (one static, self-contained page: figures embedded as data: URIs, inline CSS,
no external resources) and ``index.md``, linking every table and figure of every experiment and listing the
experiments not run yet.

The page carries a tiny inline script that, once loaded, records on ``<body>`` whether every image decoded
(``data-images-ok``), how many there are, how many script/resource errors happened and where the first CD diagram
and results table are drawn (``data-layout``); the browser test reads them.
"""
from __future__ import annotations

import base64
import html
import json
import os
from pathlib import Path

from forestbench._io import write_text
from forestbench.report.data import versions_text
from forestbench.report.kinds import MANIFEST
from forestbench.report.verdicts import verdict_counts, verdict_text

CSS = """
body{font-family:"DejaVu Sans",Helvetica,Arial,sans-serif;margin:2em auto;max-width:1300px;color:#111;line-height:1.4}
h1{border-bottom:2px solid #333}h2{margin-top:2.2em;border-bottom:1px solid #999}
table{border-collapse:collapse;margin:.8em 0;font-size:.85em}
th,td{border-top:1px solid #bbb;border-bottom:1px solid #bbb;padding:.2em .6em;text-align:right}
th:first-child,td:first-child{text-align:left}caption{caption-side:top;text-align:left;font-style:italic;padding:.3em 0}
td.missing{color:#888;font-style:italic}td.better{background:#e6f0fa}td.worse{background:#fbeee0}
tr.out td{background:#fbe3d6;font-weight:bold}tr.missing td{color:#888;font-style:italic}
img.figure{max-width:100%;border:1px solid #ddd;margin:.5em 0}tr.comparison td{color:#335}
.warning{background:#fff3cd;border:1px solid #d39e00;padding:.3em .6em}.verdict{font-size:.95em}
.status-notrun{color:#a33;font-weight:bold}.links a{margin-right:1em}.note{color:#444;font-size:.9em;margin:.2em 0}
nav ul{columns:2}
"""

SCRIPT = """
<script>
(function () {
  var errors = 0;
  window.addEventListener('error', function () { errors += 1; }, true);
  window.addEventListener('load', function () {
    var imgs = document.images, ok = true;
    for (var i = 0; i < imgs.length; i++) {
      if (!(imgs[i].complete && imgs[i].naturalWidth > 0)) { ok = false; }
    }
    document.body.setAttribute('data-images-ok', ok ? 'true' : 'false');
    document.body.setAttribute('data-image-count', String(imgs.length));
    document.body.setAttribute('data-errors', String(errors));
    // where the first CD diagram and the first results table are drawn (CSS pixels), for screenshot checks
    var boxes = {};
    [['cd', 'img[data-kind="cd_diagram"]'], ['table', 'table.results']].forEach(function (q) {
      var el = document.querySelector(q[1]);
      if (el) { var r = el.getBoundingClientRect(); boxes[q[0]] = [r.left, r.top, r.width, r.height]; }
    });
    document.body.setAttribute('data-layout', JSON.stringify(boxes));
  });
})();
</script>
"""


def _load_manifest(report_dir: Path | None) -> dict | None:
    if report_dir is None:
        return None
    path = Path(report_dir) / MANIFEST
    if not path.exists():
        return None
    return json.loads(path.read_text(encoding="utf-8"))


def _as_mapping(experiment_dirs) -> dict[str, Path | None]:
    if isinstance(experiment_dirs, dict):
        return {str(k): (None if v is None else Path(v)) for k, v in experiment_dirs.items()}
    out: dict[str, Path | None] = {}
    for d in experiment_dirs:
        d = Path(d)
        manifest = _load_manifest(d)
        name = manifest["experiment"] if manifest else (d.parent.name if d.name == "report" else d.name)
        out[name] = d
    return out


def discover_reports(results: Path, configured: list[str] | None = None) -> dict[str, Path | None]:
    """Report directories for the front page: the ``configured`` experiments first (in their order, ``None`` for
    those without a report yet), then every other ``<results>/<E>/report`` that holds a manifest, whichever
    configuration built it, by name."""
    results = Path(results)
    out: dict[str, Path | None] = {}
    for name in configured or []:
        report_dir = results / str(name) / "report"
        out[str(name)] = report_dir
    for manifest in sorted(results.glob(f"*/report/{MANIFEST}")):
        name = manifest.parent.parent.name
        out.setdefault(name, manifest.parent)
    return out


def anchor_ids(names) -> dict[str, str]:
    """A unique HTML id per experiment name: ``exp-`` and the name with every other character than letters,
    digits, '-' and '_' replaced by '-'."""
    out: dict[str, str] = {}
    used: set[str] = set()
    for name in names:
        base = "exp-" + "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in str(name))
        anchor, k = base, 2
        while anchor in used:
            anchor, k = f"{base}-{k}", k + 1
        used.add(anchor)
        out[str(name)] = anchor
    return out


def _verdict_counts(manifest: dict | None) -> dict:
    """The manifest's verdict, or (a manifest written before it had one) the sum of its reproduction sections."""
    manifest = manifest or {}
    if "verdict" in manifest:
        return manifest["verdict"] or {}
    return verdict_counts([s.get("data") or {} for s in manifest.get("sections", [])
                           if s.get("kind") == "reproduction"])


def _verdict(manifest: dict | None) -> str:
    return verdict_text(_verdict_counts(manifest))


def _versions(manifest: dict) -> tuple[str, dict]:
    versions = manifest.get("versions") or {}
    return (versions_text(versions) if versions else "not recorded"), (manifest.get("mixed_versions") or {})


def _data_uri(path: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")


def build_index(experiment_dirs: list[Path] | dict, out_dir: Path) -> Path:
    """Write ``out_dir``/index.html and index.md for the experiments' report directories.

    ``experiment_dirs``: report directories (``results/<E>/report``), or a mapping experiment name -> report
    directory (or None); :func:`discover_reports` gives the configured experiments plus every other one with a
    report. An experiment whose directory holds no manifest, or whose report has no scores, is listed as not run.
    The page opens with the verdict on the published numbers over every experiment (judged cells apart from
    comparisons under a reduced protocol); each experiment states its verdict and the package versions its fits
    ran with, with a warning when they differ between fits.
    """
    out_dir = Path(out_dir)
    experiments = _as_mapping(experiment_dirs)
    anchors = anchor_ids(experiments)
    manifests = {name: _load_manifest(d) for name, d in experiments.items()}
    overall = verdict_counts([_verdict_counts(m) for m in manifests.values() if m])
    overall_line = "Published numbers, all experiments: " + verdict_text(overall) + "."
    body, md = [], []
    nav, md_nav = [], []
    for name, report_dir in experiments.items():
        manifest = manifests[name]
        anchor = anchors[name]
        not_run = manifest is None or manifest.get("n_rows", 0) == 0
        status = "not run" if not_run else f"{manifest['n_rows']} score rows"
        if manifest and manifest.get("missing_cells"):
            status += f", {len(manifest['missing_cells'])} cell(s) missing"
        mixed = (manifest or {}).get("mixed_versions") or {}
        if mixed:
            status += f", MIXED VERSIONS of {', '.join(mixed)}"
        nav.append(f"<li><a href='#{anchor}'>{html.escape(name)}</a> — "
                   f"<span class='{'status-notrun' if not_run else 'status'}'>{html.escape(status)}</span></li>")
        md_nav.append(f"- [{name}](#{anchor}) — {'**not run**' if not_run else status}")
        body.append(f"<section id='{anchor}'><h2>{html.escape(name)}</h2>")
        md_head = ["", f'<a id="{anchor}"></a>', "", f"## {name}", ""]
        if manifest is None:
            body.append("<p class='status-notrun'>Not run: no report built for this experiment.</p></section>")
            md += md_head + ["**Not run**: no report built for this experiment.", ""]
            continue
        if manifest.get("description"):
            body.append(f"<p>{html.escape(manifest['description'])}</p>")
        if not_run:
            body.append("<p class='status-notrun'>Not run: no scores recorded yet.</p>")
        verdict = _verdict(manifest)
        versions, mixed = _versions(manifest)
        body.append(f"<p class='verdict'><b>Published numbers</b>: {html.escape(verdict)}</p>")
        protocols = list(dict.fromkeys(manifest.get("protocols") or []))   # entries of one table family repeat it
        body += [f"<p class='note protocol'>{html.escape(t)}</p>" for t in protocols]
        body.append(f"<p class='versions'><b>Package versions</b>: {html.escape(versions)}</p>")
        if mixed:
            body.append(f"<p class='warning'><b>Warning</b>: the fits of this experiment ran with different "
                        f"versions of {html.escape(', '.join(mixed))}.</p>")
        rel_dir = Path(os.path.relpath(report_dir, out_dir))
        report_md = (rel_dir / manifest.get("report_md", "report.md")).as_posix()
        body.append(f"<p class='links'><a href='{html.escape(report_md)}'>experiment report (Markdown)</a></p>")
        for sec in manifest.get("sections", []):
            body.append(f"<h3>{html.escape(sec['title'])}</h3>")
            if sec["files"]:
                links = " ".join(f"<a href='{html.escape((rel_dir / p).as_posix())}'>{html.escape(k)}</a>"
                                 for k, p in sec["files"].items())
                body.append(f"<p class='links'>{links}</p>")
            for img in sec["images"]:
                body.append(f"<img class='figure' data-kind='{html.escape(sec['kind'])}' "
                            f"alt='{html.escape(sec['title'])}' src='{_data_uri(Path(report_dir) / img)}'>")
            body += [f"<p class='note'>{html.escape(n)}</p>" for n in sec["notes"]]
            if sec.get("html"):
                body.append(f"<div class='kind-{html.escape(sec['kind'])}'>{sec['html']}</div>")
        missing = manifest.get("missing_cells") or []
        if missing:
            items = "".join(f"<li>{html.escape(m['dataset'])} / {html.escape(m['variant'])} / "
                            f"{html.escape(m['metric'])}</li>" for m in missing)
            body.append(f"<details class='missing-cells'><summary>{len(missing)} cell(s) not run</summary>"
                        f"<ul>{items}</ul></details>")
        body.append("</section>")
        # Markdown
        md_sec = list(md_head)
        if manifest.get("description"):
            md_sec += [manifest["description"], ""]
        if not_run:
            md_sec += ["**Not run**: no scores recorded yet.", ""]
        md_sec += [f"**Published numbers**: {verdict}", ""]
        md_sec += [f"- {t}" for t in protocols] + ([""] if protocols else [])
        md_sec += [f"**Package versions**: {versions}", ""]
        if mixed:
            md_sec += [f"**Warning**: the fits of this experiment ran with different versions of "
                       f"{', '.join(mixed)}.", ""]
        md_sec += [f"[experiment report]({(rel_dir / manifest.get('report_md', 'report.md')).as_posix()})", ""]
        for sec in manifest.get("sections", []):
            md_sec += [f"### {sec['title']}", ""]
            if sec["files"]:
                md_sec += [" · ".join(f"[{k}]({(rel_dir / p).as_posix()})" for k, p in sec["files"].items()), ""]
            md_sec += [f"![{sec['title']}]({(rel_dir / p).as_posix()})" for p in sec["images"]]
            md_sec += [f"- {n}" for n in sec["notes"]]
            if sec["kind"] == "reproduction" and sec.get("data", {}).get("summary"):
                md_sec.append(f"- {sec['data']['summary']}")
            md_sec.append("")
        if missing:
            md_sec += [f"{len(missing)} cell(s) not run (see the experiment report).", ""]
        md += md_sec
    page = ("<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
            "<meta name='viewport' content='width=device-width, initial-scale=1'><link rel='icon' href='data:,'>"
            f"<title>forestbench report</title><style>{CSS}</style>{SCRIPT}</head><body>"
            f"<h1>forestbench report</h1><p class='verdict overall'>{html.escape(overall_line)}</p>"
            "<nav><h2>Experiments</h2><ul>" + "".join(nav) + "</ul></nav>"
            + "\n".join(body) + "</body></html>\n")
    index = out_dir / "index.html"
    write_text(index, page)
    md = ["# forestbench report", "", overall_line, "", "## Experiments", ""] + md_nav + md
    write_text(out_dir / "index.md", "\n".join(md) + "\n")
    return index
