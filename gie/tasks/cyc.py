"""CYC: does a cycle exist, and a longest simple cycle if so (molecules bring their rings)."""

from __future__ import annotations

from typing import Any

import networkx as nx

from gie.tasks._sources import SOCIAL, mix
from gie.tasks.common import Nouns, TaskConfig, build_spec


def _valid(g: nx.Graph, q: dict[str, Any]) -> bool:
    return g.number_of_nodes() >= 3 and g.number_of_edges() > 0


def _text(n: Nouns, q: dict[str, Any]) -> str:
    return (f"Decide whether the {n.network} contains a cycle: a closed route through at least three "
            f"distinct {n.nodes} that uses each {n.edge} and each {n.node} at most once. If it does, give "
            f"a longest such cycle.")


CONFIG = TaskConfig(
    name="CYC",
    complexity="NPH",
    sources=mix(("nci-molecules", 0.35), (SOCIAL, 0.25), ("wikidata-film-kg", 0.2), ("us-airports", 0.2)),
    edits=("none", "patch", "composition", "focus", "recolor"),
    task_text=_text,
    valid=_valid,
    prefer=lambda g: not nx.is_forest(g),
    prefer_rate=0.8,
)
TASK = build_spec(CONFIG)
