"""`nphe4v view`: routes over real (graded, rule-judged) run folders, escaping of hostile text, the image
path check, read-only mode, human annotation and its way into Table 9 (`jobs/judge_rerun.py --human`)."""

from __future__ import annotations

import hashlib
import html
import json
import re
import sys
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlparse

import polars as pl
import pytest
from conftest import PROJECT
from explorer_runs import XSS, XSS_MODEL, build_explorer_runs
from fastapi.testclient import TestClient
from markupsafe import escape

from evalcore.records import KEY_COLUMNS
from report.explorer.app import TOKEN_HEADER, create_app
from report.explorer.store import Filters, Store
from report.interval_cache import CACHE_DIR

N_BOOT = 50


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> tuple[Path, Path]:
    return build_explorer_runs(tmp_path_factory.mktemp("explorer"))


@pytest.fixture(scope="module")
def client(runs) -> TestClient:
    return TestClient(create_app(list(runs), n_boot=N_BOOT))


def _all(run: Path) -> pl.DataFrame:
    return pl.read_parquet(sorted(run.glob("samples/*/*/*.parquet")))


def _links(text: str, path: str) -> list[str]:
    return [html.unescape(u) for u in re.findall(rf'href="({re.escape(path)}\?[^"]*)"', text)]


def _tree(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): p.stat().st_mtime_ns for p in root.rglob("*")}


def test_leaderboards_show_the_reports_numbers_with_intervals(client, runs) -> None:
    from nphe4v import report_tables as nt
    from report import analysis

    page = client.get("/")
    assert page.status_code == 200
    board = nt.leaderboard(analysis.frame_of(list(runs)), n_boot=N_BOOT)
    alpha = board.filter((pl.col("model") == "alpha") & (pl.col("prompt_mode") == "pooled")).row(0, named=True)
    beta = board.filter((pl.col("model") == "beta") & (pl.col("prompt_mode") == "pooled")).row(0, named=True)
    assert alpha["AA_All"] == 1.0 and beta["AA_All"] < 1.0
    row = re.search(r'<tr><td[^>]*>xv</td>\s*<td[^>]*><a href="/samples\?model=beta">beta</a></td>(.*?)</tr>', page.text, re.S)
    assert row, "beta's leaderboard row missing"
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row.group(1), re.S)
    aa_all = cells[6]
    assert f"{beta['AA_All']:.3f}" in aa_all
    assert f"[{beta['AA_All_lo']:.3f}, {beta['AA_All_hi']:.3f}]" in aa_all
    # GraphVerse as the papers' Table 1: a row per model, a column per task and All, VGR-S beside Acc (judged),
    # the count and Wilson interval in the cell's tooltip; sortable by its number
    gv = _all(runs[1]).filter(pl.col("model") == "beta")
    dia = gv.filter(pl.col("task") == "DIAM")
    n_dia, c_dia = dia.height, int((dia["verdict"] == "correct").sum())
    table = page.text.split('id="board-gv"')[1].split("</table>")[0]
    head = re.findall(r"<th[^>]*>(.*?)</th>", table.split("</thead>")[0])
    tasks = [h for h in head if h not in ("model", "Acc", "VGR")]
    assert tasks[-1] == "All" and "DIAM" in tasks and head.count("Acc") == head.count("VGR") == len(tasks)
    row = re.search(r'<tr><td data-v="beta"><a href="/samples\?model=beta">beta</a></td>(.*?)</tr>', table, re.S)
    assert row, "GraphVerse row of beta missing"
    cells = re.findall(r'<td class="num[^"]*" data-v="([^"]*)" title="([^"]*)">', row.group(1))
    assert len(cells) == 2 * len(tasks)
    acc_v, acc_title = cells[2 * tasks.index("DIAM")]
    assert f"{c_dia}/{n_dia} correct" in acc_title and abs(float(acc_v) - 100 * c_dia / n_dia) < 1e-6
    assert "VGR-S over" in cells[2 * tasks.index("DIAM") + 1][1]
    n_all, c_all = gv.height, int((gv["verdict"] == "correct").sum())
    assert f"{c_all}/{n_all} correct" in cells[-2][1]
    assert '<script src="/static/sort.js"></script>' in page.text
    assert "localeCompare" in client.get("/static/sort.js").text
    other = client.get("/?mode=full_text_only")
    assert other.status_code == 200 and "<b>full_text_only</b>" in other.text


