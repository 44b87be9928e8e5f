"""One rate limiter per provider key, shared by every caller that uses the key.

Interface (both versions):

    async with limiter.slot():              # waits for: a free slot, a request token, the end of any pause
        ...call the API...
    await limiter.report_rate_limited(ra)   # on a 429 (ra = Retry-After seconds or None), inside the slot

* bounded concurrency, lowered on 429s (multiplicative decrease, at most once per pause) and raised again by
  one after `increase_every` successes (additive increase), never above `max_concurrency`;
* an optional token bucket of `rpm` requests per minute (burst: min(rpm, max_concurrency));
* a 429 from any caller pauses the whole key: until Retry-After (plus up to 10 % jitter, capped at
  `max_pause_s`), or without one an exponential backoff with jitter from a seeded rng.

`Limiter` is the in-process version (tests, one process). `SharedLimiter` talks to one named Ray actor per key
(`nphe4v-limiter/<key id>` in namespace `nphe4v-limits`), so every model replica and judge actor on the cluster
sees every 429.

Slots held through the actor are leases tied to the holder's liveness: a lease expires `lease_ttl_s` (15 s)
after it was granted or last renewed, and every `SharedLimiter` renews the leases it holds every
`lease_ttl_s / 5` seconds from a heartbeat thread. A holder that dies (its process, or its node) stops
renewing, so its slots are reclaimed at most `lease_ttl_s` + 1 s (a waiter's re-check) after its death,
instead of blocking the key. Faster where the driver knows: when it ends a replica it calls `forget_holder`,
which frees that holder's slots at once and refuses the calls it left waiting (Ray does not cancel an actor's
calls when their caller dies; each, granted later, would hold a slot a whole TTL). The in-process `Limiter`
never expires leases: its holders share its process.

The limiter actor is owned by the driver (created from it before any replica, on its node) and dies with it. A replica
never re-creates it: with the driver gone, no further slot is granted, so no provider call leaves (a
limiter that restarts after its node died is waited for, not replaced).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import random
import threading
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import asdict, dataclass
from typing import Any, Protocol

log = logging.getLogger(__name__)

NAMESPACE = "nphe4v-limits"
_POLL_S = 1.0  # longest sleep between re-checks (robust to a missed wake-up)


@dataclass(frozen=True)
class LimitSettings:
    max_concurrency: int = 8
    rpm: float | None = None
    min_concurrency: int = 1
    decrease_factor: float = 0.5
    increase_every: int = 10
    backoff_base_s: float = 1.0
    backoff_max_s: float = 60.0
    max_pause_s: float = 300.0
    lease_ttl_s: float = 15.0  # a shared lease not renewed for this long is reclaimed (holder dead)
    seed: int = 0


class RateLimiter(Protocol):
    def slot(self) -> contextlib.AbstractAsyncContextManager[None]: ...

    async def report_rate_limited(self, retry_after_s: float | None = None) -> float: ...


class _State:
    """The limiter's arithmetic; time is passed in, so it is a plain, testable state machine."""

    def __init__(self, s: LimitSettings, now: float, lease_ttl_s: float | None = None) -> None:
        self.s = s
        self.ttl = math.inf if lease_ttl_s is None else lease_ttl_s  # inf: leases never expire
        self.limit = s.max_concurrency
        self.leases: dict[str, float] = {}  # lease id -> expiry (monotonic)
        self.paused_until = 0.0
        self.cut_blocked_until = 0.0
        self.capacity = float(max(1.0, min(s.rpm, s.max_concurrency))) if s.rpm else 0.0
        self.tokens = self.capacity
        self.refilled_at = now
        self.streak_429 = 0
        self.successes = 0
        self.rng = random.Random(s.seed)
        self.stats = {
            "granted": 0,
            "rate_limited": 0,
            "max_in_flight": 0,
            "paused_s": 0.0,
            "min_limit": self.limit,
            "reclaimed": 0,
        }
        self.sources: dict[str, int] = {}

    def try_acquire(self, lease: str, now: float) -> float:
        """0.0 when the lease is granted, else how long to wait at most before trying again."""
        expired = [k for k, t in self.leases.items() if t <= now]
        for k in expired:
            log.warning("limiter: lease %s not renewed for %gs (its holder died); slot reclaimed", k, self.ttl)
            del self.leases[k]
            self.stats["reclaimed"] += 1
        if now < self.paused_until:
            return self.paused_until - now
        if len(self.leases) >= self.limit:
            return math.inf
        if self.s.rpm:
            self.tokens = min(self.capacity, self.tokens + (now - self.refilled_at) * self.s.rpm / 60.0)
            self.refilled_at = now
            if self.tokens < 1.0:
                return (1.0 - self.tokens) * 60.0 / self.s.rpm
            self.tokens -= 1.0
        self.leases[lease] = now + self.ttl
        self.stats["granted"] += 1
        self.stats["max_in_flight"] = max(self.stats["max_in_flight"], len(self.leases))
        return 0.0

    def renew(self, leases: list[str], now: float) -> int:
        """Extend the leases still held (a holder's heartbeat); returns how many were."""
        held = [k for k in leases if k in self.leases]
        for k in held:
            self.leases[k] = now + self.ttl
        return len(held)

    def release(self, lease: str, ok: bool) -> bool:
        if self.leases.pop(lease, None) is None:
            return False
        if ok:
            self.streak_429 = 0
            self.successes += 1
            if self.successes >= self.s.increase_every and self.limit < self.s.max_concurrency:
                self.limit += 1
                self.successes = 0
        return True

    def rate_limited(self, retry_after_s: float | None, now: float, source: str) -> float:
        self.stats["rate_limited"] += 1
        self.sources[source] = self.sources.get(source, 0) + 1
        self.streak_429 += 1
        self.successes = 0
        if retry_after_s is not None and retry_after_s >= 0:
            pause = min(retry_after_s * (1.0 + 0.1 * self.rng.random()), self.s.max_pause_s)
            pause = max(pause, min(retry_after_s, self.s.max_pause_s))
        else:
            d = min(self.s.backoff_base_s * 2 ** (self.streak_429 - 1), self.s.backoff_max_s)
            pause = d / 2 + self.rng.uniform(0, d / 2)
        until = now + pause
        if until > self.paused_until:
            self.stats["paused_s"] += until - max(self.paused_until, now)
            self.paused_until = until
        if now >= self.cut_blocked_until:  # one decrease per burst of 429s, not one per 429
            self.limit = max(self.s.min_concurrency, int(self.limit * self.s.decrease_factor))
            self.stats["min_limit"] = min(self.stats["min_limit"], self.limit)
            self.cut_blocked_until = self.paused_until
        return self.paused_until - now

    def snapshot(self, now: float) -> dict[str, Any]:
        return {
            **self.stats,
            "limit": self.limit,
            "in_flight": len(self.leases),
            "paused_for_s": max(0.0, self.paused_until - now),
            "sources": dict(self.sources),
        }


