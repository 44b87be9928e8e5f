"""Exact gold at the hard level's largest sizes, each checked by an independent method: TSP at 20 cities
(DFJ MILP vs Held-Karp), chromatic number and longest cycle at 30 nodes (vs an assignment MILP and vs
networkx's cycle enumeration), GED and MCS on 10-20 atom molecule pairs (A* vs the F2 MILP, MCS vs a
MILP of the induced common subgraph)."""

from __future__ import annotations

import random

import networkx as nx
import numpy as np
import pytest
from scipy.optimize import Bounds, LinearConstraint, milp

from evalcore.graph_solvers import held_karp_order
from gie import edit_distance
from gie.sources.registry import get_source
from gie.tasks import col as col_task
from gie.tasks import cyc as cyc_task
from gie.tasks import get_config
from gie.tasks import mcs as mcs_task
from gie.tasks import tsp as tsp_task
from gie.tasks.sampling import sample_pair, sample_single
from tests.test_gie_solvers import brute_longest_cycle, milp_chromatic


def _hard_single(task: str, seed: int) -> nx.Graph:
    return sample_single(get_config(task), random.Random(seed), "test", "hard")[1]


def _matrix(g: nx.Graph) -> np.ndarray:
    nodes = sorted(g)
    d = np.zeros((len(nodes), len(nodes)))
    for u, v, w in g.edges(data="weight"):
        i, j = nodes.index(u), nodes.index(v)
        d[i, j] = d[j, i] = w
    return d


def _tour_length(d: np.ndarray, order: list[int]) -> float:
    return float(sum(d[a, b] for a, b in zip(order, order[1:], strict=False)))


def test_tsp_hard_instances_match_held_karp():
    seen = 0
    for seed in range(6):
        g = _hard_single("TSP", seed)
        n = g.number_of_nodes()
        assert 10 <= n <= 20 and g.number_of_edges() == n * (n - 1) // 2
        length, tour = tsp_task.tsp(g)
        d = _matrix(g)
        assert length == _tour_length(d, held_karp_order(d))
        assert sorted(tour[:-1]) == sorted(g) and tour[0] == tour[-1]
        seen += 1
    assert seen == 6


def test_tsp_milp_matches_held_karp_at_20_cities():
    """The airports of the hard level rarely reach 20, so 20 real airports are taken directly."""
    src = get_source("us-airports")
    rng = random.Random(5)
    for _ in range(2):
        ids = rng.sample(sorted(src.adjacency), 20)
        g = nx.Graph()
        for i, u in enumerate(ids):
            for v in ids[i + 1 :]:
                g.add_edge(u, v, weight=src.weight(u, v))
        d = _matrix(g)
        milp_order = tsp_task._tsp_milp(20, d)
        assert milp_order is not None and sorted(milp_order[:-1]) == list(range(20))
        assert _tour_length(d, milp_order) == _tour_length(d, held_karp_order(d))
        assert tsp_task.tsp(g)[0] == _tour_length(d, held_karp_order(d))


@pytest.mark.parametrize("seed", range(4))
def test_chromatic_number_at_30_nodes_matches_milp(seed: int):
    rng = random.Random(seed)
    g = nx.gnp_random_graph(30, (0.15, 0.3, 0.45, 0.6)[seed], seed=rng.randrange(10**6))
    g = nx.relabel_nodes(g, {i: f"N{i:02d}" for i in g})
    k, colouring = col_task.chromatic(g)
    assert all(colouring[u] != colouring[v] for u, v in g.edges)
    assert k == milp_chromatic(g)


def test_chromatic_number_of_hard_col_samples_matches_milp():
    for seed in range(5):
        g = _hard_single("COL", seed)
        assert 15 <= g.number_of_nodes() <= 30
        assert col_task.chromatic(g)[0] == milp_chromatic(g)


def test_longest_cycle_of_hard_cyc_samples_matches_enumeration():
    for seed in range(5):
        g = _hard_single("CYC", seed)
        assert 15 <= g.number_of_nodes() <= 30
        length, cycle = cyc_task.longest_cycle(g)
        if length:
            assert all(g.has_edge(a, b) for a, b in zip(cycle, cycle[1:], strict=False))
        # simple_cycles enumerates every cycle: fine on the sparse samples (this also bounds the test)
        assert length == brute_longest_cycle(g)


