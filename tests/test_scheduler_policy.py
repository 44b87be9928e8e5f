"""The scheduler's placement policy on a real local Ray: simulated replicas (cluster/backends/simulated.py)
hosted in one actor, GPUs counted by the scheduler (`total_gpus`), so the policy is checked on this CPU machine."""

from __future__ import annotations

from collections import deque
from typing import Any

import pytest

from cluster.backends.simulated import OPT_IN, SimHost, SimulatedBackend
from cluster.scheduler import Batch, Job, Scheduler

pytestmark = pytest.mark.ray


class _Method:
    def __init__(self, fn: Any) -> None:
        self.remote = fn


class _Hosted:
    def __init__(self, host: Any, rid: str, options: dict[str, Any]) -> None:
        self.ready = _Method(lambda: host.ready.remote(rid, rid, options))
        self.run = _Method(lambda n: host.run.remote(rid, n))


@pytest.fixture(scope="module")
def host(ray_local):
    h = ray_local.remote(num_cpus=0)(SimHost).remote()
    yield h
    ray_local.kill(h)


def _job(host: Any, name: str, gpus: float, requests: int, *, load_s: float, request_s: float,
         replicas: int | str = "auto", batch: int = 10) -> tuple[Job, list[int]]:
    written: list[int] = []
    opts = {OPT_IN: True, "load_s": load_s, "request_s": request_s}
    job = Job(
        name=name, gpus=gpus, replicas=replicas, load_s=load_s, request_s=request_s,
        batches=deque(Batch(batch, batch) for _ in range(requests // batch)),
        start=lambda i, _cpus: (_Hosted(host, f"{name}/{i}", opts), {}),
        submit=lambda a, n: a.run.remote(n), finish=lambda b, n: written.append(n),
        fail=lambda b, msg: pytest.fail(f"{name}: {msg}"), release=lambda a, p: None, per_replica_inflight=2,
    )
    return job, written


def _peak(events: list[tuple[float, str, str]], name: str) -> int:
    live = peak = 0
    for _, job, ev in events:
        if job == name and ev.startswith("start replica"):
            live += 1
            peak = max(peak, live)
        elif job == name and ev.startswith("end replica"):
            live -= 1
    return peak


def test_simulated_backend_refuses_without_opt_in():
    with pytest.raises(ValueError, match="benchmark_only: true"):
        SimulatedBackend("m", {"load_s": 1})


def test_auto_replicas_follow_the_work_not_the_free_gpus(host):
    # 8 GPUs; a model with a lot of work and one with little: "auto" gives each its share, never all 8,
    # and the small one no replica that would load for longer than it saves
    big, big_out = _job(host, "big", 1, 400, load_s=0.05, request_s=0.004)
    small, small_out = _job(host, "small", 1, 40, load_s=0.3, request_s=0.004)
    s = Scheduler([big, small], total_gpus=8)
    s.run()
    assert sum(big_out) == 400 and sum(small_out) == 40
    assert big.status == small.status == "complete"
    assert _peak(s.events, "small") == 1, s.events
    assert 2 <= _peak(s.events, "big") <= 7, s.events


def test_big_tensor_parallel_replica_is_not_starved(host):
    # 4 GPUs, one job needing all 4 per replica and many 1-GPU jobs with more work each: strict priority
    # holds freed GPUs for the big replica instead of handing them one by one to the small jobs
    big, big_out = _job(host, "tp4", 4, 40, load_s=0.05, request_s=0.01)
    smalls = [_job(host, f"s{i}", 1, 60, load_s=0.05, request_s=0.01) for i in range(6)]
    s = Scheduler([big, *(j for j, _ in smalls)], total_gpus=4)
    s.run()
    assert sum(big_out) == 40 and all(sum(out) == 60 for _, out in smalls)
    starts = [(t, name) for t, name, ev in s.events if ev.startswith("start replica")]
    big_start = next(t for t, name in starts if name == "tp4")
    # once the big job is first in line no small job gets a further replica ahead of it
    second = [t for t, name in starts if name != "tp4" and sum(1 for _, n in starts if n == name) > 1]
    assert all(t > big_start for t in second) or not second
    # never more GPUs in use than the cluster has
    used = peak = 0.0
    gpus = {"tp4": 4, **{f"s{i}": 1 for i in range(6)}}
    for _, name, ev in s.events:
        if ev.startswith("start replica"):
            used += gpus[name]
        elif ev.startswith("end replica"):
            used -= gpus[name]
        peak = max(peak, used)
    assert peak <= 4


@pytest.mark.timeout(300)
def test_cpu_models_asking_for_every_cpu_still_leave_the_score_tasks_room(ray_local, tmp_path):
    # a 2-CPU Ray (the session's) and four baselines asking 1 CPU each, all started at once: granted as asked,
    # two would hold both CPUs and the score tasks would never run (the run hung); the scheduler scales the
    # replicas into what it keeps back from the score tasks, so the run finishes
    import json

    import polars as pl

    from cluster.config import DatasetSpec, ModelSpec, RunConfig
    from cluster.run import execute
    from evalcore.dataset import load_dataset
    from evalcore.records import read_samples
    from nphe4v.generate import generate_version

    assert ray_local.cluster_resources()["CPU"] == 2
    ds = tmp_path / "ds"
    generate_version(ds, version="cpus", seed=5, per_level=1, tasks=["BSP", "SPP"], levels=[1, 2, 3], workers=1)
    models = [ModelSpec(name=n, num_cpus=1, batch_size=2) for n in ("oracle", "greedy", "random", "always-yes")]
    cfg = RunConfig(name="cpus", out=str(tmp_path / "run"), datasets=[DatasetSpec(path=str(ds))], models=models,
                    prompt_modes=["figure+limited_text", "full_text_only"], recognition={"enabled": False})
    out = execute(cfg)
    df = read_samples(out)
    n = len(load_dataset(ds).instances) * 2
    assert df.height == 4 * n and set(df["status"]) == {"ok"}
    assert set(df.filter(pl.col("model") == "oracle")["verdict"]) == {"correct"}
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "complete"
    # all four were up at once, not one after another
    win = {m["model"]: (m["started_at"], m["finished_at"]) for m in manifest["models"]}
    assert max(s for s, _ in win.values()) < min(f for _, f in win.values()), win


def test_a_sequential_backend_costs_what_it_serves_not_a_batched_replica():
    """The transformers backend decodes one request at a time: the scheduler's cost model prices its replica
    seconds per request far above a batched vLLM replica of the same size (so it asks for more replicas), and
    both grow with the parameters."""
    from cluster.costs import estimate

    for p in (1.0, 7.0, 70.0):
        batched = estimate("m", "vllm", 1.0, {"params_b": p})
        sequential = estimate("m", "transformers", 1.0, {"params_b": p})
        assert sequential.request_s > 10 * batched.request_s
        assert sequential.load_s <= batched.load_s  # no CUDA-graph capture
    assert estimate("m", "transformers", 1.0, {"params_b": 70.0}).request_s > \
        estimate("m", "transformers", 1.0, {"params_b": 7.0}).request_s
