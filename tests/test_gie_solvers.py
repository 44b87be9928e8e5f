"""GraphVerse exact solvers, each cross-checked against an independent method on seeded random graphs.

Families: networkx G(n, p) (p 0.2..0.7) and random trees plus rings (molecule-like), n 4..12, labelled with
random 3-letter codes so that sorted-label order is unrelated to structure. Independent methods: networkx
routines where exact, brute force over subsets / permutations / simple cycles, and scipy's MILP.
"""

from __future__ import annotations

import itertools
import random
import string

import networkx as nx
import numpy as np
import pytest
from scipy.optimize import Bounds, LinearConstraint, milp

from evalcore.schema import Gold
from gie import edit_distance
from gie.answers import solve
from gie.catalogue import SINGLE_TASKS
from gie.tasks.cn import common_neighbors
from gie.tasks.col import chromatic
from gie.tasks.cyc import longest_cycle
from gie.tasks.diam import diameter
from gie.tasks.mcp import max_clique
from gie.tasks.mis import max_independent_set
from gie.tasks.mvc import min_vertex_cover
from gie.tasks.sd import shortest_distance
from gie.tasks.tsp import tsp

# ----------------------------------------------------------------------------------------------- graphs


def codes(n: int, rng: random.Random) -> list[str]:
    out: set[str] = set()
    while len(out) < n:
        out.add("".join(rng.choice(string.ascii_uppercase) for _ in range(3)))
    return rng.sample(sorted(out), n)


def labelled(g: nx.Graph, rng: random.Random, weighted: bool = True) -> nx.Graph:
    names = codes(g.number_of_nodes(), rng)
    h = nx.relabel_nodes(g, dict(zip(sorted(g.nodes), names, strict=True)))
    if weighted:
        for u, v in h.edges:
            h[u][v]["weight"] = rng.randint(1, 9)
    return h


