"""Reference solutions (gie.training.reference): for every instance the exact verifier grades the reference
correct (through the benchmark's own score path) and the E.4 reward gives it the maximum; its reasoning states
the certificate's facts. Fast: the 51 generated rows of the judge fixture; slow: a freshly generated testmini
slice covering every task x edit x level."""

from __future__ import annotations

import re

import pytest
from test_judge_helpers import load_instances

from evalcore.extract import extract_final_answer_text
from gie.training import reward as R
from gie.training.reference import reference_reasoning, reference_solution
from nphe4v.scoring import score_answer


def check_references(instances) -> None:
    for inst in instances:
        text = reference_solution(inst)
        verdict, _ = score_answer(inst, text)
        assert verdict.verdict == "correct", (inst.instance_id, verdict.reason)
        r = R.reward(text, R.ground_truth_json(inst))
        assert (r.total, r.tier) == (R.DEFAULT.maximum, "exact"), (inst.instance_id, r)
        words = R.informative_words(R.reasoning_text(text))
        assert R.DEFAULT.full_thinking_words <= words and len(text.split()) <= R.DEFAULT.verbose_words
        assert extract_final_answer_text(text) == inst.gold.answer  # ends in the task's exact answer format


def test_references_are_correct_and_earn_the_maximum():
    check_references(load_instances())


def test_references_state_the_certificate():
    by_task = {i.task: i for i in load_instances() if i.meta["edit"] == "none"}
    sd = reference_reasoning(by_task["SD"])
    assert "running total 2608 km" in sd and "SFB -> DAY -> PIE" in sd
    tsp = by_task["TSP"]
    assert f"total length {int(tsp.gold.value)} km" in reference_reasoning(tsp)
    for task in ("GED",):
        inst = by_task[task]
        total = re.search(r": (\d+) in total", reference_reasoning(inst))
        assert total and int(total.group(1)) == inst.gold.value  # the operations add up to the distance
    col = by_task["COL"]
    assert f"The chromatic number is {col.gold.answer['NumColors']}." in reference_reasoning(col)
    for inst in load_instances():
        if inst.meta["edit"] != "none":
            assert "no edit to undo" not in reference_reasoning(inst), inst.instance_id


@pytest.mark.slow(reason="generates a 102-row GraphVerse testmini slice (every task x edit x level, ~1 min)")
def test_references_over_a_generated_split(graphverse_split):
    from evalcore.dataset import load_dataset

    ds = load_dataset(graphverse_split("testmini", 2026, limit=102))  # the legibility test's slice too
    assert len({(i.task, i.meta["edit"], i.level) for i in ds.instances}) == 102
    check_references(ds.instances)
