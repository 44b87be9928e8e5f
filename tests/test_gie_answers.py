"""GraphVerse answers: gold and alternative optima verify, every kind of bad answer is rejected with a
reason naming the problem, parse never raises, heuristics and random answers are well-formed."""

from __future__ import annotations

import itertools
import json
import random
import string
from typing import Any

import networkx as nx
from hypothesis import given, settings
from hypothesis import strategies as st

from evalcore.schema import Gold, ParseError, Verdict
from gie import solvers
from gie.answers import heuristic, parse, random_answer, solve, verify
from gie.catalogue import PAIRED_TASKS, SINGLE_TASKS, TASK_NAMES
from gie.tasks import get_config

ANSWER_EXAMPLES = {t: get_config(t).answer_example for t in TASK_NAMES}
ANSWER_INSTRUCTIONS = {t: get_config(t).answer_instruction for t in TASK_NAMES}

# ----------------------------------------------------------------------------------------------- helpers


def codes(n: int, rng: random.Random) -> list[str]:
    out: set[str] = set()
    while len(out) < n:
        out.add("".join(rng.choice(string.ascii_uppercase) for _ in range(3)))
    return rng.sample(sorted(out), n)


def labelled(g: nx.Graph, rng: random.Random, weighted: bool = True) -> nx.Graph:
    h = nx.relabel_nodes(g, dict(zip(sorted(g.nodes), codes(g.number_of_nodes(), rng), strict=True)))
    if weighted:
        for u, v in h.edges:
            h[u][v]["weight"] = rng.randint(1, 9)
    return h


