"""The judge stage of a run: VGR-Score for every sample of a judged benchmark (`Benchmark.judged`), written to
RUN_DIR/judgments/.

    stream = JudgeStream(out, datasets, cfg.judge, hold=True)   # in a run: fed as samples are scored,
    ...                                                         # driven by cluster.scheduler beside the models
    run_judge_stage(out, datasets, cfg)                         # alone (nphe4v judge RUN)

* `rule-based` (the default, no model configured): the deterministic rule scorer, in the driver.
* an LLM judge is a model job of the run's scheduler (`cluster.scheduler.Job`, fed while the models run:
  `Job.feeding`): its batches go to replicas of the models' own actor class (`cluster.pipeline.ModelActor.judge`)
  with the models' own backends, placed, granted CPUs, replaced and given up on as the models' replicas
  are. An open-weights judge (`judge_work.judge_replica`: a vllm model of the run or of the registry) runs on
  a vLLM engine of this cluster, placed as that model's replicas are (`cluster.replicas`), no outside
  server; an API judge (any litellm model) on replicas holding the API client,
  sharing ONE rate limiter per provider key (`evalcore.ratelimit.SharedLimiter`, the same limiter model
  backends of that key use), litellm with num_retries=0 so every 429 reaches it.
* Successful judgments are cached on disk, content-addressed by everything that changes the answer
  (`judge.llm_judge.cache_key`): a rerun of the same judge costs zero calls and never starts Ray; a
  failed or malformed judgment is asked again. Identical responses in one run are judged once. A repeat
  asks for a new `repeat` index explicitly.
* F of VGR-Score is the exact verifier's verdict on the sample, never the judge's own flag.
* Exactly once per (sample key, judge, template, judge repeat) across reruns: judgments are shards of a
  `evalcore.shards.ShardWriter`, like the samples; a batch whose actor died is resubmitted, then
  recorded as `judge_error` (infra), never as a score.

What is asked and what is written (planning, Judgment records) is `cluster.judge_work`; the progress line is
`cluster.judge_progress`; this module runs the stage.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import polars as pl
import ray

from cluster.actor_pool import Batch
from cluster.config import JUDGE_CACHE_DIR, JudgeConfig
from cluster.judge_progress import JudgeProgress
from cluster.judge_work import (
    Planner,
    Work,
    empty_record,
    instances_of,
    judge_replica,
    judged_benchmarks,
    resolve_spec,
    result_record,
    rule_record,
)
from cluster.scheduler import Backlog, Job, Scheduler
from evalcore import secrets
from evalcore.records import read_samples
from evalcore.shards import ShardWriter, storage_error
from judge.cache import JudgeCache
from judge.llm_judge import JudgeItem, JudgeResult, JudgeSpec, LLMJudge, client_options
from judge.rule_scorer import RULE_VERSION
from judge.schema import JUDGE_KEY_COLUMNS, JUDGMENT_SCHEMA, Judgment
from judge.vgr import JUDGE_MANIFEST, JUDGMENTS_DIR

__all__ = ["JudgeStageStats", "JudgeStream", "print_stats", "run_judge_stage"]


def judgment_writer(root: Path, flush_rows: int = 2000) -> ShardWriter:
    """Judgment shards under <root>/<judge>/, exactly once per judgment key across reruns."""
    return ShardWriter(root, JUDGMENT_SCHEMA, JUDGE_KEY_COLUMNS, partition_by=["judge"], what="judgment",
                       flush_rows=flush_rows)


# -------------------------------------------------------------------------------------------- the pool


# Ray restarts a crashed judge replica (a `ModelActor`) up to its max_restarts; the pool resubmits the batches it
# lost (`JudgeConfig.max_attempts`)


@dataclass
class JudgeStageStats:
    judge: str
    template: str
    judge_repeat: int
    planned: int = 0
    skipped: int = 0  # already judged (exactly once across reruns)
    cached: int = 0  # served from the cache: zero calls
    judged: int = 0  # distinct judge requests made this time
    calls: int = 0  # HTTP calls this time (retries included)
    judge_errors: int = 0  # judge_error rows written this time, whatever their origin
    written: int = 0
    resubmitted: int = 0
    seconds: float = 0.0
    errors: dict[str, int] = field(default_factory=dict)


def run_judge_stage(
    run_dir: str | Path,
    datasets: Iterable[Any] | None = None,
    cfg: JudgeConfig | dict[str, Any] | None = None,
    *,
    start_ray: Callable[[], None] | None = None,
    out_dir: str | Path | None = None,
    set_default: bool = True,
    models: Iterable[Any] | None = None,
) -> JudgeStageStats:
    """Judge every sample of a judged benchmark (`Benchmark.judged`) in RUN_DIR not yet judged by this
    judge/template/repeat.

    Writes RUN_DIR/judgments/ (or OUT_DIR/judgments/) and records the run's default judge in
    judgments/manifest.json the first time (`set_default`). Returns counts; never calls a model for a
    cached judgment, and never starts Ray when nothing needs a call. The stage alone: a run streams its
    samples into a `JudgeStream` beside the models instead. `models`: the run's models (ModelSpecs), which
    the judge may name (`judge_work.judge_replica`)."""
    stream = JudgeStream(run_dir, datasets, cfg, start_ray=start_ray, out_dir=out_dir, set_default=set_default,
                         models=models)
    if stream.enabled:
        samples = read_samples(run_dir)
        stream.add_rows(samples.filter(pl.col("benchmark").is_in(judged_benchmarks())).iter_rows(named=True))
    return stream.finish()




class JudgeStream:
    """The judge as a stage of the run's pipeline: sample rows in as they are scored, judgments out.

    Rule-based, empty and cached judgments are written at once in the driver; the rest go in batches to the
    judge's model job (`job`, a `cluster.scheduler.Job` whose replicas are `ModelActor`s; a partial batch
    leaves as soon as the job has room, so nothing waits for the models to finish). In a run the scheduler
    runs that job beside the models' (`served_jobs`) and pumps this stage (a `cluster.scheduler.Stage`);
    alone, `finish()` runs the job on a scheduler of its own. With `hold=True` judgments are written only on
    `flush()`, which the run calls after the samples they judge are on disk, so a crash never leaves a
    judgment of a sample that a resume recomputes."""

    def __init__(self, run_dir: str | Path, datasets: Iterable[Any] | None = None,
                 cfg: JudgeConfig | dict[str, Any] | None = None, *, start_ray: Callable[[], None] | None = None,
                 out_dir: str | Path | None = None, set_default: bool = True, hold: bool = False,
                 models: Iterable[Any] | None = None) -> None:
        self.cfg = cfg = JudgeConfig.model_validate(cfg or {}) if not isinstance(cfg, JudgeConfig) else cfg
        self.run = Path(run_dir)
        self.out = Path(out_dir) if out_dir is not None else self.run
        models = list(models or ())
        self.spec = resolve_spec(cfg.model, cfg.options, models)
        # the vLLM model serving an open-weights judge (None: an API judge, or rule-based)
        self.replica = judge_replica(cfg.model, models) if cfg.enabled else None
        self.template = RULE_VERSION if self.spec.is_rule else self.spec.template_obj().version
        self.stats = JudgeStageStats(judge=self.spec.identity, template=self.template, judge_repeat=cfg.repeat)
        self.enabled = cfg.enabled
        self.start_ray = start_ray or _init_ray
        self.datasets = datasets
        self.set_default = set_default
        self.hold = hold
        self.t0 = time.monotonic()
        self.sink: ShardWriter | None = None
        self.planner: Planner | None = None
        self.cache: JudgeCache | None = None
        self.pending: dict[str, list[Work]] = {}  # content key -> samples waiting for that judgment
        self.fill: list[tuple[str, JudgeItem]] = []  # the batch being filled
        # the judge's model job: batches of (content key, item); a batch that keeps failing is a judge_error
        self.job: Job | None = self._job() if self.enabled and not self.spec.is_rule else None
        self.bar: JudgeProgress | None = None
        self.local: list[tuple[str, JudgeItem]] = []
        self.planned_work = 0

    # ---- input ---------------------------------------------------------------------------------------------
    def _open(self) -> None:
        if self.sink is not None:
            return
        self.sink = judgment_writer(self.out / JUDGMENTS_DIR, flush_rows=10**12 if self.hold else 2000)
        self.planner = Planner(self.run, instances_of(self.run, self.datasets), self.spec, self.cfg.repeat,
                               self.template, self.sink.done)
        if self.set_default:
            _record_default(self.out, self.spec, self.template, self.cfg.repeat)
        if not self.spec.is_rule:
            self.cache = JudgeCache(self.cfg.cache_dir or (self.run / JUDGE_CACHE_DIR))

    def add_records(self, records: Iterable[Any]) -> None:
        """Freshly scored SampleRecords; the response text is redacted as the sample sink will store it."""
        rows = []
        judged = judged_benchmarks()
        for rec in records:
            if rec.benchmark not in judged or rec.status == "infra_error":
                continue
            row = rec.model_dump()
            if row["raw_response"]:
                row["raw_response"] = secrets.redact(row["raw_response"])
            rows.append(row)
        if rows:
            self.add_rows(rows)

    def add_rows(self, rows: Iterable[dict[str, Any]]) -> None:
        if not self.enabled:
            return
        judged = judged_benchmarks()
        for r in rows:
            if r["benchmark"] not in judged:
                continue
            self._open()
            assert self.planner is not None and self.sink is not None
            w = self.planner.work(r)
            self.stats.skipped = self.planner.skipped
            if w is None:
                continue
            self.planned_work += 1
            if self.spec.is_rule:
                _write(self.sink, self.stats, [rule_record(w) if w.item.response else empty_record(w)])
                continue
            if not w.item.response:
                _write(self.sink, self.stats, [empty_record(w)])
                continue
            if w.key in self.pending:  # identical response already asked: judged once
                self.pending[w.key].append(w)
                continue
            assert self.cache is not None
            hit = self.cache.get(w.key)
            if hit is not None:
                self.stats.cached += 1
                _write(self.sink, self.stats, [result_record(w, JudgeResult.from_json(hit), cached=True, calls=0)])
                continue
            self.pending[w.key] = [w]
            self._progress().total += 1
            if self.cfg.executor == "local":
                self.local.append((w.key, w.item))
                continue
            self.fill.append((w.key, w.item))
            if len(self.fill) >= self.cfg.batch_size:
                self._put_fill()

    def _progress(self) -> JudgeProgress:
        if self.bar is None:
            self.bar = JudgeProgress(0, self.spec.identity, enabled=self.cfg.progress).__enter__()
        return self.bar

    # ---- the judge's model job (cluster.scheduler.Job) and the stage (cluster.scheduler.Stage) -------------
    def _job(self) -> Job:
        """The judge as a model job of the run's scheduler: replicas of the models' actor class
        (`cluster.pipeline.ModelActor`, method `judge`) with the models' backends, placed, granted CPUs,
        replaced on a crash loop and given up on past their failure budget as the models' replicas are."""
        from cluster.backends.litellm_api import ensure_shared_limiter, forget_replica
        from cluster.costs import estimate
        from cluster.pipeline import ModelActor
        from cluster.replicas import actor_options, gpus_per_replica, release

        spec, cfg, tag = self.spec, self.cfg, uuid.uuid4().hex[:8]
        m = self.replica
        if m is not None:  # an open-weights judge on this cluster's vLLM replicas, placed as that model's are
            backend, name, options = "vllm", m.name, m.options
            gpus, replicas, cpus = gpus_per_replica(m), m.replicas, m.num_cpus
        else:  # an API judge: replicas holding the API client (I/O bound), the key's limiter shared
            backend, name, gpus, replicas, cpus = "litellm", spec.model, 0.0, cfg.actors, cfg.num_cpus
            options = client_options(spec).model_copy(update={"limiter": "shared"}).model_dump()

        def start(i: int, grant: float) -> tuple[Any, dict[str, Any]]:
            if i == 0 and m is None:  # the driver owns the key's limiter, so it outlives any replica
                ensure_shared_limiter(spec.model, options)
            opts = actor_options(m, i, wait_s=None, num_cpus=grant) if m is not None else {"num_cpus": grant}
            actor = ModelActor.options(**opts, name=f"nphe4v-judge/{tag}/{i}").remote(backend, name, None, options)
            return actor, opts

        def free(actor: Any, opts: dict[str, Any]) -> None:
            ray.kill(actor)  # ending the actor is what frees a vLLM replica's memory
            if m is None:  # its provider slots are free now, not a lease TTL later
                forget_replica(spec.model, options, actor)
            release(opts)

        cost = estimate(name, backend, gpus, {"max_concurrency": spec.max_concurrency} if m is None else options)
        return Job(name=f"judge:{spec.identity}", gpus=gpus, replicas=replicas, load_s=cost.load_s,
                   request_s=cost.request_s, batches=Backlog.of([]), start=start, submit=self._submit,
                   finish=self._judged, fail=self._failed, release=free,
                   per_replica_inflight=cfg.max_inflight_batches, max_attempts=cfg.max_attempts, cpus=cpus)

    def served_jobs(self, models_running: Callable[[], bool]) -> list[Job]:
        """The judge's job for the run's scheduler, fed while the models run (`Job.feeding`)."""
        if self.job is None or self.cfg.executor != "ray":
            return []
        self.job.feeding = lambda: models_running() or bool(self.fill)
        return [self.job]

    def _put_fill(self) -> None:
        assert self.job is not None
        self.job.pool.put(Batch(self.fill, len(self.fill)))
        self.fill = []

    def pump(self) -> None:
        if not self.fill or self.job is None:
            return
        pool = self.job.pool
        if len(pool.inflight) + len(pool.queue) < self.cfg.max_inflight_batches * max(1, len(pool.members)):
            self._put_fill()  # the judge has room: a partial batch now beats a full one later

    def _submit(self, actor: Any, batch: list[tuple[str, JudgeItem]]) -> Any:
        assert self.cache is not None
        return actor.judge.remote(self.spec.model_copy(update={"limiter": "shared"}).model_dump(),
                                  str(self.cache.root), batch)

    def refs(self) -> list[Any]:
        return []  # the judge's batches are its job's: the scheduler waits on them

    def handle(self, ref: Any) -> None:  # pragma: no cover - refs() is empty
        raise KeyError(ref)

    def _judged(self, batch: Batch, out: list[tuple[str, dict[str, Any]]]) -> None:
        for k, res in out:
            self._emit(k, JudgeResult.from_json(res))

    def _failed(self, batch: Batch, why: str) -> None:
        # the exception's type only: the message of a dead actor is a long Ray traceback
        msg = f"judge replica failed (batch tried {batch.attempt} times): {why.split(':', 1)[0]}"
        for k, _ in batch.payload:
            self._emit(k, JudgeResult(status="judge_error", error_kind="infra", error=msg))

    def _emit(self, k: str, res: JudgeResult) -> None:
        assert self.sink is not None
        _emit(self.sink, self.stats, self.pending.pop(k), res)
        self._progress().advance(res.status != "ok")

    def idle(self) -> bool:
        return not self.fill  # what is queued is the judge job's (the scheduler runs it to its end)

    # ---- end -----------------------------------------------------------------------------------------------
    def flush(self) -> None:
        if self.sink is not None:
            self.sink.flush()

    def finish(self) -> JudgeStageStats:
        """Judge what is left (alone, when no scheduler drives the pool), write everything, free the pool."""
        try:
            if self.local:
                assert self.cache is not None
                _judge_local(self.spec, self.replica, self.cache, self.local, self._emit)
                self.local = []
            job = self.job
            if self.fill:
                self._put_fill()
            if job is not None and job.batches and job.status == "pending":  # alone: the stage's own scheduler
                self.start_ray()
                Scheduler([job]).run()
            if job is not None:
                self.stats.resubmitted = job.retries
        finally:
            self.close()
        self.flush()
        self.stats.planned = self.planned_work + self.stats.skipped
        self.stats.seconds = time.monotonic() - self.t0
        return self.stats

    def close(self) -> None:
        """The progress line ends; the judge's replicas are the scheduler's, which ends them with the job (or
        on an interrupt)."""
        if self.bar is not None:
            self.bar.__exit__(None, None, None)
            self.bar = None



