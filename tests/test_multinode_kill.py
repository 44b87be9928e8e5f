"""Losing a worker node mid-run, on real raylets (a head and two worker nodes, `ray start` processes): the run of
an API model (litellm over HTTP to the fake provider) finishes on its own, every sample exactly once.

The bound (stated, and asserted with slack for a loaded machine): Ray declares the killed node dead within its
health-check window (about 30 s by default), the replica restarts on the other worker node (or is replaced),
the dead replica's limiter slots are reclaimed 15 s + 1 s after its last heartbeat, and the batches it had in
flight are retried: the run ends within 120 s of the kill.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest
from fake_provider import FakeProvider
from ray_head import BIN, free_port, start_head, stop_head, wait_for_gcs

from nphe4v.core.records import KEY_COLUMNS, read_samples
from nphe4v.generate import generate_version

ROOT = Path(__file__).resolve().parents[1]
ENV = "NPHE4V_NODE_TEST_KEY"
BOUND_S = 120.0

pytestmark = [pytest.mark.ray, pytest.mark.slow(reason="three `ray start` nodes; a worker node is killed mid-run and the run must finish on its own")]


def _env(**extra: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RAY_AUTH_MODE": "disabled", **extra}
    env.pop("RAY_ADDRESS", None)
    return env


def _worker(env: dict[str, str], gcs: str, cpus: int, log: Path) -> subprocess.Popen:
    ports = [f"--dashboard-agent-listen-port={free_port()}", f"--dashboard-agent-grpc-port={free_port()}",
             f"--metrics-export-port={free_port()}", f"--runtime-env-agent-port={free_port()}"]
    return subprocess.Popen([str(BIN / "ray"), "start", f"--address={gcs}", "--block", "--node-ip-address=127.0.0.1",
                             f"--num-cpus={cpus}", "--disable-usage-stats", *ports],
                            env=env, start_new_session=True, stdout=log.open("w"), stderr=subprocess.STDOUT)


def _wait_cpus(env: dict[str, str], gcs: str, cpus: float) -> None:
    code = textwrap.dedent(f"""
        import time, ray
        ray.init(address="{gcs}", log_to_driver=False)
        deadline = time.monotonic() + 240
        while ray.cluster_resources().get("CPU", 0) < {cpus} and time.monotonic() < deadline:
            time.sleep(0.5)
        print(ray.cluster_resources().get("CPU", 0))
    """)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    logs = "".join(p.read_text()[-1500:] for p in sorted(Path(env["NODE_LOGS"]).glob("worker*.log")))
    assert out.returncode == 0 and float(out.stdout.strip().splitlines()[-1]) >= cpus, out.stderr[-2000:] + logs


def _replica_node(workers: list[subprocess.Popen]) -> subprocess.Popen | None:
    """The worker node (its `ray start` session) whose processes include a live model replica."""
    for p in psutil.process_iter(["cmdline"]):
        try:
            if any("ModelActor" in part for part in (p.info["cmdline"] or [])[:1]):
                sid = os.getsid(p.pid)
                for w in workers:
                    if w.pid == sid:
                        return w
        except (psutil.Error, ProcessLookupError):
            continue
    return None


def test_worker_node_killed_mid_run_the_api_model_finishes_on_its_own(tmp_path):
    ds = tmp_path / "ds"
    generate_version(ds, version="node-test", seed=2, per_level=2, tasks=["BSP", "SPP"], levels=[1, 2, 3])
    key = "sk-node-test-KEY-0123456789"
    env = _env(**{ENV: key})  # node-level env: every raylet (and so every replica) has the key
    head = start_head(env, command=[str(BIN / "ray"), "start", "--head", "--include-dashboard=false"], num_cpus=1)
    workers: list[subprocess.Popen] = []
    try:
        wait_for_gcs(head)
        env = {**env, "RAY_TMPDIR": head.temp_root, "NODE_LOGS": str(tmp_path)}
        for i in range(2):  # one after the other: each joins before the next starts
            workers.append(_worker(env, head.gcs_address, 2, tmp_path / f"worker{i}.log"))
            _wait_cpus(env, head.gcs_address, 3 + 2 * i)
        with FakeProvider(default="slow:0.4", lifetime_s=900) as fp:
            cfg = tmp_path / "c.yaml"
            # 1.5 CPUs: more than the head's one, so the replica runs on a worker node
            cfg.write_text(textwrap.dedent(f"""
                name: nodes
                datasets: [{{path: {ds}}}]
                models:
                  - {{name: api, backend: litellm, num_cpus: 1.5, batch_size: 2,
                     options: {{model: openai/fake-model, api_base: "{fp.base_url}", api_key_env: {ENV},
                               max_concurrency: 2, timeout_s: 30, backoff_base_s: 0.05}}}}
                prompt_modes: [figure+limited_text, full_text_only]
                recognition: {{enabled: false}}
                ray: {{address: "{head.gcs_address}"}}
            """))
            out = tmp_path / "run"
            driver = subprocess.Popen([sys.executable, str(ROOT / "jobs" / "eval_all.py"), "--config", str(cfg),
                                       "--out", str(out), "--no-html"], cwd=tmp_path, env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                      start_new_session=True)
            deadline = time.monotonic() + 300
            victim = None
            while time.monotonic() < deadline and driver.poll() is None and (victim is None or fp.count < 6):
                victim = victim or _replica_node(workers)
                time.sleep(0.2)
            assert victim is not None and driver.poll() is None, "the replica never served on a worker node"
            os.killpg(victim.pid, signal.SIGKILL)  # the node's raylet and every worker on it, mid-run
            killed_at = time.monotonic()
            victim.wait()
            _, stderr = driver.communicate(timeout=600)
            took = time.monotonic() - killed_at
            assert driver.returncode == 0, stderr[-3000:]
        df = read_samples(out)
        n = 12 * 2
        assert df.height == n and df.select(KEY_COLUMNS).unique().height == n  # none lost, none twice
        assert set(df["status"]) == {"ok"}, df["error"].to_list()
        manifest = json.loads((out / "manifest.json").read_text())
        assert manifest["status"] == "complete" and "failed_models" not in manifest
        assert took <= BOUND_S, f"the run ended {took:.0f} s after the node was killed"
        print(f"run ended {took:.1f} s after the worker node was killed")
    finally:
        for w in workers:
            try:
                os.killpg(w.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            w.wait()
        stop_head(head)
