"""The judge stage of a run: VGR-Score for every GraphVerse sample, written to RUN_DIR/judgments/.

    stream = JudgeStream(out, datasets, cfg.judge, hold=True)   # in a run: fed as samples are scored,
    ...                                                         # driven by cluster.scheduler beside the models
    run_judge_stage(out, datasets, cfg)                         # alone (jobs/judge_rerun.py)

* `rule-based` (the default, no model configured): the deterministic rule scorer, in the driver.
* any litellm model: a pool of `JudgeActor`s on Ray (bounded batches in flight, each actor a bounded
  number of concurrent calls) sharing ONE rate limiter per provider key (`nphe4v.core.ratelimit.SharedLimiter`,
  the same limiter model backends of that key use), litellm with num_retries=0 so every 429 reaches it.
* Successful judgments are cached on disk, content-addressed by everything that changes the answer
  (`judge.llm_judge.cache_key`): a rerun of the same judge costs zero calls and never starts Ray; a
  failed or malformed judgment is asked again. Identical responses in one run are judged once. A repeat
  asks for a new `repeat` index explicitly.
* F of VGR-Score is the exact verifier's verdict on the sample, never the judge's own flag.
* Exactly once per (sample key, judge, template, judge repeat) across reruns, like the sample sink;
  a batch whose actor died is resubmitted, then recorded as `judge_error` (infra), never as a score.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import polars as pl
from pydantic import BaseModel, ConfigDict, Field

from judge.cache import JudgeCache
from judge.evidence import Evidence, build_evidence, gold_text
from judge.llm_judge import JudgeItem, JudgeResult, JudgeSpec, cache_key
from judge.rule_scorer import RULE_VERSION, score_response
from judge.schema import JUDGE_KEY_COLUMNS, JUDGMENT_SCHEMA, RULE_JUDGE, Judgment, ground, verdict_fields
from judge.vgr import JUDGE_MANIFEST, JUDGMENTS_DIR, read_judgments
from nphe4v.core import secrets
from nphe4v.core.hashing import canonical_json, sha256_bytes
from nphe4v.core.records import KEY_COLUMNS, read_samples, slug
from nphe4v.scoring import score_answer

BENCHMARK = "graphverse"
CACHE_DIR = "judge_cache"


class JudgeConfig(BaseModel):
    """`judge:` section of a run config. `model` is `rule-based`, a registry name (cluster/models.yaml,
    e.g. gpt-5.1) or any litellm model string; `options` are `judge.llm_judge.JudgeSpec` fields."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    model: str = RULE_JUDGE
    options: dict[str, Any] = Field(default_factory=dict)
    repeat: int = Field(0, ge=0, description="judge repeat index; a new index asks the judge again")
    actors: int = Field(2, ge=1, description="judge actors in the pool")
    batch_size: int = Field(8, ge=1)
    max_inflight_batches: int = Field(4, ge=1, description="per actor")
    max_attempts: int = Field(3, ge=1, description="tries of a batch whose judge actor died")
    num_cpus: float = Field(0.1, ge=0, description="per judge actor (API calls are I/O)")
    executor: str = Field("ray", pattern="^(ray|local)$", description="ray = actor pool; local = in-process")
    cache_dir: str | None = Field(None, description=f"default RUN_DIR/{CACHE_DIR}")
    progress: bool = Field(True, description="report judge progress on stderr")


def resolve_spec(model: str, options: dict[str, Any] | None = None) -> JudgeSpec:
    """A JudgeSpec from a registry name or a litellm model string (options override)."""
    opts = dict(options or {})
    secrets.learn(opts)  # the driver writes the judgments: it must know keys inline in api_base or headers
    if model == RULE_JUDGE:
        return JudgeSpec(model=RULE_JUDGE)
    if "/" not in model:
        try:
            from cluster.registry import load_registry

            entry = load_registry().by_name.get(model)
        except Exception:
            entry = None
        if entry is not None and entry.backend == "litellm" and entry.model:
            base: dict[str, Any] = {"model": entry.model}
            if entry.api_key_env:
                base["api_key_env"] = entry.api_key_env
            extra = {k: v for k, v in (entry.request_args or {}).items() if k != "drop_params"}
            if extra:
                base["extra"] = extra
            base.update(opts)
            return JudgeSpec(**base)
    return JudgeSpec(model=model, **opts)


