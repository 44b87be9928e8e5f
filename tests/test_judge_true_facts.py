"""VGR v4: a true statement never lowers a score, a false one never raises it. Over every single-graph fixture
row, one statement at a time before the complete derivation (right and wrong answer), in phrasings written here
apart from the reader and from the judge card's families: adjacency ("A and B are adjacent", "B is among A's
neighbours", German "A ist mit B verbunden" and "zu den Nachbarn von A gehört B", Chinese "A的邻居包括B"), an
edge's weight, a degree ("A has 4 neighbours", "the degree of A is 4"), a distance between any two nodes
("d(A, B) = 7", "A and B are 7 apart"), a hop count in a weighted graph ("A is 2 hops away from B"), a two-edge
path with its length, a triangle, the number of common neighbours of any pair, the graph's counts. The false
version of each has a number 3 off or a pair that is not an edge. Before, "B is among A's neighbours" read as
A's whole neighbourhood, a hop count as a weighted distance, "A and B have 3 common neighbours" as a set of
common neighbours, "the degree of A is 4" (COL) as a colour: each cost a right answer up to 17 points. The
paired tasks (GED, MCS) are checked the same way with statements that name the graph they are about (an edge,
a bond, a degree, a neighbour count or list, the counts).
"""

from __future__ import annotations

import itertools
import random

import networkx as nx
import pytest
import vgr4_responses as R
from test_judge_helpers import evidence_of, load_instances, wrong_answer

TASKS = ("SD", "DIAM", "CN", "TSP", "CYC", "MCP", "MIS", "MVC", "COL")


def statements(g: nx.Graph, weighted: bool, rng: random.Random, false: bool) -> dict[str, str]:
    n = R._n
    nodes = sorted(g)
    off = 3 if false else 0

    def w(a: str, b: str) -> float:
        return float(g.edges[a, b].get("weight", 1)) if weighted and g.has_edge(a, b) else 5.0

    edges = sorted(tuple(sorted(e)) for e in g.edges)
    non = [(a, b) for a, b in itertools.combinations(nodes, 2) if not g.has_edge(a, b)]
    dist = dict(nx.all_pairs_dijkstra_path_length(g, weight="weight" if weighted else None))
    hops = dict(nx.all_pairs_shortest_path_length(g))
    out: dict[str, str] = {}
    if edges and (non or not false):
        a, b = rng.choice(non) if false else rng.choice(edges)
        out |= {"adjacent": f"{a} and {b} are adjacent.", "among": f"{b} is among {a}'s neighbours.",
                "include": f"{a}'s neighbours include {b}.", "german": f"{a} ist mit {b} verbunden.",
                "german_among": f"Zu den Nachbarn von {a} gehört {b}.", "chinese_include": f"{a}的邻居包括{b}。",
                "chinese_adjacent": f"{a}与{b}相邻。"}
        if weighted:
            out["weight"] = f"The edge between {a} and {b} has weight {n(w(a, b) + off)}."
    a = rng.choice(nodes)
    out |= {"degree": f"{a} has {g.degree(a) + off} neighbours.", "degree_of": f"The degree of {a} is {g.degree(a) + off}."}
    pairs = [(x, y) for x in nodes for y in nodes if x < y and y in dist[x]]
    if pairs:
        x, y = rng.choice(pairs)
        out |= {"distance": f"The shortest distance from {x} to {y} is {n(dist[x][y] + off)}.",
                "d_fn": f"d({x}, {y}) = {n(dist[x][y] + off)}", "apart": f"{x} and {y} are {n(dist[x][y] + off)} apart.",
                "hops": f"{x} is {hops[x][y] + off} hops away from {y}."}
    three = [p for p in (nx.shortest_path(g, x, y) for x, y in pairs[:30]) if len(p) == 3]
    if three:
        p = rng.choice(three)
        length = n(w(p[0], p[1]) + w(p[1], p[2]) + off) if weighted else n(2 + off)
        out["path"] = f"There is a path {p[0]} -> {p[1]} -> {p[2]} of length {length}."
    triangles = [c for c in nx.enumerate_all_cliques(g) if len(c) == 3][:20]
    if triangles and not false:
        t = rng.choice(triangles)
        out["triangle"] = f"{t[0]}, {t[1]} and {t[2]} form a triangle."
    if len(nodes) > 1:
        x, y = rng.sample(nodes, 2)
        out["common_count"] = f"{x} and {y} have {len(set(g[x]) & set(g[y])) + off} common neighbours."
    out["counts"] = f"The graph has {len(nodes) + off} nodes and {g.number_of_edges()} edges."
    return out


def _score(inst, ev, lines, answer, f):
    return R.judged(inst, ev, lines, answer, f).vgr


