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

The budget follows the live cluster (why: a lost node): the loop reads the cluster's totals from the head
watch (`cluster.head_watch`, fetched off the loop's thread) and, when they change, computes the reserve and
the grants again; a live CPU replica holding more than the new grant is ended and started again at the new
size, its batches in flight requeued without counting a try. Without this, replicas Ray restarted after a node
was lost (with the CPUs granted for the larger cluster) took every CPU of the surviving node and the score
tasks of their own batches waited for CPU for ever (651 s measured, no message).

No progress (why: a run must never hang in silence): when no batch, replica load or stage result has come back
for `stall_timeout_s` (while no replica is loading on a live actor), the run stops itself
(`cluster.interrupts.Stopped`) with one line naming what waits for what (`cluster.stall`); it is saved as
interrupted and a rerun resumes it. While the head watch says the head does not answer, the loop makes no GCS
call (each would block until Ray ends the process).

Serving (one pool abstraction for the whole run): each job's ready replicas are the members of one
`cluster.actor_pool.ActorPool` (the LLM judge is one more job, fed as samples are scored: `Job.feeding`, its
replicas the models' actor class with the judge's backend, `cluster.judge_stage`): at most `per_replica_inflight`
batches in flight per replica, the least loaded first, results to `finish`, batches that keep failing to
`fail`, requests queued and in flight counted by the pool.

Work arrives lazily: a job's `batches` is a `Backlog` over an iterator (the model's plan), and it is the
pool's queue, pulled one batch at a time as replicas take work, with its size counted up front for the
estimates; the driver never holds a whole model's requests.

Failures: a replica that fails to load, or whose batches fail `max_attempts` times in a row (OOM, crash loop,
its node lost), is ended and replaced while the model's replica failures stay below its failure budget,
`max_attempts` x its most replicas (`replicas`, or for `auto` the most it had live at once), whatever number
of them is still live (a model whose every replica dies at load would otherwise be replaced for ever). Past
the budget the model gives up: its live replicas are ended, its remaining batches are recorded through
`Job.fail` (infra_error), batches still in flight are written (or failed) as they come back, the job ends
`failed` with one line naming the last cause, and the rest of the run goes on. A batch whose actor died is
requeued by the pool until `max_attempts`, then failed alone.

One concern in one module (~500 lines): placement, CPU grants, the failure budget and the loop share one state
(what runs where, and when); the queue (`cluster.backlog`) and the no-progress line (`cluster.stall`) live apart.
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

import ray
from ray.exceptions import RayActorError, RayError, RayTaskError

from cluster import interrupts, stall
from cluster.actor_pool import ActorPool, Batch, Member, first_line
from cluster.backlog import Backlog
from cluster.stall import SCORE_TASK_CPUS

__all__ = ["AUTO", "ActorPool", "Backlog", "Batch", "Job", "Replica", "Scheduler", "Stage"]

AUTO = "auto"




@dataclass
class Replica:
    job: Job
    index: int
    actor: Any
    placement: dict[str, Any]
    gpus: float
    ready_ref: Any = None
    member: Member | None = None  # its place in the job's pool, once it is ready
    ended: bool = False
    started_at: float = field(default_factory=time.monotonic)
    cpus: float = 0.0  # the CPUs it was granted (CPU replicas)

    @property
    def ready(self) -> bool:
        return self.member is not None

    @property
    def inflight(self) -> int:
        return self.member.inflight if self.member is not None else 0


