"""Where the nodes go: Graphviz positions scaled to the canvas and repaired, the TSP circle, and the
choice of a layout seed whose drawing passes the legibility checks (`gie.legibility`)."""

from __future__ import annotations

import json
import math
import random
from collections.abc import Sequence

import networkx as nx

from evalcore.draw import (
    layout_graph,
)
from gie.graphs import sorted_edges, to_node_link
from gie.legibility import layout_defects
from gie.style import (
    CAPTION_H,
    MARGIN,
    MIN_HEIGHT,
    NODE_RADIUS,
    TABLE_GAP,
    WIDTH,
    Position,
    circle_radius,
    image_width,
    table_size,
)


def _scale(pos_pt: dict[str, Position], top: float, width: int = WIDTH) -> tuple[dict[str, Position], int]:
    xs = [p[0] for p in pos_pt.values()]
    ys = [p[1] for p in pos_pt.values()]
    span_x = max(max(xs) - min(xs), 1.0)
    span_y = max(max(ys) - min(ys), 1.0)
    scale = min((width - 2 * MARGIN) / span_x, (width - 2 * MARGIN) / span_y)
    # Tiny layouts (2-3 nodes) would otherwise be blown up to the full width.
    scale = min(scale, 2.6)
    draw_h = max(span_y * scale + 2 * MARGIN, MIN_HEIGHT)
    off_x = (width - span_x * scale) / 2
    off_y = top + (draw_h - span_y * scale) / 2
    px = {n: (round(off_x + (x - min(xs)) * scale, 2), round(off_y + (max(ys) - y) * scale, 2))
          for n, (x, y) in pos_pt.items()}
    return px, int(math.ceil(draw_h))


# Every image's layout is computed twice: once while `pick_layout_seed` tries candidate seeds, and
# again when the chosen seed is drawn (`gie.render`, a separate pass in build_instance). The layout is a
# pure function of the graph's stored form and the arguments, so a small per-process memo keyed on them
# serves the second call; it never changes a position. Bounded: oldest entries go first.
# Each entry also keeps the `layout_defects` score the layout computed for the positions it returns
# (None when it computed none), which `pick_layout_seed` would otherwise compute again.
_LAYOUTS: dict[tuple[str, int, bool, bool], tuple[tuple[tuple[str, Position], ...], int, tuple[int, int] | None]] = {}
LAYOUT_MEMO = 256


def clear_layout_memo() -> None:
    _LAYOUTS.clear()


def layout_pixels(
    g: nx.Graph, seed: int, *, caption: bool = False, distance_table: bool = False
) -> tuple[dict[str, Position], int]:
    """Pixel centres of the nodes and the drawing height (without caption/legend strips); memoised
    per process (`_LAYOUTS`), see `_layout_pixels`."""
    pos, height, _ = _memo_layout(g, seed, caption, distance_table)
    return pos, height


def _memo_layout(g: nx.Graph, seed: int, caption: bool, distance_table: bool
                 ) -> tuple[dict[str, Position], int, tuple[int, int] | None]:
    # The stored form (sorted nodes and edges, every attribute): everything the layout can depend on.
    key = (json.dumps(to_node_link(g), sort_keys=True), seed, bool(caption), bool(distance_table))
    hit = _LAYOUTS.get(key)
    if hit is None:
        pos, height, defects = _layout_pixels(g, seed, caption=caption, distance_table=distance_table)
        if len(_LAYOUTS) >= LAYOUT_MEMO:
            del _LAYOUTS[next(iter(_LAYOUTS))]
        hit = _LAYOUTS[key] = (tuple(pos.items()), height, defects)
    # A fresh dict in the computed order (TSP's circle keeps its seeded order): callers may mutate it.
    return dict(hit[0]), hit[1], hit[2]


