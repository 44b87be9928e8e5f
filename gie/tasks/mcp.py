"""MCP: a maximum clique."""

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
    return f"Find a largest group of {n.nodes} in which every two are directly linked (a maximum clique)."


ANSWER_EXAMPLE: dict[str, Any] = {"Clique": ["AAA", "BBB", "CCC"]}
ANSWER_INSTRUCTION = (
    "Clique lists the names of the nodes of a largest set of pairwise adjacent nodes."
)


# ------------------------------------------------------------------------------------------------ exact solver


def max_clique(G: nx.Graph) -> list[Hashable]:
    labels, adj = bitmasks(G)
    return [labels[i] for i in bits(max_clique_mask(adj, (1 << len(labels)) - 1))]


# ------------------------------------------------------------------------------------------------ answer


def parse(obj: dict[str, Any]) -> dict[str, Any] | ParseError:
    return parse_node_set(obj, "Clique", ('Clique', 'MaximumClique', 'MaxClique'))


def solve(graphs: Sequence[nx.Graph], query: dict[str, Any]) -> Gold:
    found = max_clique(graphs[0])
    return Gold(answer={"Clique": found}, value=float(len(found)))


def verify(graphs: Sequence[nx.Graph], query: dict[str, Any], gold: Gold, ans: dict[str, Any]) -> Verdict:
    G = graphs[0]
    nodes, why = Resolver(G).resolve(ans["Clique"], "Clique")
    if why:
        return infeasible(why)
    for i, a in enumerate(nodes):
        for b in nodes[i + 1:]:
            if not G.has_edge(a, b):
                return infeasible(f"not a clique: no edge between {str(a)!r} and {str(b)!r}")
    v = objective(len(nodes), gold.value, "max", "the clique's size", "the maximum clique's size")
    return stated_value(v, ans.get("Size"), len(nodes), "Size", "the clique's size")


def heuristic(graphs: Sequence[nx.Graph], query: dict[str, Any]) -> dict[str, Any]:
    G, labels = heuristic_graph(graphs)
    if not labels:
        return {"Clique": []}
    clique = [min(labels, key=lambda v: (-G.degree(v), str(v)))]
    cand = set(G[clique[0]])
    while cand:
        pick = min(cand, key=lambda v: (-G.degree(v), str(v)))
        clique.append(pick)
        cand &= set(G[pick])
    return {"Clique": sorted(clique, key=str)}


def random_answer(graphs: Sequence[nx.Graph], query: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    labels = sorted_labels(graphs[0])
    return {"Clique": sorted(rng.sample(labels, rng.randint(0, len(labels))), key=str)}


CONFIG = TaskConfig(
    name="MCP",
    sources=mix(("wikidata-costar", 0.35), (SOCIAL, 0.35), ("us-airports", 0.15), ("wikidata-film-kg", 0.15)),
    task_text=_text,
    valid=_valid,
    prefer=lambda g: len(max_clique(g)) >= 3,
    prefer_rate=0.9,
    solve=solve,
    parse=parse,
    verify=verify,
    heuristic=heuristic,
    random_answer=random_answer,
    answer_example=ANSWER_EXAMPLE,
    answer_instruction=ANSWER_INSTRUCTION,
    bare=Bare(names="Clique"),
)
TASK = build_spec(CONFIG)
