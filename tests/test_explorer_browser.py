"""The explorer in a real browser (headless Debian chromium driven over the DevTools protocol): the real
`nphe4v view` server loads, the filter form filters, a sample opens with its image, two models compare, one
response is annotated and the annotation is stored. Screenshots are kept under pytest's tmp dir.

Skipped when chromium is not installed (Debian: `apt-get install -y chromium`).
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import polars as pl
import pytest
from conftest import PROJECT
from explorer_runs import XSS_MODEL, build_explorer_runs
from PIL import Image, ImageStat

CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (apt-get install -y chromium)")

FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
    "--disable-dev-shm-usage", "--window-size=1400,1600", "--remote-debugging-port=0",
    "--remote-allow-origins=*",
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_http(url: str, proc: subprocess.Popen, timeout: float = 120) -> None:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if proc.poll() is not None:
            raise AssertionError(f"server exited: {proc.stderr.read().decode(errors='replace')[-2000:]}")
        with contextlib.suppress(OSError):
            urllib.request.urlopen(url, timeout=5).read()
            return
        time.sleep(0.3)
    raise AssertionError(f"{url} did not answer in {timeout}s")


class Browser:
    """One headless chromium and its first page, driven over the DevTools protocol."""

    def __init__(self, tmp: Path) -> None:
        from websockets.sync.client import connect

        self.tmp = tmp
        profile = tmp / "profile"
        self.proc = subprocess.Popen([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        port_file = profile / "DevToolsActivePort"
        t0 = time.monotonic()
        while not port_file.is_file() or not port_file.read_text().strip():
            assert self.proc.poll() is None, self.proc.stderr.read().decode(errors="replace")[-2000:]
            assert time.monotonic() - t0 < 60, "chromium did not open its DevTools port"
            time.sleep(0.2)
        port = int(port_file.read_text().split()[0])
        targets = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10).read())
        page = next(t for t in targets if t["type"] == "page")
        self.stack = contextlib.ExitStack()
        self.ws = self.stack.enter_context(connect(page["webSocketDebuggerUrl"], max_size=64 * 2**20,
                                                   open_timeout=30))
        self.n = 0
        self.call("Page.enable")
        self.call("Runtime.enable")

    def call(self, method: str, **params) -> dict:
        self.n += 1
        self.ws.send(json.dumps({"id": self.n, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv(timeout=60))
            if msg.get("id") == self.n:
                assert "error" not in msg, msg["error"]
                return msg.get("result", {})

    def js(self, expr: str):
        res = self.call("Runtime.evaluate", expression=expr, awaitPromise=True, returnByValue=True)
        assert "exceptionDetails" not in res, res["exceptionDetails"]
        return res["result"].get("value")

    def wait(self, expr: str, timeout: float = 30):
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            with contextlib.suppress(AssertionError):
                v = self.js(expr)
                if v:
                    return v
            time.sleep(0.2)
        raise AssertionError(f"timed out waiting for {expr}")

    def goto(self, url: str) -> None:
        self.call("Page.navigate", url=url)
        self.wait(f"document.readyState === 'complete' && location.href === {json.dumps(url)}")

    def shot(self, name: str) -> Image.Image:
        data = self.call("Page.captureScreenshot", format="png")["data"]
        out = self.tmp / f"{name}.png"
        out.write_bytes(base64.b64decode(data))
        img = Image.open(out).convert("RGB")
        assert ImageStat.Stat(img.convert("L")).var[0] > 100, f"{name}: screenshot (nearly) blank"
        return img

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.stack.close()
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("explorer-browser")
    runs = build_explorer_runs(root)
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(PROJECT), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    server = subprocess.Popen(
        [sys.executable, "-m", "nphe4v.cli", "view", *map(str, runs), "--port", str(port), "--annotate",
         "--n-boot", "50"], cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    browser = None
    try:
        _wait_http(base + "/samples", server)
        browser = Browser(root)
        yield base, runs, browser, root
    finally:
        if browser is not None:
            browser.close()
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


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