def _layout_pixels(
    g: nx.Graph, seed: int, *, caption: bool = False, distance_table: bool = False
) -> tuple[dict[str, Position], int, tuple[int, int] | None]:
    """Pixel centres of the nodes, the drawing height (without caption/legend strips) and, when it was
    computed, `layout_defects(g, positions, weighted)` of the returned positions (weighted: g has
    weights; never computed for one node or a distance table).

    neato with the seed; if that drawing is ambiguous (see `layout_defects`) and Graphviz's circular
    layout is less so (nodes on a circle in the angular order neato gave them), that is used instead: on a circle no edge can pass through a foreign
    node, which rescues dense graphs (near-cliques of hub airports) that neato draws with collinear
    nodes. The choice is a pure function of (graph, seed)."""
    nodes = sorted(g.nodes)
    top = CAPTION_H if caption else 0
    width = image_width(g, distance_table=distance_table)
    if len(nodes) == 1:
        return {nodes[0]: (width / 2, top + MIN_HEIGHT / 2)}, MIN_HEIGHT, None
    if distance_table:
        return (*_circle(nodes, seed, top, width), None)
    edges = sorted_edges(g)
    weighted = any("weight" in d for _, _, d in g.edges(data=True))
    pos_pt = layout_graph(nodes, edges, seed)
    pos, height = _scale(pos_pt, top, width)
    pos = _repair(g, pos, width, top, height)
    score = layout_defects(g, pos, weighted)
    if score[0] == 0:
        return pos, height, score
    # Graphviz's circo aborts the whole process (heap corruption in its C code) on some small dense
    # graphs, e.g. 11 hub airports with 24 routes, so the circular fallback is our own.
    alt, alt_height = _scale(_circular_from(pos_pt), top, width)
    alt = _repair(g, alt, width, top, alt_height)
    alt_score = layout_defects(g, alt, weighted)
    if alt_score < score:
        return alt, alt_height, alt_score
    return pos, height, score


def _circular_from(pos_pt: dict[str, Position]) -> dict[str, Position]:
    """The nodes on a circle, in the angular order they have around the centroid of `pos_pt` (so
    neighbours in the given layout stay near), with the radius of the TSP circle for this many nodes."""
    names = sorted(pos_pt)
    cx = sum(pos_pt[n][0] for n in names) / len(names)
    cy = sum(pos_pt[n][1] for n in names) / len(names)
    order = sorted(names, key=lambda n: (math.atan2(pos_pt[n][1] - cy, pos_pt[n][0] - cx), n))
    r = circle_radius(len(order))
    return {n: (r * math.cos(2 * math.pi * i / len(order)), r * math.sin(2 * math.pi * i / len(order)))
            for i, n in enumerate(order)}


REPAIR_ROUNDS = 40


def _repair(g: nx.Graph, pos: dict[str, Position], width: int, top: float, height: int) -> dict[str, Position]:
    """Nudge nodes out of the near-misses that make a drawing ambiguous: a node grazed by a foreign edge
    moves away from the segment, two discs too close move apart, a little more than needed each round.
    neato's layouts of 20-50 node graphs, scaled to the canvas, usually have a handful of such
    near-misses; this removes most of them. Deterministic: nodes and edges in sorted order.

    Speed (the hottest loop of generation): a pair or a node farther than the threshold plus 1 px along
    one axis from a disc or from the edge's bounding box cannot be a near-miss, so it is skipped before
    the exact test; the pushes themselves are the same float operations in the same order, so positions
    are bit-identical to the unpruned loop (`tests/test_gie_layout_speed.py` compares the two)."""
    r = NODE_RADIUS
    nodes = sorted(g.nodes)
    index = {n: i for i, n in enumerate(nodes)}
    edges = [(index[a], index[b]) for a, b in sorted_edges(g)]
    p = [list(pos[n]) for n in nodes]
    count = len(p)
    lo_x, hi_x = MARGIN / 2 + r, width - MARGIN / 2 - r
    lo_y, hi_y = top + MARGIN / 2 + r, top + height - MARGIN / 2 - r
    need_pair = 2 * r + 18
    need_edge = r + 12
    # 1 px beyond the threshold: far more than any rounding of the exact test, so a skip is never wrong.
    far_pair = need_pair + 1
    far_edge = need_edge + 1
    hypot = math.hypot
    for _ in range(REPAIR_ROUNDS):
        moved = False
        for i in range(count):
            pu = p[i]
            for j in range(i + 1, count):
                pv = p[j]
                dx = pv[0] - pu[0]
                if dx >= far_pair or dx <= -far_pair:
                    continue
                dy = pv[1] - pu[1]
                if dy >= far_pair or dy <= -far_pair:
                    continue
                d = hypot(dx, dy)
                if d < need_pair:
                    if d < 1e-6:
                        dx, dy, d = 1.0, 0.0, 1.0
                    push = (need_pair - d) / 2 + 1
                    pu[0] -= dx / d * push
                    pu[1] -= dy / d * push
                    pv[0] += dx / d * push
                    pv[1] += dy / d * push
                    moved = True
        for a, b in edges:
            pa, pb = p[a], p[b]
            x0, x1 = (pa[0], pb[0]) if pa[0] <= pb[0] else (pb[0], pa[0])
            y0, y1 = (pa[1], pb[1]) if pa[1] <= pb[1] else (pb[1], pa[1])
            x0, x1, y0, y1 = x0 - far_edge, x1 + far_edge, y0 - far_edge, y1 + far_edge
            for n in range(count):
                pn = p[n]
                if not (x0 < pn[0] < x1 and y0 < pn[1] < y1) or n == a or n == b:
                    continue
                sx, sy = pb[0] - pa[0], pb[1] - pa[1]
                t = max(0.0, min(1.0, ((pn[0] - pa[0]) * sx + (pn[1] - pa[1]) * sy) / max(sx * sx + sy * sy, 1e-9)))
                cx, cy = pa[0] + t * sx, pa[1] + t * sy
                dx, dy = pn[0] - cx, pn[1] - cy
                d = hypot(dx, dy)
                if d < need_edge:
                    if d < 1e-6:
                        dx, dy, d = -sy, sx, max(hypot(sx, sy), 1e-9)
                    push = need_edge - d + 1
                    # the node moves most; the edge's ends give way a little in the other direction
                    pn[0] += dx / d * push * 0.7
                    pn[1] += dy / d * push * 0.7
                    for end in (pa, pb):
                        end[0] -= dx / d * push * 0.15
                        end[1] -= dy / d * push * 0.15
                    moved = True
                    # the edge's ends moved: its box follows them
                    x0, x1 = (pa[0], pb[0]) if pa[0] <= pb[0] else (pb[0], pa[0])
                    y0, y1 = (pa[1], pb[1]) if pa[1] <= pb[1] else (pb[1], pa[1])
                    x0, x1, y0, y1 = x0 - far_edge, x1 + far_edge, y0 - far_edge, y1 + far_edge
        for q in p:
            q[0] = min(max(q[0], lo_x), hi_x)
            q[1] = min(max(q[1], lo_y), hi_y)
        if not moved:
            break
    return {n: (round(q[0], 2), round(q[1], 2)) for n, q in zip(nodes, p, strict=True)}


