"""evalcore.relaxations: the fractional chromatic number and the subtour LP against known values and independent
methods (the clique number and exact chromatic number around it, the LP with every subtour constraint written
out, Held-Karp's exact optimum)."""

from __future__ import annotations

import itertools
import random
from fractions import Fraction

import networkx as nx
import numpy as np
import pytest
from conftest import shared_or_skip
from scipy.optimize import linprog

from evalcore.graph_solvers import chromatic_number, held_karp, k_coloring
from evalcore.relaxations import fractional_chromatic, subtour_bound
from nphe4v.peer.read import read_peer
from nphe4v.tasks import gcpd, tspd


def _edges(g: nx.Graph) -> tuple[int, list[tuple[int, int]]]:
    label = {v: i + 1 for i, v in enumerate(g.nodes)}
    return g.number_of_nodes(), sorted(tuple(sorted((label[u], label[v]))) for u, v in g.edges)  # type: ignore[misc]


# Known fractional chromatic numbers: an odd cycle C_{2j+1}: 2 + 1/j, a Kneser graph K(n, r): n/r, a Mycielskian: x + 1/x (Larsen, Propp and Ullman), a wheel: 1 + its rim's.
KNOWN = [
    (nx.cycle_graph(5), Fraction(5, 2)),
    (nx.cycle_graph(7), Fraction(7, 3)),
    (nx.cycle_graph(6), Fraction(2)),
    (nx.petersen_graph(), Fraction(5, 2)),  # the Kneser graph K(5, 2)
    (nx.mycielski_graph(4), Fraction(29, 10)),  # the Grötzsch graph: 5/2 + 2/5
    (nx.wheel_graph(6), Fraction(7, 2)),  # hub + C5
    (nx.complete_graph(4), Fraction(4)),
    (nx.complete_bipartite_graph(3, 3), Fraction(2)),
    (nx.empty_graph(3), Fraction(1)),
    (nx.empty_graph(0), Fraction(0)),
]


@pytest.mark.parametrize(("graph", "value"), KNOWN, ids=[str(v) for _, v in KNOWN])
def test_fractional_chromatic_number_known_values(graph: nx.Graph, value: Fraction) -> None:
    assert fractional_chromatic(*_edges(graph)) == pytest.approx(float(value), abs=1e-9)


def test_chi_f_lies_between_clique_and_chromatic_number() -> None:
    rng = random.Random(5)
    for _ in range(120):
        n = rng.randint(1, 10)
        p = rng.random()
        edges = [(u, v) for u, v in itertools.combinations(range(1, n + 1), 2) if rng.random() < p]
        g = nx.Graph()
        g.add_nodes_from(range(1, n + 1))
        g.add_edges_from(edges)
        omega = max(len(c) for c in nx.find_cliques(g))
        chi_f = fractional_chromatic(n, edges)
        assert omega - 1e-9 <= chi_f <= chromatic_number(n, edges)[0] + 1e-9


def _subtour_lp_every_cut(dist: list[list[float]]) -> float:
    """The subtour LP with every cut written out (every vertex set of 2..n-2 cities not holding city 0):
    independent of the cutting planes."""
    n = len(dist)
    pairs = list(itertools.combinations(range(n), 2))
    degree = np.array([[1.0 if c in p else 0.0 for p in pairs] for c in range(n)])
    cuts = []
    for size in range(2, n - 1):
        for side in itertools.combinations(range(1, n), size):
            inside = set(side)
            cuts.append([-1.0 if (i in inside) != (j in inside) else 0.0 for i, j in pairs])
    res = linprog([dist[i][j] for i, j in pairs], A_ub=np.array(cuts) if cuts else None,
                  b_ub=np.full(len(cuts), -2.0) if cuts else None, A_eq=degree, b_eq=np.full(n, 2.0), bounds=(0, 1),
                  method="highs")
    return float(res.fun)


def test_subtour_bound_is_the_lp_with_every_cut_and_at_most_the_optimum() -> None:
    rng = random.Random(11)
    tight = 0
    for trial in range(60):
        n = rng.randint(4, 8)
        if trial % 2:  # points in the plane, 2 decimals (as TSP-D)
            pts = [(rng.random() * 100, rng.random() * 100) for _ in range(n)]
            dist = [[round(float(np.hypot(a[0] - b[0], a[1] - b[1])), 2) for b in pts] for a in pts]
        else:  # any symmetric weights: not a metric, where the LP is loose more often
            dist = [[0.0] * n for _ in range(n)]
            for i, j in itertools.combinations(range(n), 2):
                dist[i][j] = dist[j][i] = float(rng.randint(1, 20))
        lp = subtour_bound(dist)
        opt, _ = held_karp(dist)
        assert lp == pytest.approx(_subtour_lp_every_cut(dist), abs=1e-6)
        assert lp <= opt + 1e-6
        tight += abs(lp - opt) < 1e-6
    assert 0 < tight < 60  # both tight and loose instances were seen



def test_the_relaxations_prove_the_papers_gcpd_no_instances_and_never_a_yes_one() -> None:
    """docs/deviations.md, "What the LP relaxations decide": on the NPHardEval4V repository's GCP-D files the
    fractional chromatic number exceeds k for every NO instance (26 of 100) and for no YES instance."""
    root = shared_or_skip("peers", "nphardeval4v")
    records = read_peer("nphardeval4v", root, tasks=["GCP-D"])
    answers = {True: 0, False: 0}  # YES / NO instances
    proved = {True: 0, False: 0}  # of them, proved NO by chi_f > k
    for r in records:
        d = gcpd.GCPDData.model_validate(r.data)
        yes = k_coloring(d.num_vertices, d.edges, d.k) is not None
        answers[yes] += 1
        proved[yes] += fractional_chromatic(d.num_vertices, d.edges) > d.k + 1e-6
    assert answers == {True: 74, False: 26}
    assert proved == {True: 0, False: 26}


def test_generated_decision_instances_relaxation_below_exact() -> None:
    """On generated TSP-D and GCP-D instances (levels 1 and 10) the relaxation never exceeds the exact value, so it
    never proves a YES instance NO."""
    for level in (1, 10):
        for i in range(4):
            t = tspd.generate(level, random.Random(f"relax-{level}-{i}"))
            assert subtour_bound(t.distances) <= held_karp(t.distances)[0] + 1e-6
            g = gcpd.generate(level, random.Random(f"relax-{level}-{i}"))
            chi = 3 if k_coloring(g.num_vertices, g.edges, 3) is not None else 4
            assert fractional_chromatic(g.num_vertices, g.edges) <= chi + 1e-6
