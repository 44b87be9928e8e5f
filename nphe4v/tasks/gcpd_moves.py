"""GCP-D's moved-edge pairs (issue 31): a NO graph and a YES graph one moved edge apart, built from either side.

An edge e goes to a non-edge f whose ends have, without e, the same two degrees and as many common neighbours as
e's ends (so the degree sequence and the triangle count stay), keeping the 5-cycles exactly, the 4-cycles within
CYCLE_SLACK and the degeneracy. Forward (`moved_twins`): from a NO graph, e is an edge of its 4-critical core
(removing it leaves a k-colourable graph) and the result is k-colourable. Reverse (`moved_nos`): from a YES
graph, the result needs k + 1 colours, exactly. Of the moves of up to MOVE_SOURCES source graphs within
`pair_tol` on `pair_features`, the pair closest on `shape` is kept (`closest_move`).

Why both sides (`gcpd.EITHER_WAY_LEVELS`): when the YES graph is always the moved one, the NO graph is a graph of
the walk and the YES graph a perturbed one, and what a move leaves (an odd cycle turned even, a 4-wheel) is then
on the YES side only. With a coin picking the side, being the moved graph says nothing about the answer. At
600 instances a level the held-out family's best learner read .670 at level 7 against .735 with NO-side moves
only, and .623 at level 8 against .733 with the pool's pairs that level had before (docs/deviations.md)."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Sequence

import numpy as np

from evalcore.graph_solvers import Edge, adjacency, k_coloring
from nphe4v.tasks.gcpd_stats import (
    COUNT_WEIGHT,
    core_profile,
    degeneracy,
    graphlet_counts,
    pair_features,
    pair_shape,
    short_cycles,
    snap,
)

MOVE_SOURCES = 6
CYCLE_SLACK = 1
GRAPHLET_WEIGHT = 0.1


def shape(n: int, edges: Sequence[Edge]) -> np.ndarray:
    """What a moved pair is brought close on: `pair_shape`, the 3-core's size (COUNT_WEIGHT) and the induced
    4- and 5-vertex subgraph counts (GRAPHLET_WEIGHT)."""
    # snapped as `pair_shape` is (gcpd_stats.SNAP_GRID): 0.1 x a count is not a multiple of a power of two
    return snap(np.concatenate([pair_shape(n, edges), [COUNT_WEIGHT * core_profile(n, edges)[0]],
                                GRAPHLET_WEIGHT * graphlet_counts(n, edges, 4),
                                GRAPHLET_WEIGHT * graphlet_counts(n, edges, 5)]))


def _moves(n: int, graph: list[Edge], keep_edge: Callable[[list[Edge]], bool] | None = None) -> Iterator[list[Edge]]:
    """Every graph one move away from `graph` (see the module docstring), in a fixed order; with `keep_edge`, only
    moves of an edge that passes it (called with the graph without that edge)."""
    edges = set(graph)
    degen = degeneracy(n, graph)
    c4, c5 = short_cycles(n, graph)
    for e in graph:
        rest = sorted(edges - {e})
        if keep_edge is not None and not keep_edge(rest):
            continue
        adj = adjacency(n, rest)
        u, v = e[0] - 1, e[1] - 1
        ends = sorted((adj[u].bit_count(), adj[v].bit_count()))
        common = (adj[u] & adj[v]).bit_count()
        for x in range(n):
            for y in range(x + 1, n):
                f = (x + 1, y + 1)
                if f in edges or sorted((adj[x].bit_count(), adj[y].bit_count())) != ends:
                    continue
                if (adj[x] & adj[y]).bit_count() != common:
                    continue
                moved = sorted([*rest, f])
                m4, m5 = short_cycles(n, moved)
                if m5 != c5 or abs(m4 - c4) > CYCLE_SLACK or degeneracy(n, moved) != degen:
                    continue
                yield moved


def moved_twins(n: int, no: list[Edge], k: int) -> list[list[Edge]]:
    """k-colourable graphs one move away from the NO graph `no`, the moved edge one of its 4-critical core."""
    return [g for g in _moves(n, no, lambda rest: k_coloring(n, rest, k) is not None)
            if k_coloring(n, g, k) is not None]


def moved_nos(n: int, yes: list[Edge], k: int, certificate_free: Callable[[list[Edge]], bool]) -> list[list[Edge]]:
    """Graphs of chromatic number k + 1 one move away from the k-colourable `yes`, free of the local certificate
    the level keeps out (`certificate_free`)."""
    return [g for g in _moves(n, yes)
            if k_coloring(n, g, k) is None and k_coloring(n, g, k + 1) is not None and certificate_free(g)]


def closest_move(n: int, sources: list[list[Edge]], twins: Callable[[list[Edge]], list[list[Edge]]],
                 rng: random.Random, pair_tol: float) -> tuple[list[Edge], list[Edge]] | None:
    """(source, twin): of up to MOVE_SOURCES `sources` drawn with `rng` and their `twins` within `pair_tol` on
    `pair_features`, the pair closest on `shape` (first met wins a tie), or None."""
    best: tuple[float, list[Edge], list[Edge]] | None = None
    for source in rng.sample(sources, min(MOVE_SOURCES, len(sources))):
        feats, _ = pair_features(n, source)
        target = shape(n, source)
        for twin in twins(source):
            if np.abs(pair_features(n, twin)[0] - feats).max() > pair_tol:
                continue
            dist = float(np.abs(shape(n, twin) - target).mean())
            if best is None or dist < best[0]:
                best = (dist, source, twin)
    return None if best is None else (best[1], best[2])
