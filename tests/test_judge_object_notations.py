"""VGR v4 reads a walk the same whatever notation writes it (issue 30's property, checked with notations no
earlier test wrote): a path, tour or cycle written hop by hop in step lines ("Step 1: go from A to B.") with
its length on a line of its own, as logic-programming facts (`path([A, B, C]). path_length(12).`), as markup
whose length comes before the nodes (`<path length="12"><node>A</node>...`), or in prose that states the
length first ("The shortest path, of length 12, is A, then B, then C") scores what the same walk scores as
`Path: A -> B -> C, total 12`, or null; step lines with the running total ("Step 2: go from B to C, distance so
far 12.") score what `Path: A -> B (5) -> C (12)` scores. Before, the step lines were hops that were never one walk (a complete
derivation scored as the bare answer: 50, and 0 with a wrong answer), and a length written before the nodes or
under a compound key (`path_length`) was dropped (a complete derivation lost its total: 75 for 87.5), and "go
from B to C, distance so far 12" was read as the distance from B to C, so every true step but the first was
charged (a complete DIAM derivation 12-25 instead of 100).

The same for TOML, over every task: a `[table]` header names the `key = value` lines under it
(`[neighbours.A]` / `nodes = ["B", "C"]`; `[colouring]` / `"A" = 2`; `[vertex_cover]` / `members = [...]`).
Before, a header was a line of its own: CN's neighbour lists lost their node and were charged as false (a
complete derivation 17 instead of 100), COL's colourings lost a node, and walks and sets were null.

And JSON whose objects are keyed by node: `{"neighbours": {"A": [...], "B": [...]}}` was one record to the
flattener ("neighbours: A: ...  B: ..."), read as one neighbour list of A holding B's too and charged (a
complete CN derivation 25 or 75 instead of 100: 166 of 200 CN responses on seed 2041), and `{"neighbours":
{"A": {"nodes": [...]}}}` lost its "neighbours" (null). Now a node's entry is a statement of its own, and a key
under a node keeps the word before it.

Properties, over every SD, DIAM, TSP and CYC fixture row with a derivation, right and wrong answer:

- each notation scores the arrow notation's score, or null;
- a false total (one more than the walk's length) costs: lower than the true one, or null;
- bare hop lines that do not come back to where they started and carry no total are not joined into a walk
  (a list of arrows in chain order is not a derivation of an open path unless a total carries it on): the
  same score as no reasoning at all, or null.
"""

from __future__ import annotations

import itertools
import json
from collections import Counter

import pytest
import vgr4_responses as R
from test_judge_helpers import evidence_of, load_instances, wrong_answer

TASKS = ("SD", "DIAM", "TSP", "CYC")


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def _walk(inst, ev) -> tuple[list[str], float | None, bool, list[float] | None] | None:
    """(nodes, total, closed, running totals) of the gold derivation's walk; the nodes of a closed one end where
    they start (and it has no running totals)."""
    objs = R.derivation(inst, ev)
    if not objs:
        return None
    o = objs[0]
    if o[0] == "walk":
        return list(o[1]), o[3], False, list(o[2])
    if o[0] == "closed":
        return list(o[1]), o[2], True, None
    return None


def _render(nodes: list[str], total: float | None, closed: bool, style: str) -> list[str]:
    name = "tour" if closed else "path"
    q = ", ".join(f"'{x}'" for x in nodes)
    length = [] if total is None else [_num(total)]
    if style == "steps":
        lines = [f"Step {i}: go from {a} to {b}." for i, (a, b) in enumerate(itertools.pairwise(nodes), 1)]
        return lines + [f"Overall length: {t}." for t in length]
    if style == "facts":
        return [f"{name}([{q}]).", *[f"{name}_length({t})." for t in length]]
    if style == "markup":
        attr = "".join(f' length="{t}"' for t in length)
        return [f"<{name}{attr}>" + "".join(f"<node>{x}</node>" for x in nodes) + f"</{name}>"]
    if style == "length_first":
        said = "".join(f", of length {t}," for t in length)
        return [f"The shortest {name}{said} is {nodes[0]}" + "".join(f", then {x}" for x in nodes[1:]) + "."]
    raise ValueError(style)


STYLES = ("steps", "facts", "markup", "length_first")


def _rows():
    for inst in load_instances():
        if inst.task not in TASKS:
            continue
        ev = evidence_of(inst)
        w = _walk(inst, ev)
        if w is not None:
            yield inst, ev, w


