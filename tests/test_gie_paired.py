"""Exact GED / MCS of gie.edit_distance and gie.tasks.mcs against independent references: networkx GED, an F2 MILP, brute force
over all (partial) injective mappings, and networkx ISMAGS for the maximum common induced subgraph."""

from __future__ import annotations

import itertools
import os
import random
from collections.abc import Iterator

import networkx as nx
import pytest
from rdkit import Chem, RDConfig, RDLogger

from gie import edit_distance
from gie.edit_distance import ged_cost, node_label, solve_ged
from gie.tasks.mcs import check_mcs_mapping, solve_mcs

Pair = tuple[nx.Graph, nx.Graph]


def _named(G: nx.Graph, prefix: str) -> nx.Graph:
    return nx.relabel_nodes(G, {u: f"{prefix}{i}" for i, u in enumerate(G.nodes)})


def _random_graph(rng: random.Random, n: int, p: float, prefix: str, colours: list[str] | None) -> nx.Graph:
    G = _named(nx.gnp_random_graph(n, p, seed=rng.randrange(2**31)), prefix)
    if colours is not None:
        for u in G:
            G.nodes[u]["color"] = rng.choice(colours)
    return G


def _molecules(lo: int, hi: int) -> list[nx.Graph]:
    RDLogger.DisableLog("rdApp.*")
    out = []
    with open(os.path.join(RDConfig.RDDataDir, "NCI", "first_5K.smi")) as fh:
        for line in fh:
            mol = Chem.MolFromSmiles(line.split()[0])
            if mol is None or not lo <= mol.GetNumAtoms() <= hi:
                continue
            G = nx.Graph()
            names = [f"{a.GetSymbol()}{a.GetIdx()}" for a in mol.GetAtoms()]
            for a, name in zip(mol.GetAtoms(), names, strict=True):
                G.add_node(name, element=a.GetSymbol())
            G.add_edges_from((names[b.GetBeginAtomIdx()], names[b.GetEndAtomIdx()]) for b in mol.GetBonds())
            out.append(G)
            if len(out) >= 80:
                break
    return out


MOLS = _molecules(3, 7)


def _nx_ged(G1: nx.Graph, G2: nx.Graph) -> float:
    # Default unit deletion/insertion costs; substitution by the same label rule as gie.edit_distance.
    return nx.graph_edit_distance(G1, G2, node_subst_cost=lambda a, b: int(node_label(a) != node_label(b)))


def _brute_ged(G1: nx.Graph, G2: nx.Graph) -> int:
    """Minimum edit cost over every partial injective mapping, counted independently of ged_cost."""
    V1, V2 = list(G1), list(G2)
    lab1 = {u: node_label(G1.nodes[u]) for u in V1}
    lab2 = {v: node_label(G2.nodes[v]) for v in V2}
    E1 = [tuple(e) for e in G1.edges]
    E2 = {frozenset(e) for e in G2.edges}
    best = len(V1) + len(V2) + len(E1) + len(E2)
    for k in range(1, min(len(V1), len(V2)) + 1):
        for dom in itertools.combinations(V1, k):
            for img in itertools.permutations(V2, k):
                m = dict(zip(dom, img, strict=True))
                nodes = sum(lab1[u] != lab2[v] for u, v in m.items()) + (len(V1) - k) + (len(V2) - k)
                kept = sum(1 for a, b in E1 if a in m and b in m and frozenset((m[a], m[b])) in E2)
                best = min(best, nodes + len(E1) + len(E2) - 2 * kept)
    return best


def _brute_mcs(G1: nx.Graph, G2: nx.Graph) -> int:
    """Largest k such that some injective map of k G1 nodes preserves adjacency and non-adjacency."""
    V1, V2 = list(G1), list(G2)
    for k in range(min(len(V1), len(V2)), 0, -1):
        for dom in itertools.combinations(V1, k):
            for img in itertools.permutations(V2, k):
                if check_mcs_mapping(G1, G2, dict(zip(dom, img, strict=True))) is None:
                    return k
    return 0


