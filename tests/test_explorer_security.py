"""`nphe4v view` hardening over HTTP: security headers on every response (errors and refusals included), only
raster images (by their bytes) from data folders, POST only with the token from the explorer's own origin,
capped bodies (refused before they are read), and 4xx, never 500, for malformed paths and bodies.

The browser half (a hostile SVG, a foreign framing page) is in tests/test_explorer_browser.py."""

from __future__ import annotations

import io
import json
import re
import select
import shutil
import socket
import threading
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlencode

import polars as pl
import pytest
from explorer_runs import HOSTILE_HTML, HOSTILE_SVG, build_explorer_runs, image_url
from fastapi.testclient import TestClient
from PIL import Image

from report.explorer.app import TOKEN_HEADER, create_app
from report.explorer.security import MAX_BODY

N_BOOT = 20
ORIGIN = "http://testserver"  # TestClient's own origin
def hostile_files(ds_root: Path) -> dict[str, int]:
    """Files written into a dataset folder, each with the status the image route must give it."""
    img = Image.new("RGB", (8, 8), (200, 30, 30))
    out = {}
    for name, fmt in (("ok.jpg", "JPEG"), ("ok.webp", "WEBP"), ("ok.png", "PNG"), ("anim.gif", "GIF")):
        buf = io.BytesIO()
        img.save(buf, fmt)
        (ds_root / name).write_bytes(buf.getvalue())
        out[name] = 415 if fmt == "GIF" else 200
    for name, data in (("evil.svg", HOSTILE_SVG), ("evil-svg.png", HOSTILE_SVG), ("evil.html", HOSTILE_HTML),
                       ("evil-html.jpg", HOSTILE_HTML), ("evil-html.webp", b"RIFF\0\0\0\0" + HOSTILE_HTML),
                       ("png-header.svg", b"\x89PNG\r\n\x1a\n" + HOSTILE_SVG)):
        (ds_root / name).write_bytes(data)
        out[name] = 415
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> tuple[Path, Path]:
    return build_explorer_runs(tmp_path_factory.mktemp("explorer-security"))


@pytest.fixture(scope="module")
def gv(runs) -> tuple[str, Path]:
    """(run label, dataset folder) of the GraphVerse run."""
    manifest = json.loads((runs[1] / "manifest.json").read_text())
    return manifest["run_id"], Path(manifest["datasets"][0]["path"])


@pytest.fixture(scope="module")
def app(runs):
    return create_app(list(runs), annotate=True, n_boot=N_BOOT, allowed_hosts=["testserver"])


@pytest.fixture(scope="module")
def client(app) -> TestClient:
    # raise_server_exceptions: any crash (a would-be 500) fails the test with its traceback
    return TestClient(app)


def _annotation(client: TestClient) -> dict:
    page = client.get("/annotate?annotator=sec1&task=*")
    key = json.loads(re.search(r'id="sample-key">(.*?)</script>', page.text, re.S).group(1).replace("&#34;", '"'))
    return {"annotator": "sec1", **key, "steps": [{"claim": "the answer is 3", "kind": "inference",
                                                   "relevant": True, "correct": True}]}


class _Tags(HTMLParser):
    """The markup a page's CSP would have to allow inline: scripts that are neither a file nor JSON data,
    event-handler and style attributes, <style> and <meta http-equiv> elements (text is not markup: the
    hostile model name's escaped `onerror=` is not counted)."""

    def __init__(self) -> None:
        super().__init__()
        self.inline: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "script" and not (a.get("src", "") or "").startswith("/static/") \
                and a.get("type") != "application/json":
            self.inline.append(f"<script {a}>")
        if tag in ("style",) or (tag == "meta" and "http-equiv" in a):
            self.inline.append(f"<{tag}>")
        self.inline += [f"<{tag} {k}=>" for k in a if k.startswith("on") or k == "style"]


