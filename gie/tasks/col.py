"""COL: chromatic number with an optimal colouring. As in the paper, no recolouring edit: a colouring
question over pre-coloured nodes is not a natural formulation."""

from __future__ import annotations

from typing import Any

import networkx as nx

from gie.tasks._sources import SOCIAL, mix
from gie.tasks.common import Nouns, TaskConfig, build_spec


def _valid(g: nx.Graph, q: dict[str, Any]) -> bool:
    return g.number_of_nodes() >= 3 and g.number_of_edges() > 0


def _text(n: Nouns, q: dict[str, Any]) -> str:
    return (f"Give every {n.node} a colour number (1, 2, 3, ...) so that any two directly linked {n.nodes} "
            f"get different numbers, using as few numbers as possible. (These numbers have nothing to do "
            f"with the fill colours in the picture.)")


CONFIG = TaskConfig(
    name="COL",
    complexity="NPH",
    sources=mix((SOCIAL, 0.35), ("nci-molecules", 0.25), ("us-airports", 0.2), ("wikidata-costar", 0.2)),
    edits=("none", "patch", "composition", "focus"),
    task_text=_text,
    valid=_valid,
)
TASK = build_spec(CONFIG)
