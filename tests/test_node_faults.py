"""Faults that must end on their own: a dead holder's limiter slots are reclaimed within the lease TTL, a model
whose replicas keep dying gives up after a bounded number of failures whatever its replica count (naming the
last cause: a key the driver has and the nodes do not), on a real local Ray."""

from __future__ import annotations

import asyncio
import json
import math
import re
import signal
import time
from pathlib import Path

import polars as pl
import psutil
import pytest
from fake_provider import FakeProvider

from cluster.config import DatasetSpec, ModelSpec, RunConfig
from cluster.run import execute
from evalcore.dataset import load_dataset
from evalcore.ratelimit import Limiter, LimitSettings, _State
from evalcore.records import KEY_COLUMNS, read_samples
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


def test_a_forgotten_holder_frees_its_slots_at_once_and_its_waiting_calls_get_none():
    """The driver ended a replica (`Limiter.forget`): the slots it held go to the others now, not a lease TTL
    later, and the calls it left waiting (Ray does not cancel them with their caller) are refused rather than
    granted to nobody, while another holder's waiting call is granted."""
    async def go() -> None:
        lim = Limiter(LimitSettings(max_concurrency=2, lease_ttl_s=3600.0), expire_leases=True)
        assert await lim.acquire("r1-a", "actor:r1") and await lim.acquire("r1-b", "actor:r1")
        r1_waits = asyncio.ensure_future(lim.acquire("r1-c", "actor:r1"))
        r2_waits = asyncio.ensure_future(lim.acquire("r2-a", "actor:r2"))
        while lim.stats()["waiting"] < 2:
            await asyncio.sleep(0)  # until both are parked inside the limiter
        assert lim.forget("actor:r1") == 2
        assert await r1_waits is False and await r2_waits is True
        st = lim.stats()
        assert st["in_flight"] == 1 and st["forgotten"] == 2 and st["reclaimed"] == 0
        assert await lim.acquire("r1-d", "actor:r1") is False  # never again: the replica was ended for good
        assert await lim.acquire("r3-a", "actor:r3") is True

    asyncio.run(go())


@pytest.mark.ray
def test_dead_holders_slot_is_reclaimed_within_the_ttl_and_a_live_one_is_kept(ray_local):
    ray = ray_local
    from evalcore.ratelimit import NAMESPACE, get_or_create_limiter_actor, limiter_actor_name

    ttl = 1.0
    settings = LimitSettings(max_concurrency=1, lease_ttl_s=ttl)
    key = f"lease-test-{time.time_ns()}"
    limiter = get_or_create_limiter_actor(key, settings)  # the driver owns it, as a run's does

    @ray.remote(num_cpus=0)
    class Holder:
        """Takes the key's one slot through the shared client and keeps it until killed."""

        def __init__(self) -> None:
            from evalcore.ratelimit import SharedLimiter

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


def _caller(ray):
    """A replica's view of a key's shared limiter: `call` takes a slot and gives it back ("granted", or the
    error's text); `hold` keeps one until `let_go`."""

    @ray.remote(num_cpus=0)
    class Caller:
        def __init__(self, key: str, settings: LimitSettings) -> None:
            from evalcore.ratelimit import SharedLimiter

            self.lim = SharedLimiter(key, settings)
            self.holding = asyncio.Event()
            self.release = asyncio.Event()

        async def call(self) -> str:
            try:
                async with self.lim.slot():
                    return "granted"
            except RuntimeError as e:
                return str(e)

        async def hold(self) -> str:
            async with self.lim.slot():
                self.holding.set()
                await self.release.wait()
            return "held"

        async def wait_holding(self) -> None:
            await self.holding.wait()

        def let_go(self) -> None:
            self.release.set()

    return Caller


