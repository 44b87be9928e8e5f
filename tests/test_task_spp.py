"""SPP: Dijkstra is cross-checked against networkx and against brute force over all simple paths."""

from __future__ import annotations

import io
import json
import random

import networkx as nx
import pytest
from PIL import Image
from pydantic import ValidationError

from evalcore.schema import ParseError
from nphe4v.tasks import spp
from nphe4v.tasks.spp import (
    TASK,
    SPPData,
    SPPEdge,
    dijkstra,
    generate,
    heuristic,
    params,
    parse,
    random_answer,
    render,
    solve,
    text,
    verify,
)


def make(n: int, edges: list[tuple[int, int, int]], start: int, end: int) -> SPPData:
    return SPPData(num_nodes=n, edges=[SPPEdge(u=u, v=v, weight=w) for u, v, w in edges], start=start, end=end)


def to_nx(data: SPPData) -> nx.Graph:
    g = nx.Graph()
    g.add_nodes_from(range(data.num_nodes))
    g.add_weighted_edges_from((e.u, e.v, e.weight) for e in data.edges)
    return g


def random_graph(rng: random.Random, n: int, m: int, wmax: int, wmin: int = 1) -> SPPData:
    """Arbitrary graphs (often disconnected), unlike the generator's."""
    pairs = rng.sample([(i, j) for i in range(n) for j in range(i + 1, n)], m)
    s, t = rng.sample(range(n), 2)
    return make(n, [(u, v, rng.randint(wmin, wmax)) for u, v in pairs], s, t)


def brute_force(data: SPPData) -> int | None:
    """Minimum weight over every simple start-end path, enumerated by DFS."""
    adj: dict[int, dict[int, int]] = {i: {} for i in range(data.num_nodes)}
    for e in data.edges:
        adj[e.u][e.v] = adj[e.v][e.u] = e.weight
    best: int | None = None

    def walk(x: int, seen: set[int], cost: int) -> None:
        nonlocal best
        if x == data.end:
            best = cost if best is None else min(best, cost)
            return
        for y, w in adj[x].items():
            if y not in seen:
                walk(y, seen | {y}, cost + w)

    walk(data.start, {data.start}, 0)
    return best


def path_weight(data: SPPData, path: list[int]) -> int:
    w = {frozenset((e.u, e.v)): e.weight for e in data.edges}
    return sum(w[frozenset(p)] for p in zip(path, path[1:], strict=False))


def check_against_networkx(data: SPPData) -> None:
    g = to_nx(data)
    found = dijkstra(data)
    if not nx.has_path(g, data.start, data.end):
        assert found is None
        return
    assert found is not None
    d, path = found
    assert d == nx.dijkstra_path_length(g, data.start, data.end)
    assert path[0] == data.start and path[-1] == data.end and len(set(path)) == len(path)
    assert path_weight(data, path) == d


def test_dijkstra_matches_networkx_on_generated_levels():
    for level in range(1, 11):
        for i in range(25):
            check_against_networkx(generate(level, random.Random(500 * level + i)))


