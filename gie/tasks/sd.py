"""SD: weighted shortest distance between two airports (flights, great-circle km on the routes)."""

from __future__ import annotations

from typing import Any

import networkx as nx

from gie.tasks._sources import endpoints, far_pair
from gie.tasks.common import Nouns, TaskConfig, build_spec


def _valid(g: nx.Graph, q: dict[str, Any]) -> bool:
    s, t = q.get("source"), q.get("target")
    return s in g and t in g and s != t and not g.has_edge(s, t) and nx.has_path(g, s, t)


def _text(n: Nouns, q: dict[str, Any]) -> str:
    return (f"A traveller wants to fly from {q['source']} to {q['target']} using only the drawn {n.edges}. "
            f"Find the shortest total flight distance between them and one route that achieves it.")


CONFIG = TaskConfig(
    name="SD",
    complexity="P",
    sources=(("us-airports", 1.0),),
    edits=("none", "patch", "composition", "focus", "recolor"),
    task_text=_text,
    weighted=True,
    query=far_pair,
    valid=_valid,
    recolor_modes=("avoid",),
    keep=endpoints,
)
TASK = build_spec(CONFIG)
