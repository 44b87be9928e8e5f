"""GCP-D — graph colouring decision: can the graph be coloured with at most k colours?

Deviations from the peer benchmark (docs/deviations.md):
- Gold is exact k-colourability (backtracking), not networkx's greedy `largest_first` count (wrong on 15 % of the
  peer 4V instances).
- Labels are balanced by design: k = 3 as in the peer files; the edge count is drawn first (uniform over the
  level's range), then a coin decides YES/NO, and the generator plants a graph of chromatic number exactly 3
  (YES: an odd cycle in a 3-class partition) or exactly 4 (NO: K4, an odd wheel or the Moser spindle in a
  4-class partition) with exactly that many edges. Both answers are tight (chi = k or chi = k + 1) and neither
  the stated edge count nor the vertex count predicts the answer. The peer data was 74 % YES, and NO graphs
  were denser. Level 1 has at least 6 edges (peer: 5..8), the fewest a 4-chromatic graph has.
- k is stated in the question (every prompt mode); the picture shows only the graph, as in the peer images.
"""

from __future__ import annotations

import itertools
import random
from typing import Any

from pydantic import BaseModel, Field, model_validator

from nphe4v.core.coerce import as_yes_no
from nphe4v.core.graph_solvers import check_graph, chromatic_number, greedy_largest_first, k_coloring
from nphe4v.core.prompting import example_literal
from nphe4v.core.schema import Gold, ParseError, Verdict
from nphe4v.core.task import TaskSpec, TaskText
from nphe4v.tasks.coloring import edge_count_range, edge_lines, render_graph
from nphe4v.tasks.decision import decision_answer, read_decision

DEFAULT_K = 3
# A 4-chromatic graph has at least 6 edges (K4), so no level offers fewer: both answers stay possible at every
# edge count and the edge count can be drawn before the answer.
MIN_EDGES = 6


class GCPDData(BaseModel):
    num_vertices: int = Field(ge=1)
    edges: list[tuple[int, int]]
    k: int = Field(ge=1)

    @model_validator(mode="after")
    def _valid_graph(self) -> GCPDData:
        check_graph(self.num_vertices, self.edges)
        return self


def params(level: int) -> dict[str, Any]:
    lo, hi = edge_count_range(level)
    return {"num_vertices": level + 5, "min_edges": max(lo, MIN_EDGES), "max_edges": hi, "k": DEFAULT_K}


def _cycle(c: int) -> list[tuple[int, int]]:
    return [(i, (i + 1) % c) for i in range(c)]


def _wheel(rim: int) -> list[tuple[int, int]]:
    return [(0, i) for i in range(1, rim + 1)] + [(i, i % rim + 1) for i in range(1, rim + 1)]


_MOSER_SPINDLE = [(0, 1), (0, 2), (1, 2), (1, 3), (2, 3), (0, 4), (0, 5), (4, 5), (4, 6), (5, 6), (3, 6)]

# Small graphs whose chromatic number is exactly 3 (odd cycles) or exactly 4 (K4, odd wheels, the Moser
# spindle). Planting one inside a graph whose every edge respects a 3- or 4-class partition pins chi exactly,
# with no solver in the loop, so the edge count can be fixed before the answer is drawn.
_CORES: dict[int, list[list[tuple[int, int]]]] = {
    3: [_cycle(3), _cycle(5), _cycle(7)],
    4: [list(itertools.combinations(range(4), 2)), _wheel(5), _MOSER_SPINDLE, _wheel(7)],
}


def _core_size(core: list[tuple[int, int]]) -> int:
    return 1 + max(max(e) for e in core)


def _planted_chi(n: int, m: int, chi: int, rng: random.Random) -> list[tuple[int, int]]:
    """m random edges on vertices 1..n with chromatic number exactly `chi` (3 or 4): a core forcing chi
    colours, and every other edge between different classes of a chi-class partition that extends the
    core's colouring."""
    fits = [c for c in _CORES[chi] if _core_size(c) <= n and len(c) <= m]
    core = rng.choice(fits)
    size = _core_size(core)
    colours = k_coloring(size, [(u + 1, v + 1) for u, v in core], chi)
    assert colours is not None  # every core is chi-colourable by construction
    place = rng.sample(range(1, n + 1), size)
    label = {v: rng.randrange(chi) for v in range(1, n + 1)}
    for i, v in enumerate(place):
        label[v] = colours[i + 1]
    edges = {tuple(sorted((place[u], place[v]))) for u, v in core}
    free = [
        (u, v)
        for u in range(1, n + 1)
        for v in range(u + 1, n + 1)
        if label[u] != label[v] and (u, v) not in edges
    ]
    edges |= set(rng.sample(free, min(m - len(edges), len(free))))
    return sorted(edges)  # type: ignore[arg-type]