def _assert_hardened(r) -> None:
    h = r.headers
    csp = h.get("content-security-policy", "")
    directives = {d.split()[0]: d.split()[1:] for d in csp.split(";") if d.strip()}
    assert directives.get("script-src") == ["'self'"], csp
    assert "'unsafe-inline'" not in csp and "'unsafe-eval'" not in csp
    assert directives.get("frame-ancestors") == ["'none'"] and directives.get("default-src") == ["'none'"]
    assert h.get("x-frame-options") == "DENY" and h.get("x-content-type-options") == "nosniff"
    assert h.get("referrer-policy") == "same-origin"


def test_every_response_carries_the_headers_and_pages_have_no_inline_script(client, app, gv, runs, tmp_path) -> None:
    run_label, ds_root = gv
    tok = {TOKEN_HEADER: app.state.token}
    body = _annotation(client)
    responses = {
        "index": client.get("/"), "samples": client.get("/samples"), "compare": client.get("/compare"),
        "annotate": client.get("/annotate?annotator=sec1&task=*"), "js": client.get("/static/annotate.js"),
        "css": client.get("/static/explorer.css"), "no static": client.get("/static/../app.py"),
        "404": client.get("/nope"), "400": client.get("/samples?page=-1"),
        "image": client.get(image_url(run_label, str(next(ds_root.rglob("*.png")).relative_to(ds_root)))),
        "bad host": client.get("/", headers={"host": "evil.example"}),
        "foreign post": client.post("/api/annotations", json=body, headers={**tok, "Origin": "http://evil.example"}),
        "big post": client.post("/api/annotations", content=b"x" * (MAX_BODY + 1),
                                headers={**tok, "Origin": ORIGIN, "Content-Type": "application/json"}),
        "405": client.put("/", headers={"Origin": ORIGIN}),
    }
    assert responses["bad host"].status_code == 400 and responses["foreign post"].status_code == 403
    assert responses["big post"].status_code == 413 and responses["no static"].status_code == 404
    # a handled server error (a damaged annotation file) carries them too
    broken = tmp_path / "run"
    shutil.copytree(runs[1], broken)
    (broken / "annotations").mkdir(exist_ok=True)
    (broken / "annotations" / "x-broken.parquet").write_bytes(b"not parquet")
    c500 = TestClient(create_app([broken], n_boot=N_BOOT, annotate=True), raise_server_exceptions=False)
    responses["500"] = c500.get("/annotate?annotator=a")
    assert responses["500"].status_code == 500
    for name, r in responses.items():
        try:
            _assert_hardened(r)
        except AssertionError as e:
            raise AssertionError(f"{name}: {r.status_code} {dict(r.headers)}") from e
    assert responses["js"].headers["content-type"].startswith("text/javascript")
    assert responses["css"].headers["content-type"].startswith("text/css")
    for name in ("index", "samples", "compare", "annotate"):
        tags = _Tags()
        tags.feed(responses[name].text)
        assert not tags.inline, f"{name}: {tags.inline} (the CSP would block it: script-src and style-src are 'self')"
    assert '<script src="/static/annotate.js">' in responses["annotate"].text


def test_only_raster_images_by_their_bytes(client, gv) -> None:
    run_label, ds_root = gv
    expected = hostile_files(ds_root)
    types = {".jpg": "image/jpeg", ".webp": "image/webp", ".png": "image/png"}
    for name, code in expected.items():
        r = client.get(image_url(run_label, name))
        assert r.status_code == code, (name, r.status_code, r.text)
        if code == 200:
            assert r.headers["content-type"] == types[Path(name).suffix]
            assert r.content == (ds_root / name).read_bytes()
        else:
            assert b"<svg" not in r.content and b"<script" not in r.content
            assert r.headers["content-type"].startswith("text/html") and "not served" in r.text
    # every image of the dataset itself (the ones samples were sent) still loads, as PNG
    sent = [p for p in ds_root.rglob("*.png") if p.name not in expected][:20]
    assert sent
    for p in sent:
        r = client.get(image_url(run_label, str(p.relative_to(ds_root))))
        assert r.status_code == 200 and r.headers["content-type"] == "image/png"


