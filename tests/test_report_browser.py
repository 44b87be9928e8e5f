"""The HTML report in a real browser (headless Debian chromium): figures render, the sample browser's filter
applies from the URL fragment, opening a sample fills in its prompt and image, hostile text stays text.

Skipped when chromium is not installed (Debian: `apt-get install -y chromium`).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from cdp_browser import CHROMIUM, SKIP_REASON, dump_dom, screenshot
from PIL import ImageStat
from test_report import XSS, build_runs

from report.html_report import build_report

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason=SKIP_REASON)


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("browser")
    runs = build_runs(root)
    res = build_report(list(runs), root / "out" / "report.html", n_boot=50, samples_per_group=3)
    return res.html, root


def sample_rows(dom: str) -> list[tuple[dict[str, str], bool]]:
    out = []
    for attrs in re.findall(r'<tr class="sb-row" ([^>]*)>', dom):
        data = dict(re.findall(r'data-(\w+)="([^"]*)"', attrs))
        out.append((data, bool(re.search(r"(^|\s)hidden(=|\s|$)", attrs))))
    return out


def test_report_and_figures_render(report) -> None:
    page, root = report
    shot = screenshot(root, page.as_uri(), "page")
    stat = ImageStat.Stat(shot.convert("L"))
    assert stat.var[0] > 200, "report screenshot is (nearly) blank"
    for name in ("radar", "heatmap_reasoning", "prompt_mode_ablation"):
        svg = page.with_name("report_figures") / f"{name}.svg"
        img = screenshot(root, svg.as_uri(), f"fig-{name}", size="1000,700")
        assert ImageStat.Stat(img.convert("L")).var[0] > 100, f"{name}.svg renders blank"
        colours = img.getcolors(maxcolors=1_000_000) or []
        assert len(colours) > 20, f"{name}.svg: {len(colours)} colours, expected a drawn figure"


def test_filter_from_url_fragment(report) -> None:
    page, root = report
    everything = sample_rows(dump_dom(root, page.as_uri()))
    assert everything and not any(hidden for _, hidden in everything)

    dom = dump_dom(root, page.as_uri() + "#model=beta&verdict=parse_error")
    rows = sample_rows(dom)
    shown = [d for d, hidden in rows if not hidden]
    assert shown, "the filter hid every row"
    assert all(d["model"] == "beta" and d["verdict"] == "parse_error" for d in shown)
    assert len(shown) < len(rows)
    assert re.search(rf'id="sb-count">{len(shown)} of {len(rows)} samples shown<', dom)


def test_open_sample_fills_prompt_and_image_and_escapes(report) -> None:
    page, root = report
    dom = dump_dom(root, page.as_uri() + "#model=alpha&mode=figure%2Blimited_text&open=1")
    rows = sample_rows(dom)
    shown = [d for d, hidden in rows if not hidden]
    assert shown and all(d["model"] == "alpha" and d["mode"] == "figure+limited_text" for d in shown)
    opened = re.search(r"<details[^>]*\sopen[^>]*>(.*?)</details>", dom, re.S)
    assert opened, "open=1 did not open the first matching sample"
    body = opened.group(1)
    prompt = re.search(r'<pre class="prompt" data-prompt="[^"]+">(.*?)</pre>', body, re.S)
    assert prompt and "figure" in prompt.group(1).lower()
    assert re.search(r'<img src="data:image/png;base64,', body)
    # the hostile response is text in the live DOM too: no element was created from it
    assert "&lt;script&gt;alert" in body
    assert XSS not in dom and not re.search(r"<[a-z]+[^>]*\sonerror=", dom) and "<script>alert" not in dom
