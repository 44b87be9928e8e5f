"""DIAM: diameter in hops of a connected graph, with one shortest path realising it."""

from __future__ import annotations

import random
from collections.abc import Hashable, Sequence
from typing import Any

import networkx as nx

from evalcore.coerce import get_key
from evalcore.schema import Gold, ParseError, Verdict
from gie.solvers import lex_shortest_path, sorted_labels
from gie.tasks._sources import SOCIAL, mix
from gie.tasks.answer_parsing import (
    HOPS,
    PATH_KEYS,
    Bare,
    answer_number,
    bad_value,
    missing_key,
    optional_names,
)
from gie.tasks.config import TaskConfig
from gie.tasks.heuristic_graph import farthest, heuristic_graph, hop_path
from gie.tasks.scenarios import Nouns
from gie.tasks.spec import build_spec
from gie.tasks.verdicts import Resolver, Witness, close, missing_edge, num_str, value_verdict, with_witness


def _valid(g: nx.Graph, q: dict[str, Any]) -> bool:
    # A complete graph has diameter 1: too easy to be a question.
    n = g.number_of_nodes()
    return n >= 3 and nx.is_connected(g) and g.number_of_edges() < n * (n - 1) // 2


def _text(n: Nouns, q: dict[str, Any]) -> str:
    return (f"Find the diameter of the {n.network}: over all pairs of {n.nodes}, the largest number of "
            f"{n.edges} on a shortest connection between the two. Give it with one shortest connection "
            f"that long.")


ANSWER_EXAMPLE: dict[str, Any] = {"Diameter": 3, "Path": ["AAA", "BBB", "CCC", "DDD"]}
ANSWER_INSTRUCTION = (
    "Diameter is the largest number of edges on a shortest path between any two nodes; Path lists "
    "the node names of one shortest path that long, from one end to the other."
)


# ------------------------------------------------------------------------------------------------ exact solver


def diameter(G: nx.Graph) -> tuple[int, list[Hashable]]:
    """Unweighted diameter (hops) of a connected graph and a shortest path realising it.

    The realising pair is the first farthest pair in sorted-label order, its path the lexicographically
    smallest shortest one.
    """
    if G.number_of_nodes() == 0:
        raise ValueError("diameter of an empty graph is undefined")
    if not nx.is_connected(G):
        raise ValueError("diameter is only defined for connected graphs")
    labels = sorted_labels(G)
    best, pair = -1, (labels[0], labels[0])
    for u in labels:
        hops = nx.single_source_shortest_path_length(G, u)
        for v in labels:
            if str(v) > str(u) and hops[v] > best:
                best, pair = hops[v], (u, v)
    if best < 0:  # single node
        return 0, [labels[0]]
    u, v = pair
    return best, lex_shortest_path(G, u, v, nx.single_source_shortest_path_length(G, v), weighted=False)


# ------------------------------------------------------------------------------------------------ answer


def parse(obj: dict[str, Any]) -> dict[str, Any] | ParseError:
    has_d, raw_d = get_key(obj, "Diameter", "Length", "DiameterLength")
    if not has_d:
        return missing_key("Diameter")
    d = answer_number(raw_d, HOPS)
    if d is None:
        return bad_value("Diameter", raw_d)
    path = optional_names(obj, PATH_KEYS, "Path")
    return path if isinstance(path, ParseError) else {"Diameter": d, "Path": path}


def solve(graphs: Sequence[nx.Graph], query: dict[str, Any]) -> Gold:
    hops, path = diameter(graphs[0])
    return Gold(answer={"Diameter": hops, "Path": path}, value=float(hops))


def _diam_witness(G: nx.Graph, d: float, names: list[str]) -> Witness:
    res = Resolver(G)
    path, why = res.resolve(names, "Path")
    if why:
        return Witness(why)
    why = missing_edge(G, path, closed=False)
    if why:
        return Witness(why)
    hops = len(path) - 1
    apart = nx.shortest_path_length(G, path[0], path[-1])
    if apart != hops:
        # GraphArena's feasibility test for a diameter path: it must be a shortest path between its ends.
        return Witness(f"the path from {names[0]!r} to {names[-1]!r} has {hops} edges but they are only "
                       f"{apart} apart, so it is not a shortest path")
    if not close(d, hops):
        return Witness(consistent=False, note=f"states Diameter {num_str(d)} but the path has {hops} edges")
    return Witness(consistent=True)


def verify(graphs: Sequence[nx.Graph], query: dict[str, Any], gold: Gold, ans: dict[str, Any]) -> Verdict:
    G = graphs[0]
    v = value_verdict(ans["Diameter"], gold.value, "Diameter", "the diameter")
    return with_witness(v, ans["Path"], lambda: _diam_witness(G, ans["Diameter"], ans["Path"]))


def heuristic(graphs: Sequence[nx.Graph], query: dict[str, Any]) -> dict[str, Any]:
    G, labels = heuristic_graph(graphs)
    if not labels:
        return {"Diameter": 0, "Path": []}
    # Double sweep: exact on trees, a lower bound in general.
    u = farthest(G, labels[0])
    v = farthest(G, u)
    path = hop_path(G, u, v) or [u]
    return {"Diameter": len(path) - 1, "Path": path}


def random_answer(graphs: Sequence[nx.Graph], query: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    labels = sorted_labels(graphs[0])
    if not labels:
        return {"Diameter": 0, "Path": []}
    path = rng.sample(labels, rng.randint(1, len(labels)))
    return {"Diameter": len(path) - 1, "Path": path}


CONFIG = TaskConfig(
    name="DIAM",
    sources=mix(("wikidata-film-kg", 0.25), ("wikidata-costar", 0.25), ("us-airports", 0.2), (SOCIAL, 0.3)),
    task_text=_text,
    valid=_valid,
    solve=solve,
    parse=parse,
    verify=verify,
    heuristic=heuristic,
    random_answer=random_answer,
    answer_example=ANSWER_EXAMPLE,
    answer_instruction=ANSWER_INSTRUCTION,
    bare=Bare(number="Diameter", units=HOPS),
)
TASK = build_spec(CONFIG)