def _write(sink: ShardWriter, stats: JudgeStageStats, recs: list[Judgment]) -> None:
    """Queue records and count what was written: every judge_error row counts, cached or not."""
    for rec in sink.add(recs):
        stats.written += 1
        if rec.status != "ok":
            stats.judge_errors += 1
            kind = rec.error_kind or "?"
            stats.errors[kind] = stats.errors.get(kind, 0) + 1


def _emit(sink: ShardWriter, stats: JudgeStageStats, works: list[Work], res: JudgeResult) -> None:
    stats.judged += 1
    stats.calls += res.calls
    # the first sample carries the calls; identical responses elsewhere in the run share the judgment
    _write(sink, stats, [result_record(w, res, cached=i > 0, calls=res.calls if i == 0 else 0)
                         for i, w in enumerate(works)])



def _judge_local(spec: JudgeSpec, replica: Any, cache: JudgeCache, unique: list[tuple[str, JudgeItem]],
                 emit: Callable[[str, JudgeResult], None]) -> None:
    """The judge in this process: through the LLM client, or (an open-weights judge) a vLLM engine of the
    judge's model started here, the backend its replicas would run."""
    from cluster.backends.factory import chat_client, make_backend

    backend = None
    if replica is not None:
        backend = make_backend("vllm", replica.name, None, replica.options)
        backend.ready.wait()
    try:
        client = chat_client(backend) if backend is not None else None
        judge = LLMJudge(spec.model_copy(update={"limiter": "local"}), client=client)

        async def go() -> None:
            async def one(k: str, item: JudgeItem) -> None:
                res = await judge.judge(item)
                if res.cacheable:  # successful judgments only
                    cache.put(k, res.to_json())
                emit(k, res)  # one event loop: emits never interleave

            await asyncio.gather(*(one(k, i) for k, i in unique))

        asyncio.run(go())
    finally:
        if backend is not None:
            backend.close()