@pytest.mark.parametrize(("path", "code"), [
    ("images/\x00.png", 400), ("a.png\x00.svg", 400), ("\x00", 400), ("images/\n.png", 400),
    ("..", 400), ("../" * 40 + "etc/passwd", 400), ("/etc/passwd", 400), ("//etc/passwd", 400),
    ("images\\..\\..\\manifest.json", 400), ("x" * 5000 + ".png", 400), ("", 400), ("   ", 400),
    ("%2e%2e/manifest.json", 404), ("images/%00.png", 404), ("\ufffd\ufffd/x.png", 404),
    ("a/" * 400 + "x.png", 404), ("images/" + "y" * 300 + ".png", 404), ("\udcff.png", 404),
])
def test_malformed_image_paths_are_4xx(client, gv, path, code) -> None:
    run_label, _ = gv
    q = urlencode({"run": run_label, "benchmark": "graphverse", "version": "graphverse-testmini",
                   "path": path}, errors="surrogatepass")
    r = client.get("/image?" + q)
    assert r.status_code == code, (path[:40], r.status_code, r.text)


@pytest.mark.parametrize("url", [
    "/image?run=%00&benchmark=%00&version=%00&path=a.png", "/image?run=a", "/image?path=%ff%fe",
    "/image?run=%c0%ae%c0%ae&benchmark=graphverse&version=v&path=%c0%ae%c0%ae/x.png",
    "/sample?run=%00&model=%00&benchmark=%00&instance_id=%00&variant=%00&prompt_mode=%00&repeat=%00",
    "/sample?run=%00&model=a&benchmark=b&instance_id=c&variant=&prompt_mode=m&repeat=99999999999999999999999",
    "/samples?model=%00&task=%ff&level=%00&page=%00", "/samples?page=99999999999999999999999999",
    "/compare?model=%00&model_b=%ff", "/?mode=%00", "/annotate?annotator=%00&task=%00",
    "/annotate?annotator=a&per_cell=-99999999999999999999", "/static/%00", "/static/..%2fapp.py",
    "/%00", "/..%2f..%2fetc/passwd",
])
def test_malformed_query_strings_are_never_500(client, url) -> None:
    r = client.get(url)
    assert r.status_code < 500, (url, r.status_code, r.text)


def test_post_needs_the_token_and_the_explorers_own_origin(client, app, gv, runs) -> None:
    body = _annotation(client)
    tok = {TOKEN_HEADER: app.state.token}
    refused = {
        "no token": {"Origin": ORIGIN},
        "wrong token": {TOKEN_HEADER: "x" * 32, "Origin": ORIGIN},
        "non-ASCII token": {TOKEN_HEADER: b"\xff" * 4, "Origin": ORIGIN},
        "foreign origin": {**tok, "Origin": "http://evil.example"},
        "other port": {**tok, "Origin": "http://testserver:8080"},
        "other scheme": {**tok, "Origin": "https://testserver"},
        "opaque origin": {**tok, "Origin": "null"},
        "no origin": tok,
        "cross-site fetch": {**tok, "Origin": ORIGIN, "Sec-Fetch-Site": "cross-site"},
        "same-site fetch": {**tok, "Origin": ORIGIN, "Sec-Fetch-Site": "same-site"},
    }
    before = sorted((runs[1] / "annotations").glob("sec1-*.parquet")) if (runs[1] / "annotations").is_dir() else []
    for why, headers in refused.items():
        r = client.post("/api/annotations", json=body, headers=headers)
        assert r.status_code == 403, (why, r.status_code, r.text)
    after = sorted((runs[1] / "annotations").glob("sec1-*.parquet")) if (runs[1] / "annotations").is_dir() else []
    assert after == before, "a refused post wrote nothing"
    ok = client.post("/api/annotations", json=body, headers={**tok, "Origin": ORIGIN, "Sec-Fetch-Site": "same-origin"})
    assert ok.status_code == 200, ok.text
    stored = pl.read_parquet(ok.json()["stored"])
    assert stored.filter(pl.col("instance_id") == body["key"]["instance_id"]).height == 1