@pytest.mark.ray
def test_a_replica_never_recreates_the_drivers_limiter(ray_local):
    """The limiter dies with its owner, the driver: a replica still running then gets no slot (no call leaves)
    rather than starting a limiter of its own and carrying on."""
    ray = ray_local
    from evalcore.ratelimit import NAMESPACE, get_or_create_limiter_actor, limiter_actor_name

    settings = LimitSettings(max_concurrency=2)
    key = f"owner-test-{time.time_ns()}"
    limiter = get_or_create_limiter_actor(key, settings)
    caller = _caller(ray).remote(key, settings)
    assert ray.get(caller.call.remote(), timeout=60) == "granted"
    ray.kill(limiter, no_restart=True)  # as when the driver that owns it dies
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # `kill` only asks: until a call to it fails, it may still answer
        try:
            ray.get(limiter.stats.remote(), timeout=60)
        except ray.exceptions.RayActorError:
            break
    else:
        raise AssertionError("the killed limiter still answers")
    said = ray.get(caller.call.remote(), timeout=60)
    assert "is gone" in said and "no further call is made" in said, said
    with pytest.raises(ValueError):  # and nobody re-created it under its name
        ray.get_actor(limiter_actor_name(key), namespace=NAMESPACE)
    ray.kill(caller)


@pytest.mark.ray
def test_a_caller_waiting_when_the_limiter_restarts_gets_its_slot(ray_local):
    """The limiter crashes and restarts (its node died; the driver lives) while a replica waits in `acquire`:
    the waiting call is sent again to the restarted limiter and is granted, instead of failing as if the driver
    were gone (which made every sample of the model an infra_error when a worker node holding the limiter died)."""
    ray = ray_local
    from evalcore.ratelimit import get_or_create_limiter_actor

    settings = LimitSettings(max_concurrency=1)
    key = f"restart-test-{time.time_ns()}"
    limiter = get_or_create_limiter_actor(key, settings)
    holder, waiter = _caller(ray).remote(key, settings), _caller(ray).remote(key, settings)
    held = holder.hold.remote()
    ray.get(holder.wait_holding.remote(), timeout=60)  # the one slot is taken: the waiter's acquire is in flight
    waiting = waiter.call.remote()
    deadline = time.monotonic() + 60
    while ray.get(limiter.stats.remote())["waiting"] < 1 and time.monotonic() < deadline:
        pass  # until the waiter's acquire is in flight inside the limiter
    assert ray.get(limiter.stats.remote())["waiting"] == 1
    # the limiter's process dies as it does with its node (SIGKILL; Ray restarts it with fresh state, so the
    # holder's lease is gone): the call in flight fails inside Ray and must be sent again, not given up
    psutil.Process(ray.get(limiter.pid.remote())).send_signal(signal.SIGKILL)
    assert ray.get(waiting, timeout=120) == "granted"
    ray.get(holder.let_go.remote())
    assert ray.get(held, timeout=60) == "held"
    for a in (holder, waiter):
        ray.kill(a)


# --- a cluster that shrinks, a run that cannot move ------------------------------------------------------------

class _View:
    """What the head watch tells the scheduler (cluster.head_watch.HeadWatch): set by the test."""

    def __init__(self, cpus: float) -> None:
        self.reachable = True
        self.resources: dict[str, float] | None = {"CPU": cpus, "GPU": 0.0}


def _echo_job(ray, name: str, cpus: float, batches: int, delay_s: float, results: list, fails: list,
              answered: bool = False):
    from cluster.scheduler import Batch, Job

    @ray.remote(max_restarts=0)
    class Echo:
        def ready(self) -> bool:
            return True

        def generate(self, x: int) -> int:
            time.sleep(delay_s)
            return x

    @ray.remote(num_cpus=0.25)
    def score(x: int) -> int:  # what a score task asks
        return x

    answers: dict = {}

    def submit(actor, payload):
        answer = actor.generate.remote(payload)
        ref = score.remote(answer)
        answers[ref] = answer
        return ref

    def count_answered(refs: list) -> int:
        got = [answers[r] for r in refs if r in answers]
        return len(ray.wait(got, num_returns=len(got), timeout=0)[0]) if got else 0

    return Job(name=name, gpus=0.0, replicas=1, load_s=0.0, request_s=1.0,
               batches=[Batch(i, 1) for i in range(batches)],
               start=lambda i, c: (Echo.options(num_cpus=c).remote(), {}), submit=submit,
               finish=lambda b, r: results.append((b.payload, b.attempt, r)),
               fail=lambda b, m: fails.append((b.payload, m)), release=lambda a, p: ray.kill(a),
               cpus=cpus, answered=count_answered if answered else None)


