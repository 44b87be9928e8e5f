"""The explorer in a real browser (headless Debian chromium driven over the DevTools protocol): the real
`nphe4v view` server loads, the filter form filters, a sample opens with its image, two models compare, one
response is annotated and the annotation is stored. Screenshots are kept under pytest's tmp dir. Then the
attacks: a hostile SVG in a dataset folder never runs in the explorer's origin, and a page of another origin
cannot frame the annotation page.

Skipped when chromium is not installed (Debian: `apt-get install -y chromium`).
"""

from __future__ import annotations

import functools
import http.server
import json
import threading
import time
from pathlib import Path

import polars as pl
import pytest
from cdp_browser import CHROMIUM, SKIP_REASON, Browser, free_port, view_server
from explorer_runs import HOSTILE_SVG, XSS_MODEL, build_explorer_runs, image_url

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason=SKIP_REASON)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("explorer-browser")
    runs = build_explorer_runs(root)
    with view_server(runs, "--annotate", "--n-boot", "50", cwd=root) as (base, _server):
        browser = Browser(root)
        try:
            yield base, runs, browser, root
        finally:
            browser.close()


def test_load_filter_open_compare_annotate(served) -> None:
    base, runs, b, root = served
    # load: the leaderboards render, the hostile model name is text
    b.goto(base + "/")
    b.shot("01-leaderboards")
    assert b.js("document.querySelectorAll('#board-nph tbody tr').length") >= 3
    # the only script is the explorer's own table sorter, from its static folder: nothing inline, nothing the
    # hostile name brought
    scripts = b.js("Array.from(document.querySelectorAll('script')).map(s => [s.getAttribute('src'), s.text])")
    assert scripts == [["/static/sort.js", ""]], scripts
    assert XSS_MODEL in b.js("document.getElementById('board-nph').innerText")

    # filter with the form: the URL takes the filters, every listed row matches
    b.goto(base + "/samples")
    b.js("document.getElementById('f-model').value = 'beta';"
         "document.getElementById('f-outcome').value = 'wrong';"
         "document.getElementById('apply').click(); true")
    b.wait("location.search.includes('model=beta') && document.readyState === 'complete'")
    assert "outcome=wrong" in b.js("location.search")
    cells = b.js("[...document.querySelectorAll('#samples tbody tr')].map(r => [r.cells[0].innerText, r.cells[9].innerText])")
    assert cells and all(c == ["beta", "wrong"] for c in cells), cells
    b.shot("02-samples-filtered")

    # open a sample: its image loads from the dataset, the hostile response is shown as text
    href = b.js("document.querySelector('a.sample-link').href")
    b.goto(href)
    b.wait("document.querySelector('img.sent') && document.querySelector('img.sent').complete")
    assert b.js("document.querySelector('img.sent').naturalWidth") > 50
    assert "<script>" in b.js("document.getElementById('raw-response').innerText")
    b.shot("03-sample")

    # compare two models
    b.goto(base + "/compare?model=alpha&model_b=beta")
    counts = b.js("[...document.querySelectorAll('#summary td')].map(td => +td.innerText)")
    assert len(counts) == 4 and sum(counts) == b.js("document.querySelectorAll('#pairs tbody tr').length")
    assert b.js("document.querySelectorAll('#pairs tr.differ').length") == counts[1]
    b.shot("04-compare")

    # annotate one response: label the judge's claims, add one, save; the next response comes up
    gv_run = runs[1]
    b.goto(base + "/annotate?annotator=browser1&task=SD")
    progress = b.js("document.getElementById('progress').innerText")
    assert progress.startswith("0 of ")
    first = b.js("document.getElementById('sample-key').textContent")
    b.js("document.getElementById('add-step').click();"
         "const rows = document.querySelectorAll('#steps tbody tr');"
         "rows.forEach((tr, i) => { if (!tr.querySelector('.claim').value) tr.querySelector('.claim').value = 'the distance is 7';"
         "  tr.querySelector('.label').value = i === rows.length - 1 ? 'text_reasoning' : 'correct'; });"
         "document.getElementById('save').click(); true")
    b.wait("document.readyState === 'complete' && document.getElementById('progress') && "
           "document.getElementById('progress').innerText.startsWith('1 of ')")
    assert b.js("document.getElementById('sample-key').textContent") != first
    b.shot("05-annotated")
    files = sorted((gv_run / "annotations").glob("browser1-*.parquet"))
    assert len(files) == 1
    row = pl.read_parquet(files[0]).row(0, named=True)
    assert row["annotator"] == "browser1" and row["task"] == "SD" and row["n_steps"] >= 1
    steps = json.loads(row["steps"])
    want = {"claim": "the distance is 7", "correct": False, "error_type": "text_reasoning", "kind": "inference",
            "relevant": True}
    # the judge's step schema has since gained optional fields (fact, quote) that the form leaves unset
    assert {k: steps[-1][k] for k in want} == want and all(steps[-1][k] is None for k in steps[-1].keys() - want)
    assert json.loads(first)["key"]["instance_id"] == row["instance_id"]
    assert len(list(root.glob("*.png"))) == 5, "the screenshots are kept as test artifacts"


