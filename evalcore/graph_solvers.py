"""Exact graph solvers both benchmarks grade with: chromatic number (bitmask DSATUR-style search with a clique
bound and an optional step budget) and the shortest closed tour (Held-Karp)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


class SolveBudgetExceeded(RuntimeError):
    """The exact search visited more nodes than allowed: the answer is unknown, not guessed."""


Edge = tuple[int, int]


def check_graph(num_vertices: int, edges: Sequence[Edge]) -> None:
    """Raise ValueError unless the edges are u < v pairs of vertices 1..N without repeats."""
    if num_vertices < 1:
        raise ValueError("num_vertices must be >= 1")
    seen: set[Edge] = set()
    for u, v in edges:
        if not 1 <= u < v <= num_vertices:
            raise ValueError(f"edge ({u}, {v}) must satisfy 1 <= u < v <= {num_vertices}")
        if (u, v) in seen:
            raise ValueError(f"edge ({u}, {v}) listed twice")
        seen.add((u, v))


def adjacency(num_vertices: int, edges: Sequence[Edge]) -> list[int]:
    """0-based neighbour bitmasks."""
    adj = [0] * num_vertices
    for u, v in edges:
        adj[u - 1] |= 1 << (v - 1)
        adj[v - 1] |= 1 << (u - 1)
    return adj


def _greedy_clique(adj: list[int]) -> int:
    """A clique found greedily from every start vertex: a cheap lower bound on chi."""
    n = len(adj)
    best = 1 if n else 0
    for start in range(n):
        clique = 1
        cand = adj[start]
        while cand:
            # Extend by the candidate with most neighbours among the remaining candidates.
            pick, pick_deg = -1, -1
            c = cand
            while c:
                low = c & -c
                w = low.bit_length() - 1
                c ^= low
                d = (adj[w] & cand).bit_count()
                if d > pick_deg:
                    pick, pick_deg = w, d
            clique += 1
            cand &= adj[pick]
        best = max(best, clique)
    return best


class _NodeBudget:
    """Search work left, in vertex-pair steps: one search node on N vertices costs N*N (its DSATUR pick scans
    every vertex's neighbours), so the budget tracks time at any size. Counted in steps, not seconds, so
    whether an instance fits is the same on every machine (datasets stay reproducible)."""

    def __init__(self, max_steps: int | None) -> None:
        self.left = max_steps
        self.used = 0

    def spend(self, steps: int) -> None:
        self.used += steps
        if self.left is not None and self.used > self.left:
            raise SolveBudgetExceeded(f"exact colouring search exceeded its budget of {self.left:,} steps")


def _k_coloring(adj: list[int], k: int, budget: _NodeBudget | None = None) -> list[int] | None:
    """A proper colouring with colours 0..k-1, or None. DSATUR order, one new colour per branch.
    Raises SolveBudgetExceeded when `budget` runs out."""
    budget = budget or _NodeBudget(None)
    n = len(adj)
    if n == 0:
        return []
    if k <= 0:
        return None
    colors = [-1] * n
    degree = [a.bit_count() for a in adj]

    def neighbour_colors(v: int) -> int:
        mask = 0
        a = adj[v]
        while a:
            low = a & -a
            c = colors[low.bit_length() - 1]
            if c >= 0:
                mask |= 1 << c
            a ^= low
        return mask

    def rec(done: int, used: int) -> bool:
        if done == n:
            return True
        budget.spend(n * n)
        # DSATUR: the uncoloured vertex with the fewest options fails earliest.
        pick, pick_sat, pick_deg, pick_mask = -1, -1, -1, 0
        for v in range(n):
            if colors[v] >= 0:
                continue
            mask = neighbour_colors(v)
            sat = mask.bit_count()
            if sat > pick_sat or (sat == pick_sat and degree[v] > pick_deg):
                pick, pick_sat, pick_deg, pick_mask = v, sat, degree[v], mask
        for c in range(min(used + 1, k)):
            if pick_mask >> c & 1:
                continue
            colors[pick] = c
            if rec(done + 1, max(used, c + 1)):
                return True
        colors[pick] = -1
        return False

    return list(colors) if rec(0, 0) else None


def greedy_largest_first(num_vertices: int, edges: Sequence[Edge]) -> dict[int, int]:
    """networkx `greedy_color(G, "largest_first")` on G with nodes added 1..N: the peer's reference heuristic.

    Vertices by degree, descending (stable on 1..N, as networkx sorts node insertion order), each gets the
    smallest colour (0-based) unused by its already-coloured neighbours.
    """
    adj = adjacency(num_vertices, edges)
    order = sorted(range(num_vertices), key=lambda v: -adj[v].bit_count())
    colors: dict[int, int] = {}
    for v in order:
        taken = {colors[w] for w in range(num_vertices) if adj[v] >> w & 1 and w in colors}
        c = 0
        while c in taken:
            c += 1
        colors[v] = c
    return {v + 1: colors[v] for v in range(num_vertices)}


def k_coloring(
    num_vertices: int, edges: Sequence[Edge], k: int, max_steps: int | None = None
) -> dict[int, int] | None:
    """A proper colouring of vertices 1..N with colours 0..k-1, or None if the graph is not k-colourable.
    With `max_steps` (see _NodeBudget), raises SolveBudgetExceeded rather than search longer."""
    found = _k_coloring(adjacency(num_vertices, edges), k, _NodeBudget(max_steps))
    return None if found is None else {v + 1: c for v, c in enumerate(found)}


def chromatic_number(
    num_vertices: int, edges: Sequence[Edge], max_steps: int | None = None
) -> tuple[int, dict[int, int]]:
    """Exact chromatic number and an optimal colouring (vertex -> colour 0..chi-1). Branch and bound between a
    greedy clique (lower bound) and greedy largest-first (upper bound); with `max_steps` (shared by all the
    k tried), raises SolveBudgetExceeded rather than search longer."""
    adj = adjacency(num_vertices, edges)
    greedy = greedy_largest_first(num_vertices, edges)
    upper = max(greedy.values(), default=-1) + 1
    k = _greedy_clique(adj)
    budget = _NodeBudget(max_steps)
    while k < upper:
        found = _k_coloring(adj, k, budget)
        if found is not None:
            return k, {v + 1: c for v, c in enumerate(found)}
        k += 1
    return upper, greedy



def tour_length(dist: Sequence[Sequence[float]], cycle: Sequence[int]) -> float:
    """Length of the closed tour visiting `cycle` in order and returning to cycle[0]."""
    n = len(cycle)
    return float(sum(dist[cycle[k]][cycle[(k + 1) % n]] for k in range(n)))


def held_karp(dist: Sequence[Sequence[float]]) -> tuple[float, list[int]]:
    """Exact shortest closed tour: (length, [0, ..., 0])."""
    n = len(dist)
    if n == 1:
        return 0.0, [0, 0]
    if n == 2:
        return tour_length(dist, [0, 1]), [0, 1, 0]
    tour = held_karp_order(np.asarray(dist, dtype=np.float64))
    if tour is None:  # only a matrix with infinite entries has no tour
        raise ValueError("no finite tour")
    return tour_length(dist, tour[:-1]), tour


def held_karp_order(d: np.ndarray) -> list[int] | None:
    """Shortest closed tour [0, ..., 0] of an n x n matrix (n >= 3) where np.inf marks a missing edge, or
    None when no finite tour exists (GraphVerse's graphs are not complete).

    Bitmask DP over subsets of cities 1..n-1, vectorised with numpy one subset size and one last city at
    a time (n=13 is 12 layers x 12 cities of array ops, a few ms instead of ~0.5 s of Python loops).
    """
    n = len(d)
    m = n - 1  # city c (1..n-1) is bit c-1
    full = 1 << m
    sub = d[1:, 1:]
    dp = np.full((full, m), np.inf)
    for j in range(m):
        dp[1 << j, j] = d[0, j + 1]
    masks = np.arange(full)
    popcount = np.zeros(full, dtype=np.int64)
    for b in range(m):
        popcount += (masks >> b) & 1
    for size in range(2, m + 1):
        layer = masks[popcount == size]
        for j in range(m):
            with_j = layer[((layer >> j) & 1) == 1]
            # dp[prev, i] is inf for i outside prev (and for i == j), so the min only sees valid paths.
            dp[with_j, j] = (dp[with_j ^ (1 << j)] + sub[:, j]).min(axis=1)
    closing = dp[full - 1] + d[1:, 0]
    j = int(np.argmin(closing))
    if not np.isfinite(closing[j]):
        return None
    mask, rev = full - 1, []
    while True:
        rev.append(j + 1)
        prev = mask ^ (1 << j)
        if prev == 0:
            break
        j = int(np.argmin(dp[prev] + sub[:, j]))
        mask = prev
    return [0, *rev[::-1], 0]

