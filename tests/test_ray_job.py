"""The README's cluster recipe, run as written: token auth on, `ray start --head`, `ray job submit` of
jobs/eval_all.py with the project's interpreter named explicitly, and the results it leaves.

The commands are parsed out of README.md (the block after the `recipe: ray job submit` marker), so the test
breaks when the README changes. Only what must differ on a shared test machine is substituted, each
substitution asserted to apply: the venv's location (this interpreter's), free ports instead of the defaults
(other clusters run here), a small config and a temporary --out, HOME (so the token file the recipe makes
is the test's own), and `ray stop` (which would stop every Ray of the user) becomes stopping this head.
"""

from __future__ import annotations

import os
import re
import secrets
import shlex
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest
from ray_head import BIN, start_head, stop_head, wait_for_jobs_api

ROOT = Path(__file__).resolve().parents[1]
MARKER = "<!-- recipe: ray job submit"

pytestmark = [pytest.mark.ray, pytest.mark.slow(reason="`ray start --head` with token auth, then the demo through `ray job submit`")]


def readme_recipe() -> list[str]:
    """The recipe's commands, continuation lines joined, trailing comments dropped."""
    text = (ROOT / "README.md").read_text()
    assert MARKER in text, "README.md lost its cluster recipe"
    block = re.search(r"```bash\n(.*?)```", text[text.index(MARKER):], re.S)
    assert block is not None
    joined = block.group(1).replace("\\\n", " ")
    commands = []
    for line in joined.splitlines():
        line = re.sub(r"\s+#.*$", "", line).strip()
        if line:
            commands.append(" ".join(line.split()))
    return commands


def _sub(cmd: str, old: str, new: str) -> str:
    assert old in cmd, f"the README recipe changed: {old!r} not in {cmd!r}"
    return cmd.replace(old, new)


def test_readme_recipe_runs_with_token_auth(small_dataset, tmp_path):
    commands = readme_recipe()
    kinds = [next((k for k in ("export", "get-auth-token", "start --head", "job submit", "ray stop") if k in c),
                  None) for c in commands]
    assert kinds == ["export", "get-auth-token", "start --head", "job submit", "ray stop"], commands
    home = tmp_path / "home"
    home.mkdir()
    # the head's PATH has no project environment: a bare `python` there would not find polars
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH")}
    env.update(HOME=str(home), PATH="/usr/local/bin:/usr/bin:/bin")
    env.pop("PYTHONPATH", None)
    env.pop("VIRTUAL_ENV", None)

    name, _, value = commands[0].removeprefix("export ").partition("=")
    assert (name, value) == ("RAY_AUTH_MODE", "token")
    env[name] = value

    token = subprocess.run(["bash", "-c", _sub(commands[1], ".venv/bin/", f"{BIN}/")], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=120)
    assert token.returncode == 0, token.stderr
    assert (home / ".ray" / "auth_token").is_file(), "the recipe's token file"

    start = shlex.split(_sub(commands[2], ".venv/bin/", f"{BIN}/"))
    head = start_head(env, command=start)
    try:
        wait_for_jobs_api(head, env)
        # auth is really on: no token mode, or a wrong token, is refused
        for bad in ({"RAY_AUTH_MODE": "disabled"}, {"RAY_AUTH_TOKEN": secrets.token_hex(32)}):
            probe = subprocess.run([str(BIN / "ray"), "job", "list", "--address", head.dashboard_url],
                                   env={**env, **bad}, capture_output=True, text=True, timeout=120)
            assert probe.returncode != 0, f"job API answered a client with {bad}"

        cfg = tmp_path / "job.yaml"
        cfg.write_text(
            "name: job\n"
            f"datasets: [{{path: {small_dataset}}}]\n"
            "models: [{name: oracle}, {name: greedy}]\n"
            "prompt_modes: [figure+limited_text]\n"
            "recognition: {enabled: true, asks: 3}\n"
        )
        out = tmp_path / "run"
        submit = commands[3]
        submit = _sub(submit, ".venv/bin/ray ", f"{BIN}/ray ")
        submit = _sub(submit, '"$PWD/.venv/bin/python"', shlex.quote(sys.executable))
        submit = _sub(submit, "http://127.0.0.1:8265", head.dashboard_url)
        submit = _sub(submit, "configs/demo.yaml", shlex.quote(str(cfg)))
        submit = _sub(submit, '"$PWD/runs/demo-job"', shlex.quote(str(out)))
        for _ in range(30):
            job = subprocess.run(["bash", "-c", submit], cwd=ROOT, env=env, capture_output=True, text=True,
                                 timeout=900)
            # the job API answers before the head's dashboard agent is up; Ray says so and asks to retry
            if job.returncode == 0 or "No available agent" not in job.stdout + job.stderr:
                break
            time.sleep(3)
        assert job.returncode == 0, job.stdout[-3000:] + job.stderr[-3000:]
        assert "succeeded" in (job.stdout + job.stderr).lower()
        assert "NPHardEval4V leaderboard" in job.stdout
        df = pl.scan_parquet(f"{out}/samples/**/*.parquet").collect()
        n = 180
        assert df.height == 2 * (n + n * 2 * 3)
        board = pl.read_csv(out / "leaderboard.csv")
        oracle = board.filter(pl.col("model") == "oracle", pl.col("prompt_mode") == "pooled").row(0, named=True)
        assert oracle["AA_All"] == pytest.approx(1.0) and oracle["ER"] == pytest.approx(1.0)
        assert commands[4] == ".venv/bin/ray stop"
    finally:
        stop_head(head)  # the recipe's `ray stop`, limited to the head this test started
