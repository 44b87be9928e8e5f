"""Exact graph algorithms behind the single-image GraphVerse tasks' `solve` functions (gie/tasks/<task>.py),
and the graph helpers their verifiers and heuristics share.

Graphs follow docs/graphverse-design.md: an undirected simple `networkx.Graph` whose node keys are the
label strings; SD and TSP read the positive edge attribute "weight" (1 when absent). Self-loops are ignored.

Determinism: every solver indexes nodes by sorted label and explores in that order, so the answer depends
only on the graph's node and edge sets, never on insertion order. Where a tie-break is cheap to make
canonical it is (shortest paths are the lexicographically smallest among the shortest, sets are sorted,
tours and cycles start at their smallest label and go towards the smaller neighbour); for the NP-hard
set problems the returned optimum is "the first found" by a fixed search order.

Sizes in practice: n <= 30 for the set problems (bitmask branch and bound with a colouring bound,
microseconds to milliseconds), n <= 12..16 for TSP and longest cycle (subset DP, exponential in n).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence

import networkx as nx
import numpy as np

from nphe4v.core.graph_solvers import chromatic_number

Number = int | float


# ----------------------------------------------------------------------------------------------- helpers


def sorted_labels(G: nx.Graph) -> list[Hashable]:
    # key=str keeps sorting total even if a caller passes int node keys.
    return sorted(G.nodes, key=str)


def edge_weight(G: nx.Graph, u: Hashable, v: Hashable) -> Number:
    return G[u][v].get("weight", 1)


def _bitmasks(G: nx.Graph) -> tuple[list[Hashable], list[int]]:
    """(labels in sorted order, neighbour bitmask per index)."""
    labels = sorted_labels(G)
    index = {v: i for i, v in enumerate(labels)}
    adj = [0] * len(labels)
    for u, v in G.edges:
        if u != v:
            adj[index[u]] |= 1 << index[v]
            adj[index[v]] |= 1 << index[u]
    return labels, adj


def _bits(mask: int) -> list[int]:
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


def _require_nodes(G: nx.Graph, *nodes: Hashable) -> None:
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


# ----------------------------------------------------------------------------------------------- polynomial


def shortest_distance(G: nx.Graph, s: Hashable, t: Hashable) -> tuple[Number, list[Hashable]] | tuple[None, None]:
    """Weighted shortest distance s -> t and the lexicographically smallest shortest path, or (None, None)."""
    _require_nodes(G, s, t)
    to_t = nx.single_source_dijkstra_path_length(G, t, weight=lambda u, v, d: d.get("weight", 1))
    if s not in to_t:
        return None, None
    return to_t[s], lex_shortest_path(G, s, t, to_t, weighted=True)


def diameter(G: nx.Graph) -> tuple[int, list[Hashable]]:
    """Unweighted diameter (hops) of a connected graph and a shortest path realising it.

    The realising pair is the first farthest pair in sorted-label order, its path the lexicographically
    smallest shortest one.
    """
    if G.number_of_nodes() == 0:
        raise ValueError("diameter of an empty graph is undefined")
    if not nx.is_connected(G):
        raise ValueError("diameter is only defined for connected graphs")
    labels = sorted_labels(G)
    best, pair = -1, (labels[0], labels[0])
    for u in labels:
        hops = nx.single_source_shortest_path_length(G, u)
        for v in labels:
            if str(v) > str(u) and hops[v] > best:
                best, pair = hops[v], (u, v)
    if best < 0:  # single node
        return 0, [labels[0]]
    u, v = pair
    return best, lex_shortest_path(G, u, v, nx.single_source_shortest_path_length(G, v), weighted=False)


def common_neighbors(G: nx.Graph, s: Hashable, t: Hashable) -> list[Hashable]:
    _require_nodes(G, s, t)
    return sorted((set(G[s]) & set(G[t])) - {s, t}, key=str)


# ----------------------------------------------------------------------------------------------- TSP


def tour_weight(G: nx.Graph, tour: Sequence[Hashable]) -> Number:
    return sum(edge_weight(G, a, b) for a, b in zip(tour, tour[1:], strict=False))


def _canonical_cycle(cycle: list[Hashable]) -> list[Hashable]:
    """A closed cycle [a, ..., a] rotated to start at its smallest label and oriented towards the
    smaller of that node's two cycle neighbours."""
    body = cycle[:-1]
    k = min(range(len(body)), key=lambda i: str(body[i]))
    body = body[k:] + body[:k]
    if len(body) > 2 and str(body[-1]) < str(body[1]):
        body = [body[0], *reversed(body[1:])]
    return [*body, body[0]]


def _held_karp(dist: np.ndarray) -> list[int] | None:
    """Exact shortest closed tour [0, ..., 0] where np.inf marks a missing edge, or None."""
    from nphe4v.core.graph_solvers import held_karp_order

    return held_karp_order(dist)