@pytest.mark.ray
def test_lost_cpus_shrink_the_grants_and_a_resized_replica_costs_no_try(ray_local):
    """The issue's hang, by its cause: a replica granted CPUs for the larger cluster. When the live cluster
    shrinks, the budget is computed again and a replica above its new grant is started again at that size;
    its batches in flight are requeued without counting a try (max_attempts 1: a counted try would fail them)."""
    from cluster.scheduler import Scheduler

    ray = ray_local
    results: list = []
    fails: list = []
    job = _echo_job(ray, "api", 1.5, batches=8, delay_s=0.3, results=results, fails=fails)
    job.max_attempts = 1
    view = _View(2.0)
    s = Scheduler([job], total_gpus=0, total_cpus=2.0, cluster=view)
    s._follow["CPU"] = True  # as when the totals come from the live cluster
    assert s.reserve_cpus == 1.0 and job.cpu_grant == 1.0
    shrunk = []

    def tick() -> None:  # a node is lost once the first answer is written, while batches are in flight
        if results and not shrunk and job.inflight_requests:
            view.resources = {"CPU": 1.0, "GPU": 0.0}
            shrunk.append(time.monotonic())

    s.tick = tick
    s.run()
    assert shrunk and not fails, fails
    assert sorted(p for p, _, _ in results) == list(range(8)) and {a for _, a, _ in results} == {1}
    assert job.cpu_grant == 0.5 and s.reserve_cpus == 0.5  # 1 CPU: half kept for the score tasks
    assert any(e == "resize replica 0: 1 -> 0.5 CPUs" for _, _, e in s.events), s.events
    assert job.started == 2 and job.replica_failures == 0 and job.retries >= 1, (job.started, job.retries)


@pytest.mark.ray
def test_a_run_without_progress_stops_in_one_line_naming_what_waits_for_what(ray_local):
    """A replica holding every CPU (no reserve), so its batches' score tasks can never run: after
    `stall_timeout_s` the loop stops with one line saying so, and frees the replica."""
    from cluster.interrupts import Stopped
    from cluster.scheduler import Scheduler

    ray = ray_local
    results: list = []
    job = _echo_job(ray, "hog", 2.0, batches=3, delay_s=0.0, results=results, fails=[], answered=True)
    s = Scheduler([job], total_gpus=0, total_cpus=2.0, reserve_cpus=0.0, stall_timeout_s=3.0)
    t0 = time.monotonic()
    with pytest.raises(Stopped) as e:
        s.run()
    line = e.value.reason
    assert time.monotonic() - t0 < 60 and not results
    assert "\n" not in line and re.match(r"no progress for \d+ s: ", line), line
    assert "answered batch(es) wait for a score task (0.25 CPU each; 0 of 2 CPUs free)" in line, line
    assert "replicas of hog hold 2 CPUs on node " in line, line
    assert not job.live  # the interrupt path ended the replica


def test_an_interrupted_manifest_says_interrupted_for_a_model_cut_short(tmp_path):
    from cluster.run import _save_interrupted
    from evalcore.records import SampleSink

    out = tmp_path / "run"
    out.mkdir()
    manifest: dict = {"run_id": "r", "status": "running"}
    stats = [{"model": "cut", "planned": 60, "skipped": 0, "written": 0, "status": "complete"},
             {"model": "done", "planned": 60, "skipped": 20, "written": 40, "status": "complete"},
             {"model": "broken", "planned": 60, "skipped": 0, "written": 3, "status": "infra_error"}]
    kept = _save_interrupted(out, manifest, SampleSink(out), stats, time.monotonic(), "no progress for 600 s: x")
    saved = json.loads((out / "manifest.json").read_text())
    assert kept == 0 and saved["status"] == "interrupted" and saved["stopped_because"].startswith("no progress")
    assert [m["status"] for m in saved["models"]] == ["interrupted", "complete", "infra_error"]


# --- the head: a wrong address, a lost head -------------------------------------------------------------------

