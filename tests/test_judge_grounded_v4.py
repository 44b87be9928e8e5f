"""The grounded LLM judge scores with VGR v4 (issue 30 item 4): its grounded facts feed the rule judge's own credit
rule (`judge.vgr4.judge_reading`), so the two judges differ only in who reads.

* A judge that reads a response perfectly (every block of the reasoning quoted whole, its claims as structured
  facts) scores what the rule judge scores: complete derivations in several notations, right and wrong answers,
  and the attacks of the v4 battery (transcriptions, pooled small sets, all-pairs mappings, other-question
  solutions), on every fixture instance.
* Over real HTTP (a fake OpenAI-compatible judge, the run's judge stage): quotes that name the optimum's nodes
  without stating its relation earn nothing, the same facts quoted where the response states them in a notation
  earn what the rule judge gives, invented quotes are dropped.
"""

from __future__ import annotations

import html
import json
import re
from typing import Any

import pytest
import vgr4_responses as R
from test_judge_helpers import (
    JudgeFake,
    evidence_of,
    load_instances,
    write_dataset_folder,
    write_run,
    wrong_answer,
)

from judge.grounding import ground_verdict, grounded_fields
from judge.llm_judge import load_template
from judge.reader import Claim, read
from judge.rule_checks import context_for
from judge.schema import JudgeVerdict
from judge.vgr4 import lexicon, score_text
from nphe4v.scoring import score_answer

INSTANCES = load_instances()
NOTATIONS = ("arrow", "numbered", "latex", "latex_text", "json", "table", "german")
_PROP = {"clique": "clique", "independent set": "independent_set", "vertex cover": "vertex_cover",
         "common": "common_neighbors"}


def _fact(c: Claim) -> dict[str, Any] | None:
    """A claim the reader reads, as the grounded schema's structured fact (what a perfect judge returns)."""
    nodes = list(c.nodes)
    graph = None if c.graph is None else c.graph + 1
    if c.kind == "walk":
        return {"type": "path", "graph": graph, "nodes": nodes + nodes[:1] if c.closed else nodes, "value": c.value}
    if c.kind == "dist":
        return {"type": "distance", "graph": graph, "nodes": nodes, "value": c.value}
    if c.kind in ("edge", "pairnum"):
        return {"type": "edge", "graph": graph, "nodes": nodes, "value": c.value}
    if c.kind == "set" and c.prop in _PROP:
        return {"type": "set", "graph": graph, "nodes": nodes, "value": _PROP[c.prop]}
    if c.kind in ("adj", "neigh"):
        return {"type": "neighbors", "graph": graph, "nodes": nodes, "value": "complete" if c.complete else "partial"}
    if c.kind == "map":
        return {"type": "mapping", "graph": None, "nodes": nodes, "value": None}
    if c.kind == "assign":
        return {"type": "assign", "graph": graph, "nodes": nodes, "value": c.prop}
    return None


def _blocks(text: str) -> list[str]:
    reasoning = text.split("<reasoning>")[1].split("</reasoning>")[0]
    return [b.strip() for b in re.split(r"\n\s*\n", reasoning) if b.strip()]


def perfect_steps(inst, text: str) -> list[dict[str, Any]]:
    """What a judge that reads every claim returns: each blank-line block quoted whole, every claim the reader
    reads in it as a structured fact, labelled correct and leading to the answer (code decides both)."""
    ev = evidence_of(inst)
    lex = lexicon(ev, context_for(ev))
    steps = []
    for block in _blocks(text):
        for c in read(block, lex).claims:
            f = _fact(c)
            if f is not None:
                steps.append({"quote": block, "fact": f, "kind": "inference", "leads_to_answer": True,
                              "correct": True, "error_type": "none"})
    return steps


def llm_score(inst, text: str, steps: list[dict[str, Any]]) -> dict[str, Any]:
    ev = evidence_of(inst)
    verdict = JudgeVerdict.model_validate({"steps": steps, "final_answer_match": True})
    g = ground_verdict(ev, text, verdict.steps, True)
    match = score_answer(inst, text)[0].verdict == "correct"
    return grounded_fields(g, ev, inst.gold.answer, inst.gold.value, match)


def rule_score(inst, text: str) -> float | None:
    match = score_answer(inst, text)[0].verdict == "correct"
    return score_text(evidence_of(inst), text, final_match=match, gold=inst.gold.answer,
                      gold_value=inst.gold.value).vgr