HELD_KARP_MAX = 12


def _tsp_milp(n: int, dist: np.ndarray) -> list[int] | None:
    """Exact shortest closed tour [0, ..., 0] by the Dantzig-Fulkerson-Johnson model: one binary per
    finite edge, degree 2 at every city, and subtour cuts added lazily (HiGHS through scipy) until the
    optimum is one cycle. At 20 cities this takes tens of milliseconds where Held-Karp needs seconds."""
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import coo_matrix

    pairs = [(i, j) for i in range(n) for j in range(i + 1, n) if np.isfinite(dist[i, j])]
    m = len(pairs)
    cost = np.array([dist[i, j] for i, j in pairs])
    rows, cols = [], []
    for k, (i, j) in enumerate(pairs):
        rows += [i, j]
        cols += [k, k]
    degree = coo_matrix((np.ones(2 * m), (rows, cols)), shape=(n, m)).tocsr()
    cuts: list[np.ndarray] = []
    cut_rhs: list[float] = []
    while True:
        cons = [LinearConstraint(degree, 2, 2)]
        if cuts:
            cons.append(LinearConstraint(np.array(cuts), -np.inf, np.array(cut_rhs)))
        res = milp(cost, constraints=cons, integrality=np.ones(m), bounds=Bounds(0, 1))
        if res.status != 0 or res.x is None:
            return None
        chosen = [pairs[k] for k in range(m) if res.x[k] > 0.5]
        h = nx.Graph(chosen)
        comps = [sorted(c) for c in nx.connected_components(h)]
        if len(comps) == 1:
            break
        for comp in comps:
            inside = set(comp)
            cuts.append(np.array([1.0 if i in inside and j in inside else 0.0 for i, j in pairs]))
            cut_rhs.append(len(comp) - 1)
    order, prev, here = [0], None, 0
    while len(order) < n:
        nxt = min(v for v in h[here] if v != prev)
        prev, here = here, nxt
        order.append(here)
    return [*order, 0]


def tsp(G: nx.Graph) -> tuple[Number, list[Hashable]] | tuple[None, None]:
    """Exact minimum-weight Hamiltonian cycle using existing edges only (a missing edge costs infinity).

    Held-Karp up to HELD_KARP_MAX cities (a few milliseconds), the DFJ MILP above it (the hard level's
    10-20 cities). Both are exact; tests check them against each other. n = 1 is the empty tour [a, a]; n = 2 goes there
    and back along the single edge (a tour of two cities, as Held-Karp counts it).
    """
    labels = sorted_labels(G)
    n = len(labels)
    if n == 0:
        return None, None
    if n == 1:
        return 0, [labels[0], labels[0]]
    if n == 2:
        a, b = labels
        return (2 * edge_weight(G, a, b), [a, b, a]) if G.has_edge(a, b) else (None, None)
    # Cheap certificates of "no tour" before the exponential DP.
    if min(d for _, d in G.degree) < 2 or not nx.is_connected(G):
        return None, None
    index = {v: i for i, v in enumerate(labels)}
    dist = np.full((n, n), np.inf)
    np.fill_diagonal(dist, 0.0)
    for u, v in G.edges:
        if u != v:
            dist[index[u], index[v]] = dist[index[v], index[u]] = float(edge_weight(G, u, v))
    order = _held_karp(dist) if n <= HELD_KARP_MAX else _tsp_milp(n, dist)
    if order is None:
        return None, None
    tour = _canonical_cycle([labels[i] for i in order])
    # Summing the graph's own weights keeps integer lengths integers.
    return tour_weight(G, tour), tour


# ----------------------------------------------------------------------------------------------- sets


def _max_clique_mask(adj: list[int], candidates: int) -> int:
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


def max_clique(G: nx.Graph) -> list[Hashable]:
    labels, adj = _bitmasks(G)
    return [labels[i] for i in _bits(_max_clique_mask(adj, (1 << len(labels)) - 1))]


def max_independent_set(G: nx.Graph) -> list[Hashable]:
    """A maximum clique of the complement graph."""
    labels, adj = _bitmasks(G)
    full = (1 << len(labels)) - 1
    comp = [full & ~a & ~(1 << i) for i, a in enumerate(adj)]
    return [labels[i] for i in _bits(_max_clique_mask(comp, full))]


def min_vertex_cover(G: nx.Graph) -> list[Hashable]:
    """The complement of a maximum independent set (Gallai: tau + alpha = n)."""
    keep = set(max_independent_set(G))
    return [v for v in sorted_labels(G) if v not in keep]


# ----------------------------------------------------------------------------------------------- cycle