class Limiter:
    """In-process limiter: usable from any event loop (and thread) of this process."""

    def __init__(self, settings: LimitSettings | None = None, name: str = "local",
                 expire_leases: bool = False) -> None:
        """`expire_leases`: leases lapse after `settings.lease_ttl_s` unless renewed (the shared actor's, whose
        holders live in other processes); in-process holders cannot die apart from the limiter."""
        self.settings = settings or LimitSettings()
        self.name = name
        self._lock = threading.Lock()
        ttl = self.settings.lease_ttl_s if expire_leases else None
        self._state = _State(self.settings, time.monotonic(), ttl)
        self._waiters: list[asyncio.Future[None]] = []
        self._abandoned: set[str] = set()
        # who holds each granted lease, and the holders known to be gone (`forget`): a replica the driver ended
        # may still have calls waiting in `acquire` here (Ray does not cancel an actor's calls when their caller
        # dies); granted, each would hold a slot for a whole lease TTL with nobody using it
        self._holder_of: dict[str, str] = {}
        self._forgotten: set[str] = set()

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        lease = uuid.uuid4().hex
        await self.acquire(lease)
        ok = False
        try:
            yield
            ok = True
        finally:
            self.release(lease, ok)

    async def acquire(self, lease: str, holder: str = "") -> bool:
        """Wait until `lease` holds a slot; False if it was abandoned (released) while waiting, or its
        `holder` was forgotten (`forget`)."""
        loop = asyncio.get_running_loop()
        while True:
            with self._lock:
                if lease in self._abandoned or (holder and holder in self._forgotten):
                    self._abandoned.discard(lease)
                    return False
                wait = self._state.try_acquire(lease, time.monotonic())
                if wait == 0.0:
                    if holder:
                        self._holder_of[lease] = holder
                    return True
                fut: asyncio.Future[None] = loop.create_future()
                self._waiters.append(fut)
            try:
                await asyncio.wait([fut], timeout=min(wait, _POLL_S))
            finally:
                with self._lock:
                    if fut in self._waiters:
                        self._waiters.remove(fut)

    def renew(self, leases: list[str]) -> int:
        with self._lock:
            return self._state.renew(leases, time.monotonic())

    def forget(self, holder: str) -> int:
        """`holder` is gone for good (the driver ended that replica): its leases are freed now, and its calls
        still waiting are refused, instead of each slot lapsing a lease TTL later. Returns the leases freed."""
        with self._lock:
            self._forgotten.add(holder)
            if len(self._forgotten) > 10_000:
                self._forgotten.clear()
            mine = [k for k, h in self._holder_of.items() if h == holder]
            for k in mine:
                self._state.release(k, False)
                del self._holder_of[k]
            self._state.stats["forgotten"] = self._state.stats.get("forgotten", 0) + len(mine)
            self._wake()
            return len(mine)

    def release(self, lease: str, ok: bool = True) -> None:
        with self._lock:
            self._holder_of.pop(lease, None)
            if not self._state.release(lease, ok):
                # released before it was granted (the caller gave up waiting): never grant it
                self._abandoned.add(lease)
                if len(self._abandoned) > 10_000:
                    self._abandoned.clear()
            self._wake()

    async def report_rate_limited(self, retry_after_s: float | None = None, source: str = "") -> float:
        """Pause the key (see module doc); returns the seconds until the pause ends."""
        with self._lock:
            pause = self._state.rate_limited(retry_after_s, time.monotonic(), source or f"pid{os.getpid()}")
        log.info(
            "limiter %s: 429 (retry-after %s); paused %.2fs, concurrency %d",
            self.name,
            retry_after_s,
            pause,
            self._state.limit,
        )
        return pause

    def stats(self) -> dict[str, Any]:
        with self._lock:  # `waiting`: callers blocked in `acquire` now (what a stuck run shows)
            return {**self._state.snapshot(time.monotonic()), "waiting": len(self._waiters)}

    def _wake(self) -> None:
        for fut in self._waiters:
            fut.get_loop().call_soon_threadsafe(_resolve, fut)
        self._waiters.clear()