def test_the_reports_figures_are_served(client) -> None:
    page = client.get("/figures")
    assert page.status_code == 200
    names = re.findall(r'<figure class="fig" id="fig-([a-z_]+)"><svg', page.text)
    # both benchmarks and a judge: every figure the report draws
    assert set(names) == {"radar", "heatmap_reasoning", "heatmap_recognition", "heatmap_accuracy",
                          "prompt_mode_ablation", "lvlm_vs_llm", "graphverse_edits", "graphverse_failure_modes"}, names
    svg = client.get("/figure/radar.svg")
    assert svg.status_code == 200 and svg.headers["content-type"].startswith("image/svg+xml")
    assert svg.text.lstrip().startswith("<svg")
    png = client.get("/figure/graphverse_edits.png")
    assert png.status_code == 200 and png.content[:8] == b"\x89PNG\r\n\x1a\n"
    assert client.get("/figure/radar.html").status_code == 404
    assert client.get("/figure/nothing.svg").status_code == 404


def test_hostile_text_is_escaped_everywhere(client, runs) -> None:
    pages = [client.get(u) for u in ("/", "/figures", "/samples", "/samples?" + urlencode({"model": XSS_MODEL}),
                                     "/compare?" + urlencode({"model": "alpha", "model_b": XSS_MODEL}))]
    bad = client.get("/samples?" + urlencode({"model": XSS_MODEL, "outcome": "wrong"}))
    links = _links(bad.text, "/sample")
    assert links, "the hostile model's wrong samples are listed"
    pages.append(client.get(links[0]))
    beta_wrong = _links(client.get("/samples?" + urlencode({"model": "beta", "outcome": "wrong"})).text, "/sample")
    pages.append(client.get(beta_wrong[0]))
    for p in pages:
        assert p.status_code == 200, p.text[:300]
        assert "<script>alert" not in p.text and "<img src=x" not in p.text
    assert str(escape(XSS_MODEL)) in pages[2].text
    assert str(escape(XSS)) in pages[-1].text, "the hostile response is shown, as text"


def test_drill_down_counts_match_an_independent_count(client, runs) -> None:
    df = pl.concat([_all(r) for r in runs])
    for q in ({"model": "beta", "benchmark": "nphardeval4v", "outcome": "wrong"},
              {"model": "alpha", "task": "SPP", "level": "2", "prompt_mode": "full_text_only"},
              {"benchmark": "graphverse", "variant": "none", "model": "beta"}):
        page = client.get("/samples?" + urlencode(q))
        assert page.status_code == 200
        want = df
        for k, v in q.items():
            col = {"outcome": "verdict"}.get(k, k)
            want = want.filter(pl.col(col).cast(pl.String) == v)
        assert f"{want.height:,} matching" in page.text, q
        shown = page.text.count('class="sample-link"')
        assert shown == want.height
        # every link to a sample keeps naming a sample that matches the filters
        for link in _links(page.text, "/sample")[:3]:
            params = parse_qs(urlparse(link).query)
            for k, v in q.items():
                if k in params:
                    assert params[k] == [v]
    sel = client.get("/samples?" + urlencode({"model": "beta", "task": "BSP"}))
    assert re.search(r'<option value="beta" selected>', sel.text), "the URL's filter is the form's state"


