"""The graph statistics GCP-D's (NO, YES) pairs are matched or brought close on (`nphe4v.tasks.gcpd`), and
that `bench/bench_decision_leaks.py` and the tests read: degrees, triangles and degeneracy (matched exactly),
the spectra and average clustering (`pair_features`, matched within `gcpd.PAIR_TOL`), short cycles and the
triangles at each vertex (`pair_shape`), the 3-core and the induced 4- and 5-vertex graphlet counts. Pure
functions of (number of vertices, edge list)."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Sequence

import numpy as np

from evalcore.graph_solvers import Edge, adjacency

# Average clustering lies in [0, 1] and moves by ~0.01-0.05 a swap: weighted so PAIR_TOL allows 0.025.
CLUSTERING_SCALE = 4.0
# Counts in `pair_shape` weigh COUNT_WEIGHT each (a 5-cycle more or less: as 0.25 on an eigenvalue).
COUNT_WEIGHT = 0.25
# Every float statistic is snapped to multiples of 1 / SNAP_GRID before the walk compares it. Why: LAPACK's
# eigenvalues differ in their last bits from one CPU to another (OpenBLAS picks its kernels by the CPU: an
# AVX-512 machine and an AVX2 one disagree by ~1e-15), and the walk compares values that are equal in exact
# arithmetic (isomorphic and cospectral graphs), so unsnapped the noise broke the ties and a GCP-D dataset of
# the same version and seed differed between machines. Snapped, equal values are equal on every machine, and
# sums and differences of snapped values are exact, so no summation order matters either. (A value within ~1e-15
# of a midpoint of the grid could still round either way: about one value in 10^9.)
SNAP_GRID = 2.0**20


def snap(x: np.ndarray | Sequence[float]) -> np.ndarray:
    """`x` rounded to the nearest multiple of 1 / SNAP_GRID (see there)."""
    return np.rint(np.asarray(x, dtype=float) * SNAP_GRID) / SNAP_GRID


def triangle_count(num_vertices: int, edges: Sequence[Edge]) -> int:
    adj = adjacency(num_vertices, edges)
    return sum((adj[u - 1] & adj[v - 1]).bit_count() for u, v in edges) // 3


def degeneracy(num_vertices: int, edges: Sequence[Edge]) -> int:
    """The largest minimum degree of any subgraph (repeatedly remove a vertex of minimum degree)."""
    adj = adjacency(num_vertices, edges)
    alive = (1 << num_vertices) - 1
    best = 0
    while alive:
        v = min((i for i in range(num_vertices) if alive >> i & 1), key=lambda i: (adj[i] & alive).bit_count())
        best = max(best, (adj[v] & alive).bit_count())
        alive &= ~(1 << v)
    return best


def surface_profile(num_vertices: int, edges: Sequence[Edge]) -> tuple[tuple[int, ...], int, int]:
    """(sorted degree sequence, triangle count, degeneracy). Every surface statistic the leak check uses -
    vertex and edge counts, density, degree min / max / mean / sd, isolated vertices, triangles,
    degeneracy - is a function of it."""
    adj = adjacency(num_vertices, edges)
    degrees = tuple(sorted(a.bit_count() for a in adj))
    return degrees, triangle_count(num_vertices, edges), degeneracy(num_vertices, edges)


def spectral_profile(num_vertices: int, edges: Sequence[Edge]) -> np.ndarray:
    """The spectral statistics a twin must match (issue 31): the adjacency matrix's two smallest and its largest
    eigenvalue (Hoffman's and Wilf's bounds on chi come from them) and the Laplacian's second smallest."""
    a = np.zeros((num_vertices, num_vertices))
    for u, v in edges:
        a[u - 1, v - 1] = a[v - 1, u - 1] = 1.0
    adj = np.linalg.eigvalsh(a)
    lap = np.linalg.eigvalsh(np.diag(a.sum(1)) - a)
    return snap([adj[0], adj[1], adj[-1], lap[1]])


def _matrix(num_vertices: int, edges: Sequence[Edge]) -> np.ndarray:
    a = np.zeros((num_vertices, num_vertices))
    if edges:
        idx = np.asarray(edges) - 1
        a[idx[:, 0], idx[:, 1]] = a[idx[:, 1], idx[:, 0]] = 1.0
    return a


def pair_features(num_vertices: int, edges: Sequence[Edge]) -> tuple[np.ndarray, int]:
    """(the statistics the two graphs of a pair match within PAIR_TOL, triangle count): the adjacency matrix's two
    smallest and three largest eigenvalues, the Laplacian's second smallest and largest, and the average local
    clustering (x CLUSTERING_SCALE). Entries 0, 1, 2 and 5 are `spectral_profile`'s."""
    a = _matrix(num_vertices, edges)
    deg = a.sum(1)
    at_vertex = ((a @ a) * a).sum(1) / 2  # triangles through each vertex
    wedges = deg * (deg - 1) / 2
    clustering = float(np.where(wedges > 0, at_vertex / np.maximum(wedges, 1), 0.0).mean())
    adj, lap = np.linalg.eigvalsh(np.stack([a, np.diag(deg) - a]))  # one call: the walk's hot spot
    feats = snap([adj[0], adj[1], adj[-1], adj[-2], adj[-3], lap[1], lap[-1], CLUSTERING_SCALE * clustering])
    return feats, int(round(at_vertex.sum() / 3))