# -------------------------------------------------------------------------------------------- work items


@dataclass
class Work:
    base: dict[str, Any]  # Judgment fields known before judging
    item: JudgeItem
    key: str  # content address
    evidence: Evidence
    gold_answer: dict[str, Any]
    gold_value: float | None
    verdict: str | None  # the sample's verifier verdict


def _instances(run_dir: Path, datasets: Iterable[Any] | None) -> dict[str, Any]:
    from nphe4v.core.dataset import load_dataset

    if datasets is None:
        man = json.loads((run_dir / "manifest.json").read_text())
        # the judge reads instance data only: image hashes are not re-checked here
        datasets = [load_dataset(d["path"], check_images=False) for d in man.get("datasets", [])
                    if d.get("benchmark") == BENCHMARK]
    out: dict[str, Any] = {}
    for ds in datasets:
        if ds.manifest.benchmark == BENCHMARK:
            out.update(ds.by_id())
    return out


def _question(inst: Any) -> str:
    try:
        from nphe4v.core.benchmarks import task_for

        spec = task_for(inst.benchmark, inst.task)
        t = spec.text(spec.load(inst.data))
        return "\n".join(p for p in (t.intro, t.question, t.output) if p)
    except Exception:
        return ""


class Planner:
    """Turns sample rows into judge work, one row at a time (the stream feeds rows as they are scored)."""

    def __init__(self, run_dir: Path, instances: dict[str, Any], spec: JudgeSpec, repeat: int, template: str,
                 done: set[str]) -> None:
        self.run_dir, self.instances, self.spec, self.repeat, self.template = run_dir, instances, spec, repeat, template
        self.done = done
        self.ev_cache: dict[str, tuple[Evidence, str, str]] = {}
        self.skipped = 0

    def work(self, r: dict[str, Any]) -> Work | None:
        """The row's work, or None when it is not judged (other benchmark, infra error) or already judged."""
        if r["benchmark"] != BENCHMARK or r["status"] == "infra_error":
            return None
        spec, template, repeat = self.spec, self.template, self.repeat
        key_fields = {c: r[c] for c in KEY_COLUMNS}
        jkey = "|".join(str(v) for v in [*key_fields.values(), spec.identity, template, repeat])
        if jkey in self.done:
            self.skipped += 1
            return None
        inst = self.instances.get(r["instance_id"])
        if inst is None:
            raise ValueError(f"{self.run_dir}: sample {r['instance_id']!r} has no instance in the run's datasets")
        if inst.instance_id not in self.ev_cache:
            ev = build_evidence(inst.task, inst.data)
            self.ev_cache[inst.instance_id] = (ev, gold_text(inst.task, inst.gold.answer, inst.gold.value),
                                               _question(inst))
        ev, gold, question = self.ev_cache[inst.instance_id]
        text = r["raw_response"] or ""
        item = JudgeItem(task=inst.task, evidence=ev.text, gold=gold, question=question, response=text,
                         repeat=repeat)
        if spec.is_rule:
            ckey = sha256_bytes(canonical_json([RULE_JUDGE, template, item.bundle_sha, item.response_sha]).encode())
        else:
            ckey = cache_key(spec, template, item)
        base = {
            "run_id": r["run_id"], **key_fields, "task": inst.task,
            "judge": spec.identity, "judge_snapshot": spec.pinned if not spec.is_rule else RULE_VERSION,
            "judge_template": template, "judge_repeat": repeat,
            "evidence_sha256": ev.sha256, "response_sha256": item.response_sha, "cache_key": ckey,
            "sample_verdict": r["verdict"],
        }
        verified = r["verdict"] if r["verdict"] is not None else score_answer(inst, text)[0].verdict
        return Work(base, item, ckey, ev, dict(inst.gold.answer), inst.gold.value, verified)


def plan(run_dir: Path, samples: pl.DataFrame, instances: dict[str, Any], spec: JudgeSpec, repeat: int,
         template: str, done: set[str]) -> tuple[list[Work], int]:
    """Work for every judgeable GraphVerse sample not yet judged; returns (work, already done)."""
    p = Planner(run_dir, instances, spec, repeat, template, done)
    rows = samples.filter((pl.col("benchmark") == BENCHMARK) & (pl.col("status") != "infra_error"))
    work = [w for w in map(p.work, rows.iter_rows(named=True)) if w is not None]
    return work, p.skipped


