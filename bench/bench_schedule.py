"""How close the run scheduler (`cluster.scheduler`) gets to the best possible makespan, on a simulated cluster.

    python bench/bench_schedule.py                 # 32 logical GPUs
    python bench/bench_schedule.py --gpus 8

A local Ray with `--gpus` logical GPUs (this CPU machine has none: the GPUs are Ray resources, placement groups
are real), the papers' model lists from cluster/models.yaml (`nphardeval4v-paper` over NPHardEval4V full:
900 instances x (3 prompt modes + 10 recognition asks); `graphverse-paper` over GraphVerse full: 11,000
samples), every model on the `simulated` backend (cluster/backends/simulated.py): a replica sleeps its load
time, then serves at the throughput `cluster.costs` estimates from the registry (parameters, GPUs per replica);
API models are bound by one shared rate limit per provider (`--api-rpm`). The GPT-5.1 judge (`--judge-rpm`)
judges every GraphVerse sample. All times are scaled so that the lower bound takes `--target-s` seconds.

What it measures: scheduling only (placement, replica counts, overlap, the judge streaming beside the models).
No prompts are built and nothing is written (a batch is a request count), so the driver's own per-sample
costs (planning, scoring, the Parquet sink) are not in these figures: bench_pipeline.py measures those.

Printed, in simulated hours and as ratios to the lower bound:
  scheduler       every model at once (`replicas: auto` for GPU models), the judge fed as batches finish;
  one_at_a_time   the order before: one model after another, each with every GPU its replicas fit (the old
                  `replicas: auto`), the judge after the last model;
  lower_bound     max(total GPU work / GPUs, the longest single model with the whole cluster, the busiest
                  API provider's requests / its rate), GPU work = (load + requests x seconds per request) x
                  GPUs per replica, one load per model;
  judge_tail      how long after the last model the judge finishes, as % of the makespan.
Last line: `scheduler/lower_bound=… one_at_a_time/lower_bound=… judge_tail=…%`. Aim: <= 1.15 and <= 5 %.
Replicas are hosted in two processes (`SimHost`), each with its own real placement group: a process per
replica would add its real start-up (seconds on a loaded machine, not scaled) to every load. The driver's
real per-event costs are not scaled either and make the ratios a little pessimistic; on a shared machine
run it twice.
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import ray  # noqa: E402

from cluster.backends.simulated import OPT_IN, SimHost, SimProvider  # noqa: E402
from cluster.config import ModelSpec  # noqa: E402
from cluster.costs import API_REQUEST_S, Cost, estimate  # noqa: E402
from cluster.registry import load_registry  # noqa: E402
from cluster.replicas import actor_options, gpus_per_replica, release  # noqa: E402
from cluster.scheduler import Batch, Job, Scheduler  # noqa: E402
from evalcore.secrets import provider_of  # noqa: E402

NPHE_FULL = 900 * (3 + 2 * 5)  # 9 tasks x 10 levels x 10; three prompt modes + recognition (2 pairs x 5 asks)
NPHE_FULL_TEXT_ONLY = 900
GRAPHVERSE_FULL = 11_000
BATCH = 256  # requests per simulated batch (keeps the driver's event count small)
JUDGE_BATCH = 256
VERBOSE = False
HOSTS = 2  # processes hosting the simulated replicas


@dataclass
class Model:
    spec: ModelSpec
    cost: Cost
    requests: int
    graphverse: int  # of which GraphVerse (judged)
    provider: str | None  # API models: the rate-limited key


def models() -> list[Model]:
    reg = load_registry()
    out: dict[str, Model] = {}
    for group, bench in (("nphardeval4v-paper", "nphe"), ("graphverse-paper", "gv")):
        for e in reg.entries(group):
            spec = reg.spec(e)
            n = GRAPHVERSE_FULL if bench == "gv" else (NPHE_FULL_TEXT_ONLY if spec.text_only else NPHE_FULL)
            m = out.get(spec.name)
            if m is None:
                cost = estimate(spec.name, spec.backend, gpus_per_replica(spec), spec.options)
                prov = provider_of(spec.options.get("model") or spec.name) if spec.backend == "litellm" else None
                m = out[spec.name] = Model(spec, cost, 0, 0, prov)
            m.requests += n
            m.graphverse += n if bench == "gv" else 0
    return list(out.values())


def lower_bound(ms: list[Model], gpus: int, api_request_s: float) -> float:
    gpu = [m for m in ms if m.cost.gpus >= 1]
    work = sum((m.cost.load_s + m.requests * m.cost.request_s) * m.cost.gpus for m in gpu)
    longest = max((m.cost.load_s + m.requests * m.cost.request_s / max(1, gpus // int(m.cost.gpus))
                   for m in gpu), default=0.0)
    per_provider: dict[str, int] = {}
    for m in ms:
        if m.provider:
            per_provider[m.provider] = per_provider.get(m.provider, 0) + m.requests
    api = max((n * api_request_s + API_REQUEST_S for n in per_provider.values()), default=0.0)
    return max(work / gpus, longest, api)


class SimJudge:
    """The judge stage of the simulation: GraphVerse batches in as they finish, a rate-limited pool out."""

    def __init__(self, hosts: list[Any], provider: Any, actors: int, scale: float, inflight_per_actor: int = 4) -> None:
        opts = {OPT_IN: True, "time_scale": scale, "latency_s": API_REQUEST_S}
        self.actors = [Hosted(hosts[i % len(hosts)], f"judge-{i}-{uuid.uuid4().hex[:6]}", ("gpt-5.1", opts, provider))
                       for i in range(actors)]
        ray.get([a.ready.remote() for a in self.actors])
        self.limit = actors * inflight_per_actor
        self.fill = 0
        self.queue: deque[int] = deque()
        self.inflight: dict[Any, int] = {}
        self.nxt = 0
        self.judged = 0
        self.done_at = 0.0

    def add(self, n: int) -> None:
        self.fill += n
        while self.fill >= JUDGE_BATCH:
            self.queue.append(JUDGE_BATCH)
            self.fill -= JUDGE_BATCH

    def pump(self) -> None:
        if self.fill and len(self.inflight) + len(self.queue) < self.limit:
            self.queue.append(self.fill)
            self.fill = 0
        while self.queue and len(self.inflight) < self.limit:
            n = self.queue.popleft()
            self.inflight[self.actors[self.nxt % len(self.actors)].run.remote(n)] = n
            self.nxt += 1

    def refs(self) -> list[Any]:
        return list(self.inflight)

    def handle(self, ref: Any) -> None:
        self.inflight.pop(ref)
        self.judged += ray.get(ref)
        self.done_at = time.monotonic()

    def idle(self) -> bool:
        return not (self.fill or self.queue or self.inflight)


class _Method:
    def __init__(self, fn: Any) -> None:
        self.remote = fn


class Hosted:
    """A simulated replica inside a SimHost, with the `ready` / `run` methods of an actor handle."""

    def __init__(self, host: Any, rid: str, init: tuple[Any, ...], placed: Any = None) -> None:
        self.host, self.rid = host, rid
        self.ready = _Method(lambda: host.ready.remote(rid, *init, placed))
        self.run = _Method(lambda n: host.run.remote(rid, n))

    def drop(self) -> None:
        self.host.drop.remote(self.rid)


def job(m: Model, scale: float, hosts: list[Any], providers: dict[str, Any], judge: SimJudge | None,
        replicas: int | str, estimate_load: bool = True) -> Job:
    opts = {OPT_IN: True, "time_scale": scale, "load_s": m.cost.load_s, "request_s": m.cost.request_s,
            "latency_s": API_REQUEST_S if m.provider else 0.0}
    provider = providers.get(m.provider) if m.provider else None
    # GraphVerse samples are judged: the job's last batches are its GraphVerse ones (as planned per dataset)
    sizes = [min(BATCH, m.requests - i) for i in range(0, m.requests, BATCH)]
    gv_from = m.requests - m.graphverse
    batches = deque(Batch((i * BATCH, s), s) for i, s in enumerate(sizes))

    def start(i: int, _cpus: float) -> tuple[Any, dict[str, Any]]:
        placement = actor_options(m.spec, i, wait_s=None) if m.cost.gpus >= 1 else {}
        strategy = placement.get("scheduling_strategy")
        placed = strategy.placement_group.ready() if strategy is not None else None
        host = hosts[hash((m.spec.name, i)) % len(hosts)]
        return Hosted(host, f"{m.spec.name}/{i}/{uuid.uuid4().hex[:6]}", (m.spec.name, opts, provider), placed), placement

    def finish(batch: Batch, _n: Any) -> None:
        first, n = batch.payload
        if judge is not None:
            judged = max(0, first + n - max(first, gv_from))
            if judged:
                judge.add(judged)

    def free(actor: Any, placement: dict[str, Any]) -> None:
        actor.drop()
        release(placement)

    def fail(batch: Batch, msg: str) -> None:
        raise RuntimeError(f"simulated replica of {m.spec.name} failed: {msg}")

    return Job(name=m.spec.name, gpus=m.cost.gpus, replicas=replicas,
               load_s=m.cost.load_s if estimate_load else 0.0, request_s=m.cost.request_s, batches=batches,
               start=start, submit=lambda a, p: a.run.remote(p[1]), finish=finish, fail=fail, release=free,
               per_replica_inflight=4)


def run_scheduler(ms: list[Model], scale: float, hosts: list[Any], providers: dict[str, Any], judge_provider: Any,
                  gpus: int, judge_actors: int) -> tuple[float, float]:
    judge = SimJudge(hosts, judge_provider, judge_actors, scale)
    jobs = [job(m, scale, hosts, providers, judge, "auto" if m.cost.gpus >= 1 else 1) for m in ms]
    t0 = time.monotonic()
    sched = Scheduler(jobs, [judge], total_gpus=gpus)
    sched.run()
    last = max(j.last_done or t0 for j in jobs)
    if VERBOSE:
        for t, name, ev in sched.events:
            print(f"  {t - t0:7.2f}s {name:28s} {ev}")
    return last - t0, max(judge.done_at, last) - last


def run_one_at_a_time(ms: list[Model], scale: float, hosts: list[Any], providers: dict[str, Any],
                      judge_provider: Any, gpus: int, judge_actors: int) -> tuple[float, float]:
    judge = SimJudge(hosts, judge_provider, judge_actors, scale)
    t0 = time.monotonic()
    for m in ms:
        # the old `replicas: auto`: every replica the free GPUs hold, started at once
        n = max(1, gpus // int(m.cost.gpus)) if m.cost.gpus >= 1 else 1
        Scheduler([job(m, scale, hosts, providers, judge, n, estimate_load=False)], [], total_gpus=gpus).run()
    last = time.monotonic()
    Scheduler([], [judge], total_gpus=gpus).run()  # the judge after every model, as before
    return last - t0, max(judge.done_at, last) - last


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gpus", type=int, default=32)
    ap.add_argument("--api-rpm", type=float, default=2000.0, help="per API provider key (shared by its models)")
    ap.add_argument("--judge-rpm", type=float, default=3000.0, help="the GPT-5.1 judge's key")
    ap.add_argument("--judge-actors", type=int, default=4)
    ap.add_argument("--target-s", type=float, default=45.0, help="real seconds the lower bound is scaled to")
    ap.add_argument("--skip-old", action="store_true", help="only the new scheduler")
    ap.add_argument("--verbose", action="store_true", help="print the scheduler's replica events")
    args = ap.parse_args()
    global VERBOSE
    VERBOSE = args.verbose

    ms = models()
    api_request_s = 60.0 / args.api_rpm
    lb = lower_bound(ms, args.gpus, api_request_s)
    scale = args.target_s / lb
    gpu_models = [m for m in ms if m.cost.gpus >= 1]
    print(f"{len(ms)} models ({len(gpu_models)} on GPUs, {len(ms) - len(gpu_models)} API), "
          f"{sum(m.requests for m in ms):,} requests, {sum(m.graphverse for m in ms):,} judged; {args.gpus} GPUs; "
          f"lower bound {lb / 3600:.2f} h simulated = {args.target_s:.0f} s real (scale {scale:.2e})")
    ray.init(address="local", num_cpus=args.gpus + 32, num_gpus=args.gpus, include_dashboard=False,
             log_to_driver=False)
    try:
        def providers() -> tuple[dict[str, Any], Any]:
            cls = ray.remote(num_cpus=0.01)(SimProvider)
            keys = {m.provider for m in ms if m.provider}
            return ({k: cls.remote(api_request_s * scale) for k in keys},
                    cls.remote(60.0 / args.judge_rpm * scale))

        hosts = [ray.remote(num_cpus=0)(SimHost).remote() for _ in range(HOSTS)]
        ray.get([h.drop.remote("warm-up") for h in hosts])  # their processes start before any clock
        p, jp = providers()
        new, new_tail = run_scheduler(ms, scale, hosts, p, jp, args.gpus, args.judge_actors)
        print(f"scheduler      makespan {new / scale / 3600:6.2f} h  ({new:6.1f} s real)  x{new / args.target_s:.3f}"
              f"  judge done {new_tail / scale / 60:.1f} min after the last model")
        old = old_tail = float("nan")
        if not args.skip_old:
            p, jp = providers()
            old, old_tail = run_one_at_a_time(ms, scale, hosts, p, jp, args.gpus, args.judge_actors)
            print(f"one_at_a_time  makespan {old / scale / 3600:6.2f} h  ({old:6.1f} s real)  "
                  f"x{old / args.target_s:.3f}  judge done {old_tail / scale / 60:.1f} min after the last model")
    finally:
        ray.shutdown()
    tail = 100.0 * new_tail / new
    print(f"scheduler/lower_bound={new / args.target_s:.2f} one_at_a_time/lower_bound={old / args.target_s:.2f} "
          f"judge_tail={tail:.1f}%")


if __name__ == "__main__":
    main()