def test_paging_links_keep_the_filters(runs) -> None:
    from report.explorer import store as store_mod

    old = store_mod.PAGE_SIZE
    store_mod.PAGE_SIZE = 5
    try:
        s = Store(list(runs), n_boot=N_BOOT)
        f = Filters(model="alpha")
        first, total = s.samples_page(f)
        second, _ = s.samples_page(Filters(model="alpha", page=1))
        assert first.height == 5 and total > 5
        keys = lambda d: {tuple(r) for r in d.select("run", *KEY_COLUMNS).rows()}  # noqa: E731
        assert not keys(first) & keys(second)
        assert f.query(page=1) == {"model": "alpha", "page": "1"}
    finally:
        store_mod.PAGE_SIZE = old


def test_compare_two_models_matches_a_join(client, runs) -> None:
    page = client.get("/compare?" + urlencode({"model": "alpha", "model_b": "beta"}))
    assert page.status_code == 200
    df = pl.concat([_all(r) for r in runs]).with_columns(ok=pl.col("verdict") == "correct")
    on = ["benchmark", "instance_id", "variant", "prompt_mode", "repeat"]
    j = df.filter(pl.col("model") == "alpha").join(df.filter(pl.col("model") == "beta"), on=on, suffix="_b")
    both = j.filter(pl.col("ok") & pl.col("ok_b")).height
    a_only = j.filter(pl.col("ok") & ~pl.col("ok_b")).height
    assert a_only > 0 and both > 0
    cells = re.findall(r'<td class="num">(\d+)</td>', page.text.split('id="summary"')[1].split("</table>")[0])
    assert [int(c) for c in cells] == [both, a_only, 0, 0]
    assert f"{j.height:,} matching" in page.text
    a, b = _links(page.text, "/sample")[:2]
    assert parse_qs(urlparse(a).query)["model"] == ["alpha"] and parse_qs(urlparse(b).query)["model"] == ["beta"]
    # rows where the two differ come first
    assert page.text.index('class="differ"') < page.text.index("<tr><td>graphverse")


def test_sample_page_shows_what_was_sent_and_the_judges_steps(client, runs) -> None:
    from evalcore.dataset import load_dataset

    gv = _all(runs[1]).filter((pl.col("model") == "beta") & (pl.col("verdict") == "wrong")).row(0, named=True)
    run_label = json.loads((runs[1] / "manifest.json").read_text())["run_id"]
    page = client.get("/sample?" + urlencode({"run": run_label, **{c: gv[c] for c in KEY_COLUMNS}}))
    assert page.status_code == 200
    prompt = html.unescape(re.search(r'<pre id="prompt">(.*?)</pre>', page.text, re.S).group(1))
    assert hashlib.sha256(prompt.encode()).hexdigest() == gv["prompt_sha256"], "the prompt exactly as sent"
    imgs = [html.unescape(u) for u in re.findall(r'<img class="sent" src="([^"]+)"', page.text)]
    assert imgs
    ds = load_dataset(json.loads((runs[1] / "manifest.json").read_text())["datasets"][0]["path"])
    inst = ds.by_id()[gv["instance_id"]]
    for u, ref in zip(imgs, inst.images, strict=True):
        r = client.get(u)
        assert r.status_code == 200 and r.headers["content-type"] == "image/png"
        assert hashlib.sha256(r.content).hexdigest() == ref.sha256
    assert 'id="evidence"' in page.text and "Graph edges" in page.text
    assert "rule-based" in page.text and 'class="vgr"' in page.text
    assert 'id="gold"' in page.text and 'id="reason"' in page.text and 'id="parsed"' in page.text