def _circle(nodes: list[str], seed: int, top: float, width: int) -> tuple[dict[str, Position], int]:
    """Cities on a circle in a seeded order (so the order carries no hint of the tour); the drawing
    height includes the distance table under the circle."""
    order = list(nodes)
    random.Random(seed).shuffle(order)
    n = len(order)
    r = circle_radius(n)
    cx, cy = width / 2, top + MARGIN + NODE_RADIUS + r
    pos = {v: (round(cx + r * math.sin(2 * math.pi * i / n), 2), round(cy - r * math.cos(2 * math.pi * i / n), 2))
           for i, v in enumerate(order)}
    height = 2 * (MARGIN + NODE_RADIUS + r) + TABLE_GAP + table_size(n)[1] + MARGIN // 2
    return pos, int(math.ceil(height))


def pick_layout_seed(
    graphs: Sequence[nx.Graph], rng: random.Random, *, tries: int = 5, captions: bool = False,
    distance_table: bool = False,
) -> tuple[int, int]:
    """(base seed, ambiguities of its drawings): image i uses `image_seed(base, i)`. The first seed with
    no ambiguity and few crossings (at most a third of the edges), else the least bad."""
    best_seed, best_score = 0, None
    few = max(1, sum(g.number_of_edges() for g in graphs) // 3)
    for _ in range(tries):
        seed = rng.randrange(1, 2**31 - 1 - 1000)
        score = (0, 0)
        for i, g in enumerate(graphs):
            if g.number_of_nodes() <= 1:
                continue
            pos, _, known = _memo_layout(g, image_seed(seed, i), captions, distance_table)
            weighted = not distance_table and any("weight" in d for _, _, d in g.edges(data=True))
            # The layout scored these positions with the same `weighted` (it returns no score for a
            # distance table, where `weighted` would differ): the same numbers as scoring them again.
            a, c = known if known is not None else layout_defects(g, pos, weighted)
            score = (score[0] + a, score[1] + c)
        if best_score is None or score < best_score:
            best_seed, best_score = seed, score
        if score[0] == 0 and score[1] <= few:
            break
    assert best_score is not None
    return best_seed, best_score[0]


def choose_layout_seed(
    graphs: Sequence[nx.Graph], rng: random.Random, *, tries: int = 5, captions: bool = False,
    distance_table: bool = False,
) -> int:
    """`pick_layout_seed`'s seed: the least ambiguous of `tries` candidates."""
    return pick_layout_seed(graphs, rng, tries=tries, captions=captions, distance_table=distance_table)[0]


def image_seed(layout_seed: int, index: int) -> int:
    # Distinct, fixed per-image seeds from the one stored layout seed.
    return (layout_seed + 7919 * index) % (2**31 - 1)
