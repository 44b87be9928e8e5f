"""Losing a worker node mid-run, on real raylets (a head and two worker nodes, `ray start` processes): the run of
three API models (litellm over HTTP to the fake provider) on a head with no CPUs and two 2-CPU workers, and the
run of a CPU vLLM replica (the tiny random-weight model), each finish on their own, every sample exactly once.
The three models on 2-CPU workers are issue 32's hang: the replicas Ray restarted with the CPUs granted for the
larger cluster took every CPU of the surviving worker, and the score tasks waited for ever; the grants now
follow the live cluster (cluster/scheduler.py). On the same cluster, a second run then loses its head: the
driver ends with the project's own line (samples kept, how to resume), not Ray's C++ line.

The bound (stated, and asserted with slack for a loaded machine): Ray declares the killed node dead within its
health-check window (about 30 s by default), the replica restarts on the other worker node (or is replaced, at
the size the smaller cluster grants), the limiter frees the slots of every replica the driver ends at once and
refuses the calls they left waiting (`evalcore.ratelimit.forget_holder`; before, 14 such calls each held one of the
key's 2 slots for a 15 s lease and the run ended 120 s after the kill, 225 s on a loaded CI machine; now ~45 s),
and the batches it had in flight are retried: the run ends within 120 s of the kill (a vLLM replica also reloads
its engine on the other node: 180 s). A lost head: the head watch declares it lost after half Ray's reconnect
window without an answer on its GCS port (the window is 60 s by default, after which Ray ends the process itself;
the test's driver sets 30 s, so 15 s). The nodes' GCS checks raylets every second (HEALTH_CHECK)."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import polars as pl
import psutil
import pytest
from fake_provider import FakeProvider
from ray_head import BIN, MAX_STARTS, STARTUP_TIMEOUT, free_ports, start_head, stop_head, wait_for_gcs

from evalcore.records import KEY_COLUMNS, read_samples
from nphe4v.generate import generate_version

ROOT = Path(__file__).resolve().parents[1]
ENV = "NPHE4V_NODE_TEST_KEY"
BOUND_S = 120.0
TINY_DIR = Path(os.environ.get("NPHE4V_TINY_VLM_DIR", ROOT / "data" / "models" / "tiny-idefics3"))
# The GCS checks each raylet every 1 s instead of every 3 s (5 misses in a row declare it dead, Ray's default
# count): a killed node is found dead 7 s after the kill instead of 15 s (measured, load 6). What the tests prove does not depend
# on how long Ray takes to notice; only how long the test idles does. A raylet that answers late under load is
# still given Ray's 10 s per check.
HEALTH_CHECK = {"RAY_health_check_period_ms": "1000"}
# Ray's C++ client ends a driver that lost its GCS after this many seconds (60 by default); the head watch
# declares the head lost after half of it (cluster/head_watch.py). The lost-head run uses 30 s: the same
# property (the project's line, before Ray's own exit) 15 s sooner.
RECONNECT_S = 30

pytestmark = [pytest.mark.ray, pytest.mark.slow(reason="three `ray start` nodes; a worker node is killed mid-run and the run must finish on its own")]


def _env(**extra: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RAY_AUTH_MODE": "disabled", **extra}
    env.pop("RAY_ADDRESS", None)
    return env


def _worker(env: dict[str, str], gcs: str, cpus: int, log: Path) -> subprocess.Popen:
    agent, agent_grpc, metrics, rt_env = free_ports(4)
    ports = [f"--dashboard-agent-listen-port={agent}", f"--dashboard-agent-grpc-port={agent_grpc}",
             f"--metrics-export-port={metrics}", f"--runtime-env-agent-port={rt_env}"]
    return subprocess.Popen([str(BIN / "ray"), "start", f"--address={gcs}", "--block", "--node-ip-address=127.0.0.1",
                             f"--num-cpus={cpus}", "--disable-usage-stats", *ports],
                            env=env, start_new_session=True, stdout=log.open("w"), stderr=subprocess.STDOUT)


def _join(env: dict[str, str], gcs: str, cpus: int, log: Path, total: float) -> subprocess.Popen:
    """A worker node that has joined: the cluster then has `total` CPUs. Started again when it missed Ray's
    hard-coded start-up window (tests/ray_head.py: STARTUP_TIMEOUT), which a loaded machine sometimes does."""
    for _ in range(MAX_STARTS):
        w = _worker(env, gcs, cpus, log)
        while w.poll() is None and "Ray runtime started" not in log.read_text():
            time.sleep(0.5)  # `ray start --block` prints it once the node is up, or exits
        if w.poll() is None:
            _wait_cpus(env, gcs, total)
            return w
        assert STARTUP_TIMEOUT in log.read_text(), log.read_text()[-3000:]
    raise AssertionError(f"a worker node missed Ray's start-up window {MAX_STARTS} times:\n{log.read_text()[-3000:]}")


def _cluster_cpus(gcs: str) -> float:
    """The cluster's total CPUs, as `ray.cluster_resources()` reads them (the GCS's GetAllTotalResources), asked
    over gRPC from this process: a driver started for it (`ray.init` in a new Python) cost ~4 CPU s a node."""
    import grpc
    from ray.core.generated import gcs_service_pb2, gcs_service_pb2_grpc

    with grpc.insecure_channel(gcs) as channel:
        reply = gcs_service_pb2_grpc.NodeResourceInfoGcsServiceStub(channel).GetAllTotalResources(
            gcs_service_pb2.GetAllTotalResourcesRequest(), timeout=30)
    return sum(r.resources_total.get("CPU", 0.0) for r in reply.resources_list)


def _wait_cpus(env: dict[str, str], gcs: str, cpus: float) -> None:
    deadline = time.monotonic() + 240
    while (have := _cluster_cpus(gcs)) < cpus and time.monotonic() < deadline:
        time.sleep(0.5)
    logs = "".join(p.read_text()[-1500:] for p in sorted(Path(env["NODE_LOGS"]).glob("worker*.log")))
    assert have >= cpus, f"the cluster has {have} CPUs, not {cpus}:\n{logs}"


def _replica_node(workers: list[subprocess.Popen], engine: bool = False) -> subprocess.Popen | None:
    """The worker node (its `ray start` session) whose processes include a live model replica; `engine`: one
    that has loaded vLLM (its compiled extension is mapped)."""
    for p in psutil.process_iter(["cmdline"]):
        try:
            if any("ModelActor" in part for part in (p.info["cmdline"] or [])[:1]):
                if engine and not any("vllm" in m.path for m in p.memory_maps()):
                    continue
                sid = os.getsid(p.pid)
                for w in workers:
                    if w.pid == sid:
                        return w
        except (psutil.Error, ProcessLookupError):
            continue
    return None


def test_worker_node_killed_mid_run_the_api_models_finish_then_a_lost_head_ends_in_one_line(tmp_path):
    def models(fp: FakeProvider) -> list[str]:
        return [f"{{name: api{i}, backend: litellm, num_cpus: 1.5, batch_size: 2, options: {{model: "
                f"openai/fake-model, api_base: '{fp.base_url}', api_key_env: {ENV}, max_concurrency: 2, "
                f"timeout_s: 30, backoff_base_s: 0.05}}}}" for i in range(3)]

    def victim(fp: FakeProvider, workers: list[subprocess.Popen], _out: Path) -> subprocess.Popen | None:
        node = _replica_node(workers)
        return node if node is not None and fp.count >= 12 else None  # mid-run: some answers in, most not

    manifest = _kill_a_node_mid_run(tmp_path, models, victim, BOUND_S, head_cpus=0, then=_lose_the_head)
    assert {m["status"] for m in manifest["models"]} == {"complete"}
    # the smaller cluster's grants (2 CPUs: 1 kept for scoring, a third of the rest each) replaced replicas
    # sized for 4 CPUs: more replicas were started than the three of the start
    assert sum(m["replicas_started"] for m in manifest["models"]) > 3, manifest["models"]


def _lose_the_head(tmp_path: Path, head, cfg: Path, env: dict[str, str], fp: FakeProvider) -> None:
    """A second run on the cluster (one worker left), its head SIGKILLed once it has written samples: the
    driver ends on its own, before Ray's reconnect window closes, with the project's line last."""
    out = tmp_path / "run-head-lost"
    cfg.write_text(cfg.read_text().replace("name: nodes", "name: headless"))
    env = {**env, "RAY_gcs_rpc_server_reconnect_timeout_s": str(RECONNECT_S)}
    driver = subprocess.Popen([sys.executable, str(ROOT / "jobs" / "eval_all.py"), "--config", str(cfg),
                               "--out", str(out), "--no-html"], cwd=tmp_path, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and driver.poll() is None and _written(out, "api0") < 2:
        time.sleep(0.2)
    assert driver.poll() is None, "the run must lose its head mid-run"
    os.killpg(head.proc.pid, signal.SIGKILL)  # the head node: its GCS, raylet and every worker on it
    killed_at = time.monotonic()
    _, stderr = driver.communicate(timeout=300)
    took = time.monotonic() - killed_at
    last = stderr.strip().splitlines()[-1]
    kept = read_samples(out).height
    assert driver.returncode == 75, stderr[-3000:]
    assert re.fullmatch(r"the Ray head is lost \(its GCS at \S+ has not answered for \d+ s; start the cluster "
                        rf"again\); {kept} samples kept; rerun the same command to resume", last), stderr[-3000:]
    assert "Traceback" not in stderr, stderr[-3000:]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "interrupted" and manifest["samples_kept"] == kept > 0
    assert "the Ray head is lost" in manifest["stopped_because"]
    assert "interrupted" in {m["status"] for m in manifest["models"]}, manifest["models"]
    assert took < RECONNECT_S, (f"the driver ended {took:.0f} s after the head was killed (Ray's own exit comes "
                                f"at {RECONNECT_S} s)")
    print(f"driver ended {took:.1f} s after the head was killed")


@pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vllm is not installed")
def test_worker_node_killed_mid_run_the_vllm_replica_reloads_and_finishes(tmp_path):
    from cluster.backends.vllm_cpu import set_cpu_env_defaults
    from cluster.tiny_vlm import build_tiny_idefics3

    tiny = build_tiny_idefics3(TINY_DIR)  # reused once complete (~6 CPU s to build), as the judge tests do

    def model(_fp: FakeProvider) -> list[str]:
        return [f"{{name: tiny, backend: vllm, num_cpus: 1.5, batch_size: 4, options: {{model: '{tiny}', "
                f"max_model_len: 4096, max_images: 2}}}}"]

    def victim(_fp: FakeProvider, workers: list[subprocess.Popen], out: Path) -> subprocess.Popen | None:
        # the node whose replica has loaded vLLM, before the model has all its samples
        node = _replica_node(workers, engine=True)
        return node if node is not None and _written(out, "tiny") < 24 else None

    set_cpu_env_defaults()  # the nodes inherit it: the CPU engine's small-machine settings
    manifest = _kill_a_node_mid_run(tmp_path, model, victim, BOUND_S + 60, {k: os.environ[k] for k in os.environ
                                                                             if k.startswith("VLLM_")})
    stats = manifest["models"][0]
    assert stats["status"] == "complete" and stats["replica_failures"] >= 1, stats  # the replica was lost


def _written(out: Path, model: str) -> int:
    try:
        return read_samples(out).filter(pl.col("model") == model).height
    except Exception:  # no shard yet, or one being renamed into place
        return 0


def _kill_a_node_mid_run(tmp_path: Path, models, victim, bound_s: float, extra_env: dict[str, str] | None = None,
                         head_cpus: int = 1, then=None) -> dict:
    """Run the models on a head (`head_cpus`) and two worker nodes (2 CPUs each), SIGKILL the worker node
    `victim` names once it names one, and check the run ends on its own within `bound_s` with every sample
    once; `then(tmp_path, head, cfg, env, fp)` runs next on the same cluster."""
    ds = tmp_path / "ds"
    generate_version(ds, version="node-test", seed=2, per_level=2, tasks=["BSP", "SPP"], levels=[1, 2, 3])
    key = "sk-node-test-KEY-0123456789"
    env = _env(**{ENV: key}, **HEALTH_CHECK, **(extra_env or {}))  # node-level env: every raylet (so every
    # replica) has it
    head = start_head(env, command=[str(BIN / "ray"), "start", "--head", "--include-dashboard=false"],
                      num_cpus=head_cpus)
    workers: list[subprocess.Popen] = []
    try:
        wait_for_gcs(head)
        env = {**env, "RAY_TMPDIR": head.temp_root, "NODE_LOGS": str(tmp_path)}
        for i in range(2):  # one after the other: each joins before the next starts
            workers.append(_join(env, head.gcs_address, 2, tmp_path / f"worker{i}.log", head_cpus + 2 + 2 * i))
        with FakeProvider(default="slow:0.4", lifetime_s=900) as fp:
            cfg = tmp_path / "c.yaml"
            # 1.5 CPUs: more than the head's, so a replica runs on a worker node
            listed = "\n".join(f"                  - {m}" for m in models(fp))
            cfg.write_text(textwrap.dedent(f"""
                name: nodes
                datasets: [{{path: {ds}}}]
                models:
{listed}
                prompt_modes: [figure+limited_text, full_text_only]
                sampling: {{temperature: 0.0, max_tokens: 12, seed: 0}}
                recognition: {{enabled: false}}
                ray: {{address: "{head.gcs_address}"}}
            """))
            out = tmp_path / "run"
            driver = subprocess.Popen([sys.executable, str(ROOT / "jobs" / "eval_all.py"), "--config", str(cfg),
                                       "--out", str(out), "--no-html"], cwd=tmp_path, env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                      start_new_session=True)
            deadline = time.monotonic() + 300
            node = None
            while time.monotonic() < deadline and driver.poll() is None and node is None:
                node = victim(fp, workers, out)
                time.sleep(0.2)
            assert node is not None and driver.poll() is None, "the replica never served on a worker node"
            os.killpg(node.pid, signal.SIGKILL)  # the node's raylet and every worker on it, mid-run
            killed_at = time.monotonic()
            node.wait()
            _, stderr = driver.communicate(timeout=600)
            took = time.monotonic() - killed_at
            assert driver.returncode == 0, stderr[-3000:]
            df = read_samples(out)
            n = 12 * 2 * len(models(fp))
            assert df.height == n and df.select(KEY_COLUMNS).unique().height == n  # none lost, none twice
            assert set(df["status"]) == {"ok"}, df["error"].to_list()
            manifest = json.loads((out / "manifest.json").read_text())
            assert manifest["status"] == "complete" and "failed_models" not in manifest
            (tmp_path / "driver.stderr").write_text(stderr)
            assert took <= bound_s, f"the run ended {took:.0f} s after the node was killed:\n{stderr[-4000:]}"
            print(f"run ended {took:.1f} s after the worker node was killed")
            if then is not None:
                then(tmp_path, head, cfg, env, fp)
        return manifest
    finally:
        for w in workers:
            try:
                os.killpg(w.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            w.wait()
        stop_head(head)
