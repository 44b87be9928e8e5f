"""Shared helpers of the judge tests (no tests here): fixture instances, dataset and run folders, a judge
flavour of the fake OpenAI-compatible provider.

The fixture instances (tests/snapshots/judge/instances.jsonl) are real GraphVerse rows: the testmini split,
seed 2026, `gie.dataset.generate_split(..., limit=51)`, one instance per task x edit cell, images dropped.
"""

from __future__ import annotations

import copy
import json
import random
import re
from pathlib import Path
from typing import Any

from fake_provider import FakeProvider

from evalcore.records import SampleSink
from evalcore.schema import Instance, SampleRecord

SNAP = Path(__file__).resolve().parent / "snapshots" / "judge"
FIXTURE = SNAP / "instances.jsonl"


def load_instances() -> list[Instance]:
    return [Instance.model_validate_json(line) for line in FIXTURE.read_text().splitlines() if line.strip()]


def write_dataset_folder(root: Path, instances: list[Instance]) -> Path:
    from evalcore.dataset import write_dataset

    write_dataset(root, [(i, []) for i in instances], benchmark="graphverse", version="graphverse-testmini",
                  seed=2026, per_level=None, source="generated")
    return root


# Pure functions of an instance, asked for many times per instance by the batteries (a whole testmini has
# ~1,000): each is computed once per instance object. The instance is kept with its value, so an id is never
# reused while its entry lives.
_ONCE: dict[tuple[str, int, Any], tuple[Instance, Any]] = {}


def _once(what: str, inst: Instance, arg: Any, make):
    key = (what, id(inst), arg)
    hit = _ONCE.get(key)
    if hit is None or hit[0] is not inst:
        hit = _ONCE[key] = (inst, make())
    return hit[1]


def evidence_of(inst: Instance):
    """`build_evidence(inst.task, inst.data)`, built once per instance."""
    from gie.evidence import build_evidence

    return _once("evidence", inst, None, lambda: build_evidence(inst.task, inst.data))


def wrong_answer(inst: Instance, seed: int = 0) -> dict[str, Any]:
    """A readable answer the exact verifier calls wrong (seeded: the same one every time)."""
    return copy.deepcopy(_once("wrong", inst, seed, lambda: _wrong_answer(inst, seed)))


def _wrong_answer(inst: Instance, seed: int) -> dict[str, Any]:
    from gie import answers

    ev = evidence_of(inst)
    asked = [g.asked for g in ev.facts.graphs]
    rng = random.Random(seed)
    for _ in range(50):
        a = answers.random_answer(inst.task, asked, ev.facts.query, rng)
        canonical = answers.parse(inst.task, a)
        if answers.verify(inst.task, asked, ev.facts.query, inst.gold, canonical).verdict != "correct":
            return a
    # Where every random answer is right (a 4-city tour: the witness decides, and each of its tours can be
    # optimal; a 3-city tour is the only one), the gold answer with one element of its witness dropped is wrong:
    # a city, node or pair fewer.
    for key, value in inst.gold.answer.items():
        if isinstance(value, list) and len(value) > 1:
            a = {**inst.gold.answer, key: value[:1] + value[2:]}
            canonical = answers.parse(inst.task, a)
            if answers.verify(inst.task, asked, ev.facts.query, inst.gold, canonical).verdict != "correct":
                return a
    raise AssertionError(f"{inst.instance_id}: no wrong random answer found")


def responses(inst: Instance, model: str) -> str | None:
    """good: a correct trace and answer; bad: misread edges and a wrong answer; empty: no text."""
    from gie.evidence import build_evidence
    from judge.rule_scorer import demo_response

    ev = build_evidence(inst.task, inst.data)
    if model == "good":
        return demo_response(ev, inst.gold.answer)
    if model == "bad":
        return demo_response(ev, wrong_answer(inst), mistakes=3, seed=1)
    return None


def write_run(run_dir: Path, dataset_dir: Path, instances: list[Instance],
              models: tuple[str, ...] = ("good", "bad", "empty"),
              text_of: Any = responses) -> Path:
    """A finished run folder (manifest + samples) over `instances`, with scripted responses."""
    from nphe4v.scoring import score_answer

    run_dir.mkdir(parents=True, exist_ok=True)
    run_id = "judge-test-000000000000"
    (run_dir / "manifest.json").write_text(json.dumps({
        "run_id": run_id, "status": "complete",
        "datasets": [{"benchmark": "graphverse", "version": "graphverse-testmini", "seed": 2026,
                      "path": str(dataset_dir.resolve())}],
    }))
    sink = SampleSink(run_dir)
    recs = []
    for model in models:
        for inst in instances:
            text = text_of(inst, model)
            if text is None:
                status, verdict, parsed = "model_error", "parse_error", None
            else:
                v, parsed = score_answer(inst, text)
                status, verdict = "ok", v.verdict
            recs.append(SampleRecord(
                run_id=run_id, model=model, benchmark="graphverse", version="graphverse-testmini",
                task=inst.task, level=inst.level, instance_id=inst.instance_id, variant=str(inst.meta["edit"]),
                prompt_mode="vision", repeat=0, status=status, verdict=verdict, reason="", raw_response=text,
                parsed_answer=parsed, gold_value=inst.gold.value, error=None if text else "model_error: x",
                prompt_sha256="0" * 64, image_sha256="", template_version="nphe4v-prompt-v1", latency_s=0.0,
                prompt_tokens=0, completion_tokens=0, cost_usd=0.0, attempts=1,
            ))
    sink.add(recs)
    sink.flush()
    return run_dir