def test_a_wrong_ray_address_fails_in_seconds_in_one_line(capfd):
    """Nothing listening, a server that is not a Ray GCS, an unknown host: one line each, well within 60 s
    (Ray's own ray.init retried for 829 s, printing 62 lines). `check_ray_address` is what a run's preflight
    and `init_ray` ask before ray.init (called directly: this session's Ray may already be up)."""
    import socket
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from cluster.config import ConfigError
    from cluster.run import check_ray_address

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]  # a port nobody listens on once this block ends
    http = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)  # a dashboard-like HTTP port
    threading.Thread(target=http.serve_forever, daemon=True).start()
    try:
        for address, why in ((f"127.0.0.1:{closed}", "nothing answers there"),
                             (f"127.0.0.1:{http.server_address[1]}", "no Ray GCS answers there"),
                             ("no-such-host.invalid:6379", "host 'no-such-host.invalid' not found")):
            t0 = time.monotonic()
            with pytest.raises(ConfigError) as e:
                check_ray_address(address)
            took = time.monotonic() - t0
            line = str(e.value)
            assert took < 60 and "\n" not in line, (took, line)
            assert line.startswith(f"field ray.address (or RAY_ADDRESS): no Ray cluster at {address}: {why}"), line
    finally:
        http.shutdown()
    out, err = capfd.readouterr()
    assert "gcs_client" not in err and "rpc_client" not in err, err  # none of Ray's retry warnings


def test_the_head_watch_declares_a_silent_gcs_lost_and_a_live_one_never():
    import socket

    from cluster.head_watch import HeadWatch

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    address = f"127.0.0.1:{server.getsockname()[1]}"
    lost: list[tuple[float, str]] = []
    w = HeadWatch(address, lost_after_s=0.5, every_s=0.1, on_lost=lambda why: lost.append((time.monotonic(), why)),
                  ray_up=lambda: True).start()
    try:
        deadline = time.monotonic() + 1.5  # 3 lost_after_s with the head up: an event that must not happen
        while time.monotonic() < deadline and not lost:
            time.sleep(0.05)
        assert not lost and w.reachable
        server.close()  # the head dies: its port refuses
        t0 = time.monotonic()
        deadline = t0 + 30
        while time.monotonic() < deadline and not lost:
            time.sleep(0.05)
        assert lost and not w.reachable and w.lost
        assert 0.5 <= lost[0][0] - t0 <= 0.5 + 5.0, lost[0][0] - t0  # lost_after_s, plus slack for the machine
        assert lost[0][1].startswith(f"the Ray head is lost (its GCS at {address} has not answered for ")
    finally:
        w.close()
        server.close()


def test_a_main_thread_deaf_to_the_stop_is_left_with_the_projects_line():
    """When the head dies while the driver's main thread is inside a GCS call (deaf to signals), the watch
    itself ends the process before Ray's reconnect window closes (here: the stop is ignored, the last resort
    is recorded instead of run)."""
    import socket

    from cluster.head_watch import HeadWatch

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    address = f"127.0.0.1:{server.getsockname()[1]}"
    server.close()  # the head is already gone
    said: list[tuple[str, str]] = []
    w = HeadWatch(address, lost_after_s=0.3, every_s=0.1, ray_up=lambda: True, stuck_after_s=0.5,
                  on_lost=lambda why: said.append(("stop", why)), on_stuck=lambda why: said.append(("leave", why)))
    w.start()
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(said) < 2:
            time.sleep(0.05)
        assert [k for k, _ in said] == ["stop", "leave"] and said[0][1] == said[1][1], said
    finally:
        w.close()
    # a run that leaves its loop closes the watch: no last resort then
    said.clear()
    w = HeadWatch(address, lost_after_s=0.3, every_s=0.1, ray_up=lambda: True, stuck_after_s=2.0,
                  on_lost=lambda why: (said.append(("stop", why)), w.close()),
                  on_stuck=lambda why: said.append(("leave", why))).start()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not said:
        time.sleep(0.05)
    w._threads[0].join(10)
    assert [k for k, _ in said] == ["stop"], said
