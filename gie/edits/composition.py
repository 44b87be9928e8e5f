"""Edit 2, cross-graph composition: the graph is split into two balanced, connected parts drawn apart; the
question is asked on the whole (composed) graph."""

from __future__ import annotations

import random
from collections.abc import Iterable
from typing import Any

import networkx as nx

from gie.edits.base import edge_key


def _random_spanning_tree(G: nx.Graph, rng: random.Random) -> dict[str, list[str]]:
    """Kruskal over a shuffled edge order: a random spanning tree, different for each draw."""
    edges = sorted(tuple(sorted(e)) for e in G.edges)
    rng.shuffle(edges)
    parent = {v: v for v in G.nodes}

    def find(v: str) -> str:
        while parent[v] != v:
            parent[v] = parent[parent[v]]
            v = parent[v]
        return v

    tree: dict[str, list[str]] = {v: [] for v in sorted(G.nodes)}
    for u, v in edges:
        ru, rv = find(u), find(v)
        if ru != rv:
            parent[ru] = rv
            tree[u].append(v)
            tree[v].append(u)
    return tree


def _balanced_tree_cuts(tree: dict[str, list[str]], root: str, sizes: set[int]) -> list[frozenset[str]]:
    """Subtrees whose removal leaves two parts of the wanted sizes; both parts are tree-connected."""
    order, parent = [root], {root: root}
    for v in order:
        for w in sorted(tree[v]):
            if w not in parent:
                parent[w] = v
                order.append(w)
    below: dict[str, set[str]] = {v: {v} for v in order}
    cuts = []
    for v in reversed(order[1:]):
        if len(below[v]) in sizes:
            cuts.append(frozenset(below[v]))
        below[parent[v]] |= below[v]
    return sorted(cuts, key=sorted)


def _grow_part(G: nx.Graph, k: int, rng: random.Random) -> set[str]:
    """Random frontier growth to k nodes, jumping to a fresh node only when the frontier is empty."""
    nodes = sorted(G.nodes)
    part = {rng.choice(nodes)}
    while len(part) < k:
        frontier = sorted({w for v in part for w in G[v]} - part)
        part.add(rng.choice(frontier or sorted(set(nodes) - part)))
    return part


def _components(G: nx.Graph, part: Iterable[str]) -> int:
    return nx.number_connected_components(G.subgraph(part))


def compose_split(
    G: nx.Graph, rng: random.Random, *, attempts: int = 64
) -> tuple[list[str], list[str], list[tuple[str, str]], dict[str, Any]]:
    """Split V into two balanced parts (sizes differ by <= 1), each connected when possible.

    A balanced partition with both parts connected exists iff some spanning tree has an edge whose
    removal leaves two balanced subtrees (join spanning trees of the parts by one cut edge), so random
    spanning trees are searched first; random frontier growth minimising the component count is the
    fallback for graphs where that fails (stars, disconnected graphs).
    Returns (V1, V2, cross_edges with u in V1 and v in V2, meta).
    """
    nodes = sorted(G.nodes)
    n = len(nodes)
    if n < 2:
        raise ValueError("composition needs at least two nodes")
    sizes = {n // 2, n - n // 2}
    part: set[str] | None = None
    if nx.is_connected(G):
        for _ in range(attempts):
            cuts = _balanced_tree_cuts(_random_spanning_tree(G, rng), nodes[0], sizes)
            if cuts:
                part = set(rng.choice(cuts))
                break
    if part is None:
        best: tuple[int, int] | None = None
        for _ in range(attempts):
            cand = _grow_part(G, rng.choice(sorted(sizes)), rng)
            rest = set(nodes) - cand
            score = (_components(G, cand) + _components(G, rest), nx.cut_size(G, cand, rest))
            if best is None or score < best:
                best, part = score, cand
            if score[0] == 2:
                break
    assert part is not None
    first, second = sorted(part), sorted(set(nodes) - part)
    v1, v2 = (first, second) if rng.random() < 0.5 else (second, first)
    in1 = set(v1)
    cross = sorted((u, v) if u in in1 else (v, u) for u, v in G.edges if (u in in1) != (v in in1))
    meta: dict[str, Any] = {
        "kind": "composition",
        "parts": [v1, v2],
        "sizes": [len(v1), len(v2)],
        "connected": [_components(G, v1) == 1, _components(G, v2) == 1],
        "part_edges": [sorted(edge_key(u, v) for u, v in G.subgraph(p).edges) for p in (v1, v2)],
        "cross_edges": [[u, v] for u, v in cross],
        "connectors": [sorted({u for u, _ in cross}), sorted({v for _, v in cross})],
        "composed_edges": sorted(edge_key(u, v) for u, v in G.edges),
        "composed_edge_count": G.number_of_edges(),
    }
    return v1, v2, cross, meta
