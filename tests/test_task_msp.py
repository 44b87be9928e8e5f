"""MSP: the exact scheduler against independent methods, the generator, and answer grading."""

from __future__ import annotations

import io
import itertools
import json
import random

import networkx as nx
import pytest
from conftest import shared_or_skip
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image

from evalcore.extract import is_format_example
from evalcore.schema import ParseError
from nphe4v.tasks import msp
from nphe4v.tasks.msp import MSPData, MSPMeeting, MSPParticipant, max_schedule

# ---------------------------------------------------------------------------------------------------------
# Independent reference methods (sets of slots, no bitmasks)


def attendees(d: MSPData, mid: int) -> list[MSPParticipant]:
    return [p for p in d.participants if mid in p.meetings]


def starts(d: MSPData, m: MSPMeeting) -> list[int]:
    """Start slots at which every participant of m is available for its whole duration."""
    return [
        s for s in range(d.num_slots - m.duration + 1)
        if all(set(range(s, s + m.duration)) <= set(p.available_slots) for p in attendees(d, m.id))
    ]


def feasible(d: MSPData, plan: dict[int, int]) -> bool:
    """plan: meeting id -> start slot. Available everywhere, nobody in two meetings at once."""
    dur = {m.id: m.duration for m in d.meetings}
    for p in d.participants:
        used: set[int] = set()
        for mid in p.meetings:
            if mid in plan:
                block = set(range(plan[mid], plan[mid] + dur[mid]))
                if not block <= set(p.available_slots) or block & used or max(block) >= d.num_slots:
                    return False
                used |= block
    return all(0 <= s and s + dur[mid] <= d.num_slots for mid, s in plan.items())


def brute_max(d: MSPData) -> int:
    """Try every assignment of (no slot | any start) to every meeting."""
    choices = [[None, *range(d.num_slots - m.duration + 1)] for m in d.meetings]
    best = 0
    for combo in itertools.product(*choices):
        plan = {m.id: s for m, s in zip(d.meetings, combo, strict=True) if s is not None}
        if len(plan) > best and feasible(d, plan):
            best = len(plan)
    return best


def clique_max(d: MSPData) -> int:
    """Maximum independent set of the conflict graph on (meeting, start) options, as a maximum clique of its
    complement (networkx's exact max_weight_clique)."""
    dur = {m.id: m.duration for m in d.meetings}
    people = {m.id: {p.id for p in attendees(d, m.id)} for m in d.meetings}
    options = [(m.id, s) for m in d.meetings for s in starts(d, m)]
    compatible = nx.Graph()
    compatible.add_nodes_from(options)
    for (a, s), (b, t) in itertools.combinations(options, 2):
        if a == b:
            continue
        overlap = s < t + dur[b] and t < s + dur[a]
        if not (overlap and people[a] & people[b]):
            compatible.add_edge((a, s), (b, t))
    if not options:
        return 0
    _, size = nx.max_weight_clique(compatible, weight=None)
    return size


def random_instance(rng: random.Random, max_meetings: int, max_slots: int, max_duration: int = 2) -> MSPData:
    n_m = rng.randint(1, max_meetings)
    n_p = rng.randint(1, 4)
    n_s = rng.randint(1, max_slots)
    density = rng.uniform(0.3, 0.9)
    return MSPData(
        num_slots=n_s,
        meetings=[MSPMeeting(id=i, duration=rng.randint(1, max_duration)) for i in range(n_m)],
        participants=[
            MSPParticipant(
                id=q,
                available_slots=[s for s in range(n_s) if rng.random() < density],
                meetings=[i for i in range(n_m) if rng.random() < 0.5],
            )
            for q in range(n_p)
        ],
    )


def as_plan(answer: dict) -> dict[int, int]:
    return {int(k): min(v) for k, v in answer["Schedule"].items()}


# ---------------------------------------------------------------------------------------------------------
# Exact solver cross-checks


def test_solver_matches_brute_force_with_durations() -> None:
    rng = random.Random(21)
    partial = 0
    for _ in range(250):
        d = random_instance(rng, max_meetings=5, max_slots=5)
        sched = max_schedule(d)
        assert len(sched) == brute_max(d), d
        assert feasible(d, {mid: min(slots) for mid, slots in sched.items()})
        assert all(slots == list(range(slots[0], slots[0] + len(slots))) for slots in sched.values())
        partial += len(sched) < len(d.meetings)
    assert partial > 50  # the check exercised instances where not every meeting fits