OBJECT_STYLES = ("toml", "json by node", "json by node, deep")


def notation_failures(inst) -> tuple[list[tuple], Counter]:
    """(the properties above that `inst` breaks: (style, right answer?, score, arrows' score); per style, how many
    of its responses were scored, not null). One instance of any task, for bench/bench_vgr_partial.py's whole
    splits and the tests below."""
    ev = evidence_of(inst)
    broken, scored = [], Counter()
    answers = ((dict(inst.gold.answer), True), (wrong_answer(inst), False))
    w = _walk(inst, ev) if inst.task in TASKS else None
    objs = [(o[0], o[1], None, o[3]) if o[0] == "walk" else o for o in R.derivation(inst, ev)]
    cases = [(n, R.render_objs(objs, "arrow"), r(objs)) for n, r in zip(OBJECT_STYLES, (_toml, _json_by_node, _json_deep),
                                                                      strict=True)] if objs else []
    if w is not None:
        nodes, total, closed, runs = w
        cases += [(st, _arrow(nodes, total, closed), _render(nodes, total, closed, st)) for st in STYLES]
        if runs and not closed:
            cases.append(("steps_running", [_arrow_running(nodes, runs)], _steps_running(nodes, runs)))
    for style, arrows, lines in cases:
        scored[style] += 0  # the style applies to this instance
        for answer, f in answers:
            want = R.judged(inst, ev, arrows, answer, f).vgr
            got = R.judged(inst, ev, lines, answer, f).vgr
            scored[style] += got is not None
            if got is not None and (want is None or abs(got - want) > 1e-6):
                broken.append((style, f, got, want))
    return broken, scored


def _on_fixtures(style: str) -> tuple[list[tuple], int, int]:
    """Over every fixture row: (what breaks `style`'s property, with the instance id; responses scored; instances
    the style applies to)."""
    broken, scored, rows = [], 0, 0
    for inst in load_instances():
        b, n = notation_failures(inst)
        broken += [(inst.instance_id, *x) for x in b if x[0] == style]
        scored += n[style]
        rows += style in n
    return broken, scored, rows


def _arrow(nodes: list[str], total: float | None, closed: bool) -> list[str]:
    return [("Tour: " if closed else "Path: ") + " -> ".join(nodes) + ("" if total is None else f", total {_num(total)}")]


@pytest.mark.parametrize("style", STYLES)
def test_a_walk_scores_alike_in_every_notation(style: str) -> None:
    rows = list(_rows())
    assert {inst.task for inst, _, _ in rows} == set(TASKS)
    differ, scored, n = _on_fixtures(style)
    assert n == len(rows)
    assert not differ, f"{style}: {len(differ)} scores differ from the arrow notation's, e.g. {differ[:4]}"
    assert scored >= len(rows)  # read, not null: the notations are not left to the null channel


@pytest.mark.parametrize("style", STYLES)
def test_a_false_total_costs(style: str) -> None:
    checked = 0
    for inst, ev, (nodes, total, closed, _runs) in _rows():
        if total is None:
            continue
        answer = dict(inst.gold.answer)
        true = R.judged(inst, ev, _render(nodes, total, closed, style), answer, True).vgr
        false = R.judged(inst, ev, _render(nodes, total + 1, closed, style), answer, True).vgr
        assert false is None or (true is not None and false < true), (inst.instance_id, style, true, false)
        checked += 1
    assert checked > 10


def test_open_bare_hops_without_a_total_are_not_one_walk() -> None:
    checked = 0
    for inst, ev, (nodes, _total, closed, _runs) in _rows():
        if closed or len(nodes) < 3:
            continue
        for answer, f in ((dict(inst.gold.answer), True), (wrong_answer(inst), False)):
            bare = R.judged(inst, ev, [], answer, f).vgr
            hops = R.judged(inst, ev, _render(nodes, None, False, "steps"), answer, f).vgr
            assert hops is None or abs(hops - bare) < 1e-6, (inst.instance_id, f, hops, bare)
            checked += 1
    assert checked > 10


def _steps_running(nodes: list[str], runs: list[float]) -> list[str]:
    return [f"Step {i}: go from {a} to {b}, distance so far {_num(runs[i])}."
            for i, (a, b) in enumerate(itertools.pairwise(nodes), 1)]