def tree_with_rings(n: int, rng: random.Random) -> nx.Graph:
    g = nx.random_labeled_tree(n, seed=rng.randrange(2**31))
    non_edges = [e for e in itertools.combinations(range(n), 2) if not g.has_edge(*e)]
    for e in rng.sample(non_edges, min(len(non_edges), rng.randint(0, max(1, n // 4)))):
        g.add_edge(*e)
    return g


def random_graph(seed: int, n_lo: int = 4, n_hi: int = 12) -> nx.Graph:
    rng = random.Random(seed)
    n = rng.randint(n_lo, n_hi)
    if seed % 3 == 0:
        g = tree_with_rings(n, rng)
    else:
        g = nx.gnp_random_graph(n, rng.choice([0.2, 0.35, 0.5, 0.7]), seed=rng.randrange(2**31))
    return labelled(g, rng)


def graphs(count: int, offset: int, **kw: int) -> list[nx.Graph]:
    return [random_graph(offset + i, **kw) for i in range(count)]


def weight(g: nx.Graph, seq: list[str]) -> int:
    return sum(g[a][b]["weight"] for a, b in zip(seq, seq[1:], strict=False))


# ----------------------------------------------------------------------------------------------- MILP


def milp_vertex_cover(g: nx.Graph) -> int:
    nodes = sorted(g)
    idx = {v: i for i, v in enumerate(nodes)}
    if g.number_of_edges() == 0:
        return 0
    a = np.zeros((g.number_of_edges(), len(nodes)))
    for r, (u, v) in enumerate(g.edges):
        a[r, idx[u]] = a[r, idx[v]] = 1
    res = milp(np.ones(len(nodes)), constraints=LinearConstraint(a, lb=1), integrality=np.ones(len(nodes)),
               bounds=Bounds(0, 1))
    return round(res.fun)


def milp_independent_set(g: nx.Graph) -> int:
    nodes = sorted(g)
    idx = {v: i for i, v in enumerate(nodes)}
    cons = []
    if g.number_of_edges():
        a = np.zeros((g.number_of_edges(), len(nodes)))
        for r, (u, v) in enumerate(g.edges):
            a[r, idx[u]] = a[r, idx[v]] = 1
        cons = [LinearConstraint(a, ub=1)]
    res = milp(-np.ones(len(nodes)), constraints=cons, integrality=np.ones(len(nodes)), bounds=Bounds(0, 1))
    return round(-res.fun)


def milp_chromatic(g: nx.Graph) -> int:
    """x[v, c] (v has colour c), y[c] (colour c used); minimise sum y."""
    nodes = sorted(g)
    n = len(nodes)
    k = max(nx.greedy_color(g).values(), default=-1) + 1
    idx = {v: i for i, v in enumerate(nodes)}
    nvar = n * k + k

    def x(v: int, c: int) -> int:
        return v * k + c

    rows, lbs, ubs = [], [], []
    for v in range(n):  # exactly one colour
        r = np.zeros(nvar)
        r[[x(v, c) for c in range(k)]] = 1
        rows.append(r), lbs.append(1), ubs.append(1)
    for u, v in g.edges:  # x_u,c + x_v,c <= y_c
        for c in range(k):
            r = np.zeros(nvar)
            r[x(idx[u], c)] = r[x(idx[v], c)] = 1
            r[n * k + c] = -1
            rows.append(r), lbs.append(-np.inf), ubs.append(0)
    for v in range(n):  # x_v,c <= y_c
        for c in range(k):
            r = np.zeros(nvar)
            r[x(v, c)], r[n * k + c] = 1, -1
            rows.append(r), lbs.append(-np.inf), ubs.append(0)
    cost = np.zeros(nvar)
    cost[n * k:] = 1
    res = milp(cost, constraints=LinearConstraint(np.array(rows), lbs, ubs), integrality=np.ones(nvar),
               bounds=Bounds(0, 1))
    return round(res.fun)


# ----------------------------------------------------------------------------------------------- Poly


def test_shortest_distance_matches_dijkstra_and_is_lexicographically_first() -> None:
    for g in graphs(60, 1000):
        nodes = sorted(g)
        for s, t in itertools.combinations(nodes[:6], 2):
            d, path = shortest_distance(g, s, t)
            if not nx.has_path(g, s, t):
                assert (d, path) == (None, None)
                continue
            assert d == nx.dijkstra_path_length(g, s, t)
            assert path[0] == s and path[-1] == t and weight(g, path) == d
            assert path == min(nx.all_shortest_paths(g, s, t, weight="weight"))
    g = nx.Graph([("A", "B")])
    assert shortest_distance(g, "A", "B") == (1, ["A", "B"])  # weight defaults to 1
    assert shortest_distance(g, "A", "A") == (0, ["A"])
    with pytest.raises(ValueError, match="not in the graph"):
        shortest_distance(g, "A", "Z")


def test_diameter_matches_all_pairs() -> None:
    checked = 0
    for g in graphs(80, 2000):
        if not nx.is_connected(g):
            with pytest.raises(ValueError, match="connected"):
                diameter(g)
            continue
        d, path = diameter(g)
        assert d == max(max(r.values()) for _, r in nx.all_pairs_shortest_path_length(g))
        assert d == nx.diameter(g) and len(path) == d + 1
        assert all(g.has_edge(a, b) for a, b in zip(path, path[1:], strict=False))
        assert nx.shortest_path_length(g, path[0], path[-1]) == d
        checked += 1
    assert checked > 30
    assert diameter(nx.Graph([("A", "A")])) == (0, ["A"])


def test_common_neighbors_brute_force() -> None:
    for g in graphs(40, 3000):
        for s, t in itertools.permutations(sorted(g)[:5], 2):
            brute = sorted(w for w in g if w not in (s, t) and g.has_edge(s, w) and g.has_edge(t, w))
            assert common_neighbors(g, s, t) == brute
            assert common_neighbors(g, s, t) == sorted(nx.common_neighbors(g, s, t))


# ----------------------------------------------------------------------------------------------- TSP


def brute_tsp(g: nx.Graph) -> int | None:
    nodes = sorted(g)
    best = None
    for perm in itertools.permutations(nodes[1:]):
        tour = [nodes[0], *perm, nodes[0]]
        if all(g.has_edge(a, b) for a, b in zip(tour, tour[1:], strict=False)):
            w = weight(g, tour)
            best = w if best is None else min(best, w)
    return best


def test_tsp_matches_brute_force_on_incomplete_graphs() -> None:
    found = none = 0
    for g in graphs(90, 4000, n_lo=4, n_hi=8):
        length, tour = tsp(g)
        expected = brute_tsp(g)
        assert length == expected
        if expected is None:
            assert tour is None
            none += 1
            continue
        found += 1
        assert tour[0] == tour[-1] == min(g) and sorted(tour[:-1]) == sorted(g)
        assert all(g.has_edge(a, b) for a, b in zip(tour, tour[1:], strict=False))
        assert weight(g, tour) == length
    assert found > 15 and none > 15  # both outcomes are exercised


def test_tsp_complete_graphs_and_small_cases() -> None:
    rng = random.Random(7)
    for n in range(3, 9):
        g = labelled(nx.complete_graph(n), rng)
        assert tsp(g)[0] == brute_tsp(g)
    assert tsp(nx.Graph()) == (None, None)
    single = nx.Graph()
    single.add_node("A")
    assert tsp(single) == (0, ["A", "A"])
    assert tsp(nx.Graph([("A", "B", {"weight": 3})])) == (6, ["A", "B", "A"])
    assert tsp(nx.path_graph(["A", "B", "C"])) == (None, None)
    # Connected, min degree >= 2, yet not Hamiltonian: the DP itself must report "no tour".
    for g in (nx.complete_bipartite_graph(2, 3), nx.petersen_graph()):
        assert tsp(labelled(g, rng)) == (None, None)


def test_tsp_n12_is_fast() -> None:
    rng = random.Random(11)
    for p in (0.5, 0.8, 1.0):
        g = labelled(nx.gnp_random_graph(12, p, seed=rng.randrange(10**6)), rng)
        length, tour = tsp(g)
        assert tour is None or weight(g, tour) == length


# ----------------------------------------------------------------------------------------------- sets


def is_clique(g: nx.Graph, nodes: list[str]) -> bool:
    return all(g.has_edge(a, b) for a, b in itertools.combinations(nodes, 2))


def brute_max_clique(g: nx.Graph) -> int:
    nodes = sorted(g)
    for k in range(len(nodes), 0, -1):
        if any(is_clique(g, list(c)) for c in itertools.combinations(nodes, k)):
            return k
    return 0


def test_max_clique_matches_find_cliques_and_brute_force() -> None:
    for i, g in enumerate(graphs(120, 5000)):
        clique = max_clique(g)
        assert is_clique(g, clique) and len(set(clique)) == len(clique)
        assert len(clique) == max(len(c) for c in nx.find_cliques(g))
        if i < 40:
            assert len(clique) == brute_max_clique(g)


def test_independent_set_and_cover_match_complement_cliques() -> None:
    for g in graphs(120, 6000):
        mis, mvc = max_independent_set(g), min_vertex_cover(g)
        assert not any(g.has_edge(a, b) for a, b in itertools.combinations(mis, 2))
        assert all(u in mvc or v in mvc for u, v in g.edges)
        alpha = max(len(c) for c in nx.find_cliques(nx.complement(g)))
        assert len(mis) == alpha
        assert len(mvc) == g.number_of_nodes() - alpha
        assert sorted(mis + mvc) == sorted(g)


def test_sets_and_colouring_match_milp() -> None:
    for g in graphs(30, 7000, n_lo=4, n_hi=9):
        assert len(min_vertex_cover(g)) == milp_vertex_cover(g)
        assert len(max_independent_set(g)) == milp_independent_set(g)
        assert chromatic(g)[0] == milp_chromatic(g)


def test_set_solvers_on_30_nodes_are_fast() -> None:
    rng = random.Random(3)
    for p in (0.1, 0.3, 0.6):
        g = labelled(nx.gnp_random_graph(30, p, seed=rng.randrange(10**6)), rng)
        mis, clique = max_independent_set(g), max_clique(g)
        assert len(mis) == max(len(c) for c in nx.find_cliques(nx.complement(g)))
        assert len(clique) == max(len(c) for c in nx.find_cliques(g))


# ----------------------------------------------------------------------------------------------- colouring


def brute_chromatic(g: nx.Graph) -> int:
    """Fewest colours over every partition of the nodes (restricted growth strings: no colour symmetry)."""
    nodes = sorted(g)
    n = len(nodes)
    adj = [[g.has_edge(a, b) for b in nodes] for a in nodes]
    best = n

    def assign(i: int, colours: list[int], used: int) -> None:
        nonlocal best
        if used >= best:
            return
        if i == n:
            best = used
            return
        for c in range(used + 1):
            if all(not adj[i][j] or colours[j] != c for j in range(i)):
                colours.append(c)
                assign(i + 1, colours, max(used, c + 1))
                colours.pop()

    assign(0, [], 0)
    return best


def test_chromatic_matches_brute_force_and_milp() -> None:
    for i, g in enumerate(graphs(100, 8000)):
        k, colouring = chromatic(g)
        assert set(colouring) == set(g) and set(colouring.values()) == set(range(1, k + 1))
        assert all(colouring[u] != colouring[v] for u, v in g.edges)
        assert k >= max(len(c) for c in nx.find_cliques(g))
        assert k == brute_chromatic(g)
        if i % 4 == 0:
            assert k == milp_chromatic(g)


# ----------------------------------------------------------------------------------------------- cycle


def brute_longest_cycle(g: nx.Graph) -> int:
    return max((len(c) for c in nx.simple_cycles(g) if len(c) >= 3), default=0)


def test_longest_cycle_matches_simple_cycles() -> None:
    forests = 0
    for g in graphs(150, 9000, n_lo=4, n_hi=10):
        length, cycle = longest_cycle(g)
        assert length == brute_longest_cycle(g)
        if length == 0:
            assert cycle is None and nx.is_forest(g)
            forests += 1
            continue
        assert cycle[0] == cycle[-1] == min(cycle) and len(cycle) == length + 1
        assert len(set(cycle[:-1])) == length
        assert all(g.has_edge(a, b) for a, b in zip(cycle, cycle[1:], strict=False))
    assert forests > 5


def test_longest_cycle_sparse_larger_graphs() -> None:
    # Molecule-like graphs up to n = 16: several blocks, where simple_cycles is still cheap.
    rng = random.Random(17)
    for _ in range(40):
        g = labelled(tree_with_rings(rng.randint(10, 16), rng), rng, weighted=False)
        assert longest_cycle(g)[0] == brute_longest_cycle(g)


def test_longest_cycle_small_and_worst_cases() -> None:
    assert longest_cycle(nx.path_graph(["A", "B", "C"])) == (0, None)
    assert longest_cycle(nx.Graph()) == (0, None)
    assert longest_cycle(nx.cycle_graph(["C", "A", "B"])) == (3, ["A", "B", "C", "A"])
    # Two triangles sharing a vertex: blocks of 3, never a 5-cycle.
    assert longest_cycle(nx.Graph([("A", "B"), ("B", "C"), ("C", "A"), ("C", "D"), ("D", "E"), ("E", "C")]))[0] == 3
    rng = random.Random(5)
    # Dense Hamiltonian n=16, and K(7,9) (dense, not Hamiltonian: the full subset DP runs).
    for g in (nx.gnp_random_graph(16, 0.5, seed=1), nx.complete_bipartite_graph(7, 9)):
        g = labelled(g, rng, weighted=False)
        length, cycle = longest_cycle(g)
        assert length == (16 if nx.is_bipartite(g) is False else 14)
        assert all(g.has_edge(a, b) for a, b in zip(cycle, cycle[1:], strict=False))


# ----------------------------------------------------------------------------------------------- solve


def shuffled_copy(g: nx.Graph, seed: int) -> nx.Graph:
    rng = random.Random(seed)
    nodes = list(g.nodes(data=True))
    edges = list(g.edges(data=True))
    rng.shuffle(nodes)
    rng.shuffle(edges)
    h = nx.Graph()
    h.add_nodes_from(nodes)
    h.add_edges_from((v, u, d) if rng.random() < 0.5 else (u, v, d) for u, v, d in edges)
    return h


def connected_graphs(count: int, offset: int) -> list[nx.Graph]:
    out = []
    seed = offset
    while len(out) < count:
        g = random_graph(seed)
        seed += 1
        if nx.is_connected(g):
            out.append(g)
    return out


def test_solve_shapes_values_and_determinism() -> None:
    for i, g in enumerate(connected_graphs(25, 10_000)):
        nodes = sorted(g)
        query = {"source": nodes[0], "target": nodes[-1]}
        for task in SINGLE_TASKS:
            q = query if task in ("SD", "CN") else {}
            gold = solve(task, [g], q)
            assert isinstance(gold, Gold)
            # Same graph, other insertion order: the very same gold.
            assert solve(task, [shuffled_copy(g, i)], q) == gold
        assert solve("SD", [g], query).answer["Distance"] == nx.dijkstra_path_length(g, *query.values())
        assert set(solve("MCP", [g], {}).answer) == {"Clique"}
        assert solve("MVC", [g], {}).value == len(g) - solve("MIS", [g], {}).value
        cyc = solve("CYC", [g], {})
        assert (cyc.answer["HasCycle"] == "NO") == (cyc.value == 0)
        col = solve("COL", [g], {})
        assert col.answer["NumColors"] == col.value


def test_solve_infeasible_and_errors() -> None:
    g = nx.Graph([("A", "B", {"weight": 2})])
    g.add_node("C")
    assert solve("SD", [g], {"source": "A", "target": "C"}) == Gold(answer={"Distance": None, "Path": []}, value=None)
    assert solve("TSP", [g], {}) == Gold(answer={"Tour": [], "Length": None}, value=None)
    assert solve("CYC", [g], {}).answer == {"HasCycle": "NO", "Cycle": []}
    with pytest.raises(ValueError, match="unknown task"):
        solve("XYZ", [g], {})
    with pytest.raises(ValueError, match="needs 2"):
        solve("GED", [g], {})


def test_solve_paired_tasks_delegate_to_paired() -> None:
    rng = random.Random(3)
    for _ in range(6):
        g1 = labelled(tree_with_rings(rng.randint(3, 6), rng), rng, weighted=False)
        g2 = labelled(tree_with_rings(rng.randint(3, 6), rng), rng, weighted=False)
        ged = solve("GED", [g1, g2], {})
        assert ged.value == ged.answer["Distance"] == edit_distance.solve_ged(g1, g2)[0]
        assert set(ged.answer["Mapping"]) <= set(g1)
        mcs = solve("MCS", [g1, g2], {})
        assert mcs.value == mcs.answer["Size"] == len(mcs.answer["Mapping"])
