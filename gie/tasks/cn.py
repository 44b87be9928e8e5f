"""CN: the common neighbours of two given nodes."""

from __future__ import annotations

from typing import Any

import networkx as nx

from gie.tasks._sources import SOCIAL, endpoints, mix, neighbour_pair
from gie.tasks.common import Nouns, TaskConfig, build_spec


def _valid(g: nx.Graph, q: dict[str, Any]) -> bool:
    s, t = q.get("source"), q.get("target")
    return s in g and t in g and s != t


def _text(n: Nouns, q: dict[str, Any]) -> str:
    return (f"List every {n.node} that is directly linked to both {q['source']} and {q['target']} "
            f"(their common neighbours in the {n.network}).")


CONFIG = TaskConfig(
    name="CN",
    complexity="P",
    sources=mix(("wikidata-costar", 0.35), ("wikidata-film-kg", 0.25), (SOCIAL, 0.4)),
    edits=("none", "patch", "composition", "focus", "recolor"),
    task_text=_text,
    query=neighbour_pair,
    valid=_valid,
    recolor_modes=("avoid",),
    focus_min=3,
    keep=endpoints,
)
TASK = build_spec(CONFIG)
