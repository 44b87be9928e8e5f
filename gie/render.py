"""The one GraphVerse drawing style.

Layout: Graphviz `neato` through `evalcore.draw.layout_graph` with a fixed `start` seed, nodes and
edges passed in sorted order, so positions are a pure function of (graph, seed). Pixels: Pillow with its
bundled font (`evalcore.draw` primitives), so bytes do not depend on system fonts.

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

Modules: `gie.style` (the measures), `gie.layout` (positions and layout seeds), `gie.legibility`
(the checks); this one draws.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import lru_cache

import networkx as nx
from PIL import Image

from evalcore.draw import (
    ACCENT,
    BG,
    EDGE_INK,
    INK,
    centered_text,
    labelled_box,
    new_canvas,
    text_size,
)
from gie.graphs import DEFAULT_COLOR, PALETTE, color_rgb, sorted_edges, to_node_link
from gie.layout import layout_pixels
from gie.legibility import weight_label_positions
from gie.style import (
    CAPTION_H,
    EDGE_WIDTH,
    LABEL_SIZE,
    LEGEND_H,
    MARGIN,
    NODE_RADIUS,
    PNG_COMPRESS_LEVEL,
    RULE,
    TABLE_CELL_H,
    TABLE_CELL_W,
    TABLE_FONT,
    WEIGHT_SIZE,
    WIDTH,
    Position,
    image_width,
    table_size,
)


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


def _draw_distance_table(draw, g: nx.Graph, y0: float, width: int) -> None:  # type: ignore[no-untyped-def]
    """Row and column headers are the city labels (sorted); cell (a, b) is the km between a and b."""
    nodes = sorted(g.nodes)
    tw, _ = table_size(len(nodes))
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
        _draw_distance_table(draw, g, top + draw_h - table_size(n)[1] - MARGIN // 2, width)
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
    from evalcore.draw import font

    return font(size)
