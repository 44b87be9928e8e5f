"""`ray start --head` on loopback, `ray job submit` of jobs/eval_all.py, and the results it leaves."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import polars as pl
import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent

pytestmark = [pytest.mark.ray, pytest.mark.slow]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_ray_job_submit_runs_eval_all(small_dataset, tmp_path):
    # every port the head opens is chosen free: the session's other local Ray cluster holds the defaults
    gcs, dash, agent, agent_grpc, client, metrics, rt_env = (_free_port() for _ in range(7))
    # A throwaway loopback cluster: token auth off so the test needs no token file on a fresh machine.
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}", "RAY_AUTH_MODE": "disabled"}
    env.pop("RAY_ADDRESS", None)
    head = subprocess.Popen(
        [str(BIN / "ray"), "start", "--head", "--block", "--node-ip-address=127.0.0.1", f"--port={gcs}",
         "--dashboard-host=127.0.0.1", f"--dashboard-port={dash}", "--num-cpus=2",
         f"--dashboard-agent-listen-port={agent}", f"--dashboard-agent-grpc-port={agent_grpc}",
         f"--ray-client-server-port={client}", f"--metrics-export-port={metrics}",
         f"--runtime-env-agent-port={rt_env}",
         # Ray's unix sockets live under the temp dir and must stay under 107 bytes
         f"--temp-dir={tempfile.mkdtemp(prefix='rj', dir='/tmp')}", "--disable-usage-stats"],
        env=env, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        address = f"http://127.0.0.1:{dash}"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            probe = subprocess.run([str(BIN / "ray"), "job", "list", "--address", address],
                                   env=env, capture_output=True, text=True, timeout=60)
            if probe.returncode == 0:
                break
            assert head.poll() is None, head.stdout.read() if head.stdout else "head exited"
            time.sleep(2)
        else:
            pytest.fail("ray head did not come up in 120 s")
        cfg = tmp_path / "job.yaml"
        cfg.write_text(
            "name: job\n"
            f"datasets: [{{path: {small_dataset}}}]\n"
            "models: [{name: oracle}, {name: greedy}]\n"
            "prompt_modes: [figure+limited_text]\n"
            "recognition: {enabled: true, asks: 3}\n"
        )
        out = tmp_path / "run"
        submit = [str(BIN / "ray"), "job", "submit", "--address", address, "--working-dir", str(ROOT), "--",
                  "python", "jobs/eval_all.py", "--config", str(cfg), "--out", str(out)]
        for _ in range(30):
            job = subprocess.run(submit, env=env, capture_output=True, text=True, timeout=600)
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
    finally:
        _stop(head)


def _stop(head: subprocess.Popen) -> None:
    for sig, wait in ((signal.SIGTERM, 60), (signal.SIGKILL, 10)):
        try:
            os.killpg(head.pid, sig)
        except ProcessLookupError:
            return
        try:
            head.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue
