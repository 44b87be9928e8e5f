"""The local LLM-judge recipe of docs/vllm-cpu.md works when followed literally: its `bash` blocks are taken
from the document and run as written, in order (only `RUN` and `JUDGE_PORT`, which the recipe reads from the
environment, point at a temporary folder and a free port; `VLLM_CPU_OMP_THREADS_BIND`, which it reads too, is
the suite's `nobind`, since the suite's other processes share the two cores the recipe's default binds to). Real
parts throughout: the `nphe4v` CLI, a local Ray run, a vLLM OpenAI-compatible server with the tiny random-weight
model, litellm, the judge stage."""

from __future__ import annotations

import importlib.util
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest

from judge.vgr import read_judgments

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "vllm-cpu.md"
SECTION = "## An LLM judge on a local server (the recipe)"
TIMEOUT_S = float(os.environ.get("NPHE4V_RECIPE_TIMEOUT", "1500"))

pytestmark = pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vllm not installed")


def recipe_blocks(text: str) -> list[str]:
    """The ```bash blocks of the recipe section, in order."""
    start = text.index(SECTION)
    nxt = text.find("\n## ", start + len(SECTION))
    section = text[start : nxt if nxt >= 0 else len(text)]
    return re.findall(r"```bash\n(.*?)```", section, flags=re.S)


def test_recipe_blocks_are_what_the_doc_says():
    blocks = recipe_blocks(DOC.read_text())
    assert len(blocks) == 3
    script = "\n".join(blocks)
    for needle in ("VLLM_CPU_KVCACHE_SPACE=1", "VLLM_ENABLE_V1_MULTIPROCESSING=0", "VLLM_CPU_OMP_THREADS_BIND=${VLLM_CPU_OMP_THREADS_BIND:-0-1}",
                   "--structured-outputs-config", "disable_any_whitespace",
                   "--max-model-len 8192", "jobs/judge_rerun.py", "--api-base", 'kill "$JUDGE_SERVER_PID"'):
        assert needle in script, needle


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow(reason="the doc's recipe: a generation, an eval_all run, a vLLM server on the CPU, judge_rerun")
def test_recipe_runs_as_written(tmp_path):
    script = "set -euo pipefail\n" + "\n".join(recipe_blocks(DOC.read_text()))
    run_root = tmp_path / "recipe"
    env = {**os.environ, "RUN": str(run_root), "JUDGE_PORT": str(_free_port()),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "PYTHONPATH": str(ROOT)}
    env.pop("RAY_ADDRESS", None)
    log = tmp_path / "recipe.log"
    t0 = time.monotonic()
    with open(log, "wb") as fh:
        # own session: whatever the script leaves behind (the server, if a step fails) is stopped below
        proc = subprocess.Popen(["bash", "-c", script], cwd=ROOT, env=env, stdout=fh, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            rc = proc.wait(TIMEOUT_S)
        except subprocess.TimeoutExpired:
            rc = None
        finally:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
    out = log.read_text(errors="replace")
    server_log = run_root / "judge-server.log"
    tail = (server_log.read_text(errors="replace")[-2000:] if server_log.exists() else "")
    assert rc == 0, f"recipe failed (rc={rc}) after {time.monotonic() - t0:.0f} s:\n{out[-4000:]}\n{tail}"

    run = run_root / "run"
    js = read_judgments(run)
    tiny = js.filter(pl.col("judge") == "hosted_vllm/tiny-judge")
    rule = js.filter(pl.col("judge") == "rule-based")
    assert tiny.height == rule.height > 0  # every GraphVerse sample judged by both
    # bounded: no call ran past the local max_tokens, and failures are typed, never infra/config
    assert (tiny["completion_tokens"] <= 1024 * tiny["attempts"]).all()
    errors = tiny.filter(pl.col("status") != "ok")
    # malformed (the random model's JSON cut at max_tokens) is expected; a prompt over the tiny model's
    # 8,192 positions (a big hard-level graph) is a typed config error; nothing else (infra, auth, ...)
    too_long = errors["error"].str.contains("(?i)context|maximum|too long|max_model_len")
    assert ((errors["error_kind"] == "malformed") | ((errors["error_kind"] == "config") & too_long)).all(), \
        errors.select("error_kind", "error").to_dicts()
    ok = tiny.filter(pl.col("status") == "ok")
    assert ok.height >= 1 and ok["vgr_score"].is_between(0, 100).all()
    # F is the verifier's verdict, whatever the random judge said
    assert (ok["final_answer_match"] == (ok["sample_verdict"] == "correct")).all()
    deltas = pl.read_csv(run / "judge_deltas.csv")
    assert set(deltas["setting"]) == {"default", "alternative"}
    assert set(deltas["model"]) <= {"oracle", "random"} and deltas["model"].n_unique() >= 1
    assert "judged" in out  # progress lines while judging
    # the server was stopped by the recipe's last command
    assert "Traceback" not in out.split("judge_rerun.py")[-1]
