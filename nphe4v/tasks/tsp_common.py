"""Shared pieces of TSP and TSP-D: the city data model, the generator, the exact Held-Karp solver, tour
helpers, the prompt data lines and the picture.

Generator rule (both tasks): n distinct integer points drawn uniformly from the 10 x 10 grid 0..9 (the
peer's grid); distances are Euclidean distances rounded to 1 decimal (the peer rounds to 2). One decimal
keeps every tour length an exact multiple of 0.1 up to float noise, so equal tours compare equal with a
1e-6 tolerance and models can add the numbers by hand.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from PIL import Image, ImageDraw
from pydantic import BaseModel, Field, model_validator

from evalcore.draw import (
    ACCENT,
    BG,
    EDGE_INK,
    INK,
    NODE_FILL,
    WIDTH,
    centered_text,
    new_canvas,
    text_size,
    title,
    to_png,
)

GRID = 10
# Tour lengths are sums of <= 13 numbers with at most 2 decimals: float noise is ~1e-13, a real
# difference is >= 0.01, so 1e-6 separates "equal" (ties, rotations, reversals) from "longer".
LENGTH_TOL = 1e-6


class TSPData(BaseModel):
    num_cities: int = Field(ge=1)
    # symmetric matrix, distances[i][j] = distance between city i and city j (cities are 0..n-1)
    distances: list[list[float]]
    # integer positions when known (our generator, the 4V position files); only used for the picture
    coords: list[tuple[int, int]] | None = None

    @model_validator(mode="after")
    def _consistent(self) -> TSPData:
        n = self.num_cities
        d = self.distances
        if len(d) != n or any(len(row) != n for row in d):
            raise ValueError(f"distances must be a {n}x{n} matrix")
        for i in range(n):
            if abs(d[i][i]) > 1e-9:
                raise ValueError(f"distances[{i}][{i}] must be 0")
            for j in range(n):
                x = d[i][j]
                if not math.isfinite(x) or x < 0:
                    raise ValueError(f"distances[{i}][{j}]={x} must be finite and >= 0")
                if abs(x - d[j][i]) > 1e-9:
                    raise ValueError(f"distances must be symmetric: [{i}][{j}] != [{j}][{i}]")
        if self.coords is not None and len(self.coords) != n:
            raise ValueError(f"coords must hold {n} points")
        return self


def random_cities(n: int, rng: random.Random) -> tuple[list[tuple[int, int]], list[list[float]]]:
    """n distinct grid points and their Euclidean distances rounded to 1 decimal."""
    cells = rng.sample(range(GRID * GRID), n)
    coords = [(c % GRID, c // GRID) for c in cells]
    dist = [[round(math.dist(a, b), 1) for b in coords] for a in coords]
    return coords, dist


def nearest_neighbour(dist: Sequence[Sequence[float]], start: int = 0) -> list[int]:
    """Greedy tour from `start`: always go to the closest unvisited city (ties: lowest id); closed."""
    n = len(dist)
    tour = [start]
    left = set(range(n)) - {start}
    while left:
        here = tour[-1]
        nxt = min(left, key=lambda c: (dist[here][c], c))
        tour.append(nxt)
        left.remove(nxt)
    return [*tour, start]


def fmt_path(tour: Sequence[int]) -> str:
    return "->".join(str(c) for c in tour)


def fmt_dist(x: float) -> str:
    """1 decimal for our data, 2 for the peer's 2-decimal matrices; the text and the picture agree."""
    if abs(x * 10 - round(x * 10)) < 1e-6:
        return f"{x:.1f}"
    if abs(x * 100 - round(x * 100)) < 1e-6:
        return f"{x:.2f}"
    return f"{x:.4f}".rstrip("0").rstrip(".")


def distance_lines(dist: Sequence[Sequence[float]]) -> tuple[str, ...]:
    n = len(dist)
    return tuple(
        f"Distance between city {i} and city {j}: {fmt_dist(dist[i][j])}"
        for i in range(n)
        for j in range(i + 1, n)
    )


# ---------------------------------------------------------------- picture

SHADE = (230, 230, 230)
GRID_INK = (225, 225, 225)


