"""Building blocks of the single-image GraphVerse tasks' exact solvers (each solver lives in its task's
module, gie/tasks/<task>.py) and the graph helpers their verifiers and heuristics share: sorted labels,
edge weights, bitmask adjacency, the lexicographically smallest shortest path, the canonical cycle, and the
maximum-clique branch and bound behind MCP, MIS and MVC.

Graphs follow docs/graphverse-design.md: an undirected simple `networkx.Graph` whose node keys are the
label strings; SD and TSP read the positive edge attribute "weight" (1 when absent). Self-loops are ignored.

Determinism: every solver indexes nodes by sorted label and explores in that order, so the answer depends
only on the graph's node and edge sets, never on insertion order. Where a tie-break is cheap to make
canonical it is (shortest paths are the lexicographically smallest among the shortest, sets are sorted,
tours and cycles start at their smallest label and go towards the smaller neighbour); for the NP-hard
set problems the returned optimum is "the first found" by a fixed search order.

Sizes in practice: n <= 30 for the set problems (bitmask branch and bound with a colouring bound,
microseconds to milliseconds).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence

import networkx as nx

Number = int | float


# ----------------------------------------------------------------------------------------------- helpers


def sorted_labels(G: nx.Graph) -> list[Hashable]:
    # key=str keeps sorting total even if a caller passes int node keys.
    return sorted(G.nodes, key=str)


def edge_weight(G: nx.Graph, u: Hashable, v: Hashable) -> Number:
    return G[u][v].get("weight", 1)


def bitmasks(G: nx.Graph) -> tuple[list[Hashable], list[int]]:
    """(labels in sorted order, neighbour bitmask per index)."""
    labels = sorted_labels(G)
    index = {v: i for i, v in enumerate(labels)}
    adj = [0] * len(labels)
    for u, v in G.edges:
        if u != v:
            adj[index[u]] |= 1 << index[v]
            adj[index[v]] |= 1 << index[u]
    return labels, adj


def bits(mask: int) -> list[int]:
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


def require_nodes(G: nx.Graph, *nodes: Hashable) -> None:
    missing = [v for v in nodes if v not in G]
    if missing:
        raise ValueError(f"node(s) {missing} not in the graph")


def lex_shortest_path(G: nx.Graph, s: Hashable, t: Hashable, to_t: dict[Hashable, Number],
                       weighted: bool) -> list[Hashable]:
    """Walk from s to t, always taking the smallest-label neighbour that stays on a shortest path.

    With positive weights the distance to t strictly drops at each step, so the greedy choice yields the
    lexicographically smallest shortest path (a canonical tie-break no Dijkstra visit order gives).
    """
    path, here, seen = [s], s, {s}
    while here != t:
        options = []
        for v in G[here]:
            if v in seen or v not in to_t:
                continue
            step = edge_weight(G, here, v) if weighted else 1
            if math.isclose(to_t[v] + step, to_t[here], rel_tol=1e-12, abs_tol=1e-9):
                options.append(v)
        if not options:  # only reachable with non-positive weights, which the design excludes
            raise ValueError("edge weights must be positive")
        here = min(options, key=str)
        seen.add(here)
        path.append(here)
    return path


# ----------------------------------------------------------------------------------------------- tours and cycles


def tour_weight(G: nx.Graph, tour: Sequence[Hashable]) -> Number:
    return sum(edge_weight(G, a, b) for a, b in zip(tour, tour[1:], strict=False))


def canonical_cycle(cycle: list[Hashable]) -> list[Hashable]:
    """A closed cycle [a, ..., a] rotated to start at its smallest label and oriented towards the
    smaller of that node's two cycle neighbours."""
    body = cycle[:-1]
    k = min(range(len(body)), key=lambda i: str(body[i]))
    body = body[k:] + body[:k]
    if len(body) > 2 and str(body[-1]) < str(body[1]):
        body = [body[0], *reversed(body[1:])]
    return [*body, body[0]]


# ----------------------------------------------------------------------------------------------- sets


def max_clique_mask(adj: list[int], candidates: int) -> int:
    """Maximum clique within `candidates` (bitmask), branch and bound with a greedy-colouring bound (MCQ).

    Colour classes give an upper bound on the clique still reachable; vertices are expanded from the
    highest colour down, so the bound prunes whole tails of the candidate list at once.
    """
    best_mask, best_size = 0, 0

    def colour_order(p: int) -> tuple[list[int], list[int]]:
        order, bounds, k, uncoloured = [], [], 0, p
        while uncoloured:
            k += 1
            q = uncoloured
            while q:
                low = q & -q
                v = low.bit_length() - 1
                q &= ~adj[v] & ~low
                uncoloured &= ~low
                order.append(v)
                bounds.append(k)
        return order, bounds

    def expand(r: int, size: int, p: int) -> None:
        nonlocal best_mask, best_size
        order, bounds = colour_order(p)
        for i in range(len(order) - 1, -1, -1):
            if size + bounds[i] <= best_size:
                return
            v = order[i]
            new_p = p & adj[v]
            if new_p:
                expand(r | 1 << v, size + 1, new_p)
            elif size + 1 > best_size:
                best_mask, best_size = r | 1 << v, size + 1
            p &= ~(1 << v)

    if candidates:
        expand(0, 0, candidates)
    return best_mask
