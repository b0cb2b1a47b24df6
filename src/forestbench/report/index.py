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
from forestbench.report.experiment import MANIFEST

CSS = """
body{font-family:"DejaVu Sans",Helvetica,Arial,sans-serif;margin:2em auto;max-width:1300px;color:#111;line-height:1.4}
h1{border-bottom:2px solid #333}h2{margin-top:2.2em;border-bottom:1px solid #999}
table{border-collapse:collapse;margin:.8em 0;font-size:.85em}
th,td{border-top:1px solid #bbb;border-bottom:1px solid #bbb;padding:.2em .6em;text-align:right}
th:first-child,td:first-child{text-align:left}caption{caption-side:top;text-align:left;font-style:italic;padding:.3em 0}
td.missing{color:#888;font-style:italic}td.better{background:#e6f0fa}td.worse{background:#fbeee0}
tr.out td{background:#fbe3d6;font-weight:bold}tr.missing td{color:#888;font-style:italic}
img.figure{max-width:100%;border:1px solid #ddd;margin:.5em 0}
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


def _data_uri(path: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")


def build_index(experiment_dirs: list[Path] | dict, out_dir: Path) -> Path:
    """Write ``out_dir``/index.html and index.md for the experiments' report directories.

    ``experiment_dirs``: report directories (``results/<E>/report``), or a mapping experiment name -> report
    directory (or None). An experiment whose directory holds no manifest, or whose report has no scores, is listed
    as not run.
    """
    out_dir = Path(out_dir)
    experiments = _as_mapping(experiment_dirs)
    body, md = [], ["# forestbench report", ""]
    nav = []
    for name, report_dir in experiments.items():
        manifest = _load_manifest(report_dir)
        anchor = "exp-" + "".join(ch if ch.isalnum() else "-" for ch in name)
        not_run = manifest is None or manifest.get("n_rows", 0) == 0
        status = "not run" if not_run else f"{manifest['n_rows']} score rows"
        if manifest and manifest.get("missing_cells"):
            status += f", {len(manifest['missing_cells'])} cell(s) missing"
        nav.append(f"<li><a href='#{anchor}'>{html.escape(name)}</a> — "
                   f"<span class='{'status-notrun' if not_run else 'status'}'>{html.escape(status)}</span></li>")
        md.append(f"- [{name}](#{anchor}) — {'**not run**' if not_run else status}")
        body.append(f"<section id='{anchor}'><h2>{html.escape(name)}</h2>")
        if manifest is None:
            body.append("<p class='status-notrun'>Not run: no report built for this experiment.</p></section>")
            md += ["", f"## {name}", "", "**Not run**: no report built for this experiment.", ""]
            continue
        if manifest.get("description"):
            body.append(f"<p>{html.escape(manifest['description'])}</p>")
        if not_run:
            body.append("<p class='status-notrun'>Not run: no scores recorded yet.</p>")
        rel_dir = Path(os.path.relpath(report_dir, out_dir))
        body.append(f"<p class='links'><a href='{html.escape((rel_dir / manifest.get('report_md', 'report.md')).as_posix())}'>"
                    "experiment report (Markdown)</a></p>")
        for sec in manifest.get("sections", []):
            body.append(f"<h3>{html.escape(sec['title'])}</h3>")
            if sec["files"]:
                links = " ".join(f"<a href='{html.escape((rel_dir / p).as_posix())}'>{html.escape(k)}</a>"
                                 for k, p in sec["files"].items())
                body.append(f"<p class='links'>{links}</p>")
            for img in sec["images"]:
                body.append(f"<img class='figure' data-kind='{html.escape(sec['kind'])}' alt='{html.escape(sec['title'])}'"
                            f" src='{_data_uri(Path(report_dir) / img)}'>")
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
        md_sec = ["", f"## {name}", ""]
        if manifest.get("description"):
            md_sec += [manifest["description"], ""]
        if not_run:
            md_sec += ["**Not run**: no scores recorded yet.", ""]
        md_sec += [f"[experiment report]({(rel_dir / manifest.get('report_md', 'report.md')).as_posix()})", ""]
        for sec in manifest.get("sections", []):
            md_sec += [f"### {sec['title']}", ""]
            if sec["files"]:
                md_sec += [" · ".join(f"[{k}]({(rel_dir / p).as_posix()})" for k, p in sec["files"].items()), ""]
            md_sec += [f"![{sec['title']}]({(rel_dir / p).as_posix()})" for p in sec["images"]]
            md_sec += [f"- {n}" for n in sec["notes"]] + [""]
        if missing:
            md_sec += [f"{len(missing)} cell(s) not run (see the experiment report).", ""]
        md += md_sec
    page = ("<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
            "<meta name='viewport' content='width=device-width, initial-scale=1'><link rel='icon' href='data:,'>"
            f"<title>forestbench report</title><style>{CSS}</style>{SCRIPT}</head><body>"
            "<h1>forestbench report</h1><nav><h2>Experiments</h2><ul>" + "".join(nav) + "</ul></nav>"
            + "\n".join(body) + "</body></html>\n")
    index = out_dir / "index.html"
    write_text(index, page)
    write_text(out_dir / "index.md", "\n".join(md) + "\n")
    return index