@pytest.mark.parametrize("inst", INSTANCES, ids=lambda i: f"{i.task}-{i.meta['edit']}")
def test_a_perfect_reader_scores_what_the_rule_judge_scores(inst):
    ev = evidence_of(inst)
    objs = R.derivation(inst, ev)
    answers = {"right": dict(inst.gold.answer), "wrong": wrong_answer(inst)}
    for notation in NOTATIONS:
        for which, answer in answers.items():
            text = R.envelope(R.render_objs(objs, notation), answer)
            llm = llm_score(inst, text, perfect_steps(inst, text))
            assert llm["vgr_formula"] == "vgr-v4" and llm["n_dropped"] == 0, (notation, which, llm)
            assert llm["vgr_score"] == pytest.approx(rule_score(inst, text)), (notation, which, text)
    for family, lines in R.attack_lines(inst, ev).items():
        if not lines:
            continue
        text = R.envelope(lines, answers["wrong"])
        llm = llm_score(inst, text, perfect_steps(inst, text))["vgr_score"]
        rule = rule_score(inst, text)
        assert llm == pytest.approx(rule) or (rule is None and llm <= 10), (family, llm, rule)
        assert llm <= 20, (family, llm)


@pytest.mark.parametrize("inst", [i for i in INSTANCES if i.task in ("COL", "GED", "MCS")],
                         ids=lambda i: f"{i.task}-{i.meta['edit']}")
def test_a_judge_cannot_cut_the_optimum_out_of_interleaved_candidates(inst):
    """Each node written with its optimal partner (colour) and, on the next line, another one: the response
    states no mapping / colouring (a node with two partners), and the rule judge gives 0. A judge quoting only the
    optimal lines does not assemble one: the lines between belong to the run the response wrote."""
    ev = evidence_of(inst)
    if inst.task == "COL":
        gold = {str(a): str(c) for a, c in inst.gold.answer["Coloring"].items()}
        lines = [x for a, c in gold.items() for x in (f"{a}: colour {c}", f"{a}: colour {int(c) % 3 + 1}")]
        facts = [({"type": "assign", "graph": None, "nodes": [a], "value": c}, f"{a}: colour {c}") for a, c in gold.items()]
    else:
        gold = {str(a): str(x) for a, x in inst.gold.answer["Mapping"].items() if x is not None}
        g2 = sorted(ev.facts.graphs[1].asked)
        lines = [y for a, x in gold.items() for y in (f"{a} -> {x}", f"{a} -> {next(z for z in g2 if z != x)}")]
        facts = [({"type": "mapping", "graph": None, "nodes": [a, x], "value": None}, f"{a} -> {x}")
                 for a, x in gold.items()]
    text = R.envelope(lines, wrong_answer(inst))
    steps = [{"quote": q, "fact": f, "kind": "inference", "leads_to_answer": True, "correct": True,
              "error_type": "none"} for f, q in facts]
    picked = llm_score(inst, text, steps)
    assert picked["vgr_score"] == rule_score(inst, text) == 0.0 and picked["n_credited"] == 0, picked
    # the same optimal lines without the others between them do earn (the guard is not what scores 0)
    clean = R.envelope([q for _, q in facts], wrong_answer(inst))
    earned = llm_score(inst, clean, steps)["vgr_score"]
    assert earned == pytest.approx(rule_score(inst, clean)) and earned > 0


# ------------------------------------------------------------------------------------------ over HTTP

_BLOCK = re.compile(r'<model_response id="([0-9a-f]+)">\n(.*)\n</model_response id="\1">', re.S)


class ScriptedJudge(JudgeFake):
    """A judge whose steps for each response are given (`steps[response]`), answered in the grounded schema."""

    steps: dict[str, list[dict[str, Any]]] = {}
    formats: list[Any] = []

    def _completion(self, body, prompt, text=None, finish="stop"):
        self.formats.append((body.get("response_format"), prompt))
        if text is None:
            m = _BLOCK.search(prompt)
            response = html.unescape(m.group(2)) if m else ""
            text = json.dumps({"steps": self.steps.get(response, []), "final_answer_match": True})
        return super()._completion(body, prompt, text=text, finish=finish)