# -------------------------------------------------------------------------------------------- records


def final_match(w: Work) -> bool:
    """F of VGR-Score: the exact verifier's verdict, the sample's own when the run recorded one (else the
    planner verified the response)."""
    return w.verdict == "correct"


def rule_record(w: Work) -> Judgment:
    t0 = time.perf_counter()
    match = final_match(w)
    verdict = score_response(w.evidence, w.item.response, final_match=match)
    return Judgment(**w.base, status="ok", **verdict_fields(verdict, match), latency_s=time.perf_counter() - t0)


def empty_record(w: Work) -> Judgment:
    """A response without text: nothing to judge, VGR 0, no call."""
    from judge.schema import JudgeVerdict

    return Judgment(**w.base, status="ok",
                    **verdict_fields(JudgeVerdict(steps=[], final_answer_match=False), False))


def result_record(w: Work, res: JudgeResult, *, cached: bool, calls: int) -> Judgment:
    fields: dict[str, Any] = {}
    if res.status == "ok" and res.verdict is not None:
        # the judge grades the steps; whether the final answer is right is the verifier's call alone, and
        # only claims naming a node of the asked graph can earn
        names = [str(n) for g in w.evidence.facts.graphs for n in g.asked.nodes]
        verdict = res.verdict.model_copy(update={"steps": ground(res.verdict.steps, names)})
        fields = verdict_fields(verdict, final_match(w))
        fields["steps"] = secrets.redact(fields["steps"])
    return Judgment(
        **w.base, judge_served_model=res.served_model, status=res.status, error_kind=res.error_kind,
        error=res.error, raw_output=json.dumps(res.raw_outputs, ensure_ascii=False), attempts=res.calls,
        calls=calls, cached=cached, prompt_tokens=res.prompt_tokens, completion_tokens=res.completion_tokens,
        cost_usd=res.cost_usd, latency_s=res.latency_s, **fields,
    )


class JudgmentSink:
    """Incremental Parquet shards under <root>/<judge>/, exactly once per judgment key across reruns."""

    def __init__(self, root: Path, flush_rows: int = 2000) -> None:
        self.root = root
        self.root.mkdir(parents=True, exist_ok=True)
        self.flush_rows = flush_rows
        self._pending: list[dict[str, Any]] = []
        self.written = 0
        existing = read_judgments(root)
        self.done: set[str] = {
            "|".join(str(v) for v in row) for row in existing.select(JUDGE_KEY_COLUMNS).iter_rows()
        }

    def add(self, records: Iterable[Judgment]) -> list[Judgment]:
        """Queue the records not yet written; returns those queued."""
        added = []
        for rec in records:
            k = rec.key()
            if k in self.done:
                continue
            self.done.add(k)
            self._pending.append(rec.model_dump())
            added.append(rec)
        if len(self._pending) >= self.flush_rows:
            self.flush()
        return added

    def flush(self) -> None:
        if not self._pending:
            return
        frame = secrets.redact_frame(pl.DataFrame(self._pending, schema=JUDGMENT_SCHEMA), keep=JUDGE_KEY_COLUMNS)
        self._pending = []
        for (judge,), part in frame.group_by(["judge"], maintain_order=True):
            folder = self.root / slug(str(judge))
            folder.mkdir(parents=True, exist_ok=True)
            name = f"part-{time.time_ns():020d}-{uuid.uuid4().hex[:8]}.parquet"
            tmp = folder / f".{name}.tmp"
            part.write_parquet(tmp, compression="zstd")
            with open(tmp, "rb") as f:
                os.fsync(f.fileno())
            os.replace(tmp, folder / name)
            self.written += part.height


# -------------------------------------------------------------------------------------------- the pool


class JudgeActor:
    """One member of the judge pool: an LLMJudge (shared per-key limiter inside Ray) and the cache."""

    def __init__(self, spec: dict[str, Any], cache_dir: str) -> None:
        from judge.llm_judge import LLMJudge

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


_remote_actor: Any = None


