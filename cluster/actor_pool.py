"""A pool of Ray actors serving batches: bounded in-flight batches per actor, retries, results by callback.

    pool = ActorPool(submit=lambda actor, payload: actor.work.remote(payload), on_result=write, on_fail=record,
                     max_inflight=4, max_attempts=3)
    pool.add_member(actor)            # any number, at any time (a replica that finished loading)
    pool.put(Batch(payload, size))    # queued in the driver: payloads, never futures
    pool.dispatch()                   # submits while some member is below `max_inflight`
    ready, _ = ray.wait(pool.refs())  # the driver's loop waits on these beside its other refs
    pool.handle(ready[0])             # -> on_result(batch, value) | a retry | on_fail(batch, message)

The same contract as a Ray Data LLM stage (a fixed actor class, `concurrency` actors, at most
`max_tasks_in_flight_per_actor` batches each), without Ray Data: the driver owns the queue, so it can feed
batches as they are produced (the judge streams samples as they are scored) and decide what a failure means.

Backpressure: at most `max_inflight` x members object refs are ever outstanding; everything else waits in
`queue` as plain payloads. A batch whose actor died or raised (`RayActorError`, `RayTaskError`) goes back to
the queue until it has had `max_attempts` tries, then `on_fail` records it (infra error, never an answer).
Every failure is a try, a call
refused while its actor restarts included (Ray cannot say whether a batch in flight on a dying actor ran,
nor tell it from a refused one). After a failure the member gets no batch for a pause doubling from
`pause_s` (at most 8x): otherwise the restarting actor, having nothing in flight, would be the least loaded
and burn every retry of the batch at once while the other members could serve it.
A member that failed `max_attempts` batches in a row is reported to `on_crash_loop` (the owner may replace
it); without that callback it stays (Ray restarts crashed actors up to their `max_restarts`).

The queue may be given (`queue=`): anything with `popleft`, `append` and truthiness, e.g. the scheduler's lazy
`Backlog` over a model's plan, so the pool takes batches from it one at a time and never holds a whole plan
(a retried batch is `append`ed: after the source's batches). `queued_requests` / `inflight_requests` count
the requests (batch sizes) queued and in flight, kept in step here (`queued_requests=` seeds the count of a
given queue); `wake_in()` tells a driver waiting on `refs()` when a paused member may take a batch again.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import ray
from ray.exceptions import RayActorError, RayTaskError


@dataclass
class Batch:
    payload: Any  # whatever `submit` and the callbacks understand
    size: int = 1  # requests in the batch (for work estimates and counts)
    attempt: int = 1


class Queue(Protocol):
    """What the pool needs of its queue (a deque, or a lazy source such as `cluster.scheduler.Backlog`)."""

    def popleft(self) -> Batch: ...

    def append(self, batch: Batch) -> None: ...

    def __bool__(self) -> bool: ...

    def __len__(self) -> int: ...


@dataclass(eq=False)
class Member:
    actor: Any
    inflight: int = 0
    consecutive_failures: int = 0
    removed: bool = False
    paused_until: float = 0.0  # time.monotonic() before which it gets no batch (it just failed one)
    forgiven: bool = False  # ended by its owner on purpose: its failures are not the batches' tries


def first_line(e: BaseException) -> str:
    """An exception as one short line (Ray task errors carry whole remote tracebacks: the remote exception,
    their cause, is what is named, not the `ray::Actor.method()` header line)."""
    cause = getattr(e, "cause", None) if isinstance(e, RayTaskError) else None
    if isinstance(cause, BaseException):
        e = cause
    s = str(e).strip()
    return f"{type(e).__name__}: {s.splitlines()[0] if s else ''}"[:300]


class ActorPool:
    def __init__(self, submit: Callable[[Any, Any], Any], on_result: Callable[[Batch, Any], None],
                 on_fail: Callable[[Batch, str], None], *, max_inflight: int = 4, max_attempts: int = 3,
                 on_crash_loop: Callable[[Member, str], None] | None = None, pause_s: float = 0.5,
                 queue: Queue | None = None, queued_requests: int = 0) -> None:
        self.submit, self.on_result, self.on_fail, self.on_crash_loop = submit, on_result, on_fail, on_crash_loop
        self.max_inflight, self.max_attempts, self.pause_s = max_inflight, max_attempts, pause_s
        self.members: list[Member] = []
        self.queue: Queue = deque() if queue is None else queue
        self.inflight: dict[Any, tuple[Member, Batch]] = {}
        self.retries = 0  # batches resubmitted after a failure
        self.queued_requests = queued_requests  # sizes of the queued batches (a given queue's, as seeded)
        self.inflight_requests = 0  # sizes of the batches in flight

    # ---- members -------------------------------------------------------------------------------------------
    def add_member(self, actor: Any) -> Member:
        m = Member(actor)
        self.members.append(m)
        return m

    def remove_member(self, member: Member, *, forgive: bool = False) -> None:
        """No new batch goes to it; its batches in flight still resolve (and are retried if it was killed).
        `forgive`: the owner ends it for its own reasons (a resize), so a batch it then fails is requeued
        without counting a try."""
        member.removed = True
        member.forgiven = member.forgiven or forgive
        if member in self.members:
            self.members.remove(member)

    # ---- batches -------------------------------------------------------------------------------------------
    def put(self, batch: Batch) -> None:
        self.queue.append(batch)
        self.queued_requests += batch.size

    def capacity(self) -> int:
        """Batches the pool may have in flight at once."""
        return self.max_inflight * len(self.members)

    def dispatch(self) -> int:
        """Submit queued batches to the least-loaded members below the bound; returns how many left."""
        sent = 0
        now = time.monotonic()
        ready = [m for m in self.members if m.paused_until <= now]
        while self.queue and ready:
            m = min(ready, key=lambda x: x.inflight)
            if m.inflight >= self.max_inflight:
                break
            batch = self.queue.popleft()
            self.queued_requests -= batch.size
            ref = self.submit(m.actor, batch.payload)
            m.inflight += 1
            self.inflight_requests += batch.size
            self.inflight[ref] = (m, batch)
            sent += 1
        return sent

    def wake_in(self) -> float | None:
        """Seconds until a paused member may take a queued batch (None: none is waiting on a pause)."""
        if not self.queue:
            return None
        now = time.monotonic()
        if any(m.paused_until <= now and m.inflight < self.max_inflight for m in self.members):
            return None  # `dispatch` can send now, or only a result frees room
        paused = [m.paused_until - now for m in self.members if m.paused_until > now]
        return min(paused) if paused else None

    def refs(self) -> list[Any]:
        return list(self.inflight)

    def owns(self, ref: Any) -> bool:
        return ref in self.inflight

    def handle(self, ref: Any) -> None:
        """A ref of `refs()` is ready: its result goes to `on_result`, or the batch is retried or failed."""
        member, batch = self.inflight.pop(ref)
        member.inflight -= 1
        self.inflight_requests -= batch.size
        try:
            value = ray.get(ref)
        except (RayActorError, RayTaskError) as e:
            self._failed(member, batch, e)
            return
        member.consecutive_failures = 0
        self.on_result(batch, value)

    def _failed(self, member: Member, batch: Batch, e: BaseException) -> None:
        if member.forgiven:  # its owner killed it (a resize): the batch did nothing wrong
            self.retries += 1
            self.put(Batch(batch.payload, batch.size, batch.attempt))
            return
        member.consecutive_failures += 1
        pause = self.pause_s * 2 ** min(member.consecutive_failures - 1, 3)
        member.paused_until = max(member.paused_until, time.monotonic() + pause)
        if batch.attempt < self.max_attempts:
            self.retries += 1
            self.put(Batch(batch.payload, batch.size, batch.attempt + 1))
        else:
            self.on_fail(batch, first_line(e))
        if (self.on_crash_loop is not None and not member.removed
                and member.consecutive_failures >= self.max_attempts):
            self.on_crash_loop(member, first_line(e))

    def fail_queued(self, message: str) -> None:
        """Record every queued batch as failed (the pool can no longer serve them)."""
        while self.queue:
            batch = self.queue.popleft()
            self.queued_requests -= batch.size
            self.on_fail(batch, message)

    def idle(self) -> bool:
        return not self.queue and not self.inflight
