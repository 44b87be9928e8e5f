"""The explorer in a real browser (headless Debian chromium driven over the DevTools protocol): the real
`nphe4v view` server loads, the filter form filters, a sample opens with its image, two models compare, one
response is annotated and the annotation is stored. Screenshots are kept under pytest's tmp dir.

Skipped when chromium is not installed (Debian: `apt-get install -y chromium`).
"""

from __future__ import annotations

import json

import polars as pl
import pytest
from cdp_browser import CHROMIUM, SKIP_REASON, Browser, view_server
from explorer_runs import XSS_MODEL, build_explorer_runs

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
    assert b.js("document.querySelectorAll('script').length") == 0, "no script on the page, the hostile name's included"
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
    assert steps[-1] == {"claim": "the distance is 7", "correct": False, "error_type": "text_reasoning",
                         "kind": "inference", "relevant": True}
    assert json.loads(first)["key"]["instance_id"] == row["instance_id"]
    assert len(list(root.glob("*.png"))) == 5, "the screenshots are kept as test artifacts"