def test_sample_page_says_whether_the_stated_value_agrees_with_the_witness(client, runs) -> None:
    """GraphVerse grades the witness (a tour, a path, a set); the value the answer states beside it is shown as
    agreeing or not, as in the report's sample browser, and nothing is shown where no value was compared."""
    run_label = json.loads((runs[1] / "manifest.json").read_text())["run_id"]
    rows = _all(runs[1]).filter(pl.col("benchmark") == "graphverse")
    seen = set()
    for value in (True, False, None):
        pick = rows.filter(pl.col("value_consistent").is_null() if value is None
                           else pl.col("value_consistent") == value)
        if pick.is_empty():
            continue
        row = pick.row(0, named=True)
        page = client.get("/sample?" + urlencode({"run": run_label, **{c: row[c] for c in KEY_COLUMNS}}))
        assert page.status_code == 200
        shown = re.search(r'<td id="value-consistent"[^>]*>(.*?)</td>', page.text, re.S)
        if value is None:
            assert shown is None
        else:
            assert shown and ("disagrees" in shown.group(1)) == (not value), shown
        seen.add(value)
    assert {True, False} <= seen, f"the runs hold no agreeing and disagreeing stated values: {seen}"


@pytest.mark.parametrize(("path", "code"), [("../manifest.json", 400), ("../../../../../../etc/passwd", 400),
                                            ("/etc/passwd", 400), ("instances.parquet", 415),
                                            ("images/../manifest.json", 400), ("images/NOPE/x.png", 404)])
def test_image_route_stays_inside_the_dataset(client, runs, path, code) -> None:
    run_label = json.loads((runs[1] / "manifest.json").read_text())["run_id"]
    r = client.get("/image?" + urlencode({"run": run_label, "benchmark": "graphverse",
                                          "version": "graphverse-testmini", "path": path}))
    assert r.status_code == code, r.text


def test_bad_requests_are_one_line(client) -> None:
    r = client.get("/sample?run=nope&model=a&benchmark=b&instance_id=c&variant=&prompt_mode=m&repeat=0")
    assert r.status_code == 404 and "not one of the runs" in r.text
    r = client.get("/sample?run=x&model=a")
    assert r.status_code == 400 and "missing query parameter(s): benchmark" in r.text
    assert client.get("/samples?page=-1").status_code == 400
    assert client.get("/samples?level=notanumber").status_code == 200


def test_read_only_by_default(runs) -> None:
    # the one file the explorer may write is the bootstrap bounds' cache in the first run's cache/ folder
    def tree(r: Path) -> dict[str, int]:
        return {k: v for k, v in _tree(r).items() if not k.startswith("cache")}

    before = [tree(r) for r in runs]
    c = TestClient(create_app(list(runs), n_boot=N_BOOT))
    for u in ("/", "/samples", "/compare?model=alpha&model_b=beta"):
        assert c.get(u).status_code == 200
    assert c.get("/annotate").status_code == 404
    assert c.post("/api/annotations", json={}, headers={"Origin": "http://testserver"}).status_code in (404, 405)
    assert [tree(r) for r in runs] == before
    cached = [p.name for r in runs for p in (r / "cache").glob("*")] if (runs[0] / "cache").is_dir() else []
    assert all(n.startswith("leaderboard-intervals-") and n.endswith(".parquet") for n in cached), cached