def tree_with_rings(n: int, rng: random.Random) -> nx.Graph:
    g = nx.random_labeled_tree(n, seed=rng.randrange(2**31))
    non_edges = [e for e in itertools.combinations(range(n), 2) if not g.has_edge(*e)]
    for e in rng.sample(non_edges, min(len(non_edges), rng.randint(0, max(1, n // 4)))):
        g.add_edge(*e)
    return g


def random_graph(seed: int, n_lo: int = 4, n_hi: int = 10, connected: bool = False) -> nx.Graph:
    rng = random.Random(seed)
    while True:
        n = rng.randint(n_lo, n_hi)
        if seed % 3 == 0:
            g = tree_with_rings(n, rng)
        else:
            g = nx.gnp_random_graph(n, rng.choice([0.3, 0.5, 0.7]), seed=rng.randrange(2**31))
        if not connected or nx.is_connected(g):
            return labelled(g, rng)


def query_for(task: str, g: nx.Graph) -> dict[str, Any]:
    nodes = sorted(g)
    return {"source": nodes[0], "target": nodes[-1]} if task in ("SD", "CN") else {}


def check(task: str, graphs: list[nx.Graph], query: dict[str, Any], gold: Gold, answer: Any) -> Verdict:
    canon = parse(task, json.loads(json.dumps(answer)))
    assert not isinstance(canon, ParseError), canon
    return verify(task, graphs, query, gold, canon)


def ok(task: str, g: nx.Graph, gold: Gold, answer: Any, query: dict[str, Any] | None = None) -> None:
    v = check(task, [g], query_for(task, g) if query is None else query, gold, answer)
    assert v.verdict == "correct", (answer, v.reason)


def bad(task: str, g: nx.Graph, gold: Gold, answer: Any, *words: str, query: dict[str, Any] | None = None) -> str:
    v = check(task, [g], query_for(task, g) if query is None else query, gold, answer)
    assert v.verdict == "wrong", answer
    for w in words:
        assert w in v.reason, (w, v.reason)
    return v.reason


def bad_witness(task: str, g: nx.Graph, gold: Gold, answer: Any, *words: str, verdict: str = "correct",
                query: dict[str, Any] | None = None) -> None:
    """A value-scored task: the verdict follows the stated value; the faulty witness only clears
    witness_valid and is named in the reason."""
    v = check(task, [g], query_for(task, g) if query is None else query, gold, answer)
    assert v.verdict == verdict, (answer, v.reason)
    assert v.witness_valid is False, (answer, v)
    for w in words:
        assert w in v.reason, (w, v.reason)


def inconsistent(task: str, g: nx.Graph, gold: Gold, answer: Any, *words: str, verdict: str = "correct",
                 query: dict[str, Any] | None = None) -> None:
    """The witness is feasible and decides (or, value-scored, the value does); the stated value disagrees
    with the witness: value_consistent is False and the reason names both numbers."""
    v = check(task, [g], query_for(task, g) if query is None else query, gold, answer)
    assert (v.verdict, v.witness_valid, v.value_consistent) == (verdict, True, False), (answer, v)
    for w in words:
        assert w in v.reason, (w, v.reason)


def gold_of(task: str, g: nx.Graph) -> Gold:
    return solve(task, [g], query_for(task, g))


# ----------------------------------------------------------------------------------------------- format


def test_examples_and_instructions_cover_every_task() -> None:
    assert set(ANSWER_EXAMPLES) == set(ANSWER_INSTRUCTIONS) == set(TASK_NAMES)
    for task, example in ANSWER_EXAMPLES.items():
        canon = parse(task, example)
        assert isinstance(canon, dict) and set(canon) == set(example), task
        assert all(k in ANSWER_INSTRUCTIONS[task] for k in example), task


def test_gold_answers_verify_on_many_graphs() -> None:
    for seed in range(60):
        g = random_graph(seed, connected=True)
        for task in SINGLE_TASKS:
            ok(task, g, gold_of(task, g), gold_of(task, g).answer)


def test_parse_lenient_spellings() -> None:
    assert parse("SD", {"distance": "12", "path": "AAA -> BBB->CCC"}) == {"Distance": 12, "Path": ["AAA", "BBB", "CCC"]}
    assert parse("SD", {"Distance": "inf", "Path": None}) == {"Distance": None, "Path": None}
    assert parse("SD", {"Distance": -1}) == {"Distance": None, "Path": None}
    # value-only answers where the paper scores the value: the witness is simply absent
    assert parse("SD", {"Distance": 3}) == {"Distance": 3, "Path": None}
    assert parse("DIAM", {"Diameter": "4"}) == {"Diameter": 4, "Path": None}
    assert parse("GED", {"EditDistance": 5}) == {"Distance": 5, "Mapping": None}
    assert parse("MCS", {"Size": 3, "Mapping": {}}) == {"Size": 3, "Mapping": None}
    assert parse("CN", {"common_neighbors": "AAA, BBB"}) == {"CommonNeighbors": ["AAA", "BBB"]}
    assert parse("CN", {"Common Neighbours": "none"}) == {"CommonNeighbors": []}
    assert parse("MIS", {"independent set": "[ 'AAA' , 'BBB' ]"}) == {"IndependentSet": ["AAA", "BBB"]}
    assert parse("MCP", {"clique": "AAA BBB CCC"}) == {"Clique": ["AAA", "BBB", "CCC"]}
    assert parse("MVC", {"COVER": "AAA-BBB"}) == {"Cover": ["AAA", "BBB"]}
    assert parse("TSP", {"Tour": "A→B→C→A", "Length": 7.0}) == {"Tour": ["A", "B", "C", "A"], "Length": 7}
    assert parse("CYC", {"has_cycle": True, "cycle": ["A", "B", "C"]}) == {"HasCycle": "YES", "Cycle": ["A", "B", "C"]}
    assert parse("CYC", {"HasCycle": "no"}) == {"HasCycle": "NO", "Cycle": []}
    assert parse("COL", {"NumColors": "2", "Coloring": {"1": ["A", "C"], "2": ["B"]}}) == {
        "NumColors": 2, "Coloring": {"A": "1", "C": "1", "B": "2"}}
    assert parse("GED", {"Distance": 3, "Mapping": [["A", "X"], ["B", None], "C->Y"]}) == {
        "Distance": 3, "Mapping": {"A": "X", "B": None, "C": "Y"}}
    assert parse("MCS", {"size": 1, "mapping": {" A ": "X"}}) == {"Size": 1, "Mapping": {"A": "X"}}
    # canonical answers parse to themselves
    for task, example in ANSWER_EXAMPLES.items():
        canon = parse(task, example)
        assert parse(task, canon) == canon


def test_parse_errors() -> None:
    def kind(task: str, obj: Any) -> str:
        got = parse(task, obj)
        assert isinstance(got, ParseError), got
        return got.kind

    assert kind("SD", [1, 2]) == "not_a_mapping"
    assert kind("SD", {"Path": ["A"]}) == "missing_key"
    assert kind("DIAM", {"Path": ["A", "B"]}) == "missing_key"
    assert kind("GED", {"Mapping": {"A": "X"}}) == "missing_key"
    assert kind("MCS", {"Mapping": {"A": "X"}}) == "missing_key"
    assert kind("DIAM", {"Diameter": "big", "Path": ["A"]}) == "bad_value"
    assert kind("MCP", {"Clique": [["A", "B"]]}) == "bad_value"
    assert kind("MCP", {"Clique": [True]}) == "bad_value"
    assert kind("MIS", {"IndependentSet": ["A"] * 10_001}) == "too_large"
    assert kind("CYC", {"HasCycle": "maybe", "Cycle": []}) == "bad_value"
    assert kind("CYC", {"HasCycle": "YES"}) == "missing_key"
    assert kind("COL", {"NumColors": 2, "Coloring": {"1": ["A"], "2": ["A"]}}) == "bad_value"
    assert "'A'" in str(parse("COL", {"NumColors": 2, "Coloring": {"1": ["A"], "2": ["A"]}}))
    assert kind("GED", {"Distance": 1, "Mapping": "A to X"}) == "bad_value"
    assert kind("XYZ", {}) == "bad_value"


# ----------------------------------------------------------------------------------------------- optima


def test_every_optimal_answer_is_accepted() -> None:
    rng = random.Random(0)
    for seed in range(40):
        g = random_graph(seed, n_hi=8, connected=True)
        q = query_for("SD", g)
        s, t = q["source"], q["target"]
        gold = gold_of("SD", g)
        for path in nx.all_shortest_paths(g, s, t, weight="weight"):
            ok("SD", g, gold, {"Distance": gold.value, "Path": path})
        gold = gold_of("DIAM", g)
        d = int(gold.value)
        far = [(a, b) for a, b in itertools.combinations(g, 2) if nx.shortest_path_length(g, a, b) == d]
        for a, b in far:
            path = nx.shortest_path(g, a, b)
            ok("DIAM", g, gold, {"Diameter": d, "Path": path})
            ok("DIAM", g, gold, {"Diameter": d, "Path": "->".join(reversed(path))})
        for task, key, cliques in (
            ("MCP", "Clique", nx.find_cliques(g)),
            ("MIS", "IndependentSet", nx.find_cliques(nx.complement(g))),
        ):
            gold = gold_of(task, g)
            for c in cliques:
                if len(c) == gold.value:
                    ok(task, g, gold, {key: [x.lower() for x in rng.sample(c, len(c))]})
                    if task == "MIS":
                        ok("MVC", g, gold_of("MVC", g), {"Cover": sorted(set(g) - set(c))})
        gold = gold_of("TSP", g)
        if gold.value is not None:
            body = gold.answer["Tour"][:-1]
            k = rng.randrange(len(body))
            rotated = body[k:] + body[:k]
            ok("TSP", g, gold, {"Tour": [*rotated, rotated[0]], "Length": gold.value})
            ok("TSP", g, gold, {"Tour": list(reversed(rotated)), "Length": gold.value})  # open form
        gold = gold_of("CYC", g)
        if gold.value:
            body = gold.answer["Cycle"][:-1]
            ok("CYC", g, gold, {"HasCycle": "yes", "Cycle": ", ".join(reversed(body))})
            for c in nx.simple_cycles(g):
                if len(c) == gold.value:
                    ok("CYC", g, gold, {"HasCycle": "YES", "Cycle": [*c, c[0]]})
        gold = gold_of("COL", g)
        names = ["red", "green", "blue", "cyan", "pink", "grey", "gold", "navy", "teal"]
        perm = rng.sample(names, len(names))
        recoloured = {v: perm[c - 1] for v, c in gold.answer["Coloring"].items()}
        ok("COL", g, gold, {"NumColors": gold.value, "Coloring": recoloured})
        inverted: dict[str, list[str]] = {}
        for v, c in gold.answer["Coloring"].items():
            inverted.setdefault(str(c), []).append(v)
        ok("COL", g, gold, {"NumColors": gold.value, "Coloring": inverted})


def test_suboptimal_answers_are_rejected() -> None:
    seen: set[str] = set()
    for seed in range(80):
        g = random_graph(seed, n_hi=8, connected=True)
        q = query_for("SD", g)
        gold = gold_of("SD", g)
        for path in itertools.islice(nx.shortest_simple_paths(g, q["source"], q["target"], weight="weight"), 6):
            w = solvers.tour_weight(g, path)
            if w > gold.value:
                bad("SD", g, gold, {"Distance": w, "Path": path}, "shortest distance", str(int(gold.value)))
                seen.add("SD")
        gold = gold_of("DIAM", g)
        if gold.value > 1:
            u, v = next(iter(g.edges))
            bad("DIAM", g, gold, {"Diameter": 1, "Path": [u, v]}, "the diameter is")
            seen.add("DIAM")
        gold = gold_of("TSP", g)
        if gold.value is not None and len(g) <= 7:
            body = sorted(g)
            for perm in itertools.permutations(body[1:]):
                tour = [body[0], *perm, body[0]]
                if all(g.has_edge(a, b) for a, b in zip(tour, tour[1:], strict=False)):
                    w = solvers.tour_weight(g, tour)
                    if w > gold.value:
                        bad("TSP", g, gold, {"Tour": tour, "Length": w}, "shortest tour")
                        seen.add("TSP")
                        break
        for task, key in (("MCP", "Clique"), ("MIS", "IndependentSet")):
            gold = gold_of(task, g)
            if gold.value > 1:
                bad(task, g, gold, {key: gold.answer[key][1:]}, "maximum", str(int(gold.value)))
                seen.add(task)
        gold = gold_of("MVC", g)
        extra = sorted(set(g) - set(gold.answer["Cover"]))
        if extra:
            bad("MVC", g, gold, {"Cover": [*gold.answer["Cover"], extra[0]]}, "minimum cover")
            seen.add("MVC")
        gold = gold_of("CYC", g)
        for c in nx.simple_cycles(g):
            if 3 <= len(c) < gold.value:
                bad("CYC", g, gold, {"HasCycle": "YES", "Cycle": c}, "longest cycle")
                seen.add("CYC")
                break
        gold = gold_of("COL", g)
        k = int(gold.value)
        colouring = dict(gold.answer["Coloring"])
        first = sorted(g)[0]
        colouring[first] = k + 1  # a fresh colour keeps it proper
        if len([v for v in g if gold.answer["Coloring"][v] == gold.answer["Coloring"][first]]) > 1:
            bad("COL", g, gold, {"NumColors": k + 1, "Coloring": colouring}, "chromatic number")
            seen.add("COL")
    assert seen == {"SD", "DIAM", "TSP", "MCP", "MIS", "MVC", "CYC", "COL"}


# ----------------------------------------------------------------------------------------------- infeasible


def square() -> nx.Graph:
    """A-B-C-D-A with chord A-C, weights: AB 1, BC 1, CD 5, DA 1, AC 3; plus a pendant E on D."""
    g = nx.Graph()
    g.add_weighted_edges_from([("AAA", "BBB", 1), ("BBB", "CCC", 1), ("CCC", "DDD", 5), ("DDD", "AAA", 1),
                               ("AAA", "CCC", 3), ("DDD", "EEE", 2)])
    return g


def test_infeasible_answers_name_the_problem() -> None:
    g = square()
    sd_q = {"source": "AAA", "target": "CCC"}
    gold = solve("SD", [g], sd_q)
    assert gold.value == 2
    inconsistent("SD", g, gold, {"Distance": 2, "Path": ["AAA", "CCC"]}, "states Distance 2", "weight is 3", query=sd_q)
    bad_witness("SD", g, gold, {"Distance": 2, "Path": ["AAA", "EEE", "CCC"]}, "no edge between 'AAA' and 'EEE'",
                query=sd_q)
    bad_witness("SD", g, gold, {"Distance": 2, "Path": ["BBB", "CCC"]}, "not at the source 'AAA'", query=sd_q)
    bad_witness("SD", g, gold, {"Distance": 1, "Path": ["AAA", "BBB"]}, "shortest distance is 2",
                "not at the target 'CCC'", verdict="wrong", query=sd_q)
    bad("SD", g, gold, {"Distance": None, "Path": []}, "claims no path", query=sd_q)
    bad("SD", g, gold, {"Distance": 3, "Path": ["AAA", "CCC"]}, "shortest distance is 2", query=sd_q)
    ok("SD", g, gold, {"Distance": "2", "Path": "aaa->bbb->ccc"}, query=sd_q)
    # The paper scores the distance: a value-only answer is judged on its value, with no witness.
    assert check("SD", [g], sd_q, gold, {"Distance": 2}) == Verdict(verdict="correct", witness_valid=None)
    assert check("SD", [g], sd_q, gold, {"Distance": 2, "Path": []}).witness_valid is None
    assert check("SD", [g], sd_q, gold, {"Distance": 2, "Path": "AAA->BBB->CCC"}).witness_valid is True
    assert check("SD", [g], sd_q, gold, {"Distance": 3}).verdict == "wrong"

    gold = solve("DIAM", [g], {})
    assert gold.value == 3
    bad_witness("DIAM", g, gold, {"Diameter": 3, "Path": ["AAA", "BBB", "CCC", "DDD"]}, "not a shortest path",
                "'AAA' to 'DDD'")
    inconsistent("DIAM", g, gold, {"Diameter": 2, "Path": ["BBB", "AAA", "DDD", "EEE"]}, "has 3 edges",
                 "the diameter is 3", verdict="wrong")
    bad("DIAM", g, gold, {"Diameter": 2, "Path": ["BBB", "AAA", "DDD"]}, "the diameter is 3")
    ok("DIAM", g, gold, {"Diameter": 3, "Path": ["EEE", "DDD", "CCC", "BBB"]})
    ok("DIAM", g, gold, {"Diameter": 3})
    bad("DIAM", g, gold, {"Diameter": 4}, "the diameter is 3")

    cn_q = {"source": "AAA", "target": "CCC"}
    gold = solve("CN", [g], cn_q)
    assert gold.answer == {"CommonNeighbors": ["BBB", "DDD"]}
    bad("CN", g, gold, {"CommonNeighbors": ["BBB"]}, "misses", "'DDD'", query=cn_q)
    bad("CN", g, gold, {"CommonNeighbors": ["BBB", "DDD", "EEE"]}, "'EEE'", "not adjacent to both", query=cn_q)

    gold = solve("TSP", [g], {})
    assert gold.value is None  # EEE has degree 1
    ok("TSP", g, gold, {"Tour": [], "Length": None})
    bad("TSP", g, gold, {"Tour": ["AAA", "BBB", "CCC", "DDD", "AAA"], "Length": 8}, "does not visit 'EEE'")
    g5 = g.copy()
    g5.add_edge("EEE", "CCC", weight=1)
    gold5 = solve("TSP", [g5], {})
    assert gold5.value == 6  # A-B-C-E-D-A = 1+1+1+2+1
    ok("TSP", g5, gold5, {"Tour": ["AAA", "BBB", "CCC", "EEE", "DDD", "AAA"], "Length": 6})
    # GraphArena grades the tour: an optimal tour with a misstated Length is correct, value_consistent False
    inconsistent("TSP", g5, gold5, {"Tour": ["AAA", "BBB", "CCC", "EEE", "DDD", "AAA"], "Length": 5}, "states Length 5",
                 "length is 6")
    bad("TSP", g5, gold5, {"Tour": ["AAA", "BBB", "DDD", "EEE", "CCC", "AAA"], "Length": 6},
        "no edge between 'BBB' and 'DDD'")
    bad("TSP", g5, gold5, {"Tour": [], "Length": None}, "claims no tour")

    gold = solve("MCP", [g], {})
    bad("MCP", g, gold, {"Clique": ["AAA", "BBB", "DDD"]}, "no edge between 'BBB' and 'DDD'")
    gold = solve("MIS", [g], {})
    bad("MIS", g, gold, {"IndependentSet": ["BBB", "DDD", "CCC"]}, "'BBB' and 'CCC' are adjacent")
    gold = solve("MVC", [g], {})
    bad("MVC", g, gold, {"Cover": ["AAA", "CCC"]}, "edge 'DDD'-'EEE'")

    gold = solve("COL", [g], {})
    assert gold.value == 3
    bad("COL", g, gold, {"NumColors": 3, "Coloring": {"AAA": 1, "BBB": 2, "CCC": 3, "DDD": 2}}, "no colour for 'EEE'")
    bad("COL", g, gold, {"NumColors": 3, "Coloring": {"AAA": 1, "BBB": 2, "CCC": 2, "DDD": 3, "EEE": 1}},
        "'BBB' and 'CCC' share colour")
    inconsistent("COL", g, gold, {"NumColors": 4, "Coloring": {"AAA": 1, "BBB": 2, "CCC": 3, "DDD": 2, "EEE": 1}},
                 "states NumColors 4", "uses is 3")

    gold = solve("CYC", [g], {})
    assert gold.value == 4
    bad("CYC", g, gold, {"HasCycle": "NO", "Cycle": []}, "says NO")
    bad("CYC", g, gold, {"HasCycle": "YES", "Cycle": ["AAA", "BBB", "AAA"]}, "at least 3")
    bad("CYC", g, gold, {"HasCycle": "YES", "Cycle": ["AAA", "BBB", "DDD", "AAA"]}, "no edge between 'BBB' and 'DDD'")
    bad("CYC", g, gold, {"HasCycle": "YES", "Cycle": []}, "gives no cycle")
    bad("CYC", g, gold, {"HasCycle": "NO", "Cycle": ["AAA", "BBB", "CCC"]}, "lists a cycle")
    ok("CYC", g, gold, {"HasCycle": "YES", "Cycle": "AAA BBB CCC DDD"})


def test_cycle_no_is_correct_only_for_forests() -> None:
    rng = random.Random(2)
    for _ in range(20):
        tree = labelled(nx.random_labeled_tree(rng.randint(3, 10), seed=rng.randrange(10**6)), rng, weighted=False)
        gold = gold_of("CYC", tree)
        assert gold.value == 0
        ok("CYC", tree, gold, {"HasCycle": "NO", "Cycle": []})
        a, b, c = sorted(tree)[:3]
        bad("CYC", tree, gold, {"HasCycle": "YES", "Cycle": [a, b, c, a]}, "no edge")


def test_duplicates_and_unknown_names_are_rejected_by_name() -> None:
    g = square()
    cases: list[tuple[str, dict[str, Any], dict[str, Any] | None]] = [
        ("MIS", {"IndependentSet": ["BBB", "DDD", "BBB"]}, None),
        ("MIS", {"IndependentSet": ["BBB", "bbb", "DDD"]}, None),
        ("MCP", {"Clique": ["AAA", "BBB", "CCC", "AAA"]}, None),
        ("MVC", {"Cover": ["AAA", "CCC", "DDD", "DDD"]}, None),
        ("CN", {"CommonNeighbors": ["BBB", "DDD", "BBB"]}, {"source": "AAA", "target": "CCC"}),
        ("TSP", {"Tour": ["AAA", "BBB", "BBB", "CCC", "DDD", "EEE", "AAA"], "Length": 9}, None),
        ("CYC", {"HasCycle": "YES", "Cycle": ["AAA", "BBB", "CCC", "BBB", "AAA"]}, None),
        ("COL", {"NumColors": 3, "Coloring": {"AAA": 1, "BBB": 2, "bbb": 2, "CCC": 3, "DDD": 2, "EEE": 1}}, None),
    ]
    for task, answer, query in cases:
        reason = bad(task, g, solve(task, [g], query or {}), answer, "repeats", query=query)
        assert "'BBB'" in reason or "'bbb'" in reason or "'AAA'" in reason or "'DDD'" in reason, reason
    unknown: list[tuple[str, dict[str, Any], dict[str, Any] | None]] = [
        ("MIS", {"IndependentSet": ["BBB", "DDD", "ZZZ"]}, None),
        ("MCP", {"Clique": ["AAA", "ZZZ"]}, None),
        ("MVC", {"Cover": ["AAA", "CCC", "DDD", "ZZZ"]}, None),
        ("CN", {"CommonNeighbors": ["BBB", "DDD", "ZZZ"]}, {"source": "AAA", "target": "CCC"}),
        ("TSP", {"Tour": ["AAA", "BBB", "CCC", "EEE", "DDD", "ZZZ", "AAA"], "Length": 9}, None),
        ("CYC", {"HasCycle": "YES", "Cycle": ["AAA", "BBB", "ZZZ", "AAA"]}, None),
        ("COL", {"NumColors": 3, "Coloring": {"AAA": 1, "BBB": 2, "CCC": 3, "DDD": 2, "EEE": 1, "ZZZ": 1}}, None),
    ]
    for task, answer, query in unknown:
        bad(task, g, solve(task, [g], query or {}), answer, "unknown", "'ZZZ'", query=query)
    sd_q = {"source": "AAA", "target": "CCC"}
    sd_gold = solve("SD", [g], sd_q)
    bad_witness("SD", g, sd_gold, {"Distance": 2, "Path": ["AAA", "BBB", "AAA", "BBB", "CCC"]}, "repeats", "'AAA'",
                query=sd_q)
    bad_witness("SD", g, sd_gold, {"Distance": 2, "Path": ["AAA", "ZZZ", "CCC"]}, "unknown", "'ZZZ'", query=sd_q)
    bad_witness("DIAM", g, solve("DIAM", [g], {}), {"Diameter": 3, "Path": ["BBB", "ZZZ", "DDD"]},
                "unknown", "'ZZZ'")
    # Repeating a node of an independent set must not inflate its size (GraphArena's MIS bug).
    gold = solve("MIS", [g], {})
    padded = [*gold.answer["IndependentSet"], gold.answer["IndependentSet"][0]]
    bad("MIS", g, gold, {"IndependentSet": padded}, "repeats")


def test_verify_never_raises_on_odd_input() -> None:
    g = square()
    gold = solve("MIS", [g], {})
    assert verify("MIS", [g], {}, gold, {"nonsense": 1}).verdict == "wrong"
    assert verify("MIS", [g], {}, gold, "not a dict").verdict == "wrong"  # type: ignore[arg-type]
    assert verify("NOPE", [g], {}, gold, {}).verdict == "wrong"
    assert verify("SD", [g], {}, gold, {"Distance": 1, "Path": ["AAA", "BBB"]}).verdict == "wrong"  # no query


# ----------------------------------------------------------------------------------------------- paired


def ged_brute(g1: nx.Graph, g2: nx.Graph) -> tuple[int, list[dict[str, str | None]]]:
    """Minimum cost over every injective partial map G1 -> G2 (independent of gie.edit_distance's cost function)."""
    n1, n2 = sorted(g1), sorted(g2)

    def label(g: nx.Graph, v: str) -> Any:
        return g.nodes[v].get("element", g.nodes[v].get("color"))

    best, optimal = None, []
    for targets in itertools.product([None, *n2], repeat=len(n1)):
        used = [t for t in targets if t is not None]
        if len(used) != len(set(used)):
            continue
        m = dict(zip(n1, targets, strict=True))
        cost = sum(1 for u in n1 if m[u] is None or label(g1, u) != label(g2, m[u]))
        cost += len(n2) - len(used)
        for a, b in itertools.combinations(n1, 2):
            e1 = g1.has_edge(a, b)
            e2 = m[a] is not None and m[b] is not None and g2.has_edge(m[a], m[b])
            cost += e1 != e2
        inv = {t: u for u, t in m.items() if t is not None}
        for x, y in g2.edges:  # G2 edges whose ends are not both images
            if x not in inv or y not in inv:
                cost += 1
        if best is None or cost < best:
            best, optimal = cost, [m]
        elif cost == best:
            optimal.append(m)
    return best or 0, optimal


def mcs_brute(g1: nx.Graph, g2: nx.Graph) -> int:
    n1, n2 = sorted(g1), sorted(g2)
    for k in range(min(len(n1), len(n2)), 0, -1):
        for a in itertools.combinations(n1, k):
            for b in itertools.permutations(n2, k):
                if all(g1.has_edge(a[i], a[j]) == g2.has_edge(b[i], b[j])
                       for i, j in itertools.combinations(range(k), 2)):
                    return k
    return 0


def small_pair(seed: int) -> tuple[nx.Graph, nx.Graph]:
    rng = random.Random(seed)
    g1 = labelled(nx.gnp_random_graph(rng.randint(2, 4), 0.5, seed=rng.randrange(10**6)), rng, weighted=False)
    g2 = labelled(nx.gnp_random_graph(rng.randint(2, 4), 0.5, seed=rng.randrange(10**6)), rng, weighted=False)
    for g in (g1, g2):
        for v in g:
            g.nodes[v]["element"] = rng.choice("CCNO")
    return g1, g2


def paired_check(task: str, g1: nx.Graph, g2: nx.Graph, gold: Gold, answer: Any) -> Verdict:
    canon = parse(task, json.loads(json.dumps(answer)))
    assert not isinstance(canon, ParseError), canon
    return verify(task, [g1, g2], {}, gold, canon)


def test_ged_verify_against_brute_force() -> None:
    for seed in range(25):
        g1, g2 = small_pair(seed)
        best, optimal = ged_brute(g1, g2)
        gold = Gold(answer={"Distance": best, "Mapping": optimal[0]}, value=best)
        for m in optimal:
            v = paired_check("GED", g1, g2, gold, {"Distance": best, "Mapping": m})
            assert v.verdict == "correct", v.reason
            # deleted nodes may also be left out of the mapping
            v = paired_check("GED", g1, g2, gold, {"Distance": best, "Mapping": {k: x for k, x in m.items() if x}})
            assert v.verdict == "correct", v.reason
        everything_deleted = {u: None for u in g1}
        cost = len(g1) + len(g2) + g1.number_of_edges() + g2.number_of_edges()
        v = paired_check("GED", g1, g2, gold, {"Distance": cost, "Mapping": everything_deleted})
        assert (v.verdict == "correct") == (cost == best)
        if cost != best:
            assert "edit distance is" in v.reason
        v = paired_check("GED", g1, g2, gold, {"Distance": best + 1, "Mapping": optimal[0]})
        assert v.verdict == "wrong" and "states Distance" in v.reason
        h = heuristic("GED", [g1, g2], {})
        v = paired_check("GED", g1, g2, gold, h)
        assert v.verdict == "correct" or "edit distance is" in v.reason, v.reason
        solved = solve("GED", [g1, g2], {})
        assert solved.value == best
        v = paired_check("GED", g1, g2, solved, solved.answer)
        assert v.verdict == "correct", v.reason


def test_ged_mapping_problems_are_named() -> None:
    g1 = nx.Graph([("AAA", "BBB")])
    g2 = nx.Graph([("XXX", "YYY")])
    gold = Gold(answer={"Distance": 0, "Mapping": {"AAA": "XXX", "BBB": "YYY"}}, value=0)
    for answer, words in (
        ({"AAA": "XXX", "BBB": "XXX"}, ("not injective", "'XXX'")),
        ({"AAA": "XXX", "QQQ": "YYY"}, ("unknown", "first", "'QQQ'")),
        ({"AAA": "XXX", "BBB": "WWW"}, ("unknown", "second", "'WWW'")),
        ({"AAA": "XXX", "aaa": "YYY"}, ("repeats", "'AAA'")),
    ):
        v = paired_check("GED", g1, g2, gold, {"Distance": 0, "Mapping": answer})
        # the stated cost is right; the mapping is the witness and its fault is recorded apart
        assert v.verdict == "correct" and v.witness_valid is False, v
        assert all(w in v.reason for w in words), v.reason
        v = paired_check("GED", g1, g2, gold, {"Distance": 1, "Mapping": answer})
        assert v.verdict == "wrong" and v.witness_valid is False, v
    assert paired_check("GED", g1, g2, gold, {"Distance": 0}) == Verdict(verdict="correct")
    v = paired_check("GED", g1, g2, gold, {"Distance": 0, "Mapping": {"aaa": "xxx", "bbb": "yyy"}})
    assert v.verdict == "correct", v.reason


def test_mcs_verify_against_brute_force() -> None:
    for seed in range(40):
        g1, g2 = small_pair(100 + seed)
        best = mcs_brute(g1, g2)
        gold = Gold(answer={"Size": best, "Mapping": {}}, value=best)
        n1, n2 = sorted(g1), sorted(g2)
        accepted = 0
        for k in range(1, min(len(n1), len(n2)) + 1):
            for a in itertools.combinations(n1, k):
                for b in itertools.permutations(n2, k):
                    m = dict(zip(a, b, strict=True))
                    induced = all(g1.has_edge(x, y) == g2.has_edge(m[x], m[y]) for x, y in itertools.combinations(a, 2))
                    v = paired_check("MCS", g1, g2, gold, {"Size": k, "Mapping": m})
                    if not induced:
                        assert v.witness_valid is False and "not a common induced subgraph" in v.reason
                        assert v.verdict == ("correct" if k == best else "wrong"), v
                    elif k == best:
                        assert v.verdict == "correct" and v.witness_valid is True, v
                        accepted += 1
                    else:
                        assert v.verdict == "wrong" and "maximum common subgraph" in v.reason
                        assert v.witness_valid is True
        assert accepted > 0
        solved = solve("MCS", [g1, g2], {})
        assert solved.value == best
        v = paired_check("MCS", g1, g2, solved, solved.answer)
        assert v.verdict == "correct", v.reason
        h = heuristic("MCS", [g1, g2], {})
        v = paired_check("MCS", g1, g2, gold, h)
        assert v.verdict == "correct" or "maximum common subgraph" in v.reason, v.reason


def test_mcs_mapping_problems_are_named() -> None:
    g1 = nx.Graph([("AAA", "BBB"), ("BBB", "CCC")])
    g2 = nx.Graph([("XXX", "YYY"), ("YYY", "ZZZ"), ("ZZZ", "XXX")])
    gold = Gold(answer={"Size": 2, "Mapping": {"AAA": "XXX", "BBB": "YYY"}}, value=2)
    for answer, words in (
        ({"Size": 3, "Mapping": {"AAA": "XXX", "BBB": "YYY", "CCC": "ZZZ"}}, ("'AAA'-'CCC'", "second graph")),
        ({"Size": 2, "Mapping": {"AAA": "XXX", "BBB": "XXX"}}, ("not injective",)),
        ({"Size": 2, "Mapping": {"AAA": "XXX", "DDD": "YYY"}}, ("unknown", "'DDD'")),
    ):
        v = paired_check("MCS", g1, g2, gold, answer)
        assert v.witness_valid is False and all(w in v.reason for w in words), v.reason
        assert v.verdict == ("correct" if answer["Size"] == 2 else "wrong"), v
    v = paired_check("MCS", g1, g2, gold, {"Size": 1, "Mapping": {"AAA": "XXX", "BBB": "YYY"}})
    assert (v.verdict, v.witness_valid, v.value_consistent) == ("wrong", True, False), v
    assert "states Size 1" in v.reason and "2 pairs" in v.reason
    assert paired_check("MCS", g1, g2, gold, {"Size": 2}) == Verdict(verdict="correct")
    assert paired_check("MCS", g1, g2, gold, {"Size": 3}).verdict == "wrong"
    v = paired_check("MCS", g1, g2, gold, {"Size": 2, "Mapping": {"BBB": "ZZZ", "CCC": "XXX", "AAA": None}})
    assert v.verdict == "correct", v.reason


# ----------------------------------------------------------------------------------------------- heuristics


def test_heuristics_are_well_formed_and_feasible() -> None:
    sub_sd = 0
    for seed in range(50):
        g = random_graph(seed, connected=True)
        for task in SINGLE_TASKS:
            gold = gold_of(task, g)
            h = heuristic(task, [g], query_for(task, g))
            v = check(task, [g], query_for(task, g), gold, h)
            if task in ("DIAM", "CN", "MCP", "MVC", "MIS", "CYC", "COL", "SD") or (task == "TSP" and h["Tour"]):
                # feasible by construction: only optimality may fail (the ", but <optimum> is" reasons)
                assert v.verdict == "correct" or ", but " in v.reason, (task, v.reason)
            if task == "CN":
                assert v.verdict == "correct"
            if task == "MVC":
                assert len(h["Cover"]) <= 2 * gold.value
            if task == "SD" and v.verdict == "wrong":
                sub_sd += 1
            if task == "TSP" and gold.value is None:
                assert h == {"Tour": [], "Length": None} or v.verdict == "wrong"
    assert sub_sd > 0  # hop-shortest is sometimes not weight-shortest


def test_random_answers_are_well_formed() -> None:
    rng = random.Random(9)
    verdicts: dict[str, set[str]] = {}
    for seed in range(40):
        g = random_graph(seed)
        for task in SINGLE_TASKS:
            q = query_for(task, g)
            gold = gold_of(task, g) if task != "DIAM" or nx.is_connected(g) else Gold(answer={}, value=0)
            v = check(task, [g], q, gold, random_answer(task, [g], q, rng))
            verdicts.setdefault(task, set()).add(v.verdict)
    assert all("wrong" in s for s in verdicts.values())
    g1, g2 = small_pair(1)
    for task in PAIRED_TASKS:
        assert isinstance(parse(task, json.loads(json.dumps(random_answer(task, [g1, g2], {}, rng)))), dict)


# ----------------------------------------------------------------------------------------------- hypothesis

KEY_POOL = sorted({k for ex in ANSWER_EXAMPLES.values() for k in ex} | {"path", "has_cycle", "COLORING", "x", ""})
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(10**30), max_value=10**30), st.floats(allow_nan=True),
    st.text(max_size=12), st.sampled_from(["AAA", "bbb", "A->B", "A, B", "inf", "none", "YES", "no", "-1", "[]"]),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=5), st.tuples(inner, inner),
        st.dictionaries(st.one_of(st.text(max_size=6), st.sampled_from(KEY_POOL), st.integers()), inner, max_size=4),
    ),
    max_leaves=12,
)
answers_st = st.dictionaries(st.one_of(st.sampled_from(KEY_POOL), st.text(max_size=8)), values, max_size=5)


