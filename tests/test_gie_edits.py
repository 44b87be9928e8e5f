"""GIE edits on real drawings (evalcore.draw) and real OpenCV: every edit's promise, over many seeds.

Geometry is checked against independent oracles (dense point sampling), graph guarantees against
networkx and, for composition, against brute force over all balanced partitions.
"""

from __future__ import annotations

import itertools
import math
import random
import string
from functools import cache

import cv2
import networkx as nx
import numpy as np
import pytest

from evalcore.draw import GraphDrawing, draw_graph
from gie import edits

# Local stand-in for the palette of gie/graphs.py (name -> RGB).
PALETTE = {"sky": (173, 216, 230), "rose": (240, 128, 128), "lemon": (250, 230, 100), "mint": (152, 251, 152)}
WHITE = np.array([255, 255, 255], dtype=np.uint8)
DRAW_SEEDS = range(10)


def codes(rng: random.Random, n: int) -> list[str]:
    out: set[str] = set()
    while len(out) < n:
        out.add("".join(rng.choice(string.ascii_uppercase) for _ in range(3)))
    return sorted(out)


def random_graph(seed: int, lo: int = 7, hi: int = 14) -> nx.Graph:
    """Connected: a random tree plus a few random extra edges."""
    rng = random.Random(seed)
    names = codes(rng, rng.randint(lo, hi))
    G = nx.Graph()
    G.add_nodes_from(names)
    for i in range(1, len(names)):
        G.add_edge(names[i], names[rng.randrange(i)])
    for _ in range(rng.randint(0, len(names))):
        u, v = rng.sample(names, 2)
        G.add_edge(u, v)
    return G


@cache
def drawing(seed: int) -> tuple[nx.Graph, GraphDrawing]:
    G = random_graph(seed)
    return G, draw_graph(sorted(G.nodes), [(u, v, None) for u, v in sorted(G.edges)], seed=seed)


@cache
def canonical(seed: int) -> bytes:
    return edits.canonical_png(drawing(seed)[1].png)


def decode(png: bytes) -> np.ndarray:
    return cv2.imdecode(np.frombuffer(png, np.uint8), cv2.IMREAD_COLOR)


def bgr(rgb: tuple[int, int, int]) -> np.ndarray:
    return np.array(rgb[::-1], dtype=np.uint8)


def in_rect(xs: np.ndarray, ys: np.ndarray, rect: list[int], pad: float) -> bool:
    x0, y0, x1, y1 = rect
    return bool(np.any((xs >= x0 - pad) & (xs <= x1 + pad) & (ys >= y0 - pad) & (ys <= y1 + pad)))


def disc_samples(centre: tuple[float, float], radius: float) -> tuple[np.ndarray, np.ndarray]:
    rho, th = np.meshgrid(np.linspace(0, radius * 0.999, 49), np.linspace(0, 2 * math.pi, 360))
    return centre[0] + rho * np.cos(th), centre[1] + rho * np.sin(th)


def stroke_samples(a: tuple[float, float], b: tuple[float, float], radius: float):
    length = math.dist(a, b)
    lo, hi = (radius / length, 1 - radius / length) if length > 2 * radius else (0.5, 0.5)
    t = np.linspace(lo, hi, max(2, int(length / 0.2)))
    return a[0] + t * (b[0] - a[0]), a[1] + t * (b[1] - a[1])


def check_entities(meta_patch: dict, G: nx.Graph, d: GraphDrawing) -> None:
    """Recorded = intersecting: sampled hits are recorded, recorded ones hit a box 0.5 px larger."""
    rect = meta_patch["rect"]
    nodes = set(meta_patch["nodes"])
    for n, p in d.positions.items():
        xs, ys = disc_samples(p, d.node_radius)
        if in_rect(xs, ys, rect, 0.0):
            assert n in nodes
        if n in nodes:
            assert in_rect(xs, ys, rect, 0.5)
    recorded = {tuple(e) for e in meta_patch["edges"]}
    for u, v in G.edges:
        xs, ys = stroke_samples(d.positions[u], d.positions[v], d.node_radius)
        key = tuple(sorted((u, v)))
        if in_rect(xs, ys, rect, 0.0):
            assert key in recorded
        if key in recorded:
            assert in_rect(xs, ys, rect, 0.5)