def _resolve(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


_local: dict[str, Limiter] = {}
_local_lock = threading.Lock()


def local_limiter(key: str, settings: LimitSettings) -> Limiter:
    """The process-wide in-process limiter of a key (created with `settings` on first use)."""
    with _local_lock:
        if key not in _local:
            _local[key] = Limiter(settings, name=key)
        return _local[key]


# ---------------------------------------------------------------------------------------------- Ray version


def limiter_actor_name(key: str) -> str:
    return f"nphe4v-limiter/{key}"


class _LimiterActor:
    """The shared state of one provider key; every method is short except `acquire`, which waits."""

    def __init__(self, settings: dict[str, Any], name: str) -> None:
        self._lim = Limiter(LimitSettings(**settings), name=name, expire_leases=True)

    async def acquire(self, lease: str, holder: str = "") -> bool:
        return await self._lim.acquire(lease, holder)

    def forget(self, holder: str) -> int:
        return self._lim.forget(holder)

    def renew(self, leases: list[str]) -> int:
        return self._lim.renew(leases)

    def release(self, lease: str, ok: bool) -> None:
        self._lim.release(lease, ok)

    async def report_rate_limited(self, retry_after_s: float | None, source: str) -> float:
        return await self._lim.report_rate_limited(retry_after_s, source)

    def stats(self) -> dict[str, Any]:
        return self._lim.stats()

    def settings(self) -> dict[str, Any]:
        return asdict(self._lim.settings)

    def pid(self) -> int:  # its process, for an operator (or a fault test) that must find it among others
        return os.getpid()


_actor_cls: Any = None
_held: dict[str, Any] = {}


def _remote_cls() -> Any:
    global _actor_cls
    if _actor_cls is None:
        import ray

        # async actor: thousands of callers may wait in `acquire` at once. `max_task_retries=-1`: a call in
        # flight when the limiter's node dies (a replica waiting in `acquire`) is sent again to the restarted
        # limiter instead of failing with ActorDiedError, which a replica must read as "the driver is gone";
        # once the limiter is dead for good (its owner, the driver, died) every call still fails
        _actor_cls = ray.remote(num_cpus=0, max_concurrency=4096, max_restarts=3, max_task_retries=-1)(_LimiterActor)
    return _actor_cls


def get_or_create_limiter_actor(key: str, settings: LimitSettings, detached: bool = False) -> Any:
    """The named limiter actor of `key`, created on first use (`settings` of the first creator win).

    Create it from the driver before the model actors when possible: a non-detached actor lives as long as
    its creator. `SharedLimiter` re-creates it if its creator died anyway.
    """

    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    opts: dict[str, Any] = {"name": limiter_actor_name(key), "namespace": NAMESPACE, "get_if_exists": True}
    if detached:
        opts["lifetime"] = "detached"
    # on the creator's node (the driver's), where it is lost only with the run itself: placed anywhere (it takes
    # no CPU) it may land on a worker node, and losing that node would pause every caller of the key while it
    # restarts. `soft`: a node that cannot host it does not block the run
    opts["scheduling_strategy"] = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=True)
    handle = _remote_cls().options(**opts).remote(asdict(settings), key)
    _held[key] = handle  # a named actor is still garbage-collected once no handle to it exists
    return handle


