"""VGR v4 properties (issue 30): generated responses (`vgr4_responses`, which knows the graph and the gold optimum,
never the reader's patterns) over every fixture row (fast) and a whole generated testmini (slow), scored by the
default rule-based judge (`judge.rule_scorer.score_response`, VGR v4) with the exact verifier's verdict as F.

- wrong answer + any mix of edge transcriptions, pooled small sets, all-pairs mappings, other-question solutions:
  mean <= 10 per task, max <= 20;
- adding true perception facts, true negatives or rejected candidates changes no score by more than 1;
- a complete correct derivation + right answer scores >= 90 in every supported notation, and the same
  derivation scores within +-5 across notations (right and wrong answer);
- a bare right answer scores 50 (also on an instance without critical facts);
- prose the reader cannot read is null with reason `unreadable`;
- issue 9's padding: wrong answers padded with "The picture shows the link ..." lines never score higher;
- a program that only transcribes the input, with a right answer, scores what a bare right answer scores.
"""

from __future__ import annotations

import collections
import itertools
import json

import pytest
import vgr4_responses as R
from test_judge_helpers import evidence_of, load_instances, wrong_answer

from judge.rule_scorer import demo_response, score_response
from judge.vgr4 import UNREADABLE, score_text
from nphe4v.scoring import score_answer

TASKS = ("SD", "DIAM", "CN", "TSP", "MCP", "MVC", "MIS", "CYC", "COL", "GED", "MCS")


def _score(inst, ev, lines, answer, f):
    return R.judged(inst, ev, lines, answer, f)


