"""MVC: a minimum vertex cover."""

from __future__ import annotations

import random
from collections.abc import Hashable, Sequence
from typing import Any

import networkx as nx

from evalcore.schema import Gold, ParseError, Verdict
from gie.solvers import sorted_labels
from gie.tasks._sources import SOCIAL, mix
from gie.tasks.answer_parsing import Bare, parse_node_set
from gie.tasks.config import TaskConfig
from gie.tasks.heuristic_graph import heuristic_graph
from gie.tasks.mis import max_independent_set
from gie.tasks.scenarios import Nouns
from gie.tasks.spec import build_spec
from gie.tasks.verdicts import Resolver, infeasible, objective, sorted_edges, stated_value


def _valid(g: nx.Graph, q: dict[str, Any]) -> bool:
    return g.number_of_nodes() >= 3 and g.number_of_edges() > 0


def _text(n: Nouns, q: dict[str, Any]) -> str:
    return (f"Choose as few {n.nodes} as possible so that every drawn {n.edge} has at least one of its two "
            f"{n.nodes} chosen (a minimum vertex cover).")


ANSWER_EXAMPLE: dict[str, Any] = {"Cover": ["AAA", "BBB", "CCC"]}
ANSWER_INSTRUCTION = (
    "Cover lists the names of the nodes of a smallest set that touches every edge."
)


# ------------------------------------------------------------------------------------------------ exact solver


def min_vertex_cover(G: nx.Graph) -> list[Hashable]:
    """The complement of a maximum independent set (Gallai: tau + alpha = n)."""
    keep = set(max_independent_set(G))
    return [v for v in sorted_labels(G) if v not in keep]


# ------------------------------------------------------------------------------------------------ answer


def parse(obj: dict[str, Any]) -> dict[str, Any] | ParseError:
    return parse_node_set(obj, "Cover", ('Cover', 'VertexCover', 'MinimumVertexCover', 'MinVertexCover'))


def solve(graphs: Sequence[nx.Graph], query: dict[str, Any]) -> Gold:
    found = min_vertex_cover(graphs[0])
    return Gold(answer={"Cover": found}, value=float(len(found)))


def verify(graphs: Sequence[nx.Graph], query: dict[str, Any], gold: Gold, ans: dict[str, Any]) -> Verdict:
    G = graphs[0]
    nodes, why = Resolver(G).resolve(ans["Cover"], "Cover")
    if why:
        return infeasible(why)
    chosen = set(nodes)
    for a, b in sorted_edges(G):
        if a not in chosen and b not in chosen:
            return infeasible(f"not a cover: edge {str(a)!r}-{str(b)!r} has neither end in it")
    v = objective(len(nodes), gold.value, "min", "the cover's size", "the minimum cover's size")
    return stated_value(v, ans.get("Size"), len(nodes), "Size", "the cover's size")


def heuristic(graphs: Sequence[nx.Graph], query: dict[str, Any]) -> dict[str, Any]:
    G, labels = heuristic_graph(graphs)
    if not labels:
        return {"Cover": []}
    matched: set[Hashable] = set()
    for u, v in G.edges:  # sorted by canonical_copy
        if u not in matched and v not in matched:
            matched |= {u, v}
    return {"Cover": sorted(matched, key=str)}


def random_answer(graphs: Sequence[nx.Graph], query: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    labels = sorted_labels(graphs[0])
    return {"Cover": sorted(rng.sample(labels, rng.randint(0, len(labels))), key=str)}


CONFIG = TaskConfig(
    name="MVC",
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
    bare=Bare(names="Cover"),
)
TASK = build_spec(CONFIG)