class SharedLimiter:
    """Client of the per-key limiter actor; the same interface as `Limiter`.

    The leases it holds are renewed by a heartbeat thread (see the module doc), so they end with this process.
    """

    def __init__(self, key: str, settings: LimitSettings | None = None, detached: bool = False) -> None:
        self.key = key
        self.settings = settings or LimitSettings()
        self.detached = detached
        self.source = _whoami()
        self._actor = get_or_create_limiter_actor(key, self.settings, detached)
        self._held: set[str] = set()
        self._held_lock = threading.Lock()
        self._beat: threading.Thread | None = None

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        lease = uuid.uuid4().hex
        try:
            granted = await self._call("acquire", lease, self.source)
        except BaseException:
            # cancelled (or the actor is gone) while waiting: make sure the lease is never held
            self._fire("release", lease, False)
            raise
        if not granted:
            raise RuntimeError("limiter lease abandoned")
        self._hold(lease)
        ok = False
        try:
            yield
            ok = True
        finally:
            with self._held_lock:
                self._held.discard(lease)
            self._fire("release", lease, ok)

    async def report_rate_limited(self, retry_after_s: float | None = None) -> float:
        return await self._call("report_rate_limited", retry_after_s, self.source)

    async def stats(self) -> dict[str, Any]:
        return await self._call("stats")

    def _hold(self, lease: str) -> None:
        with self._held_lock:
            self._held.add(lease)
            if self._beat is None or not self._beat.is_alive():
                self._beat = threading.Thread(target=self._heartbeat, name=f"limiter-heartbeat-{self.key[:8]}",
                                              daemon=True)
                self._beat.start()

    def _heartbeat(self) -> None:
        """Renew the held leases every `lease_ttl_s / 5` s; ends once none is held (the next grant restarts it)."""
        every = max(0.05, self.settings.lease_ttl_s / 5)
        while True:
            time.sleep(every)
            with self._held_lock:
                held = list(self._held)
                if not held:
                    self._beat = None
                    return
            self._fire("renew", held)

    async def _call(self, method: str, *args: Any) -> Any:
        from ray.exceptions import ActorUnavailableError, RayActorError

        for attempt in range(20):
            try:
                return await getattr(self._actor, method).remote(*args)
            except ActorUnavailableError:
                # the limiter is restarting (its node died): it comes back with fresh state; wait for it
                await asyncio.sleep(min(0.1 * 2 ** attempt, 2.0))
            except RayActorError:
                if in_ray_actor():
                    # a replica never re-creates the limiter: it dies with its owner, the driver, and then
                    # no slot may be granted any more (no provider call leaves after the driver's death)
                    raise RuntimeError(f"limiter {self.key[:12]} is gone (the run's driver ended?); "
                                       "no further call is made") from None
                # the driver: the limiter ran out of restarts; start a fresh one (the next 429 restores a pause)
                log.warning("limiter %s: actor lost; re-creating it", self.key)
                self._actor = get_or_create_limiter_actor(self.key, self.settings, self.detached)
        raise RuntimeError(f"limiter {self.key[:12]} unavailable for too long")

    def _fire(self, method: str, *args: Any) -> None:
        with contextlib.suppress(Exception):
            getattr(self._actor, method).remote(*args)


def holder_of(actor: Any) -> str:
    """The holder name a `SharedLimiter` created inside `actor` uses (`_whoami` there)."""
    return f"actor:{actor._actor_id.hex()[:12]}"


def forget_holder(key: str, actor: Any) -> None:
    """Tell `key`'s limiter (if it exists) that `actor` is ended for good: its slots are freed at once and its
    waiting calls refused (`Limiter.forget`). Called by the driver when it ends a replica; fire and forget."""
    import ray

    with contextlib.suppress(Exception):
        limiter = _held.get(key) or ray.get_actor(limiter_actor_name(key), namespace=NAMESPACE)
        limiter.forget.remote(holder_of(actor))


def _whoami() -> str:
    try:
        import ray

        if ray.is_initialized():
            aid = ray.get_runtime_context().get_actor_id()
            if aid:
                return f"actor:{aid[:12]}"
    except Exception:
        pass
    return f"pid:{os.getpid()}"


def in_ray_actor() -> bool:
    try:
        import ray

        return ray.is_initialized() and ray.get_runtime_context().get_actor_id() is not None
    except Exception:
        return False