def _init_ray() -> None:
    from evalcore.local_ray import start_local_ray

    if ray.is_initialized():
        return
    if os.environ.get("RAY_ADDRESS"):  # under `ray job submit`: join the job's cluster
        ray.init(address=os.environ["RAY_ADDRESS"], log_to_driver=True)
    else:  # "local" starts a private Ray; a plain init would attach to any other Ray on this machine
        start_local_ray(os.cpu_count(), log_to_driver=True)


def _record_default(out: Path, spec: JudgeSpec, template: str, repeat: int) -> None:
    p = out / JUDGMENTS_DIR / JUDGE_MANIFEST
    man = json.loads(p.read_text()) if p.exists() else {}
    ident = {"judge": spec.identity, "judge_snapshot": spec.pinned, "judge_template": template,
             "judge_repeat": repeat}
    if "default" not in man:
        man["default"] = ident
    judges = man.setdefault("judges", [])
    if ident not in judges:
        judges.append(ident)
    tmp = p.with_name(f".{p.name}.tmp")
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(man, indent=2, sort_keys=True) + "\n")
        os.replace(tmp, p)
    except OSError as e:  # a full or read-only disk: one line naming the file, no temporary left
        tmp.unlink(missing_ok=True)
        raise (storage_error(e, p) or e) from None


def print_stats(stats: JudgeStageStats) -> None:
    print(f"judge {stats.judge} [{stats.template}] repeat {stats.judge_repeat}: " +
          ", ".join(f"{k}={v}" for k, v in asdict(stats).items() if k not in ("judge", "template", "judge_repeat")),
          file=sys.stderr)