def _arrow_running(nodes: list[str], runs: list[float]) -> str:
    return "Path: " + " -> ".join(x if not i else f"{x} ({_num(runs[i])})" for i, x in enumerate(nodes))


def test_step_lines_with_running_totals_score_as_the_walk_with_them() -> None:
    differ, _scored, n = _on_fixtures("steps_running")
    assert 2 * n > 10  # responses checked: each instance with the right and a wrong answer
    assert not differ, f"{len(differ)} differ, e.g. {differ[:4]}"


def _toml(objs: list[tuple]) -> list[str]:
    """The derivation's objects as TOML tables (walks with their total only)."""
    def arr(xs) -> str:
        return "[" + ", ".join(f'"{x}"' for x in xs) + "]"
    out: list[str] = []
    for o in objs:
        if o[0] in ("walk", "closed"):
            total = o[3] if o[0] == "walk" else o[2]
            out += ["[tour]" if o[0] == "closed" else "[path]", f"nodes = {arr(o[1])}"]
            out += [] if total is None else [f"length = {_num(total)}"]
        elif o[0] == "set":
            out += [f"[{'common_neighbours' if o[1] == 'common' else o[1].replace(' ', '_')}]", f"members = {arr(o[2])}"]
        elif o[0] == "neigh":
            out += [f"[neighbours.{o[1]}]", f"nodes = {arr(o[2])}"]
        elif o[0] == "assign":
            out += ["[colouring]", *[f'"{a}" = {c}' for a, c in o[1].items()]]
        elif o[0] == "map":
            out += ["[mapping]", *[f'"{a}" = "{x}"' for a, x in o[1]]]
        out.append("")
    return out


def _json_by_node(objs: list[tuple], deep: bool = False) -> list[str]:
    """The objects as one JSON document: neighbour lists keyed by their node (under "neighbours", each a list,
    or with `deep` an object {"nodes": [...]}), the rest under "solution"."""
    neigh: dict[str, object] = {}
    sol: dict[str, object] = {}
    for o in objs:
        if o[0] in ("walk", "closed"):
            total = o[3] if o[0] == "walk" else o[2]
            sol["tour" if o[0] == "closed" else "path"] = {"nodes": list(o[1]), **({} if total is None else {"length": total})}
        elif o[0] == "set":
            sol["common_neighbours" if o[1] == "common" else o[1].replace(" ", "_")] = {"members": list(o[2])}
        elif o[0] == "neigh":
            neigh[o[1]] = {"nodes": list(o[2])} if deep else list(o[2])
        elif o[0] == "assign":
            sol["colouring"] = dict(o[1])
        elif o[0] == "map":
            sol["mapping"] = dict(o[1])
    return [json.dumps({**({"neighbours": neigh} if neigh else {}), **({"solution": sol} if sol else {})})]


def _json_deep(objs: list[tuple]) -> list[str]:
    return _json_by_node(objs, deep=True)


@pytest.mark.parametrize("style", OBJECT_STYLES)
def test_every_task_scores_alike_in_toml_and_in_json_keyed_by_node(style: str) -> None:
    differ, scored, rows = _on_fixtures(style)
    assert rows > 20
    assert not differ, f"{style}: {len(differ)} differ, e.g. {differ[:4]}"
    assert scored == 2 * rows  # every response read, right and wrong answer alike: none left null


def test_a_count_of_hops_before_the_nodes_is_not_a_length() -> None:
    """ "Total 2 hops: A -> B -> C" and "2 edges: ..." count the hops; read as a length of 2 they were charged
    in a weighted graph. True, they change nothing against the walk alone (or make it null)."""
    checked = 0
    for inst, ev, (nodes, _total, closed, _runs) in _rows():
        if closed:
            continue
        hops = len(nodes) - 1
        for answer, f in ((dict(inst.gold.answer), True), (wrong_answer(inst), False)):
            alone = R.judged(inst, ev, _arrow(nodes, None, False), answer, f).vgr
            for said in (f"Total {hops} hops: ", f"Length {hops} edges: ", f"Distance of {hops} steps: "):
                got = R.judged(inst, ev, [said + " -> ".join(nodes)], answer, f).vgr
                assert got is None or (alone is not None and abs(got - alone) < 1e-6), (inst.instance_id, said, got,
                                                                                         alone)
                checked += 1
    assert checked > 10
