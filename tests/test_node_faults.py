"""Faults that must end on their own: a dead holder's limiter slots are reclaimed within the lease TTL, a model
whose replicas keep dying gives up after a bounded number of failures whatever its replica count (naming the
last cause: a key the driver has and the nodes do not), on a real local Ray."""

from __future__ import annotations

import asyncio
import json
import math
import time
from pathlib import Path

import polars as pl
import pytest
from fake_provider import FakeProvider

from cluster.config import DatasetSpec, ModelSpec, RunConfig
from cluster.run import execute
from nphe4v.core.dataset import load_dataset
from nphe4v.core.ratelimit import LimitSettings, _State
from nphe4v.core.records import KEY_COLUMNS, read_samples
from nphe4v.generate import generate_version


@pytest.fixture(scope="module")
def bsp(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("ds") / "bsp"
    generate_version(out, version="faults-test", seed=5, per_level=1, tasks=["BSP"], levels=[1, 2, 3, 4])
    return out


def test_shared_leases_lapse_unless_renewed_local_ones_never():
    s = LimitSettings(max_concurrency=1, lease_ttl_s=10.0)
    st = _State(s, 0.0, lease_ttl_s=s.lease_ttl_s)
    assert st.try_acquire("a", 0.0) == 0.0
    assert st.try_acquire("b", 9.0) == math.inf  # held
    assert st.renew(["a", "gone"], 8.0) == 1  # the holder's heartbeat: now held until 18
    assert st.try_acquire("b", 17.9) == math.inf
    assert st.try_acquire("b", 18.0) == 0.0  # not renewed for a TTL: its holder is dead, the slot is reclaimed
    assert st.snapshot(18.0)["reclaimed"] == 1 and st.snapshot(18.0)["in_flight"] == 1
    local = _State(s, 0.0)  # the in-process limiter: its holders cannot die apart from it
    assert local.try_acquire("a", 0.0) == 0.0 and local.try_acquire("b", 1e9) == math.inf


@pytest.mark.ray
def test_dead_holders_slot_is_reclaimed_within_the_ttl_and_a_live_one_is_kept(ray_local):
    ray = ray_local
    from nphe4v.core.ratelimit import NAMESPACE, get_or_create_limiter_actor, limiter_actor_name

    ttl = 1.0
    settings = LimitSettings(max_concurrency=1, lease_ttl_s=ttl)
    key = f"lease-test-{time.time_ns()}"
    limiter = get_or_create_limiter_actor(key, settings)  # the driver owns it, as a run's does

    @ray.remote(num_cpus=0)
    class Holder:
        """Takes the key's one slot through the shared client and keeps it until killed."""

        def __init__(self) -> None:
            from nphe4v.core.ratelimit import SharedLimiter

            self.lim = SharedLimiter(key, settings)
            self.held = asyncio.Event()

        async def hold(self) -> None:
            async with self.lim.slot():
                self.held.set()
                await asyncio.sleep(3600)

        async def holding(self) -> bool:
            await self.held.wait()
            return True

    holder = Holder.remote()
    holder.hold.remote()
    assert ray.get(holder.holding.remote(), timeout=60)
    waiting = limiter.acquire.remote("second")
    # the holder is alive and renews: its slot is kept well past the TTL (the wait is for an event that must
    # not happen, bounded by 4 TTLs)
    ready, _ = ray.wait([waiting], timeout=4 * ttl)
    assert not ready, "a live holder's lease lapsed"
    t0 = time.monotonic()
    ray.kill(holder)  # as a replica dies with its node
    assert ray.get(waiting, timeout=60) is True
    reclaimed_s = time.monotonic() - t0
    # the bound: a TTL since its last renewal (at most a TTL ago) plus a waiter's 1 s re-check
    assert reclaimed_s <= ttl + 1.0 + 2.0, reclaimed_s  # 2 s of slack for a loaded machine
    stats = ray.get(limiter.stats.remote(), timeout=30)
    assert stats["reclaimed"] == 1 and stats["in_flight"] == 1
    ray.kill(ray.get_actor(limiter_actor_name(key), namespace=NAMESPACE))


@pytest.mark.ray
def test_crash_loop_with_two_replicas_gives_up_naming_the_key_missing_on_the_node(bsp, ray_local, tmp_path,
                                                                                    monkeypatch):
    # the key is set in this driver after the session's Ray started: its nodes' workers never see it, as a key
    # exported where `eval_all` runs but not on the cluster's nodes
    env = f"NPHE4V_DRIVER_ONLY_KEY_{time.time_ns()}"
    monkeypatch.setenv(env, "sk-driver-only-KEY-0123456789")
    with FakeProvider(lifetime_s=300) as fp:
        api = ModelSpec(name="nokey", backend="litellm", replicas=2, num_cpus=0.25, batch_size=2,
                        options={"model": "openai/fake-model", "api_base": fp.base_url, "api_key_env": env,
                                 "timeout_s": 10.0, "backoff_base_s": 0.05})
        ok = ModelSpec(name="oracle", num_cpus=0.25)
        cfg = RunConfig(name="crash", out=str(tmp_path / "run"), datasets=[DatasetSpec(path=str(bsp))],
                        models=[api, ok], prompt_modes=["figure+limited_text"], recognition={"enabled": False},
                        max_attempts=2)
        t0 = time.monotonic()
        out = execute(cfg)
        took = time.monotonic() - t0
        calls = fp.count
    n = len(load_dataset(bsp).instances)
    df = read_samples(out)
    assert df.height == 2 * n and df.select(KEY_COLUMNS).unique().height == df.height  # nothing lost or doubled
    bad = df.filter(pl.col("model") == "nokey")
    assert set(bad["status"]) == {"infra_error"} and calls == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "complete" and set(manifest["failed_models"]) == {"nokey"}
    line = manifest["failed_models"]["nokey"]
    assert "\n" not in line and f"API key {env} is not set on node " in line, line
    assert f"{env}_FILE" in line and "sk-driver-only" not in line
    stats = {m["model"]: m for m in manifest["models"]}
    # the budget: max_attempts per replica, 2 x 2, not one replacement after another for ever
    assert stats["nokey"]["replica_failures"] == 4 and stats["nokey"]["replicas_started"] <= 5, stats["nokey"]
    assert stats["oracle"]["status"] == "complete"
    assert took < 300, took


@pytest.mark.ray
def test_a_replica_never_recreates_the_drivers_limiter(ray_local):
    """The limiter dies with its owner, the driver: a replica still running then gets no slot (no call leaves)
    rather than starting a limiter of its own and carrying on."""
    ray = ray_local
    from nphe4v.core.ratelimit import NAMESPACE, get_or_create_limiter_actor, limiter_actor_name

    settings = LimitSettings(max_concurrency=2)
    key = f"owner-test-{time.time_ns()}"
    limiter = get_or_create_limiter_actor(key, settings)

    @ray.remote(num_cpus=0)
    class Caller:
        def __init__(self) -> None:
            from nphe4v.core.ratelimit import SharedLimiter

            self.lim = SharedLimiter(key, settings)

        async def call(self) -> str:
            try:
                async with self.lim.slot():
                    return "granted"
            except RuntimeError as e:
                return str(e)

    caller = Caller.remote()
    assert ray.get(caller.call.remote(), timeout=60) == "granted"
    ray.kill(limiter, no_restart=True)  # as when the driver that owns it dies
    said = ray.get(caller.call.remote(), timeout=60)
    assert "is gone" in said and "no further call is made" in said, said
    with pytest.raises(ValueError):  # and nobody re-created it under its name
        ray.get_actor(limiter_actor_name(key), namespace=NAMESPACE)
    ray.kill(caller)