def test_annotate_store_resume_and_table_9(runs) -> None:
    from judge.schema import CREDIT_CAP

    gv_run = runs[1]
    app = create_app(list(runs), annotate=True, n_boot=N_BOOT)
    c = TestClient(app, headers={"Origin": "http://testserver"})  # as the page's fetch sends it
    page = c.get("/annotate?annotator=ann1&task=DIAM")
    n = _all(gv_run).filter((pl.col("task") == "DIAM") & (pl.col("status") == "ok")).height
    assert f"0 of {n} responses" in page.text
    key = json.loads(html.unescape(re.search(r'id="sample-key">(.*?)</script>', page.text, re.S).group(1)))
    steps = [{"claim": "BAB--JAV", "kind": "reading", "relevant": True, "correct": True},
             {"claim": "the diameter is 2", "kind": "inference", "relevant": True, "correct": True},
             {"claim": "the diameter is 2.", "kind": "inference", "relevant": True, "correct": True},
             {"claim": "COS--BAB", "kind": "reading", "relevant": True, "correct": False,
              "error_type": "perception"}]
    body = {"annotator": "ann1", **key, "steps": steps}
    assert c.post("/api/annotations", json=body).status_code == 403, "a post without the page's token"
    hdr = {TOKEN_HEADER: app.state.token}
    bad = c.post("/api/annotations", json={**body, "steps": [{"claim": "x"}]}, headers=hdr)
    assert bad.status_code == 400 and "correct" in bad.json()["error"]
    r = c.post("/api/annotations", json=body, headers=hdr)
    assert r.status_code == 200, r.text
    sample = _all(gv_run).filter(*[pl.col(k) == v for k, v in key["key"].items()]).row(0, named=True)
    f = 1 if sample["verdict"] == "correct" else 0
    # by hand: one credited inference (the repeat and the reading earn nothing), one error
    assert r.json()["human_vgr"] == pytest.approx(100 * (min(1, CREDIT_CAP) + f) / (1 + 1 + 1))
    files = sorted((gv_run / "annotations").glob("*.parquet"))
    assert len(files) == 1 and files[0].name.startswith("ann1-")
    rows = pl.read_parquet(files[0])
    assert rows.height == 1 and rows["annotator"][0] == "ann1" and rows["annotated_at"][0].startswith("20")
    assert rows["n_steps"][0] == 3 and rows["instance_id"][0] == key["key"]["instance_id"]
    again = c.get("/annotate?annotator=ann1&task=DIAM")
    assert f"1 of {n} responses" in again.text
    nxt = json.loads(html.unescape(re.search(r'id="sample-key">(.*?)</script>', again.text, re.S).group(1)))
    assert nxt != key, "resume moves on to the next response"
    # a restarted server resumes from the files
    c2 = TestClient(create_app(list(runs), annotate=True, n_boot=N_BOOT))
    assert f"1 of {n} responses" in c2.get("/annotate?annotator=ann1&task=DIAM").text
    assert f"0 of {n} responses" in c2.get("/annotate?annotator=ann2&task=DIAM").text
    # Table 9 from the annotations
    sys.path.insert(0, str(PROJECT / "jobs"))
    import judge_rerun

    assert judge_rerun.main(["--run", str(gv_run), "--local", "--no-progress", "--human", str(gv_run)]) == 0
    t9 = pl.read_csv(gv_run / "human_agreement.csv")
    row = t9.filter((pl.col("task") == "DIAM") & (pl.col("model") == key["key"]["model"])).row(0, named=True)
    assert row["n"] == 1 and row["human"] == pytest.approx(r.json()["human_vgr"])
    assert row["diff"] == pytest.approx(row["human"] - row["judge"])


