"""Issue 19 item 5: the witness decides, a stated value that disagrees is reported apart (`value_consistent`), and
the decision tasks share one reading of the answer. Checked through the score stage's own path (response text ->
extractor -> task parser -> verifier)."""

from __future__ import annotations

import json
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from evalcore.prompting import format_response
from evalcore.schema import Instance
from nphe4v.scoring import score_answer
from nphe4v.tasks import get_task

# task -> the stated value that sits beside its witness (path, tour, colouring, schedule, selection)
WITNESS_VALUE = {"SPP": "TotalDistance", "KSP": "TotalValue", "TSP": "TotalDistance", "GCP": "NumColors",
                 "MSP": "NumScheduled"}


def _instance(task: str, level: int, seed: int) -> Instance:
    spec = get_task(task)
    data = spec.generate(level, random.Random(seed))
    return Instance(instance_id=f"{task}-{level}-{seed}", benchmark="nphardeval4v", task=task, level=level, index=0,
                    data=data.model_dump(mode="json"), gold=spec.solve(data))


def _score(inst: Instance, answer: dict) -> tuple[str, bool | None]:
    verdict, _ = score_answer(inst, format_response(json.loads(json.dumps(answer)), reasoning="r"))
    return verdict.verdict, verdict.value_consistent


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(sorted(WITNESS_VALUE)), st.integers(1, 10), st.integers(0, 10**6),
       st.integers(1, 40), st.booleans())
def test_oracle_with_a_perturbed_stated_value_stays_correct(task, level, seed, delta, up):
    """Over generated instances of every witness task: the oracle answer is correct with value_consistent=True;
    the same witness with its stated value moved by delta (beyond any rounding slack) is still correct, with
    value_consistent=False; and without the stated value it is correct with value_consistent=None."""
    inst = _instance(task, level, seed)
    gold = dict(inst.gold.answer)
    key = WITNESS_VALUE[task]
    assert _score(inst, gold) == ("correct", True)
    stated = float(gold[key])
    assert _score(inst, {**gold, key: stated + (delta if up else -delta)}) == ("correct", False)
    assert _score(inst, {**gold, key: str(stated + delta)}) == ("correct", False)
    assert _score(inst, {k: v for k, v in gold.items() if k != key}) == ("correct", None)
    # an unrequested key with any content never makes the answer unparsable
    assert _score(inst, {**gold, "Note": "three", "Feasible": "maybe"})[0] == "correct"


def test_tsp_optimal_tour_stated_34_when_it_is_34_3():
    """The issue's example: the papers' checker grades the tour, so a rounded-off total is not a wrong answer."""
    tsp = get_task("TSP")
    # 4 cities; the optimal tour 0-1-2-3-0 is 5.3 + 12 + 5 + 12 = 34.3, the other two tours are longer
    dist = [[0.0, 5.3, 30.0, 12.0], [5.3, 0.0, 12.0, 30.0], [30.0, 12.0, 0.0, 5.0], [12.0, 30.0, 5.0, 0.0]]
    n = 4
    data = tsp.data_model(num_cities=n, distances=dist, coords=None)
    gold = tsp.solve(data)
    assert gold.value == 34.3
    v = tsp.verify(data, gold, tsp.parse({"Path": "0->1->2->3->0", "TotalDistance": 34}))
    assert (v.verdict, v.value_consistent) == ("correct", False)


def test_decision_tasks_share_one_reading():
    yes_no = {"TSP-D": _instance("TSP-D", 3, 1), "GCP-D": _instance("GCP-D", 3, 1)}
    for task, inst in yes_no.items():
        truth = inst.gold.answer["Feasible"] == "YES"
        right, wrong = ("Yes", "No") if truth else ("No", "Yes")
        for answer, want in [
            ({"Feasible": right.upper()}, "correct"),
            ({"Answer": right.upper()}, "correct"),  # was a parse error on GCP-D
            ({"answer": right.lower()}, "correct"),
            ({"FEASIBLE": str(truth).lower()}, "correct"),
            ({"Feasible": truth}, "correct"),
            ({"Feasible": f"{right}, such a {'tour' if task == 'TSP-D' else 'colouring'} exists"
              if truth else f"{right}. Every option fails."}, "correct"),  # was a parse error
            ({"Feasible": f"**{right}**"}, "correct"),
            ({"Feasible": wrong.upper()}, "wrong"),
            ({"Feasible": "maybe", "Answer": right}, "correct"),  # Feasible unreadable: Answer decides
            ({"Feasible": right, "NumColors": "three", "Tour": None}, "correct"),  # unrequested keys ignored
            ({"Feasible": "YES_OR_NO"}, "parse_error"),
            ({"Feasible": "Yes or no"}, "parse_error"),
            ({"Feasible": "Not sure"}, "parse_error"),
            ({"Feasible": "yesterday"}, "parse_error"),
            ({"Verdict": right}, "parse_error"),
        ]:
            verdict, consistent = _score(inst, answer)
            assert verdict == want, (task, answer, verdict)
            assert consistent is None  # no witness, no stated value