def _palette_image() -> Image.Image:
    """A fixed 256-colour palette: every flat colour we draw plus 32-step ramps for anti-aliased text on
    each background. Mapping to it is exact for flat areas and invisible for text edges."""
    pairs = [(BG, INK), (BG, ACCENT), (NODE_FILL, INK), (SHADE, INK), (BG, EDGE_INK)]
    colours: list[tuple[int, int, int]] = [BG, INK, ACCENT, NODE_FILL, SHADE, GRID_INK, EDGE_INK]
    for bg, ink in pairs:
        for k in range(1, 32):
            c = tuple(round(b + (i - b) * k / 32) for b, i in zip(bg, ink, strict=True))
            if c not in colours:
                colours.append(c)  # type: ignore[arg-type]
    pal = Image.new("P", (1, 1))
    flat = [v for c in colours[:256] for v in c]
    pal.putpalette(flat + flat[:3] * (256 - len(flat) // 3))
    return pal


_PALETTE = _palette_image()


def _compact_png(img: Image.Image) -> bytes:
    # A palette PNG encodes ~4x faster than RGB (PNG encoding dominates render time) and is ~2.5x smaller.
    return to_png(img.quantize(palette=_PALETTE, dither=Image.Dither.NONE))


def _boxes_overlap(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _box_hits_disc(box: tuple[float, ...], centre: tuple[float, float], radius: float) -> bool:
    px, py = centre
    nx, ny = min(max(px, box[0]), box[2]), min(max(py, box[1]), box[3])
    return (nx - px) ** 2 + (ny - py) ** 2 < radius * radius


Point = tuple[float, float]
Box = tuple[float, float, float, float]

NODE_RADIUS = 20.0
# Largest font first; smaller only when some label finds no free spot (14 px stays legible at 1024 px).
LABEL_SIZES = (20, 18, 16, 14)
LABEL_PAD = 3
_MARGIN = 60
_TOP = 70  # room for the caption
_MAX_HEIGHT = 1400
# An edge passing this close to a city it does not join would read as two edges through that city: it is
# drawn as a gentle arc instead.
_CLEARANCE = NODE_RADIUS + 8
_BULGES = (0.12, -0.12, 0.2, -0.2, 0.3, -0.3, 0.4, -0.4, 0.06, -0.06, 0.16, -0.16, 0.25, -0.25, 0.35, -0.35, 0.5, -0.5, 0.65, -0.65)
_ARC_SAMPLES = 24


@dataclass(frozen=True)
class CityDrawing:
    """Geometry of a city picture, in pixels: what `render_cities` draws and what tests measure."""

    width: int
    height: int
    positions: list[Point]
    node_radius: float
    # (i, j, polyline from city i to city j)
    edges: list[tuple[int, int, list[Point]]]
    # (i, j, label text, label box x0, y0, x1, y1)
    labels: list[tuple[int, int, str, Box]]
    font_size: int
    # "coordinates": cities at their true positions, drawn lengths proportional to the labels;
    # "neato": positions fitted to the distances by Graphviz stress majorisation (labels are the truth)
    geometry: str
    # "edges": every distance written on its edge; "table": the edges carry no numbers and every distance is
    # in a table under the map (row i, column j > i), used when some label on an edge would touch another edge
    labels_on: str = "edges"
    # table mode: (text, cell box, is a header) for every cell of the grid
    table_cells: list[tuple[str, Box, bool]] = field(default_factory=list)


def _euclidean_fits(dist: Sequence[Sequence[float]], coords: Sequence[tuple[int, int]]) -> bool:
    """Whether the distances are the coordinates' Euclidean distances (up to the 2-decimal rounding)."""
    n = len(dist)
    return all(
        abs(dist[i][j] - math.dist(coords[i], coords[j])) <= 0.051 for i in range(n) for j in range(i + 1, n)
    )


def _neato_positions(dist: Sequence[Sequence[float]]) -> list[Point]:
    """Positions whose pairwise distances approximate the matrix: Graphviz neato (stress majorisation) with
    every edge's desired length set to its weight; the start seed is fixed, so the layout is reproducible."""
    import pygraphviz as pgv

    n = len(dist)
    positive = [dist[i][j] for i in range(n) for j in range(i + 1, n) if dist[i][j] > 0]
    unit = (sum(positive) / len(positive)) if positive else 1.0
    g = pgv.AGraph(strict=True, directed=False)
    g.graph_attr.update(start="1", mode="major", overlap="false", sep="+30", maxiter="2000")
    for i in range(n):
        g.add_node(str(i))
    for i in range(n):
        for j in range(i + 1, n):
            g.add_edge(str(i), str(j), len=f"{max(dist[i][j], 0.05 * unit) / unit * 2.0:.4f}")
    g.layout(prog="neato")
    out = []
    for i in range(n):
        x, y = g.get_node(str(i)).attr["pos"].split(",")[:2]
        out.append((float(x), float(y)))
    return out


def _to_pixels(points: Sequence[Point], max_height: int = _MAX_HEIGHT) -> tuple[list[Point], int]:
    """One scale for x and y (drawn lengths keep their ratios), y upwards as on a map, cities kept clear of the
    caption and borders; the picture is at most `max_height` tall."""
    xs = [p[0] for p in points]
    ys = [p[1] for p in points]
    span_x = max(max(xs) - min(xs), 1e-9)
    span_y = max(max(ys) - min(ys), 1e-9)
    scale = min((WIDTH - 2 * _MARGIN) / span_x, (max_height - _TOP - _MARGIN) / span_y)
    height = int(max(min(480, max_height), min(max_height, span_y * scale + _TOP + _MARGIN)))
    off_x = (WIDTH - span_x * scale) / 2
    off_y = _TOP + (height - _TOP - _MARGIN - span_y * scale) / 2
    pix = [(off_x + (x - min(xs)) * scale, off_y + (max(ys) - y) * scale) for x, y in points]
    return pix, height


def _near_foreign_node(poly: Sequence[Point], pos: Sequence[Point], i: int, j: int) -> bool:
    for k, (px, py) in enumerate(pos):
        if k in (i, j):
            continue
        for (x1, y1), (x2, y2) in itertools.pairwise(poly):
            dx, dy = x2 - x1, y2 - y1
            length2 = dx * dx + dy * dy or 1.0
            t = max(0.0, min(1.0, ((px - x1) * dx + (py - y1) * dy) / length2))
            if (x1 + t * dx - px) ** 2 + (y1 + t * dy - py) ** 2 < _CLEARANCE * _CLEARANCE:
                return True
    return False


def _arc(a: Point, b: Point, bulge: float) -> list[Point]:
    """Quadratic Bezier from a to b whose control point sits `bulge` x length off the midpoint."""
    (ax, ay), (bx, by) = a, b
    length = math.dist(a, b) or 1.0
    nx, ny = -(by - ay) / length, (bx - ax) / length
    cx, cy = (ax + bx) / 2 + nx * bulge * length, (ay + by) / 2 + ny * bulge * length
    out = []
    for k in range(_ARC_SAMPLES + 1):
        t = k / _ARC_SAMPLES
        u = 1 - t
        out.append((u * u * ax + 2 * u * t * cx + t * t * bx, u * u * ay + 2 * u * t * cy + t * t * by))
    return out


def _edge_path(pos: Sequence[Point], i: int, j: int, height: int) -> list[Point]:
    straight = [pos[i], pos[j]]
    if not _near_foreign_node(straight, pos, i, j):
        return straight

    def inside(poly: list[Point]) -> bool:
        # room for a label box on the arc, below the caption
        return all(30 <= x <= WIDTH - 30 and _TOP - 10 <= y <= height - 15 for x, y in poly)

    def on_canvas(poly: list[Point]) -> bool:
        return all(0 <= x <= WIDTH and 0 <= y <= height for x, y in poly)

    arcs = [_arc(pos[i], pos[j], bulge) for bulge in _BULGES]
    for fits in (inside, on_canvas):
        for arc in arcs:
            if fits(arc) and not _near_foreign_node(arc, pos, i, j):
                return arc
    return arcs[0]


def _point_along(poly: Sequence[Point], t: float) -> Point:
    """The point at fraction t of the polyline's length."""
    lengths = [math.dist(a, b) for a, b in itertools.pairwise(poly)]
    goal = t * sum(lengths)
    last = len(lengths) - 1
    for k, ((a, b), seg) in enumerate(zip(itertools.pairwise(poly), lengths, strict=True)):
        if goal <= seg or k == last:
            f = min(goal / seg, 1.0) if seg else 0.0
            return a[0] + f * (b[0] - a[0]), a[1] + f * (b[1] - a[1])
        goal -= seg
    return poly[-1]


def _segments_hit_box(a: np.ndarray, b: np.ndarray, box: Box) -> np.ndarray:
    """Which segments a[k]->b[k] meet the box: `segment_hits_box` (Liang-Barsky) over arrays of segments."""
    # Only segments whose bounding box meets the box can hit it; the clipping below runs on those.
    near = (
        (np.minimum(a[:, 0], b[:, 0]) <= box[2]) & (np.maximum(a[:, 0], b[:, 0]) >= box[0])
        & (np.minimum(a[:, 1], b[:, 1]) <= box[3]) & (np.maximum(a[:, 1], b[:, 1]) >= box[1])
    )
    out = np.zeros(len(a), dtype=bool)
    idx = np.flatnonzero(near)
    if idx.size:
        out[idx] = _clip_hits(a[idx], b[idx], box)
    return out


def _clip_hits(a: np.ndarray, b: np.ndarray, box: Box) -> np.ndarray:
    d = b - a
    t0 = np.zeros(len(a))
    t1 = np.ones(len(a))
    ok = np.ones(len(a), dtype=bool)
    for p, q in (
        (-d[:, 0], a[:, 0] - box[0]), (d[:, 0], box[2] - a[:, 0]),
        (-d[:, 1], a[:, 1] - box[1]), (d[:, 1], box[3] - a[:, 1]),
    ):
        flat = p == 0
        ok &= ~(flat & (q < 0))
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.where(flat, 0.0, q / np.where(flat, 1.0, p))
        t0 = np.where(~flat & (p < 0), np.maximum(t0, t), t0)
        t1 = np.where(~flat & (p > 0), np.minimum(t1, t), t1)
    return ok & (t0 <= t1)


# Spots tried along an edge, nearest the middle first (a label far from its edge's middle reads ambiguously).
_SPOTS = sorted((0.5 + k * 0.025 for k in range(-15, 16)), key=lambda t: (abs(t - 0.5), t))


def _place_labels(
    pos: Sequence[Point], edges: Sequence[tuple[int, int, list[Point]]], texts: dict[tuple[int, int], str], size: int
) -> list[tuple[int, int, str, Box]] | None:
    """A box on its own edge for every label, overlapping no other label, no city and no other edge (the spot
    nearest the middle of the edge), or None if some label has no such spot at this font size."""
    measure = ImageDraw.Draw(Image.new("RGB", (1, 1)))
    seg_a = np.array([p for _, _, poly in edges for p in poly[:-1]], dtype=np.float64)
    seg_b = np.array([q for _, _, poly in edges for q in poly[1:]], dtype=np.float64)
    seg_edge = np.array([e for e, (_, _, poly) in enumerate(edges) for _ in poly[1:]])
    # Short edges first: they have the fewest spots.
    order = sorted(range(len(edges)), key=lambda e: (math.dist(pos[edges[e][0]], pos[edges[e][1]]), e))
    placed: list[tuple[int, int, str, Box]] = []
    for e in order:
        i, j, poly = edges[e]
        label = texts[(i, j)]
        w, h = text_size(measure, label, size)
        best: Box | None = None
        for t in _SPOTS:
            x, y = _point_along(poly, t)
            box = (x - w / 2 - LABEL_PAD, y - h / 2 - LABEL_PAD, x + w / 2 + LABEL_PAD, y + h / 2 + LABEL_PAD)
            if box[0] < 0 or box[2] > WIDTH:
                continue
            if any(_box_hits_disc(box, c, NODE_RADIUS + 2) for c in pos):
                continue
            if any(_boxes_overlap(box, other[3]) for other in placed):
                continue
            hit = _segments_hit_box(seg_a, seg_b, _grow(box, LINE_HALF_WIDTH))
            if not (seg_edge[hit] != e).any():
                best = box
                break
        if best is None:
            return None
        placed.append((i, j, label, best))
    return placed


def _grow(box: Box, by: float) -> Box:
    return (box[0] - by, box[1] - by, box[2] + by, box[3] + by)


# Edges are drawn 2 px wide: a line whose centre passes within 1 px of a label box touches it.
LINE_HALF_WIDTH = 1.0
TABLE_FONT = 18
# From 11 cities (55 edges) on, a free spot on every edge is found for under 10 % of generated instances
# (bench/bench_tsp_pictures.py): the table is used straight away, and levels 8-10 all look alike.
TABLE_FROM = 11
_TABLE_SIDE = 16


def _table(n: int, texts: dict[tuple[int, int], str], top: float) -> tuple[list, list[tuple[str, Box, bool]], float]:
    """The upper triangle of the distance matrix as a grid under the map: row i (cities 0..n-2) and column
    j > i (cities 1..n-1) hold the distance between i and j, so every distance is written exactly once.
    Returns the distance labels (i, j, text, text box), all cells (text, cell box, is header) and the bottom."""
    measure = ImageDraw.Draw(Image.new("RGB", (1, 1)))
    col_w = (WIDTH - 2 * _TABLE_SIDE) / n
    row_h = round(TABLE_FONT * 1.8)
    cells: list[tuple[str, Box, bool]] = []
    labels = []

    def cell(r: int, c: int) -> Box:
        x0 = _TABLE_SIDE + c * col_w
        y0 = top + r * row_h
        return (x0, y0, x0 + col_w, y0 + row_h)

    cells.append(("", cell(0, 0), True))
    for j in range(1, n):
        cells.append((str(j), cell(0, j), True))
    for i in range(n - 1):
        cells.append((str(i), cell(i + 1, 0), True))
        for j in range(1, n):
            box = cell(i + 1, j)
            text = texts[(i, j)] if j > i else ""
            cells.append((text, box, False))
            if text:
                w, h = text_size(measure, text, TABLE_FONT)
                cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
                labels.append((i, j, text, (cx - w / 2 - 2, cy - h / 2 - 2, cx + w / 2 + 2, cy + h / 2 + 2)))
    return labels, cells, top + n * row_h


def layout_cities(dist: Sequence[Sequence[float]], coords: Sequence[tuple[int, int]] | None) -> CityDrawing:
    """Where every city, edge and weight label goes. The labels are the truth; the geometry agrees with them
    exactly when the cities' coordinates are known (the 4V files and our generator), and approximately
    otherwise (neato fit)."""
    n = len(dist)
    if coords is not None and _euclidean_fits(dist, coords):
        raw, geometry = [(float(x), float(y)) for x, y in coords], "coordinates"
    elif n <= 2:
        raw, geometry = [(float(i), 0.0) for i in range(n)], "neato"
    else:
        raw, geometry = _neato_positions(dist), "neato"
    texts = {(i, j): fmt_dist(dist[i][j]) for i in range(n) for j in range(i + 1, n)}
    if n < TABLE_FROM:
        pos, height = _to_pixels(raw) if n > 1 else ([(WIDTH / 2, (_TOP + 480) / 2)], 480)
        edges = [(i, j, _edge_path(pos, i, j, height)) for i in range(n) for j in range(i + 1, n)]
        for size in LABEL_SIZES:
            placed = _place_labels(pos, edges, texts, size)
            if placed is not None:
                return CityDrawing(WIDTH, height, pos, NODE_RADIUS, edges, placed, size, geometry)
    # Some label would sit on another edge at every font size: the map keeps every edge, and the distances go
    # into a table under it (as GraphVerse's TSP pictures do), each written once and touching nothing.
    table_h = round(TABLE_FONT * 1.8) * n + 2 * _TABLE_SIDE
    pos, map_h = _to_pixels(raw, _MAX_HEIGHT - table_h)
    edges = [(i, j, _edge_path(pos, i, j, map_h)) for i in range(n) for j in range(i + 1, n)]
    labels, cells, bottom = _table(n, texts, map_h + _TABLE_SIDE)
    return CityDrawing(
        WIDTH, int(bottom + _TABLE_SIDE), pos, NODE_RADIUS, edges, labels, TABLE_FONT, geometry, "table", cells
    )


def render_cities(
    dist: Sequence[Sequence[float]], coords: Sequence[tuple[int, int]] | None, caption: str
) -> bytes:
    """The complete weighted graph, as the papers describe the TSP figures: every city, every pair joined,
    every distance written on its edge."""
    d = layout_cities(dist, coords)
    img, draw = new_canvas(d.width, d.height)
    title(draw, caption, y=34, size=26)
    for _, _, poly in d.edges:
        draw.line(poly, fill=EDGE_INK, width=2)
    if d.labels_on == "table":
        for text, box, header in d.table_cells:
            draw.rectangle(box, fill=SHADE if header else BG, outline=INK, width=1)
            if header and text:
                centered_text(draw, ((box[0] + box[2]) / 2, (box[1] + box[3]) / 2), text, d.font_size, fill=INK)
    for _, _, label, box in d.labels:
        centre = ((box[0] + box[2]) / 2, (box[1] + box[3]) / 2)
        draw.rectangle(box, fill=BG)
        centered_text(draw, centre, label, d.font_size, fill=ACCENT)
    r = d.node_radius
    for k, (x, y) in enumerate(d.positions):
        draw.ellipse([x - r, y - r, x + r, y + r], fill=NODE_FILL, outline=INK, width=2)
        centered_text(draw, (x, y), str(k), 22)
    return _compact_png(img)
