"""Edit 4, spatial recolouring: every node strictly to one side of an anchor node is recoloured; the
question is asked on those nodes only, or on all but them."""

from __future__ import annotations

import random
from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import Any, Literal

import networkx as nx

from gie.edits.base import Position

Direction = Literal["left", "right", "above", "below"]
ConstraintMode = Literal["only", "avoid"]


DIRECTIONS: tuple[str, ...] = ("left", "right", "above", "below")
# One node diameter of the standard drawing (radius 24): a recoloured node's whole disc lies beyond the
# anchor's disc along the axis, so "left of the anchor" is never a judgement call.
SPATIAL_MARGIN = 48.0


def _offset(positions: Mapping[str, Position], anchor: str, node: str, direction: str) -> float:
    """How far `node` lies in `direction` from the anchor, in pixels (image y grows downwards)."""
    (ax, ay), (x, y) = positions[anchor], positions[node]
    return {"left": ax - x, "right": x - ax, "above": ay - y, "below": y - ay}[direction]


def spatial_candidates(
    G: nx.Graph,
    positions: Mapping[str, Position],
    margin: float,
    anchor: str | None = None,
    direction: str | None = None,
) -> list[tuple[str, str, list[str]]]:
    """All unambiguous (anchor, direction, recoloured) choices.

    Unambiguous: every node but the anchor is more than `margin` pixels on one side or the other along
    the direction's axis, so "strictly left of the anchor" has one reading. The recoloured set is
    non-empty and leaves at least one non-anchor node out when the graph allows (else only the anchor).
    """
    nodes = sorted(G.nodes)
    anchors = [anchor] if anchor is not None else nodes
    dirs = [direction] if direction is not None else list(DIRECTIONS)
    for d in dirs:
        if d not in DIRECTIONS:
            raise ValueError(f"unknown direction {d!r}")
    strict, loose = [], []
    for a in anchors:
        for d in dirs:
            offs = {v: _offset(positions, a, v, d) for v in nodes if v != a}
            if any(abs(o) <= margin for o in offs.values()):
                continue
            chosen = [v for v, o in offs.items() if o > margin]
            if 1 <= len(chosen) <= len(nodes) - 2:
                strict.append((a, d, chosen))
            elif 1 <= len(chosen):
                loose.append((a, d, chosen))
    return strict or loose


def _spatial_meta(
    G: nx.Graph,
    positions: Mapping[str, Position],
    choice: tuple[str, str, list[str]],
    new_color: str,
    margin: float,
) -> dict[str, Any]:
    anchor, direction, chosen = choice
    return {
        "kind": "recolor",
        "direction": direction,
        "anchor": anchor,
        "anchor_position": [float(c) for c in positions[anchor]],
        "recoloured": chosen,
        "new_color": new_color,
        "previous_colors": {v: G.nodes[v].get("color", "sky") for v in chosen},
        "margin": margin,
    }


def spatial_recolor(
    G: nx.Graph,
    positions: Mapping[str, Position],
    rng: random.Random,
    new_color: str,
    anchor: str | None = None,
    direction: str | None = None,
    *,
    margin: float = SPATIAL_MARGIN,
) -> tuple[list[str], dict[str, Any]]:
    """Recolour every node strictly in `direction` of `anchor` ("above" = smaller pixel y).

    Unfixed anchor/direction are drawn at random among unambiguous choices (see spatial_candidates);
    raises ValueError when none exists.
    """
    options = spatial_candidates(G, positions, margin, anchor, direction)
    if not options:
        raise ValueError(f"no unambiguous anchor/direction (anchor={anchor}, direction={direction})")
    choice = rng.choice(options)
    return list(choice[2]), _spatial_meta(G, positions, choice, new_color, margin)


def recolor_constraint_graph(
    G: nx.Graph, recoloured: Iterable[str], mode: ConstraintMode, new_color: str | None = None
) -> nx.Graph:
    """The graph the question is asked on: only the recoloured nodes, or everything but them.

    With `new_color`, the constraint names that colour, so it covers every node drawn in it after the
    edit: the recoloured nodes and those that already had the colour."""
    chosen = set(recoloured)
    recoloured_only = set(chosen)
    if new_color is not None:
        chosen |= {v for v, c in G.nodes(data="color") if c == new_color}
    if mode == "only":
        keep = chosen
    elif mode == "avoid":
        keep = set(G.nodes) - chosen
    else:
        raise ValueError(f"unknown mode {mode!r}")
    # Built in G's own order: a subgraph view may iterate the (hash-ordered) filter set instead.
    H = nx.Graph()
    H.graph.update(G.graph)
    H.add_nodes_from((v, dict(a)) for v, a in G.nodes(data=True) if v in keep)
    H.add_edges_from((u, v, dict(a)) for u, v, a in G.edges(data=True) if u in keep and v in keep)
    if new_color is not None:
        for v in H:
            if v in recoloured_only:
                H.nodes[v]["color"] = new_color
    return H


def changes_answer(
    G: nx.Graph,
    recoloured: Iterable[str],
    solve: Callable[[nx.Graph], Hashable],
    mode: ConstraintMode = "only",
) -> bool:
    """Whether the gold value under the recolouring constraint differs from ignoring the edit."""
    return solve(recolor_constraint_graph(G, recoloured, mode)) != solve(G)


def spatial_recolor_changing(
    G: nx.Graph,
    positions: Mapping[str, Position],
    rng: random.Random,
    new_color: str,
    solve: Callable[[nx.Graph], Hashable],
    mode: ConstraintMode = "only",
    *,
    margin: float = SPATIAL_MARGIN,
) -> tuple[list[str], dict[str, Any]]:
    """Like spatial_recolor, but only among choices whose constraint changes the gold answer.

    Candidates are tried in a random order until one changes it, so the edit cannot be ignored;
    raises ValueError when no unambiguous choice does.
    """
    options = spatial_candidates(G, positions, margin)
    rng.shuffle(options)
    for choice in options:
        if changes_answer(G, choice[2], solve, mode):
            meta = _spatial_meta(G, positions, choice, new_color, margin)
            meta["mode"] = mode
            return list(choice[2]), meta
    raise ValueError("no unambiguous recolouring changes the answer")
