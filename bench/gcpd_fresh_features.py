"""A second held-out feature family for GCP-D (issue 31: "expect the reproduction to be checked on features you have
not seen"), for `bench_decision_leaks.py --fresh`.

The first held-out family (`gcpd_heldout_features`) has been read by the generator's tuning since it was added
(`gcpd_moves` weighs induced-subgraph counts a little), so it no longer stands for features nobody tuned on. This
family was written down on 2026-12-05, before any generator was measured against it, as a check, the way a
reviewer's own features would be. What it found then steered one experiment (GCP-D's odd-antihole seeds,
docs/deviations.md), so the third family below (`--fresh2`) is now the one nothing has been chosen by. Every
feature is a count or statistic that no solver constructs (no colouring, independent set, clique or cycle cover):

- chordless (induced) cycles by length 3..15 (networkx `chordless_cycles`); odd holes are what separate perfect
  graphs, which a colouring-aware reviewer would reach for;
- the non-backtracking operator's spectrum through its 2n x 2n Ihara-Bass form [[A, I - D], [I, 0]]: the moduli,
  sorted, and the real parts, sorted;
- the distance matrix's spectrum (unreachable pairs at distance n);
- betweenness and closeness centrality, each sorted over the vertices;
- the matching polynomial's coefficients (the number of j-edge matchings, j = 0..7);
- the sizes and edge counts of each vertex's radius-2 ego network, sorted;
- a histogram of all induced 6-vertex subgraphs over 64 buckets of an isomorphism invariant (edges, sorted degrees,
  closed 3-, 4- and 5-walks).
"""

from __future__ import annotations

import functools
import hashlib
import itertools

import networkx as nx
import numpy as np

MAX_CYCLE = 15
MAX_MATCHING = 7
SIX_BUCKETS = 64


def _graph(n: int, edges: list[tuple[int, int]]) -> nx.Graph:
    g = nx.Graph()
    g.add_nodes_from(range(n))
    g.add_edges_from((u - 1, v - 1) for u, v in edges)
    return g


def _matchings(n: int, nbrs: list[int]) -> list[int]:
    """How many matchings of j edges, j = 0..MAX_MATCHING (memoised over the set of unmatched vertices)."""

    @functools.cache
    def count(left: int) -> tuple[int, ...]:
        if not left:
            return (1,) + (0,) * MAX_MATCHING
        v = (left & -left).bit_length() - 1
        rest = left & ~(1 << v)
        total = list(count(rest))  # v unmatched
        cand = nbrs[v] & rest
        while cand:
            w = (cand & -cand).bit_length() - 1
            cand &= cand - 1
            for j, c in enumerate(count(rest & ~(1 << w))[:MAX_MATCHING]):
                total[j + 1] += c
        return tuple(total)

    return list(count((1 << n) - 1))


def _induced_histogram(a: np.ndarray, size: int, walks: int, buckets: int = SIX_BUCKETS) -> list[float]:
    """How many induced subgraphs on `size` vertices fall in each of `buckets` hash buckets of an isomorphism
    invariant: the sorted degrees and the closed walks of lengths 3 .. walks + 2 (traces of the powers)."""
    subsets = np.array(list(itertools.combinations(range(len(a)), size)))
    sub = a[subsets[:, :, None], subsets[:, None, :]]  # (subsets, size, size)
    deg = np.sort(sub.sum(2), axis=1)
    powers = [sub @ sub]
    for _ in range(walks):
        powers.append(powers[-1] @ sub)
    traces = np.stack([np.trace(p, axis1=1, axis2=2) for p in powers[1:]], axis=1)
    keys = np.concatenate([deg, traces], axis=1).astype(int)
    hist = np.zeros(buckets)
    uniq, counts = np.unique(keys, axis=0, return_counts=True)
    for key, c in zip(uniq, counts, strict=True):
        bucket = int.from_bytes(hashlib.blake2b(key.tobytes(), digest_size=4).digest(), "big") % buckets
        hist[bucket] += c
    return list(hist)


