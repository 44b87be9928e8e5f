"""Headless Debian chromium for the browser tests and the explorer benchmark, in one place.

* ``CHROMIUM`` (None when not installed: the browser tests skip) and the headless ``FLAGS``;
* ``screenshot`` / ``dump_dom``: one chromium process per page, for static files (the HTML report);
* ``Browser``: one chromium driven over the DevTools protocol (navigate, evaluate, wait, screenshot), for
  pages that need clicks and typing (the explorer);
* ``free_port``, ``wait_http`` and ``view_server``: the real ``nphe4v view`` server on a free port, started,
  awaited and stopped.

``bench/bench_explorer.py`` imports this module too (it puts ``tests/`` on its path).
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
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from pathlib import Path

from PIL import Image, ImageStat

PROJECT = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)
SKIP_REASON = "chromium not installed (apt-get install -y chromium)"

FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
    "--disable-dev-shm-usage",
]


# ---------------------------------------------------------------------------------------------------------
# One process per page
# ---------------------------------------------------------------------------------------------------------


def chromium(tmp: Path, *args: str) -> subprocess.CompletedProcess:
    """Run chromium once with a fresh profile under ``tmp`` (profiles are not shared between runs)."""
    profile = tmp / f"profile-{len(list(tmp.glob('profile-*')))}"
    return subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args], capture_output=True,
                          timeout=180, check=False)


def screenshot(tmp: Path, url: str, name: str, size: str = "1400,1800") -> Image.Image:
    out = tmp / f"{name}.png"
    proc = chromium(tmp, f"--screenshot={out}", f"--window-size={size}", "--virtual-time-budget=5000", url)
    assert out.is_file(), proc.stderr.decode(errors="replace")[-2000:]
    return Image.open(out).convert("RGB")


def dump_dom(tmp: Path, url: str) -> str:
    proc = chromium(tmp, "--virtual-time-budget=5000", "--dump-dom", url)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-2000:]
    return proc.stdout.decode()


# ---------------------------------------------------------------------------------------------------------
# One browser driven over the DevTools protocol
# ---------------------------------------------------------------------------------------------------------


class Browser:
    """One headless chromium and its first page, driven over the DevTools protocol."""

    def __init__(self, tmp: Path, window: str = "1400,1600") -> None:
        from websockets.sync.client import connect

        self.tmp = tmp
        profile = tmp / "profile"
        flags = [*FLAGS, f"--window-size={window}", "--remote-debugging-port=0", "--remote-allow-origins=*"]
        self.proc = subprocess.Popen([CHROMIUM, *flags, f"--user-data-dir={profile}", "about:blank"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        port_file = profile / "DevToolsActivePort"
        t0 = time.monotonic()
        while not port_file.is_file() or not port_file.read_text().strip():
            assert self.proc.poll() is None, self.proc.stderr.read().decode(errors="replace")[-2000:]
            assert time.monotonic() - t0 < 180, "chromium did not open its DevTools port"
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
        stop(self.proc)


# ---------------------------------------------------------------------------------------------------------
# The `nphe4v view` server
# ---------------------------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, proc: subprocess.Popen, timeout: float = 120) -> None:
    """Until ``url`` answers with any HTTP status (the explorer computes its tables before it listens, so
    answering at all means ready); AssertionError when ``proc`` exits first or after ``timeout`` s."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if proc.poll() is not None:
            raise AssertionError(f"server exited: {proc.stderr.read().decode(errors='replace')[-3000:]}")
        try:
            urllib.request.urlopen(url, timeout=5).read()
            return
        except urllib.error.HTTPError:
            return
        except OSError:
            time.sleep(0.3)
    raise AssertionError(f"{url} did not answer in {timeout}s")


def stop(proc: subprocess.Popen, timeout: float = 20) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@contextlib.contextmanager
def view_server(runs: Sequence[Path], *args: str, cwd: Path | None = None, stdout: int | None = subprocess.PIPE,
                timeout: float = 120, probe: str = "/samples") -> Iterator[tuple[str, subprocess.Popen]]:
    """The real ``nphe4v view RUNS... ARGS`` on a free port, ready (``probe`` answered): (base URL, process);
    stopped on exit. A benchmark probes a path that does not exist, so that no page it times is warmed."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(PROJECT), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    server = subprocess.Popen([sys.executable, "-m", "nphe4v_cli", "view", *map(str, runs), "--port", str(port),
                               *args], cwd=cwd, env=env, stdout=stdout, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_http(base + probe, server, timeout=timeout)
        yield base, server
    finally:
        stop(server)
