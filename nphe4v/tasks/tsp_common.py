"""Shared pieces of TSP and TSP-D: the city data model, the generator, the exact Held-Karp solver, tour
helpers, the prompt data lines and the picture.

Generator rule (both tasks): n distinct integer points drawn uniformly from the 10 x 10 grid 0..9 (the
peer's grid); distances are Euclidean distances rounded to 1 decimal (the peer rounds to 2). One decimal
keeps every tour length an exact multiple of 0.1 up to float noise, so equal tours compare equal with a
1e-6 tolerance and models can add the numbers by hand.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

import numpy as np
from PIL import Image, ImageDraw
from pydantic import BaseModel, Field, model_validator

from nphe4v.core.draw import (
    ACCENT,
    BG,
    EDGE_INK,
    INK,
    NODE_FILL,
    WIDTH,
    centered_text,
    labelled_box,
    new_canvas,
    segment_hits_box,
    text_size,
    title,
    to_png,
)

GRID = 10
# Tour lengths are sums of <= 13 numbers with at most 2 decimals: float noise is ~1e-13, a real
# difference is >= 0.01, so 1e-6 separates "equal" (ties, rotations, reversals) from "longer".
LENGTH_TOL = 1e-6
# Largest n drawn as a complete weighted graph; beyond it the edge labels crowd, so a table is used.
GRAPH_MAX_CITIES = 6


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


def tour_length(dist: Sequence[Sequence[float]], cycle: Sequence[int]) -> float:
    """Length of the closed tour visiting `cycle` in order and returning to cycle[0]."""
    n = len(cycle)
    return float(sum(dist[cycle[k]][cycle[(k + 1) % n]] for k in range(n)))


def held_karp(dist: Sequence[Sequence[float]]) -> tuple[float, list[int]]:
    """Exact shortest closed tour: (length, [0, ..., 0])."""
    n = len(dist)
    if n == 1:
        return 0.0, [0, 0]
    if n == 2:
        return tour_length(dist, [0, 1]), [0, 1, 0]
    tour = held_karp_order(np.asarray(dist, dtype=np.float64))
    if tour is None:  # only a matrix with infinite entries has no tour
        raise ValueError("no finite tour")
    return tour_length(dist, tour[:-1]), tour


def held_karp_order(d: np.ndarray) -> list[int] | None:
    """Shortest closed tour [0, ..., 0] of an n x n matrix (n >= 3) where np.inf marks a missing edge, or
    None when no finite tour exists (GraphVerse's graphs are not complete).

    Bitmask DP over subsets of cities 1..n-1, vectorised with numpy one subset size and one last city at
    a time (n=13 is 12 layers x 12 cities of array ops, a few ms instead of ~0.5 s of Python loops).
    """
    n = len(d)
    m = n - 1  # city c (1..n-1) is bit c-1
    full = 1 << m
    sub = d[1:, 1:]
    dp = np.full((full, m), np.inf)
    for j in range(m):
        dp[1 << j, j] = d[0, j + 1]
    masks = np.arange(full)
    popcount = np.zeros(full, dtype=np.int64)
    for b in range(m):
        popcount += (masks >> b) & 1
    for size in range(2, m + 1):
        layer = masks[popcount == size]
        for j in range(m):
            with_j = layer[((layer >> j) & 1) == 1]
            # dp[prev, i] is inf for i outside prev (and for i == j), so the min only sees valid paths.
            dp[with_j, j] = (dp[with_j ^ (1 << j)] + sub[:, j]).min(axis=1)
    closing = dp[full - 1] + d[1:, 0]
    j = int(np.argmin(closing))
    if not np.isfinite(closing[j]):
        return None
    mask, rev = full - 1, []
    while True:
        rev.append(j + 1)
        prev = mask ^ (1 << j)
        if prev == 0:
            break
        j = int(np.argmin(dp[prev] + sub[:, j]))
        mask = prev
    return [0, *rev[::-1], 0]


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


def _complete_graph(dist: Sequence[Sequence[float]], caption: str) -> bytes:
    """Cities on a circle (no three collinear, so no edge runs behind a node), every pair joined and
    labelled. Each label slides along its own edge to a spot that covers no other edge and no other label:
    on a circle the diagonals' midpoints coincide (e.g. the centre of a square or a hexagon)."""
    n = len(dist)
    height, radius, node_r, size = 900, 330.0, 30, 26
    cx, cy = WIDTH / 2, 70 + (height - 70) / 2
    pos = [
        (cx + radius * math.cos(-math.pi / 2 + 2 * math.pi * i / n),
         cy + radius * math.sin(-math.pi / 2 + 2 * math.pi * i / n))
        for i in range(n)
    ]
    img, draw = new_canvas(WIDTH, height)
    title(draw, caption, y=34, size=28)
    edges = [(i, j) for i in range(n) for j in range(i + 1, n)]
    # polygon sides first: they have free midpoints; diagonals then work around them
    edges.sort(key=lambda e: (min(e[1] - e[0], n - (e[1] - e[0])), e))
    ts = sorted((0.5 + k * 0.03 for k in range(-11, 12)), key=lambda t: (abs(t - 0.5), t))
    placed: list[tuple[float, ...]] = []
    labels: list[tuple[tuple[float, float], str]] = []
    for i, j in edges:
        label = fmt_dist(dist[i][j])
        w, h = text_size(draw, label, size)
        best: tuple[float, float] | None = None
        best_cost = math.inf
        for t in ts:
            x = pos[i][0] + t * (pos[j][0] - pos[i][0])
            y = pos[i][1] + t * (pos[j][1] - pos[i][1])
            box = (x - w / 2 - 6, y - h / 2 - 6, x + w / 2 + 6, y + h / 2 + 6)
            cost = 0.0
            cost += 10 * sum(_boxes_overlap(box, b) for b in placed)
            cost += sum(
                segment_hits_box(pos[a], pos[b], box) for a, b in edges if {a, b} != {i, j}
            )
            cost += 10 * sum(
                math.dist((min(max(px, box[0]), box[2]), min(max(py, box[1]), box[3])), (px, py)) < node_r
                for px, py in pos
            )
            if cost < best_cost:
                best, best_cost = (x, y), cost
            if cost == 0:
                break
        assert best is not None
        placed.append((best[0] - w / 2 - 6, best[1] - h / 2 - 6, best[0] + w / 2 + 6, best[1] + h / 2 + 6))
        labels.append((best, label))
    for i, j in edges:
        draw.line([pos[i], pos[j]], fill=EDGE_INK, width=3)
    for xy, label in labels:
        labelled_box(draw, xy, label, size, fill=ACCENT, pad=4)
    for i, (x, y) in enumerate(pos):
        draw.ellipse([x - node_r, y - node_r, x + node_r, y + node_r], fill=NODE_FILL, outline=INK, width=2)
        centered_text(draw, (x, y), str(i), 28)
    return _compact_png(img)


def _city_map(draw: ImageDraw.ImageDraw, coords: Sequence[tuple[int, int]], top: int, height: int) -> None:
    """Scatter of the labelled cities (no coordinates printed: the text gives distances, not positions)."""
    xs = [c[0] for c in coords]
    ys = [c[1] for c in coords]
    lo_x, hi_x, lo_y, hi_y = min(xs), max(xs), min(ys), max(ys)
    margin = 30
    scale = min((WIDTH - 2 * 120) / max(hi_x - lo_x, 1), (height - 2 * margin) / max(hi_y - lo_y, 1))
    off_x = (WIDTH - (hi_x - lo_x) * scale) / 2
    off_y = top + (height - (hi_y - lo_y) * scale) / 2

    def px(c: tuple[int, int]) -> tuple[float, float]:
        # y grows upwards, as on a map
        return off_x + (c[0] - lo_x) * scale, off_y + (hi_y - c[1]) * scale

    if hi_x - lo_x <= 20 and hi_y - lo_y <= 20:
        for gx in range(lo_x, hi_x + 1):
            draw.line([px((gx, lo_y)), px((gx, hi_y))], fill=GRID_INK, width=1)
        for gy in range(lo_y, hi_y + 1):
            draw.line([px((lo_x, gy)), px((hi_x, gy))], fill=GRID_INK, width=1)
    r = min(22, max(14, scale * 0.44))
    for i, c in enumerate(coords):
        x, y = px(c)
        draw.ellipse([x - r, y - r, x + r, y + r], fill=NODE_FILL, outline=INK, width=2)
        centered_text(draw, (x, y), str(i), int(r * 1.15))


def _distance_table(draw: ImageDraw.ImageDraw, dist: Sequence[Sequence[float]], top: int) -> None:
    """Full symmetric matrix with shaded row and column headers (drawn in place: one PNG encode, not two)."""
    n = len(dist)
    size = 21 if n > 10 else 24
    row_h = int(size * 1.8)
    col_w = (WIDTH - 32) / (n + 1)
    for r in range(n + 1):
        for c in range(n + 1):
            x0, y0 = 16 + c * col_w, top + r * row_h
            draw.rectangle([x0, y0, x0 + col_w, y0 + row_h], fill=SHADE if r == 0 or c == 0 else BG,
                           outline=INK, width=1)
            if r == 0:
                txt = "" if c == 0 else str(c - 1)
            elif c == 0:
                txt = str(r - 1)
            else:
                txt = "-" if r == c else fmt_dist(dist[r - 1][c - 1])
            if txt:
                centered_text(draw, (x0 + col_w / 2, y0 + row_h / 2), txt, size)


def render_cities(
    dist: Sequence[Sequence[float]], coords: Sequence[tuple[int, int]] | None, caption: str
) -> bytes:
    """The picture carries every pairwise distance: a labelled complete graph for n <= 6, otherwise a
    distance matrix (under a map of the cities when their positions are known)."""
    n = len(dist)
    if n <= GRAPH_MAX_CITIES:
        return _complete_graph(dist, caption)
    map_h = 420 if coords is not None else 0
    top = 60
    table_top = top + map_h + 50
    row_h = int((21 if n > 10 else 24) * 1.8)
    img, draw = new_canvas(WIDTH, table_top + (n + 1) * row_h + 16)
    title(draw, caption, y=30, size=28)
    if coords is not None:
        _city_map(draw, coords, top, map_h)
    title(draw, "Distance between each pair of cities", y=table_top - 24, size=24)
    _distance_table(draw, dist, table_top)
    return _compact_png(img)