def _hamiltonian_cycle(adj: list[int], block: int, budget: int = 20_000) -> list[int] | None:
    """A Hamiltonian cycle of the block found by a budgeted DFS (fewest-onward-options first), or None
    if there is none or the budget ran out. An exact shortcut: dense blocks are usually Hamiltonian and
    the DFS finds one in O(n) steps, where the subset DP would enumerate ~2^n paths."""
    verts = _bits(block)
    k = len(verts)
    start = verts[0]
    path = [start]
    steps = 0

    def dfs(here: int, seen: int) -> bool:
        nonlocal steps
        steps += 1
        if steps > budget:
            return False
        if len(path) == k:
            return bool(adj[here] >> start & 1)
        options = _bits(adj[here] & block & ~seen)
        options.sort(key=lambda w: ((adj[w] & block & ~seen).bit_count(), w))
        for w in options:
            path.append(w)
            if dfs(w, seen | 1 << w):
                return True
            path.pop()
        return False

    return path if dfs(start, 1 << start) else None


def _longest_cycle_in_block(adj: list[int], block: int) -> tuple[int, list[int]]:
    """Longest simple cycle inside the vertex set `block` (bitmask): (length, [v0, ..., v_{k-1}]).

    Subset-path DP per start s = the cycle's smallest vertex: ends[mask] is the set of vertices v such
    that some simple path from s through exactly `mask` ends at v, using only vertices above s. Layers
    grow by one vertex, only reachable states are stored (sparse graphs touch few masks).
    """
    verts = _bits(block)
    ham = _hamiltonian_cycle(adj, block)
    if ham is not None:
        return len(ham), ham
    best_len = 0
    best: tuple[int, int, int, dict[int, int]] | None = None
    for s in verts:
        allowed = block & ~((1 << (s + 1)) - 1)  # vertices above s
        if (allowed | 1 << s).bit_count() <= best_len:
            break  # later starts have even fewer vertices to use
        ends: dict[int, int] = {1 << s: 1 << s}
        layer = [1 << s]
        size = 1
        while layer:
            nxt: list[int] = []
            for mask in layer:
                reach = ends[mask]
                # Every vertex outside the mask adjacent to some current end extends some path.
                free = allowed & ~mask
                while free:
                    low = free & -free
                    free ^= low
                    if adj[low.bit_length() - 1] & reach:
                        new = mask | low
                        got = ends.get(new)
                        if got is None:
                            ends[new] = low
                            nxt.append(new)
                        else:
                            ends[new] = got | low
            size += 1
            for mask in nxt:
                if size >= 3 and size > best_len and ends[mask] & adj[s]:
                    best_len, best = size, (s, mask, ends[mask] & adj[s], ends)
                    break
            layer = nxt
    if best is None:
        return 0, []
    s, mask, closing, ends = best
    # Walk back from the smallest closing end: the predecessor is any end of the smaller mask adjacent
    # to the current vertex (smallest index, for determinism).
    v = (closing & -closing).bit_length() - 1
    rev = [v]
    while mask != 1 << s:
        prev_mask = mask ^ (1 << v)
        cand = ends[prev_mask] & adj[v]
        v = (cand & -cand).bit_length() - 1
        rev.append(v)
        mask = prev_mask
    return best_len, rev[::-1]


def longest_cycle(G: nx.Graph) -> tuple[int, list[Hashable] | None]:
    """Length (edges = nodes) of a longest simple cycle and the cycle closed [a, ..., a]; (0, None) for a forest.

    A cycle lies inside one biconnected block, so the exponential DP only ever sees one block at a time
    (molecules and trees-with-rings break into tiny blocks).
    """
    labels, adj = _bitmasks(G)
    index = {v: i for i, v in enumerate(labels)}
    best_len, best_cycle = 0, None
    blocks = [sorted(index[v] for v in b) for b in nx.biconnected_components(G) if len(b) >= 3]
    blocks.sort(key=lambda b: (-len(b), b))
    for block in blocks:
        if len(block) <= best_len:
            break
        mask = sum(1 << i for i in block)
        sub_adj = [a & mask for a in adj]
        length, cyc = _longest_cycle_in_block(sub_adj, mask)
        if length > best_len:
            best_len, best_cycle = length, cyc
    if best_cycle is None:
        return 0, None
    names = [labels[i] for i in best_cycle]
    return best_len, _canonical_cycle([*names, names[0]])


# ----------------------------------------------------------------------------------------------- colouring


def chromatic(G: nx.Graph) -> tuple[int, dict[Hashable, int]]:
    """Chromatic number and an optimal colouring {label: colour 1..k}, via NPHardEval4V's exact solver
    (it numbers vertices 1..N, so labels are relabelled in sorted order and back)."""
    labels, _ = _bitmasks(G)
    index = {v: i + 1 for i, v in enumerate(labels)}
    edges = sorted({tuple(sorted((index[u], index[v]))) for u, v in G.edges if u != v})
    k, colouring = chromatic_number(len(labels), edges)  # type: ignore[arg-type]
    return k, {labels[i - 1]: c + 1 for i, c in sorted(colouring.items())}
