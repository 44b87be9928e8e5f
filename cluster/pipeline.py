"""The run pipeline on Ray: plan -> model actors (generate) -> score tasks -> one sink in the driver.

Stages chain by ObjectRef (responses flow from a model actor straight into a score task); the driver only
plans, bounds the batches in flight (backpressure) and writes finished records. A batch whose actor died
is resubmitted; after `max_attempts` its samples are recorded as `infra_error`, never as wrong answers.
"""

from __future__ import annotations

import contextlib
import os
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import ray
from ray.exceptions import RayActorError, RayTaskError

from cluster.config import ModelSpec, RunConfig
from cluster.plan import WorkItem, plan_model
from cluster.sink import SampleSink
from nphe4v.core.schema import Instance, ModelRequest, ModelResponse, SampleRecord
from nphe4v.dataset import Dataset
from nphe4v.progress import Bar
from nphe4v.scoring import score_sample


@ray.remote(max_restarts=4, max_task_retries=0)
class ModelActor:
    """Hosts one model replica (a baseline, a vLLM engine, or an API client)."""

    def __init__(self, backend: str, name: str, baseline: str | None, options: dict[str, Any]) -> None:
        from cluster.backends.base import make_backend

        self.backend = make_backend(backend, name, baseline, options)

    async def generate(self, requests: list[ModelRequest]) -> list[ModelResponse]:
        responses = await self.backend.generate(requests)
        if len(responses) != len(requests):
            # the stage contract: exactly one response per request, in order
            raise RuntimeError(f"backend returned {len(responses)} responses for {len(requests)} requests")
        return responses

    def ready(self) -> bool:
        return True


@ray.remote(num_cpus=0.25)
def score_batch(
    run_id: str, version: str, instances: list[Instance], requests: list[ModelRequest],
    responses: list[ModelResponse],
) -> list[SampleRecord]:
    return [
        score_sample(run_id, version, inst, req, resp)
        for inst, req, resp in zip(instances, requests, responses, strict=True)
    ]


@dataclass
class _Batch:
    items: list[WorkItem]
    attempt: int = 1


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


def run_model(
    cfg: RunConfig,
    model: ModelSpec,
    dataset: Dataset,
    version: str,
    run_id: str,
    sink: SampleSink,
    start_ray: Callable[[], None] = lambda: None,
) -> ModelStats:
    stats = ModelStats(model=model.name)
    by_id = dataset.by_id()
    todo = []
    for item in plan_model(cfg, model, dataset, version):
        stats.planned += 1
        if sink.is_done(item.key):
            stats.skipped += 1
        else:
            todo.append(item)
    if not todo:
        return stats
    start_ray()  # only when there is work: a finished run re-reports without starting Ray
    if model.backend == "litellm":
        from cluster.backends.litellm_api import ensure_shared_limiter

        # the driver owns the provider's limiter, so it outlives any replica that dies
        ensure_shared_limiter(model.name, model.options)
    t0 = time.monotonic()
    from cluster.replicas import actor_options, replica_count

    # one actor per replica, GPU replicas each in their own placement group (tensor parallel inside)
    placements = [actor_options(model, i) for i in range(replica_count(model))]
    actors = [
        ModelActor.options(
            **opts,
            # named so operators (and the fault tests) can find a replica in `ray list actors`
            name=f"nphe4v/{run_id}/{model.name}/{i}/{uuid.uuid4().hex[:6]}",
        ).remote(model.backend, model.name, model.baseline, model.options)
        for i, opts in enumerate(placements)
    ]
    try:
        _drive(cfg, actors, todo, model, by_id, run_id, version, sink, stats)
    except BaseException:
        # an interrupt: free the replicas anyway, and let nothing here hide the interrupt itself; the batches
        # still in flight fail with the killed actors, which is expected and not worth a log line each
        os.environ["RAY_IGNORE_UNHANDLED_ERRORS"] = "1"
        with contextlib.suppress(Exception):
            _free(actors, placements)
        raise
    _free(actors, placements)
    stats.seconds = time.monotonic() - t0
    return stats


def _free(actors: list[Any], placements: list[dict[str, Any]]) -> None:
    from cluster.replicas import release

    for a in actors:
        # ending the actor is what frees a replica's GPU memory; `del` is not enough
        ray.kill(a)
    for opts in placements:
        release(opts)


def _drive(
    cfg: RunConfig, actors: list[Any], todo: list[WorkItem], model: ModelSpec, by_id: dict[str, Instance],
    run_id: str, version: str, sink: SampleSink, stats: ModelStats,
) -> None:
    """Keep up to the in-flight limit of batches going and write each finished batch to the sink."""
    queue = deque(_Batch(todo[i : i + model.batch_size]) for i in range(0, len(todo), model.batch_size))
    inflight: dict[ray.ObjectRef, tuple[_Batch, int]] = {}
    limit = max(cfg.max_inflight_batches, 2 * len(actors))
    next_actor = 0
    with Bar(f"{model.name}", len(todo)) as bar:
        while queue or inflight:
            while queue and len(inflight) < limit:
                batch = queue.popleft()
                idx = next_actor % len(actors)
                next_actor += 1
                reqs = [w.request for w in batch.items]
                insts = [by_id[w.instance_id] for w in batch.items]
                gen_ref = actors[idx].generate.remote(reqs)
                ref = score_batch.remote(run_id, version, insts, reqs, gen_ref)
                inflight[ref] = (batch, idx)
            ready, _ = ray.wait(list(inflight), num_returns=1)
            batch, idx = inflight.pop(ready[0])
            try:
                records: list[SampleRecord] = ray.get(ready[0])
            except (RayActorError, RayTaskError) as e:
                records = _handle_failure(cfg, batch, e, queue, stats, run_id, version, by_id)
            for r in records:
                stats.statuses[r.status] = stats.statuses.get(r.status, 0) + 1
            stats.written += sink.add(records)
            bar.advance(len(records))
    sink.flush()


def _handle_failure(
    cfg: RunConfig,
    batch: _Batch,
    err: Exception,
    queue: deque[_Batch],
    stats: ModelStats,
    run_id: str,
    version: str,
    by_id: dict[str, Instance],
) -> list[SampleRecord]:
    if batch.attempt < cfg.max_attempts:
        stats.retries += 1
        queue.append(_Batch(batch.items, batch.attempt + 1))
        return []
    msg = f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"[:300]
    stats.infra_errors += len(batch.items)
    return [
        score_sample(
            run_id, version, by_id[w.instance_id], w.request,
            ModelResponse(text=None, status="infra_error", error=msg, attempts=batch.attempt),
        )
        for w in batch.items
    ]