@settings(max_examples=250, deadline=None)
@given(task=st.sampled_from([*TASK_NAMES, "BOGUS"]), obj=st.one_of(answers_st, values))
def test_parse_and_verify_never_raise(task: str, obj: Any) -> None:
    got = parse(task, obj)
    assert isinstance(got, dict | ParseError)
    if isinstance(got, dict):
        assert parse(task, got) == got  # canonical answers are fixed points
        g, g2 = square(), nx.Graph([("XXX", "YYY")])
        graphs = [g, g2] if task in PAIRED_TASKS else [g]
        gold = Gold(answer={}, value=2)
        v = verify(task, graphs, {"source": "AAA", "target": "CCC"}, gold, got)
        assert isinstance(v, Verdict)


# ----------------------------------------------------------------------------------------------- witness column


def test_witness_column_separates_validity_from_the_verdict() -> None:
    g = square()
    # solution-scored tasks: an infeasible set is wrong with an invalid witness; a feasible but
    # suboptimal one is wrong with a valid witness
    gold = solve("MCP", [g], {})
    assert check("MCP", [g], {}, gold, {"Clique": ["AAA", "BBB", "DDD"]}).witness_valid is False
    v = check("MCP", [g], {}, gold, {"Clique": ["AAA", "BBB"]})
    assert (v.verdict, v.witness_valid) == ("wrong", True)
    v = check("MCP", [g], {}, gold, gold.answer)
    assert (v.verdict, v.witness_valid) == ("correct", True)
    gold = solve("CYC", [g], {})
    assert check("CYC", [g], {}, gold, {"HasCycle": "NO"}).witness_valid is None
    # value-scored tasks: every combination of right/wrong value and valid/invalid/absent witness
    gold = solve("DIAM", [g], {})
    path = ["EEE", "DDD", "CCC", "BBB"]
    table = {
        (3, None): ("correct", None, None), (3, tuple(path)): ("correct", True, True),
        (3, ("EEE", "CCC")): ("correct", False, None), (2, None): ("wrong", None, None),
        (2, tuple(path)): ("wrong", True, False), (2, ("EEE", "DDD", "AAA")): ("wrong", True, True),
    }
    for (d, p), want in table.items():
        answer: dict[str, Any] = {"Diameter": d} if p is None else {"Diameter": d, "Path": list(p)}
        v = check("DIAM", [g], {}, gold, answer)
        assert (v.verdict, v.witness_valid, v.value_consistent) == want, (answer, v)


