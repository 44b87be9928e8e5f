"""The run pipeline on Ray: plan -> model actors (generate) -> score tasks -> one sink in the driver.

Stages chain by ObjectRef (responses flow from a model actor straight into a score task); the driver only
plans, and `cluster.scheduler` places every model's replicas on the cluster at once, bounds the batches in
flight (backpressure) and hands each finished batch back here to be written. A batch whose actor died is
resubmitted; after `max_attempts` its samples are recorded as `infra_error`, never as wrong answers.
"""

from __future__ import annotations

import asyncio
import socket
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import ray

from cluster import head_watch
from cluster.actor_pool import first_line
from cluster.backends.factory import chat_client, make_backend
from cluster.backends.litellm_api import ensure_shared_limiter, forget_replica
from cluster.config import ModelSpec, RunConfig
from cluster.costs import estimate
from cluster.plan import WorkItem, count_work, plan_batches
from cluster.pot_stage import PotSettings, has_pot, pot_task_cpus, run_pot
from cluster.ray_data_stage import run_model as ray_data_run
from cluster.ray_data_stage import uses_ray_data
from cluster.replicas import actor_options, gpus_per_replica, release
from cluster.scheduler import Backlog, Batch, Job, Scheduler, Stage
from evalcore.dataset import Dataset
from evalcore.progress import Bar
from evalcore.records import SampleSink
from evalcore.schema import Instance, ModelRequest, ModelResponse, SampleRecord
from evalcore.scoring import score_sample
from evalcore.secrets import MissingKey