def _actor_cls() -> Any:
    global _remote_actor
    if _remote_actor is None:
        import ray

        _remote_actor = ray.remote(max_restarts=2, max_task_retries=0, max_concurrency=64)(JudgeActor)
    return _remote_actor


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
        self.sink: JudgmentSink | None = None
        self.planner: Planner | None = None
        self.cache: JudgeCache | None = None
        self.pending: dict[str, list[Work]] = {}  # content key -> samples waiting for that judgment
        self.fill: list[tuple[str, JudgeItem]] = []
        self.queue: deque[tuple[list[tuple[str, JudgeItem]], int]] = deque()
        self.inflight: dict[Any, tuple[list[tuple[str, JudgeItem]], int]] = {}
        self.actors: list[Any] = []
        self.limiter: Any = None
        self.nxt = 0
        self.bar: JudgeProgress | None = None
        self.local: list[tuple[str, JudgeItem]] = []
        self.planned_work = 0
        # start the pool with the run, not with the first sample: actors importing litellm take seconds
        self.prestart = False

    # ---- input ---------------------------------------------------------------------------------------------
    def _open(self) -> None:
        if self.sink is not None:
            return
        self.sink = JudgmentSink(self.out / JUDGMENTS_DIR, flush_rows=10**12 if self.hold else 2000)
        self.planner = Planner(self.run, _instances(self.run, self.datasets), self.spec, self.cfg.repeat,
                               self.template, self.sink.done)
        if self.set_default:
            _record_default(self.out, self.spec, self.template, self.cfg.repeat)
        if not self.spec.is_rule:
            self.cache = JudgeCache(self.cfg.cache_dir or (self.run / CACHE_DIR))

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
                self.queue.append((self.fill, 1))
                self.fill = []

    def _progress(self) -> JudgeProgress:
        if self.bar is None:
            self.bar = JudgeProgress(0, self.spec.identity, enabled=self.cfg.progress).__enter__()
        return self.bar

    # ---- the pool (cluster.scheduler.Stage) ----------------------------------------------------------------
    def _limit(self) -> int:
        return self.cfg.max_inflight_batches * max(1, len(self.actors) or self.cfg.actors)

    def pump(self) -> None:
        if self.prestart and not self.actors and self.enabled and not self.spec.is_rule \
                and self.cfg.executor == "ray":
            self.prestart = False
            self._open()
            self._start_pool()
        if self.fill and len(self.inflight) + len(self.queue) < self._limit():
            self.queue.append((self.fill, 1))  # the pool has room: a partial batch now beats a full one later
            self.fill = []
        if not self.queue:
            return
        if not self.actors:
            self._start_pool()
        while self.queue and len(self.inflight) < self._limit():
            batch, attempt = self.queue.popleft()
            ref = self.actors[self.nxt % len(self.actors)].judge_batch.remote(batch)
            self.nxt += 1
            self.inflight[ref] = (batch, attempt)

    def _start_pool(self) -> None:
        from nphe4v.core.ratelimit import LimitSettings, get_or_create_limiter_actor
        from nphe4v.core.secrets import get_key, key_id, provider_of

        self.start_ray()
        spec, cfg = self.spec, self.cfg
        assert self.cache is not None
        # create the key's limiter from the driver first, so it outlives any one judge actor
        provider = provider_of(spec.model)
        kid = key_id(provider, get_key(provider, spec.api_key_env), spec.api_base)
        self.limiter = get_or_create_limiter_actor(
            kid, LimitSettings(max_concurrency=spec.max_concurrency, rpm=spec.rpm,
                               backoff_base_s=max(spec.backoff_base_s, 0.01), backoff_max_s=spec.backoff_max_s))
        self.actors = [
            _actor_cls().options(num_cpus=cfg.num_cpus, name=f"nphe4v-judge/{uuid.uuid4().hex[:8]}/{i}").remote(
                spec.model_copy(update={"limiter": "shared"}).model_dump(), str(self.cache.root))
            for i in range(cfg.actors)
        ]

    def refs(self) -> list[Any]:
        return list(self.inflight)

    def handle(self, ref: Any) -> None:
        import ray
        from ray.exceptions import RayActorError, RayTaskError

        batch, attempt = self.inflight.pop(ref)
        try:
            out = ray.get(ref)
        except (RayActorError, RayTaskError) as e:
            if attempt < self.cfg.max_attempts:
                self.stats.resubmitted += 1
                self.queue.append((batch, attempt + 1))
                return
            msg = f"judge actor failed {attempt} times: {type(e).__name__}"
            out = [(k, JudgeResult(status="judge_error", error_kind="infra", error=msg).to_json()) for k, _ in batch]
        for k, res in out:
            self._emit(k, JudgeResult.from_json(res))

    def _emit(self, k: str, res: JudgeResult) -> None:
        assert self.sink is not None
        _emit(self.sink, self.stats, self.pending.pop(k), res)
        self._progress().advance(res.status != "ok")

    def idle(self) -> bool:
        return not (self.fill or self.queue or self.inflight)

    # ---- end -----------------------------------------------------------------------------------------------
    def flush(self) -> None:
        if self.sink is not None:
            self.sink.flush()

    def finish(self) -> JudgeStageStats:
        """Judge what is left (alone, when no scheduler drives the pool), write everything, free the pool."""
        import ray

        try:
            if self.local:
                assert self.cache is not None
                _judge_local(self.spec, self.cache, self.local, self._emit)
                self.local = []
            while not self.idle():
                self.pump()
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
        if self.actors:
            import ray

            for a in self.actors:
                ray.kill(a)
            self.actors = []
        self.limiter = None