def _small_pairs(seed: int, count: int, lo: int, hi: int) -> Iterator[Pair]:
    rng = random.Random(seed)
    for t in range(count):
        if t % 3 == 2:
            yield _named(rng.choice(MOLS), "A"), _named(rng.choice(MOLS), "B")
        else:
            colours = [None, ["red"], ["red", "sky"], ["red", "sky", "lime"]][t % 4]
            yield (
                _random_graph(rng, rng.randint(lo, hi), rng.uniform(0.2, 0.8), "A", colours),
                _random_graph(rng, rng.randint(lo, hi), rng.uniform(0.2, 0.8), "B", colours),
            )


# ----------------------------------------------------------------------------------------- GED


def test_node_label_rule() -> None:
    assert node_label({"element": "C", "color": "red"}) == "C"
    assert node_label({"color": "red"}) == "red"
    assert node_label({}) is None


def test_ged_cost_by_hand() -> None:
    G1 = nx.Graph([("A", "B"), ("B", "C")])
    G2 = nx.Graph([("X", "Y")])
    nx.set_node_attributes(G1, {"A": "red", "B": "red", "C": "sky"}, "color")
    nx.set_node_attributes(G2, {"X": "red", "Y": "red"}, "color")
    # A->X, B->Y keep edge A-B; delete C (1) and edge B-C (1).
    assert ged_cost(G1, G2, {"A": "X", "B": "Y", "C": None}) == 2
    # C->X relabels (1), A deleted (1) with A-B (1), B-C kept as Y-X... B->Y: edge B-C -> Y-X kept.
    assert ged_cost(G1, G2, {"A": None, "B": "Y", "C": "X"}) == 3
    # Everything deleted and inserted: 3 + 2 nodes, 2 + 1 edges.
    assert ged_cost(G1, G2, {}) == 8
    with pytest.raises(ValueError):
        ged_cost(G1, G2, {"A": "X", "B": "X"})
    with pytest.raises(ValueError):
        ged_cost(G1, G2, {"Q": "X"})


@pytest.mark.parametrize("seed", range(3))
def test_ged_matches_networkx(seed: int) -> None:
    pairs = list(_small_pairs(seed, 22, 3, 7))
    assert any(len(a) != len(b) for a, b in pairs)
    for G1, G2 in pairs:
        cost, mapping = solve_ged(G1, G2)
        assert ged_cost(G1, G2, mapping) == cost
        assert set(mapping) == set(G1.nodes)
        assert cost == _nx_ged(G1, G2), (
            nx.node_link_data(G1, edges="edges"),
            nx.node_link_data(G2, edges="edges"),
        )


def test_ged_matches_brute_force_and_milp() -> None:
    for G1, G2 in _small_pairs(10, 30, 0, 5):
        cost, mapping = solve_ged(G1, G2)
        assert ged_cost(G1, G2, mapping) == cost
        assert cost == _brute_ged(G1, G2)
        if len(G1) and len(G2):
            milp_cost, milp_map = edit_distance._ged_milp(G1, G2)
            assert milp_cost == cost == ged_cost(G1, G2, milp_map)


def test_ged_milp_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    pairs = list(_small_pairs(20, 12, 5, 9))
    expected = [solve_ged(G1, G2)[0] for G1, G2 in pairs]
    monkeypatch.setattr(edit_distance, "_ASTAR_EVALS", 1)  # every non-trivial pair goes to the MILP
    for (G1, G2), want in zip(pairs, expected, strict=True):
        cost, mapping = solve_ged(G1, G2)
        assert cost == want == ged_cost(G1, G2, mapping)


def test_ged_identity_symmetry_and_renaming() -> None:
    rng = random.Random(3)
    for t in range(15):
        G = _random_graph(rng, rng.randint(1, 14), 0.3, "A", ["red", "sky"] if t % 2 else None)
        H = _random_graph(rng, rng.randint(1, 10), 0.3, "B", ["red", "sky"] if t % 2 else None)
        cost, mapping = solve_ged(G, G.copy())
        assert cost == 0 and all(mapping[u] is not None for u in G)
        assert solve_ged(G, _named(G, "Z"))[0] == 0
        assert solve_ged(G, H)[0] == solve_ged(H, G)[0]


def test_ged_perturbed_copy_is_bounded_by_the_edits() -> None:
    rng = random.Random(4)
    for _ in range(6):
        G = _random_graph(rng, 16, 0.25, "A", None)
        H = _named(G, "B")
        nodes = list(H)
        for _ in range(3):
            a, b = rng.sample(nodes, 2)
            if H.has_edge(a, b):
                H.remove_edge(a, b)
            else:
                H.add_edge(a, b)
        cost, mapping = solve_ged(G, H, timeout_s=30)
        assert cost <= 3 and ged_cost(G, H, mapping) == cost


