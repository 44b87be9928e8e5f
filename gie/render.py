"""The one GraphVerse drawing style.

Layout: Graphviz `neato` through `nphe4v.core.draw.layout_graph` with a fixed `start` seed, nodes and
edges passed in sorted order, so positions are a pure function of (graph, seed). Pixels: Pillow with its
bundled font (`nphe4v.core.draw` primitives), so bytes do not depend on system fonts.

Style: white canvas 800 px wide for up to 16 nodes, growing with the square root of the node count up to
1400 px for the hard levels (height follows the layout's aspect ratio, at most as tall as wide for the
drawing), dark grey 3 px edges, node discs of radius 25 filled with the node's palette colour and outlined
in black, the node's label in black 18 px type at the centre. Weighted graphs carry each edge weight in red
on a white box at the edge midpoint. A caption strip on top is added only for multi-image instances
("Graph 1", "Part A"); a colour legend strip at the bottom only when the question names colours (focus
and recolouring), listing each named colour as a swatch with its name.

TSP (`distance_table=True`) follows the paper's design: a complete graph whose pairwise distances are shown
in the image. The cities sit on a circle in a seeded order (a circle wide enough that no chord passes
through a foreign disc), all edges are thin grey lines, and a distance table under the drawing gives the
km between every two cities (one weight label per edge would be unreadable for 190 edges).

`choose_layout_seed` tries a few seeds and keeps the first whose drawing has no legibility defect (see
`layout_defects`), so every stored `layout_seed` draws cleanly or is the least bad of its candidates.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Sequence
from functools import lru_cache

import networkx as nx
from PIL import Image

from gie.graphs import DEFAULT_COLOR, PALETTE, color_rgb, sorted_edges, to_node_link
from nphe4v.core.draw import (
    ACCENT,
    BG,
    EDGE_INK,
    INK,
    centered_text,
    labelled_box,
    layout_graph,
    new_canvas,
    segment_hits_box,
    text_size,
)

# 800 px keeps 20 px labels crisp while PNG encoding (the main cost of generating 11,000 instances)
# stays affordable; a 1024 px canvas costs 60% more pixels for no gain in legibility.
WIDTH = 800
MAX_DRAWING_HEIGHT = 800
MIN_HEIGHT = 360
MARGIN = 52
NODE_RADIUS = 25.0
LABEL_SIZE = 18
WEIGHT_SIZE = 17
CAPTION_H = 48
LEGEND_H = 44
EDGE_WIDTH = 3

Position = tuple[float, float]
RULE = (210, 210, 210)
PNG_COMPRESS_LEVEL = 1  # indexed drawings compress well even at 1; 6 costs 2.5x the time


def _fixed_palette() -> Image.Image:
    """Every colour a drawing can contain: the flat inks and fills, plus 15-step ramps for the
    antialiased glyph edges (black on each fill and on white, red and grey on white)."""
    flat = [BG, INK, EDGE_INK, ACCENT, RULE, *PALETTE.values()]
    ramps = []
    for fill in [*PALETTE.values(), BG]:
        ramps += [tuple(round(INK[i] + (fill[i] - INK[i]) * k / 16) for i in range(3)) for k in range(1, 16)]
    for ink in (ACCENT, EDGE_INK):
        ramps += [tuple(round(ink[i] + (BG[i] - ink[i]) * k / 16) for i in range(3)) for k in range(1, 16)]
    colours = list(dict.fromkeys([*flat, *ramps]))
    assert len(colours) <= 256
    img = Image.new("P", (1, 1))
    img.putpalette([c for rgb in colours for c in rgb] + [0] * (768 - 3 * len(colours)))
    return img


_PALETTE_IMAGE = _fixed_palette()


def to_png(img: Image.Image) -> bytes:
    """Indexed PNG on a fixed palette: the drawings only ever hold a few flat colours and their
    antialiased blends, so nothing visible is lost, and encoding is 3-4x faster than RGB (PNG
    encoding dominated the time to generate a split)."""
    import io

    q = img.quantize(palette=_PALETTE_IMAGE, dither=Image.Dither.NONE)
    buf = io.BytesIO()
    q.save(buf, format="PNG", compress_level=PNG_COMPRESS_LEVEL)
    return buf.getvalue()


MAX_WIDTH = 1400
# Hard levels (up to 50 nodes): the canvas grows like sqrt(n) so the area per node stays roughly that
# of a 16-node drawing on 800 px.
WIDTH_PER_SQRT_NODE = 200


def canvas_width(n: int) -> int:
    return int(min(MAX_WIDTH, max(WIDTH, round(WIDTH_PER_SQRT_NODE * math.sqrt(max(n, 1))))))


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


def layout_pixels(
    g: nx.Graph, seed: int, *, caption: bool = False, distance_table: bool = False
) -> tuple[dict[str, Position], int]:
    """Pixel centres of the nodes and the drawing height (without caption/legend strips).

    neato with the seed; if that drawing is ambiguous (see `layout_defects`) and Graphviz's circular
    layout is less so (nodes on a circle in the angular order neato gave them), that is used instead: on a circle no edge can pass through a foreign
    node, which rescues dense graphs (near-cliques of hub airports) that neato draws with collinear
    nodes. The choice is a pure function of (graph, seed)."""
    nodes = sorted(g.nodes)
    top = CAPTION_H if caption else 0
    width = image_width(g, distance_table=distance_table)
    if len(nodes) == 1:
        return {nodes[0]: (width / 2, top + MIN_HEIGHT / 2)}, MIN_HEIGHT
    if distance_table:
        return _circle(nodes, seed, top, width)
    edges = sorted_edges(g)
    weighted = any("weight" in d for _, _, d in g.edges(data=True))
    pos_pt = layout_graph(nodes, edges, seed)
    pos, height = _scale(pos_pt, top, width)
    pos = _repair(g, pos, width, top, height)
    score = layout_defects(g, pos, weighted)
    if score[0] == 0:
        return pos, height
    # Graphviz's circo aborts the whole process (heap corruption in its C code) on some small dense
    # graphs, e.g. 11 hub airports with 24 routes, so the circular fallback is our own.
    alt, alt_height = _scale(_circular_from(pos_pt), top, width)
    alt = _repair(g, alt, width, top, alt_height)
    if layout_defects(g, alt, weighted) < score:
        return alt, alt_height
    return pos, height


def _circular_from(pos_pt: dict[str, Position]) -> dict[str, Position]:
    """The nodes on a circle, in the angular order they have around the centroid of `pos_pt` (so
    neighbours in the given layout stay near), with the radius of the TSP circle for this many nodes."""
    names = sorted(pos_pt)
    cx = sum(pos_pt[n][0] for n in names) / len(names)
    cy = sum(pos_pt[n][1] for n in names) / len(names)
    order = sorted(names, key=lambda n: (math.atan2(pos_pt[n][1] - cy, pos_pt[n][0] - cx), n))
    r = _circle_radius(len(order))
    return {n: (r * math.cos(2 * math.pi * i / len(order)), r * math.sin(2 * math.pi * i / len(order)))
            for i, n in enumerate(order)}


REPAIR_ROUNDS = 40


def _repair(g: nx.Graph, pos: dict[str, Position], width: int, top: float, height: int) -> dict[str, Position]:
    """Nudge nodes out of the near-misses that make a drawing ambiguous: a node grazed by a foreign edge
    moves away from the segment, two discs too close move apart, a little more than needed each round.
    neato's layouts of 20-50 node graphs, scaled to the canvas, usually have a handful of such
    near-misses; this removes most of them. Deterministic: nodes and edges in sorted order."""
    r = NODE_RADIUS
    nodes = sorted(g.nodes)
    edges = sorted_edges(g)
    p = {n: list(pos[n]) for n in nodes}
    lo_x, hi_x = MARGIN / 2 + r, width - MARGIN / 2 - r
    lo_y, hi_y = top + MARGIN / 2 + r, top + height - MARGIN / 2 - r
    for _ in range(REPAIR_ROUNDS):
        moved = False
        for i, u in enumerate(nodes):
            for v in nodes[i + 1 :]:
                dx, dy = p[v][0] - p[u][0], p[v][1] - p[u][1]
                d = math.hypot(dx, dy)
                need = 2 * r + 18
                if d < need:
                    if d < 1e-6:
                        dx, dy, d = 1.0, 0.0, 1.0
                    push = (need - d) / 2 + 1
                    p[u][0] -= dx / d * push
                    p[u][1] -= dy / d * push
                    p[v][0] += dx / d * push
                    p[v][1] += dy / d * push
                    moved = True
        for a, b in edges:
            for n in nodes:
                if n in (a, b):
                    continue
                pa, pb, pn = p[a], p[b], p[n]
                sx, sy = pb[0] - pa[0], pb[1] - pa[1]
                t = max(0.0, min(1.0, ((pn[0] - pa[0]) * sx + (pn[1] - pa[1]) * sy) / max(sx * sx + sy * sy, 1e-9)))
                cx, cy = pa[0] + t * sx, pa[1] + t * sy
                dx, dy = pn[0] - cx, pn[1] - cy
                d = math.hypot(dx, dy)
                need = r + 12
                if d < need:
                    if d < 1e-6:
                        dx, dy, d = -sy, sx, max(math.hypot(sx, sy), 1e-9)
                    push = need - d + 1
                    # the node moves most; the edge's ends give way a little in the other direction
                    pn[0] += dx / d * push * 0.7
                    pn[1] += dy / d * push * 0.7
                    for end in (pa, pb):
                        end[0] -= dx / d * push * 0.15
                        end[1] -= dy / d * push * 0.15
                    moved = True
        for n in nodes:
            p[n][0] = min(max(p[n][0], lo_x), hi_x)
            p[n][1] = min(max(p[n][1], lo_y), hi_y)
        if not moved:
            break
    return {n: (round(p[n][0], 2), round(p[n][1], 2)) for n in nodes}


# Distance-table drawings (TSP).
TABLE_FONT = 15
TABLE_CELL_W = 50
TABLE_CELL_H = 24
TABLE_GAP = 24
CHORD_CLEARANCE = 10.0  # layout_defects flags a segment nearer than NODE_RADIUS + 8


def _circle_radius(n: int) -> float:
    """Smallest circle on which no chord passes within NODE_RADIUS + CHORD_CLEARANCE of a foreign centre
    (the nearest chord to a city joins its two neighbours on the circle) and neighbours keep apart."""
    if n <= 3:
        return 3 * NODE_RADIUS
    sagitta = 1 - math.cos(2 * math.pi / n)
    spacing = 2 * math.sin(math.pi / n)
    return max((NODE_RADIUS + CHORD_CLEARANCE) / sagitta, (2 * NODE_RADIUS + 16) / spacing, 3 * NODE_RADIUS)


def _table_size(n: int) -> tuple[int, int]:
    return (n + 1) * TABLE_CELL_W, (n + 1) * TABLE_CELL_H


def image_width(g: nx.Graph, *, distance_table: bool = False) -> int:
    n = g.number_of_nodes()
    if distance_table:
        need = max(2 * _circle_radius(n) + 2 * NODE_RADIUS, _table_size(n)[0]) + 2 * MARGIN
        return int(max(WIDTH, math.ceil(need)))
    return canvas_width(n)


def _circle(nodes: list[str], seed: int, top: float, width: int) -> tuple[dict[str, Position], int]:
    """Cities on a circle in a seeded order (so the order carries no hint of the tour); the drawing
    height includes the distance table under the circle."""
    order = list(nodes)
    random.Random(seed).shuffle(order)
    n = len(order)
    r = _circle_radius(n)
    cx, cy = width / 2, top + MARGIN + NODE_RADIUS + r
    pos = {v: (round(cx + r * math.sin(2 * math.pi * i / n), 2), round(cy - r * math.cos(2 * math.pi * i / n), 2))
           for i, v in enumerate(order)}
    height = 2 * (MARGIN + NODE_RADIUS + r) + TABLE_GAP + _table_size(n)[1] + MARGIN // 2
    return pos, int(math.ceil(height))


def _draw_distance_table(draw, g: nx.Graph, y0: float, width: int) -> None:  # type: ignore[no-untyped-def]
    """Row and column headers are the city labels (sorted); cell (a, b) is the km between a and b."""
    nodes = sorted(g.nodes)
    tw, _ = _table_size(len(nodes))
    x0 = (width - tw) / 2
    cw, ch = TABLE_CELL_W, TABLE_CELL_H
    for i in range(len(nodes) + 1):
        for j in range(len(nodes) + 1):
            x, y = x0 + j * cw, y0 + i * ch
            if i == 0 and j == 0:
                continue
            header = i == 0 or j == 0
            draw.rectangle([x, y, x + cw, y + ch], fill=(235, 235, 235) if header else BG, outline=RULE)
            if header:
                text = nodes[j - 1] if i == 0 else nodes[i - 1]
            elif i == j:
                text = "-"
            else:
                text = str(g.edges[nodes[i - 1], nodes[j - 1]]["weight"])
            centered_text(draw, (x + cw / 2, y + ch / 2 + 1), text, TABLE_FONT)


def _seg_dist(p: Position, a: Position, b: Position) -> float:
    (px, py), (ax, ay), (bx, by) = p, a, b
    dx, dy = bx - ax, by - ay
    t = max(0.0, min(1.0, ((px - ax) * dx + (py - ay) * dy) / max(dx * dx + dy * dy, 1e-9)))
    return math.hypot(px - ax - t * dx, py - ay - t * dy)


def _crosses(a: Position, b: Position, c: Position, d: Position) -> bool:
    def orient(p: Position, q: Position, r: Position) -> float:
        return (q[0] - p[0]) * (r[1] - p[1]) - (q[1] - p[1]) * (r[0] - p[0])

    return orient(a, b, c) * orient(a, b, d) < 0 and orient(c, d, a) * orient(c, d, b) < 0




# Where along its edge a weight box may sit, most preferred first (0.5 = the midpoint).
LABEL_TS = (0.5, 0.4, 0.6, 0.32, 0.68, 0.25, 0.75)


def _box(centre: Position, text: str) -> tuple[float, float, float, float]:
    # Estimated from the bundled font at WEIGHT_SIZE: ~9.5 px per digit plus the white padding.
    w, h = 9.5 * len(text) + 8, 24.0
    x, y = centre
    return (x - w / 2, y - h / 2, x + w / 2, y + h / 2)


def _box_conflicts(
    box: tuple[float, float, float, float],
    edge: tuple[str, str],
    pos: dict[str, Position],
    edges: Sequence[tuple[str, str]],
    placed: Sequence[tuple[float, float, float, float]],
) -> int:
    r = NODE_RADIUS + 3
    x0, y0, x1, y1 = box
    bad = 0
    for p in pos.values():
        if x0 - r < p[0] < x1 + r and y0 - r < p[1] < y1 + r:
            bad += 1
    for a, b in edges:
        if (a, b) != edge and segment_hits_box(pos[a], pos[b], (x0 - 2, y0 - 2, x1 + 2, y1 + 2)):
            bad += 1
    for q in placed:
        if x0 < q[2] + 4 and q[0] < x1 + 4 and y0 < q[3] + 4 and q[1] < y1 + 4:
            bad += 1
    return bad


def weight_label_positions(g: nx.Graph, pos: dict[str, Position]) -> tuple[dict[tuple[str, str], Position], int]:
    """Where each edge's weight box goes (edges in sorted order, each at the first free spot along the
    edge, else the least bad one) and how many conflicts remain."""
    edges = sorted_edges(g)
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
            bad = _box_conflicts(_box(c, text), (u, v), pos, edges, placed)
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
    placed clear of discs, other boxes and foreign edges. Crossings are only a tie-breaker."""
    r = NODE_RADIUS
    nodes = sorted(g.nodes)
    edges = sorted_edges(g)
    bad = 0
    for i, u in enumerate(nodes):
        for v in nodes[i + 1 :]:
            if math.dist(pos[u], pos[v]) < 2 * r + 14:
                bad += 1
    for u, v in edges:
        for n in nodes:
            if n not in (u, v) and _seg_dist(pos[n], pos[u], pos[v]) < r + 8:
                bad += 1
    if weighted:
        bad += weight_label_positions(g, pos)[1]
    crossings = sum(
        _crosses(pos[u], pos[v], pos[a], pos[b])
        for i, (u, v) in enumerate(edges)
        for a, b in edges[i + 1 :]
        if len({u, v, a, b}) == 4
    )
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
    from nphe4v.core.draw import font

    left, _, right, _ = font(LABEL_SIZE).getbbox(text)
    return int(right - left)


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
            pos, _ = layout_pixels(g, image_seed(seed, i), caption=captions, distance_table=distance_table)
            weighted = not distance_table and any("weight" in d for _, _, d in g.edges(data=True))
            a, c = layout_defects(g, pos, weighted)
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