def test_solver_matches_networkx_max_clique_on_benchmark_instances() -> None:
    rng = random.Random(22)
    cases = [msp.generate(level, random.Random(40 * level + i)) for level in range(1, 8) for i in range(25)]
    cases += [random_instance(rng, max_meetings=7, max_slots=8, max_duration=3) for _ in range(60)]
    for d in cases:
        gold = msp.solve(d)
        assert gold.value == clique_max(d), d
        assert feasible(d, as_plan(gold.answer))


def test_peer_instances_only_12_fully_schedulable() -> None:
    records = json.loads(shared_or_skip("peers", "nphardeval4v", "Data", "MSP", "msp_instances.json").read_text())
    full = 0
    for rec in records:
        d = MSPData(
            num_slots=rec["time_slots"],
            meetings=rec["meetings"],
            participants=[{"id": int(k), **v} for k, v in rec["participants"].items()],
        )
        gold = msp.solve(d)
        assert feasible(d, as_plan(gold.answer))
        if rec["complexity_level"] <= 3:
            assert gold.value == clique_max(d)
        full += gold.value == len(d.meetings)
    assert full == 12  # the spec's count of peer instances a complete schedule exists for


# ---------------------------------------------------------------------------------------------------------
# Generator


def test_generator_sizes_determinism_and_mostly_schedulable() -> None:
    full = 0
    total = 0
    for level in range(1, 11):
        for i in range(20):
            d = msp.generate(level, random.Random(3000 + 17 * level + i))
            assert d == msp.generate(level, random.Random(3000 + 17 * level + i))
            assert len(d.meetings) == level + 1
            assert len(d.participants) == level + 2
            assert d.num_slots == level + 3
            assert all(m.duration == 1 for m in d.meetings)
            assert all(len(attendees(d, m.id)) >= 2 for m in d.meetings)
            assert all(p.meetings for p in d.participants)
            full += msp.solve(d).value == len(d.meetings)
            total += 1
    share = full / total
    assert 0.6 <= share <= 0.9, share


def test_heuristic_feasible_and_not_always_optimal() -> None:
    optimal = 0
    for i in range(200):
        d = msp.generate(1 + i % 10, random.Random(6000 + i))
        gold = msp.solve(d)
        h = msp.heuristic(d)
        assert h["NumScheduled"] == len(h["Schedule"]) <= gold.value
        assert feasible(d, as_plan(h))
        # Greedy = meetings in id order, each at its earliest feasible start.
        expected: dict[int, int] = {}
        for m in sorted(d.meetings, key=lambda m: m.id):
            for s in starts(d, m):
                if feasible(d, {**expected, m.id: s}):
                    expected[m.id] = s
                    break
        assert as_plan(h) == expected
        verdict = msp.verify(d, gold, msp.parse(h)).verdict
        assert (verdict == "correct") == (h["NumScheduled"] == gold.value)
        optimal += verdict == "correct"
    assert 40 < optimal < 180


def test_oracle_and_random_baselines() -> None:
    for level in range(1, 11):
        for i in range(5):
            d = msp.TASK.load(msp.generate(level, random.Random(50 * level + i)).model_dump())
            gold = msp.solve(d)
            parsed = msp.parse(gold.answer)
            assert not isinstance(parsed, ParseError)
            assert msp.verify(d, gold, parsed).verdict == "correct"
            ans = msp.random_answer(d, random.Random(i))
            parsed = msp.parse(ans)
            assert not isinstance(parsed, ParseError)
            assert msp.verify(d, gold, parsed).verdict in ("correct", "wrong")


def test_data_model_rejects_inconsistent_instances() -> None:
    good = {"num_slots": 3, "meetings": [{"id": 0}], "participants": [{"id": 0, "available_slots": [0], "meetings": [0]}]}
    assert MSPData.model_validate(good).meetings[0].duration == 1
    bad_variants = [
        {**good, "meetings": [{"id": 0}, {"id": 0}]},
        {**good, "participants": [{"id": 0, "available_slots": [3], "meetings": [0]}]},
        {**good, "participants": [{"id": 0, "available_slots": [-1], "meetings": [0]}]},
        {**good, "participants": [{"id": 0, "available_slots": [0], "meetings": [1]}]},
        {**good, "participants": [{"id": 0, "available_slots": [0, 0], "meetings": [0]}]},
        {**good, "meetings": [{"id": 0, "duration": 0}]},
    ]
    for bad in bad_variants:
        with pytest.raises(ValueError):
            MSPData.model_validate(bad)


# ---------------------------------------------------------------------------------------------------------
# Grading

