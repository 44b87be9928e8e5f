"""The README's main command, run as written: `eval_all` on the embedded demo config, ending with the
leaderboards on screen and the report on disk.

The command is parsed out of README.md (the ```bash block of "## Quick start"), so the test breaks when the
README changes. What is substituted, each substitution asserted to apply: `.venv/bin/python` becomes this
interpreter (the environment `scripts/setup.sh` makes; the setup step itself is not run, since it would
install into the environment the tests run in), and `--out` / `--data-root` (flags the README documents) point
into tmp_path, so the test neither writes into the checkout's runs/ nor reuses a cached dataset.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

ROOT = Path(__file__).resolve().parents[1]
SETUP = "bash scripts/setup.sh && "

pytestmark = [pytest.mark.ray, pytest.mark.slow(reason="the README's main command end to end: generation, a local Ray, four baselines, the report")]


def readme_main_command() -> str:
    text = (ROOT / "README.md").read_text()
    assert "## Quick start" in text, "README.md lost its quick start"
    section = text[text.index("## Quick start"):]
    block = re.search(r"```bash\n(.*?)```", section, re.S)
    assert block is not None
    lines = [ln.strip() for ln in block.group(1).replace("\\\n", " ").splitlines() if ln.strip()]
    assert len(lines) == 1, lines
    return " ".join(lines[0].split())


def test_readme_main_command_ends_with_a_leaderboard_and_a_report(tmp_path):
    command = readme_main_command()
    assert command.startswith(SETUP), f"the README's main command changed: {command!r}"
    assert (ROOT / "scripts" / "setup.sh").is_file()
    run = command.removeprefix(SETUP)
    assert run.startswith(".venv/bin/python jobs/eval_all.py "), run
    run = run.replace(".venv/bin/python", shlex.quote(sys.executable), 1)
    out, data = tmp_path / "run", tmp_path / "data"
    run += f" --out {shlex.quote(str(out))} --data-root {shlex.quote(str(data))}"
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    res = subprocess.run(["bash", "-c", run], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    # the leaderboards on screen: NPHardEval4V (with every baseline) and GraphVerse
    assert "NPHardEval4V leaderboard" in res.stdout and "GraphVerse accuracy" in res.stdout, res.stdout[-3000:]
    for model in ("oracle", "greedy", "random", "always-yes"):
        assert model in res.stdout
    # the report on disk, as the README lists it
    for name in ("report.html", "manifest.json", "leaderboard.csv", "graphverse_acc.csv"):
        assert (out / name).is_file(), name
    assert f"manifest: {out}/manifest.json" in res.stdout
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "complete" and "failed_models" not in manifest
    assert {m["model"] for m in manifest["models"]} == {"oracle", "greedy", "random", "always-yes"}
    board = pl.read_csv(out / "leaderboard.csv")
    oracle = board.filter(pl.col("model") == "oracle", pl.col("prompt_mode") == "pooled").row(0, named=True)
    assert oracle["AA_All"] == pytest.approx(1.0)
    assert "<html" in (out / "report.html").read_text()[:2000].lower()
