"""The judge stage of a run: VGR-Score for every GraphVerse sample, written to RUN_DIR/judgments/.

    from cluster.judge_stage import run_judge_stage
    run_judge_stage(out, datasets, cfg.judge, start_ray=lambda: init_ray(cfg))   # after the models ran

* `rule-based` (the default, no model configured): the deterministic rule scorer, in the driver.
* any litellm model: a pool of `JudgeActor`s on Ray (bounded batches in flight, each actor a bounded
  number of concurrent calls) sharing ONE rate limiter per provider key (`cluster.ratelimit.SharedLimiter`,
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

from cluster import secrets
from cluster.sink import KEY_COLUMNS, read_samples, slug
from judge.cache import JudgeCache
from judge.evidence import Evidence, build_evidence, gold_text
from judge.llm_judge import JudgeItem, JudgeResult, JudgeSpec, cache_key
from judge.rule_scorer import RULE_VERSION, score_response
from judge.schema import JUDGE_KEY_COLUMNS, JUDGMENT_SCHEMA, RULE_JUDGE, Judgment, ground, verdict_fields
from judge.vgr import JUDGE_MANIFEST, JUDGMENTS_DIR, read_judgments
from nphe4v.core.hashing import canonical_json, sha256_bytes

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
    from nphe4v.dataset import load_dataset

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
        from nphe4v.benchmarks import task_for

        spec = task_for(inst.benchmark, inst.task)
        t = spec.text(spec.load(inst.data))
        return "\n".join(p for p in (t.intro, t.question, t.output) if p)
    except Exception:
        return ""


def plan(run_dir: Path, samples: pl.DataFrame, instances: dict[str, Any], spec: JudgeSpec, repeat: int,
         template: str, done: set[str]) -> tuple[list[Work], int]:
    """Work for every judgeable GraphVerse sample not yet judged; returns (work, already done)."""
    rows = samples.filter((pl.col("benchmark") == BENCHMARK) & (pl.col("status") != "infra_error"))
    ev_cache: dict[str, tuple[Evidence, str, str]] = {}
    work: list[Work] = []
    skipped = 0
    for r in rows.iter_rows(named=True):
        key_fields = {c: r[c] for c in KEY_COLUMNS}
        jkey = "|".join(str(v) for v in [*key_fields.values(), spec.identity, template, repeat])
        if jkey in done:
            skipped += 1
            continue
        inst = instances.get(r["instance_id"])
        if inst is None:
            raise ValueError(f"{run_dir}: sample {r['instance_id']!r} has no instance in the run's datasets")
        if inst.instance_id not in ev_cache:
            ev = build_evidence(inst.task, inst.data)
            ev_cache[inst.instance_id] = (ev, gold_text(inst.task, inst.gold.answer, inst.gold.value), _question(inst))
        ev, gold, question = ev_cache[inst.instance_id]
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
        work.append(Work(base, item, ckey, ev, dict(inst.gold.answer), inst.gold.value, r["verdict"]))
    return work, skipped


# -------------------------------------------------------------------------------------------- records


def final_match(w: Work) -> bool:
    """F of VGR-Score: the exact verifier's verdict, the sample's own when the run recorded one."""
    if w.verdict is not None:
        return w.verdict == "correct"
    from judge.rule_scorer import final_answer_match

    return final_answer_match(w.evidence, w.gold_answer, w.gold_value, w.item.response)


def rule_record(w: Work) -> Judgment:
    t0 = time.perf_counter()
    match = final_match(w)
    verdict = score_response(w.evidence, w.item.response, final_match=match, gold_answer=w.gold_answer,
                             gold_value=w.gold_value)
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
    cached judgment, and never starts Ray when nothing needs a call."""
    cfg = JudgeConfig.model_validate(cfg or {}) if not isinstance(cfg, JudgeConfig) else cfg
    run = Path(run_dir)
    out = Path(out_dir) if out_dir is not None else run
    spec = resolve_spec(cfg.model, cfg.options)
    template = RULE_VERSION if spec.is_rule else spec.template_obj().version
    stats = JudgeStageStats(judge=spec.identity, template=template, judge_repeat=cfg.repeat)
    if not cfg.enabled:
        return stats
    t0 = time.monotonic()
    samples = read_samples(run)
    if samples.filter(pl.col("benchmark") == BENCHMARK).is_empty():
        return stats
    sink = JudgmentSink(out / JUDGMENTS_DIR)
    instances = _instances(run, datasets)
    work, stats.skipped = plan(run, samples, instances, spec, cfg.repeat, template, sink.done)
    stats.planned = len(work) + stats.skipped
    if set_default:
        _record_default(out, spec, template, cfg.repeat)
    if spec.is_rule:
        for w in work:
            _write(sink, stats, [rule_record(w) if w.item.response else empty_record(w)])
        sink.flush()
        stats.seconds = time.monotonic() - t0
        return stats
    cache = JudgeCache(cfg.cache_dir or (run / CACHE_DIR))
    pending: dict[str, list[Work]] = {}
    for w in work:
        if not w.item.response:
            _write(sink, stats, [empty_record(w)])
            continue
        hit = cache.get(w.key)
        if hit is not None:
            stats.cached += 1
            _write(sink, stats, [result_record(w, JudgeResult.from_json(hit), cached=True, calls=0)])
            continue
        pending.setdefault(w.key, []).append(w)
    if pending:
        unique = [(k, ws[0].item) for k, ws in pending.items()]
        with JudgeProgress(len(unique), spec.identity, enabled=cfg.progress) as bar:
            def emit(k: str, res: JudgeResult) -> None:
                _emit(sink, stats, pending[k], res)
                bar.advance(res.status != "ok")

            if cfg.executor == "local":
                _judge_local(spec, cache, unique, emit)
            else:
                (start_ray or _init_ray)()
                _judge_ray(spec, cfg, str(cache.root), unique, emit, stats)
    sink.flush()
    stats.seconds = time.monotonic() - t0
    return stats


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
        elif self.enabled:
            print(f"judge {self.label}: {self.total} judgments to request", file=sys.stderr, flush=True)
        return self

    def advance(self, error: bool) -> None:
        self.done += 1
        self.errors += int(error)
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.update(self._task, advance=1, errors=self.errors)
            return
        now = time.monotonic()
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


