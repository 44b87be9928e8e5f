"""The GraphVerse drawing style: deterministic bytes, positions inside the canvas, weights, legend."""

from __future__ import annotations

import io
import random

import networkx as nx
from PIL import Image

from gie import layout, legibility, render, style
from gie.graphs import PALETTE, canonical_graph


def _graph(weighted: bool = False) -> nx.Graph:
    g = nx.Graph()
    edges = [("ABC", "DEF"), ("DEF", "GHI"), ("GHI", "ABC"), ("GHI", "JKL"), ("JKL", "MNO"), ("MNO", "PQR")]
    for i, (u, v) in enumerate(edges):
        if weighted:
            g.add_edge(u, v, weight=100 + 37 * i)
        else:
            g.add_edge(u, v)
    for n in g:
        g.nodes[n]["color"] = "sky"
    g.nodes["MNO"]["color"] = "rose"
    return canonical_graph(g)


def _fresh(g: nx.Graph, seed: int, **kw) -> tuple[bytes, dict, float]:
    render._render_cached.cache_clear()
    layout.clear_layout_memo()
    return render.render_graph(g, seed, **kw)


def test_same_graph_and_seed_give_same_bytes():
    g = _graph(weighted=True)
    a = _fresh(g, 11, caption="Graph 1", legend=("sky", "rose"))
    b = _fresh(g, 11, caption="Graph 1", legend=("sky", "rose"))
    assert a == b
    # insertion order of the input graph does not matter
    h = nx.Graph()
    h.add_nodes_from(reversed(list(g.nodes(data=True))))
    h.add_edges_from(reversed(list(g.edges(data=True))))
    assert _fresh(h, 11, caption="Graph 1", legend=("sky", "rose"))[0] == a[0]
    assert _fresh(g, 12)[0] != _fresh(g, 11)[0]


def test_positions_inside_canvas_and_colours_drawn():
    g = _graph()
    png, pos, radius = _fresh(g, 5, legend=("sky", "rose"))
    img = Image.open(io.BytesIO(png)).convert("RGB")
    assert img.width == style.WIDTH and set(pos) == set(g)
    for x, y in pos.values():
        assert radius <= x <= img.width - radius and radius <= y <= img.height - radius - style.LEGEND_H
    x, y = pos["MNO"]
    # a point inside the disc, above the label, carries the node's palette colour
    assert img.getpixel((round(x), round(y - 0.7 * radius))) == PALETTE["rose"]
    x, y = pos["ABC"]
    assert img.getpixel((round(x), round(y - 0.7 * radius))) == PALETTE["sky"]


def test_caption_shifts_drawing_and_legend_adds_strip():
    g = _graph()
    _, pos_plain, _ = _fresh(g, 3)
    _, pos_cap, _ = _fresh(g, 3, caption="Part A")
    assert all(abs(pos_cap[n][1] - pos_plain[n][1] - style.CAPTION_H) < 1e-6 for n in g)
    png_plain, pos_l, _ = _fresh(g, 3, legend=("rose",))
    assert pos_l == pos_plain  # the legend never moves nodes (edits rely on positions)
    h0 = Image.open(io.BytesIO(_fresh(g, 3)[0])).height
    assert Image.open(io.BytesIO(png_plain)).height == h0 + style.LEGEND_H


def test_layout_choice_avoids_defects_and_is_seeded():
    g = _graph(weighted=True)
    s1 = layout.choose_layout_seed([g], random.Random(4))
    assert s1 == layout.choose_layout_seed([g], random.Random(4))
    pos, _ = layout.layout_pixels(g, layout.image_seed(s1, 0))
    assert legibility.layout_defects(g, pos, weighted=True)[0] == 0
    labels, conflicts = legibility.weight_label_positions(g, pos)
    assert set(labels) == {tuple(sorted(e)) for e in g.edges} and conflicts == 0


def test_single_node_graph_renders():
    g = nx.Graph()
    g.add_node("AAA", color="sky")
    png, pos, _ = _fresh(g, 1)
    assert png.startswith(b"\x89PNG") and set(pos) == {"AAA"}


def test_canvas_grows_with_the_node_count():
    widths = [style.canvas_width(n) for n in range(1, 51)]
    assert widths[:16] == [style.WIDTH] * 16 and widths == sorted(widths)
    assert widths[-1] == style.MAX_WIDTH


def test_tsp_distance_table_drawing_is_legible_at_every_size():
    """Complete graphs of 3-20 cities on a circle: no chord passes through a foreign disc, discs keep
    apart, and the image is wide enough for the table of all pairwise distances."""
    rng = random.Random(8)
    for n in range(3, 21):
        g = nx.complete_graph([f"A{i:02d}" for i in range(n)])
        for u, v in g.edges:
            g.edges[u, v]["weight"] = rng.randint(50, 4999)
        png, pos, radius = render.render_graph(g, 7, distance_table=True)
        img = Image.open(io.BytesIO(png))
        assert legibility.legibility_problems(g, pos, weighted=False, width=img.width, height=img.height) == []
        table_w, table_h = style.table_size(n)
        assert img.width >= table_w and img.height > table_h + max(y for _, y in pos.values())
        # the seeded order around the circle is reproducible
        assert render.render_graph(g, 7, distance_table=True)[1] == pos