@dataclass
class Job:
    """One model of the run, as the scheduler sees it.

    `start(index, cpus)` creates one replica holding `cpus` CPUs (CPU replicas; GPU replicas hold their
    placement group's) and returns (actor, placement options); `submit(actor, payload)` returns
    the ref of the batch's finished records; `finish(batch, result)` writes them; `fail(batch, message)`
    records the batch as infra_error; `release(actor, placement)` ends a replica and frees its resources.
    `pool` serves `batches` (its queue) on the ready replicas with those callbacks.
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
    peak_live: int = 0  # the most replicas live at once (an `auto` job's failure budget)
    status: str = "pending"  # pending | running | complete | failed
    error: str | None = None
    first_start: float | None = None
    last_done: float | None = None
    # given the refs of its batches in flight, how many have their model's answer and wait for a score task
    # (the no-progress line names them); None: not known
    answered: Callable[[list[Any]], int] | None = None
    # a job fed while the run goes (the judge: batches put into its pool as samples are scored): while it
    # returns True more batches may come, so the job is neither complete nor are its idle replicas ended (a
    # vLLM judge would reload); None: every batch is in `batches` from the start
    feeding: Callable[[], bool] | None = None
    pool: ActorPool = field(init=False)
    replica_of: dict[Member, Replica] = field(default_factory=dict)  # the pool's members, as replicas

    def __post_init__(self) -> None:
        if not isinstance(self.batches, Backlog):
            self.batches = Backlog.of(self.batches)
        # the pool's queue is the backlog itself: it pulls batches lazily, and requeues retries after them
        self.pool = ActorPool(self.submit, self.finish, self.fail, max_inflight=self.per_replica_inflight,
                              max_attempts=self.max_attempts, queue=self.batches,
                              queued_requests=self.batches.requests)

    @property
    def queued_requests(self) -> int:
        return self.pool.queued_requests

    @property
    def inflight_requests(self) -> int:
        return self.pool.inflight_requests

    @property
    def retries(self) -> int:
        return self.pool.retries

    def remaining_work(self) -> float:
        """Estimated replica-seconds of work not yet finished (queued and in flight)."""
        return (self.queued_requests + self.inflight_requests) * self.request_s

    def done(self) -> bool:
        return self.pool.idle()

    def failure_budget(self) -> int:
        """Replica failures after which the model gives up: `max_attempts` per replica it may run."""
        most = int(self.replicas) if self.replicas != AUTO else self.peak_live
        return self.max_attempts * max(1, most)


class ClusterView(Protocol):
    """What the loop needs of the head watch (`cluster.head_watch.HeadWatch`)."""

    reachable: bool  # the head's GCS answered the last probe
    resources: dict[str, float] | None  # the cluster's latest CPU and GPU totals (None: not read yet)


class Stage(Protocol):
    """A side stage driven by the same loop (the judge pool)."""

    def pump(self) -> None: ...

    def refs(self) -> list[Any]: ...

    def handle(self, ref: Any) -> None: ...

    def idle(self) -> bool: ...


class Scheduler:
    def __init__(self, jobs: list[Job], stages: list[Stage] | None = None, *, total_gpus: float | None = None,
                 total_cpus: float | None = None, reserve_cpus: float | None = None,
                 tick: Callable[[], None] | None = None, cluster: ClusterView | None = None,
                 stall_timeout_s: float | None = None) -> None:
        self.tick = tick  # called on every turn of the loop (the sink's time-based flush)
        self.cluster = cluster  # the head watch: is the head there, the cluster's live totals
        self.stall_timeout_s = stall_timeout_s
        # totals given by the caller (a simulated cluster) are kept; the others follow the live cluster
        self._follow = {"CPU": total_cpus is None, "GPU": total_gpus is None}
        self._fixed_reserve = reserve_cpus is not None
        self.jobs = [j for j in jobs if j.batches or j.feeding is not None]
        for j in jobs:
            if not j.batches and j.feeding is None:
                j.status = "complete"
        self.stages = list(stages or [])
        resources = ray.cluster_resources() if total_gpus is None or total_cpus is None else {}
        self.total_gpus = float(resources.get("GPU", 0) if total_gpus is None else total_gpus)
        self.total_cpus = float(resources.get("CPU", 0) if total_cpus is None else total_cpus)
        self.reserve_cpus = reserve_cpus if reserve_cpus is not None else self._default_reserve()
        self._grant_cpus()
        self.used_gpus = 0.0
        for j in self.jobs:
            j.pool.on_crash_loop = lambda m, why, j=j: self._replica_failed(j.replica_of[m], f"crash loop: {why}")
        self._loading: dict[Any, Replica] = {}  # a replica's `ready` ref -> the replica
        self.events: list[tuple[float, str, str]] = []  # (monotonic time, job, event): the bench reads these
        self._progress_at = time.monotonic()  # the last result, load or change of cluster

    def _default_reserve(self) -> float:
        return min(self.total_cpus / 2, max(1.0, SCORE_TASK_CPUS * len(self.jobs)))

    def _gcs_ok(self) -> bool:
        """Whether the loop may ask Ray's head anything (a lost head blocks every GCS call)."""
        return self.cluster is None or self.cluster.reachable

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
            self._give_up_if_failing(job, first_line(e))
            return False
        rep = Replica(job, job.started, actor, placement, job.gpus, cpus=job.cpu_grant or 0.0)
        job.started += 1
        job.live.append(rep)
        job.peak_live = max(job.peak_live, len(job.live))
        job.status = "running"
        job.first_start = job.first_start or time.monotonic()
        self.used_gpus += job.gpus if job.gpus >= 1 else 0.0
        rep.ready_ref = actor.ready.remote()
        self._loading[rep.ready_ref] = rep
        self.events.append((time.monotonic(), job.name, f"start replica {rep.index}"))
        return True

    def _end_replica(self, rep: Replica, *, resize: bool = False) -> None:
        job = rep.job
        rep.ended = True
        if rep.member is not None:
            # its batches in flight still resolve (retried if killed; a resize costs them no try)
            job.pool.remove_member(rep.member, forgive=resize)
        if rep in job.live:
            job.live.remove(rep)
            if rep.gpus >= 1:
                self.used_gpus -= rep.gpus
        if self._gcs_ok():  # with the head lost, killing would block; the actor dies with the cluster or run
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
        if not self._gcs_ok():  # creating an actor asks the head
            return
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
            j.pool.dispatch()

    def _retire_idle(self) -> None:
        """End replicas with nothing left to do: a finished model frees its GPUs for the others at once."""
        for j in self.jobs:
            if j.batches or (j.feeding is not None and j.feeding()):
                continue
            for rep in [r for r in j.live if r.inflight == 0]:
                self._end_replica(rep)
            # a fed job that never got a batch (no sample to judge) ends here too
            if (j.status == "running" or (j.status == "pending" and j.feeding is not None)) and j.done():
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
        if job.replica_failures < job.failure_budget() or job.status == "failed":
            return
        # the model cannot be served: its remaining samples are infra errors, the run goes on
        job.error = f"replicas failed {job.replica_failures} times; last: {why}"[:400]
        job.status = "failed"
        job.pool.fail_queued(job.error)
        # its other replicas go too (their batches in flight come back written, or failed as infra errors)
        for rep in list(job.live):
            self._end_replica(rep)
        job.last_done = time.monotonic()
        self.events.append((job.last_done, job.name, "failed"))

    def _on_ready(self, rep: Replica, ref: Any) -> None:
        if rep.ended:  # retired before it was ready (its model ran out of work): not a failure
            return
        try:
            ray.get(ref)
        except (RayActorError, RayTaskError) as e:
            self._replica_failed(rep, f"load failed: {first_line(e)}")
            return
        rep.member = rep.job.pool.add_member(rep.actor)
        rep.job.replica_of[rep.member] = rep
        self.events.append((time.monotonic(), rep.job.name, f"ready replica {rep.index}"))

    # ------------------------------------------------------------------ loop
    def busy(self) -> bool:
        # a failed job's batches still in flight are awaited: each is written or recorded as an infra error
        return (any(j.status in ("pending", "running") or j.pool.inflight for j in self.jobs)
                or not all(s.idle() for s in self.stages))

    def _own_refs(self) -> list[Any]:
        """Refs of the replicas loading and of every job's batches in flight."""
        return list(self._loading) + [r for j in self.jobs for r in j.pool.refs()]

    def _wait_s(self) -> float:
        """How long to wait for a ref: at most 5 s, less when a paused replica may take a batch sooner."""
        wakes = [w for j in self.jobs if (w := j.pool.wake_in()) is not None]
        return max(0.01, min([5.0, *wakes]))

    def _handle(self, ref: Any) -> None:
        rep = self._loading.pop(ref, None)
        if rep is not None:
            self._on_ready(rep, ref)
            return
        for j in self.jobs:
            if j.pool.owns(ref):
                j.pool.handle(ref)  # -> finish | a retry | fail, and a crash loop -> _replica_failed
                if j.status == "failed":
                    # a batch that was in flight when the model gave up came back for a retry: record it as
                    # an infra error now rather than leave it queued and unwritten
                    j.pool.fail_queued(j.error or "model failed")
                return
        for s in self.stages:
            if ref in s.refs():
                s.handle(ref)
                return

    def run(self) -> None:
        try:
            while self.busy():
                self._place()
                self._dispatch()
                for s in self.stages:
                    s.pump()
                refs = self._own_refs() + [r for s in self.stages for r in s.refs()]
                self._follow_cluster()
                self._check_progress()
                if not refs:
                    self._retire_idle()
                    if self.busy() and not self._own_refs() and not any(s.refs() for s in self.stages):
                        self._stalled()
                    continue
                ready, _ = ray.wait(refs, num_returns=1, timeout=self._wait_s())
                for ref in ready:
                    self._progress_at = time.monotonic()
                    self._handle(ref)
                self._retire_idle()
                if self.tick is not None:
                    self.tick()
        except BaseException as e:
            # an interrupt: free every replica, and let nothing here hide the interrupt itself; batches in
            # flight fail with the killed actors, which is expected and not worth a log line each
            os.environ["RAY_IGNORE_UNHANDLED_ERRORS"] = "1"
            stop = interrupts.stopped(e)
            if stop is not None and stop.cluster_gone:
                raise  # the head is lost: every kill would block; the replicas go with the cluster
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
                    j.replica_failures = j.failure_budget()
                    self._give_up_if_failing(j, f"one replica needs {j.gpus:g} GPU(s), the cluster has "
                                                f"{self.total_gpus:g}")
        if self.busy() and not self._own_refs() and not any(s.refs() for s in self.stages):
            time.sleep(0.05)  # placement is retried on the next turn

    # ------------------------------------------------------------------ a changing cluster, no progress
    def _follow_cluster(self) -> None:
        """Size the CPU budget to the live cluster when its totals change (a node lost or added); shrink the
        live CPU replicas that hold more than the new grant."""
        if self.cluster is None or not self.cluster.resources or not self._gcs_ok():
            return
        live = self.cluster.resources
        cpus = live.get("CPU", 0.0) if self._follow["CPU"] else self.total_cpus
        gpus = live.get("GPU", 0.0) if self._follow["GPU"] else self.total_gpus
        if abs(cpus - self.total_cpus) < 1e-6 and abs(gpus - self.total_gpus) < 1e-6:
            return
        self.total_cpus, self.total_gpus = cpus, gpus
        if not self._fixed_reserve:
            self.reserve_cpus = self._default_reserve()
        self._grant_cpus()
        self._progress_at = time.monotonic()  # a change of cluster is news: the stall clock starts again
        self.events.append((self._progress_at, "-", f"cluster now {cpus:g} CPUs, {gpus:g} GPUs"))
        for j in self.jobs:
            if j.gpus >= 1 or j.cpu_grant is None:
                continue
            for rep in [r for r in j.live if r.cpus > j.cpu_grant + 1e-4]:
                # started again at the new size by the next placement (a resize, not a replica failure)
                self.events.append((time.monotonic(), j.name, f"resize replica {rep.index}: "
                                    f"{rep.cpus:g} -> {j.cpu_grant:g} CPUs"))
                self._end_replica(rep, resize=True)

    def _check_progress(self) -> None:
        if self.stall_timeout_s is None or not self._gcs_ok():
            return  # a head that does not answer is the head watch's to call
        idle = time.monotonic() - self._progress_at
        if idle < self.stall_timeout_s:
            return
        try:
            states = stall.call(lambda: stall.actor_states([r.actor for j in self.jobs for r in j.live]))
        except Exception:
            states = {}
        if any(states.get(stall.actor_id(r.actor), ("", ""))[0] == "ALIVE"
               for j in self.jobs for r in j.live if not r.ready and not r.ended):
            self._progress_at = time.monotonic()  # a replica is loading its model on a live actor: not stuck
            return
        raise interrupts.Stopped(self.stall_line(idle, states))

    def stall_line(self, idle_s: float, states: dict[str, tuple[str, str]] | None = None) -> str:
        """One line: how long nothing came back, and what waits for what (`cluster.stall`)."""
        return stall.stall_line(self, idle_s, states)
