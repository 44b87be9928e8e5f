"""Shared machinery of GCP and GCP-D: generator, picture, answer parsing and checking (the exact solvers are in
`evalcore.graph_solvers`, shared with GraphVerse).

Vertices are 1-based (1..N) as in the peer DIMACS files and pictures; internally the solvers use 0-based bitmasks.
The exact solver is DSATUR-ordered backtracking with symmetry breaking (a vertex may open at most one new colour),
run for k = clique lower bound, ... until a colouring is found; the peer sizes (N <= 24, <= ~60 edges) take
milliseconds.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from evalcore.coerce import as_int, colour_label, get_key
from evalcore.draw import WIDTH, draw_graph, layout_graph
from evalcore.extract import is_ellipsis
from evalcore.graph_solvers import Edge
from evalcore.hashing import sha256_json
from evalcore.schema import ParseError


def edge_count_range(level: int) -> tuple[int, int]:
    # The paper's 6..24 edges (4 + 2L) with a little spread, like the peer files.
    base = 4 + 2 * level
    return base - 1, base + 2


def random_edges(num_vertices: int, num_edges: int, rng: random.Random) -> list[Edge]:
    pairs = [(u, v) for u in range(1, num_vertices + 1) for v in range(u + 1, num_vertices + 1)]
    return sorted(rng.sample(pairs, min(num_edges, len(pairs))))


def planted_edges(num_vertices: int, num_edges: int, classes: int, rng: random.Random) -> list[Edge]:
    """Random edges that only join different classes of a random partition, so chi <= classes."""
    labels = [i % classes for i in range(num_vertices)]
    rng.shuffle(labels)
    pairs = [
        (u, v)
        for u in range(1, num_vertices + 1)
        for v in range(u + 1, num_vertices + 1)
        if labels[u - 1] != labels[v - 1]
    ]
    return sorted(rng.sample(pairs, min(num_edges, len(pairs))))


def layout_seed(num_vertices: int, edges: Sequence[Edge]) -> int:
    # Render has no rng: the layout seed comes from the instance itself, so pictures are reproducible.
    return int(sha256_json({"n": num_vertices, "edges": [list(e) for e in edges]})[:8], 16)


def _near_misses(pos: dict[str, tuple[float, float]], edges: Sequence[tuple[str, str]], clearance: float) -> int:
    """How many (edge, vertex) pairs have the edge passing within `clearance` of a vertex it does not touch:
    such a line reads as two edges through that vertex."""
    count = 0
    for a, b in edges:
        (x1, y1), (x2, y2) = pos[a], pos[b]
        dx, dy = x2 - x1, y2 - y1
        length2 = dx * dx + dy * dy or 1.0
        for node, (px, py) in pos.items():
            if node in (a, b):
                continue
            t = max(0.0, min(1.0, ((px - x1) * dx + (py - y1) * dy) / length2))
            cx, cy = x1 + t * dx - px, y1 + t * dy - py
            if cx * cx + cy * cy < clearance * clearance:
                count += 1
    return count


def _pixel_scale(pos: dict[str, tuple[float, float]]) -> float:
    """Pixels per Graphviz point in draw_graph (same formula: 70 px margins, height clamped to 480..1400)."""
    xs = [p[0] for p in pos.values()]
    ys = [p[1] for p in pos.values()]
    span_x = max(max(xs) - min(xs), 1.0)
    span_y = max(max(ys) - min(ys), 1.0)
    scale = (WIDTH - 140) / span_x
    height = min(max(span_y * scale + 140, 480), 1400)
    return min(scale, (height - 140) / span_y)


def _clear_seed(nodes: list[str], edges: list[tuple[str, str]], base: int, tries: int = 24) -> int:
    """The first of a few layout seeds whose drawing has no edge grazing a foreign vertex (else the best one)."""
    best_seed, best_bad = base, None
    for i in range(tries):
        seed = (base + i) % (2**31)
        pos = layout_graph(nodes, edges, seed)
        # draw_graph's nodes have a 24 px radius; keep lines at least ~10 px clear of a foreign disc.
        bad = _near_misses(pos, edges, 34.0 / _pixel_scale(pos))
        if best_bad is None or bad < best_bad:
            best_seed, best_bad = seed, bad
        if bad == 0:
            break
    return best_seed


_MANY_EDGES = 200


def render_graph(num_vertices: int, edges: Sequence[Edge]) -> bytes:
    nodes = [str(v) for v in range(1, num_vertices + 1)]
    pairs = [(str(u), str(v)) for u, v in edges]
    # Each try is a Graphviz layout: a few ms at benchmark sizes, ~0.5 s for a dense 70-vertex import,
    # where a clean drawing is out of reach anyway.
    tries = 24 if len(pairs) <= _MANY_EDGES else 2
    seed = _clear_seed(nodes, pairs, layout_seed(num_vertices, edges), tries)
    return draw_graph(nodes, [(u, v, None) for u, v in pairs], seed).png


def edge_lines(edges: Sequence[Edge]) -> tuple[str, ...]:
    return tuple(f"Edge between vertex {u} and vertex {v}." for u, v in edges)


# ---------------------------------------------------------------------------------------------------------
# Answers

_COLORING_KEYS = ("Coloring", "Colouring", "Colors", "Colours", "VertexColors", "VertexColours")
_NUM_KEYS = ("NumColors", "NumColours", "NumberOfColors", "NumberOfColours", "ColorsUsed", "ChromaticNumber")


def _vertex_lists(mapping: dict[Any, Any]) -> bool:
    """True for the inverted spelling {colour: [vertices]}: every value is a list of vertex ids."""
    return bool(mapping) and all(isinstance(v, list | tuple) for v in mapping.values())


def parse_coloring(obj: dict[str, Any]) -> dict[str, Any] | ParseError:
    """{"NumColors": k, "Coloring": {vertex: colour}} -> canonical {"NumColors": int | None, "Coloring": {"v": "label"}}.

    NumColors is optional and never makes the answer unparsable (None when absent or not an integer, e.g.
    "three": the papers' prompt asks for the colouring only, and the colouring decides). Also accepts the
    inverted spelling {"Coloring": {colour: [vertices]}} and the papers' bare {vertex: colour}. A vertex named
    twice (e.g. "1" and 1, or in two colour classes) makes the colouring ambiguous: bad_value.
    """
    if not isinstance(obj, dict):
        return ParseError(kind="not_a_mapping", detail=type(obj).__name__)
    _, raw_num = get_key(obj, *_NUM_KEYS)
    num = as_int(raw_num)
    found, raw = get_key(obj, *_COLORING_KEYS)
    if not found:
        if obj and all(as_int(key) is not None or is_ellipsis(key) for key in obj):
            # The papers' answer shape: the colouring itself, {vertex: colour}, with no wrapper key.
            raw = obj
        else:
            return ParseError(kind="missing_key", detail="Coloring")
    if not isinstance(raw, dict):
        return ParseError(kind="bad_value", detail=f"Coloring is not a mapping: {raw!r:.60}")
    if len(raw) > 10_000:
        return ParseError(kind="too_large", detail=f"{len(raw)} entries")
    pairs: list[tuple[Any, Any]] = []
    if _vertex_lists(raw):
        for colour, vertices in raw.items():
            if len(vertices) > 10_000:
                return ParseError(kind="too_large", detail=f"{len(vertices)} vertices")
            pairs.extend((v, colour) for v in vertices)
    else:
        pairs = list(raw.items())
    coloring: dict[str, str] = {}
    for raw_vertex, raw_colour in pairs:
        if is_ellipsis(raw_vertex):
            continue  # the format example's "...": "..." entry copied along with real ones
        vertex = as_int(raw_vertex)
        if vertex is None:
            return ParseError(kind="bad_value", detail=f"vertex {raw_vertex!r:.40}")
        colour = colour_label(raw_colour)
        if colour is None:
            return ParseError(kind="bad_value", detail=f"colour of vertex {vertex}: {raw_colour!r:.40}")
        if str(vertex) in coloring:
            return ParseError(kind="bad_value", detail=f"vertex {vertex} is given more than once")
        coloring[str(vertex)] = colour
    return {"NumColors": num, "Coloring": coloring}


def check_coloring(
    num_vertices: int, edges: Sequence[Edge], answer: dict[str, Any]
) -> tuple[int | None, str]:
    """(number of colours used, "") for a proper colouring of all of 1..N, else (None, why not); a stated
    NumColors is not checked here (`stated_count_consistent`). `answer` is a canonical answer from
    `parse_coloring` (re-parsed, so never raises)."""
    canon = parse_coloring(answer)
    if isinstance(canon, ParseError):
        return None, f"malformed answer: {canon.kind} {canon.detail}"
    coloring: dict[int, str] = {int(v): c for v, c in canon["Coloring"].items()}
    unknown = sorted(v for v in coloring if not 1 <= v <= num_vertices)
    if unknown:
        return None, f"unknown vertex {unknown[0]} (vertices are 1..{num_vertices})"
    missing = [v for v in range(1, num_vertices + 1) if v not in coloring]
    if missing:
        return None, f"vertex {missing[0]} has no colour"
    for u, v in edges:
        if coloring[u] == coloring[v]:
            return None, f"edge ({u}, {v}) joins two vertices of colour {coloring[u]!r}"
    return len(set(coloring.values())), ""


def stated_count_consistent(answer: dict[str, Any], used: int | None) -> bool | None:
    """Whether the answer's stated NumColors equals the colours its colouring uses; None when it states none
    or the colouring is not a proper colouring (no count to compare with)."""
    canon = parse_coloring(answer)
    if used is None or isinstance(canon, ParseError) or canon["NumColors"] is None:
        return None
    return canon["NumColors"] == used


def coloring_answer(coloring: dict[int, int]) -> dict[str, Any]:
    """0-based colour map -> final-answer mapping with colours numbered 1..k."""
    return {
        "NumColors": len(set(coloring.values())),
        "Coloring": {str(v): c + 1 for v, c in sorted(coloring.items())},
    }
