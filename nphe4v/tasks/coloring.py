"""Shared machinery of GCP and GCP-D: graph model checks, exact colouring, greedy colouring, generator, picture.

Vertices are 1-based (1..N) as in the peer DIMACS files and pictures; internally the solvers use 0-based bitmasks.
The exact solver is DSATUR-ordered backtracking with symmetry breaking (a vertex may open at most one new colour),
run for k = clique lower bound, ... until a colouring is found; the peer sizes (N <= 24, <= ~60 edges) take
milliseconds.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from nphe4v.core.coerce import as_int, get_key
from nphe4v.core.draw import WIDTH, draw_graph, layout_graph
from nphe4v.core.extract import is_ellipsis
from nphe4v.core.hashing import sha256_json
from nphe4v.core.schema import ParseError

Edge = tuple[int, int]


def check_graph(num_vertices: int, edges: Sequence[Edge]) -> None:
    """Raise ValueError unless the edges are u < v pairs of vertices 1..N without repeats."""
    if num_vertices < 1:
        raise ValueError("num_vertices must be >= 1")
    seen: set[Edge] = set()
    for u, v in edges:
        if not 1 <= u < v <= num_vertices:
            raise ValueError(f"edge ({u}, {v}) must satisfy 1 <= u < v <= {num_vertices}")
        if (u, v) in seen:
            raise ValueError(f"edge ({u}, {v}) listed twice")
        seen.add((u, v))


def adjacency(num_vertices: int, edges: Sequence[Edge]) -> list[int]:
    """0-based neighbour bitmasks."""
    adj = [0] * num_vertices
    for u, v in edges:
        adj[u - 1] |= 1 << (v - 1)
        adj[v - 1] |= 1 << (u - 1)
    return adj


def _greedy_clique(adj: list[int]) -> int:
    """A clique found greedily from every start vertex: a cheap lower bound on chi."""
    n = len(adj)
    best = 1 if n else 0
    for start in range(n):
        clique = 1
        cand = adj[start]
        while cand:
            # Extend by the candidate with most neighbours among the remaining candidates.
            pick, pick_deg = -1, -1
            c = cand
            while c:
                low = c & -c
                w = low.bit_length() - 1
                c ^= low
                d = (adj[w] & cand).bit_count()
                if d > pick_deg:
                    pick, pick_deg = w, d
            clique += 1
            cand &= adj[pick]
        best = max(best, clique)
    return best


class SolveBudgetExceeded(RuntimeError):
    """The exact search visited more nodes than allowed: the answer is unknown, not guessed."""


class _NodeBudget:
    """Search work left, in vertex-pair steps: one search node on N vertices costs N*N (its DSATUR pick scans
    every vertex's neighbours), so the budget tracks time at any size. Counted in steps, not seconds, so
    whether an instance fits is the same on every machine (datasets stay reproducible)."""

    def __init__(self, max_steps: int | None) -> None:
        self.left = max_steps
        self.used = 0

    def spend(self, steps: int) -> None:
        self.used += steps
        if self.left is not None and self.used > self.left:
            raise SolveBudgetExceeded(f"exact colouring search exceeded its budget of {self.left:,} steps")


def _k_coloring(adj: list[int], k: int, budget: _NodeBudget | None = None) -> list[int] | None:
    """A proper colouring with colours 0..k-1, or None. DSATUR order, one new colour per branch.
    Raises SolveBudgetExceeded when `budget` runs out."""
    budget = budget or _NodeBudget(None)
    n = len(adj)
    if n == 0:
        return []
    if k <= 0:
        return None
    colors = [-1] * n
    degree = [a.bit_count() for a in adj]

    def neighbour_colors(v: int) -> int:
        mask = 0
        a = adj[v]
        while a:
            low = a & -a
            c = colors[low.bit_length() - 1]
            if c >= 0:
                mask |= 1 << c
            a ^= low
        return mask

    def rec(done: int, used: int) -> bool:
        if done == n:
            return True
        budget.spend(n * n)
        # DSATUR: the uncoloured vertex with the fewest options fails earliest.
        pick, pick_sat, pick_deg, pick_mask = -1, -1, -1, 0
        for v in range(n):
            if colors[v] >= 0:
                continue
            mask = neighbour_colors(v)
            sat = mask.bit_count()
            if sat > pick_sat or (sat == pick_sat and degree[v] > pick_deg):
                pick, pick_sat, pick_deg, pick_mask = v, sat, degree[v], mask
        for c in range(min(used + 1, k)):
            if pick_mask >> c & 1:
                continue
            colors[pick] = c
            if rec(done + 1, max(used, c + 1)):
                return True
        colors[pick] = -1
        return False

    return list(colors) if rec(0, 0) else None


def greedy_largest_first(num_vertices: int, edges: Sequence[Edge]) -> dict[int, int]:
    """networkx `greedy_color(G, "largest_first")` on G with nodes added 1..N: the peer's reference heuristic.

    Vertices by degree, descending (stable on 1..N, as networkx sorts node insertion order), each gets the
    smallest colour (0-based) unused by its already-coloured neighbours.
    """
    adj = adjacency(num_vertices, edges)
    order = sorted(range(num_vertices), key=lambda v: -adj[v].bit_count())
    colors: dict[int, int] = {}
    for v in order:
        taken = {colors[w] for w in range(num_vertices) if adj[v] >> w & 1 and w in colors}
        c = 0
        while c in taken:
            c += 1
        colors[v] = c
    return {v + 1: colors[v] for v in range(num_vertices)}


def k_coloring(
    num_vertices: int, edges: Sequence[Edge], k: int, max_steps: int | None = None
) -> dict[int, int] | None:
    """A proper colouring of vertices 1..N with colours 0..k-1, or None if the graph is not k-colourable.
    With `max_steps` (see _NodeBudget), raises SolveBudgetExceeded rather than search longer."""
    found = _k_coloring(adjacency(num_vertices, edges), k, _NodeBudget(max_steps))
    return None if found is None else {v + 1: c for v, c in enumerate(found)}


def chromatic_number(
    num_vertices: int, edges: Sequence[Edge], max_steps: int | None = None
) -> tuple[int, dict[int, int]]:
    """Exact chromatic number and an optimal colouring (vertex -> colour 0..chi-1). Branch and bound between a
    greedy clique (lower bound) and greedy largest-first (upper bound); with `max_steps` (shared by all the
    k tried), raises SolveBudgetExceeded rather than search longer."""
    adj = adjacency(num_vertices, edges)
    greedy = greedy_largest_first(num_vertices, edges)
    upper = max(greedy.values(), default=-1) + 1
    k = _greedy_clique(adj)
    budget = _NodeBudget(max_steps)
    while k < upper:
        found = _k_coloring(adj, k, budget)
        if found is not None:
            return k, {v + 1: c for v, c in enumerate(found)}
        k += 1
    return upper, greedy


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
    return tuple(f"Vertex {u} is connected to vertex {v}." for u, v in edges)


# ---------------------------------------------------------------------------------------------------------
# Answers

_COLORING_KEYS = ("Coloring", "Colouring", "Colors", "Colours", "VertexColors", "VertexColours")
_NUM_KEYS = ("NumColors", "NumColours", "NumberOfColors", "NumberOfColours", "ColorsUsed", "ChromaticNumber")


def _label(v: Any) -> str | None:
    """A colour label as a comparable string: 1, '1', 1.0 are one colour; 'Red' and 'red ' are one colour."""
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, int | float):
        i = as_int(v)
        return None if i is None else str(i)
    if isinstance(v, str):
        s = v.strip().lower()
        if not s or len(s) > 64:
            return None
        i = as_int(s)
        return str(i) if i is not None else s
    return None


def _vertex_lists(mapping: dict[Any, Any]) -> bool:
    """True for the inverted spelling {colour: [vertices]}: every value is a list of vertex ids."""
    return bool(mapping) and all(isinstance(v, list | tuple) for v in mapping.values())


def parse_coloring(obj: dict[str, Any]) -> dict[str, Any] | ParseError:
    """{"NumColors": k, "Coloring": {vertex: colour}} -> canonical {"NumColors": int | None, "Coloring": {"v": "label"}}.

    NumColors is optional (None when absent: the papers' prompt asks for the colouring only). Also accepts the
    inverted spelling {"Coloring": {colour: [vertices]}} and the papers' bare {vertex: colour}. A vertex named twice (e.g. "1" and 1,
    or in two colour classes) makes the colouring ambiguous: bad_value.
    """
    if not isinstance(obj, dict):
        return ParseError(kind="not_a_mapping", detail=type(obj).__name__)
    found, raw_num = get_key(obj, *_NUM_KEYS)
    num: int | None = None
    if found and raw_num is not None:
        num = as_int(raw_num)
        if num is None:
            return ParseError(kind="bad_value", detail=f"NumColors={raw_num!r:.60}")
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
        colour = _label(raw_colour)
        if colour is None:
            return ParseError(kind="bad_value", detail=f"colour of vertex {vertex}: {raw_colour!r:.40}")
        if str(vertex) in coloring:
            return ParseError(kind="bad_value", detail=f"vertex {vertex} is given more than once")
        coloring[str(vertex)] = colour
    return {"NumColors": num, "Coloring": coloring}


def check_coloring(
    num_vertices: int, edges: Sequence[Edge], answer: dict[str, Any]
) -> tuple[int | None, str]:
    """(number of colours used, "") for a proper colouring of all of 1..N whose stated count is right,
    else (None, why not). `answer` is a canonical answer from `parse_coloring` (re-parsed, so never raises)."""
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
    used = len(set(coloring.values()))
    if canon["NumColors"] is not None and canon["NumColors"] != used:
        return None, f"states NumColors={canon['NumColors']} but the colouring uses {used} colours"
    return used, ""


def coloring_answer(coloring: dict[int, int]) -> dict[str, Any]:
    """0-based colour map -> final-answer mapping with colours numbered 1..k."""
    return {
        "NumColors": len(set(coloring.values())),
        "Coloring": {str(v): c + 1 for v, c in sorted(coloring.items())},
    }