def _judge_ray(spec: JudgeSpec, cfg: JudgeConfig, cache_dir: str, unique: list[tuple[str, JudgeItem]],
               emit: Callable[[str, JudgeResult], None], stats: JudgeStageStats) -> None:
    import ray
    from ray.exceptions import RayActorError, RayTaskError

    from cluster.ratelimit import LimitSettings, get_or_create_limiter_actor
    from cluster.secrets import get_key, key_id, provider_of

    # create the key's limiter from the driver first, so it outlives any one judge actor
    provider = provider_of(spec.model)
    kid = key_id(provider, get_key(provider, spec.api_key_env), spec.api_base)
    limiter = get_or_create_limiter_actor(
        kid, LimitSettings(max_concurrency=spec.max_concurrency, rpm=spec.rpm,
                           backoff_base_s=max(spec.backoff_base_s, 0.01), backoff_max_s=spec.backoff_max_s))
    n_actors = max(1, min(cfg.actors, len(unique)))
    actors = [
        _actor_cls().options(num_cpus=cfg.num_cpus, name=f"nphe4v-judge/{uuid.uuid4().hex[:8]}/{i}").remote(
            spec.model_copy(update={"limiter": "shared"}).model_dump(), cache_dir)
        for i in range(n_actors)
    ]
    queue = deque((unique[i : i + cfg.batch_size], 1) for i in range(0, len(unique), cfg.batch_size))
    inflight: dict[Any, tuple[list[tuple[str, JudgeItem]], int]] = {}
    limit = cfg.max_inflight_batches * n_actors
    nxt = 0
    try:
        while queue or inflight:
            while queue and len(inflight) < limit:
                batch, attempt = queue.popleft()
                ref = actors[nxt % n_actors].judge_batch.remote(batch)
                nxt += 1
                inflight[ref] = (batch, attempt)
            ready, _ = ray.wait(list(inflight), num_returns=1)
            batch, attempt = inflight.pop(ready[0])
            try:
                out = ray.get(ready[0])
            except (RayActorError, RayTaskError) as e:
                if attempt < cfg.max_attempts:
                    stats.resubmitted += 1
                    queue.append((batch, attempt + 1))
                    continue
                msg = f"judge actor failed {attempt} times: {type(e).__name__}"
                out = [(k, JudgeResult(status="judge_error", error_kind="infra", error=msg).to_json())
                       for k, _ in batch]
            for k, res in out:
                emit(k, JudgeResult.from_json(res))
    finally:
        for a in actors:
            ray.kill(a)
        del limiter


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
