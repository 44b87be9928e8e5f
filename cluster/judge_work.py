"""What the judge is asked and what it writes: judge work planned from sample rows, and the Judgment records.

* `resolve_spec` turns a judge name (a model of the run, a registry entry or a litellm model string) into a
  `JudgeSpec`; `judge_replica` names the vLLM model whose replicas serve an open-weights judge.
* `Planner.work(row)` turns one sample row into a `Work` item (or None: another benchmark, an infra error,
  or already judged); its content address `key` makes identical responses one request and the cache work.
* `rule_record` / `empty_record` / `result_record` build the Judgment rows; F of VGR-Score is always the
  exact verifier's verdict on the sample (`final_match`), never the judge's own flag.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from cluster.backends.vllm_engine import DEFAULT_TINY_PATH
from cluster.config import ModelSpec
from cluster.registry import load_registry
from evalcore import benchmarks, secrets
from evalcore.benchmarks import task_for
from evalcore.dataset import load_dataset
from evalcore.hashing import canonical_json, sha256_bytes
from evalcore.records import KEY_COLUMNS
from evalcore.scoring import score_answer
from judge.evidence import Evidence, evidence_for, gold_text
from judge.grounding import ground_verdict, grounded_fields
from judge.llm_judge import JudgeItem, JudgeResult, JudgeSpec, cache_key, prompt_version_of
from judge.rule_scorer import RULE_VERSION, score_response
from judge.schema import RULE_JUDGE, JudgeVerdict, Judgment, ground, verdict_fields


def judged_benchmarks() -> list[str]:
    """The registered benchmarks whose samples the judge stage scores (`Benchmark.judged`): the judge's
    evidence is built from their instances' graph data (`judge.evidence`)."""
    return [name for name, b in benchmarks.registry().items() if b.judged]


def judge_replica(model: str, models: Iterable[ModelSpec] | None = None) -> ModelSpec | None:
    """The model whose replicas serve an open-weights judge on this cluster, as a run's `models:` entry: the
    run's own model of that name (`models`) when its backend is vllm, else a registry entry (cluster/models.yaml)
    with backend vllm. None for `rule-based` and for API judges (a litellm model string, a litellm entry): those
    are served by a model replica holding the API client (`cluster.judge_stage`). A model of the run that
    cannot judge (a baseline, a caption chain) is one ValueError line."""
    if model == RULE_JUDGE:
        return None
    for m in models or ():
        if m.name == model:
            if m.backend in ("vllm", "litellm"):
                return _judging(m) if m.backend == "vllm" else None
            raise ValueError(f"judge {model!r}: the run's model of that name has backend {m.backend}, which cannot "
                             "judge (a vllm or litellm model can)")
    if "/" in model:
        return None
    try:
        reg = load_registry()
    except Exception:
        return None
    entry = reg.by_name.get(model)
    return _judging(reg.spec(entry)) if entry is not None and entry.backend == "vllm" else None


# The engine setting of a judge's replicas unless the model's options set their own: the judge asks for
# JSON-schema output, and under xgrammar's default grammar a weak model fills its whole budget with whitespace
# (measured: the tiny model's every judgment cut at max_tokens, "{ \t \t ..."); vLLM's xgrammar reads this
# from the engine's config, not from the request (docs/vllm-cpu.md's recipe sets the same on its server).
JUDGE_STRUCTURED_OUTPUTS = {"backend": "xgrammar", "disable_any_whitespace": True}


def _judging(m: ModelSpec) -> ModelSpec:
    """The model's spec as a judge's replica runs it (its own replicas, apart from the model's)."""
    kw = dict(m.options.get("engine_kwargs") or {})
    kw.setdefault("structured_outputs_config", dict(JUDGE_STRUCTURED_OUTPUTS))
    return m.model_copy(update={"options": {**m.options, "engine_kwargs": kw}})


def models_of(run_dir: Path) -> list[ModelSpec]:
    """The models of a finished run, as its manifest's config recorded them (a judge may name one); an entry
    that no longer validates is left out (the judge then resolves the name as the registry does)."""
    try:
        raw = json.loads((run_dir / "manifest.json").read_text()).get("config", {}).get("models", [])
    except (OSError, ValueError, AttributeError):
        return []
    out = []
    for m in raw if isinstance(raw, list) else []:
        try:
            out.append(ModelSpec.model_validate(m))
        except ValueError:
            continue
    return out


def replica_snapshot(m: ModelSpec) -> str:
    """What a vLLM judge's judgments are pinned to (its recorded snapshot, part of the cache key): the weights'
    path or id, their revision, and the seed of a tiny random-weight build."""
    o = m.options
    out = f"vllm:{o.get('model') or DEFAULT_TINY_PATH}"
    if o.get("revision"):
        out += f"@{o['revision']}"
    if o.get("build_tiny"):
        out += f"+tiny_seed={int(o.get('tiny_seed', 0))}"
    return out


def resolve_spec(model: str, options: dict[str, Any] | None = None,
                 models: Iterable[ModelSpec] | None = None) -> JudgeSpec:
    """A JudgeSpec from a model of the run (`models`), a registry name or a litellm model string (options
    override)."""
    opts = dict(options or {})
    secrets.learn(opts)  # the driver writes the judgments: it must know keys inline in api_base or headers
    if model == RULE_JUDGE:
        return JudgeSpec(model=RULE_JUDGE)
    replica = judge_replica(model, models)
    if replica is not None:  # served by a vLLM replica of this cluster: no endpoint, no key
        return JudgeSpec(**{"model": model, "snapshot": replica_snapshot(replica), **opts})
    own = next((m for m in models or () if m.name == model and m.backend == "litellm"), None)
    if own is not None:  # the run's API model of that name: its endpoint and key
        base = {k: own.options[k] for k in ("api_base", "api_key_env") if own.options.get(k)}
        return JudgeSpec(**{"model": own.options.get("model") or model, **base, **opts})
    if "/" not in model:
        try:
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



