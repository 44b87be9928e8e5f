"""Run the judge card (`judge.card`) against a judge: the rule-based judge in this process, or any litellm
judge over HTTP; each response is scored through the run's own judge path (`cluster.judge_work`:
`rule_record`, or `LLMJudge` + `result_record`), with F the exact verifier's verdict on the response, as
in a run.

This module needs the benchmark (instances, the verifier, a wrong answer) and the judge, so it lives in the
runtime layer; the generator and the properties live in the judge and know no benchmark.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cluster.judge_work import Work, judge_replica, resolve_spec, result_record, rule_record
from evalcore import benchmarks
from evalcore.schema import Instance
from evalcore.scoring import score_answer
from judge.card import FAMILIES, evaluate, grade_line, write_card
from judge.card_families import CardInput, Case, cases_for
from judge.evidence import evidence_for, gold_text
from judge.llm_judge import JudgeItem, JudgeSpec, LLMJudge, cache_key
from judge.rule_scorer import RULE_VERSION

Scorer = Callable[[Sequence[tuple[Case, Work]]], list[float | None]]


@dataclass
class CardRun:
    judge: str
    rows: list[Any]
    grade: str
    doc: dict[str, Any]
    scores: dict[str, float | None]
    cases: list[Case]
    mislabelled: list[str]  # cases whose final answer the verifier judged otherwise than labelled
    wall_s: float


def wrong_answer(inst: Instance, graphs: Sequence[Any], query: dict[str, Any], seed: int = 0) -> dict[str, Any] | None:
    """A readable answer the exact verifier calls wrong (the instance's benchmark's `wrong_answer`), or None."""
    return benchmarks.get(inst.benchmark).wrong_answer(inst, graphs, query, seed)


def card_inputs(instances: Iterable[Instance]) -> list[CardInput]:
    out = []
    for inst in instances:
        ev = evidence_for(inst)
        wrong = wrong_answer(inst, [g.asked for g in ev.facts.graphs], ev.facts.query)
        if wrong is not None:
            out.append(CardInput(inst.instance_id, inst.task, ev, dict(inst.gold.answer), inst.gold.value, wrong))
    return out


def _work(case: Case, inp: CardInput, inst: Instance, spec: JudgeSpec, template: str, verdict: str) -> Work:
    ev = inp.evidence
    item = JudgeItem(task=inp.task, evidence=ev.text, gold=gold_text(inp.task, inp.gold, inp.gold_value),
                     question="", response=case.text)
    key = cache_key(spec, template, item) if not spec.is_rule else item.response_sha
    base = {"run_id": "judge-card", "model": "card", "benchmark": inst.benchmark, "instance_id": inp.instance_id,
            "variant": str(inst.data.get("edit", {}).get("kind", "none")), "prompt_mode": "vision", "repeat": 0,
            "task": inp.task, "judge": spec.identity, "judge_snapshot": spec.pinned if not spec.is_rule else RULE_VERSION,
            "judge_template": template, "judge_repeat": 0, "evidence_sha256": ev.sha256,
            "response_sha256": item.response_sha, "cache_key": key, "sample_verdict": verdict}
    return Work(base, item, key, ev, dict(inp.gold), inp.gold_value, verdict)


def rule_scorer(pairs: Sequence[tuple[Case, Work]]) -> list[float | None]:
    return [rule_record(w).vgr_score for _c, w in pairs]


def llm_scorer(spec: JudgeSpec, cache_dir: Path | None = None, replica: Any = None) -> Scorer:
    """Scores through an LLM judge over HTTP (litellm), the grounded path a run uses, or (`replica`: the vllm
    model serving an open-weights judge, `judge_work.judge_replica`) through that model's vLLM backend started
    in this process; successful judgments are cached under `cache_dir`, so a card rerun asks nothing twice. A
    judge_error is a null score."""
    from judge.cache import JudgeCache
    from judge.llm_judge import JudgeResult

    cache = JudgeCache(cache_dir) if cache_dir else None

    def score(pairs: Sequence[tuple[Case, Work]]) -> list[float | None]:
        if replica is None:
            return _score(pairs, None)
        from cluster.backends.factory import chat_client, make_backend

        backend = make_backend("vllm", replica.name, None, replica.options)
        try:
            backend.ready.wait()
            return _score(pairs, chat_client(backend))
        finally:
            backend.close()

    def _score(pairs: Sequence[tuple[Case, Work]], client: Any) -> list[float | None]:
        judge = LLMJudge(spec.model_copy(update={"limiter": "local"}), client=client)

        async def one(w: Work) -> float | None:
            # `is not None`: an empty JudgeCache is falsy (it has a length)
            hit = cache.get(w.key) if cache is not None else None
            res = JudgeResult.from_json(hit) if hit else await judge.judge(w.item)
            if cache is not None and not hit and res.cacheable:
                cache.put(w.key, res.to_json())
            rec = result_record(w, res, cached=bool(hit), calls=res.calls)
            return rec.vgr_score if rec.status == "ok" else None

        async def go() -> list[float | None]:
            return list(await asyncio.gather(*(one(w) for _c, w in pairs)))

        return asyncio.run(go())

    return score


def run_card(instances: Sequence[Instance], judge: str, out: Path, *, options: dict[str, Any] | None = None,
             scorer: Scorer | None = None, label: str | None = None, dataset: str = "",
             families: Sequence[str] | None = None,
             progress: Callable[[int, int], None] | None = None, models: Iterable[Any] | None = None) -> CardRun:
    """Generate the card's cases over `instances`, score them with `judge` (or `scorer`), write the table,
    the figure and the grade into `out`. `families`: only these (a name, or a prefix ending in `:` such as
    `derivation:`), e.g. to bound what an API judge costs; the base responses the chosen ones are compared
    to are scored with them. `models`: a run's models, which `judge` may name (an open-weights judge)."""
    t0 = time.perf_counter()
    models = list(models or ())
    spec = resolve_spec(judge, options or {}, models)
    template = RULE_VERSION if spec.is_rule else spec.template_obj().version
    if scorer is None:
        scorer = rule_scorer if spec.is_rule else llm_scorer(spec, out / "judge_cache",
                                                                 judge_replica(judge, models))
    by_id = {i.instance_id: i for i in instances}
    inputs = card_inputs(instances)
    wanted = _wanted(families) if families else None
    pairs: list[tuple[Case, Work]] = []
    mislabelled: list[str] = []
    for inp in inputs:
        inst = by_id[inp.instance_id]
        for c in cases_for(inp):
            if wanted is not None and not _chosen(c, wanted):
                continue
            verdict = score_answer(inst, c.text)[0].verdict
            if (verdict == "correct") != c.right:
                mislabelled.append(c.case_id)
            pairs.append((c, _work(c, inp, inst, spec, template, verdict)))
    scores: dict[str, float | None] = {}
    step = 2000
    for k in range(0, len(pairs), step):
        chunk = pairs[k:k + step]
        for (c, _w), s in zip(chunk, scorer(chunk), strict=True):
            scores[c.case_id] = s
        if progress:
            progress(min(k + step, len(pairs)), len(pairs))
    # a mislabelled case is the generator's fault, not the judge's: it is left out and reported
    bad = set(mislabelled)
    cases = [c for c, _w in pairs if c.case_id not in bad]
    rows = evaluate(cases, scores)
    name = label or (f"rule-based {RULE_VERSION}" if spec.is_rule else spec.identity)
    wall = time.perf_counter() - t0
    meta = {"judge_id": spec.identity, "judge_template": template, "dataset": dataset,
            "instances": len(inputs), "cases": len(cases), "mislabelled": len(mislabelled),
            "families_chosen": list(families or []),
            # an instance where no wrong answer could be found (every answer is right) has no card cases
            "instances_without_wrong_answer": len(instances) - len(inputs),
            "wall_s": round(wall, 2), "generated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    doc = write_card(out, name, rows, meta)
    _write_scores(out, pairs, scores)
    _figure(out, name, rows)
    return CardRun(name, rows, grade_line(name, rows), doc, scores, cases, mislabelled, wall)


def _wanted(families: Sequence[str]) -> set[str]:
    """The families to generate for a choice: the chosen ones, the members a spread family compares, and the
    base responses an addition (pad_*) or invented steps are measured against."""
    out: set[str] = set()
    for f in families:
        out.add(f)
        prop = FAMILIES.get(f)
        out.update(prop.members if prop else ())
        if f.startswith("pad_") or f == "invented_steps":
            out.update(("derivation:arrows", "derivation_wrong:arrows"))
    return out


def _chosen(c: Case, wanted: set[str]) -> bool:
    return c.family in wanted or any(w.endswith(":") and c.family.startswith(w) for w in wanted)


def _write_scores(out: Path, pairs: Sequence[tuple[Case, Work]], scores: dict[str, float | None]) -> None:
    import polars as pl

    pl.DataFrame({"case_id": [c.case_id for c, _ in pairs], "family": [c.family for c, _ in pairs],
                  "instance_id": [c.instance_id for c, _ in pairs], "task": [c.task for c, _ in pairs],
                  "right": [c.right for c, _ in pairs], "verdict": [w.verdict for _, w in pairs],
                  "vgr": [scores.get(c.case_id) for c, _ in pairs]},
                 schema_overrides={"vgr": pl.Float64}).write_csv(out / "scores.csv")


def _figure(out: Path, name: str, rows: Sequence[Any]) -> None:
    from report.figures.judge_card import card_figure

    card_figure(rows, f"Judge card: {name}").save(out / "card")
