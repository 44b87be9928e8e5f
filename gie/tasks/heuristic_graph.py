"""What the single-image heuristics share: the graph they run on (canonical insertion order) and the
hop-count walks the distance heuristics take."""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import networkx as nx

from gie.solvers import lex_shortest_path, sorted_labels
from gie.tasks.verdicts import sorted_edges


def canonical_copy(G: nx.Graph) -> nx.Graph:
    """Same graph, nodes and edges inserted in sorted order, so networkx's order-dependent greedy
    routines give one answer per graph."""
    H = nx.Graph()
    H.add_nodes_from(sorted_labels(G))
    H.add_edges_from(sorted_edges(G))
    return H


def heuristic_graph(graphs: Sequence[nx.Graph]) -> tuple[nx.Graph, list[Hashable]]:
    """The asked graph in canonical order with its edge data, and its labels in sorted order."""
    G = canonical_copy(graphs[0])
    for u, v, d in graphs[0].edges(data=True):
        if u != v:
            G[u][v].update(d)
    return G, sorted_labels(G)


def hop_path(G: nx.Graph, s: Hashable, t: Hashable) -> list[Hashable] | None:
    to_t = nx.single_source_shortest_path_length(G, t)
    if s not in to_t:
        return None
    return lex_shortest_path(G, s, t, to_t, weighted=False)


def farthest(G: nx.Graph, s: Hashable) -> Hashable:
    hops = nx.single_source_shortest_path_length(G, s)
    return min(hops, key=lambda v: (-hops[v], str(v)))
