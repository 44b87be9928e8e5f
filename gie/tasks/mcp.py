"""MCP: a maximum clique."""

from __future__ import annotations

from typing import Any

import networkx as nx

from gie import solvers
from gie.tasks._sources import SOCIAL, mix
from gie.tasks.common import Nouns, TaskConfig, build_spec


def _valid(g: nx.Graph, q: dict[str, Any]) -> bool:
    return g.number_of_nodes() >= 3 and g.number_of_edges() > 0


def _text(n: Nouns, q: dict[str, Any]) -> str:
    return f"Find a largest group of {n.nodes} in which every two are directly linked (a maximum clique)."


CONFIG = TaskConfig(
    name="MCP",
    complexity="NPH",
    sources=mix(("wikidata-costar", 0.35), (SOCIAL, 0.35), ("us-airports", 0.15), ("wikidata-film-kg", 0.15)),
    edits=("none", "patch", "composition", "focus", "recolor"),
    task_text=_text,
    valid=_valid,
    prefer=lambda g: len(solvers.max_clique(g)) >= 3,
    prefer_rate=0.9,
)
TASK = build_spec(CONFIG)