def test_ged_empty_graphs() -> None:
    G = nx.Graph([("A", "B")])
    assert solve_ged(nx.Graph(), G) == (3, {})
    assert solve_ged(G, nx.Graph()) == (3, {"A": None, "B": None})
    assert solve_ged(nx.Graph(), nx.Graph()) == (0, {})


def test_ged_timeout() -> None:
    rng = random.Random(7)
    G1 = _random_graph(rng, 20, 0.3, "A", None)
    G2 = _random_graph(rng, 20, 0.3, "B", None)
    with pytest.raises(TimeoutError):
        solve_ged(G1, G2, timeout_s=0.05)


# ----------------------------------------------------------------------------------------- MCS


def test_check_mcs_mapping_reasons() -> None:
    G1 = nx.Graph([("A", "B"), ("B", "C")])
    G2 = nx.Graph([("X", "Y"), ("Y", "Z"), ("X", "Z")])
    assert check_mcs_mapping(G1, G2, {"A": "X", "B": "Y"}) is None
    assert check_mcs_mapping(G1, G2, {}) is None
    assert "unknown" in (check_mcs_mapping(G1, G2, {"Q": "X"}) or "")
    assert "unknown" in (check_mcs_mapping(G1, G2, {"A": "Q"}) or "")
    assert "both mapped" in (check_mcs_mapping(G1, G2, {"A": "X", "B": "X"}) or "")
    # A-C is not an edge but X-Z is: the induced subgraphs differ.
    assert "second graph" in (check_mcs_mapping(G1, G2, {"A": "X", "B": "Y", "C": "Z"}) or "")


def test_mcs_matches_brute_force() -> None:
    for G1, G2 in _small_pairs(30, 45, 1, 6):
        size, mapping = solve_mcs(G1, G2)
        assert len(mapping) == size
        assert check_mcs_mapping(G1, G2, mapping) is None
        assert size == _brute_mcs(G1, G2)


def test_mcs_matches_ismags() -> None:
    # ISMAGS.largest_common_subgraph: maximum common induced subgraph, no connectivity required,
    # node labels ignored without node_match -- the same semantics as solve_mcs.
    rng = random.Random(31)
    for t in range(25):
        n1, n2 = rng.randint(2, 9), rng.randint(2, 9)
        G1 = _random_graph(rng, n1, rng.uniform(0.2, 0.7), "A", None)
        G2 = _random_graph(rng, n2, rng.uniform(0.2, 0.7), "B", None)
        if t % 5 == 0:
            G1, G2 = _named(rng.choice(MOLS), "A"), _named(rng.choice(MOLS), "B")
        ref = next(iter(nx.isomorphism.ISMAGS(G2, G1).largest_common_subgraph()))
        size, mapping = solve_mcs(G1, G2)
        assert size == len(ref)
        assert check_mcs_mapping(G1, G2, mapping) is None
        # The reference mapping passes our checker too ({G2 node: G1 node} reversed).
        assert check_mcs_mapping(G1, G2, {b: a for a, b in ref.items()}) is None


def test_mcs_identity_symmetry_and_disconnected() -> None:
    rng = random.Random(32)
    for _ in range(10):
        G = _random_graph(rng, rng.randint(1, 16), 0.3, "A", None)
        H = _random_graph(rng, rng.randint(1, 12), 0.3, "B", None)
        size, mapping = solve_mcs(G, _named(G, "Z"))
        assert size == len(G) and check_mcs_mapping(G, _named(G, "Z"), mapping) is None
        assert solve_mcs(G, H)[0] == solve_mcs(H, G)[0]
    # Two disjoint triangles vs one triangle plus an isolated node: the common induced subgraph
    # "triangle + isolated node" is disconnected, and it is allowed.
    G1 = nx.Graph([("A", "B"), ("B", "C"), ("A", "C"), ("D", "E"), ("E", "F"), ("D", "F")])
    G2 = nx.Graph([("X", "Y"), ("Y", "Z"), ("X", "Z")])
    G2.add_node("W")
    assert solve_mcs(G1, G2)[0] == 4
    assert solve_mcs(nx.Graph(), G2) == (0, {})