# ----------------------------------------------------------------------------------------- patch


@pytest.mark.parametrize("op", ["flip", "swap"])
@pytest.mark.parametrize("seed", DRAW_SEEDS)
def test_patch_changes_exactly_the_recorded_non_empty_patches(seed: int, op: str) -> None:
    G, d = drawing(seed)
    orig = decode(d.png)
    for r in (2, 3, 4):
        png, meta = edits.patch_perturb(
            d.png, d.positions, list(G.edges), d.node_radius, r, op, random.Random(seed * 10 + r)
        )
        out = decode(png)
        assert out.shape == orig.shape
        pw, ph = meta["patch_size"]
        assert (pw, ph) == (d.width // r, d.height // r)
        assert len(meta["patches"]) == (1 if op == "flip" else 2)
        assert (meta["axis"] in edits.FLIP_CODES) == (op == "flip")
        changed = np.any(out != orig, axis=-1)
        allowed = np.zeros_like(changed)
        for (row, col), rect in zip(meta["patches"], meta["rects"], strict=True):
            assert 0 <= row < r and 0 <= col < r
            assert list(edits.patch_rect(row, col, pw, ph)) == rect
            x0, y0, x1, y1 = rect
            assert np.any(orig[y0:y1, x0:x1] != WHITE), "perturbed patch must be non-empty"
            assert changed[y0:y1, x0:x1].any(), "a recorded patch must actually change"
            allowed[y0:y1, x0:x1] = True
        assert not changed[~allowed].any(), "pixels outside the recorded patches changed"

        (x0, y0, x1, y1), *rest = meta["rects"]
        if op == "flip":
            expect = cv2.flip(orig[y0:y1, x0:x1], edits.FLIP_CODES[meta["axis"]])
            assert np.array_equal(out[y0:y1, x0:x1], expect)
        else:
            a0, b0, a1, b1 = rest[0]
            assert np.array_equal(out[y0:y1, x0:x1], orig[b0:b1, a0:a1])
            assert np.array_equal(out[b0:b1, a0:a1], orig[y0:y1, x0:x1])
        # The edit is an involution and replayable from metadata alone.
        assert edits.apply_patch_edit(png, meta) == canonical(seed)
        if r == 2:
            assert edits.apply_patch_edit(d.png, meta) == png

        all_nodes, all_edges = set(), set()
        for pp in meta["per_patch"]:
            check_entities(pp, G, d)
            assert pp["nodes"] or pp["edges"], "a non-empty patch shows some node or edge"
            all_nodes |= set(pp["nodes"])
            all_edges |= {tuple(e) for e in pp["edges"]}
        assert meta["nodes_in_patches"] == sorted(all_nodes)
        assert [tuple(e) for e in meta["edges_in_patches"]] == sorted(all_edges)


@pytest.mark.parametrize("op", ["flip", "swap"])
def test_patch_never_moves_only_a_caption_or_legend(op: str) -> None:
    """A drawing whose graph sits in one patch of a 2 x 2 grid and whose caption and legend fill two
    others: every chosen edit must move the graph's patch (mcs-L01-240 used to flip only a caption)."""
    img = np.full((400, 400, 3), 255, np.uint8)
    cv2.circle(img, (60, 60), 20, (200, 120, 40), -1)
    cv2.circle(img, (140, 130), 20, (200, 120, 40), -1)
    cv2.line(img, (60, 60), (140, 130), (60, 60, 60), 3)
    cv2.putText(img, "Graph 1", (230, 60), cv2.FONT_HERSHEY_SIMPLEX, 1.0, (0, 0, 0), 2)  # caption, top right
    cv2.rectangle(img, (40, 300), (160, 340), (80, 200, 90), -1)  # legend swatch, bottom left
    ok_, buf = cv2.imencode(".png", img)
    assert ok_
    positions = {"A": (60.0, 60.0), "B": (140.0, 130.0)}
    graph_patch = [0, 0]
    for seed in range(40):
        _, meta = edits.patch_perturb(buf.tobytes(), positions, [["A", "B"]], 20.0, 2, op, random.Random(seed))
        assert graph_patch in meta["patches"], meta["patches"]
        assert meta["nodes_in_patches"] == ["A", "B"] and meta["edges_in_patches"] == [["A", "B"]]
    # with the graph's patch empty of graph (positions elsewhere), nothing may be chosen
    with pytest.raises(ValueError):
        edits.patch_perturb(buf.tobytes(), {"A": (1000.0, 1000.0), "B": (1100.0, 1000.0)}, [["A", "B"]], 20.0, 2,
                            op, random.Random(0))


def test_patch_rejects_bad_arguments_and_blank_images() -> None:
    G, d = drawing(0)
    with pytest.raises(ValueError):
        edits.patch_perturb(d.png, d.positions, list(G.edges), d.node_radius, 5, "flip", random.Random(0))
    with pytest.raises(ValueError):
        edits.patch_perturb(d.png, d.positions, list(G.edges), d.node_radius, 2, "rotate", random.Random(0))
    blank = cv2.imencode(".png", np.full((100, 100, 3), 255, np.uint8))[1].tobytes()
    with pytest.raises(ValueError):
        edits.patch_perturb(blank, {}, [], 24.0, 2, "swap", random.Random(0))


def test_segment_rectangle_geometry() -> None:
    rect = (10, 10, 20, 20)
    assert edits.segment_hits_rect((0, 0), (30, 30), rect)  # diagonal through
    assert edits.segment_hits_rect((0, 15), (30, 15), rect)  # horizontal through
    assert not edits.segment_hits_rect((0, 0), (30, 5), rect)
    assert not edits.segment_hits_rect((0, 25), (25, 45), rect)
    assert not edits.segment_hits_rect((0, 15), (30, 15), rect, 0.0, 0.3)  # clipped short of it
    assert edits.segment_hits_rect((15, 15), (15, 15), rect)  # degenerate point inside
    assert edits.disc_hits_rect((5, 15), 6, rect) and not edits.disc_hits_rect((5, 5), 6, rect)


# ----------------------------------------------------------------------------------- composition


def composition_graphs() -> list[nx.Graph]:
    out = [random_graph(s, 2, 12) for s in range(40)]
    for s in range(15):
        rng = random.Random(1000 + s)
        n = rng.randint(3, 12)
        T = (
            nx.random_labeled_tree(n, seed=s)
            if hasattr(nx, "random_labeled_tree")
            else nx.random_tree(n, seed=s)
        )
        out.append(nx.relabel_nodes(T, dict(zip(sorted(T), codes(rng, n), strict=True))))
    star = nx.relabel_nodes(nx.star_graph(6), {i: f"S{i:02d}" for i in range(7)})
    two = nx.disjoint_union(nx.path_graph(4), nx.cycle_graph(4))
    odd = nx.disjoint_union(nx.path_graph(3), nx.path_graph(6))
    out += [
        star,
        nx.relabel_nodes(two, {i: f"T{i:02d}" for i in two}),
        nx.relabel_nodes(odd, {i: f"U{i:02d}" for i in odd}),
    ]
    return out


def connected_balanced_exists(G: nx.Graph) -> bool:
    nodes = sorted(G.nodes)
    for part in itertools.combinations(nodes, len(nodes) // 2):
        rest = set(nodes) - set(part)
        if nx.is_connected(G.subgraph(part)) and nx.is_connected(G.subgraph(rest)):
            return True
    return False


@pytest.mark.parametrize("index", range(len(composition_graphs())))
def test_compose_split_is_a_balanced_cut(index: int) -> None:
    G = composition_graphs()[index]
    v1, v2, cross, meta = edits.compose_split(G, random.Random(index))
    s1, s2 = set(v1), set(v2)
    assert not s1 & s2 and s1 | s2 == set(G.nodes)
    assert abs(len(v1) - len(v2)) <= 1
    cut = {frozenset(e) for e in G.edges if (e[0] in s1) != (e[1] in s1)}
    assert {frozenset(e) for e in cross} == cut and len(cross) == len(cut)
    assert all(u in s1 and v in s2 for u, v in cross)
    assert meta["parts"] == [v1, v2] and meta["cross_edges"] == [list(e) for e in cross]
    assert meta["connectors"] == [sorted({u for u, _ in cross}), sorted({v for _, v in cross})]
    connected = [nx.is_connected(G.subgraph(p)) for p in (v1, v2)]
    assert meta["connected"] == connected
    if connected_balanced_exists(G):
        assert all(connected), "a connected balanced split exists but was not found"
    # The composed graph E1 + E2 + Ex is the original graph.
    composed = {frozenset(e) for es in meta["part_edges"] for e in es} | cut
    assert composed == {frozenset(e) for e in G.edges} == {frozenset(e) for e in meta["composed_edges"]}
    assert (
        meta["composed_edge_count"] == sum(map(len, meta["part_edges"])) + len(cross) == G.number_of_edges()
    )


def test_compose_split_renders_both_parts() -> None:
    G, _ = drawing(3)
    v1, v2, _, _ = edits.compose_split(G, random.Random(3))
    for part in (v1, v2):
        d = draw_graph(part, [(u, v, None) for u, v in sorted(G.subgraph(part).edges)], seed=3)
        assert set(d.positions) == set(part)


# ------------------------------------------------------------------------------------- focusing


def check_focus(G: nx.Graph, colors: dict[str, str], meta: dict, size_range: tuple[int, int]) -> None:
    c = meta["color"]
    M = set(meta["target"])
    assert set(colors) == set(G.nodes)
    assert size_range[0] <= len(M) <= size_range[1]
    assert nx.is_connected(G.subgraph(M))
    assert all(colors[v] == c for v in M)
    assert all(colors[u] != c for v in M for u in G[v] if u not in M), "a neighbour of M has c*"
    comps = sorted(nx.connected_components(G.subgraph([v for v in G if colors[v] == c])), key=len)
    assert comps[-1] == M and all(len(k) < len(M) for k in comps[:-1]), "M is not the unique largest"
    assert sorted(map(sorted, comps[:-1])) == sorted(meta["distractors"])
    assert {frozenset(e) for e in meta["target_edges"]} == {frozenset(e) for e in G.subgraph(M).edges}


@pytest.mark.parametrize("seed", range(60))
def test_attentional_focus_guarantees(seed: int) -> None:
    G = random_graph(seed, 8, 20)
    rng = random.Random(seed)
    lo = rng.randint(1, 4)
    size_range = (lo, lo + rng.randint(0, 3))
    others = ("mint",) if seed % 2 else ()
    if size_range[1] == 1:
        # a one-node target leaves no room for a smaller same-colour group
        with pytest.raises(ValueError, match="distractor"):
            edits.attentional_focus(G, random.Random(seed), "rose", "sky", size_range, other_colors=others)
        colors, meta = edits.attentional_focus(G, random.Random(seed), "rose", "sky", size_range,
                                               other_colors=others, min_distractors=0)
        assert meta["distractors"] == []
    else:
        colors, meta = edits.attentional_focus(
            G, random.Random(seed), "rose", "sky", size_range, max_distractors=4, other_colors=others
        )
        assert meta["distractors"], "every focus target has a same-colour distractor group"
    check_focus(G, colors, meta, size_range)
    assert set(colors.values()) <= {"rose", "sky", *others}


def test_attentional_focus_has_distractors_and_rejects_impossible_sizes() -> None:
    for seed in range(30):
        G = random_graph(seed, 14, 20)
        _, meta = edits.attentional_focus(G, random.Random(seed), "rose", "sky", (3, 5))
        assert meta["distractors"]
    # a star: every node is next to the hub, so no target leaves a free node for a distractor
    star = nx.star_graph(6)
    with pytest.raises(ValueError, match="distractor"):
        edits.attentional_focus(nx.relabel_nodes(star, str), random.Random(0), "rose", "sky", (2, 3))
    with pytest.raises(ValueError):
        edits.attentional_focus(nx.path_graph(["A", "B"]), random.Random(0), "rose", "sky", (3, 4))
    with pytest.raises(ValueError):
        edits.attentional_focus(nx.path_graph(["A", "B"]), random.Random(0), "sky", "sky", (1, 2))


@pytest.mark.parametrize("seed", range(6))
def test_recolor_nodes_png_fills_discs_and_keeps_labels(seed: int) -> None:
    G, d = drawing(seed)
    names, _ = edits.attentional_focus(G, random.Random(seed), "rose", "sky", (3, 5))
    recolour = {v: PALETTE[c] for v, c in names.items() if c == "rose"}
    png = edits.recolor_nodes_png(d.png, d.positions, d.node_radius, recolour)
    orig, out = decode(d.png), decode(png)
    yy, xx = np.mgrid[0 : orig.shape[0], 0 : orig.shape[1]]
    touched = np.zeros(orig.shape[:2], bool)
    old_fill = bgr(PALETTE["sky"])
    for v, rgb in recolour.items():
        x, y = d.positions[v]
        disc = (xx - x) ** 2 + (yy - y) ** 2 <= (d.node_radius - 0.5) ** 2
        touched |= disc
        fx, fy = round(x), round(y - 0.6 * d.node_radius)
        assert tuple(orig[fy, fx]) == tuple(old_fill)
        assert tuple(out[fy, fx]) == tuple(bgr(rgb)), "fill point not recoloured"
        dark = disc & (orig.max(axis=-1) < 40)
        assert dark.sum() > 30, "the label is drawn inside the disc"
        assert np.array_equal(out[dark], orig[dark]), "label ink changed"
        assert not np.any(np.all(out[disc] == old_fill, axis=-1)), "old fill left (e.g. in a glyph counter)"
        assert (out[disc].astype(int).sum(-1) < 120).sum() >= dark.sum(), "label no longer dark"
    assert np.array_equal(out[~touched], orig[~touched]), "pixels outside recoloured discs changed"
    if seed == 0:
        cv2.imwrite("/tmp/gie_focus_recolor.png", out)


# ---------------------------------------------------------------------------------- recolouring


def offset(pos: dict, anchor: str, v: str, direction: str) -> float:
    (ax, ay), (x, y) = pos[anchor], pos[v]
    return {"left": ax - x, "right": x - ax, "above": ay - y, "below": y - ay}[direction]


@pytest.mark.parametrize("seed", DRAW_SEEDS)
def test_spatial_recolor_is_strict_and_complete(seed: int) -> None:
    G, d = drawing(seed)
    for k in range(8):
        rec, meta = edits.spatial_recolor(G, d.positions, random.Random(seed * 100 + k), "lemon")
        a, direction, margin = meta["anchor"], meta["direction"], meta["margin"]
        assert meta["recoloured"] == sorted(rec) and meta["new_color"] == "lemon"
        assert a not in rec and 1 <= len(rec) <= len(G) - 1
        for v in G:
            if v == a:
                continue
            if v in rec:
                assert offset(d.positions, a, v, direction) > margin
            else:
                assert offset(d.positions, a, v, direction) < -margin
        # An explicit anchor/direction is honoured.
        rec2, meta2 = edits.spatial_recolor(
            G, d.positions, random.Random(k), "lemon", anchor=a, direction=direction
        )
        assert rec2 == rec and meta2["anchor"] == a


def test_spatial_recolor_direction_semantics_and_errors() -> None:
    pos = {"A": (100.0, 100.0), "B": (200.0, 50.0), "C": (300.0, 200.0), "D": (400.0, 300.0)}
    G = nx.path_graph(list(pos))
    assert edits.spatial_recolor(G, pos, random.Random(0), "rose", "C", "above")[0] == ["A", "B"]
    assert edits.spatial_recolor(G, pos, random.Random(0), "rose", "B", "right")[0] == ["C", "D"]
    assert edits.spatial_recolor(G, pos, random.Random(0), "rose", "C", "below")[0] == ["D"]
    with pytest.raises(ValueError):
        edits.spatial_recolor(G, pos, random.Random(0), "rose", "A", "left")  # nothing left of A
    with pytest.raises(ValueError):
        edits.spatial_recolor(G, pos, random.Random(0), "rose", "B", "above")  # B is the topmost
    with pytest.raises(ValueError):
        edits.spatial_recolor(G, pos, random.Random(0), "rose", "C", "right", margin=150.0)  # D ambiguous


def clique_number(H: nx.Graph) -> int:
    return max((len(c) for c in nx.find_cliques(H)), default=0)


def test_changes_answer_and_constraint_graph() -> None:
    G = nx.complete_graph(["A", "B", "C", "D"])
    G.add_edges_from([("D", "E"), ("E", "F")])
    assert not edits.changes_answer(G, ["A", "B", "C", "D"], clique_number, "only")
    assert edits.changes_answer(G, ["E", "F"], clique_number, "only")
    assert edits.changes_answer(G, ["A"], clique_number, "avoid")
    assert not edits.changes_answer(G, ["F"], clique_number, "avoid")

    def dist_af(H: nx.Graph) -> float:
        try:
            return nx.shortest_path_length(H, "A", "F")
        except (nx.NetworkXNoPath, nx.NodeNotFound):
            return math.inf

    assert edits.changes_answer(G, ["E"], dist_af, "avoid")
    H = edits.recolor_constraint_graph(G, ["E", "F"], "only", new_color="lemon")
    assert list(H.edges) == [("E", "F")] and H.nodes["E"]["color"] == "lemon"
    assert "color" not in G.nodes["E"], "the input graph is not modified"
    with pytest.raises(ValueError):
        edits.recolor_constraint_graph(G, ["E"], "some")  # type: ignore[arg-type]


@pytest.mark.parametrize("seed", range(4))
def test_spatial_recolor_changing_on_real_layout(seed: int) -> None:
    G, d = drawing(seed)
    rec, meta = edits.spatial_recolor_changing(
        G, d.positions, random.Random(seed), "lemon", clique_number, "only"
    )
    assert edits.changes_answer(G, rec, clique_number, "only") and meta["mode"] == "only"
    assert (
        edits.spatial_candidates(G, d.positions, meta["margin"], meta["anchor"], meta["direction"])[0][2]
        == rec
    )
    if seed == 0:
        png = edits.recolor_nodes_png(d.png, d.positions, d.node_radius, {v: PALETTE["lemon"] for v in rec})
        cv2.imwrite("/tmp/gie_spatial_recolor.png", decode(png))


# --------------------------------------------------------------------------------- determinism


def test_every_edit_is_deterministic() -> None:
    G, d = drawing(5)

    def run() -> list:
        out: list = []
        for op in ("flip", "swap"):
            out.append(
                edits.patch_perturb(d.png, d.positions, list(G.edges), d.node_radius, 3, op, random.Random(9))
            )
        out.append(edits.compose_split(G, random.Random(9)))
        colors, meta = edits.attentional_focus(G, random.Random(9), "rose", "sky", (2, 4))
        out.append((colors, meta))
        out.append(
            edits.recolor_nodes_png(
                d.png, d.positions, d.node_radius, {v: PALETTE[c] for v, c in colors.items()}
            )
        )
        out.append(edits.spatial_recolor(G, d.positions, random.Random(9), "lemon"))
        return out

    first, second = run(), run()
    assert first == second
    assert edits.recolor_nodes_png(d.png, d.positions, d.node_radius, {}) == edits.canonical_png(d.png)