@dataclass
class Work:
    base: dict[str, Any]  # Judgment fields known before judging
    item: JudgeItem
    key: str  # content address
    evidence: Evidence
    gold_answer: dict[str, Any]
    gold_value: float | None
    verdict: str | None  # the sample's verifier verdict
    # a PoT sample's program output: what the program printed is read as claims (VGR v4), its code is not
    program_output: str | None = None


def instances_of(run_dir: Path, datasets: Iterable[Any] | None) -> dict[str, Any]:
    if datasets is None:
        man = json.loads((run_dir / "manifest.json").read_text())
        # the judge reads instance data only: image hashes are not re-checked here
        datasets = [load_dataset(d["path"], check_images=False) for d in man.get("datasets", [])
                    if d.get("benchmark") in judged_benchmarks()]
    out: dict[str, Any] = {}
    for ds in datasets:
        if ds.manifest.benchmark in judged_benchmarks():
            out.update(ds.by_id())
    return out


def _question(inst: Any) -> str:
    try:
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
        self.judged = set(judged_benchmarks())

    def work(self, r: dict[str, Any]) -> Work | None:
        """The row's work, or None when it is not judged (other benchmark, infra error) or already judged."""
        if r["benchmark"] not in self.judged or r["status"] == "infra_error":
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
            ev = evidence_for(inst)  # the instance's benchmark builds it (Benchmark.judge_evidence)
            self.ev_cache[inst.instance_id] = (ev, gold_text(inst.task, inst.gold.answer, inst.gold.value),
                                               _question(inst))
        ev, gold, question = self.ev_cache[inst.instance_id]
        text = r["raw_response"] or ""
        item = JudgeItem(task=inst.task, evidence=ev.text, gold=gold, question=question, response=text,
                         repeat=repeat)
        program_output = r.get("pot_stdout")
        if spec.is_rule:
            parts = [RULE_JUDGE, template, item.bundle_sha, item.response_sha]
            if program_output:  # the rule reads the program's output too: it is part of what was judged
                parts.append(sha256_bytes(program_output.encode()))
            ckey = sha256_bytes(canonical_json(parts).encode())
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
        return Work(base, item, ckey, ev, dict(inst.gold.answer), inst.gold.value, verified,
                    program_output or None)


def plan(run_dir: Path, samples: pl.DataFrame, instances: dict[str, Any], spec: JudgeSpec, repeat: int,
         template: str, done: set[str]) -> tuple[list[Work], int]:
    """Work for every judgeable sample (of a judged benchmark) not yet judged; returns (work, already done)."""
    p = Planner(run_dir, instances, spec, repeat, template, done)
    rows = samples.filter(pl.col("benchmark").is_in(judged_benchmarks()) & (pl.col("status") != "infra_error"))
    work = [w for w in map(p.work, rows.iter_rows(named=True)) if w is not None]
    return work, p.skipped



def final_match(w: Work) -> bool:
    """F of VGR-Score: the exact verifier's verdict, the sample's own when the run recorded one (else the
    planner verified the response)."""
    return w.verdict == "correct"


def rule_record(w: Work) -> Judgment:
    t0 = time.perf_counter()
    match = final_match(w)
    verdict = score_response(w.evidence, w.item.response, final_match=match, gold=w.gold_answer,
                             gold_value=w.gold_value, program_output=w.program_output)
    return Judgment(**w.base, status="ok", **verdict_fields(verdict, match), latency_s=time.perf_counter() - t0)


def empty_record(w: Work) -> Judgment:
    """A response without text: nothing to judge, VGR 0, no call."""
    return Judgment(**w.base, status="ok",
                    **verdict_fields(JudgeVerdict(steps=[], final_answer_match=False), False))


def result_record(w: Work, res: JudgeResult, *, cached: bool, calls: int) -> Judgment:
    fields: dict[str, Any] = {}
    if res.status == "ok" and res.verdict is not None and prompt_version_of(w.base["judge_template"]) >= 3:
        # grounded judge: steps whose quote is not in the response are dropped, structured facts are
        # checked by code (overriding the judge's label) and merged by fact (judge.grounding); the
        # VGR formula then scores the steps as it scores the rule judge's
        g = ground_verdict(w.evidence, w.item.response, res.verdict.steps, res.verdict.final_answer_match)
        fields = grounded_fields(g, w.evidence, w.gold_answer, w.gold_value, final_match(w))
        fields["steps"] = secrets.redact(fields["steps"])
    elif res.status == "ok" and res.verdict is not None:
        # the judge grades the steps; whether the final answer is right is the verifier's call alone, and
        # only claims naming a node of the asked graph can earn
        names = [str(n) for g in w.evidence.facts.graphs for n in g.asked.nodes]
        verdict = res.verdict.model_copy(update={"steps": ground(res.verdict.steps, names)})
        fields = verdict_fields(verdict, final_match(w))
        fields["steps"] = secrets.redact(fields["steps"])
    return Judgment(
        **w.base, judge_served_model=res.served_model, status=res.status, error_kind=res.error_kind,
        # a judgment without a score says why (VGR v4 `unreadable`) unless the call itself failed
        error=fields.pop("error", None) or res.error,
        raw_output=json.dumps(res.raw_outputs, ensure_ascii=False), attempts=res.calls,
        calls=calls, cached=cached, prompt_tokens=res.prompt_tokens, completion_tokens=res.completion_tokens,
        cost_usd=res.cost_usd, latency_s=res.latency_s, **fields,
    )
