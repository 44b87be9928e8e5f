"""TSP as in the paper: the sampled airports form a complete graph, drawn with the pairwise great-circle
distances in a table in the image; the question asks for the shortest round trip through all of them.
TSP takes only the recolouring edit (besides none): patch, composition and focus would let a model read
the answer off the distance table without looking at the graph (the paper's appendix A.2)."""

from __future__ import annotations

from typing import Any

import networkx as nx

from gie.tasks.common import Nouns, TaskConfig, build_spec

TABLE_SENTENCE = (
    "Every two airports are joined by a thin line (any airport can be flown to from any other), and the "
    "table under the drawing gives the great-circle distance in kilometres between every two airports."
)


def _valid(g: nx.Graph, q: dict[str, Any]) -> bool:
    n = g.number_of_nodes()
    return n >= 3 and g.number_of_edges() == n * (n - 1) // 2


def _text(n: Nouns, q: dict[str, Any]) -> str:
    return (f"Plan a round trip that starts and ends at the same {n.node}, visits every {n.node} exactly "
            f"once, and has the smallest total distance.")


CONFIG = TaskConfig(
    name="TSP",
    complexity="NPH",
    sources=(("us-airports", 1.0),),
    edits=("none", "recolor"),
    task_text=_text,
    weighted=True,
    valid=_valid,
    complete=True,
    weight_sentence=TABLE_SENTENCE,
)
TASK = build_spec(CONFIG)
