"""TSP — travelling salesman (optimisation): the shortest closed tour through all cities.

Deviations from the peer benchmark (docs/deviations.md):
- gold is the exact optimum (Held-Karp); the peer compares against one nearest-neighbour tour from a random,
  unseeded start with exact float equality, so better tours fail and rotations of the same tour can fail;
- any optimal tour is accepted: every rotation, reversal and tie, its length recomputed from the stored
  matrix and compared with the optimum at 1e-6 (lengths are sums of 1- or 2-decimal numbers); the prompt asks
  for a tour from city 0 written closed (0->...->0), but a closed listing starting elsewhere, or an open listing
  of all n cities (the return leg implied), is accepted too;
- the tour is checked to visit every city exactly once with ids in range (the peer checks neither);
- the tour decides the verdict, as in the peer checker; the stated TotalDistance is reported apart as
  `value_consistent` (within 0.05 + 0.1 % of the tour's real length: rounding slack for 2-decimal peer data),
  and a missing or unreadable TotalDistance does not make the answer unparsable;
- the prompt says cities are 0..n-1 (the peer says 1..N while its data and checker are 0-based);
- distances are rounded to 1 decimal (peer: 2) and the picture shows every distance (peer: positions only).
"""

from __future__ import annotations

import random
from typing import Any

from evalcore.coerce import as_number, get_key
from evalcore.graph_solvers import held_karp, tour_length
from evalcore.prompting import example_literal
from evalcore.schema import Gold, ParseError, Verdict
from evalcore.task import TaskSpec, TaskText
from nphe4v.tasks.paths import parse_node_path
from nphe4v.tasks.tsp_common import (
    LENGTH_TOL,
    TSPData,
    distance_lines,
    fmt_dist,
    fmt_path,
    nearest_neighbour,
    random_cities,
    render_cities,
)

__all__ = ["TASK", "TSPData"]

# Stated totals may be rounded by the model (peer data has 2 decimals): 0.05 absolute + 0.1 % relative.
STATED_ABS_TOL = 0.05
STATED_REL_TOL = 1e-3


def params(level: int) -> dict[str, Any]:
    return {"num_cities": level + 3, "grid": 10, "decimals": 1}


def generate(level: int, rng: random.Random) -> TSPData:
    n = params(level)["num_cities"]
    coords, dist = random_cities(n, rng)
    return TSPData(num_cities=n, distances=dist, coords=coords)


def solve(data: TSPData) -> Gold:
    length, tour = held_karp(data.distances)
    return Gold(answer={"Path": fmt_path(tour), "TotalDistance": round(length, 4)}, value=length)


def render(data: TSPData) -> list[bytes]:
    return [render_cities(data.distances, data.coords, "Cities and the distance between each pair")]


def text(data: TSPData) -> TaskText:
    n = data.num_cities
    return TaskText(
        intro=(
            "Travelling salesman problem: given cities and the distance between every pair of them, find "
            "the shortest closed tour that visits every city exactly once and returns to where it started."
        ),
        question=(
            f"There are {n} cities, numbered 0 to {n - 1}, and the distance between any two cities is the "
            f"same in both directions. Find a shortest tour that starts at city 0, visits each of the other "
            f"{n - 1} cities exactly once and returns to city 0."
        ),
        output=(
            "Give the tour as city numbers joined by '->', beginning and ending with 0, and its total "
            "distance (the sum of the distances along the tour). Keep your reasoning brief."
        ),
        example=example_literal({"Path": "<START_CITY>->...-><START_CITY>", "TotalDistance": "<TOTAL_DISTANCE>"}),
        data_lines=distance_lines(data.distances),
    )


def parse(obj: dict[str, Any]) -> dict[str, Any] | ParseError:
    if not isinstance(obj, dict):
        return ParseError(kind="bad_value", detail=f"not a mapping: {type(obj).__name__}")
    has_path, raw_path = get_key(obj, "Path", "Tour", "Route")
    _, raw_dist = get_key(obj, "TotalDistance", "Distance", "TotalLength", "Length")
    if not has_path:
        return ParseError(kind="missing_key", detail="Path")
    path = parse_node_path(raw_path)
    if path is None:
        return ParseError(kind="bad_value", detail=f"Path={raw_path!r:.60}")
    # the tour is the answer; a stated total that is missing or not a number is None (not compared)
    return {"Path": path, "TotalDistance": as_number(raw_dist)}


def check_tour(data: TSPData, path: list[int]) -> list[int] | str:
    """The cycle a path describes (without the closing city), or why it is not a tour."""
    n = data.num_cities
    if not path:
        return "empty path"
    bad = [c for c in path if not 0 <= c < n]
    if bad:
        return f"city {bad[0]} out of range 0..{n - 1}"
    if len(path) == n + 1 and path[0] == path[-1]:
        cycle = path[:-1]
    elif len(path) == n:
        # an open listing of all cities: the return leg is implied
        cycle = path
    else:
        return f"path has {len(path)} entries; a tour of {n} cities lists {n} cities plus the return to the first"
    if len(set(cycle)) != n:
        dup = next(c for c in cycle if cycle.count(c) > 1)
        missing = sorted(set(range(n)) - set(cycle))
        return f"city {dup} visited more than once (missing: {missing})"
    return cycle


def verify(data: TSPData, gold: Gold, answer: dict[str, Any]) -> Verdict:
    """The tour decides (as in the papers' checker); the stated TotalDistance only sets `value_consistent`."""
    path, stated = answer.get("Path"), answer.get("TotalDistance")
    if not isinstance(path, list) or not all(isinstance(c, int) for c in path):
        return Verdict(verdict="wrong", reason="Path is not a list of city numbers")
    cycle = check_tour(data, path)
    if isinstance(cycle, str):
        return Verdict(verdict="wrong", reason=cycle)
    length = tour_length(data.distances, cycle)
    consistent = None
    note = ""
    if isinstance(stated, int | float) and not isinstance(stated, bool):
        consistent = abs(stated - length) <= STATED_ABS_TOL + STATED_REL_TOL * length
        note = "" if consistent else f" (stated TotalDistance {stated:g}, the tour's length is {fmt_dist(length)})"
    opt = gold.value if gold.value is not None else held_karp(data.distances)[0]
    if length > opt + LENGTH_TOL:
        return Verdict(verdict="wrong", value_consistent=consistent,
                       reason=f"tour length {fmt_dist(length)} exceeds the optimum {fmt_dist(opt)}{note}")
    return Verdict(verdict="correct", value_consistent=consistent, reason=note.strip(" ()"))


def heuristic(data: TSPData) -> dict[str, Any]:
    tour = nearest_neighbour(data.distances, 0)
    return {"Path": fmt_path(tour), "TotalDistance": round(tour_length(data.distances, tour[:-1]), 4)}


def random_answer(data: TSPData, rng: random.Random) -> dict[str, Any]:
    rest = list(range(1, data.num_cities))
    rng.shuffle(rest)
    cycle = [0, *rest]
    return {"Path": fmt_path([*cycle, 0]), "TotalDistance": round(tour_length(data.distances, cycle), 4)}


TASK = TaskSpec(
    name="TSP",
    benchmark="nphardeval4v",
    complexity="NPH",
    data_model=TSPData,
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