@ray.remote(max_restarts=4, max_task_retries=0)
class ModelActor:
    """Hosts one model replica (a baseline, a vLLM engine, or an API client)."""

    def __init__(self, backend: str, name: str, baseline: str | None, options: dict[str, Any]) -> None:
        # a backend that cannot start is reported by `ready` as one line naming the cause, and the scheduler
        # ends the replica (an exception here would only say that the actor died in its constructor)
        self._init_error: str | None = None
        self._judges: dict[str, Any] = {}  # the LLM judges this replica serves (`judge`), by spec
        try:
            self.backend = make_backend(backend, name, baseline, options)
        except MissingKey as e:
            self._init_error = (
                f"model {name!r}: API key {e.env} is not set on node {_node()} (the run's driver has it, this "
                f"node does not): set it in every node's environment, or {e.env}_FILE naming a secret file "
                "mounted on every node (docs/api-models.md)")
        except Exception as e:
            self._init_error = f"model {name!r}: backend failed to start: {first_line(e)}"

    async def generate(self, requests: list[ModelRequest]) -> list[ModelResponse]:
        responses = await self.backend.generate(requests)
        if len(responses) != len(requests):
            # the stage contract: exactly one response per request, in order
            raise RuntimeError(f"backend returned {len(responses)} responses for {len(requests)} requests")
        return responses

    async def judge(self, spec: dict[str, Any], cache_dir: str,
                    batch: list[tuple[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
        """A batch of the judge stage (`cluster.judge_stage`: (content key, JudgeItem) pairs) on this replica:
        the LLM judge with this replica's backend as its client (a vLLM engine, or the API client), so an
        open-weights judge is served like any model, no outside server. Successful judgments are cached."""
        from judge.cache import JudgeCache
        from judge.llm_judge import JudgeSpec, LLMJudge

        if self._init_error:
            raise RuntimeError(self._init_error)
        key = repr(sorted(spec.items())) + cache_dir
        if key not in self._judges:  # one judge per spec, built on the first batch
            client = chat_client(self.backend)  # ValueError: a backend that cannot judge
            self._judges[key] = (LLMJudge(JudgeSpec(**spec), client=client), JudgeCache(cache_dir))
        judge, cache = self._judges[key]

        async def one(k: str, item: Any) -> tuple[str, dict[str, Any]]:
            res = await judge.judge(item)
            if res.cacheable:  # successful judgments only
                cache.put(k, res.to_json())
            return k, res.to_json()

        return list(await asyncio.gather(*(one(k, i) for k, i in batch)))

    def ready(self) -> bool:
        """Returns once the replica can serve; raises when its engine failed to load (the scheduler then
        replaces the replica, or ends the model as infra_error), instead of failing every batch."""
        if self._init_error:
            raise RuntimeError(self._init_error)
        loaded = getattr(self.backend, "ready", None)
        if loaded is not None and hasattr(loaded, "wait"):
            loaded.wait()
        err = getattr(self.backend, "_start_error", None)
        if err:
            raise RuntimeError(err)
        return True


def count_written(stats, sink, records: list[SampleRecord]) -> None:
    """Write scored records to the run's sink and count them in the run's stats (both model stages)."""
    for r in records:
        stats.statuses[r.status] = stats.statuses.get(r.status, 0) + 1
    stats.written += sink.add(records)
    stats.finished_at = time.time()
    stats.first_written_at = stats.first_written_at or stats.finished_at


def _node() -> str:
    """This process's node, as an operator finds it: host name and Ray node IP."""
    try:
        ip = ray.util.get_node_ip_address()
    except Exception:
        ip = "?"
    return f"{socket.gethostname()} ({ip})"


@ray.remote(num_cpus=0.25)
def score_batch(
    run_id: str, version: str, instances: list[Instance], requests: list[ModelRequest],
    responses: list[ModelResponse], pot: PotSettings | None = None,
) -> list[SampleRecord]:
    """Score a batch; its PoT responses' programs run first, in the sandbox (`cluster.pot_stage`)."""
    outcomes = run_pot(requests, responses, pot) if pot is not None else [None] * len(requests)
    return [
        score_sample(run_id, version, inst, req, resp, outcome)
        for inst, req, resp, outcome in zip(instances, requests, responses, outcomes, strict=True)
    ]


@dataclass
class ModelStats:
    model: str
    planned: int = 0
    skipped: int = 0
    written: int = 0
    infra_errors: int = 0
    seconds: float = 0.0
    retries: int = 0
    statuses: dict[str, int] = field(default_factory=dict)
    status: str = "complete"  # complete | infra_error (its replicas could not serve it)
    error: str | None = None
    replicas_started: int = 0
    replica_failures: int = 0
    started_at: float | None = None  # wall clock (time.time) of the first replica start
    first_written_at: float | None = None  # wall clock of its first written batch
    finished_at: float | None = None  # wall clock of its last written batch


def _infra_records(run_id: str, version: str, by_id: dict[str, Instance], items: list[WorkItem], msg: str,
                   attempts: int) -> list[SampleRecord]:
    return [
        score_sample(run_id, version, by_id[w.instance_id], w.request,
                     ModelResponse(text=None, status="infra_error", error=msg, attempts=attempts))
        for w in items
    ]


def model_job(
    cfg: RunConfig, model: ModelSpec, datasets: list[Dataset], run_id: str, sink: SampleSink,
    stats: ModelStats, on_records: Callable[[list[SampleRecord]], None] | None = None,
    versions: list[str] | None = None,
) -> Job:
    """The model's unfinished samples over all datasets as one scheduler job (batches never mix datasets)."""
    by_ids = [ds.by_id() for ds in datasets]
    versions = versions or [ds.manifest.version for ds in datasets]
    # counted now, planned lazily as the scheduler takes batches (never a whole run's requests in the driver)
    counts = [count_work(cfg, model, ds, sink.is_done) for ds in datasets]
    stats.planned, stats.skipped = sum(c.planned for c in counts), sum(c.skipped for c in counts)
    batches = Backlog((Batch(p, len(p[1])) for p in plan_batches(cfg, model, datasets, versions, sink.is_done)),
                      batches=sum(c.batches for c in counts), requests=sum(c.todo for c in counts))

    def start(i: int, cpus: float) -> tuple[Any, dict[str, Any]]:
        if i == 0 and model.backend == "litellm":
            # the driver owns the provider's limiter, so it outlives any replica that dies
            ensure_shared_limiter(model.name, model.options)
        if stats.started_at is None:
            stats.started_at = time.time()
        # placement groups are not awaited here: the replica's `ready` call resolves once it is placed
        opts = actor_options(model, i, wait_s=None, num_cpus=cpus)  # cpus: the scheduler's grant
        actor = ModelActor.options(
            **opts,
            # named so operators (and the fault tests) can find a replica in `ray list actors`
            name=f"nphe4v/{run_id}/{model.name}/{i}/{uuid.uuid4().hex[:6]}",
        ).remote(model.backend, model.name, model.baseline, model.options)
        return actor, opts

    pot = PotSettings(isolation=cfg.pot_isolation, timeout_s=cfg.pot_timeout_s, workers=cfg.pot_workers)
    pot_cpus: list[float] = []
    answer_of: dict[Any, Any] = {}  # a batch's score ref -> its model's answer ref (the no-progress line)
    job: list[Job] = []  # the job below, once made (its pool says which batches are still in flight)

    def submit(actor: Any, payload: tuple[int, list[WorkItem]]) -> Any:
        d, items = payload
        reqs = [w.request for w in items]
        insts = [by_ids[d][w.instance_id] for w in items]
        answer = actor.generate.remote(reqs)
        if has_pot(reqs):  # the programs are CPU work: the task holds more of the scoring reserve
            if not pot_cpus:  # asked once Ray is up (the job is built before)
                pot_cpus.append(pot_task_cpus(float(ray.cluster_resources().get("CPU", 0))))
            ref = score_batch.options(num_cpus=pot_cpus[0]).remote(run_id, versions[d], insts, reqs, answer, pot)
        else:
            ref = score_batch.remote(run_id, versions[d], insts, reqs, answer)
        for r in [r for r in answer_of if not (job and job[0].pool.owns(r))]:  # done: let its answer go
            del answer_of[r]
        answer_of[ref] = answer
        return ref

    def answered(inflight: list[Any]) -> int:
        """Of the batches in flight, those whose answer is in (their score task has yet to finish)."""
        answers = [answer_of[r] for r in inflight if r in answer_of]
        if not answers:
            return 0
        ready, _ = ray.wait(answers, num_returns=len(answers), timeout=0, fetch_local=False)
        return len(ready)

    def write(records: list[SampleRecord]) -> None:
        count_written(stats, sink, records)
        if on_records is not None:
            on_records(records)

    def finish(batch: Batch, records: list[SampleRecord]) -> None:
        write(records)

    def fail(batch: Batch, msg: str) -> None:
        d, items = batch.payload
        stats.infra_errors += len(items)
        write(_infra_records(run_id, versions[d], by_ids[d], items, msg, batch.attempt))

    def free(actor: Any, opts: dict[str, Any]) -> None:
        ray.kill(actor)  # ending the actor is what frees a replica's GPU memory; `del` is not enough
        if model.backend == "litellm":  # the provider slots it held (or waits for) are free now, not a TTL later
            forget_replica(model.name, model.options, actor)
        release(opts)

    cost = estimate(model.name, model.backend, gpus_per_replica(model), model.options)
    job.append(Job(
        name=model.name, gpus=gpus_per_replica(model), replicas=model.replicas, load_s=cost.load_s,
        request_s=cost.request_s, batches=batches, start=start, submit=submit, finish=finish, fail=fail,
        release=free, per_replica_inflight=cfg.max_inflight_batches, max_attempts=cfg.max_attempts,
        cpus=model.num_cpus, answered=answered,
    ))
    return job[0]


def run_models(
    cfg: RunConfig, datasets: list[Dataset], run_id: str, sink: SampleSink, *,
    start_ray: Callable[[], None] = lambda: None, stages: Callable[[], list[Stage]] | None = None,
    on_records: Callable[[list[SampleRecord]], None] | None = None, versions: list[str] | None = None,
    live: list[ModelStats] | None = None,
) -> list[ModelStats]:
    """Every model of the run over every dataset, scheduled together on one cluster (`cluster.scheduler`).

    `stages()` builds the side stages (the judge) once Ray is up; `on_records` sees every written batch.
    Returns one ModelStats per model; a model whose replicas failed ends with status infra_error. `live`, when
    given, receives the same objects at once (an interrupted run records how far each model got)."""
    stats = [ModelStats(model=m.name) for m in cfg.models]
    if live is not None:
        live.extend(stats)
    bar: list[Bar] = []

    def seen(records: list[SampleRecord]) -> None:
        if bar:
            bar[0].advance(len(records))
        if on_records is not None:
            on_records(records)

    # `options.model_stage: ray-data` models run on Ray Data LLM (cluster.ray_data_stage), before the others
    on_ray_data = [uses_ray_data(m.backend, m.options) for m in cfg.models]
    for m, s, rd in zip(cfg.models, stats, on_ray_data, strict=True):
        if rd:
            ray_data_model(cfg, m, datasets, run_id, sink, s, seen, versions, start_ray)
    jobs = [model_job(cfg, m, datasets, run_id, sink, s, seen, versions)
            for m, s, rd in zip(cfg.models, stats, on_ray_data, strict=True) if not rd]
    side = stages() if stages is not None else []
    if not any(j.batches for j in jobs) and all(s.idle() for s in side):
        return stats  # a finished run re-reports without starting Ray
    # a side stage's own jobs (the LLM judge: a model job fed while the models run) share the scheduler
    models_running = lambda: any(j.status in ("pending", "running") for j in jobs)  # noqa: E731
    served = [sj for s in side if hasattr(s, "served_jobs") for sj in s.served_jobs(models_running)]
    start_ray()
    with Bar("samples", sum(j.queued_requests for j in jobs)) as b, head_watch.watching() as head:
        bar.append(b)
        Scheduler(jobs + served, side, tick=sink.flush_if_due, cluster=head,
                  stall_timeout_s=cfg.ray.stall_timeout_s).run()
    sink.flush()
    for j, s in zip(jobs, [s for s, rd in zip(stats, on_ray_data, strict=True) if not rd], strict=True):
        s.seconds = round((s.finished_at or 0) - (s.started_at or 0), 3) if s.started_at else 0.0
        s.retries, s.replicas_started, s.replica_failures = j.retries, j.started, j.replica_failures
        if j.status == "failed":
            s.status, s.error = "infra_error", j.error
    return stats


def ray_data_model(
    cfg: RunConfig, model: ModelSpec, datasets: list[Dataset], run_id: str, sink: SampleSink, stats: ModelStats,
    on_records: Callable[[list[SampleRecord]], None], versions: list[str] | None, start_ray: Callable[[], None],
) -> None:
    """One `model_stage: ray-data` model over every dataset on Ray Data LLM; the same plan (resume), scoring
    and sink as the scheduler's jobs."""
    versions = versions or [ds.manifest.version for ds in datasets]
    counts = [count_work(cfg, model, ds, sink.is_done) for ds in datasets]
    stats.planned, stats.skipped = sum(c.planned for c in counts), sum(c.skipped for c in counts)
    if not sum(c.todo for c in counts):
        return
    by_ids = [ds.by_id() for ds in datasets]
    start_ray()
    stats.started_at = time.time()

    def write(records: list[SampleRecord]) -> None:
        count_written(stats, sink, records)
        on_records(records)
        sink.flush_if_due()

    def fail(d: int, items: list[WorkItem], msg: str) -> None:
        stats.infra_errors += len(items)
        write(_infra_records(run_id, versions[d], by_ids[d], items, msg, 1))

    ray_data_run(cfg, model, datasets, versions, run_id, sink, score_batch, write, fail)
    sink.flush()
    stats.seconds = round((stats.finished_at or 0) - (stats.started_at or 0), 3)


def run_model(
    cfg: RunConfig,
    model: ModelSpec,
    dataset: Dataset,
    version: str,
    run_id: str,
    sink: SampleSink,
    start_ray: Callable[[], None] = lambda: None,
) -> ModelStats:
    """One model over one dataset (the scheduler with a single job)."""
    one = cfg.model_copy(update={"models": [model]})
    return run_models(one, [dataset], run_id, sink, start_ray=start_ray, versions=[version])[0]
