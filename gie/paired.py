"""Exact solvers for the paired GraphVerse tasks: graph edit distance (GED) and maximum common subgraph (MCS).

Both work on `networkx.Graph`s whose node keys are display labels (see docs/graphverse-design.md).
Node keys of the two graphs live in separate name spaces; mappings go from G1 names to G2 names.

GED cost model (fixed by the design doc): node insertion/deletion 1, node substitution 1 iff the node
labels differ (label = attribute ``element`` if present, else ``color`` if present, else none; two
missing labels are equal), edge insertion/deletion 1, no edge labels.

MCS semantics: maximum common **induced** subgraph, node labels ignored, **not necessarily connected**.
This is what networkx's ``ISMAGS.largest_common_subgraph`` computes (GraphArena's ground truth): it
shrinks node subsets of one graph and asks for induced subgraph isomorphisms, without any
connectivity requirement.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Hashable, Mapping
from typing import Any

import networkx as nx
import numpy as np
from scipy.optimize import linear_sum_assignment

__all__ = ["check_mcs_mapping", "ged_cost", "node_label", "solve_ged", "solve_mcs"]

# Forbidden LSAP cells; large but finite because scipy rejects infeasible all-inf rows only at run time.
_BIG = 1.0e9
# How often (in search nodes) the clock is read: perf_counter per node would cost ~5% of a node.
_CLOCK_EVERY = 256


def node_label(attrs: Mapping[str, Any]) -> Hashable | None:
    """The node label used by GED substitution costs: ``element``, else ``color``, else None."""
    if "element" in attrs:
        return attrs["element"]
    return attrs.get("color")


# --------------------------------------------------------------------------------------------- GED


def ged_cost(G1: nx.Graph, G2: nx.Graph, mapping: Mapping[str, str | None]) -> int:
    """Cost of the edit path induced by ``mapping`` (G1 node -> G2 node, or None = delete).

    G1 nodes absent from ``mapping`` count as deleted (same as None); G2 nodes that are no image are
    inserted. An edge of G1 is kept iff both ends are mapped and their images are adjacent in G2; every
    other G1 edge is deleted and every G2 edge not covered this way is inserted.
    Raises ValueError on unknown node names or a non-injective mapping.
    """
    for u, v in mapping.items():
        if u not in G1:
            raise ValueError(f"unknown G1 node {u!r}")
        if v is not None and v not in G2:
            raise ValueError(f"unknown G2 node {v!r}")
    images = [v for v in mapping.values() if v is not None]
    if len(images) != len(set(images)):
        raise ValueError("mapping is not injective")
    m = {u: mapping.get(u) for u in G1.nodes}
    cost = 0
    for u, v in m.items():
        if v is None:
            cost += 1
        elif node_label(G1.nodes[u]) != node_label(G2.nodes[v]):
            cost += 1
    cost += G2.number_of_nodes() - len(images)
    kept = 0
    for a, b in G1.edges:
        ma, mb = m[a], m[b]
        if ma is not None and mb is not None and G2.has_edge(ma, mb):
            kept += 1
    # Each kept edge covers exactly one G2 edge (injective mapping), so the rest of both sides is edited.
    cost += (G1.number_of_edges() - kept) + (G2.number_of_edges() - kept)
    return cost


def _ged_order(G1: nx.Graph, G2: nx.Graph) -> list[str]:
    """Branching order of G1 nodes.

    Each next node is the one with most neighbours already placed, so that the exactly-known "anchor"
    edge costs appear as early as possible in the search; ties prefer labels rare in G2 (their
    substitutions are constrained) and then high degree.
    """
    freq2 = Counter(node_label(d) for _, d in G2.nodes(data=True))
    placed: set[str] = set()
    conn = dict.fromkeys(G1.nodes, 0)
    order: list[str] = []
    while len(order) < G1.number_of_nodes():
        u = max(
            (x for x in G1.nodes if x not in placed),
            key=lambda x: (conn[x], -freq2[node_label(G1.nodes[x])], G1.degree(x), str(x)),
        )
        order.append(u)
        placed.add(u)
        for w in G1.neighbors(u):
            conn[w] += 1
    return order


class _GedSearch:
    """Depth-first branch and bound for exact GED (see `solve_ged` for the algorithm).

    Indices: G1 nodes are positions 0..n1-1 in branching order, G2 nodes 0..n2-1, index n2 is the
    dummy "deleted" image (an all-zero row/column of the extended G2 adjacency matrix).
    """

    def __init__(self, G1: nx.Graph, G2: nx.Graph, deadline: float | None) -> None:
        self.order = _ged_order(G1, G2)
        self.nodes2 = list(G2.nodes)
        n1, n2 = len(self.order), len(self.nodes2)
        self.n1, self.n2 = n1, n2
        pos1 = {u: i for i, u in enumerate(self.order)}
        pos2 = {v: j for j, v in enumerate(self.nodes2)}
        self.A1 = np.zeros((n1, n1), dtype=np.int64)
        for a, b in G1.edges:
            if a != b:
                self.A1[pos1[a], pos1[b]] = self.A1[pos1[b], pos1[a]] = 1
        self.A2e = np.zeros((n2 + 1, n2 + 1), dtype=np.int64)
        for a, b in G2.edges:
            if a != b:
                self.A2e[pos2[a], pos2[b]] = self.A2e[pos2[b], pos2[a]] = 1
        self.E2 = int(self.A2e.sum()) // 2
        lab1 = [node_label(G1.nodes[u]) for u in self.order]
        lab2 = [node_label(G2.nodes[v]) for v in self.nodes2]
        # Substitution cost, plus a last column = deletion cost (1) so that img == n2 indexes it directly.
        self.Le = np.ones((n1, n2 + 1), dtype=np.int64)
        for i in range(n1):
            for j in range(n2):
                self.Le[i, j] = int(lab1[i] != lab2[j])
        self.deadline = deadline
        self.expanded = 0
        self.ub = math.inf
        self.best: np.ndarray = np.full(n1, n2, dtype=np.int64)

    # -- exact cost of a complete assignment (img[i] in 0..n2, n2 = deleted)
    def cost(self, img: np.ndarray) -> int:
        n_mapped = int(np.count_nonzero(img < self.n2))
        node = int(self.Le[np.arange(self.n1), img].sum()) + (self.n2 - n_mapped)
        sub = self.A2e[np.ix_(img, img)]
        covered = int(sub.sum()) // 2
        return node + int(np.abs(self.A1 - sub).sum()) // 2 + (self.E2 - covered)

    def offer(self, img: np.ndarray) -> None:
        c = self.cost(img)
        if c < self.ub:
            self.ub = c
            self.best = img.copy()

    # -- lower bound on the cost of the edits not yet paid for at depth k
    def bound(self, k: int, img: np.ndarray, unused: np.ndarray) -> tuple[int, np.ndarray, np.ndarray]:
        """Return (lower bound on remaining cost, LSAP matrix, LSAP column of each remaining row).

        LSAP over remaining G1 nodes (rows) x remaining G2 nodes (columns), both padded with the
        deletion/insertion dummies. A pair's cost is its node cost + the exact cost of its edges to
        already-placed nodes (anchors) + half the difference of its degrees inside the unplaced parts.
        The anchor part is exact, the degree part is admissible because every unplaced-unplaced edge
        edit touches two pairs. Costs are doubled to keep the halves integral.
        """
        r1, r2 = self.n1 - k, len(unused)
        X = self.A1[k:, :k]
        Y = self.A2e[np.ix_(unused, img[:k])]
        x, y = X.sum(axis=1), Y.sum(axis=1)
        d1 = self.A1[k:, k:].sum(axis=1)
        d2 = self.A2e[np.ix_(unused, unused)].sum(axis=1)
        n = r1 + r2
        M = np.zeros((n, n), dtype=np.float64)
        if r1 and r2:
            cross = x[:, None] + y[None, :] - 2 * (X @ Y.T)
            M[:r1, :r2] = 2 * (self.Le[k:, unused] + cross) + np.abs(d1[:, None] - d2[None, :])
        if r1:
            M[:r1, r2:] = _BIG
            M[np.arange(r1), r2 + np.arange(r1)] = 2 * (1 + x) + d1
        if r2:
            M[r1:, :r2] = _BIG
            M[r1 + np.arange(r2), np.arange(r2)] = 2 * (1 + y) + d2
        rows, cols = linear_sum_assignment(M)
        total = int(M[rows, cols].sum())
        return (total + 1) // 2, M, cols

    def dfs(self, k: int, g: int, img: np.ndarray, used: np.ndarray) -> None:
        self.expanded += 1
        if self.deadline is not None and self.expanded % _CLOCK_EVERY == 0 and time.perf_counter() > self.deadline:
            raise TimeoutError("solve_ged exceeded its time budget")
        unused = np.flatnonzero(~used)
        h, M, cols = self.bound(k, img, unused)
        if g + h >= self.ub:
            return
        r1, r2 = self.n1 - k, len(unused)
        if r1 == 0:
            # The bound is exact at a leaf (only insertions remain, all their edges are counted).
            self.ub = g + h
            self.best = img.copy()
            return
        # The LSAP solution completed into a full mapping is a cheap upper bound, often optimal.
        full = img.copy()
        for i in range(r1):
            c = cols[i]
            full[k + i] = unused[c] if c < r2 else self.n2
        self.offer(full)
        if g + h >= self.ub:
            return
        # Children of node k: each unused G2 node, then deletion, in order of their LSAP row cost.
        # Row 0 is node k; its deletion dummy sits at column r2, right after the real G2 nodes.
        row = M[0, : r2 + 1]
        a = self.A1[k, :k]
        sa = int(a.sum())
        Y = self.A2e[np.ix_(unused, img[:k])]
        step = self.Le[k, unused] + sa + Y.sum(axis=1) - 2 * (Y @ a)
        steps = [*(int(s) for s in step), 1 + sa]
        for c in sorted(range(r2 + 1), key=lambda c: (row[c], c)):
            gc = g + steps[c]
            if gc >= self.ub:
                continue
            v = unused[c] if c < r2 else self.n2
            img[k] = v
            if v < self.n2:
                used[v] = True
            self.dfs(k + 1, gc, img, used)
            if v < self.n2:
                used[v] = False
            img[k] = self.n2

    def local_search(self, img: np.ndarray) -> np.ndarray:
        """First-improvement descent over swaps and re-assignments; only seeds the upper bound."""
        cur = img.copy()
        cur_cost = self.cost(cur)
        improved = True
        while improved:
            improved = False
            for i in range(self.n1):
                free = [j for j in range(self.n2 + 1) if j == self.n2 or j not in set(cur.tolist())]
                cand: list[np.ndarray] = []
                for j in range(i + 1, self.n1):
                    t = cur.copy()
                    t[i], t[j] = cur[j], cur[i]
                    cand.append(t)
                for j in free:
                    if j != cur[i]:
                        t = cur.copy()
                        t[i] = j
                        cand.append(t)
                for t in cand:
                    c = self.cost(t)
                    if c < cur_cost:
                        cur, cur_cost, improved = t, c, True
                        break
        return cur

    def run(self) -> None:
        img = np.full(self.n1, self.n2, dtype=np.int64)
        used = np.zeros(self.n2 + 1, dtype=bool)
        used[self.n2] = True  # the dummy is never "free" in the unused list
        _, _, cols = self.bound(0, img, np.flatnonzero(~used))
        root = np.array([c if c < self.n2 else self.n2 for c in cols[: self.n1]], dtype=np.int64)
        self.offer(self.local_search(root))
        self.dfs(0, 0, img, used)


def solve_ged(
    G1: nx.Graph, G2: nx.Graph, timeout_s: float | None = None
) -> tuple[int, dict[str, str | None]]:
    """Exact minimum graph edit distance and one optimal node mapping (G1 node -> G2 node or None).

    Algorithm: depth-first branch and bound over the G1 nodes in a fixed order (each next node has the
    most already-ordered neighbours, see `_ged_order`); node k is mapped to an unused G2 node or
    deleted, G2 nodes left at the end are inserted. The cost g of a partial mapping counts its node
    edits and every edge edit between placed nodes. The lower bound on the rest is a linear sum
    assignment (scipy, Hungarian-type) between the unplaced nodes of both graphs plus deletion and
    insertion dummies, where a pair costs: label mismatch + the exact edits of its edges to placed
    nodes ("anchor" edges: G1 neighbours among placed nodes vs G2 neighbours among their images) + half
    the difference of the two degrees inside the unplaced parts (the bipartite/BMa bound of Chang et
    al.). Children are visited in order of their LSAP row cost; each LSAP solution, completed into a
    full mapping, also tightens the upper bound, which starts from the root LSAP mapping improved by a
    swap/move local search. The search is exact: it only prunes on admissible bounds.

    ``timeout_s``: wall-clock budget; TimeoutError is raised when it is exceeded (no unproven answer
    is ever returned).
    """
    n1, n2 = G1.number_of_nodes(), G2.number_of_nodes()
    if n1 == 0:
        return n2 + G2.number_of_edges(), {}
    if n2 == 0:
        return n1 + G1.number_of_edges(), dict.fromkeys(G1.nodes)
    deadline = None if timeout_s is None else time.perf_counter() + timeout_s
    s = _GedSearch(G1, G2, deadline)
    s.run()
    mapping: dict[str, str | None] = {
        u: (s.nodes2[int(j)] if j < n2 else None) for u, j in zip(s.order, s.best, strict=True)
    }
    return int(s.ub), mapping


# --------------------------------------------------------------------------------------------- MCS


def check_mcs_mapping(G1: nx.Graph, G2: nx.Graph, mapping: Mapping[str, str]) -> str | None:
    """None if ``mapping`` is an isomorphism between the induced subgraphs on its keys and values.

    Otherwise a short reason: unknown node, repeated image, or the first pair whose adjacency differs.
    """
    for u, v in mapping.items():
        if u not in G1:
            return f"unknown node {u!r} in the first graph"
        if v not in G2:
            return f"unknown node {v!r} in the second graph"
    seen: dict[str, str] = {}
    for u, v in mapping.items():
        if v in seen:
            return f"{seen[v]!r} and {u!r} are both mapped to {v!r}"
        seen[v] = u
    keys = list(mapping)
    for i, a in enumerate(keys):
        for b in keys[i + 1 :]:
            e1, e2 = G1.has_edge(a, b), G2.has_edge(mapping[a], mapping[b])
            if e1 != e2:
                where = "first" if e1 else "second"
                return (
                    f"edge only in the {where} graph: {a!r}-{b!r} vs {mapping[a]!r}-{mapping[b]!r}"
                )
    return None


def _bits(mask: int) -> list[int]:
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


class _McSplit:
    """McSplit (McCreesh, Prosser, Trimble 2017) for maximum common induced subgraph, unlabelled.

    A "bidomain" (L, R) is a pair of vertex sets of the left/right graph whose members have the same
    adjacency pattern to every pair matched so far, so only L-R pairs can extend the mapping.
    """

    def __init__(self, G1: nx.Graph, G2: nx.Graph, deadline: float | None) -> None:
        self.nodes1, self.nodes2 = list(G1.nodes), list(G2.nodes)
        p1 = {u: i for i, u in enumerate(self.nodes1)}
        p2 = {v: i for i, v in enumerate(self.nodes2)}
        self.N1 = [0] * len(self.nodes1)
        self.N2 = [0] * len(self.nodes2)
        for a, b in G1.edges:
            if a != b:
                self.N1[p1[a]] |= 1 << p1[b]
                self.N1[p1[b]] |= 1 << p1[a]
        for a, b in G2.edges:
            if a != b:
                self.N2[p2[a]] |= 1 << p2[b]
                self.N2[p2[b]] |= 1 << p2[a]
        self.deg1 = [m.bit_count() for m in self.N1]
        self.deg2 = [m.bit_count() for m in self.N2]
        self.best: list[tuple[int, int]] = []
        self.deadline = deadline
        self.expanded = 0

    def search(self, pairs: list[tuple[int, int]], domains: list[tuple[int, int]]) -> None:
        self.expanded += 1
        if self.deadline is not None and self.expanded % _CLOCK_EVERY == 0 and time.perf_counter() > self.deadline:
            raise TimeoutError("solve_mcs exceeded its time budget")
        if len(pairs) > len(self.best):
            self.best = list(pairs)
        bound = len(pairs) + sum(min(left.bit_count(), right.bit_count()) for left, right in domains)
        if bound <= len(self.best) or not domains:
            return
        # Smallest domain first: fewest right-hand choices, the McSplit fail-first rule.
        di = min(
            range(len(domains)),
            key=lambda i: (max(domains[i][0].bit_count(), domains[i][1].bit_count()), i),
        )
        left, right = domains[di]
        v = max(_bits(left), key=lambda x: (self.deg1[x], -x))
        nv = self.N1[v]
        for w in sorted(_bits(right), key=lambda x: (-self.deg2[x], x)):
            nw = self.N2[w]
            new: list[tuple[int, int]] = []
            for lm, rm in domains:
                lm &= ~(1 << v)
                rm &= ~(1 << w)
                la, ra = lm & nv, rm & nw
                if la and ra:
                    new.append((la, ra))
                ln, rn = lm & ~nv, rm & ~nw
                if ln and rn:
                    new.append((ln, rn))
            pairs.append((v, w))
            self.search(pairs, new)
            pairs.pop()
        # Branch where v stays unmatched.
        rest = left & ~(1 << v)
        if rest:
            domains = [*domains[:di], (rest, right), *domains[di + 1 :]]
        else:
            domains = [*domains[:di], *domains[di + 1 :]]
        self.search(pairs, domains)


def solve_mcs(G1: nx.Graph, G2: nx.Graph, timeout_s: float | None = None) -> tuple[int, dict[str, str]]:
    """Exact maximum common induced subgraph (node labels ignored, need not be connected).

    Returns its number of nodes and a mapping G1 node -> G2 node (an isomorphism between the two
    induced subgraphs). Algorithm: McSplit branch and bound on bitsets; bound = matched pairs + sum
    over bidomains of min(|L|, |R|). ``timeout_s`` raises TimeoutError when exceeded.
    """
    if G1.number_of_nodes() == 0 or G2.number_of_nodes() == 0:
        return 0, {}
    deadline = None if timeout_s is None else time.perf_counter() + timeout_s
    s = _McSplit(G1, G2, deadline)
    full1 = (1 << len(s.nodes1)) - 1
    full2 = (1 << len(s.nodes2)) - 1
    s.search([], [(full1, full2)])
    mapping = {s.nodes1[a]: s.nodes2[b] for a, b in sorted(s.best)}
    return len(mapping), mapping
