"""Which graph sources each task draws from (name, weight), and the query pickers shared by tasks."""

from __future__ import annotations

import random
from typing import Any

import networkx as nx

from gie.tasks.config import RetryInstance

SOCIAL: tuple[tuple[str, float], ...] = (
    # weighted by size: the small graphs would otherwise repeat the same subgraphs
    ("les-miserables", 0.4),
    ("karate", 0.25),
    ("davis", 0.2),
    ("florentine", 0.15),
)


def mix(*parts: tuple[str | tuple[tuple[str, float], ...], float]) -> tuple[tuple[str, float], ...]:
    """Flatten a share of a source or of a group of sources into (source, weight) pairs."""
    out: list[tuple[str, float]] = []
    for what, share in parts:
        if isinstance(what, str):
            out.append((what, share))
        else:
            total = sum(w for _, w in what)
            out.extend((n, round(share * w / total, 4)) for n, w in what)
    return tuple(out)


def far_pair(g: nx.Graph, rng: random.Random) -> dict[str, Any]:
    """A random pair of distinct, non-adjacent, connected nodes (so the answer is a real route)."""
    nodes = sorted(g)
    # "connected" by component: what nx.has_path answers per pair, without a search for each pair
    component = {n: i for i, comp in enumerate(nx.connected_components(g)) for n in comp}
    pairs = [
        (u, v)
        for i, u in enumerate(nodes)
        for v in nodes[i + 1 :]
        if not g.has_edge(u, v) and component[u] == component[v]
    ]
    if not pairs:
        raise RetryInstance("no non-adjacent connected pair")
    s, t = rng.choice(pairs)
    if rng.random() < 0.5:
        s, t = t, s
    return {"source": s, "target": t}


def neighbour_pair(g: nx.Graph, rng: random.Random) -> dict[str, Any]:
    """A pair with at least one common neighbour most of the time, any pair otherwise (the empty list
    must stay a possible answer)."""
    nodes = sorted(g)
    if len(nodes) < 2:
        raise RetryInstance("fewer than two nodes")
    pairs = [(u, v) for i, u in enumerate(nodes) for v in nodes[i + 1 :]]
    sharing = [(u, v) for u, v in pairs if set(g[u]) & set(g[v])]
    pool = sharing if sharing and rng.random() < 0.85 else pairs
    s, t = rng.choice(pool)
    if rng.random() < 0.5:
        s, t = t, s
    return {"source": s, "target": t}


def endpoints(q: dict[str, Any]) -> set[str]:
    return {q[k] for k in ("source", "target") if k in q}
