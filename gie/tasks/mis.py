"""MIS: a maximum independent set."""

from __future__ import annotations

import random
from collections.abc import Hashable, Sequence
from typing import Any

import networkx as nx

from evalcore.schema import Gold, ParseError, Verdict
from gie.solvers import bitmasks, bits, max_clique_mask, sorted_labels
from gie.tasks._sources import SOCIAL, mix
from gie.tasks.answer_parsing import Bare, parse_node_set
from gie.tasks.config import TaskConfig
from gie.tasks.heuristic_graph import heuristic_graph
from gie.tasks.scenarios import Nouns
from gie.tasks.spec import build_spec
from gie.tasks.verdicts import Resolver, infeasible, objective, stated_value


def _valid(g: nx.Graph, q: dict[str, Any]) -> bool:
    return g.number_of_nodes() >= 3 and g.number_of_edges() > 0


def _text(n: Nouns, q: dict[str, Any]) -> str:
    return (f"Choose as many {n.nodes} as possible such that no two chosen {n.nodes} are directly linked "
            f"(a maximum independent set).")


ANSWER_EXAMPLE: dict[str, Any] = {"IndependentSet": ["AAA", "BBB", "CCC"]}
ANSWER_INSTRUCTION = (
    "IndependentSet lists the names of the nodes of a largest set with no edge between any two of them."
)


# ------------------------------------------------------------------------------------------------ exact solver


def max_independent_set(G: nx.Graph) -> list[Hashable]:
    """A maximum clique of the complement graph."""
    labels, adj = bitmasks(G)
    full = (1 << len(labels)) - 1
    comp = [full & ~a & ~(1 << i) for i, a in enumerate(adj)]
    return [labels[i] for i in bits(max_clique_mask(comp, full))]


# ------------------------------------------------------------------------------------------------ answer


def parse(obj: dict[str, Any]) -> dict[str, Any] | ParseError:
    return parse_node_set(obj, "IndependentSet", ('IndependentSet', 'MaximumIndependentSet', 'MaxIndependentSet'))


def solve(graphs: Sequence[nx.Graph], query: dict[str, Any]) -> Gold:
    found = max_independent_set(graphs[0])
    return Gold(answer={"IndependentSet": found}, value=float(len(found)))


def verify(graphs: Sequence[nx.Graph], query: dict[str, Any], gold: Gold, ans: dict[str, Any]) -> Verdict:
    G = graphs[0]
    nodes, why = Resolver(G).resolve(ans["IndependentSet"], "IndependentSet")
    if why:
        return infeasible(why)
    for i, a in enumerate(nodes):
        for b in nodes[i + 1:]:
            if G.has_edge(a, b):
                return infeasible(f"not independent: {str(a)!r} and {str(b)!r} are adjacent")
    v = objective(len(nodes), gold.value, "max", "the set's size", "the maximum independent set's size")
    return stated_value(v, ans.get("Size"), len(nodes), "Size", "the set's size")


def heuristic(graphs: Sequence[nx.Graph], query: dict[str, Any]) -> dict[str, Any]:
    G, labels = heuristic_graph(graphs)
    if not labels:
        return {"IndependentSet": []}
    H = G.copy()
    chosen = []
    while H.number_of_nodes():
        v = min(H.nodes, key=lambda x: (H.degree(x), str(x)))
        chosen.append(v)
        H.remove_nodes_from([v, *H[v]])
    return {"IndependentSet": sorted(chosen, key=str)}


def random_answer(graphs: Sequence[nx.Graph], query: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    labels = sorted_labels(graphs[0])
    return {"IndependentSet": sorted(rng.sample(labels, rng.randint(0, len(labels))), key=str)}


CONFIG = TaskConfig(
    name="MIS",
    sources=mix((SOCIAL, 0.35), ("wikidata-costar", 0.25), ("wikidata-film-kg", 0.2), ("us-airports", 0.2)),
    task_text=_text,
    valid=_valid,
    solve=solve,
    parse=parse,
    verify=verify,
    heuristic=heuristic,
    random_answer=random_answer,
    answer_example=ANSWER_EXAMPLE,
    answer_instruction=ANSWER_INSTRUCTION,
    min_answer=2,
    bare=Bare(names="IndependentSet"),
)
TASK = build_spec(CONFIG)
