"""The standard LP relaxations of the two decision tasks, as bounds a polynomial-size LP gives (issue 31): the
fractional chromatic number (a lower bound on chi) and the subtour-elimination LP (Held-Karp's bound, a lower
bound on the shortest tour). `bench/bench_decision_relaxations.py` prints how often each one alone proves a
decision instance's NO: at the papers' sizes these relaxations are nearly always tight.

Both are solved with scipy's HiGHS. The fractional chromatic number's LP has one column per maximal independent
set (networkx's maximal cliques of the complement; at most a few hundred at 15 vertices); the subtour LP adds violated cuts, found by a minimum cut of the
support, until none is left (networkx's Stoer-Wagner)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import networkx as nx
import numpy as np
from scipy.optimize import linprog

from evalcore.graph_solvers import Edge

# A cut counts as violated below 2 - CUT_TOL (HiGHS's primal values are accurate to ~1e-9).
CUT_TOL = 1e-7


def fractional_chromatic(num_vertices: int, edges: Sequence[Edge]) -> float:
    """The fractional chromatic number of a graph on vertices 1..n: the least total weight on independent sets
    covering every vertex at least once. It is at least the Lovász theta of the complement and the vector
    chromatic numbers (which are at least the clique number), so where it equals the clique number they all do."""
    if num_vertices == 0:
        return 0.0
    graph = nx.empty_graph(range(1, num_vertices + 1))
    graph.add_edges_from(edges)
    sets = list(nx.find_cliques(nx.complement(graph)))  # the maximal independent sets
    cover = np.zeros((num_vertices, len(sets)))
    for col, members in enumerate(sets):
        cover[[v - 1 for v in members], col] = 1.0
    res = linprog(np.ones(len(sets)), A_ub=-cover, b_ub=-np.ones(num_vertices), bounds=(0, None), method="highs")
    if res.status != 0:  # pragma: no cover - always feasible (the sets cover every vertex) and bounded below
        raise RuntimeError(f"fractional chromatic number: the LP ended with {res.message}")
    return float(res.fun)


def subtour_bound(dist: Sequence[Sequence[float]]) -> float:
    """The subtour-elimination LP's optimum (the Held-Karp bound) for a symmetric distance matrix: x in [0, 1]
    per city pair, two at every city, at least two across every cut; cuts are added while the support's minimum
    cut is below 2. At most the shortest tour; with 3 or fewer cities it is the tour."""
    n = len(dist)
    if n < 3:
        return float(sum(dist[i][j] for i, j in itertools.combinations(range(n), 2)) * (2 if n == 2 else 0))
    pairs = list(itertools.combinations(range(n), 2))
    cost = np.array([dist[i][j] for i, j in pairs], dtype=float)
    degree = np.zeros((n, len(pairs)))
    for col, (i, j) in enumerate(pairs):
        degree[i, col] = degree[j, col] = 1.0
    cuts: list[np.ndarray] = []
    while True:
        res = linprog(cost, A_ub=np.array(cuts) if cuts else None, b_ub=np.full(len(cuts), -2.0) if cuts else None,
                      A_eq=degree, b_eq=np.full(n, 2.0), bounds=(0, 1), method="highs")
        if res.status != 0:  # pragma: no cover - a tour is always feasible
            raise RuntimeError(f"subtour LP: the LP ended with {res.message}")
        support = nx.Graph()
        support.add_nodes_from(range(n))
        support.add_weighted_edges_from((i, j, x) for (i, j), x in zip(pairs, res.x, strict=True) if x > 1e-12)
        if nx.is_connected(support):
            value, (side, _) = nx.stoer_wagner(support)
            if value >= 2 - CUT_TOL:
                return float(res.fun)
        else:
            side = next(iter(nx.connected_components(support)))
        inside = set(side)
        cuts.append(np.array([-1.0 if (i in inside) != (j in inside) else 0.0 for i, j in pairs]))
