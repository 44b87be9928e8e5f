"""BENCHMARK TOOL ONLY: a model backend that computes nothing and only takes time.

It exists for `bench/bench_schedule.py`, which measures the run scheduler (`cluster.scheduler`) on a CPU machine
with logical GPUs: a replica sleeps its load time, then serves requests at the throughput `cluster.costs`
estimates for the model (GPU replicas: one request per `request_s`, batches queue behind each other; API
replicas: the provider's shared rate limit). Every time is multiplied by `time_scale`.

It answers nothing (empty text), so it is never a default and is refused unless the options say
`benchmark_only: true`; run configs cannot name it at all (`ModelSpec.backend` does not list it).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from evalcore.schema import ModelRequest, ModelResponse

OPT_IN = "benchmark_only"


def check_opt_in(name: str, options: dict[str, Any]) -> None:
    if options.get(OPT_IN) is not True:
        raise ValueError(f"model {name!r}: the simulated backend answers nothing and exists for "
                         f"bench/bench_schedule.py only; set options.{OPT_IN}: true to use it")


class Clock:
    """One server: requests are served one after another at `request_s` each (a replica's throughput, or a
    provider's rate limit); a batch waits behind the batches admitted before it."""

    def __init__(self, request_s: float) -> None:
        self.request_s = request_s
        self.busy_until = 0.0

    def reserve(self, n: int) -> float:
        """Admit n requests; returns the seconds until the last of them is served."""
        now = time.monotonic()
        self.busy_until = max(now, self.busy_until) + n * self.request_s
        return self.busy_until - now


class SimulatedBackend:
    """The ModelBackend contract over real requests (one empty answer per request, after the simulated time)."""

    needs_reference = False

    def __init__(self, name: str, options: dict[str, Any]) -> None:
        check_opt_in(name, options)
        scale = float(options.get("time_scale", 1.0))
        self.load_s = float(options.get("load_s", 0.0)) * scale
        self.clock = Clock(float(options.get("request_s", 0.0)) * scale)
        self.latency_s = float(options.get("latency_s", 0.0)) * scale
        self._loaded = False

    async def load(self) -> None:
        if not self._loaded:
            await asyncio.sleep(self.load_s)
            self._loaded = True

    async def serve(self, n: int, provider: Any = None) -> int:
        """Take the time of n requests: this replica's own throughput, or the shared provider's rate limit."""
        await self.load()
        wait = await provider.reserve.remote(n) if provider is not None else self.clock.reserve(n)
        await asyncio.sleep(wait + self.latency_s)
        return n

    async def generate(self, requests: list[ModelRequest]) -> list[ModelResponse]:
        await self.serve(len(requests))
        return [ModelResponse(text="", status="ok") for _ in requests]


class SimProvider:
    """A provider's shared rate limit in the simulation (one Ray actor per provider key)."""

    def __init__(self, request_s: float) -> None:
        self.clock = Clock(request_s)

    def reserve(self, n: int) -> float:
        return self.clock.reserve(n)


class SimReplica:
    """One simulated replica as a Ray actor (bench/bench_schedule.py wraps it with ray.remote)."""

    def __init__(self, name: str, options: dict[str, Any], provider: Any = None) -> None:
        self.backend = SimulatedBackend(name, options)
        self.provider = provider

    async def ready(self) -> bool:
        await self.backend.load()
        return True

    async def run(self, n: int) -> int:
        return await self.backend.serve(n, self.provider)


class SimHost:
    """Many simulated replicas in one Ray actor. A real replica is a process of its own, whose start-up (about
    a second, not scaled) would swamp loads scaled to milliseconds; the bench hosts its replicas here instead,
    each still holding its own real placement group, passed as `placed` so the load starts once it is placed."""

    def __init__(self) -> None:
        self.replicas: dict[str, tuple[SimulatedBackend, Any]] = {}

    async def ready(self, rid: str, name: str, options: dict[str, Any], provider: Any = None,
                    placed: Any = None) -> bool:
        backend = SimulatedBackend(name, options)
        self.replicas[rid] = (backend, provider)
        await backend.load()
        return True

    async def run(self, rid: str, n: int) -> int:
        backend, provider = self.replicas[rid]
        return await backend.serve(n, provider)

    def drop(self, rid: str) -> None:
        self.replicas.pop(rid, None)
