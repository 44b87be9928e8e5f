"""MVC: a minimum vertex cover."""

from __future__ import annotations

from typing import Any

import networkx as nx

from gie.tasks._sources import SOCIAL, mix
from gie.tasks.common import Nouns, TaskConfig, build_spec


def _valid(g: nx.Graph, q: dict[str, Any]) -> bool:
    return g.number_of_nodes() >= 3 and g.number_of_edges() > 0


def _text(n: Nouns, q: dict[str, Any]) -> str:
    return (f"Choose as few {n.nodes} as possible so that every drawn {n.edge} has at least one of its two "
            f"{n.nodes} chosen (a minimum vertex cover).")


CONFIG = TaskConfig(
    name="MVC",
    complexity="NPH",
    sources=mix((SOCIAL, 0.35), ("wikidata-costar", 0.25), ("wikidata-film-kg", 0.2), ("us-airports", 0.2)),
    edits=("none", "patch", "composition", "focus", "recolor"),
    task_text=_text,
    valid=_valid,
)
TASK = build_spec(CONFIG)
