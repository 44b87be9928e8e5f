"""bench/gcpd_fresh_features.py, the leak bench's second held-out family: its counts against independent methods
(matchings enumerated from edge subsets, chordless cycles of known graphs, the 6-vertex histogram's total), and one
vector length per graph size, since the learners need a fixed width per level."""

from __future__ import annotations

import itertools
import random
import sys
from math import comb

import networkx as nx
import pytest
from conftest import PROJECT

sys.path.insert(0, str(PROJECT))
from bench.gcpd_fresh_features import (  # noqa: E402
    MAX_CYCLE,
    MAX_MATCHING,
    MAX_PATH,
    SEVEN_BUCKETS,
    SIX_BUCKETS,
    _girths,
    _induced_paths,
    _matchings,
    gcpd_fresh2_features,
    gcpd_fresh_features,
)


def _edges(g: nx.Graph) -> list[tuple[int, int]]:
    return sorted((min(u, v) + 1, max(u, v) + 1) for u, v in g.edges)


def _brute_matchings(g: nx.Graph) -> list[int]:
    counts = [0] * (MAX_MATCHING + 1)
    edges = list(g.edges)
    for j in range(MAX_MATCHING + 1):
        counts[j] = sum(len({v for e in sub for v in e}) == 2 * j for sub in itertools.combinations(edges, j))
    return counts


def _bitmasks(g: nx.Graph) -> list[int]:
    """Each vertex's neighbours as a bit mask, the form the bench's counters take."""
    return [sum(1 << w for w in g[v]) for v in range(g.number_of_nodes())]


def test_known_graphs_chordless_cycles_and_matchings():
    # Petersen: 12 pentagons and 10 hexagons are its chordless cycles (girth 5, and every 6-cycle is induced);
    # its perfect matchings number 6.
    p = nx.petersen_graph()
    f = gcpd_fresh_features(10, _edges(p))
    holes = f[: MAX_CYCLE - 2]
    assert holes[5 - 3] == 12 and holes[6 - 3] == 10 and holes[0] == 0
    assert _matchings(10, _bitmasks(p))[5] == 6
    # The 5-wheel: its rim is the only chordless cycle longer than a triangle, and 5 triangles.
    w = nx.wheel_graph(6)
    holes = gcpd_fresh_features(6, _edges(w))[: MAX_CYCLE - 2]
    assert holes[0] == 5 and holes[5 - 3] == 1 and sum(holes) == 6


@pytest.mark.parametrize(("family", "size", "buckets"), [(gcpd_fresh_features, 6, SIX_BUCKETS),
                                                    (gcpd_fresh2_features, 7, SEVEN_BUCKETS)])
def test_each_family_has_one_width_per_vertex_count_and_its_histogram_counts_every_subset(family, size, buckets):
    rng = random.Random(size)
    for n in (10, 11, 15):
        widths = set()
        for _ in range(4):
            g = nx.gnm_random_graph(n, rng.randint(n, 2 * n), seed=rng.randrange(10**6))
            f = family(n, _edges(g))
            widths.add(len(f))
            assert sum(f[-buckets:]) == comb(n, size)
        assert len(widths) == 1


def _brute_induced_paths(g: nx.Graph) -> list[int]:
    """Induced paths by edge count, from every vertex subset that induces a path (a tree with max degree 2)."""
    counts = [0] * MAX_PATH
    for size in range(2, MAX_PATH + 2):
        for sub in itertools.combinations(g.nodes, size):
            h = g.subgraph(sub)
            if nx.is_connected(h) and h.number_of_edges() == size - 1 and max(d for _, d in h.degree) <= 2:
                counts[size - 2] += 1
    return counts


@pytest.mark.parametrize(("count", "brute", "m", "seed"),
                         [(_matchings, _brute_matchings, 13, seed) for seed in range(6)]
                         + [(_induced_paths, _brute_induced_paths, 12, seed) for seed in range(4)])
def test_counts_equal_an_enumeration_of_subsets(count, brute, m, seed):
    # matchings against every edge subset, induced paths against every vertex subset, on random 9-vertex graphs
    g = nx.gnm_random_graph(9, m, seed=seed)
    assert count(9, _bitmasks(g)) == brute(g)


def test_girth_and_odd_girth_of_known_graphs_and_of_networkx():
    assert _girths(nx.petersen_graph()) == (5, 5)
    assert _girths(nx.complete_bipartite_graph(3, 3)) == (4, 0)
    assert _girths(nx.mycielski_graph(4)) == (4, 5)  # the Grötzsch graph: no triangle, odd girth 5
    assert _girths(nx.path_graph(4)) == (0, 0)
    for seed in range(5):
        g = nx.gnm_random_graph(12, 18, seed=seed)
        assert _girths(g)[0] == nx.girth(g)