@pytest.fixture
def foreign(tmp_path):
    """Another origin (the same host, another port): a plain static file server for the attacker's pages."""
    www = tmp_path / "www"
    www.mkdir()

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), functools.partial(Quiet, directory=str(www)))
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}", www
    finally:
        srv.shutdown()
        thread.join(timeout=10)


def _frames(b: Browser) -> dict[str, dict]:
    return {c["frame"]["name"]: c["frame"] for c in b.call("Page.getFrameTree")["frameTree"].get("childFrames", [])}


def test_a_hostile_svg_never_runs_and_a_foreign_page_cannot_frame_the_explorer(served, foreign) -> None:
    base, runs, b, _root = served
    origin, www = foreign
    manifest = json.loads((runs[1] / "manifest.json").read_text())
    ds_root, run_label = Path(manifest["datasets"][0]["path"]), manifest["run_id"]
    (ds_root / "evil.svg").write_bytes(HOSTILE_SVG)
    (ds_root / "evil-svg.png").write_bytes(HOSTILE_SVG)  # an SVG under a raster name
    (www / "evil.svg").write_bytes(HOSTILE_SVG)

    # control: served as SVG (by the other origin), its script runs and sets the marker this test looks for
    b.goto(origin + "/evil.svg")
    b.wait("localStorage.getItem('svg_ran') !== null")

    # from the explorer's dataset folder: refused, whatever its name, and its script never runs there
    b.goto(base + "/")
    assert b.js("localStorage.getItem('svg_ran')") is None
    for name in ("evil.svg", "evil-svg.png"):
        url = base + image_url(run_label, name)
        b.goto(url)
        assert b.js("localStorage.getItem('svg_ran')") is None, f"{name}: the SVG's script ran in the explorer"
        assert b.js("document.querySelector('svg') === null && document.title !== 'PWNED'")
        assert "not served" in b.js("document.body.innerText")
        assert b.js(f"fetch({json.dumps(url)}).then(r => r.status)") == 415

    # a page of another origin frames the annotation page: chromium refuses to render it (X-Frame-Options and
    # CSP frame-ancestors), while the same page's own frame (the control) renders
    (www / "ok.html").write_text("<!doctype html><p>ok</p>")
    (www / "frame.html").write_text(
        f'<!doctype html><iframe name="explorer" src="{base}/annotate?annotator=framed&amp;task=SD" width="900" '
        f'height="600"></iframe><iframe name="control" src="/ok.html"></iframe>')
    b.goto(origin + "/frame.html")
    deadline = time.monotonic() + 30
    while not all(f.get("url") not in (None, "", "about:blank") for f in _frames(b).values()) \
            or len(_frames(b)) < 2:
        assert time.monotonic() < deadline, _frames(b)
        b.js("new Promise(r => setTimeout(() => r(true), 100))")  # let the frames load
    frames = _frames(b)
    assert frames["control"]["url"] == origin + "/ok.html"
    assert b.js("document.querySelector('iframe[name=control]').contentDocument.body.innerText") == "ok"
    explorer = frames["explorer"]
    assert explorer["url"].startswith("chrome-error://"), explorer
    assert explorer.get("unreachableUrl", "").startswith(base + "/annotate"), explorer
    b.shot("06-framing-refused")
