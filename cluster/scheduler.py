"""One scheduler for a whole run: every model's replicas on one Ray cluster, and side stages (the judge) beside.

The driver runs one event loop over `ray.wait`. Each model is a `Job`: a queue of batches, the replicas that
serve it, and callbacks that turn a finished batch into written records. Each extra `Stage` (the judge pool)
offers object refs to wait on and is pumped in the same loop, so GraphVerse samples reach the judge as soon
as they are scored and the run ends when the last judgment is written.

GPU placement (why this order): replicas are placement groups of `gpus` whole GPUs. Whenever capacity is
free, the next replica goes to the job that would finish last with what it has (longest processing time
first: a job without a replica counts its load, and any job's first replica comes before anyone's further
one), if another replica shortens it (its remaining time per replica exceeds a replica's load time) and, for
`replicas: auto`, within its share of the remaining GPU work (never all free GPUs). Priority is strict: when
the job first in line does not fit, freed GPUs wait for it instead of going to smaller jobs, so a big
tensor-parallel replica is never starved. A replica whose model has no queued batch left is ended at once,
so its GPUs go to models still working. CPU replicas (API models, baselines) need no GPU and start at once;
API replicas of one provider share that provider's limiter (created by the job before its replicas).

CPUs (why a budget): score tasks and the side stages' actors need CPUs while every model's replicas are up. So
the scheduler holds back `reserve_cpus` (default: a quarter CPU per model, at least 1, at most half the cluster)
and one CPU per GPU (the placement-group bundles of GPU replicas), and hands what is left to the CPU replicas:
each replica gets its model's `cpus` scaled down so that all of them fit that budget together. No mix of
actors can then hold every CPU (four 0.5-CPU baselines on a 2-CPU Ray once left the score tasks none).

Work arrives lazily: a job's `batches` is a `Backlog` over an iterator (the model's plan), pulled one batch at
a time as replicas take work, with its size counted up front for the estimates; the driver never holds a
whole model's requests.

Failures: a replica that fails to load, or whose batches fail `max_attempts` times in a row (OOM, crash loop),
is ended and replaced while the model's replica failures stay below `max_attempts`; after that the model's
remaining batches are recorded through `Job.fail` (infra_error), the job ends `failed` with its reason, and
the rest of the run goes on. A batch whose actor died is requeued until `max_attempts`, then failed alone.
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

import ray
from ray.exceptions import RayActorError, RayError, RayTaskError

AUTO = "auto"


# What one score task asks (`cluster.pipeline.score_batch`): the reserve gives each model's batches room to be
# scored side by side.
SCORE_TASK_CPUS = 0.25


@dataclass
class Batch:
    payload: Any  # whatever the job's submit/finish understand (work items; a request count in the bench)
    size: int  # requests in the batch (for work estimates)
    attempt: int = 1


class Backlog:
    """A job's batches not yet dispatched, produced lazily from `source` (a model's plan) as they are taken.

    `batches` and `requests` are how much the source will yield, counted up front (the scheduler's estimates
    need the amount of work, not the work); emptiness never trusts the count: one batch is peeked ahead.
    Retried batches go after the source's (as they always did: a crashed batch is not retried at once on a
    replica that may be crash-looping).
    """

    def __init__(self, source: Iterable[Batch], *, batches: int, requests: int) -> None:
        self._source: Iterator[Batch] = iter(source)
        self._next: Batch | None = None
        self._exhausted = False
        self._unplanned = batches  # batches still to come from the source, the peeked one included
        self.requests = requests  # requests the source yields in all (the job's initial queue)
        self._retries: deque[Batch] = deque()

    @classmethod
    def of(cls, batches: Iterable[Batch]) -> Backlog:
        """A backlog of batches already made (tests, the bench)."""
        made = list(batches)
        return cls(made, batches=len(made), requests=sum(b.size for b in made))

    def _peek(self) -> Batch | None:
        if self._next is None and not self._exhausted:
            self._next = next(self._source, None)
            if self._next is None:
                self._exhausted = True
                self._unplanned = 0
        return self._next

    def __bool__(self) -> bool:
        return bool(self._retries) or self._peek() is not None

    def __len__(self) -> int:
        """Batches left (an estimate while the source is not exhausted: its count up front)."""
        ahead = self._unplanned if not self._exhausted else int(self._next is not None)
        return max(ahead, int(self._next is not None)) + len(self._retries)

    def popleft(self) -> Batch:
        b = self._peek()
        if b is not None:
            self._next = None
            self._unplanned = max(0, self._unplanned - 1)
            return b
        if self._retries:
            return self._retries.popleft()
        raise IndexError("pop from an empty backlog")

    def append(self, batch: Batch) -> None:
        """Requeue a batch (a retry)."""
        self._retries.append(batch)


@dataclass
class Replica:
    job: Job
    index: int
    actor: Any
    placement: dict[str, Any]
    gpus: float
    ready_ref: Any = None
    ready: bool = False
    ended: bool = False
    inflight: int = 0
    consecutive_failures: int = 0
    started_at: float = field(default_factory=time.monotonic)


@dataclass
class Job:
    """One model of the run, as the scheduler sees it.

    `start(index, cpus)` creates one replica holding `cpus` CPUs (CPU replicas; GPU replicas hold their
    placement group's) and returns (actor, placement options); `submit(actor, payload)` returns
    the ref of the batch's finished records; `finish(batch, result)` writes them; `fail(batch, message)`
    records the batch as infra_error; `release(actor, placement)` ends a replica and frees its resources.
    """

    name: str
    gpus: float  # per replica (0: CPU replica)
    replicas: int | str  # the most replicas, or "auto"
    load_s: float  # estimated replica load time (s)
    request_s: float  # estimated replica seconds per request at steady throughput
    batches: Backlog | Iterable[Batch]  # batches already made are wrapped into a Backlog
    start: Callable[[int, float], tuple[Any, dict[str, Any]]]
    submit: Callable[[Any, Any], Any]
    finish: Callable[[Batch, Any], None]
    fail: Callable[[Batch, str], None]
    release: Callable[[Any, dict[str, Any]], None]
    per_replica_inflight: int = 4
    max_attempts: int = 3
    cpus: float = 0.0  # CPUs a CPU replica asks for (an upper bound: the scheduler may grant less)
    cpu_grant: float | None = None  # what each of its replicas gets (set by the scheduler)
    live: list[Replica] = field(default_factory=list)
    started: int = 0
    replica_failures: int = 0
    retries: int = 0
    status: str = "pending"  # pending | running | complete | failed
    error: str | None = None
    first_start: float | None = None
    last_done: float | None = None
    inflight_requests: int = 0
    queued_requests: int = 0  # kept in step with `batches` by the scheduler (summing each turn is too slow)

    def __post_init__(self) -> None:
        if not isinstance(self.batches, Backlog):
            self.batches = Backlog.of(self.batches)
        self.queued_requests = self.batches.requests

    def remaining_work(self) -> float:
        """Estimated replica-seconds of work not yet finished (queued and in flight)."""
        return (self.queued_requests + self.inflight_requests) * self.request_s

    def done(self) -> bool:
        return not self.batches and not any(r.inflight for r in self.live) and self.inflight_requests == 0


class Stage(Protocol):
    """A side stage driven by the same loop (the judge pool)."""

    def pump(self) -> None: ...

    def refs(self) -> list[Any]: ...

    def handle(self, ref: Any) -> None: ...

    def idle(self) -> bool: ...


def _first_line(e: BaseException) -> str:
    s = str(e).strip()
    return f"{type(e).__name__}: {s.splitlines()[0] if s else ''}"[:300]


class Scheduler:
    def __init__(self, jobs: list[Job], stages: list[Stage] | None = None, *, total_gpus: float | None = None,
                 total_cpus: float | None = None, reserve_cpus: float | None = None) -> None:
        self.jobs = [j for j in jobs if j.batches]
        for j in jobs:
            if not j.batches:
                j.status = "complete"
        self.stages = list(stages or [])
        resources = ray.cluster_resources() if total_gpus is None or total_cpus is None else {}
        self.total_gpus = float(resources.get("GPU", 0) if total_gpus is None else total_gpus)
        self.total_cpus = float(resources.get("CPU", 0) if total_cpus is None else total_cpus)
        if reserve_cpus is None:
            reserve_cpus = min(self.total_cpus / 2, max(1.0, SCORE_TASK_CPUS * len(self.jobs)))
        self.reserve_cpus = reserve_cpus
        self._grant_cpus()
        self.used_gpus = 0.0
        self._refs: dict[Any, tuple[str, Any]] = {}  # ref -> ("ready", replica) | ("batch", (replica, batch))
        self.events: list[tuple[float, str, str]] = []  # (monotonic time, job, event): the bench reads these

    # ------------------------------------------------------------------ placement
    def cpu_budget(self) -> float:
        """CPUs the CPU replicas may hold together: the cluster's, less the reserve and the GPU bundles'."""
        return max(0.0, self.total_cpus - self.reserve_cpus - self.total_gpus)

    def _grant_cpus(self) -> None:
        """Scale every CPU replica's ask so that all of them at once fit the budget. Counted with each
        job's most replicas at the start; that number only falls, and a replaced replica frees its CPUs
        before the next one starts."""
        cpu_jobs = [j for j in self.jobs if j.gpus < 1]
        wanted = sum(j.cpus * self._max_replicas(j, self.jobs) for j in cpu_jobs)
        scale = min(1.0, self.cpu_budget() / wanted) if wanted > 0 else 1.0
        for j in cpu_jobs:
            # Ray counts resources in units of 1e-4; rounding down keeps the sum within the budget
            j.cpu_grant = math.floor(j.cpus * scale * 1e4) / 1e4
        for j in self.jobs:
            if j.gpus >= 1:
                j.cpu_grant = 0.0  # the placement group's bundles hold its CPUs

    def _free_gpus(self) -> float:
        return self.total_gpus - self.used_gpus

    def _start_replica(self, job: Job) -> bool:
        try:
            actor, placement = job.start(job.started, job.cpu_grant or 0.0)
        except (TimeoutError, ValueError, RayError) as e:  # the placement group never fit, or start refused
            job.replica_failures += 1
            self._give_up_if_failing(job, _first_line(e))
            return False
        rep = Replica(job, job.started, actor, placement, job.gpus)
        job.started += 1
        job.live.append(rep)
        job.status = "running"
        job.first_start = job.first_start or time.monotonic()
        self.used_gpus += job.gpus if job.gpus >= 1 else 0.0
        rep.ready_ref = actor.ready.remote()
        self._refs[rep.ready_ref] = ("ready", rep)
        self.events.append((time.monotonic(), job.name, f"start replica {rep.index}"))
        return True

    def _end_replica(self, rep: Replica) -> None:
        job = rep.job
        rep.ended = True
        if rep in job.live:
            job.live.remove(rep)
            if rep.gpus >= 1:
                self.used_gpus -= rep.gpus
        with contextlib.suppress(Exception):
            job.release(rep.actor, rep.placement)
        self.events.append((time.monotonic(), job.name, f"end replica {rep.index}"))

    def _max_replicas(self, job: Job, active: list[Job]) -> int:
        batches = len(job.batches) + sum(r.inflight for r in job.live)
        if job.replicas != AUTO:
            return min(int(job.replicas), max(1, batches))
        if job.gpus < 1:  # CPU or a fraction of one GPU: one replica (Ray places fractions itself)
            return 1
        # "auto": the job's share of the GPU work still to do, never more replicas than its batches
        gpu_jobs = [j for j in active if j.gpus >= 1]
        total = sum(j.remaining_work() * j.gpus for j in gpu_jobs) or 1.0
        share = self.total_gpus * job.remaining_work() * job.gpus / total
        return max(1, min(batches, math.ceil(share / job.gpus)))

    def _worth_another(self, job: Job) -> bool:
        """Another replica shortens the job: its remaining time per replica exceeds a replica's load time."""
        n = len(job.live)
        if n == 0:
            return True
        return job.remaining_work() / n > job.load_s + job.remaining_work() / (n + 1)

    @staticmethod
    def _finish_estimate(job: Job) -> float:
        """When the job would end with the replicas it has (a job without one must load one first)."""
        n = len(job.live)
        return job.remaining_work() / n if n else job.load_s + job.remaining_work()

    def _place(self) -> None:
        active = [j for j in self.jobs if j.status in ("pending", "running")]
        # CPU replicas (API models, baselines): no GPU accounting, start them all now
        for j in active:
            if j.gpus < 1:
                while j.batches and len(j.live) < self._max_replicas(j, active):
                    if not self._start_replica(j):
                        break
        # GPU replicas, longest-finishing job first (LPT), its first replica before anyone's further ones;
        # strict priority: when the job first in line does not fit, the GPUs that free up wait for it
        # rather than go to smaller jobs, so a big tensor-parallel replica is never starved
        gpu = [j for j in active if j.gpus >= 1 and j.batches]
        while True:
            cands = [j for j in gpu if len(j.live) < self._max_replicas(j, active) and self._worth_another(j)]
            if not cands:
                return
            best = max(cands, key=lambda j: (not j.live, self._finish_estimate(j), j.gpus))
            if best.gpus > self._free_gpus() + 1e-9 or not self._start_replica(best):
                return

    # ------------------------------------------------------------------ dispatch
    def _dispatch(self) -> None:
        for j in self.jobs:
            ready = [r for r in j.live if r.ready]
            while j.batches and ready:
                rep = min(ready, key=lambda r: r.inflight)
                if rep.inflight >= j.per_replica_inflight:
                    break
                batch = j.batches.popleft()
                j.queued_requests -= batch.size
                ref = j.submit(rep.actor, batch.payload)
                rep.inflight += 1
                j.inflight_requests += batch.size
                self._refs[ref] = ("batch", (rep, batch))

    def _retire_idle(self) -> None:
        """End replicas with nothing left to do: a finished model frees its GPUs for the others at once."""
        for j in self.jobs:
            if j.batches:
                continue
            for rep in [r for r in j.live if r.inflight == 0]:
                self._end_replica(rep)
            if j.status == "running" and j.done():
                j.status = "complete" if j.error is None else "failed"
                j.last_done = time.monotonic()
                self.events.append((j.last_done, j.name, "done"))

    # ------------------------------------------------------------------ failures
    def _replica_failed(self, rep: Replica, why: str) -> None:
        job = rep.job
        job.replica_failures += 1
        self.events.append((time.monotonic(), job.name, f"replica {rep.index} failed: {why}"))
        self._end_replica(rep)
        self._give_up_if_failing(job, why)

    def _give_up_if_failing(self, job: Job, why: str) -> None:
        if job.replica_failures < job.max_attempts or job.live:
            return
        # the model cannot be served: its remaining samples are infra errors, the run goes on
        job.error = f"replicas failed {job.replica_failures} times; last: {why}"[:400]
        while job.batches:
            batch = job.batches.popleft()
            job.queued_requests -= batch.size
            job.fail(batch, job.error)
        job.status = "failed"
        job.last_done = time.monotonic()
        self.events.append((job.last_done, job.name, "failed"))

    def _on_ready(self, rep: Replica, ref: Any) -> None:
        if rep.ended:  # retired before it was ready (its model ran out of work): not a failure
            return
        try:
            ray.get(ref)
        except (RayActorError, RayTaskError) as e:
            self._replica_failed(rep, f"load failed: {_first_line(e)}")
            return
        rep.ready = True
        self.events.append((time.monotonic(), rep.job.name, f"ready replica {rep.index}"))

    def _on_batch(self, rep: Replica, batch: Batch, ref: Any) -> None:
        job = rep.job
        rep.inflight -= 1
        job.inflight_requests -= batch.size
        try:
            result = ray.get(ref)
        except (RayActorError, RayTaskError) as e:
            rep.consecutive_failures += 1
            if batch.attempt < job.max_attempts:
                job.retries += 1
                job.batches.append(Batch(batch.payload, batch.size, batch.attempt + 1))
                job.queued_requests += batch.size
            else:
                job.fail(batch, _first_line(e))
            if rep.consecutive_failures >= job.max_attempts and not rep.ended:
                self._replica_failed(rep, f"crash loop: {_first_line(e)}")
            return
        rep.consecutive_failures = 0
        job.finish(batch, result)

    # ------------------------------------------------------------------ loop
    def busy(self) -> bool:
        return any(j.status in ("pending", "running") for j in self.jobs) or not all(s.idle() for s in self.stages)

    def run(self) -> None:
        try:
            while self.busy():
                self._place()
                self._dispatch()
                for s in self.stages:
                    s.pump()
                refs = list(self._refs) + [r for s in self.stages for r in s.refs()]
                if not refs:
                    self._retire_idle()
                    if self.busy() and not self._refs and not any(s.refs() for s in self.stages):
                        self._stalled()
                    continue
                ready, _ = ray.wait(refs, num_returns=1, timeout=5.0)
                for ref in ready:
                    owner = self._refs.pop(ref, None)
                    if owner is None:
                        for s in self.stages:
                            if ref in s.refs():
                                s.handle(ref)
                                break
                        continue
                    kind, what = owner
                    if kind == "ready":
                        self._on_ready(what, ref)
                    else:
                        self._on_batch(*what, ref)
                self._retire_idle()
        except BaseException:
            # an interrupt: free every replica, and let nothing here hide the interrupt itself; batches in
            # flight fail with the killed actors, which is expected and not worth a log line each
            os.environ["RAY_IGNORE_UNHANDLED_ERRORS"] = "1"
            for j in self.jobs:
                for rep in list(j.live):
                    with contextlib.suppress(Exception):
                        self._end_replica(rep)
            raise

    def _stalled(self) -> None:
        """Nothing in flight yet work remains: a GPU job that can never be placed fails instead of hanging."""
        for j in self.jobs:
            if j.status in ("pending", "running") and j.batches and not j.live:
                if j.gpus > self.total_gpus:
                    j.replica_failures = j.max_attempts
                    self._give_up_if_failing(j, f"one replica needs {j.gpus:g} GPU(s), the cluster has "
                                                f"{self.total_gpus:g}")
        if self.busy() and not self._refs and not any(s.refs() for s in self.stages):
            time.sleep(0.05)  # placement is retried on the next turn
