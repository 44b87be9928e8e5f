"""Edit 3, attentional focusing: a connected group of nodes coloured apart; the question is asked on it."""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from typing import Any

import networkx as nx

from gie.edits.base import edge_key


def _grow_connected(G: nx.Graph, allowed: set[str], start: str, k: int, rng: random.Random) -> set[str]:
    """Random connected set of up to k nodes inside `allowed` (fewer if start's region is smaller)."""
    part = {start}
    while len(part) < k:
        frontier = sorted({w for v in part for w in G[v] if w in allowed} - part)
        if not frontier:
            break
        part.add(rng.choice(frontier))
    return part


def _closed_neighbourhood(G: nx.Graph, part: Iterable[str]) -> set[str]:
    part = set(part)
    return part | {w for v in part for w in G[v]}


def attentional_focus(
    G: nx.Graph,
    rng: random.Random,
    focus_color: str,
    base_color: str,
    size_range: tuple[int, int] = (3, 6),
    *,
    max_distractors: int = 3,
    other_colors: Sequence[str] = (),
    min_distractors: int = 1,
    attempts: int = 32,
) -> tuple[dict[str, str], dict[str, Any]]:
    """Colour a connected target M with c* = focus_color plus smaller, separate c* distractors.

    Guarantees: M is connected with |M| in size_range; no neighbour of M has c*; there are at least
    min_distractors distractors (the paper's "additional monochromatic components": without one, "the
    largest c* group" is simply "the c* nodes" and the selection is not tested); each distractor is
    connected, strictly smaller than M, and not adjacent to M or to another distractor, so the c*
    components are exactly M and the distractors and M is the unique largest. Every other node gets
    base_color or one of other_colors. Raises ValueError when no target in `attempts` draws leaves
    room for the distractors.
    """
    lo, hi = size_range
    if not 1 <= lo <= hi:
        raise ValueError(f"bad size range {size_range}")
    if not 0 <= min_distractors <= max_distractors:
        raise ValueError(f"bad distractor counts {min_distractors}..{max_distractors}")
    if focus_color == base_color or focus_color in other_colors:
        raise ValueError("the focus colour must not be a background colour")
    comps = sorted((sorted(c) for c in nx.connected_components(G) if len(c) >= lo), key=lambda c: c[0])
    if not comps:
        raise ValueError(f"no connected component has {lo} nodes")
    for _ in range(attempts):
        comp = rng.choice(comps)
        size = rng.randint(lo, min(hi, len(comp)))
        target = _grow_connected(G, set(comp), rng.choice(comp), size, rng)
        free = set(G.nodes) - _closed_neighbourhood(G, target)
        # A distractor needs a node outside M's closed neighbourhood and must be smaller than M.
        if min_distractors == 0 or (len(target) > 1 and free):
            break
    else:
        raise ValueError(f"no target of {lo}..{hi} nodes leaves room for a same-colour distractor")

    distractors: list[list[str]] = []
    if len(target) > 1 and max_distractors > 0:
        for _ in range(rng.randint(max(1, min_distractors), max_distractors)):
            if not free:
                break
            # Two nodes at least when M allows: a distractor with an edge changes edge-counting answers
            # (a cover, a matching) of anyone who answers about every c* node instead of the largest group.
            want = rng.randint(min(2, len(target) - 1), len(target) - 1)
            d = _grow_connected(G, free, rng.choice(sorted(free)), want, rng)
            distractors.append(sorted(d))
            # A distractor's whole closed neighbourhood leaves the pool, so later ones cannot touch it.
            free -= _closed_neighbourhood(G, d)
    if len(distractors) < min_distractors:
        raise ValueError(f"only {len(distractors)} distractor(s) fit beside the target")

    palette = [base_color, *other_colors]
    focused = target.union(*map(set, distractors))
    colors = {
        v: focus_color if v in focused else (base_color if len(palette) == 1 else rng.choice(palette))
        for v in sorted(G.nodes)
    }
    meta: dict[str, Any] = {
        "kind": "focus",
        "color": focus_color,
        "base_color": base_color,
        "size_range": [lo, hi],
        "target": sorted(target),
        "target_edges": sorted(edge_key(u, v) for u, v in G.subgraph(target).edges),
        "distractors": distractors,
    }
    return colors, meta