def generate(level: int, rng: random.Random) -> GCPDData:
    p = params(level)
    n, k = p["num_vertices"], p["k"]
    # The edge count is drawn before the answer, from the same range for both answers, so neither the stated
    # edge count nor the vertex count tells YES from NO (tests/test_task_gcp.py measures it).
    m = rng.randint(p["min_edges"], p["max_edges"])
    feasible = rng.random() < 0.5
    return GCPDData(num_vertices=n, edges=_planted_chi(n, m, k if feasible else k + 1, rng), k=k)


def solve(data: GCPDData, max_steps: int | None = None) -> Gold:
    """Exact gold; with `max_steps`, raises graph_solvers.SolveBudgetExceeded rather than search longer."""
    feasible = k_coloring(data.num_vertices, data.edges, data.k, max_steps) is not None
    return Gold(answer={"Feasible": "YES" if feasible else "NO"}, value=1.0 if feasible else 0.0)


def render(data: GCPDData) -> list[bytes]:
    return [render_graph(data.num_vertices, data.edges)]


def text(data: GCPDData) -> TaskText:
    n = data.num_vertices
    return TaskText(
        intro=(
            "Graph colouring decision: decide whether the vertices of an undirected graph can be coloured with a "
            "limited number of colours so that the two ends of each edge have different colours."
        ),
        question=(
            f"The graph has {n} vertices, numbered 1 to {n}, and {len(data.edges)} edges. Can all {n} vertices "
            f"be coloured using at most {data.k} colours so that no edge joins two vertices of the same colour?"
        ),
        output="Answer YES if such a colouring exists and NO otherwise. Keep your reasoning brief.",
        example=example_literal({"Feasible": "<YES_OR_NO>"}),
        data_lines=edge_lines(data.edges),
    )


def parse(obj: dict[str, Any]) -> dict[str, Any] | ParseError:
    said = read_decision(obj)  # the reading shared with TSP-D
    return said if isinstance(said, ParseError) else decision_answer(said)


def _truth(data: GCPDData, gold: Gold) -> bool:
    if gold.value is not None:
        return gold.value >= 0.5
    said = as_yes_no(gold.answer.get("Feasible"))
    if said is None:
        # Gold unknown (an import whose exact search ran past its budget): decide exactly, never guess.
        return k_coloring(data.num_vertices, data.edges, data.k) is not None
    return said


def verify(data: GCPDData, gold: Gold, answer: dict[str, Any]) -> Verdict:
    canon = parse(answer)
    if isinstance(canon, ParseError):
        return Verdict(verdict="wrong", reason=f"malformed answer: {canon.kind} {canon.detail}")
    said = canon["Feasible"] == "YES"
    truth = _truth(data, gold)
    if said == truth:
        return Verdict(verdict="correct")
    if truth:
        return Verdict(verdict="wrong", reason=f"answered NO, but a colouring with {data.k} colours exists")
    chi = chromatic_number(data.num_vertices, data.edges)[0]
    return Verdict(verdict="wrong", reason=f"answered YES, but the graph needs {chi} colours (k = {data.k})")


def heuristic(data: GCPDData) -> dict[str, Any]:
    # The peer's reference rule: YES iff greedy largest-first colouring fits in k colours.
    used = len(set(greedy_largest_first(data.num_vertices, data.edges).values()))
    return {"Feasible": "YES" if used <= data.k else "NO"}


def random_answer(data: GCPDData, rng: random.Random) -> dict[str, Any]:
    return {"Feasible": rng.choice(["YES", "NO"])}


TASK = TaskSpec(
    name="GCP-D",
    benchmark="nphardeval4v",
    complexity="NPC",
    data_model=GCPDData,
    params=params,
    generate=generate,
    solve=solve,
    render=render,
    text=text,
    parse=parse,
    verify=verify,
    heuristic=heuristic,
    random_answer=random_answer,
)