# Meeting 0 (p0, p1), meeting 1 (p1, p2), meeting 2 (p2, duration 2); 4 slots.
# p1 is only free in slot 1, so meetings 0 and 1 compete for it: the maximum is 2 of 3.
SMALL = MSPData(
    num_slots=4,
    meetings=[MSPMeeting(id=0), MSPMeeting(id=1), MSPMeeting(id=2, duration=2)],
    participants=[
        MSPParticipant(id=0, available_slots=[0, 1, 2], meetings=[0]),
        MSPParticipant(id=1, available_slots=[1], meetings=[0, 1]),
        MSPParticipant(id=2, available_slots=[0, 1, 2, 3], meetings=[1, 2]),
    ],
)
SMALL_GOLD = msp.solve(SMALL)


def grade(answer: dict) -> tuple[str, str]:
    parsed = msp.parse(answer)
    if isinstance(parsed, ParseError):
        return "parse_error", parsed.kind + " " + parsed.detail
    v = msp.verify(SMALL, SMALL_GOLD, parsed)
    return v.verdict, v.reason


def test_small_gold() -> None:
    assert SMALL_GOLD.value == 2 == brute_max(SMALL)
    assert grade(SMALL_GOLD.answer) == ("correct", "")


def test_every_optimal_schedule_is_accepted() -> None:
    optimal = []
    choices = [[None, *range(SMALL.num_slots - m.duration + 1)] for m in SMALL.meetings]
    for combo in itertools.product(*choices):
        plan = {m.id: s for m, s in zip(SMALL.meetings, combo, strict=True) if s is not None}
        if len(plan) == 2 and feasible(SMALL, plan):
            optimal.append(plan)
    assert len(optimal) >= 4
    dur = {m.id: m.duration for m in SMALL.meetings}
    for plan in optimal:
        answer = {"NumScheduled": 2, "Schedule": {str(k): list(range(s, s + dur[k])) for k, s in plan.items()}}
        assert grade(answer) == ("correct", ""), plan


def test_lenient_spellings_are_accepted() -> None:
    assert grade({"num_scheduled": "2", "schedule": {0: "1", "2": "2, 3", "1": []}}) == ("correct", "")
    assert grade({"NumScheduled": 2, "Schedule": {"0": [1], "2": [3, 2], "1": None}}) == ("correct", "")
    assert grade({"NumScheduled": 2.0, "Schedule": {"1": 1, "2": "[2, 3]", "0": "none"}}) == ("correct", "")


@pytest.mark.parametrize(
    ("schedule", "num", "fragment"),
    [
        ({"0": [1]}, 1, "2 can be scheduled"),
        ({"0": [1], "1": [1]}, 2, "participant 1 has meetings 0 and 1 in slot 1"),
        ({"1": [1], "2": [1, 2]}, 2, "participant 2 has meetings 1 and 2 in slot 1"),
        ({"0": [0], "2": [2, 3]}, 2, "participant 1 is not available in slot 0"),
        ({"0": [1], "2": [3, 4]}, 2, "slot 4 outside 0..3"),
        ({"0": [1], "2": [-1, 0]}, 2, "slot -1 outside"),
        ({"0": [1], "2": [2]}, 2, "lasts 2 slot(s) but got 1"),
        ({"0": [1], "2": [0, 2]}, 2, "not consecutive"),
        ({"0": [1], "2": [2, 2]}, 2, "listed twice"),
        ({"0": [1], "5": [2]}, 2, "unknown meeting 5"),
    ],
)
def test_wrong_schedules_rejected_with_reason(schedule, num, fragment) -> None:
    verdict, reason = grade({"NumScheduled": num, "Schedule": schedule})
    assert verdict == "wrong"
    assert fragment in reason, reason


def test_the_schedule_decides_and_the_stated_count_is_reported_apart() -> None:
    best = {"0": [1], "2": [2, 3]}
    for num, consistent in ((2, True), ("2", True), (3, False), (1, False), ("many", None), (None, None)):
        parsed = msp.parse({"NumScheduled": num, "Schedule": best})
        assert not isinstance(parsed, ParseError), num  # a missing or unreadable count never makes it unparsable
        v = msp.verify(SMALL, SMALL_GOLD, parsed)
        assert (v.verdict, v.value_consistent) == ("correct", consistent), num
    assert "stated NumScheduled 3, the schedule has 2" in grade({"NumScheduled": 3, "Schedule": best})[1]
    assert grade({"Schedule": best}) == ("correct", "")
    short = msp.verify(SMALL, SMALL_GOLD, msp.parse({"NumScheduled": 2, "Schedule": {"0": [1]}}))
    assert (short.verdict, short.value_consistent) == ("wrong", False)
    clash = msp.verify(SMALL, SMALL_GOLD, msp.parse({"NumScheduled": 2, "Schedule": {"0": [1], "1": [1]}}))
    assert (clash.verdict, clash.value_consistent) == ("wrong", None)  # infeasible: nothing to compare