def test_longest_cycle_at_30_nodes_known_by_construction():
    """30-node graphs whose longest cycle is known without search: a Hamiltonian block of b nodes with
    random chords, plus pendant nodes (on no cycle), or two such blocks sharing one cut vertex."""
    rng = random.Random(11)
    for _ in range(4):
        b = rng.randint(18, 28)
        g = nx.cycle_graph(b)
        for _ in range(b):
            g.add_edge(rng.randrange(b), rng.randrange(b))
        g.remove_edges_from(nx.selfloop_edges(g))
        for extra in range(b, 30):
            g.add_edge(extra, rng.randrange(extra))  # a tree hanging off the block
        g = nx.relabel_nodes(g, {i: f"N{i:02d}" for i in g})
        length, cycle = cyc_task.longest_cycle(g)
        assert length == b and all(g.has_edge(x, y) for x, y in zip(cycle, cycle[1:], strict=False))
    for b1 in (14, 16):
        g = nx.cycle_graph(b1)
        ring2 = [0, *range(b1, 30)]  # second block of 30 - b1 + 1 nodes through cut vertex 0
        nx.add_cycle(g, ring2)
        for _ in range(12):
            u, v = rng.sample(range(b1), 2)
            g.add_edge(u, v)
            u, v = rng.sample(ring2, 2)
            g.add_edge(u, v)
        assert g.number_of_nodes() == 30
        length, _ = cyc_task.longest_cycle(nx.relabel_nodes(g, {i: f"N{i:02d}" for i in g}))
        assert length == max(b1, len(ring2))


def milp_mcs(g1: nx.Graph, g2: nx.Graph) -> int:
    """Maximum common induced subgraph size by a MILP on pair variables x[u, a]: each node used at most
    once, and for u != v, a != b, x[u, a] + x[v, b] <= 1 whenever edge(u, v) != edge(a, b)."""
    n1, n2 = sorted(g1), sorted(g2)
    idx = {(u, a): k for k, (u, a) in enumerate((u, a) for u in n1 for a in n2)}
    rows = []
    for u in n1:
        r = np.zeros(len(idx))
        r[[idx[u, a] for a in n2]] = 1
        rows.append(r)
    for a in n2:
        r = np.zeros(len(idx))
        r[[idx[u, a] for u in n1]] = 1
        rows.append(r)
    for i, u in enumerate(n1):
        for v in n1[i + 1 :]:
            for a in n2:
                for b in n2:
                    if a != b and g1.has_edge(u, v) != g2.has_edge(a, b):
                        r = np.zeros(len(idx))
                        r[idx[u, a]] = r[idx[v, b]] = 1
                        rows.append(r)
    res = milp(-np.ones(len(idx)), constraints=LinearConstraint(np.array(rows), -np.inf, 1),
               integrality=np.ones(len(idx)), bounds=Bounds(0, 1))
    assert res.status == 0
    return round(-res.fun)


def test_ged_hard_pairs_match_milp():
    cfg = get_config("GED")
    for seed in range(3):
        _, (a, b), _ = sample_pair(cfg, random.Random(seed), "test", "hard")
        assert 10 <= a.number_of_nodes() <= 20
        cost, mapping = edit_distance.solve_ged(a, b)
        assert edit_distance.ged_cost(a, b, mapping) == cost
        assert edit_distance._ged_milp(a, b)[0] == cost


def test_mcs_hard_pairs_match_milp():
    cfg = get_config("MCS")
    checked = 0
    for seed in range(40):
        _, (a, b), _ = sample_pair(cfg, random.Random(seed), "test", "hard")
        assert 10 <= a.number_of_nodes() <= 20
        if max(a.number_of_nodes(), b.number_of_nodes()) > 12:
            continue  # the pair MILP is weak; 10-12 atoms keep it to seconds
        if checked == 3:
            break
        checked += 1
        size, mapping = mcs_task.solve_mcs(a, b)
        assert mcs_task.check_mcs_mapping(a, b, mapping) is None and len(mapping) == size
        assert milp_mcs(a, b) == size
    assert checked == 3