def test_scored_sample_records_the_witness_column() -> None:
    from evalcore.records import SAMPLE_SCHEMA
    from evalcore.schema import Instance, SampleRecord
    from gie.tasks.construction import build_data
    from nphe4v.scoring import score_answer

    for column in ("witness_valid", "value_consistent"):
        assert column in SampleRecord.model_fields and column in SAMPLE_SCHEMA
    data = build_data(get_config("DIAM"), "none", random.Random(3))
    gold = solve("DIAM", data.asked_graphs(), {})
    inst = Instance(instance_id="DIAM-L01-0", benchmark="graphverse", task="DIAM", level=1, index=0,
                    data=data.model_dump(), gold=gold)
    d = int(gold.value)
    verdict, _ = score_answer(inst, f'{{"Diameter": {d}}}')
    assert (verdict.verdict, verdict.witness_valid) == ("correct", None), verdict
    verdict, _ = score_answer(inst, json.dumps({"Diameter": d, "Path": gold.answer["Path"]}))
    assert (verdict.verdict, verdict.witness_valid) == ("correct", True), verdict
    verdict, _ = score_answer(inst, json.dumps({"Diameter": d + 1, "Path": gold.answer["Path"]}))
    assert (verdict.verdict, verdict.witness_valid, verdict.value_consistent) == ("wrong", True, False), verdict
    # the scorer hands GraphVerse whatever the tags hold: a bare value with its unit is read, a bare list
    # (a path without the diameter) is a classified parse error
    verdict, parsed = score_answer(inst, f"<final_answer>{d} hops</final_answer>")
    assert verdict.verdict == "correct" and json.loads(parsed or "{}")["Diameter"] == d, verdict
    path = ", ".join(map(str, gold.answer["Path"]))
    verdict, _ = score_answer(inst, f"<final_answer>[{path}]</final_answer>")
    assert verdict.verdict == "parse_error" and verdict.reason.startswith("not_a_mapping"), verdict
