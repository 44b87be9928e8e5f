"""GCP — graph colouring (optimisation): colour the vertices of an undirected graph with as few colours as possible.

Deviations from the peer benchmark (docs/deviations.md):
- The answer states the number of colours and a colour for every vertex 1..N (isolated ones included), and it is
  correct only if the colouring is proper AND uses exactly chi colours (the peer checker never compared the count
  with chi, so "one colour per vertex" passed) AND the stated NumColors matches the colouring.
- Gold is the exact chromatic number (backtracking), not the peer answer files' greedy count.
- Vertices are 1..N in the prompt, the example and the picture alike (the peer example used 0-based keys).
- N = L+5 and 4+2L edges with a spread of -1..+2 (the peer files drift above 4+2L at high levels).
"""

from __future__ import annotations

import random
from typing import Any

from pydantic import BaseModel, Field, model_validator

from nphe4v.core.prompting import example_literal
from nphe4v.core.schema import Gold, ParseError, Verdict
from nphe4v.core.task import TaskSpec, TaskText
from nphe4v.tasks.coloring import (
    check_coloring,
    check_graph,
    chromatic_number,
    coloring_answer,
    edge_count_range,
    edge_lines,
    greedy_largest_first,
    parse_coloring,
    random_edges,
    render_graph,
)


class GCPData(BaseModel):
    num_vertices: int = Field(ge=1)
    edges: list[tuple[int, int]]

    @model_validator(mode="after")
    def _valid_graph(self) -> GCPData:
        check_graph(self.num_vertices, self.edges)
        return self


def params(level: int) -> dict[str, Any]:
    lo, hi = edge_count_range(level)
    return {"num_vertices": level + 5, "min_edges": lo, "max_edges": hi}


def generate(level: int, rng: random.Random) -> GCPData:
    p = params(level)
    m = rng.randint(p["min_edges"], p["max_edges"])
    return GCPData(num_vertices=p["num_vertices"], edges=random_edges(p["num_vertices"], m, rng))


def solve(data: GCPData) -> Gold:
    chi, coloring = chromatic_number(data.num_vertices, data.edges)
    return Gold(answer=coloring_answer(coloring), value=chi)


def render(data: GCPData) -> list[bytes]:
    return [render_graph(data.num_vertices, data.edges)]


def text(data: GCPData) -> TaskText:
    n = data.num_vertices
    return TaskText(
        intro=(
            "Graph colouring: give every vertex of an undirected graph a colour so that the two ends of each "
            "edge have different colours, using as few colours as possible."
        ),
        question=(
            f"The graph has {n} vertices, numbered 1 to {n}, and {len(data.edges)} edges. Colour all {n} "
            "vertices (including any vertex without edges) with the smallest possible number of colours so "
            "that no edge joins two vertices of the same colour."
        ),
        output=(
            "Report the number of colours you use and the colour of every vertex; colours may be numbers or "
            "names. Keep your reasoning brief."
        ),
        example=example_literal({"NumColors": 2, "Coloring": {"1": 1, "2": 2, "3": 1}}),
        data_lines=edge_lines(data.edges),
    )


def parse(obj: dict[str, Any]) -> dict[str, Any] | ParseError:
    return parse_coloring(obj)


def verify(data: GCPData, gold: Gold, answer: dict[str, Any]) -> Verdict:
    used, why = check_coloring(data.num_vertices, data.edges, answer)
    if used is None:
        return Verdict(verdict="wrong", reason=why)
    chi = int(gold.value) if gold.value is not None else chromatic_number(data.num_vertices, data.edges)[0]
    # A proper colouring with fewer colours than gold would refute gold; the solver is exact, so only '>' occurs.
    if used > chi:
        return Verdict(verdict="wrong", reason=f"proper colouring with {used} colours; the minimum is {chi}")
    return Verdict(verdict="correct")


def heuristic(data: GCPData) -> dict[str, Any]:
    return coloring_answer(greedy_largest_first(data.num_vertices, data.edges))


def random_answer(data: GCPData, rng: random.Random) -> dict[str, Any]:
    k = rng.randint(1, data.num_vertices)
    return coloring_answer({v: rng.randrange(k) for v in range(1, data.num_vertices + 1)})


TASK = TaskSpec(
    name="GCP",
    benchmark="nphardeval4v",
    complexity="NPH",
    data_model=GCPData,
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
