"""The judge stage of a run: VGR-Score for every GraphVerse sample, written to RUN_DIR/judgments/.

    stream = JudgeStream(out, datasets, cfg.judge, hold=True)   # in a run: fed as samples are scored,
    ...                                                         # driven by cluster.scheduler beside the models
    run_judge_stage(out, datasets, cfg)                         # alone (jobs/judge_rerun.py)

* `rule-based` (the default, no model configured): the deterministic rule scorer, in the driver.
* any litellm model: a pool of `JudgeActor`s on Ray (`cluster.actor_pool.ActorPool`: bounded batches in
  flight per actor, each actor a bounded number of concurrent calls) sharing ONE rate limiter per provider key (`evalcore.ratelimit.SharedLimiter`,
  the same limiter model backends of that key use), litellm with num_retries=0 so every 429 reaches it.
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

from cluster.actor_pool import ActorPool, Batch
from cluster.config import JUDGE_CACHE_DIR, JudgeConfig
from cluster.judge_progress import JudgeProgress
from cluster.judge_work import (
    BENCHMARK,
    Planner,
    Work,
    empty_record,
    instances_of,
    resolve_spec,
    result_record,
    rule_record,
)
from evalcore import secrets
from evalcore.ratelimit import LimitSettings, get_or_create_limiter_actor
from evalcore.records import read_samples
from evalcore.shards import ShardWriter, storage_error
from judge.cache import JudgeCache
from judge.llm_judge import JudgeItem, JudgeResult, JudgeSpec, LLMJudge
from judge.rule_scorer import RULE_VERSION
from judge.schema import JUDGE_KEY_COLUMNS, JUDGMENT_SCHEMA, Judgment
from judge.vgr import JUDGE_MANIFEST, JUDGMENTS_DIR

__all__ = ["BENCHMARK", "JudgeStageStats", "JudgeStream", "print_stats", "run_judge_stage"]


def judgment_writer(root: Path, flush_rows: int = 2000) -> ShardWriter:
    """Judgment shards under <root>/<judge>/, exactly once per judgment key across reruns."""
    return ShardWriter(root, JUDGMENT_SCHEMA, JUDGE_KEY_COLUMNS, partition_by=["judge"], what="judgment",
                       flush_rows=flush_rows)


# -------------------------------------------------------------------------------------------- the pool


class JudgeActor:
    """One member of the judge pool: an LLMJudge (shared per-key limiter inside Ray) and the cache."""

    def __init__(self, spec: dict[str, Any], cache_dir: str) -> None:
        self.judge = LLMJudge(JudgeSpec(**spec))
        self.cache = JudgeCache(cache_dir)

    async def judge_batch(self, batch: list[tuple[str, JudgeItem]]) -> list[tuple[str, dict[str, Any]]]:
        async def one(key: str, item: JudgeItem) -> tuple[str, dict[str, Any]]:
            res = await self.judge.judge(item)
            if res.cacheable:  # successful judgments only
                self.cache.put(key, res.to_json())
            return key, res.to_json()

        return list(await asyncio.gather(*(one(k, i) for k, i in batch)))

    def ready(self) -> bool:
        return True


# Ray restarts a crashed judge actor twice; the pool resubmits the batches it lost (`JudgeConfig.max_attempts`)
RemoteJudgeActor = ray.remote(max_restarts=2, max_task_retries=0, max_concurrency=64)(JudgeActor)


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
) -> JudgeStageStats:
    """Judge every GraphVerse sample of RUN_DIR not yet judged by this judge/template/repeat.

    Writes RUN_DIR/judgments/ (or OUT_DIR/judgments/) and records the run's default judge in
    judgments/manifest.json the first time (`set_default`). Returns counts; never calls a model for a
    cached judgment, and never starts Ray when nothing needs a call. The stage alone: a run streams its
    samples into a `JudgeStream` beside the models instead."""
    stream = JudgeStream(run_dir, datasets, cfg, start_ray=start_ray, out_dir=out_dir, set_default=set_default)
    if stream.enabled:
        samples = read_samples(run_dir)
        stream.add_rows(samples.filter(pl.col("benchmark") == BENCHMARK).iter_rows(named=True))
    return stream.finish()




class JudgeStream:
    """The judge as a stage of the run's pipeline: sample rows in as they are scored, judgments out.

    Rule-based, empty and cached judgments are written at once in the driver; the rest go to a pool of
    `JudgeActor`s in batches (a partial batch leaves as soon as the pool has room, so nothing waits for the
    models to finish). It is a `cluster.scheduler.Stage`: the run's scheduler waits on its refs beside the
    model batches; `finish()` drives what is left alone. With `hold=True` judgments are written only on
    `flush()`, which the run calls after the samples they judge are on disk, so a crash never leaves a
    judgment of a sample that a resume recomputes."""

    def __init__(self, run_dir: str | Path, datasets: Iterable[Any] | None = None,
                 cfg: JudgeConfig | dict[str, Any] | None = None, *, start_ray: Callable[[], None] | None = None,
                 out_dir: str | Path | None = None, set_default: bool = True, hold: bool = False) -> None:
        self.cfg = cfg = JudgeConfig.model_validate(cfg or {}) if not isinstance(cfg, JudgeConfig) else cfg
        self.run = Path(run_dir)
        self.out = Path(out_dir) if out_dir is not None else self.run
        self.spec = resolve_spec(cfg.model, cfg.options)
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
        # the pool's batches are lists of (content key, item); a batch that keeps failing is a judge_error
        self.pool = ActorPool(lambda actor, batch: actor.judge_batch.remote(batch), self._judged, self._failed,
                              max_inflight=cfg.max_inflight_batches, max_attempts=cfg.max_attempts)
        self.limiter: Any = None
        self.bar: JudgeProgress | None = None
        self.local: list[tuple[str, JudgeItem]] = []
        self.planned_work = 0
        # start the pool with the run, not with the first sample: actors importing litellm take seconds
        self.prestart = False

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
        for rec in records:
            if rec.benchmark != BENCHMARK or rec.status == "infra_error":
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
        for r in rows:
            if r["benchmark"] != BENCHMARK:
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
                self.pool.put(Batch(self.fill, len(self.fill)))
                self.fill = []

    def _progress(self) -> JudgeProgress:
        if self.bar is None:
            self.bar = JudgeProgress(0, self.spec.identity, enabled=self.cfg.progress).__enter__()
        return self.bar

    # ---- the pool (cluster.scheduler.Stage) ----------------------------------------------------------------
    def _limit(self) -> int:
        return self.cfg.max_inflight_batches * max(1, len(self.pool.members) or self.cfg.actors)

    def pump(self) -> None:
        if self.prestart and not self.pool.members and self.enabled and not self.spec.is_rule \
                and self.cfg.executor == "ray":
            self.prestart = False
            self._open()
            self._start_pool()
        if self.fill and len(self.pool.inflight) + len(self.pool.queue) < self._limit():
            # the pool has room: a partial batch now beats a full one later
            self.pool.put(Batch(self.fill, len(self.fill)))
            self.fill = []
        if not self.pool.queue:
            return
        if not self.pool.members:
            self._start_pool()
        self.pool.dispatch()

    def _start_pool(self) -> None:
        self.start_ray()
        spec, cfg = self.spec, self.cfg
        assert self.cache is not None
        # create the key's limiter from the driver first, so it outlives any one judge actor
        provider = secrets.provider_of(spec.model)
        kid = secrets.key_id(provider, secrets.get_key(provider, spec.api_key_env), spec.api_base)
        self.limiter = get_or_create_limiter_actor(
            kid, LimitSettings(max_concurrency=spec.max_concurrency, rpm=spec.rpm,
                               backoff_base_s=max(spec.backoff_base_s, 0.01), backoff_max_s=spec.backoff_max_s))
        for i in range(cfg.actors):
            self.pool.add_member(
                RemoteJudgeActor.options(num_cpus=cfg.num_cpus, name=f"nphe4v-judge/{uuid.uuid4().hex[:8]}/{i}").remote(
                    spec.model_copy(update={"limiter": "shared"}).model_dump(), str(self.cache.root)))

    def refs(self) -> list[Any]:
        return self.pool.refs()

    def handle(self, ref: Any) -> None:
        self.pool.handle(ref)
        self.stats.resubmitted = self.pool.retries

    def _judged(self, batch: Batch, out: list[tuple[str, dict[str, Any]]]) -> None:
        for k, res in out:
            self._emit(k, JudgeResult.from_json(res))

    def _failed(self, batch: Batch, why: str) -> None:
        # the exception's type only: the message of a dead actor is a long Ray traceback
        msg = f"judge actor failed {batch.attempt} times: {why.split(':', 1)[0]}"
        for k, _ in batch.payload:
            self._emit(k, JudgeResult(status="judge_error", error_kind="infra", error=msg))

    def _emit(self, k: str, res: JudgeResult) -> None:
        assert self.sink is not None
        _emit(self.sink, self.stats, self.pending.pop(k), res)
        self._progress().advance(res.status != "ok")

    def idle(self) -> bool:
        return not self.fill and self.pool.idle()

    # ---- end -----------------------------------------------------------------------------------------------
    def flush(self) -> None:
        if self.sink is not None:
            self.sink.flush()

    def finish(self) -> JudgeStageStats:
        """Judge what is left (alone, when no scheduler drives the pool), write everything, free the pool."""
        try:
            if self.local:
                assert self.cache is not None
                _judge_local(self.spec, self.cache, self.local, self._emit)
                self.local = []
            while not self.idle():
                self.pump()
                if not self.refs():  # every judge actor pauses after a failure: nothing to wait on yet
                    time.sleep(0.05)
                    continue
                ready, _ = ray.wait(self.refs(), num_returns=1)
                for ref in ready:
                    self.handle(ref)
        finally:
            self.close()
        self.flush()
        self.stats.planned = self.planned_work + self.stats.skipped
        self.stats.seconds = time.monotonic() - self.t0
        return self.stats

    def close(self) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)
            self.bar = None
        for m in list(self.pool.members):
            ray.kill(m.actor)
            self.pool.remove_member(m)
        self.limiter = None



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



def _judge_local(spec: JudgeSpec, cache: JudgeCache, unique: list[tuple[str, JudgeItem]],
                 emit: Callable[[str, JudgeResult], None]) -> None:
    judge = LLMJudge(spec.model_copy(update={"limiter": "local"}))

    async def go() -> None:
        async def one(k: str, item: JudgeItem) -> None:
            res = await judge.judge(item)
            if res.cacheable:  # successful judgments only
                cache.put(k, res.to_json())
            emit(k, res)  # one event loop: emits never interleave

        await asyncio.gather(*(one(k, i) for k, i in unique))

    asyncio.run(go())


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
