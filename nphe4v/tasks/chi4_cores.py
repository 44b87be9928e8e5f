"""Small 4-chromatic cores that GCP-D plants in its NO seeds, and the local certificates it keeps out of them.

Why (issue 31): at 10-15 vertices a 4-chromatic graph holds a 4-critical subgraph, and the commonest ones, K4 and
the odd wheels, are *local* certificates: some vertex's neighbourhood holds an odd cycle (a triangle for K4, the
rim for an odd wheel), which no 3-colourable graph has (a 3-colouring gives a neighbourhood two colours). Local
statistics a solver never constructs (triangles at a vertex, diamonds, common neighbours) then find them. The
cores here that are `wheel_free` force 4 colours only through longer odd cycles: the Moser spindle, Hajós joins
of K4s, odd wheels and spindles (the join of two 4-critical graphs is 4-critical, and removing the joined edge
breaks each part's wheel), and the Grötzsch graph (triangle-free)."""

from __future__ import annotations

import itertools
import random
from collections.abc import Sequence

from evalcore.graph_solvers import Edge, adjacency

Core = list[tuple[int, int]]  # edges on vertices 0..size-1


def wheel(rim: int) -> Core:
    return [(0, i) for i in range(1, rim + 1)] + [(i, i % rim + 1) for i in range(1, rim + 1)]


def core_size(core: Core) -> int:
    return 1 + max(max(e) for e in core)


K4: Core = list(itertools.combinations(range(4), 2))
MOSER_SPINDLE: Core = [(0, 1), (0, 2), (1, 2), (1, 3), (2, 3), (0, 4), (0, 5), (4, 5), (4, 6), (5, 6), (3, 6)]
# The Mycielskian of C5: 11 vertices, 20 edges, no triangle, chromatic number 4.
GROTZSCH: Core = (
    [(i, (i + 1) % 5) for i in range(5)] + [(5 + i, (i + 1) % 5) for i in range(5)]
    + [(5 + i, (i - 1) % 5) for i in range(5)] + [(10, 5 + i) for i in range(5)]
)
# 4-critical graphs the Hajós joins are built from.
JOIN_PARTS: list[Core] = [K4, wheel(5), MOSER_SPINDLE, wheel(7)]


def hajos(g1: Core, e1: tuple[int, int], g2: Core, e2: tuple[int, int]) -> Core:
    """The Hajós join: drop x1y1 from g1 and x2y2 from g2, merge x1 with x2, add y1y2. Of two 4-critical graphs
    it is 4-critical."""
    (x1, y1), (x2, y2) = e1, e2
    n1 = core_size(g1)
    rest = sorted({v for e in g2 for v in e} - {x2})
    rel = {x2: x1, **{v: n1 + i for i, v in enumerate(rest)}}
    drop1, drop2 = tuple(sorted(e1)), tuple(sorted(e2))
    edges = {tuple(sorted(e)) for e in g1 if tuple(sorted(e)) != drop1}
    edges |= {tuple(sorted((rel[u], rel[v]))) for u, v in g2 if tuple(sorted((u, v))) != drop2}
    edges.add(tuple(sorted((y1, rel[y2]))))
    return sorted(edges)  # type: ignore[arg-type]


def random_core(n: int, m: int, rng: random.Random, wheels: bool) -> Core:
    """A K4-free 4-critical graph with at most n vertices and m edges, drawn uniformly from the kinds that fit: the
    Moser spindle, a Hajós join of two JOIN_PARTS (random edges, random ends), the Grötzsch graph, and with
    `wheels` the 5- and 7-wheels. Without `wheels` every kind is `wheel_free`."""
    kinds: list[Core | tuple[Core, Core]] = [MOSER_SPINDLE]
    if wheels:
        kinds += [c for c in (wheel(5), wheel(7)) if core_size(c) <= n and len(c) <= m]
    kinds += [(g1, g2) for g1 in JOIN_PARTS for g2 in JOIN_PARTS
              if core_size(g1) + core_size(g2) - 1 <= n and len(g1) + len(g2) - 1 <= m]
    if core_size(GROTZSCH) <= n and len(GROTZSCH) <= m:
        kinds.append(GROTZSCH)
    pick = rng.choice(kinds)
    if not isinstance(pick, tuple):
        return pick
    g1, g2 = pick
    e1, e2 = rng.choice(g1), rng.choice(g2)
    if rng.random() < 0.5:
        e1 = (e1[1], e1[0])
    if rng.random() < 0.5:
        e2 = (e2[1], e2[0])
    return hajos(g1, e1, g2, e2)


def k4_free(num_vertices: int, edges: Sequence[Edge]) -> bool:
    """No K4: no edge whose ends' common neighbours include an edge."""
    adj = adjacency(num_vertices, edges)
    for u, v in edges:
        common = left = adj[u - 1] & adj[v - 1]
        while left:
            w = (left & -left).bit_length() - 1
            left &= left - 1
            if adj[w] & common:
                return False
    return True


def wheel_free(num_vertices: int, edges: Sequence[Edge]) -> bool:
    """No vertex's neighbourhood holds an odd cycle (so no K4 and no odd wheel, with or without chords): every
    neighbourhood 2-coloured by a search over the bit sets."""
    adj = adjacency(num_vertices, edges)
    for v in range(num_vertices):
        inside = left = adj[v]
        side: dict[int, int] = {}
        while left:
            s = (left & -left).bit_length() - 1
            left &= ~(1 << s)
            side[s] = 0
            stack = [s]
            while stack:
                u = stack.pop()
                nbrs = adj[u] & inside
                while nbrs:
                    w = (nbrs & -nbrs).bit_length() - 1
                    nbrs &= nbrs - 1
                    if w not in side:
                        side[w] = 1 - side[u]
                        left &= ~(1 << w)
                        stack.append(w)
                    elif side[w] == side[u]:
                        return False
    return True
