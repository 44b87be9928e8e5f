"""The fast paths of GraphVerse generation give exactly what the plain loops give (issue 20 item 3): the
layout repair and the legibility counts skip only what cannot count, the random walk inlines its step,
GED bounds bracket the exact distance, and chunks (whatever order they run in) come back in plan order;
weight boxes skip only edges that cannot reach them, the sampler's bare adjacency is the induced graph's, and
the layout memo hands out what the layout computes."""

from __future__ import annotations

import math
import random

import networkx as nx
import pytest

from gie import dataset as gd
from gie import layout, legibility, sample
from gie.edit_distance import ged_bounds, solve_ged
from gie.graphs import sorted_edges
from gie.sources.base import Source, adjacency_from_edges
from gie.style import MARGIN, NODE_RADIUS


def _repair_reference(g, pos, width, top, height):  # type: ignore[no-untyped-def]
    """The unpruned loop (main before issue 20), kept here as the definition."""
    r = NODE_RADIUS
    nodes = sorted(g.nodes)
    edges = sorted_edges(g)
    p = {n: list(pos[n]) for n in nodes}
    lo_x, hi_x = MARGIN / 2 + r, width - MARGIN / 2 - r
    lo_y, hi_y = top + MARGIN / 2 + r, top + height - MARGIN / 2 - r
    for _ in range(layout.REPAIR_ROUNDS):
        moved = False
        for i, u in enumerate(nodes):
            for v in nodes[i + 1:]:
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


def _defects_reference(g, pos, weighted):  # type: ignore[no-untyped-def]
    r = NODE_RADIUS
    nodes = sorted(g.nodes)
    edges = sorted_edges(g)
    bad = 0
    for i, u in enumerate(nodes):
        for v in nodes[i + 1:]:
            if math.dist(pos[u], pos[v]) < 2 * r + 14:
                bad += 1
    for u, v in edges:
        for n in nodes:
            if n not in (u, v) and legibility._seg_dist(pos[n], pos[u], pos[v]) < r + 8:
                bad += 1
    if weighted:
        bad += legibility.weight_label_positions(g, pos)[1]
    crossings = sum(legibility._crosses(pos[u], pos[v], pos[a], pos[b])
                    for i, (u, v) in enumerate(edges) for a, b in edges[i + 1:] if len({u, v, a, b}) == 4)
    return bad, crossings


def _crowded(seed: int) -> tuple[nx.Graph, dict[str, tuple[float, float]]]:
    """A random graph squeezed into a small square, so that near-misses abound (and some coincide)."""
    rng = random.Random(seed)
    n = rng.randint(6, 18)
    g = nx.gnp_random_graph(n, rng.uniform(0.1, 0.4), seed=seed)
    g = nx.relabel_nodes(g, {i: f"N{i:02d}" for i in g})
    for u, v in g.edges:
        g.edges[u, v]["weight"] = rng.randint(1, 999)
    side = rng.choice((250.0, 400.0, 700.0))
    pos = {v: (round(100 + rng.random() * side, 2), round(100 + rng.random() * side, 2)) for v in sorted(g)}
    if n > 3:
        pos["N01"] = pos["N00"]  # two nodes on the same spot
        pos["N02"] = (pos["N00"][0] + 0.001, pos["N00"][1])
    return g, pos


@pytest.mark.parametrize("seed", range(16))
def test_repair_and_defects_match_the_plain_loops(seed: int) -> None:
    g, pos = _crowded(seed)
    assert layout._repair(g, pos, 1000, 0.0, 900) == _repair_reference(g, pos, 1000, 0.0, 900)
    for p in (pos, layout._repair(g, pos, 1000, 0.0, 900)):
        for weighted in (False, True):
            assert legibility.layout_defects(g, p, weighted) == _defects_reference(g, p, weighted)


def _walk_reference(source, start, rng, steps=sample.WALK_STEPS, restart=sample.RESTART, region=None):  # type: ignore[no-untyped-def]
    visits = {start: 1}
    order = {start: 0}
    node = start
    for _ in range(steps):
        nxt = None if rng.random() < restart else source.step(node, rng)
        if nxt is not None and region is not None and nxt not in region:
            nxt = None
        node = start if nxt is None else nxt
        if node in visits:
            visits[node] += 1
        else:
            visits[node] = 1
            order[node] = len(order)
    return sorted(visits.items(), key=lambda kv: (-kv[1], order[kv[0]]))


class _OwnStep(Source):
    """A subclass with its own step: the walk must call it, not the inlined table."""

    def step(self, node: str, rng: random.Random) -> str | None:
        nb = self.adjacency.get(node, ())
        return nb[rng.randrange(len(nb))] if nb else None