def fact_failures(inst) -> tuple[list[tuple], int]:
    """The statements of `statements` that break the property on `inst` (a single-graph instance with a
    derivation), and how many padded responses were scored. Also run over whole splits by
    bench/bench_vgr_partial.py."""
    ev = evidence_of(inst)
    der = R.derivation(inst, ev)
    broken, read = [], 0
    if not der or ev.facts.paired:
        return broken, read
    final = R.render_objs(der, "arrow")
    rng = random.Random(inst.instance_id)
    for false in (False, True):
        for ans, f in ((dict(inst.gold.answer), True), (wrong_answer(inst), False)):
            base = _score(inst, ev, final, ans, f)
            for name, line in statements(ev.facts.graphs[0].asked, ev.facts.weighted, rng, false).items():
                v = _score(inst, ev, [line, *final], ans, f)
                read += v is not None
                if v is not None and (v > base if false else v < base):
                    broken.append((inst.instance_id, name, "false" if false else "true", f, line, v, base))
    return broken, read


@pytest.mark.parametrize("task", TASKS)
def test_a_true_statement_never_lowers_a_score_and_a_false_one_never_raises_it(task):
    broken, read = [], 0
    for inst in load_instances():
        if inst.task == task:
            b, r = fact_failures(inst)
            broken += b
            read += r
    assert read, "nothing was scored"
    assert not broken, broken[:5]


def test_a_partial_neighbour_list_beside_the_query_lists_keeps_their_credit():
    """CN: "X's neighbours include Y" about another node, next to the query nodes' neighbour lists, is one edge,
    not a neighbour list that would make the query lists part of a transcription of every node's (whole-split
    bench, seed 2031: 12 responses had lost 50 points to it)."""
    checked = 0
    for inst in load_instances():
        if inst.task != "CN":
            continue
        ev = evidence_of(inst)
        der = R.derivation(inst, ev)
        g, q = ev.facts.graphs[0].asked, ev.facts.query
        others = [x for x in sorted(g) if x not in (str(q["source"]), str(q["target"])) and g[x]]
        if not der or not others:
            continue
        x = others[0]
        for ans, f in ((dict(inst.gold.answer), True), (wrong_answer(inst), False)):
            base = _score(inst, ev, R.render_objs(der, "arrow"), ans, f)
            for line in (f"{x}'s neighbours include {sorted(g[x])[0]}.", f"{sorted(g[x])[0]} is among {x}'s neighbours."):
                assert _score(inst, ev, [line, *R.render_objs(der, "arrow")], ans, f) == base, (inst.instance_id, line)
                checked += 1
    assert checked


def _paired_statements(g1: nx.Graph, g2: nx.Graph, rng: random.Random, false: bool) -> dict[str, str]:
    off = 3 if false else 0
    e1, e2 = rng.choice(sorted(g1.edges)), rng.choice(sorted(g2.edges))
    non = [(a, b) for a, b in itertools.combinations(sorted(g1), 2) if not g1.has_edge(a, b)]
    if false and non:
        e1 = rng.choice(non)
    a1, a2 = rng.choice(sorted(g1)), rng.choice(sorted(g2))
    rest = sorted(set(g1) - set(g1[a1]) - {a1})[:2] if false else sorted(g1[a1])
    return {"edge": f"Graph 1 has the edge {e1[0]}-{e1[1]}.", "bond": f"Molecule 2 contains the bond {e2[0]}–{e2[1]}.",
            "degree": f"{a1} has degree {g1.degree(a1) + off} in graph 1.",
            "neighbours_2": f"In graph 2, {a2} has {g2.degree(a2) + off} neighbours.",
            "counts": f"Graph 1 has {g1.number_of_nodes() + off} nodes and {g1.number_of_edges()} edges.",
            "neighbour_list": f"The neighbours of {a1} in graph 1 are {', '.join(rest) or 'none'}."}


@pytest.mark.parametrize("task", ["GED", "MCS"])
def test_the_same_holds_for_statements_about_either_graph_of_a_paired_task(task):
    broken, read = [], 0
    for inst in load_instances():
        if inst.task != task:
            continue
        ev = evidence_of(inst)
        der = R.derivation(inst, ev)
        if not der:
            continue
        final, rng = R.render_objs(der, "arrow"), random.Random(inst.instance_id)
        g1, g2 = ev.facts.graphs[0].asked, ev.facts.graphs[1].asked
        for false in (False, True):
            for ans, f in ((dict(inst.gold.answer), True), (wrong_answer(inst), False)):
                base = _score(inst, ev, final, ans, f)
                for name, line in _paired_statements(g1, g2, rng, false).items():
                    v = _score(inst, ev, [line, *final], ans, f)
                    read += v is not None
                    if v is not None and (v > base if false else v < base):
                        broken.append((inst.instance_id, name, false, f, line, v, base))
    assert read and not broken, broken[:5]