def render_graph(
    g: nx.Graph,
    seed: int,
    *,
    caption: str | None = None,
    legend: Sequence[str] = (),
    distance_table: bool = False,
) -> tuple[bytes, dict[str, Position], float]:
    """PNG bytes, node pixel centres and node radius. `legend`: palette colour names to explain;
    `distance_table`: TSP's complete-graph style (see the module doc)."""
    key = json.dumps(to_node_link(g), sort_keys=True)
    png, pos_items = _render_cached(key, seed, caption, tuple(legend), distance_table)
    return png, dict(pos_items), NODE_RADIUS


@lru_cache(maxsize=64)
def _render_cached(
    graph_json: str, seed: int, caption: str | None, legend: tuple[str, ...], distance_table: bool = False
) -> tuple[bytes, tuple[tuple[str, Position], ...]]:
    # Generation renders once to learn positions (edits need them) and build_instance renders again:
    # the per-process cache makes the second call free.
    from gie.graphs import from_node_link

    g = from_node_link(json.loads(graph_json))
    pos, draw_h = layout_pixels(g, seed, caption=caption is not None, distance_table=distance_table)
    width = image_width(g, distance_table=distance_table)
    top = CAPTION_H if caption is not None else 0
    height = top + draw_h + (LEGEND_H if legend else 0)
    img, draw = new_canvas(width, height)
    if caption is not None:
        centered_text(draw, (width / 2, CAPTION_H / 2 + 4), caption, 24)
        draw.line([(MARGIN, CAPTION_H - 4), (width - MARGIN, CAPTION_H - 4)], fill=RULE, width=1)
    edges = sorted_edges(g)
    if distance_table:
        for u, v in edges:
            draw.line([pos[u], pos[v]], fill=RULE, width=1)
        n = g.number_of_nodes()
        _draw_distance_table(draw, g, top + draw_h - _table_size(n)[1] - MARGIN // 2, width)
    else:
        for u, v in edges:
            draw.line([pos[u], pos[v]], fill=EDGE_INK, width=EDGE_WIDTH)
        for (u, v), centre in weight_label_positions(g, pos)[0].items():
            labelled_box(draw, centre, str(g.edges[u, v]["weight"]), WEIGHT_SIZE, fill=ACCENT)
    r = NODE_RADIUS
    for n in sorted(g.nodes):
        x, y = pos[n]
        fill = color_rgb(g.nodes[n].get("color", DEFAULT_COLOR))
        draw.ellipse([x - r, y - r, x + r, y + r], fill=fill, outline=INK, width=2)
        centered_text(draw, (x, y), n, LABEL_SIZE)
    if legend:
        _legend(draw, legend, top + draw_h, width)
    return to_png(img), tuple(sorted(pos.items()))


def _legend(draw, names: Sequence[str], y0: int, width: int = WIDTH) -> None:  # type: ignore[no-untyped-def]
    """Swatches with colour names, centred in a strip under the drawing."""
    names = [n for n in PALETTE if n in set(names)]
    sw, gap, size = 20, 30, 17
    widths = [sw + 8 + text_size(draw, n, size)[0] for n in names]
    total = sum(widths) + gap * (len(names) - 1)
    x = (width - total) / 2
    y = y0 + LEGEND_H / 2
    draw.line([(MARGIN, y0 + 2), (width - MARGIN, y0 + 2)], fill=RULE, width=1)
    for n, w in zip(names, widths, strict=True):
        draw.rectangle([x, y - sw / 2, x + sw, y + sw / 2], fill=color_rgb(n), outline=INK, width=1)
        draw.text((x + sw + 8, y), n, font=_font(size), fill=INK, anchor="lm")
        x += w + gap


def _font(size: int):  # type: ignore[no-untyped-def]
    from nphe4v.core.draw import font

    return font(size)