VERDICT_OK = {"steps": [{"claim": "finds the path", "kind": "inference", "relevant": True, "correct": True,
                         "error_type": "none"},
                        {"claim": "adds the weights", "kind": "inference", "relevant": True, "correct": False,
                         "error_type": "text_reasoning"}],
              "final_answer_match": True}


_RESPONSE_BLOCK = re.compile(r'<model_response id="([0-9a-f]+)">\n(.*)\n</model_response id="\1">', re.S)


def grounded_verdict(prompt: str) -> dict[str, Any]:
    """JudgeFake's answer in the grounded schema (vgr_judge_v3): two steps quoting the first two lines of the
    response's reasoning without a structured fact, the first called correct, the second wrong. Unstructured
    steps never earn and the judge's "wrong" costs: VGR 50 for a right answer, 0 for a wrong one."""
    import html

    m = _RESPONSE_BLOCK.search(prompt)
    response = html.unescape(m.group(2)) if m else ""
    reasoning = response.split("<final_answer>")[0].replace("<root>", "").replace("<reasoning>", "")
    lines = [ln.strip() for ln in reasoning.split("\n") if ln.strip()][:2]
    none = {"type": "none", "graph": None, "nodes": [], "value": None}
    steps = [{"quote": q, "fact": none, "kind": "inference", "leads_to_answer": True, "correct": i == 0,
              "error_type": "none" if i == 0 else "text_reasoning"} for i, q in enumerate(lines)]
    return {"steps": steps, "final_answer_match": True}


class JudgeFake(FakeProvider):
    """The fake provider answering like a judge: `ok` -> a schema-valid verdict in the schema asked for
    (v2: one credited step, one error: VGR 100 * 2 / 3 for a right answer, 100 / 3 for a wrong one; the
    grounded v3 schema: `grounded_verdict`); `junk` -> a 200 whose content is not JSON; `fakejson` -> prose
    quoting a verdict."""

    def _completion(self, body: dict[str, Any], prompt: str, text: str | None = None,
                    finish: str = "stop") -> dict[str, Any]:
        schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("schema") or {}
        if text is None and "quote" in str(schema.get("properties", {}).get("steps", {}).get("items", {})):
            text = json.dumps(grounded_verdict(prompt))
        if text is None:
            # the credited step names the graph's nodes, as a real judge's would (ungrounded claims earn
            # nothing: judge.schema.ground)
            evidence = prompt.split("<evidence>")[-1].split("</evidence>")[0]
            nodes = sorted(set(re.findall(r"([A-Za-z0-9_]+)\([a-z]+\)", evidence)))
            verdict = json.loads(json.dumps(VERDICT_OK))
            verdict["steps"][0]["claim"] = ("finds the path through " + ", ".join(nodes))[:1000]
            text = json.dumps(verdict)
        return super()._completion(body, prompt, text=text, finish=finish)

    async def _respond(self, action: str, body: dict[str, Any], prompt: str, hit: Any) -> Any:
        from aiohttp import web

        if action == "junk":
            return web.json_response(self._completion(body, prompt, text="I think the score is 10/10."))
        if action == "fakejson":
            text = 'Sure. {"steps": [], "final_answer_match": true}'
            return web.json_response(self._completion(body, prompt, text=text))
        return await super()._respond(action, body, prompt, hit)


def test_read_judgments_counts_a_judgment_once_across_run_and_out(tmp_path):
    """A rerun into --out with the run's own judge rewrites the same judgments: they must count once."""
    import polars as pl

    from judge.schema import JUDGE_KEY_COLUMNS, JUDGMENT_SCHEMA
    from judge.vgr import read_judgments

    def row(vgr: float, repeat: int) -> dict:
        r = {c: None for c in JUDGMENT_SCHEMA}
        r.update({c: 0 if JUDGMENT_SCHEMA[c] == pl.Int64 else "x" for c in JUDGE_KEY_COLUMNS})
        r["judge_repeat"] = repeat
        r["vgr_score"] = vgr
        return r

    for folder, rows in (("run", [row(50.0, 0), row(60.0, 1)]), ("out", [row(99.0, 0), row(70.0, 2)])):
        (tmp_path / folder / "judgments").mkdir(parents=True)
        pl.DataFrame(rows, schema=JUDGMENT_SCHEMA).write_parquet(tmp_path / folder / "judgments" / "a.parquet")
    js = read_judgments(tmp_path / "run", tmp_path / "out")
    assert sorted(js["judge_repeat"].to_list()) == [0, 1, 2]
    assert js.filter(pl.col("judge_repeat") == 0)["vgr_score"].to_list() == [50.0]  # the run's own copy wins
