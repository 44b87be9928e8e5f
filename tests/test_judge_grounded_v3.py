"""The grounded LLM judge under VGR v3, fed the v3 battery's generated responses (tests/vgr_responses.py on the
h-vgr branch) as a hostile judge would return them: every fact called correct and leading to the answer.
Runs once both branches are merged (it skips while `judge.critical` is absent), and needs the grounded
judge's seam connected (`judge.grounding.grounded_fields` scoring with VGR v3): true facts no optimum needs,
edges included, never raise a score; false facts never raise it; a fact in any notation counts."""

from __future__ import annotations

import pytest
from test_judge_helpers import evidence_of, load_instances, wrong_answer

pytest.importorskip("judge.critical")
from vgr_responses import as_facts, pieces, render, render_piece  # noqa: E402

from judge.grounding import ground_verdict, grounded_fields  # noqa: E402
from judge.schema import JudgeVerdict  # noqa: E402
from nphe4v.scoring import score_answer  # noqa: E402

INSTANCES = load_instances()


def _score(inst, ev, chosen, answer, notation):
    text = render(inst, chosen, answer, notation, ev.facts.weighted)
    steps = []
    for p in chosen:
        quote = render_piece(p, notation, ev.facts.weighted)
        if quote not in text:  # `render` writes some pieces in the dash notation
            quote = render_piece(p, "dash", ev.facts.weighted)
        for f in as_facts(p):
            steps.append({"quote": quote, "fact": {"graph": None, "value": None, **f}, "kind": "inference",
                          "leads_to_answer": True, "correct": True, "error_type": "none"})
    v = JudgeVerdict.model_validate({"steps": steps, "final_answer_match": True})
    g = ground_verdict(ev, text, v.steps, True)
    match = score_answer(inst, text)[0].verdict == "correct"
    return grounded_fields(g, ev, inst.gold.answer, inst.gold.value, match, "v3")


@pytest.mark.parametrize("inst", INSTANCES, ids=lambda i: f"{i.task}-{i.meta['edit']}")
def test_hostile_judge_under_v3(inst):
    ev = evidence_of(inst)  # built once per instance (the whole-testmini battery asks again)
    gen = pieces(inst, ev)
    wrong = wrong_answer(inst)
    for notation in ("arrow", "json"):
        base = _score(inst, ev, gen.critical, wrong, notation)
        assert base["vgr_formula"] == "vgr-v3", "connect the grounded judge's seam to VGR v3"
        assert _score(inst, ev, gen.critical + gen.noncritical, wrong, notation)["vgr_score"] <= base["vgr_score"]
        assert _score(inst, ev, gen.critical + gen.false, wrong, notation)["vgr_score"] <= base["vgr_score"]
        assert _score(inst, ev, [], wrong, notation)["vgr_score"] <= 10


def test_critical_facts_earn_under_v3():
    earned = []
    for inst in INSTANCES:
        ev = evidence_of(inst)
        earned.append(_score(inst, ev, pieces(inst, ev).critical, wrong_answer(inst), "json")["vgr_score"] > 0)
    assert sum(earned) >= 0.8 * len(INSTANCES)
