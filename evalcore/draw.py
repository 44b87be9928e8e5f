"""Deterministic drawing helpers shared by every task's `render`.

Graphviz (pygraphviz, `neato` with a fixed `start` seed) only computes node positions; the pixels are
drawn here with Pillow and its bundled font. That keeps PNG bytes independent of the machine's system
fonts (Graphviz's own PNG output goes through fontconfig) and keeps the exact node positions and edge
geometry, which the GraphVerse image edits and evidence need.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from PIL import Image, ImageDraw, ImageFont

WIDTH = 1024
BG = (255, 255, 255)
INK = (0, 0, 0)
NODE_FILL = (173, 216, 230)
EDGE_INK = (60, 60, 60)
ACCENT = (200, 30, 30)


@lru_cache(maxsize=32)
def font(size: int) -> ImageFont.FreeTypeFont:
    # Pillow's bundled font: same glyphs on every machine with the same Pillow version.
    return ImageFont.load_default(size=size)  # type: ignore[return-value]


def new_canvas(width: int, height: int) -> tuple[Image.Image, ImageDraw.ImageDraw]:
    img = Image.new("RGB", (width, height), BG)
    return img, ImageDraw.Draw(img)


def to_png(img: Image.Image) -> bytes:
    buf = io.BytesIO()
    img.save(buf, format="PNG", compress_level=6)
    return buf.getvalue()


def text_size(draw: ImageDraw.ImageDraw, text: str, size: int) -> tuple[int, int]:
    left, top, right, bottom = draw.textbbox((0, 0), text, font=font(size))
    return int(right - left), int(bottom - top)


def centered_text(
    draw: ImageDraw.ImageDraw, xy: tuple[float, float], text: str, size: int, fill=INK
) -> None:
    draw.text(xy, text, font=font(size), fill=fill, anchor="mm")


def labelled_box(
    draw: ImageDraw.ImageDraw, xy: tuple[float, float], text: str, size: int, fill=INK, pad: int = 3
) -> None:
    """Text on a white box, so labels stay readable where they cross lines."""
    w, h = text_size(draw, text, size)
    x, y = xy
    draw.rectangle([x - w / 2 - pad, y - h / 2 - pad, x + w / 2 + pad, y + h / 2 + pad], fill=BG)
    centered_text(draw, xy, text, size, fill)


def title(draw: ImageDraw.ImageDraw, text: str, y: int = 28, size: int = 28, width: int = WIDTH) -> None:
    centered_text(draw, (width / 2, y), text, size)


def segment_hits_box(
    a: tuple[float, float], b: tuple[float, float], box: tuple[float, ...], t0: float = 0.0, t1: float = 1.0
) -> bool:
    """Whether the part t in [t0, t1] of segment a->b meets the closed box (x0, y0, x1, y1): Liang-Barsky
    clipping, used to keep labels off edges and to find the edges an image edit touches."""
    (ax, ay), (bx, by) = a, b
    dx, dy = bx - ax, by - ay
    x0, y0, x1, y1 = box
    for p, q in ((-dx, ax - x0), (dx, x1 - ax), (-dy, ay - y0), (dy, y1 - ay)):
        if p == 0:
            if q < 0:
                return False
            continue
        t = q / p
        if p < 0:
            t0 = max(t0, t)
        else:
            t1 = min(t1, t)
        if t0 > t1:
            return False
    return True


@dataclass(frozen=True)
class GraphDrawing:
    png: bytes
    width: int
    height: int
    # node -> (x, y) pixel centre; kept for image edits and evidence
    positions: dict[str, tuple[float, float]]
    node_radius: float


def layout_graph(
    nodes: Sequence[str], edges: Sequence[tuple[str, str]], seed: int, prog: str = "neato"
) -> dict[str, tuple[float, float]]:
    """Graphviz layout in points; deterministic for a given seed and Graphviz version."""
    import pygraphviz as pgv

    g = pgv.AGraph(strict=True, directed=False)
    g.graph_attr.update(start=str(seed % (2**31)), overlap="false", sep="+24", mode="major")
    g.node_attr.update(shape="circle", fixedsize="true", width="0.6", height="0.6", label="")
    for n in nodes:
        g.add_node(n)
    for u, v in edges:
        g.add_edge(u, v)
    g.layout(prog=prog)
    pos = {}
    for n in nodes:
        x, y = g.get_node(n).attr["pos"].split(",")[:2]
        pos[n] = (float(x), float(y))
    return pos


def draw_graph(
    nodes: Sequence[str],
    edges: Sequence[tuple[str, str, str | None]],
    seed: int,
    *,
    caption: str | None = None,
    node_fill: dict[str, tuple[int, int, int]] | None = None,
    width: int = WIDTH,
) -> GraphDrawing:
    """Undirected graph: labelled nodes, optional edge labels (weights) at edge midpoints."""
    pos_pt = layout_graph(nodes, [(u, v) for u, v, _ in edges], seed)
    margin = 70
    top = 70 if caption else margin
    xs = [p[0] for p in pos_pt.values()]
    ys = [p[1] for p in pos_pt.values()]
    span_x = max(max(xs) - min(xs), 1.0)
    span_y = max(max(ys) - min(ys), 1.0)
    scale = (width - 2 * margin) / span_x
    height = int(min(max(span_y * scale + top + margin, 480), 1400))
    scale = min(scale, (height - top - margin) / span_y)
    off_x = (width - span_x * scale) / 2
    positions = {
        n: (off_x + (x - min(xs)) * scale, top + (max(ys) - y) * scale) for n, (x, y) in pos_pt.items()
    }
    img, draw = new_canvas(width, height)
    if caption:
        title(draw, caption, y=32, size=26, width=width)
    radius = 24.0
    for u, v, _ in edges:
        draw.line([positions[u], positions[v]], fill=EDGE_INK, width=3)
    for u, v, label in edges:
        if label is None:
            continue
        (x1, y1), (x2, y2) = positions[u], positions[v]
        labelled_box(draw, ((x1 + x2) / 2, (y1 + y2) / 2), label, 22, fill=ACCENT)
    for n in nodes:
        x, y = positions[n]
        fill = (node_fill or {}).get(n, NODE_FILL)
        draw.ellipse([x - radius, y - radius, x + radius, y + radius], fill=fill, outline=INK, width=2)
        centered_text(draw, (x, y), n, 24)
    return GraphDrawing(to_png(img), width, height, positions, radius)


def draw_table(
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    caption: str | None = None,
    width: int = WIDTH,
    cell_fill: dict[tuple[int, int], tuple[int, int, int]] | None = None,
    font_size: int | None = None,
) -> bytes:
    """A ruled table with a header row; `cell_fill[(row, col)]` shades body cells."""
    ncols = len(header)
    nrows = len(rows) + 1
    size = font_size or max(14, min(26, int(900 / max(ncols, 1) / 2.2)))
    row_h = int(size * 1.9)
    top = 64 if caption else 16
    height = top + nrows * row_h + 16
    col_w = (width - 32) / ncols
    img, draw = new_canvas(width, height)
    if caption:
        title(draw, caption, y=30, size=26, width=width)
    for r in range(nrows):
        for c in range(ncols):
            x0 = 16 + c * col_w
            y0 = top + r * row_h
            box = [x0, y0, x0 + col_w, y0 + row_h]
            fill = (230, 230, 230) if r == 0 else (cell_fill or {}).get((r - 1, c), BG)
            draw.rectangle(box, fill=fill, outline=INK, width=1)
            txt = header[c] if r == 0 else rows[r - 1][c]
            if txt:
                centered_text(draw, (x0 + col_w / 2, y0 + row_h / 2), txt, size)
    return to_png(img)