def test_parse_errors() -> None:
    assert grade({"NumScheduled": 1})[1].startswith("missing_key")
    assert grade({"NumScheduled": 1, "Schedule": [[0, 1]]})[1].startswith("bad_value")
    assert grade({"NumScheduled": 1, "Schedule": {"zero": [1]}})[1].startswith("bad_value")
    assert grade({"NumScheduled": 1, "Schedule": {"0": "morning"}})[1].startswith("bad_value")
    assert grade({"NumScheduled": 1, "Schedule": {"0": [1.5]}})[1].startswith("bad_value")
    verdict, detail = grade({"NumScheduled": 2, "Schedule": {"0": [1], 0: [2]}})
    assert verdict == "parse_error" and "meeting 0" in detail


def test_verify_survives_malformed_canonical_answers() -> None:
    for junk in ({}, {"NumScheduled": 1}, {"NumScheduled": 1, "Schedule": "x"}, {"Schedule": {"0": [1]}},
                 {"NumScheduled": 2, "Schedule": {"0": [1], "5": [2]}}):
        assert msp.verify(SMALL, SMALL_GOLD, junk).verdict == "wrong"


json_scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=4) | st.integers(), inner, max_size=5),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(["NumScheduled", "schedule", "Schedule", "x"]), json_values, max_size=3))
def test_hostile_answers_never_raise(obj) -> None:
    parsed = msp.parse(obj)
    target = obj if isinstance(parsed, ParseError) else parsed
    assert msp.verify(SMALL, SMALL_GOLD, target).verdict in ("correct", "wrong")


@settings(max_examples=250, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["0", "1", "2", "3", "-1"]),
        st.lists(st.integers(min_value=-3, max_value=6), max_size=3) | json_scalars,
        max_size=4,
    ),
    json_scalars | st.integers(min_value=0, max_value=4),
)
def test_hostile_schedules_never_raise(schedule, num) -> None:
    parsed = msp.parse({"NumScheduled": num, "Schedule": schedule})
    if not isinstance(parsed, ParseError):
        verdict = msp.verify(SMALL, SMALL_GOLD, parsed)
        plan_ok = verdict.verdict == "correct"
        # Anything graded correct must really be feasible and optimal.
        if plan_ok:
            assert len(parsed["Schedule"]) == 2 and feasible(SMALL, as_plan(parsed))


# ---------------------------------------------------------------------------------------------------------
# Text and pictures


def test_text_carries_counts_and_every_datum() -> None:
    d = msp.generate(6, random.Random(8))
    t = msp.text(d)
    assert "7 meetings" in t.question and "8 participants" in t.question and "9 time slots" in t.question
    assert "Every meeting lasts 1 slot." in t.question
    assert len(t.data_lines) == len(d.meetings) + len(d.participants)
    for p, line in zip(d.participants, t.data_lines[len(d.meetings):], strict=True):
        assert line.startswith(f"Participant {p.id} is available in")
        assert ", ".join(map(str, sorted(p.meetings))) in line
    assert is_format_example(json.loads(t.example))
    mixed = SMALL
    assert "Each meeting lasts the number" in msp.text(mixed).question
    assert "Meeting 2 lasts 2 slots." in msp.text(mixed).data_lines


@pytest.mark.parametrize("data", [msp.generate(1, random.Random(1)), msp.generate(10, random.Random(2)), SMALL])
def test_render_is_deterministic_png_1024_wide(data) -> None:
    pngs = msp.render(data)
    assert len(pngs) == 1 and pngs == msp.render(data)
    img = Image.open(io.BytesIO(pngs[0])).convert("RGB")
    assert img.width == 1024
    # One green cell per available (participant, slot): the picture carries the availability grid.
    green = dict((c, n) for n, c in img.getcolors(1 << 20)).get((110, 200, 110), 0)
    assert (green > 0) == any(p.available_slots for p in data.participants)


def test_render_survives_empty_lists() -> None:
    d = MSPData(
        num_slots=2,
        meetings=[MSPMeeting(id=3, duration=2)],
        participants=[MSPParticipant(id=0, available_slots=[], meetings=[]),
                      MSPParticipant(id=7, available_slots=[0, 1], meetings=[3])],
    )
    assert Image.open(io.BytesIO(msp.render(d)[0])).width == 1024
    assert msp.solve(d).value == 1
    assert "Participant 0 is available in no slot and must attend no meeting." in msp.text(d).data_lines


def test_copied_ellipsis_entry_of_the_example_is_ignored():
    assert msp.parse({"NumScheduled": 1, "Schedule": {"0": [1], "...": "..."}}) == {
        "NumScheduled": 1, "Schedule": {"0": [1]}
    }