def test_dijkstra_matches_networkx_on_arbitrary_graphs():
    rng = random.Random(21)
    for _ in range(300):
        n = rng.randint(2, 16)
        m = rng.randint(0, min(n * (n - 1) // 2, 2 * n))
        # Zero weights included: Dijkstra must still be exact with them.
        check_against_networkx(random_graph(rng, n, m, wmax=rng.choice([1, 3, 15]), wmin=rng.choice([0, 1])))


def test_dijkstra_matches_brute_force_on_small_graphs():
    rng = random.Random(22)
    disconnected = 0
    for _ in range(300):
        n = rng.randint(2, 7)
        m = rng.randint(0, n * (n - 1) // 2)
        data = random_graph(rng, n, m, wmax=rng.choice([2, 5, 12]))
        expected = brute_force(data)
        gold = solve(data)
        assert gold.value == expected
        disconnected += expected is None
        if expected is None:
            assert gold.answer == {"Path": "", "TotalDistance": -1}
        else:
            assert verify(data, gold, parse(gold.answer)).verdict == "correct"
    assert disconnected > 10  # the no-path branch was really exercised


def test_generate_follows_level_schedule_and_is_nontrivial():
    with_choice = 0
    for level in range(1, 11):
        p = params(level)
        for i in range(20):
            data = generate(level, random.Random(i))
            assert data == generate(level, random.Random(i))
            assert data.num_nodes == level + 3 == p["num_nodes"]
            assert len(data.edges) == level + 4 == p["num_edges"]
            assert all(1 <= e.weight <= level + 5 for e in data.edges)
            g = to_nx(data)
            assert nx.is_connected(g)
            assert not g.has_edge(data.start, data.end)
            with_choice += len(list(nx.all_simple_paths(g, data.start, data.end))) >= 2
    # Two extra edges on a tree leave a cycle to route around almost always.
    assert with_choice >= 190


def test_data_model_validation():
    ok = make(3, [(0, 1, 2), (1, 2, 0)], 0, 2)
    assert TASK.load(ok.model_dump()) == ok
    for bad in [
        dict(n=3, edges=[(0, 1, 1), (1, 0, 2)], s=0, t=2),  # duplicate undirected edge
        dict(n=3, edges=[(1, 1, 1)], s=0, t=2),  # self loop
        dict(n=3, edges=[(0, 3, 1)], s=0, t=2),  # endpoint out of range
        dict(n=3, edges=[(0, 1, -1)], s=0, t=2),  # negative weight
        dict(n=3, edges=[], s=0, t=3),  # end out of range
        dict(n=3, edges=[], s=1, t=1),  # start == end
    ]:
        with pytest.raises(ValidationError):
            make(bad["n"], bad["edges"], bad["s"], bad["t"])


def test_oracle_round_trips_including_no_path():
    cases = [generate(level, random.Random(level)) for level in range(1, 11)]
    cases.append(make(5, [(0, 1, 3), (2, 3, 1), (3, 4, 2)], 0, 4))
    for data in cases:
        gold = solve(data)
        ans = parse(json.loads(json.dumps(gold.answer)))
        assert isinstance(ans, dict)
        assert verify(data, gold, ans).verdict == "correct"
    assert solve(cases[-1]).value is None


# 0-1-3 costs 1+10, 0-2-3 costs 2+2, 0-4-3 costs 3+1: two optimal routes and a greedy trap.
TRAP = make(5, [(0, 1, 1), (1, 3, 10), (0, 2, 2), (2, 3, 2), (0, 4, 3), (4, 3, 1)], 0, 3)


def test_alternative_optimal_path_accepted():
    gold = solve(TRAP)
    assert gold.value == 4
    for path in ("0->2->3", "0->4->3", [0, 4, 3], "0 -> 2 -> 3"):
        ans = parse({"Path": path, "TotalDistance": "4"})
        assert verify(TRAP, gold, ans).verdict == "correct", path


@pytest.mark.parametrize(
    ("path", "dist", "needle"),
    [
        ("1->3", 10, "starts at 1"),
        ("0->2", 2, "ends at 2"),
        ("0->3", 4, "no edge between 0 and 3"),
        ("0->2->9->3", 4, "no edge between 2 and 9"),
        ("0->2->0->4->3", 8, "repeats node"),
        ("0->1->3", 11, "not the shortest distance 4"),
        ("0->1->3", 4, "TotalDistance 4 is not the path's weight 11"),
        ("", -1, "claims no path"),
        ("0", 0, "ends at 0"),
    ],
)
def test_verify_rejects_with_reason(path, dist, needle):
    ans = parse({"Path": path, "TotalDistance": dist})
    v = verify(TRAP, solve(TRAP), ans)
    assert v.verdict == "wrong" and needle in v.reason, v


def test_the_path_decides_and_the_stated_distance_is_reported_apart():
    gold = solve(TRAP)
    for path, dist, verdict, consistent in [
        ("0->2->3", 4, "correct", True),
        ("0->2->3", 5, "correct", False),  # optimal path, wrong total: the papers' checker would say wrong
        ("0->2->3", 4.5, "correct", False),
        ("0->2->3", "four", "correct", None),  # unreadable: not compared
        ("0->1->3", 4, "wrong", False),  # weight 11
        ("0->1->3", 11, "wrong", True),
        ("0->3", 4, "wrong", None),  # not a path: no weight to compare with
    ]:
        v = verify(TRAP, gold, parse({"Path": path, "TotalDistance": dist}))
        assert (v.verdict, v.value_consistent) == (verdict, consistent), (path, dist, v)
    assert "stated TotalDistance 5 is not the path's weight 4" in verify(
        TRAP, gold, parse({"Path": "0->2->3", "TotalDistance": 5})).reason
    v = verify(TRAP, gold, parse({"Path": "0->2->3"}))
    assert (v.verdict, v.value_consistent) == ("correct", None)


def test_verify_on_a_no_path_instance():
    data = make(4, [(0, 1, 1), (2, 3, 1)], 0, 3)
    gold = solve(data)
    for raw in [{"Path": "", "TotalDistance": -1}, {"Path": [], "TotalDistance": None},
                {"Path": None, "TotalDistance": "inf"}, {"path": "No path", "total_distance": "None"}]:
        assert verify(data, gold, parse(raw)).verdict == "correct", raw
    v = verify(data, gold, parse({"Path": "", "TotalDistance": 0}))
    assert (v.verdict, v.value_consistent) == ("correct", False)  # the empty path decides
    assert verify(data, gold, parse({"Path": "", "TotalDistance": -1})).value_consistent is True
    v = verify(data, gold, parse({"Path": "0->1->3", "TotalDistance": 2}))
    assert v.verdict == "wrong" and "no edge between 1 and 3" in v.reason


def test_verify_never_raises_on_odd_canonical_answers():
    gold = solve(TRAP)
    for ans in [{}, {"Path": None, "TotalDistance": 4}, {"Path": [0, 1, 3]}, {"Path": [-5, 3], "TotalDistance": 1}]:
        assert verify(TRAP, gold, ans).verdict == "wrong"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({"Path": "0->2->3", "TotalDistance": 4}, {"Path": [0, 2, 3], "TotalDistance": 4}),
        ({"path": [0, "2", 3], "total_distance": "4"}, {"Path": [0, 2, 3], "TotalDistance": 4}),
        ({"PATH": "[0, 2, 3]", "Total Distance": 4.0}, {"Path": [0, 2, 3], "TotalDistance": 4}),
        ({"Path": "0 → 2 → 3", "TotalDistance": " 4 "}, {"Path": [0, 2, 3], "TotalDistance": 4}),
        ({"Path": "", "TotalDistance": -1}, {"Path": [], "TotalDistance": -1}),
        ({"Path": "none", "TotalDistance": "Infinity"}, {"Path": [], "TotalDistance": -1}),
        ({"Path": [], "TotalDistance": None}, {"Path": [], "TotalDistance": -1}),
        ({"Path": "0-2-3", "TotalDistance": 4}, {"Path": [0, 2, 3], "TotalDistance": 4}),
        ({"Path": "0 => 2 => 3", "TotalDistance": 4}, {"Path": [0, 2, 3], "TotalDistance": 4}),
        ({"Path": "0—2—3", "TotalDistance": 4}, {"Path": [0, 2, 3], "TotalDistance": 4}),
        # the path is the answer: a missing or unreadable stated distance is None, never a parse error
        ({"Path": "0->3"}, {"Path": [0, 3], "TotalDistance": None}),
        ({"Path": "0->3", "TotalDistance": 4.5}, {"Path": [0, 3], "TotalDistance": 4.5}),
        ({"Path": "0->3", "TotalDistance": "four"}, {"Path": [0, 3], "TotalDistance": None}),
        ({"Path": "0->3", "TotalDistance": [4]}, {"Path": [0, 3], "TotalDistance": None}),
    ],
)
def test_parse_accepts_lenient_forms(raw, expected):
    assert parse(raw) == expected


@pytest.mark.parametrize(
    ("raw", "kind"),
    [
        ({"TotalDistance": 4}, "missing_key"),
        ({"Path": "a->b", "TotalDistance": 4}, "bad_value"),
        ({"Path": "0->2.5->3", "TotalDistance": 4}, "bad_value"),
        ({"Path": {"0": 2}, "TotalDistance": 4}, "bad_value"),
        ({"Path": list(range(20000)), "TotalDistance": 4}, "bad_value"),
        ({"Path": [[0, 1]], "TotalDistance": 4}, "bad_value"),
        ({"Path": "9" * 5000 + "-3", "TotalDistance": 4}, "bad_value"),
        ({"Path": "0-" + "- " * 3000 + "x", "TotalDistance": 4}, "bad_value"),
    ],
)
def test_parse_rejects_with_kind(raw, kind):
    out = parse(raw)
    assert isinstance(out, ParseError) and out.kind == kind


@pytest.mark.parametrize("hostile", [None, [], "0->3", 7, {None: None, (1, 2): [], 3: {"Path": 1}}])
def test_parse_never_raises_on_hostile_input(hostile):
    assert isinstance(parse(hostile), ParseError)


def test_heuristic_is_greedy_and_can_fail():
    h = heuristic(TRAP)
    assert h == {"Path": "0->1->3", "TotalDistance": 11}
    assert verify(TRAP, solve(TRAP), parse(h)).verdict == "wrong"
    # Stuck in a dead end: the partial walk is returned as is.
    dead = make(4, [(0, 1, 1), (0, 2, 5), (2, 3, 1)], 0, 3)
    assert heuristic(dead) == {"Path": "0->1", "TotalDistance": 1}
    for level in range(1, 11):
        data = generate(level, random.Random(level))
        h = heuristic(data)
        ans = parse(h)
        assert isinstance(ans, dict) and ans["Path"][0] == data.start
        assert verify(data, solve(data), ans).verdict in ("correct", "wrong")


def test_random_answer_is_well_formed_and_seeded():
    data = generate(8, random.Random(4))
    answers = [random_answer(data, random.Random(s)) for s in range(40)]
    assert answers == [random_answer(data, random.Random(s)) for s in range(40)]
    assert len({a["Path"] for a in answers}) > 3
    for a in answers:
        ans = parse(a)
        assert isinstance(ans, dict) and ans["Path"][0] == data.start
        assert path_weight(data, ans["Path"]) == ans["TotalDistance"]


def test_text_carries_scalars_and_one_line_per_edge():
    data = generate(4, random.Random(9))
    t = text(data)
    assert f"start node {data.start}" in t.question and f"end node {data.end}" in t.question
    assert f"{data.num_nodes} nodes" in t.question and "-1" in t.question
    assert len(t.data_lines) == len(data.edges)
    for e, line in zip(data.edges, t.data_lines, strict=True):
        assert f"node {e.u}" in line and f"node {e.v}" in line and line.endswith(f"weight {e.weight}")
    assert set(json.loads(t.example)) == {"Path", "TotalDistance"}


def test_layout_defects_flag_overlapping_labels():
    # Two edges whose midpoints coincide (a crossing at the centre): labels would overlap.
    px = {"0": (0.0, 0.0), "1": (400.0, 400.0), "2": (400.0, 0.0), "3": (0.0, 400.0)}
    bad, crossings = spp._layout_defects(px, [("0", "1", "1"), ("2", "3", "5")])
    assert bad > 0 and crossings == 1
    assert spp._layout_defects(px, [("0", "2", "1"), ("1", "3", "5")]) == (0, 0)


def test_render_is_a_deterministic_1024_png():
    for level in (1, 5, 10):
        data = generate(level, random.Random(level))
        pngs = render(data)
        assert len(pngs) == 1 and pngs == render(data)
        img = Image.open(io.BytesIO(pngs[0]))
        assert img.format == "PNG" and img.width == 1024 and 480 <= img.height <= 1400
        # Start (green) and end (orange) fills are present in the picture.
        colors = {c for _, c in img.convert("RGB").getcolors(1 << 20)}
        assert spp.START_FILL in colors and spp.END_FILL in colors
    disconnected = make(6, [(0, 1, 3), (2, 3, 1)], 0, 5)  # isolated nodes are drawn too
    assert Image.open(io.BytesIO(render(disconnected)[0])).width == 1024


def test_task_spec_wiring():
    assert TASK.name == "SPP" and TASK.complexity == "P" and TASK.benchmark == "nphardeval4v"
    assert TASK.data_model is SPPData and TASK.solve is solve


def test_endpoints_are_the_first_and_last_node_by_default_as_in_the_papers():
    # Appendix A (2025 revision): "the shortest path between the first and last nodes"; the original runners
    # take nodes[0] and nodes[-1]. The renumbering keeps the graph and the chosen pair (same optimum).
    relabelled = 0
    for level in range(1, 11):
        for i in range(5):
            first = generate(level, random.Random(f"ends-{level}-{i}"))
            chosen = generate(level, random.Random(f"ends-{level}-{i}"), endpoints="chosen")
            n = first.num_nodes
            assert (first.start, first.end) == (0, n - 1)
            assert solve(first).value == solve(chosen).value
            assert sorted(e.weight for e in first.edges) == sorted(e.weight for e in chosen.edges)
            assert all(0 <= e.u < n and 0 <= e.v < n for e in first.edges)
            relabelled += (chosen.start, chosen.end) != (0, n - 1)
    assert relabelled > 25  # the chosen pair is rarely the first and last node before renumbering