def test_judge_rerun_human_folder_without_annotations_is_one_line(runs, capsys) -> None:
    sys.path.insert(0, str(PROJECT / "jobs"))
    import judge_rerun

    assert judge_rerun.cli(["--run", str(runs[1]), "--local", "--no-progress", "--human", str(runs[0])]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no annotations" in err[0]


def test_cli_view_refuses_a_folder_that_is_no_run(tmp_path) -> None:
    from typer.testing import CliRunner

    from nphe4v_cli.app import app

    res = CliRunner().invoke(app, ["view", str(tmp_path)])
    assert res.exit_code == 2 and "not a run folder" in res.output
    res = CliRunner().invoke(app, ["view", str(tmp_path), "--port", "0"])
    assert res.exit_code == 2 and "--port 0" in res.output


def test_annotation_queue_samples_each_task_and_model_evenly() -> None:
    from report.explorer.annotations import PAPER_PER_CELL, queue_order

    rows = pl.DataFrame([{"run": "r", "model": m, "benchmark": "graphverse", "instance_id": f"{t}-{i}",
                          "variant": "none", "prompt_mode": "vision", "repeat": 0, "task": t}
                         for m in ("m1", "m2") for t in ("SD", "GED") for i in range(40)])
    q = queue_order(rows, seed=3)
    assert q.height == 4 * PAPER_PER_CELL
    assert q.group_by("task", "model").len()["len"].to_list() == [PAPER_PER_CELL] * 4
    # round-robin: the first four cover every (task, model) cell
    assert q.head(4).select("task", "model").unique().height == 4
    assert q.equals(queue_order(rows.reverse(), seed=3)), "the order depends on the seed only"
    assert not q.equals(queue_order(rows, seed=4))
    assert queue_order(rows, seed=3, per_cell=0).height == rows.height


def test_other_host_names_and_bad_parameters_are_refused(runs) -> None:
    c = TestClient(create_app(list(runs), n_boot=N_BOOT, annotate=True, allowed_hosts=["127.0.0.1"]),
                   base_url="http://127.0.0.1")
    assert c.get("/samples").status_code == 200
    # a page of another site whose name was rebound to 127.0.0.1 sends its own name as Host
    assert c.get("/samples", headers={"host": "evil.example"}).status_code == 400
    r = c.get("/annotate?annotator=a&per_cell=many")
    assert r.status_code == 400 and "per_cell" in r.text and "Traceback" not in r.text


def test_a_damaged_annotation_file_is_one_line(runs, tmp_path) -> None:
    import shutil

    run = tmp_path / "run"
    shutil.copytree(runs[1], run)
    (run / "annotations").mkdir(exist_ok=True)
    (run / "annotations" / "x-broken.parquet").write_bytes(b"not parquet")
    c = TestClient(create_app([run], n_boot=N_BOOT, annotate=True), raise_server_exceptions=False)
    r = c.get("/annotate?annotator=a")
    assert r.status_code == 500 and "unreadable annotation file" in r.text and "Traceback" not in r.text


def test_nphe4v_view_serves_on_loopback_only(runs) -> None:
    import os
    import socket
    import subprocess
    import time
    import urllib.error
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": str(PROJECT)}
    proc = subprocess.Popen([sys.executable, "-m", "nphe4v_cli", "view", *map(str, runs), "--port", str(port),
                             "--n-boot", "20"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        t0 = time.monotonic()
        while True:
            assert proc.poll() is None, proc.stderr.read().decode(errors="replace")[-2000:]
            assert time.monotonic() - t0 < 120, "nphe4v view did not answer"
            try:
                body = urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10).read().decode()
                break
            except OSError:
                time.sleep(0.3)
        assert 'id="board-nph"' in body and "alpha" in body
        req = urllib.request.Request(f"http://127.0.0.1:{port}/", headers={"Host": "evil.example"})
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(req, timeout=10)
        assert e.value.code == 400
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/annotate", timeout=10)
        assert e.value.code == 404, "read-only unless --annotate"
        listening = [line for line in open("/proc/net/tcp").read().splitlines()[1:]
                     if line.split()[1].endswith(f":{port:04X}") and line.split()[3] == "0A"]
        assert listening and all(line.split()[1].startswith("0100007F:") for line in listening), \
            "bound to 127.0.0.1 only"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_a_page_rendered_while_the_bounds_finish_is_not_kept(runs, tmp_path, monkeypatch) -> None:
    """The bootstrap bounds finish between the moment the page reads the boards (still without bounds) and the
    moment it decides whether to keep the page: that page must not be kept, and the next request shows the
    bounds. Events, not timing: the bootstrap thread waits for `go`, and the hook around `boards()` opens it
    and joins the thread right after the page has read the boards."""
    import shutil
    import threading

    copies = []
    for r in runs:  # fresh folders without the interval cache file another test may have left in `runs`: the
        copies.append(tmp_path / r.name)  # copies keep the shards' mtimes, so that file's key would still match
        shutil.copytree(r, copies[-1], ignore=shutil.ignore_patterns(CACHE_DIR))
    go = threading.Event()
    compute = Store._compute_intervals

    def gated(self):
        assert go.wait(120), "the test never opened the gate"
        return compute(self)

    monkeypatch.setattr(Store, "_compute_intervals", gated)
    app = create_app(copies, n_boot=N_BOOT, warm=True)  # the CLI's way: bounds computed in the background
    store = app.state.store
    assert not store.intervals_ready()
    plain_boards = store.boards
    hooked = []

    def boards_then_finish():
        out = plain_boards()  # what the page renders from: no bounds yet
        if not hooked:
            hooked.append(True)
            go.set()
            store._iv_thread.join(120)  # the bounds are now computed and kept, mid-render
            assert store.intervals_ready()
        return out

    monkeypatch.setattr(store, "boards", boards_then_finish)
    client = TestClient(app)
    first = client.get("/")
    assert first.status_code == 200 and hooked
    second = client.get("/")
    assert "being computed" not in second.text
    row = re.search(r'<tr><td[^>]*>xv</td>\s*<td[^>]*><a href="/samples\?model=beta">beta</a></td>(.*?)</tr>', second.text,
                    re.S)
    assert row, "beta's leaderboard row missing"
    aa_all = re.findall(r"<td[^>]*>(.*?)</td>", row.group(1), re.S)[6]
    iv = store.intervals().filter((pl.col("model") == "beta") & (pl.col("prompt_mode") == "pooled")).row(0, named=True)
    assert f"[{iv['AA_All_lo']:.3f}, {iv['AA_All_hi']:.3f}]" in aa_all, \
        f"a page rendered while the bounds were pending was kept: AA_All cell {aa_all!r}"


@pytest.mark.parametrize("damage", ["empty", "cut", "garbled pages", "manifest not utf-8", "manifest a list"])
def test_cli_view_of_a_damaged_run_is_one_line(runs, tmp_path, damage) -> None:
    """`nphe4v view` on a damaged run folder: one line naming the file, exit 2 (as `report`), no traceback."""
    import shutil

    from typer.testing import CliRunner

    from nphe4v_cli.app import app

    run = tmp_path / "run"
    shutil.copytree(runs[0], run)
    shard = sorted(run.glob("samples/*/*/*.parquet"))[0]
    bad = shard
    if damage == "empty":
        bad = shard.with_name("part-0.parquet")
        bad.write_bytes(b"")
    elif damage == "cut":
        shard.write_bytes(shard.read_bytes()[: shard.stat().st_size // 2])
    elif damage == "garbled pages":  # the footer reads; the data pages do not
        data = bytearray(shard.read_bytes())
        data[8:len(data) // 2] = bytes(len(data) // 2 - 8)
        shard.write_bytes(bytes(data))
    else:
        bad = run / "manifest.json"
        bad.write_bytes(b"\xff\xfe{" if damage == "manifest not utf-8" else b"[1, 2]")
    res = CliRunner().invoke(app, ["view", str(run), "--port", "8799"])
    lines = [ln for ln in res.output.splitlines() if ln.startswith("error:")]
    assert res.exit_code == 2 and len(lines) == 1, res.output
    assert lines[0].startswith(f"error: {bad}: unreadable"), lines[0]
    assert "Traceback" not in res.output


def test_papers_view_rows_link_pot_arms_to_their_samples() -> None:
    from report.html.tables import papers_view

    acc = pl.DataFrame({"model": ["m", "m", "m (pot)"], "task": ["SD", "DIAM", "SD"], "n": [4, 2, 3],
                        "correct": [1, 2, 3], "acc": [25.0, 100.0, 100.0], "ci_low": [5.0, 34.0, 44.0],
                        "ci_high": [70.0, 100.0, 100.0]})
    v = papers_view(acc)
    assert v["tasks"] == ["SD", "DIAM", "All"] and not v["paired"]
    m, pot = v["rows"]
    assert (m["base"], m["mode"], pot["base"], pot["mode"]) == ("m", "", "m", "pot")
    # All pools the model's samples (3 of 6), a missing task is "—" and sorts last
    assert m["cells"][2]["text"] == "50.0" and "3/6 correct" in m["cells"][2]["title"]
    assert pot["cells"][1]["text"] == "—" and pot["cells"][1]["sort"] == ""
