"""Seeded random walk with restart (RWR) and the per-task node ranges (our Table 7 analogue).

The walk follows GraphArena's sampler (one walk from a random start, restart probability 0.2, keep the k
most visited nodes, use the induced subgraph) but is our own code driven by a `random.Random`, so a
subgraph is a pure function of the seed. Isolated nodes are dropped, and the connected component of the
most visited node is kept; a sample outside the task's node range or edge budget is rejected and
redrawn. Molecules are never cut: a whole molecule of the right size is drawn instead.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import networkx as nx

from gie.sources import Molecule, MoleculeSource, Source

RESTART = 0.2
# GraphArena walks 1000 steps; with restart 0.2 an excursion averages 5 steps, so 500 steps already rank
# the top dozen nodes stably, at half the cost.
WALK_STEPS = 500


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


# Why these ranges: every drawing must stay legible at 1024 px (labels never overlap, an edge never
# passes through a foreign node), and every exact solver must stay fast enough for 11,000 instances
# in ten minutes on two cores. TSP draws a km label on every edge, so it is the smallest single-image
# task; GED and MCS show two graphs and ask for a full node mapping, so they use the smallest
# molecules (GraphArena's "easy" GED/MCS range is 4-9 atoms).
NODE_RANGES: dict[str, NodeRange] = {
    "SD": NodeRange(6, 12, 1.8),
    "DIAM": NodeRange(6, 12, 2.2),
    "CN": NodeRange(6, 12, 2.4),
    "TSP": NodeRange(5, 8, 2.0),
    "MCP": NodeRange(6, 12, 2.4),
    "MVC": NodeRange(6, 12, 2.2),
    "MIS": NodeRange(6, 12, 2.2),
    "CYC": NodeRange(5, 10, 1.8),
    "COL": NodeRange(6, 11, 2.2),
    "GED": NodeRange(5, 9, 1.5),
    "MCS": NodeRange(6, 10, 1.5),
}


class SampleError(RuntimeError):
    """No acceptable subgraph found within the retry budget."""


_STARTS: dict[int, tuple[str, ...]] = {}


def _starts(source: Source) -> tuple[str, ...]:
    key = id(source)
    if key not in _STARTS:
        _STARTS[key] = tuple(source.starts())
    return _STARTS[key]


def random_walk_with_restart(
    source: Source, start: str, rng: random.Random, *, steps: int = WALK_STEPS, restart: float = RESTART
) -> list[tuple[str, int]]:
    """Visited nodes with visit counts, most visited first; ties go to the node reached earlier."""
    visits: dict[str, int] = {start: 1}
    order: dict[str, int] = {start: 0}
    node = start
    uniform = rng.random
    step = source.step
    for _ in range(steps):
        nxt = None if uniform() < restart else step(node, rng)
        node = start if nxt is None else nxt
        if node in visits:
            visits[node] += 1
        else:
            visits[node] = 1
            order[node] = len(order)
    return sorted(visits.items(), key=lambda kv: (-kv[1], order[kv[0]]))


def rwr_nodes(source: Source, k: int, rng: random.Random, *, start: str | None = None) -> list[str]:
    """The k most visited nodes of one walk (fewer when the walk saw fewer), most visited first."""
    if start is None:
        starts = _starts(source)
        start = starts[rng.randrange(len(starts))]
    return [n for n, _ in random_walk_with_restart(source, start, rng)[:k]]


def _component_of_top(g_all: nx.Graph, ids: Sequence[str]) -> nx.Graph:
    """The induced subgraph on `ids` (taken from the induced graph of a longer prefix), without isolated
    nodes, restricted to the connected component of the most visited node."""
    g = g_all.subgraph(ids)
    keep = [n for n in ids if g.degree(n) > 0]
    if not keep or ids[0] not in keep:
        return nx.Graph()
    return g_all.subgraph(sorted(nx.node_connected_component(g.subgraph(keep), ids[0]))).copy()


def rwr_subgraph(source: Source, k: int, rng: random.Random, *, start: str | None = None) -> nx.Graph:
    """Induced subgraph on the k most visited nodes, isolated nodes removed, restricted to the
    connected component of the most visited node (original ids as node keys)."""
    ids = rwr_nodes(source, k, rng, start=start)
    return _component_of_top(source.induced(ids), ids)


def sample_subgraph(
    source: Source,
    node_range: NodeRange,
    rng: random.Random,
    *,
    accept: Callable[[nx.Graph], bool] | None = None,
    max_tries: int = 300,
) -> nx.Graph:
    """A connected RWR subgraph within the node range and edge budget that also passes `accept`.

    k is drawn uniformly from the range; when the top-k subgraph is rejected, the top-(k-1), ... top-lo
    subgraphs of the same walk are tried before walking again (dense hubs, e.g. airports, would otherwise
    reject most walks)."""
    for _ in range(max_tries):
        k = rng.randint(node_range.lo, node_range.hi)
        ranked = rwr_nodes(source, node_range.hi, rng)
        g_all = source.induced(ranked[:k])
        for size in range(k, node_range.lo - 1, -1):
            g = _component_of_top(g_all, ranked[:size])
            if node_range.accepts(g) and (accept is None or accept(g)):
                return g
    raise SampleError(f"{source.name}: no subgraph with {node_range.lo}-{node_range.hi} nodes accepted "
                      f"in {max_tries} walks")


def sample_molecule(
    source: MoleculeSource,
    node_range: NodeRange,
    rng: random.Random,
    *,
    accept: Callable[[Molecule], bool] | None = None,
    exclude: Sequence[str] = (),
    max_tries: int = 400,
) -> Molecule:
    """A whole molecule whose heavy-atom count lies in the node range."""
    pool = [m for m in source.with_size(node_range.lo, node_range.hi) if m.mol_id not in set(exclude)]
    if not pool:
        raise SampleError(f"{source.name}: no molecule with {node_range.lo}-{node_range.hi} atoms")
    for _ in range(max_tries):
        m = pool[rng.randrange(len(pool))]
        g = m.graph()
        if g.number_of_edges() <= node_range.max_edges(m.size) and (accept is None or accept(m)):
            return m
    raise SampleError(f"{source.name}: no molecule with {node_range.lo}-{node_range.hi} atoms accepted")
