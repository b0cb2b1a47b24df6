"""The report page in headless Chromium: it loads without errors, its images decode, and a screenshot shows a CD
diagram and a results table.

Needs Debian's ``chromium`` (the CI set-up installs it). Without it the test fails, unless FORESTBENCH_NO_BROWSER=1
is set, in which case it is skipped with that reason.
"""
from __future__ import annotations

import copy
import functools
import html
import json
import os
import re
import shutil
import subprocess
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

import matplotlib.image as mpimg
import numpy as np
import pytest
import seaborn as sns

from forestbench.report import build_experiment_report, build_index

from report_fixtures import EXPERIMENT_CFG, REFERENCE_DIR, make_scores

pytestmark = pytest.mark.browser

WIDTH, HEIGHT = 1400, 2000


def _chromium() -> str:
    if os.environ.get("FORESTBENCH_NO_BROWSER") == "1":
        reason = "FORESTBENCH_NO_BROWSER=1: browser tests of the report page are disabled"
        print(reason)
        pytest.skip(reason)
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    pytest.fail("chromium not found: install Debian's chromium package (apt-get install -y chromium), "
                "or set FORESTBENCH_NO_BROWSER=1 to skip the browser tests explicitly")


class _LoggingHandler(SimpleHTTPRequestHandler):
    requests: list  # (path, status), set per server

    def log_request(self, code="-", size="-"):
        self.requests.append((self.path, int(code) if str(code).isdigit() else code))

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    chromium = _chromium()
    root = tmp_path_factory.mktemp("site")
    results = root / "results"
    scores = results / "table_5_1" / "scores.csv"
    scores.parent.mkdir(parents=True)
    make_scores().to_csv(scores, index=False)
    cfg = copy.deepcopy(EXPERIMENT_CFG)
    # the CD diagram first and a table right after, so both fall inside the screenshot window
    kinds = ["cd_diagram", "table", "sweep", "pvalues"]
    cfg["reports"] = sorted([r for r in cfg["reports"] if r["kind"] in kinds and r.get("metric") == "lrap"
                             and r.get("test", "wilcoxon") == "wilcoxon"], key=lambda r: kinds.index(r["kind"]))
    build_experiment_report(scores, "table_5_1", cfg, REFERENCE_DIR, results / "table_5_1" / "report")
    index = build_index({"table_5_1": results / "table_5_1" / "report", "table_6_5": None}, results / "report")
    log: list = []
    handler = type("Handler", (_LoggingHandler,), {"requests": log})
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(handler, directory=str(results)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield {"chromium": chromium, "url": f"http://127.0.0.1:{server.server_port}/report/index.html",
               "index": index, "log": log, "tmp": root}
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def _run(site, *args) -> subprocess.CompletedProcess:
    profile = site["tmp"] / f"profile-{len(list(site['tmp'].glob('profile-*')))}"
    cmd = [site["chromium"], "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           f"--user-data-dir={profile}", f"--window-size={WIDTH},{HEIGHT}", "--force-device-scale-factor=1",
           "--hide-scrollbars", "--virtual-time-budget=5000", "--enable-logging=stderr", "--v=0", *args,
           site["url"]]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc


def _body_attributes(dom: str) -> dict:
    match = re.search(r"<body([^>]*)>", dom)
    assert match, dom[:500]
    return {k: html.unescape(v) for k, v in re.findall(r'([\w-]+)="([^"]*)"', match.group(1))}


@pytest.fixture(scope="module")
def dom(site):
    proc = _run(site, "--dump-dom")
    return proc, _body_attributes(proc.stdout)


def test_page_loads_without_errors_and_images_decode(site, dom):
    proc, attrs = dom
    n_images = site["index"].read_text().count("<img ")
    assert n_images == 2  # the CD diagram and the sweep
    assert attrs.get("data-images-ok") == "true", attrs
    assert attrs.get("data-image-count") == str(n_images)
    assert attrs.get("data-errors") == "0"
    console = [line for line in proc.stderr.splitlines() if "CONSOLE" in line]
    assert not [line for line in console if "Uncaught" in line or "Failed to load" in line or "rror" in line], console
    assert site["log"], "the page was not requested from the local server"
    assert all(status == 200 for _, status in site["log"]), site["log"]
    assert "table_6_5" in proc.stdout and "Not run" in proc.stdout


def test_screenshot_shows_cd_diagram_and_table(site, dom):
    _, attrs = dom
    layout = json.loads(attrs["data-layout"])
    assert {"cd", "table"} <= set(layout)
    shot = site["tmp"] / "shot.png"
    _run(site, f"--screenshot={shot}")
    img = mpimg.imread(shot)[..., :3]
    assert img.shape[:2] == (HEIGHT, WIDTH)
    nonwhite = (img < 0.94).any(axis=2)
    assert nonwhite.mean() > 0.03, "the screenshot is (nearly) blank"

    def crop(box):
        x, y, w, h = (int(round(v)) for v in box)
        assert y + h <= HEIGHT and x + w <= WIDTH, f"{box} is outside the screenshot window"
        return img[y:y + h, x:x + w]

    cd = crop(layout["cd"])
    # every method of the diagram has its own colour-blind palette colour: find them in the picture
    palette = np.array(sns.color_palette("colorblind", 4))
    found = [int((np.abs(cd - c).max(axis=2) < 0.08).sum()) for c in palette]
    assert sum(n >= 30 for n in found) >= 3, found
    # the black crossbar / CD bar: rows with a long run of near-black pixels
    dark_rows = ((cd < 0.25).all(axis=2).sum(axis=1) > 0.3 * cd.shape[1]).sum()
    assert dark_rows >= 2
    table = crop(layout["table"])
    # the table's horizontal rules span its width, and its text covers a fair share of it
    rules = ((table < 0.9).any(axis=2).mean(axis=1) > 0.8).sum()
    assert rules >= 8, rules
    assert ((table < 0.5).all(axis=2)).mean() > 0.02