def _facts_of_derivation(inst, ev) -> list[dict[str, Any]]:
    """The optimum's facts as a judge would structure them (from the gold answer, not from any text)."""
    gold = dict(inst.gold.answer)
    out = []
    path = gold.get("Path") or gold.get("Tour") or gold.get("Cycle")
    if path:
        p = [str(x) for x in path]
        if inst.task in ("TSP", "CYC") and p[0] != p[-1]:
            p.append(p[0])
        out.append({"type": "path", "graph": None, "nodes": p, "value": None})
    for key, label in (("Clique", "clique"), ("IndependentSet", "independent_set"), ("Cover", "vertex_cover")):
        if gold.get(key):
            out.append({"type": "set", "graph": None, "nodes": [str(x) for x in gold[key]], "value": label})
    if isinstance(gold.get("Mapping"), dict):
        out += [{"type": "mapping", "graph": None, "nodes": [str(a), str(x)], "value": None}
                for a, x in sorted(gold["Mapping"].items()) if x is not None]
    if isinstance(gold.get("Coloring"), dict):
        out += [{"type": "assign", "graph": None, "nodes": [str(n)], "value": str(c)}
                for n, c in sorted(gold["Coloring"].items())]
    return out


def test_grounded_judge_over_http_credits_relations_not_node_names(tmp_path):
    from cluster.config import JudgeConfig
    from cluster.judge_stage import run_judge_stage
    from judge.vgr import read_judgments

    insts = [i for i in {i.task: i for i in INSTANCES}.values() if R.derivation(i, evidence_of(i))]
    texts: dict[str, dict[str, str]] = {}
    scripted: dict[str, list[dict[str, Any]]] = {}
    for inst in insts:
        ev = evidence_of(inst)
        wrong = wrong_answer(inst)
        facts = _facts_of_derivation(inst, ev)
        names = sorted({n for f in facts for n in f["nodes"]})
        listing = "The relevant nodes are " + ", ".join(names) + "."
        derived = R.envelope(R.render_objs(R.derivation(inst, ev), "latex"), wrong)
        t = {
            # node names without the relation (beside a transcribed edge): a hostile or careless judge reads the
            # optimum into the list
            "names": R.envelope([R.transcription(ev)[0], "", listing], wrong),
            # the relation, stated in LaTeX: the judge quotes each block and structures its claims, and adds
            # quotes the response never wrote
            "derived": derived,
        }
        texts[inst.instance_id] = t
        scripted[t["names"]] = [{"quote": listing.rstrip("."), "fact": f, "kind": "inference",
                                 "leads_to_answer": True, "correct": True, "error_type": "none"} for f in facts]
        honest = perfect_steps(inst, derived)
        scripted[derived] = honest + [{**s, "quote": "As shown in the figure, " + s["quote"][:40] + " is optimal"}
                                      for s in honest[:3]]
    ScriptedJudge.steps = scripted
    ds = write_dataset_folder(tmp_path / "ds", insts)
    models = ("names", "derived")
    run = write_run(tmp_path / "run", ds, insts, models=models, text_of=lambda i, m: texts[i.instance_id][m])
    cfg = JudgeConfig(model="hosted_vllm/scripted-judge", executor="local", progress=False,
                      options={"api_base": None, "max_concurrency": 4, "timeout_s": 30, "max_steps": 256})
    with ScriptedJudge() as fake:
        cfg = cfg.model_copy(update={"options": {**cfg.options, "api_base": fake.base_url}})
        stats = run_judge_stage(run, None, cfg, out_dir=tmp_path / "judged")
        assert fake.count == len(insts) * len(models)
    # the schema the judge is asked to answer in is the reply model's (judge.schema.output_model), in the
    # response_format and in the prompt
    schema = load_template(max_steps=256).schema
    assert ScriptedJudge.formats and all(f["json_schema"]["schema"] == schema and json.dumps(schema) in p
                                         for f, p in ScriptedJudge.formats)
    js = read_judgments(tmp_path / "judged")
    assert stats.judge_errors == 0 and (js["status"] == "ok").all()
    by_id = {i.instance_id: i for i in insts}
    earned = 0
    for r in js.iter_rows(named=True):
        inst, text = by_id[r["instance_id"]], texts[r["instance_id"]][r["model"]]
        assert r["vgr_formula"] == "vgr-v4" and not r["final_answer_match"], r
        if r["model"] == "names":
            # every structured fact is dropped: the list names the nodes, it states no path, set or mapping
            # (no score at all where the rule reader cannot read the listing either: as the rule judge)
            assert r["vgr_score"] == rule_score(inst, text) and not r["vgr_score"] and r["n_credited"] == 0, r
            assert r["n_dropped"] == len(scripted[text]), r
        else:
            # the relation stated in a notation earns what the rule judge gives; the invented quotes are dropped
            assert r["vgr_score"] == pytest.approx(rule_score(inst, text)), r
            assert r["n_dropped"] == min(3, len(perfect_steps(inst, text))), r
            earned += r["vgr_score"] > 0
    assert earned >= len(insts) - 1, earned  # not vacuous: the derivations do earn