def short_cycles(num_vertices: int, edges: Sequence[Edge]) -> tuple[int, int]:
    """(4-cycles, 5-cycles), from closed walks (Harary-Manvel)."""
    a = _matrix(num_vertices, edges)
    deg = a.sum(1)
    a2 = a @ a
    a3 = a2 @ a
    c5 = (np.trace(a3 @ a2) - 5 * np.trace(a3) - 5 * ((deg - 2) * np.diag(a3)).sum()) / 10
    c4 = (np.trace(a2 @ a2) - 2 * (deg**2).sum() + deg.sum()) / 8
    return int(round(c4)), int(round(c5))


def pair_shape(num_vertices: int, edges: Sequence[Edge]) -> np.ndarray:
    """What the pair walk brings the two graphs of a pair close on, beyond `pair_features` (mean absolute
    difference): the whole sorted adjacency spectrum, half the Laplacian's, half the sorted triangles at each
    vertex (the edges inside its neighbourhood), CLUSTERING_SCALE x the average clustering, and COUNT_WEIGHT x
    the 5-cycles, 4-cycles, most common neighbours of an edge, vertices on a triangle and diamonds (two
    triangles on an edge). Without the counts, NO graphs kept more 5-cycles and diamonds (an odd wheel's rim)."""
    a = _matrix(num_vertices, edges)
    deg = a.sum(1)
    a2 = a @ a
    a3 = a2 @ a
    at_vertex = (a2 * a).sum(1) / 2
    wedges = deg * (deg - 1) / 2
    clustering = float(np.where(wedges > 0, at_vertex / np.maximum(wedges, 1), 0.0).mean())
    adj, lap = np.linalg.eigvalsh(np.stack([a, np.diag(deg) - a]))
    # closed-walk counts (Harary-Manvel): 5-cycles from tr A^5, A^3's diagonal and degrees; 4-cycles from tr A^4
    c5 = (np.trace(a3 @ a2) - 5 * np.trace(a3) - 5 * ((deg - 2) * np.diag(a3)).sum()) / 10
    c4 = (np.trace(a2 @ a2) - 2 * (deg**2).sum() + deg.sum()) / 8
    codeg = a2 * a
    counts = [c5, c4, codeg.max(), float((at_vertex > 0).sum()), (codeg * (codeg - 1)).sum() / 4]
    return snap(np.concatenate([adj, 0.5 * lap, 0.5 * np.sort(at_vertex), [CLUSTERING_SCALE * clustering],
                                COUNT_WEIGHT * np.array(counts)]))


def core_profile(num_vertices: int, edges: Sequence[Edge], k: int = 3) -> tuple[int, int, tuple[int, ...]]:
    """(vertices, edges, sorted degrees) of the k-core: the graph left after removing vertices of degree < k
    until none is left. Whether the graph is k-colourable is decided on its k-core alone."""
    adj = adjacency(num_vertices, edges)
    alive = (1 << num_vertices) - 1
    changed = True
    while changed:
        changed = False
        for v in range(num_vertices):
            if alive >> v & 1 and (adj[v] & alive).bit_count() < k:
                alive &= ~(1 << v)
                changed = True
    degrees = tuple(sorted((adj[v] & alive).bit_count() for v in range(num_vertices) if alive >> v & 1))
    return len(degrees), sum(degrees) // 2, degrees


@functools.cache
def _graphlet_classes(size: int) -> tuple[np.ndarray, int]:
    """(for every labelled graph on `size` vertices - bit i of the index is the i-th pair of
    combinations(range(size), 2) - the number of its isomorphism class among the connected ones, -1 when
    disconnected; how many classes). Canonical form: the smallest mask over all vertex permutations."""
    pairs = list(itertools.combinations(range(size), 2))
    slot = {pq: i for i, pq in enumerate(pairs)}
    perms = list(itertools.permutations(range(size)))

    def canon(mask: int) -> int:
        return min(sum(1 << slot[(min(p[u], p[v]), max(p[u], p[v]))] for i, (u, v) in enumerate(pairs) if mask >> i & 1)
                   for p in perms)

    def connected(mask: int) -> bool:
        reach, todo = {0}, [0]
        while todo:
            u = todo.pop()
            for i, (p, q) in enumerate(pairs):
                if mask >> i & 1 and u in (p, q):
                    w = q if u == p else p
                    if w not in reach:
                        reach.add(w)
                        todo.append(w)
        return len(reach) == size

    canons = [canon(m) for m in range(1 << len(pairs))]
    kinds = sorted({c for m, c in enumerate(canons) if connected(m)})
    index = {c: i for i, c in enumerate(kinds)}
    return np.array([index.get(c, -1) for c in canons]), len(kinds)


@functools.cache
def _subsets(n: int, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    subs = np.array(list(itertools.combinations(range(n), size)), dtype=np.intp)
    pairs = np.array(list(itertools.combinations(range(size), 2)))
    return subs[:, pairs[:, 0]], subs[:, pairs[:, 1]], 1 << np.arange(len(pairs))


def graphlet_counts(num_vertices: int, edges: Sequence[Edge], size: int) -> np.ndarray:
    """How many induced connected subgraphs on `size` vertices the graph has, per isomorphism class."""
    table, kinds = _graphlet_classes(size)
    left, right, bits = _subsets(num_vertices, size)
    a = _matrix(num_vertices, edges).astype(np.intp)
    cls = table[(a[left, right] * bits).sum(1)]
    return np.bincount(cls[cls >= 0], minlength=kinds).astype(float)
