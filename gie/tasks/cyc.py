"""CYC: does a cycle exist, and a longest simple cycle if so (molecules bring their rings)."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import networkx as nx

from gie import solvers
from gie.tasks._sources import SOCIAL, mix
from gie.tasks.answer_parsing import bad_value, missing_key, node_names
from gie.tasks.config import TaskConfig
from gie.tasks.heuristic_graph import heuristic_graph
from gie.tasks.scenarios import Nouns
from gie.tasks.spec import build_spec
from gie.tasks.verdicts import (
    Resolver,
    correct,
    infeasible,
    missing_edge,
    num_str,
    objective,
    open_cycle,
    wrong,
)
from nphe4v.core.coerce import as_yes_no, get_key
from nphe4v.core.schema import Gold, ParseError, Verdict


def _valid(g: nx.Graph, q: dict[str, Any]) -> bool:
    return g.number_of_nodes() >= 3 and g.number_of_edges() > 0


def _text(n: Nouns, q: dict[str, Any]) -> str:
    return (f"Decide whether the {n.network} contains a cycle: a closed route through at least three "
            f"distinct {n.nodes} that uses each {n.edge} and each {n.node} at most once. If it does, give "
            f"a longest such cycle.")


ANSWER_EXAMPLE: dict[str, Any] = {"HasCycle": "YES", "Cycle": ["AAA", "BBB", "CCC", "DDD", "AAA"]}
ANSWER_INSTRUCTION = (
    "HasCycle is \"YES\" or \"NO\"; if YES, Cycle lists the node names of a longest simple cycle in "
    "order, ending at the starting node (an empty list if NO)."
)


# ------------------------------------------------------------------------------------------------ answer


def parse(obj: dict[str, Any]) -> dict[str, Any] | ParseError:
    has_h, raw_h = get_key(obj, "HasCycle", "CycleExists", "Exists")
    has_c, raw_c = get_key(obj, "Cycle", "LongestCycle")
    if not has_h:
        return missing_key("HasCycle")
    yes = as_yes_no(raw_h)
    if yes is None:
        return bad_value("HasCycle", raw_h)
    if not has_c:
        if yes:
            return missing_key("Cycle")
        return {"HasCycle": "NO", "Cycle": []}
    cycle = node_names(raw_c, "Cycle")
    if isinstance(cycle, ParseError):
        return cycle
    return {"HasCycle": "YES" if yes else "NO", "Cycle": cycle}


def solve(graphs: Sequence[nx.Graph], query: dict[str, Any]) -> Gold:
    length, cycle = solvers.longest_cycle(graphs[0])
    if cycle is None:
        return Gold(answer={"HasCycle": "NO", "Cycle": []}, value=0.0)
    return Gold(answer={"HasCycle": "YES", "Cycle": cycle}, value=float(length))


def verify(graphs: Sequence[nx.Graph], query: dict[str, Any], gold: Gold, ans: dict[str, Any]) -> Verdict:
    G = graphs[0]
    yes, names = ans["HasCycle"] == "YES", ans["Cycle"]
    longest = gold.value or 0
    if not yes:
        if names:
            return infeasible("says NO but lists a cycle")
        if longest == 0:
            return correct("the graph has no cycle")
        return wrong(f"says NO, but the graph has a cycle (the longest has {num_str(longest)} nodes)")
    if not names:
        return wrong("says YES but gives no cycle")
    res = Resolver(G)
    body, why = res.resolve(open_cycle(names, res), "Cycle")
    if why:
        return infeasible(why)
    if len(body) < 3:
        return infeasible(f"a cycle needs at least 3 distinct nodes, got {len(body)}")
    why = missing_edge(G, body, closed=True)
    if why:
        return infeasible(why)
    if longest == 0:
        return wrong("gold says the graph has no cycle, yet the stated cycle is valid: gold is wrong?", True)
    return objective(len(body), longest, "max", "the cycle's length", "the longest cycle's length")


def heuristic(graphs: Sequence[nx.Graph], query: dict[str, Any]) -> dict[str, Any]:
    G, labels = heuristic_graph(graphs)
    if not labels:
        return {"HasCycle": "NO", "Cycle": []}
    try:
        edges = nx.find_cycle(G)
    except nx.NetworkXNoCycle:
        return {"HasCycle": "NO", "Cycle": []}
    cycle = [e[0] for e in edges]
    return {"HasCycle": "YES", "Cycle": [*cycle, cycle[0]]}


def random_answer(graphs: Sequence[nx.Graph], query: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    labels = solvers.sorted_labels(graphs[0])
    n = len(labels)
    if n == 0:
        return {"HasCycle": "NO", "Cycle": []}
    if n < 3 or rng.random() < 0.3:
        return {"HasCycle": "NO", "Cycle": []}
    cyc = rng.sample(labels, rng.randint(3, n))
    return {"HasCycle": "YES", "Cycle": [*cyc, cyc[0]]}


CONFIG = TaskConfig(
    name="CYC",
    sources=mix(("nci-molecules", 0.35), (SOCIAL, 0.25), ("wikidata-film-kg", 0.2), ("us-airports", 0.2)),
    task_text=_text,
    valid=_valid,
    prefer=lambda g: not nx.is_forest(g),
    prefer_rate=0.8,
    solve=solve,
    parse=parse,
    verify=verify,
    heuristic=heuristic,
    random_answer=random_answer,
    answer_example=ANSWER_EXAMPLE,
    answer_instruction=ANSWER_INSTRUCTION,
)
TASK = build_spec(CONFIG)