def check_instance(inst, notations=R.NOTATIONS, k: int | None = None) -> tuple[list[str], dict[str, float]]:
    """Every per-instance property; returns (failures, attack scores by family). With `k` (the instance's
    index within its task x edit cell) the neutral additions are checked on one base and answer rotated by k,
    all additions at once before and after, and each family after (the whole-testmini tier's budget)."""
    ev = evidence_of(inst)
    right, wrong = dict(inst.gold.answer), wrong_answer(inst)
    w = ev.facts.weighted
    f_right = score_answer(inst, R.envelope([], right))[0].verdict == "correct"
    f_wrong = score_answer(inst, R.envelope([], wrong))[0].verdict == "correct"
    assert f_right and not f_wrong, inst.instance_id
    iid = f"{inst.instance_id} ({inst.task}/{inst.data['edit']['kind']})"
    bad: list[str] = []
    der = R.derivation(inst, ev)
    # an instance whose optimum has no critical fact (nothing to derive: an empty common-neighbour set of
    # isolated query nodes, no cycle) caps at a bare right answer's 50: only notation invariance is asked there
    crit = R.has_critical(inst, ev)
    bare = _score(inst, ev, [], right, True).vgr
    if bare != 50.0:
        bad.append(f"{iid}: bare right answer {bare}")
    # complete derivation, every notation asked for
    for ans, f in ((right, True), (wrong, False)):
        scores = {}
        for n in notations if der else ():
            scores[n] = _score(inst, ev, R.render_objs(der, n), ans, f).vgr
            if scores[n] is None or (f and crit and scores[n] < 90):
                bad.append(f"{iid}: complete derivation + {'right' if f else 'wrong'} answer in {n}: {scores[n]}")
        vals = [s for s in scores.values() if s is not None]
        if vals and max(vals) - min(vals) > 5:
            bad.append(f"{iid}: notation changes the score ({'right' if f else 'wrong'}): {scores}")
    # attacks with a wrong answer, alone and mixed
    fams = R.attack_lines(inst, ev)
    attack: dict[str, float] = {}
    mix = [ln for lines in fams.values() for ln in lines]
    for name, lines in [*fams.items(), ("mix", mix)]:
        if not lines:
            continue
        v = _score(inst, ev, lines, wrong, False).vgr
        attack[name] = v if v is not None else 0.0
    # issue 9: padding a wrong answer with "The picture shows the link ..." never raises it
    base = demo_response(ev, wrong, mistakes=1, seed=1)
    plain = score_response(ev, base, final_match=False, gold=inst.gold.answer, gold_value=inst.gold.value).vgr
    padded_text = base.replace("</reasoning>", "\n" + "\n".join(fams["picture"]) + "\n</reasoning>")
    padded = score_response(ev, padded_text, final_match=False, gold=inst.gold.answer, gold_value=inst.gold.value).vgr
    if plain is not None and padded is not None and padded > plain + 1e-9:
        bad.append(f"{iid}: picture padding raised a wrong answer {plain} -> {padded}")
    # neutral additions never move a score by more than 1
    adds = R.neutral_additions(inst, ev)
    bases = ([], R.render_objs(der, notations[-1]))
    answers = ((right, True), (wrong, False))
    if k is not None:
        bases, answers = bases[k % 2:][:1], answers[(k // 2) % 2:][:1]
    for base_lines in bases:
        for ans, f in answers:
            s0 = _score(inst, ev, base_lines, ans, f).vgr
            for name, lines in [*adds.items(), ("all", [ln for x in adds.values() for ln in x])]:
                if not lines:
                    continue
                for where in ("before", "after") if k is None or name == "all" else ("after",):
                    body = lines + base_lines if where == "before" else base_lines + lines
                    s1 = _score(inst, ev, body, ans, f).vgr
                    if s0 is None or s1 is None or abs(s1 - s0) > 1:
                        bad.append(f"{iid}: adding {name} {where} moved {s0} -> {s1}")
    # unsupported prose: null, never a number
    v = _score(inst, ev, R.unsupported(inst, ev), right, True)
    if v.vgr is not None or v.v4.reason != UNREADABLE:
        bad.append(f"{iid}: unsupported prose scored {v.vgr}")
    _ = w
    return bad, attack


def _bounds(attacks: dict[str, list[float]]) -> list[str]:
    bad = []
    for key, vals in attacks.items():
        mean = sum(vals) / len(vals)
        if mean > 10 or max(vals) > 20:
            bad.append(f"{key}: attack mean {mean:.1f}, max {max(vals):.1f} (n={len(vals)})")
    return bad


@pytest.mark.parametrize("task", TASKS)
def test_properties_fixture_rows(task):
    """Fast tier: every property on every fixture row of the task (one per edit), every notation."""
    rows = [i for i in load_instances() if i.task == task]
    attacks: dict[str, list[float]] = collections.defaultdict(list)
    failures: list[str] = []
    for inst in rows:
        bad, att = check_instance(inst)
        failures += bad
        for k, v in att.items():
            attacks[f"{task}/{k}"].append(v)
    failures += _bounds(attacks)
    assert not failures, "\n".join(failures[:40]) + f"\n({len(failures)} failures)"


def rotated(instances):
    """(instance, notations): arrow plus one other notation, rotated within each task x edit cell."""
    seen: dict[tuple[str, str], int] = {}
    others = [n for n in R.NOTATIONS if n != "arrow"]
    for inst in instances:
        cell = (inst.task, inst.data["edit"]["kind"])
        k = seen[cell] = seen.get(cell, -1) + 1
        yield inst, ("arrow", others[k % len(others)]), k


@pytest.mark.slow(reason="judges every property on every instance of a whole generated testmini")
def test_properties_whole_testmini(testmini_instances):
    """Every instance of a whole generated testmini: attacks, neutral additions, bare answers, unreadable prose and
    the issue-9 padding on all; the complete derivation in arrows and one more notation rotated within each
    task x edit cell (bench/bench_vgr3_properties.py --v4 checks every notation on every instance)."""
    attacks: dict[str, list[float]] = collections.defaultdict(list)
    failures: list[str] = []
    for inst, notations, k in rotated(testmini_instances):
        bad, att = check_instance(inst, notations, k)
        failures += bad
        for k, v in att.items():
            attacks[f"{inst.task}/{k}"].append(v)
    failures += _bounds(attacks)
    assert len(testmini_instances) > 1000
    assert not failures, "\n".join(failures[:40]) + f"\n({len(failures)} failures)"


def _first(task, edit="none"):
    return next(i for i in load_instances() if i.task == task and i.data["edit"]["kind"] == edit)


def test_program_transcription_scores_as_a_bare_answer():
    """A PoT program that only transcribes the edges and calls networkx: perception, so a right answer scores
    50 and a wrong one 0; the values it prints beyond the final answer (a path with its length) are claims."""
    for task in TASKS:
        inst = _first(task)
        ev = evidence_of(inst)
        g = ev.facts.graphs[0].asked
        edges = ", ".join(f'("{a}", "{b}", {d.get("weight", 1)})' for a, b, d in sorted(g.edges(data=True)))
        program = ["```python", "import networkx as nx", "G = nx.Graph()", f"G.add_weighted_edges_from([{edges}])",
                   *[f'G.add_edge("{a}", "{b}")' for a, b in sorted(g.edges)[:5]], "print(solve(G))", "```"]
        right, wrong = dict(inst.gold.answer), wrong_answer(inst)
        assert _score(inst, ev, program, right, True).vgr == 50.0, task
        assert _score(inst, ev, program, wrong, False).vgr == 0.0, task
    sd = _first("SD")
    ev = evidence_of(sd)
    p = [str(x) for x in sd.gold.answer["Path"]]
    printed = ["```python", "print(nx.shortest_path(G, s, t, weight='weight'))", "```", "Output:",
               f"Shortest path: {p!r}, length {sd.gold.value:g}"]
    v = _score(sd, ev, printed, dict(sd.gold.answer), True)
    assert v.vgr is not None and v.vgr > 50.0, v.v4
    # the program's stdout (a PoT sample's pot_stdout): the path it prints is a claim, the answer it prints is not
    answer_only = json.dumps(dict(sd.gold.answer))
    prog = R.envelope(program[:1] + ["G = build()", "print(json.dumps(solve(G)))", "```"], dict(sd.gold.answer))
    bare_out = score_response(ev, prog, final_match=True, gold=sd.gold.answer, gold_value=sd.gold.value,
                              program_output=answer_only + "\n")
    assert bare_out.vgr == 50.0, bare_out.v4
    runs = list(itertools.accumulate(float(ev.facts.graphs[0].asked.edges[a, b]["weight"])
                                     for a, b in itertools.pairwise(p)))
    derived = " -> ".join([p[0], *[f"{x} ({r:g})" for x, r in zip(p[1:], runs, strict=True)]])
    with_path = score_response(ev, prog, final_match=True, gold=sd.gold.answer, gold_value=sd.gold.value,
                               program_output=f"shortest path: {derived}\n{answer_only}\n")
    assert with_path.vgr == 100.0, with_path.v4


def test_true_statements_and_rejections_cost_nothing():
    """The issue's cases: a true "no edge" line, a rejected candidate, a failed colouring attempt, thousands
    separators in running totals."""
    sd = _first("SD")
    ev = evidence_of(sd)
    g = ev.facts.graphs[0].asked
    p = [str(x) for x in sd.gold.answer["Path"]]
    runs = list(itertools.accumulate(float(g.edges[a, b]["weight"]) for a, b in itertools.pairwise(p)))
    with_sep = " -> ".join([p[0], *[f"{x} ({r:,.0f} km)" for x, r in zip(p[1:], runs, strict=True)]])
    plain = " -> ".join([p[0], *[f"{x} ({r:.0f})" for x, r in zip(p[1:], runs, strict=True)]])
    right = dict(sd.gold.answer)
    a = _score(sd, ev, [f"Path: {plain}"], right, True).vgr
    b = _score(sd, ev, [f"Path: {with_sep}"], right, True).vgr
    assert a == b == 100.0
    non = next((x, y) for x, y in itertools.combinations(sorted(g), 2) if not g.has_edge(x, y))
    c = _score(sd, ev, [f"Path: {plain}", f"There is no edge {non[0]}–{non[1]}."], right, True).vgr
    assert c == a
    # every leg weight misread: the path is false, below a bare right answer
    wrong_legs = " -> ".join([p[0], *[f"{x} ({r + 7:.0f})" for x, r in zip(p[1:], runs, strict=True)]])
    assert _score(sd, ev, [f"Path: {wrong_legs}"], right, True).vgr < 50.0
    col = _first("COL")
    ev = evidence_of(col)
    nodes = sorted(ev.facts.graphs[0].asked)
    a0, b0 = next((x, y) for x, y in ev.facts.graphs[0].asked.edges)
    der = R.render_objs(R.derivation(col, ev), "arrow")
    s0 = _score(col, ev, der, dict(col.gold.answer), True).vgr
    tried = [f"Try {a0}: color 1, {b0}: color 1. Conflict, backtrack.", f"{{{', '.join(nodes[:3])}}} is not a clique."]
    assert _score(col, ev, tried + der, dict(col.gold.answer), True).vgr == s0


def test_degenerate_inputs_are_read():
    """Inputs that made earlier patterns quadratic are read to a verdict (their time is printed by
    bench/bench_judge.py, not asserted here)."""
    inst = _first("SD")
    ev = evidence_of(inst)
    a, b = sorted(ev.facts.graphs[0].asked)[:2]
    for body in ("1 + " * 15000 + "1", f"{a}-{b}-" * 20000, "[\n" * 20000, "g" + " " * 50000 + "1",
                 f"| {a} | {b} | 5 |\n" * 5000, "{" * 20000):
        v = score_text(ev, R.envelope([body], {}), final_match=False, gold=inst.gold.answer,
                       gold_value=inst.gold.value)
        assert v.vgr is None or 0.0 <= v.vgr <= 100.0


def test_grounded_judge_needs_the_relation_in_its_quote():
    """Item 4: a structured fact is grounded only when the claim reader, run on the quote alone, reads that
    fact there. A hostile judge quoting a node list for every critical fact (the path, the set, the edges, the
    mapping pairs) gets them all dropped; the same facts quoted where the response states them are kept."""
    from judge.grounding import ground_verdict
    from judge.schema import JudgeVerdict

    for inst in load_instances():
        ev = evidence_of(inst)
        gold = dict(inst.gold.answer)
        listing = "Nodes: " + ", ".join(sorted(ev.facts.graphs[0].asked)) + "."
        facts = []
        path = gold.get("Path") or gold.get("Tour") or gold.get("Cycle")
        if path:
            facts.append({"type": "path", "nodes": [str(x) for x in path]})
            facts += [{"type": "edge", "nodes": [str(a), str(b)]} for a, b in itertools.pairwise(path)]
        for key, label in (("Clique", "clique"), ("IndependentSet", "independent_set"), ("Cover", "vertex_cover")):
            if gold.get(key):
                facts.append({"type": "set", "nodes": [str(x) for x in gold[key]], "value": label})
        if isinstance(gold.get("Mapping"), dict):
            facts += [{"type": "mapping", "nodes": [str(a), str(x)]} for a, x in gold["Mapping"].items() if x]
        facts = [f for f in facts if all(n in listing for n in f["nodes"])]
        if not facts:
            continue
        text = R.envelope([listing], {})
        steps = [{"quote": listing.rstrip("."), "fact": f, "correct": True, "leads_to_answer": True} for f in facts]
        g = ground_verdict(ev, text, JudgeVerdict.model_validate({"steps": steps, "final_answer_match": True}).steps)
        assert not g.steps and len(g.dropped) == len(facts), (inst.instance_id, g.steps)
        assert {d["reason"] for d in g.dropped} <= {"the quote does not state the fact", "fact not in its quote"}
    # the same kind of fact, quoted where the response states it, is grounded
    sd = _first("SD")
    ev = evidence_of(sd)
    p = [str(x) for x in sd.gold.answer["Path"]]
    line = "Path: " + " -> ".join(p)
    steps = [{"quote": line, "fact": {"type": "path", "nodes": p}, "correct": True}]
    g = ground_verdict(ev, R.envelope([line], {}), JudgeVerdict.model_validate({"steps": steps, "final_answer_match": True}).steps)
    assert len(g.steps) == 1 and g.steps[0].truth == "true"


def test_the_judge_stage_reads_a_pot_samples_program_output(tmp_path):
    """The run's judge (cluster.judge_work) hands a PoT sample's `pot_stdout` to the reader: the path the
    program printed is credited, and the judgment's cache key changes with what was judged."""
    from cluster.judge_work import Planner, resolve_spec, rule_record
    from judge.rule_scorer import RULE_VERSION

    sd = _first("SD")
    ev = evidence_of(sd)
    p = [str(x) for x in sd.gold.answer["Path"]]
    runs = list(itertools.accumulate(float(ev.facts.graphs[0].asked.edges[a, b]["weight"])
                                     for a, b in itertools.pairwise(p)))
    derived = " -> ".join([p[0], *[f"{x} ({r:g})" for x, r in zip(p[1:], runs, strict=True)]])
    answer_only = json.dumps(dict(sd.gold.answer))
    prog = R.envelope(["```python", "G = build()", "print(json.dumps(solve(G)))", "```"], dict(sd.gold.answer))
    row = {"run_id": "r", "model": "m", "benchmark": "graphverse", "instance_id": sd.instance_id, "variant": "",
           "prompt_mode": "pot", "repeat": 0, "status": "ok", "verdict": "correct", "raw_response": prog}
    planner = Planner(tmp_path, {sd.instance_id: sd}, resolve_spec("rule-based"), 0, RULE_VERSION, set())
    bare = planner.work({**row, "pot_stdout": answer_only + "\n"})
    derived_w = planner.work({**row, "pot_stdout": f"shortest path: {derived}\n{answer_only}\n"})
    assert rule_record(bare).vgr_score == 50.0
    assert rule_record(derived_w).vgr_score == 100.0
    assert bare.key != derived_w.key