@pytest.mark.parametrize(("content", "ctype", "code"), [
    (b"{not json", "application/json", 400), (b"\xff\xfe\x00", "application/json", 400),
    (b"[" * 100_000 + b"]" * 100_000, "application/json", 400), (b'{"a":' * 50_000 + b"1" + b"}" * 50_000,
                                                                 "application/json", 400),
    (b"[]", "application/json", 400), (b"null", "application/json", 400), (b"1e999999", "application/json", 400),
    (b'"\\ud800"', "application/json", 400), (b"", "application/json", 400),
    (b'{"annotator": "a"}', "text/plain", 415), (b'{"annotator": "a"}', "", 415),
    (b"x" * (MAX_BODY + 1), "application/json", 413),
])
def test_malformed_bodies_are_4xx(client, app, content, ctype, code) -> None:
    headers = {TOKEN_HEADER: app.state.token, "Origin": ORIGIN}
    if ctype:
        headers["Content-Type"] = ctype
    r = client.post("/api/annotations", content=content, headers=headers)
    assert r.status_code == code, (content[:30], r.status_code, r.text)
    assert len(r.text) < 1000 and "Traceback" not in r.text


def test_deeply_nested_values_inside_a_valid_submission_are_400(client, app) -> None:
    body = _annotation(client)
    deep: object = "x"
    for _ in range(200):  # 400 levels: within what the client's encoder and the server's parser accept
        deep = {"k": [deep]}
    body["key"] = {**body["key"], "extra": deep}
    r = client.post("/api/annotations", json=body, headers={TOKEN_HEADER: app.state.token, "Origin": ORIGIN})
    assert r.status_code == 400 and "nested" in r.text


@pytest.fixture(scope="module")
def live(app):
    """The app on a real uvicorn server in this process: (host, port); ready once it listens."""
    import uvicorn

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error", lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:  # uvicorn's own flag, set once it listens
        assert thread.is_alive(), "uvicorn exited before it listened"
        thread.join(timeout=0.05)
    yield "127.0.0.1", port
    server.should_exit = True
    thread.join(timeout=20)


def _raw(addr: tuple[str, int], head: str, chunks: list[bytes] = ()) -> tuple[int, int]:
    """Send a raw request; (status, bytes of body the server let us send before answering)."""
    with socket.create_connection(addr, timeout=30) as s:
        s.sendall(head.encode("latin-1"))
        sent = 0
        for c in chunks:
            if select.select([s], [], [], 0)[0]:  # the server has answered: stop sending
                break
            try:
                s.sendall(c)
            except OSError:  # the server closed the connection: it stopped reading
                break
            sent += len(c)
        data = b""
        while b"\r\n" not in data:
            part = s.recv(4096)
            if not part:
                break
            data += part
    return int(data.split(b" ", 2)[1]), sent


def test_huge_bodies_are_refused_before_they_are_read(live, app) -> None:
    host, port = live
    tok = app.state.token
    base = (f"POST /api/annotations HTTP/1.1\r\nHost: testserver\r\nOrigin: {ORIGIN}\r\n"
            f"{TOKEN_HEADER}: {tok}\r\nContent-Type: application/json\r\n")
    # 200 MB announced, nothing sent: the answer comes from the header alone
    status, _ = _raw((host, port), base + "Content-Length: 200000000\r\n\r\n")
    assert status == 413
    # chunked, no length: refused once the streamed bytes pass the cap, long before 200 MB
    chunk = b"%x\r\n%s\r\n" % (64 * 1024, b" " * 64 * 1024)
    status, sent = _raw((host, port), base + "Transfer-Encoding: chunked\r\n\r\n", [chunk] * 3200)
    assert status == 413 and sent < 200_000_000
    status, _ = _raw((host, port), base + "Content-Length: 12abc\r\n\r\n")
    assert 400 <= status < 500
    # the server still answers normally afterwards
    status, _ = _raw((host, port), "GET /samples HTTP/1.1\r\nHost: testserver\r\nConnection: close\r\n\r\n")
    assert status == 200