def gcpd_fresh_features(n: int, edges: list[tuple[int, int]]) -> list[float]:
    g = _graph(n, edges)
    a = nx.to_numpy_array(g, nodelist=range(n))
    deg = a.sum(1)
    holes = np.zeros(MAX_CYCLE - 2)
    for cycle in nx.chordless_cycles(g, length_bound=MAX_CYCLE):
        holes[len(cycle) - 3] += 1
    ihara = np.block([[a, np.eye(n) - np.diag(deg)], [np.eye(n), np.zeros((n, n))]])
    nb = np.linalg.eigvals(ihara)
    dist = np.full((n, n), float(n))
    for u, row in nx.all_pairs_shortest_path_length(g):
        for v, d in row.items():
            dist[u, v] = d
    betweenness = sorted(nx.betweenness_centrality(g).values())
    closeness = sorted(nx.closeness_centrality(g).values())
    nbrs = [sum(1 << w for w in g[v]) for v in range(n)]
    ego = sorted((len(h), h.number_of_edges()) for h in (nx.ego_graph(g, v, radius=2) for v in range(n)))
    return [
        *holes, *np.sort(np.abs(nb)), *np.sort(nb.real), *np.linalg.eigvalsh(dist), *betweenness, *closeness,
        *_matchings(n, nbrs), *(s for s, _ in ego), *(e for _, e in ego), *_induced_histogram(a, 6, 3),
    ]


# ---- a third family (`--fresh2`), written down on 2026-12-05 after the second had been read (it steered an
# experiment, docs/deviations.md) and before any generator was measured on this one; nothing is to be tuned by it.
SEVEN_BUCKETS = 64
MAX_PATH = 7
LINE_EIGS = 8
MAX_JOINT_DEGREE = 7


def _induced_paths(n: int, nbrs: list[int]) -> list[int]:
    """How many induced paths with 1..MAX_PATH edges (each path counted once, not once per direction)."""
    counts = [0] * (MAX_PATH + 1)

    def extend(path_mask: int, last: int, inner: int, length: int) -> None:
        # `inner`: the path's vertices other than `last`, none of which the next vertex may touch
        if length:
            counts[length] += 1
        if length == MAX_PATH:
            return
        cand = nbrs[last] & ~path_mask
        while cand:
            w = (cand & -cand).bit_length() - 1
            cand &= cand - 1
            if not nbrs[w] & inner:
                extend(path_mask | 1 << w, w, inner | 1 << last, length + 1)

    for v in range(n):
        extend(1 << v, v, 0, 0)
    return [c // 2 for c in counts[1:]]


def _girths(g: nx.Graph) -> tuple[float, float]:
    """(girth, odd girth), 0 where there is no such cycle: the shortest cycle through each vertex by BFS."""
    best, best_odd = 0, 0
    for s in g:
        dist = {s: 0}
        parent = {s: None}
        queue = [s]
        for u in queue:
            for w in g[u]:
                if w not in dist:
                    dist[w], parent[w] = dist[u] + 1, u
                    queue.append(w)
                elif parent[u] != w:
                    length = dist[u] + dist[w] + 1
                    best = length if not best else min(best, length)
                    if length % 2:
                        best_odd = length if not best_odd else min(best_odd, length)
    return float(best), float(best_odd)


def gcpd_fresh2_features(n: int, edges: list[tuple[int, int]]) -> list[float]:
    """Induced paths by length, the line graph's extreme eigenvalues and spectral moments, biconnected
    structure (blocks, their sizes, cut vertices, bridges), girth and odd girth, the joint degree counts (edges
    between degree classes up to MAX_JOINT_DEGREE) and a histogram of the induced 7-vertex subgraphs."""
    g = _graph(n, edges)
    a = nx.to_numpy_array(g, nodelist=range(n))
    nbrs = [sum(1 << w for w in g[v]) for v in range(n)]
    line = nx.to_numpy_array(nx.line_graph(g)) if edges else np.zeros((1, 1))
    le = np.sort(np.linalg.eigvalsh(line))
    pad = np.zeros(LINE_EIGS)
    low, high = pad.copy(), pad.copy()
    low[: min(LINE_EIGS, len(le))] = le[:LINE_EIGS]
    high[: min(LINE_EIGS, len(le))] = le[::-1][:LINE_EIGS]
    moments = [float((le**p).sum()) for p in (2, 3, 4, 5, 6)]
    blocks = sorted((len(b) for b in nx.biconnected_components(g)), reverse=True) + [0, 0, 0]
    deg = a.sum(1).astype(int)
    joint = np.zeros((MAX_JOINT_DEGREE + 1, MAX_JOINT_DEGREE + 1))
    for u, v in g.edges:
        x, y = sorted((min(deg[u], MAX_JOINT_DEGREE), min(deg[v], MAX_JOINT_DEGREE)))
        joint[x, y] += 1
    return [
        *_induced_paths(n, nbrs), *low, *high, *moments, float(len(blocks) - 3), *blocks[:3],
        float(len(list(nx.articulation_points(g)))), float(len(list(nx.bridges(g)))), *_girths(g),
        *joint[np.triu_indices(MAX_JOINT_DEGREE + 1)], *_induced_histogram(a, 7, 4, SEVEN_BUCKETS),
    ]