def test_walk_inlines_step_with_the_same_draws() -> None:
    g = nx.gnp_random_graph(60, 0.06, seed=4)
    edges = [(f"n{u}", f"n{v}") for u, v in g.edges]
    nodes = [f"n{v}" for v in g]  # isolated nodes included: a walk from one restarts every step
    for cls in (Source, _OwnStep):
        src = cls("t", "friendships", "", "", adjacency=adjacency_from_edges(nodes, edges))
        for i, start in enumerate(nodes[:30]):
            region = frozenset(nodes[::2]) | {start} if i % 2 else None
            a, b = random.Random(i), random.Random(i)
            assert sample.random_walk_with_restart(src, start, a, region=region) == _walk_reference(
                src, start, b, region=region)
            assert a.random() == b.random()  # the rng is left where the plain walk leaves it


@pytest.mark.parametrize("seed", range(12))
def test_ged_bounds_bracket_the_exact_distance(seed: int) -> None:
    rng = random.Random(seed)
    g1 = nx.gnp_random_graph(rng.randint(3, 8), 0.4, seed=seed)
    g2 = nx.gnp_random_graph(rng.randint(3, 8), 0.4, seed=seed + 100)
    g1 = nx.relabel_nodes(g1, {i: f"A{i}" for i in g1})
    g2 = nx.relabel_nodes(g2, {i: f"B{i}" for i in g2})
    for g in (g1, g2):
        for v in g:
            g.nodes[v]["element"] = rng.choice("CNO")
    exact = solve_ged(g1, g2)[0]
    for evals in (1, 10, 10_000):
        lo, hi = ged_bounds(g1, g2, max_evals=evals)
        assert lo <= exact <= hi
    assert ged_bounds(g1, g2, max_evals=10_000) == (exact, exact)


def test_chunks_keep_cells_and_plan_order() -> None:
    jobs = gd.plan("testmini", 2026)
    chunks = list(gd._chunks(jobs))
    assert [j for c in chunks for j in c] == jobs
    for c in chunks:
        assert len({(j.task, j.edit, j.level) for j in c}) == 1
        assert len(c) == 1 or sum(gd._cost(j) for j in c) <= gd.CHUNK_MS
        assert len(c) <= gd.CHUNK_MAX


def _weight_labels_reference(g, pos):  # type: ignore[no-untyped-def]
    """Weight-box placement testing every edge with the clipping test (no bounding-box skip)."""
    from evalcore.draw import segment_hits_box

    edges = sorted_edges(g)
    placed: list[tuple[float, float, float, float]] = []
    out, total = {}, 0
    for u, v in edges:
        text = str(g.edges[u, v]["weight"])
        (x1, y1), (x2, y2) = pos[u], pos[v]
        best = None
        for t in legibility.LABEL_TS:
            c = (round(x1 + t * (x2 - x1), 2), round(y1 + t * (y2 - y1), 2))
            x0, y0, xe, ye = legibility._box(c, text)
            bad = sum(1 for p in pos.values() if x0 - NODE_RADIUS - 3 < p[0] < xe + NODE_RADIUS + 3
                      and y0 - NODE_RADIUS - 3 < p[1] < ye + NODE_RADIUS + 3)
            bad += sum(1 for a, b in edges
                       if (a, b) != (u, v) and segment_hits_box(pos[a], pos[b], (x0 - 2, y0 - 2, xe + 2, ye + 2)))
            bad += sum(1 for q in placed if x0 < q[2] + 4 and q[0] < xe + 4 and y0 < q[3] + 4 and q[1] < ye + 4)
            if best is None or bad < best[0]:
                best = (bad, c)
            if bad == 0:
                break
        out[(u, v)] = best[1]
        placed.append(legibility._box(best[1], text))
        total += best[0]
    return out, total


@pytest.mark.parametrize("seed", range(16))
def test_weight_labels_match_the_plain_loop(seed: int) -> None:
    g, pos = _crowded(seed)
    for p in (pos, layout._repair(g, pos, 1000, 0.0, 900)):
        assert legibility.weight_label_positions(g, p) == _weight_labels_reference(g, p)


def test_induced_adjacency_is_the_induced_graphs() -> None:
    from gie.sources.registry import get_source

    rng = random.Random(3)
    for name in ("us-airports", "wikidata-costar", "les-miserables"):
        src = get_source(name)
        assert isinstance(src, Source)
        starts = list(src.starts())
        for _ in range(5):
            ids = sample.rwr_nodes(src, 40, rng, start=starts[rng.randrange(len(starts))])
            adj = src.induced_adjacency(ids)
            g = src.induced(ids)
            assert {n: set(adj[n]) for n in adj} == {n: set(g[n]) for n in g}


@pytest.mark.parametrize("seed", range(4))
def test_layout_memo_gives_fresh_copies_of_the_computed_layout(seed: int) -> None:
    g, _ = _crowded(seed)
    layout.clear_layout_memo()
    pos, height, defects = layout._layout_pixels(g, 77 + seed, caption=True)
    first = layout.layout_pixels(g, 77 + seed, caption=True)
    assert first == (pos, height)
    # the score kept with the layout is the score of the positions it hands out
    assert defects == legibility.layout_defects(g, pos, True)
    first[0]["N00"] = (0.0, 0.0)  # a caller's edit never reaches the memo
    assert layout.layout_pixels(g, 77 + seed, caption=True) == (pos, height)
