"""Legibility checks of a drawing, on the node positions the renderer used: nodes too close, edges through
foreign discs, crossings, weight labels that collide (and where weight labels go)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache

import networkx as nx

from evalcore.draw import (
    segment_hits_box,
)
from gie.graphs import sorted_edges
from gie.style import LABEL_SIZE, LABEL_TS, NODE_RADIUS, Position


def _seg_dist(p: Position, a: Position, b: Position) -> float:
    (px, py), (ax, ay), (bx, by) = p, a, b
    dx, dy = bx - ax, by - ay
    t = max(0.0, min(1.0, ((px - ax) * dx + (py - ay) * dy) / max(dx * dx + dy * dy, 1e-9)))
    return math.hypot(px - ax - t * dx, py - ay - t * dy)


def _crosses(a: Position, b: Position, c: Position, d: Position) -> bool:
    def orient(p: Position, q: Position, r: Position) -> float:
        return (q[0] - p[0]) * (r[1] - p[1]) - (q[1] - p[1]) * (r[0] - p[0])

    return orient(a, b, c) * orient(a, b, d) < 0 and orient(c, d, a) * orient(c, d, b) < 0


def _box(centre: Position, text: str) -> tuple[float, float, float, float]:
    # Estimated from the bundled font at WEIGHT_SIZE: ~9.5 px per digit plus the white padding.
    w, h = 9.5 * len(text) + 8, 24.0
    x, y = centre
    return (x - w / 2, y - h / 2, x + w / 2, y + h / 2)


# An edge with its bounding box: (edge, a, b, min x, min y, max x, max y).
_Seg = tuple[tuple[str, str], Position, Position, float, float, float, float]


def _segments(pos: dict[str, Position], edges: Sequence[tuple[str, str]]) -> list[_Seg]:
    out = []
    for u, v in edges:
        a, b = pos[u], pos[v]
        out.append(((u, v), a, b, min(a[0], b[0]), min(a[1], b[1]), max(a[0], b[0]), max(a[1], b[1])))
    return out


def _box_conflicts(
    box: tuple[float, float, float, float],
    edge: tuple[str, str],
    pos: dict[str, Position],
    segs: Sequence[_Seg],
    placed: Sequence[tuple[float, float, float, float]],
) -> int:
    r = NODE_RADIUS + 3
    x0, y0, x1, y1 = box
    bad = 0
    for p in pos.values():
        if x0 - r < p[0] < x1 + r and y0 - r < p[1] < y1 + r:
            bad += 1
    hx0, hy0, hx1, hy1 = hit = (x0 - 2, y0 - 2, x1 + 2, y1 + 2)
    for e, a, b, sx0, sy0, sx1, sy1 in segs:
        # An edge whose bounding box is more than 1 px clear of the box cannot meet it: the clipping test
        # would say so too (1 px is far beyond its rounding), so only that test's call is skipped.
        if sx1 < hx0 - 1 or sx0 > hx1 + 1 or sy1 < hy0 - 1 or sy0 > hy1 + 1:
            continue
        if e != edge and segment_hits_box(a, b, hit):
            bad += 1
    for q in placed:
        if x0 < q[2] + 4 and q[0] < x1 + 4 and y0 < q[3] + 4 and q[1] < y1 + 4:
            bad += 1
    return bad


def weight_label_positions(g: nx.Graph, pos: dict[str, Position]) -> tuple[dict[tuple[str, str], Position], int]:
    """Where each edge's weight box goes (edges in sorted order, each at the first free spot along the
    edge, else the least bad one) and how many conflicts remain."""
    edges = sorted_edges(g)
    segs = _segments(pos, edges)
    placed: list[tuple[float, float, float, float]] = []
    out: dict[tuple[str, str], Position] = {}
    total = 0
    for u, v in edges:
        if "weight" not in g.edges[u, v]:
            continue
        text = str(g.edges[u, v]["weight"])
        (x1, y1), (x2, y2) = pos[u], pos[v]
        best: tuple[int, Position] | None = None
        for t in LABEL_TS:
            c = (round(x1 + t * (x2 - x1), 2), round(y1 + t * (y2 - y1), 2))
            bad = _box_conflicts(_box(c, text), (u, v), pos, segs, placed)
            if best is None or bad < best[0]:
                best = (bad, c)
            if bad == 0:
                break
        assert best is not None
        out[(u, v)] = best[1]
        placed.append(_box(best[1], text))
        total += best[0]
    return out, total


def layout_defects(g: nx.Graph, pos: dict[str, Position], weighted: bool) -> tuple[int, int]:
    """(ambiguities, crossings). Ambiguities make the picture misreadable: two discs too close, an
    edge passing within reach of a node it does not join, and (weighted) a weight box that cannot be
    placed clear of discs, other boxes and foreign edges. Crossings are only a tie-breaker.

    Runs for every candidate layout, so the loops skip what cannot count: a pair or a node more than
    the threshold plus 1 px away along one axis (no rounding reaches 1 px) and, for crossings, two edges
    whose boxes are 1 px apart. The counted tests are those of `_seg_dist` and `_crosses`, inlined."""
    r = NODE_RADIUS
    nodes = sorted(g.nodes)
    pts = [pos[n] for n in nodes]
    index = {n: i for i, n in enumerate(nodes)}
    edges = sorted_edges(g)
    bad = 0
    near_pair = 2 * r + 14
    far_pair = near_pair + 1
    dist = math.dist
    for i, pu in enumerate(pts):
        ux, uy = pu
        for j in range(i + 1, len(pts)):
            pv = pts[j]
            if -far_pair < pv[0] - ux < far_pair and -far_pair < pv[1] - uy < far_pair and dist(pu, pv) < near_pair:
                bad += 1
    near_edge = r + 8
    far_edge = near_edge + 1
    segs = []
    for u, v in edges:
        iu, iv = index[u], index[v]
        a, b = pts[iu], pts[iv]
        x0, x1 = min(a[0], b[0]), max(a[0], b[0])
        y0, y1 = min(a[1], b[1]), max(a[1], b[1])
        segs.append((a, b, x0, y0, x1, y1, iu, iv))
        bx0, bx1, by0, by1 = x0 - far_edge, x1 + far_edge, y0 - far_edge, y1 + far_edge
        for k, p in enumerate(pts):
            if bx0 < p[0] < bx1 and by0 < p[1] < by1 and k != iu and k != iv and _seg_dist(p, a, b) < near_edge:
                bad += 1
    if weighted:
        bad += weight_label_positions(g, pos)[1]
    crossings = 0
    for i, (a, b, ax0, ay0, ax1, ay1, ia, ib) in enumerate(segs):
        abx, aby = b[0] - a[0], b[1] - a[1]
        for c, d, cx0, cy0, cx1, cy1, ic, id_ in segs[i + 1 :]:
            # Segments whose boxes are 1 px apart cannot cross (the sign tests below would say so too,
            # unless four points were collinear to the last bit: then boxes that overlap decide).
            if cx0 > ax1 + 1 or ax0 > cx1 + 1 or cy0 > ay1 + 1 or ay0 > cy1 + 1:
                continue
            if ia == ic or ia == id_ or ib == ic or ib == id_:
                continue
            # _crosses(a, b, c, d), the same float operations in the same order
            if (abx * (c[1] - a[1]) - aby * (c[0] - a[0])) * (abx * (d[1] - a[1]) - aby * (d[0] - a[0])) < 0:
                cdx, cdy = d[0] - c[0], d[1] - c[1]
                if (cdx * (a[1] - c[1]) - cdy * (a[0] - c[0])) * (cdx * (b[1] - c[1]) - cdy * (b[0] - c[0])) < 0:
                    crossings += 1
    return bad, crossings


def legibility_problems(
    g: nx.Graph, pos: dict[str, Position], *, weighted: bool, width: int | None = None,
    height: int | None = None,
) -> list[str]:
    """Why a drawing (the node centres the renderer used) is not legible, one line per defect; [] if it is.

    Discs must keep a 14 px gap (centres at least two radii + 14 px apart); no two label boxes (measured
    with the renderer's font) may intersect, and no label may run into another node's disc; an edge passes through a foreign node iff
    the segment comes within the radius plus 8 px of that node's centre; a weight box must find a place
    clear of discs, other boxes and foreign edges; every disc lies inside the canvas."""
    r = NODE_RADIUS
    nodes = sorted(g.nodes)
    out: list[str] = []
    boxes = {n: _label_box(n, pos[n]) for n in nodes}
    for i, u in enumerate(nodes):
        for v in nodes[i + 1 :]:
            d = math.dist(pos[u], pos[v])
            if d < 2 * r + 14:
                out.append(f"nodes {u!r} and {v!r} are {d:.0f} px apart: their discs and labels touch")
            elif _boxes_meet(boxes[u], boxes[v]):
                out.append(f"labels {u!r} and {v!r} overlap")
        for v in nodes:
            if v != u and _box_point_dist(boxes[u], pos[v]) < r:
                out.append(f"label {u!r} runs into the disc of {v!r}")
    for u, v in sorted_edges(g):
        for n in nodes:
            if n not in (u, v):
                d = _seg_dist(pos[n], pos[u], pos[v])
                if d < r + 8:
                    out.append(f"edge {u}-{v} passes {d:.0f} px from the centre of {n!r}")
    if weighted:
        conflicts = weight_label_positions(g, pos)[1]
        if conflicts:
            out.append(f"{conflicts} weight label conflict(s) with discs, edges or other labels")
    if width is not None and height is not None:
        for n in nodes:
            x, y = pos[n]
            if not (r <= x <= width - r and r <= y <= height - r):
                out.append(f"node {n!r} at ({x:.0f}, {y:.0f}) is outside the {width}x{height} canvas")
    return out


def _label_box(text: str, centre: Position) -> tuple[float, float, float, float]:
    w, h = _label_width(text), LABEL_SIZE
    return (centre[0] - w / 2, centre[1] - h / 2, centre[0] + w / 2, centre[1] + h / 2)


def _boxes_meet(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _box_point_dist(box: tuple[float, float, float, float], p: Position) -> float:
    dx = max(box[0] - p[0], 0.0, p[0] - box[2])
    dy = max(box[1] - p[1], 0.0, p[1] - box[3])
    return math.hypot(dx, dy)


@lru_cache(maxsize=4096)
def _label_width(text: str) -> int:
    from evalcore.draw import font

    left, _, right, _ = font(LABEL_SIZE).getbbox(text)
    return int(right - left)
