"""Seeded random walk with restart (RWR) and whole-molecule draws within a node range (the per-task ranges,
our Table 7 analogue, are in `gie.catalogue`).

The walk follows GraphArena's sampler (one walk from a random start, restart probability 0.2, keep the k
most visited nodes, use the induced subgraph) but is our own code driven by a `random.Random`, so a
subgraph is a pure function of the seed. Isolated nodes are dropped, and the connected component of the
most visited node is kept; a sample outside the task's node range or edge budget is rejected and
redrawn. Molecules are never cut: a whole molecule of the right size is drawn instead.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence

import networkx as nx

from gie.levels import NodeRange
from gie.sources.base import Source
from gie.sources.molecules import Molecule, MoleculeSource

RESTART = 0.2
# GraphArena's walk length: hard levels keep up to 50 nodes, which a shorter walk often never reaches.
WALK_STEPS = 1000


# Largest subgraph a walk source can give within the edge budgets (measured as for SD's ranges in
# gie.catalogue): the flight
# network serves the hard levels of other tasks only through TSP, whose complete graph has no budget.
SOURCE_MAX_NODES: dict[str, int] = {"us-airports": 14}


def draw_size(node_range: NodeRange, rng: random.Random) -> int:
    """GraphArena's size draw: k = int(Exp(mean = (hi - lo) / 2)), redrawn until lo <= k <= hi, so sizes
    skew towards the small end of each level."""
    if node_range.hi <= node_range.lo:
        return node_range.lo  # a one-size range (SD's hard focus drawings: 14 airports)
    mean = (node_range.hi - node_range.lo) / 2
    while True:
        k = int(rng.expovariate(1 / mean))
        if node_range.lo <= k <= node_range.hi:
            return k


class SampleError(RuntimeError):
    """No acceptable subgraph found within the retry budget."""


_STARTS: dict[tuple[int, int], tuple[str, ...]] = {}


def _starts(source: Source, region: Region = None) -> tuple[str, ...]:
    key = (id(source), id(region))
    if key not in _STARTS:
        _STARTS[key] = tuple(n for n in source.starts() if region is None or n in region)
    return _STARTS[key]


Region = frozenset[str] | None


def random_walk_with_restart(
    source: Source,
    start: str,
    rng: random.Random,
    *,
    steps: int = WALK_STEPS,
    restart: float = RESTART,
    region: Region = None,
) -> list[tuple[str, int]]:
    """Visited nodes with visit counts, most visited first; ties go to the node reached earlier. With a
    `region`, a step that would leave it restarts the walk (the walk runs on the region's induced graph)."""
    # The path, counted at the end (Counter counts in C and keeps first-visit order).
    path = [start]
    visit = path.append
    node = start
    uniform = rng.random
    table = source.walk_table()
    if table is None:
        step = source.step
        for _ in range(steps):
            nxt = None if uniform() < restart else step(node, rng)
            if nxt is not None and region is not None and nxt not in region:
                nxt = None
            node = start if nxt is None else nxt
            visit(node)
    else:
        # `step` inlined (a million steps per thousand instances): the same draws from the same rng.
        known, fill = table
        get = known.get
        for _ in range(steps):
            if uniform() < restart:
                node = start
            else:
                nb = get(node)
                if nb is None:
                    nb = fill(node)
                if nb:
                    node = nb[int(uniform() * len(nb))]
                    if region is not None and node not in region:
                        node = start
                else:
                    node = start
            visit(node)
    # Counter keeps first-visit order and the sort is stable: ties stay in the order nodes were reached.
    return sorted(Counter(path).items(), key=lambda kv: -kv[1])


def rwr_nodes(
    source: Source, k: int, rng: random.Random, *, start: str | None = None, region: Region = None
) -> list[str]:
    """The k most visited nodes of one walk (fewer when the walk saw fewer), most visited first."""
    if start is None:
        starts = _starts(source, region)
        if not starts:
            raise SampleError(f"{source.name}: no start node in the split's region")
        start = starts[rng.randrange(len(starts))]
    return [n for n, _ in random_walk_with_restart(source, start, rng, region=region)[:k]]


def _component_ids(adj: Mapping[str, Iterable[str]], ids: Sequence[str]) -> list[str]:
    """The connected component of ids[0] in the subgraph induced on `ids` (sorted), or [] when ids[0] is
    isolated there; `adj` is the adjacency of a graph induced on a superset of `ids` (a graph's `_adj`,
    read-only, or `Source.induced_adjacency`). Plain dict/set work: this runs for every candidate size of
    every walk (building subgraph views here dominated sampling time)."""
    keep = set(ids)
    seen = {ids[0]}
    stack = [ids[0]]
    while stack:
        u = stack.pop()
        for v in adj[u]:
            if v in keep and v not in seen:
                seen.add(v)
                stack.append(v)
    return sorted(seen) if len(seen) > 1 else []


def _edge_count(adj: Mapping[str, Iterable[str]], nodes: Sequence[str]) -> int:
    keep = set(nodes)
    return sum(1 for u in nodes for v in adj[u] if v in keep) // 2


def _component_of_top(g_all: nx.Graph, ids: Sequence[str]) -> nx.Graph:
    """The induced subgraph on `ids` (taken from the induced graph of a longer prefix), without isolated
    nodes, restricted to the connected component of the most visited node."""
    comp = _component_ids(g_all._adj, ids)
    return g_all.subgraph(comp).copy() if comp else nx.Graph()


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
    region: Region = None,
) -> nx.Graph:
    """A connected RWR subgraph within the node range and edge budget that also passes `accept`.

    k follows GraphArena's skewed draw (`draw_size`); when the top-k subgraph is rejected, the top-(k-1), ... top-lo
    subgraphs of the same walk are tried before walking again (dense hubs, e.g. airports, would otherwise
    reject most walks). With a `region`, walks stay inside it (`gie.splits`)."""
    for _ in range(max_tries):
        k = draw_size(node_range, rng)
        ranked = rwr_nodes(source, node_range.hi, rng, region=region)
        # Most walks fail the size and edge checks: they run on the bare adjacency, and the graph (with
        # names, codes, weights) is built only for a candidate that passes them.
        adj = source.induced_adjacency(ranked[:k])
        g_all: nx.Graph | None = None
        for size in range(k, node_range.lo - 1, -1):
            comp = _component_ids(adj, ranked[:size])
            if not node_range.lo <= len(comp) <= node_range.hi:
                continue
            if _edge_count(adj, comp) > node_range.max_edges(len(comp)):
                continue
            if g_all is None:
                g_all = source.induced(ranked[:k])
            g = g_all.subgraph(comp).copy()
            if accept is None or accept(g):
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
    skew: bool = True,
) -> Molecule:
    """A whole molecule whose heavy-atom count lies in the node range: the size is drawn as for walks
    (`draw_size`), then a molecule of that size; with skew=False every size of the range is equally
    likely (the partner of a GED/MCS pair, whose range is the first molecule's size +-1)."""
    excluded = set(exclude)
    by_size: dict[int, list[Molecule]] = {}
    for m in source.with_size(node_range.lo, node_range.hi):
        if m.mol_id not in excluded:
            by_size.setdefault(m.size, []).append(m)
    if not by_size:
        raise SampleError(f"{source.name}: no molecule with {node_range.lo}-{node_range.hi} atoms")
    for _ in range(max_tries):
        size = draw_size(node_range, rng) if skew else rng.randint(node_range.lo, node_range.hi)
        pool = by_size.get(size)
        if not pool:
            continue
        m = pool[rng.randrange(len(pool))]
        g = m.graph()
        if g.number_of_edges() <= node_range.max_edges(m.size) and (accept is None or accept(m)):
            return m
    raise SampleError(f"{source.name}: no molecule with {node_range.lo}-{node_range.hi} atoms accepted")
