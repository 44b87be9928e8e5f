"""The two GraphVerse difficulty levels and the node range a level allows per rendered graph."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import networkx as nx

Level = Literal["easy", "hard"]
LEVELS: tuple[Level, ...] = ("easy", "hard")
# Instance ids and `Instance.level` number the levels: <task>-L01-* is easy, <task>-L02-* is hard.
LEVEL_NUMBER: dict[Level, int] = {"easy": 1, "hard": 2}


@dataclass(frozen=True)
class NodeRange:
    """Nodes per rendered graph, and an edge budget that keeps drawings legible."""

    lo: int
    hi: int
    # at most this many edges per node (weighted drawings carry a label per edge, so they get less)
    max_edges_per_node: float

    def max_edges(self, n: int) -> int:
        return int(self.max_edges_per_node * n)

    def accepts(self, g: nx.Graph) -> bool:
        n = g.number_of_nodes()
        return self.lo <= n <= self.hi and g.number_of_edges() <= self.max_edges(n)
