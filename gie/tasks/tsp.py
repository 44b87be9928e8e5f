"""TSP: a shortest round trip over all airports along drawn routes (flights, km). As in the paper, TSP
takes only the recolouring edit (besides none): the other edits would not change what must be read."""

from __future__ import annotations

from typing import Any

import networkx as nx

from gie import solvers
from gie.tasks.common import Nouns, TaskConfig, build_spec


def _valid(g: nx.Graph, q: dict[str, Any]) -> bool:
    return g.number_of_nodes() >= 4 and solvers.tsp(g)[0] is not None


def _text(n: Nouns, q: dict[str, Any]) -> str:
    return (f"Plan a round trip that starts and ends at the same {n.node}, visits every {n.node} exactly "
            f"once, flies only along drawn {n.edges}, and has the smallest total distance.")


CONFIG = TaskConfig(
    name="TSP",
    complexity="NPH",
    sources=(("us-airports", 1.0),),
    edits=("none", "recolor"),
    task_text=_text,
    weighted=True,
    valid=_valid,
)
TASK = build_spec(CONFIG)
