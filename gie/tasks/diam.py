"""DIAM: diameter in hops of a connected graph, with one shortest path realising it."""

from __future__ import annotations

from typing import Any

import networkx as nx

from gie.tasks._sources import SOCIAL, mix
from gie.tasks.common import Nouns, TaskConfig, build_spec


def _valid(g: nx.Graph, q: dict[str, Any]) -> bool:
    # A complete graph has diameter 1: too easy to be a question.
    n = g.number_of_nodes()
    return n >= 3 and nx.is_connected(g) and g.number_of_edges() < n * (n - 1) // 2


def _text(n: Nouns, q: dict[str, Any]) -> str:
    return (f"Find the diameter of the {n.network}: over all pairs of {n.nodes}, the largest number of "
            f"{n.edges} on a shortest connection between the two. Give it with one shortest connection "
            f"that long.")


CONFIG = TaskConfig(
    name="DIAM",
    complexity="P",
    sources=mix(("wikidata-film-kg", 0.25), ("wikidata-costar", 0.25), ("us-airports", 0.2), (SOCIAL, 0.3)),
    edits=("none", "patch", "composition", "focus", "recolor"),
    task_text=_text,
    valid=_valid,
)
TASK = build_spec(CONFIG)