def _write(sink: JudgmentSink, stats: JudgeStageStats, recs: list[Judgment]) -> None:
    """Queue records and count what was written: every judge_error row counts, cached or not."""
    for rec in sink.add(recs):
        stats.written += 1
        if rec.status != "ok":
            stats.judge_errors += 1
            kind = rec.error_kind or "?"
            stats.errors[kind] = stats.errors.get(kind, 0) + 1


def _emit(sink: JudgmentSink, stats: JudgeStageStats, works: list[Work], res: JudgeResult) -> None:
    stats.judged += 1
    stats.calls += res.calls
    # the first sample carries the calls; identical responses elsewhere in the run share the judgment
    _write(sink, stats, [result_record(w, res, cached=i > 0, calls=res.calls if i == 0 else 0)
                         for i, w in enumerate(works)])


class JudgeProgress:
    """Progress of the judge calls on stderr: a rich bar on a terminal, else one line every 5 % or 30 s
    (logs and CI), so a slow judge is never silent."""

    def __init__(self, total: int, label: str, *, enabled: bool = True) -> None:
        self.total, self.label, self.enabled = total, label, enabled
        self.done = self.errors = 0
        self._bar: Any = None
        self._last = time.monotonic()
        self._step = max(1, total // 20)

    def __enter__(self) -> JudgeProgress:
        if self.enabled and sys.stderr.isatty():
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            self._bar = Progress(TextColumn("judge {task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TextColumn("errors {task.fields[errors]}"), TimeRemainingColumn(),
                                 console=Console(stderr=True))
            self._bar.start()
            self._task = self._bar.add_task(self.label, total=self.total, errors=0)
        elif self.enabled and self.total:
            print(f"judge {self.label}: {self.total} judgments to request", file=sys.stderr, flush=True)
        return self

    def advance(self, error: bool) -> None:
        self.done += 1
        self.errors += int(error)
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.update(self._task, advance=1, errors=self.errors, total=self.total)
            return
        now = time.monotonic()
        # the total grows while samples stream in: the 5 % step follows it
        self._step = max(self._step, self.total // 20)
        if self.done == self.total or self.done % self._step == 0 or now - self._last >= 30:
            self._last = now
            print(f"judge {self.label}: {self.done}/{self.total} judged, {self.errors} errors", file=sys.stderr,
                  flush=True)

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()


def _judge_local(spec: JudgeSpec, cache: JudgeCache, unique: list[tuple[str, JudgeItem]],
                 emit: Callable[[str, JudgeResult], None]) -> None:
    from judge.llm_judge import LLMJudge

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
    import ray

    if ray.is_initialized():
        return
    if os.environ.get("RAY_ADDRESS"):  # under `ray job submit`: join the job's cluster
        ray.init(address=os.environ["RAY_ADDRESS"], log_to_driver=True)
    else:  # "local" starts a private Ray; a plain init would attach to any other Ray on this machine
        ray.init(address="local", num_cpus=os.cpu_count(), include_dashboard=False, log_to_driver=True)


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
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(f".{p.name}.tmp")
    tmp.write_text(json.dumps(man, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, p)


def print_stats(stats: JudgeStageStats) -> None:
    print(f"judge {stats.judge} [{stats.template}] repeat {stats.judge_repeat}: " +
          ", ".join(f"{k}={v}" for k, v in asdict(stats).items() if k not in ("judge", "template", "judge_repeat")),
          file=sys.stderr)
