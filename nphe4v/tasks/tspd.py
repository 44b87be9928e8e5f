"""TSP-D — travelling salesman decision: is there a closed tour through all cities of length at most T?

Deviations from the peer benchmark (docs/deviations.md):
- the threshold sits at the optimum (`threshold_rule="at_optimum"`, the default since issue 31): a fair coin
  picks the answer, then T = the optimum + 0.005 (YES) or - 0.005 (NO). Distances have 2 decimals, as in the
  papers' 4V data, so every tour is a multiple of 0.01 and none ties with T; deciding needs the optimum to
  0.01, and no statistic computable without solving places it that closely (bench/bench_decision_leaks.py:
  gradient boosting and random forests at chance level on every level); the subtour LP, which is solving, proves
  95-100 % of NO instances (bench/bench_decision_relaxations.py). City sets whose shortest tour is the
  hull's perimeter are redrawn (the hull, a surface statistic, would then equal the optimum). The previous
  default, T = the median optimum predicted from surface statistics (`median_given_surface`, 1-decimal
  distances), stays an option: with 4 and 5 cities its prediction was biased where opt - hull takes only a few
  values, and gradient boosting learnt the answer from T / hull (68 %). The peer's 0.75 x sum of all distances
  makes every instance YES and stays an option (`paper_total_fraction`);
- the label comes from the exact optimum (Held-Karp), not from a Christofides approximation;
- "at most" is used in the wording and in the check (the peer prompt says "less than", its checker uses <=);
- the threshold is in the question of every prompt mode and in the picture's title (the peer's limited-text
  prompt states it nowhere); the picture shows every distance (see tsp_common).
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import Field

from evalcore.graph_solvers import held_karp, tour_length
from evalcore.prompting import example_literal
from evalcore.schema import Gold, ParseError, Verdict
from evalcore.task import TaskSpec, TaskText
from nphe4v.tasks.decision import read_decision
from nphe4v.tasks.tsp_common import (
    GRID,
    LENGTH_TOL,
    TSPData,
    distance_lines,
    fmt_dist,
    nearest_neighbour,
    random_cities,
    render_cities,
)


class TSPDData(TSPData):
    # a tour of total length <= threshold answers YES
    threshold: float = Field(ge=0, allow_inf_nan=False)


def params(level: int) -> dict[str, Any]:
    return {"num_cities": level + 3, "grid": 10, "decimals": DECIMALS}


# Distances of the default rule: 2 decimals, as in the papers' 4V files; tour lengths are multiples of 0.01
DECIMALS = 2


def hull_cities(coords: Sequence[tuple[int, int]]) -> list[int]:
    """The cities on the convex hull of the coordinates, in order (Andrew's monotone chain, collinear points
    left out)."""
    order = sorted(range(len(coords)), key=lambda c: (coords[c], c))

    def turn(o: int, a: int, b: int) -> int:
        (ox, oy), (ax, ay), (bx, by) = coords[o], coords[a], coords[b]
        return (ax - ox) * (by - oy) - (ay - oy) * (bx - ox)

    chains: list[list[int]] = []
    for seq in (order, order[::-1]):
        chain: list[int] = []
        for c in seq:
            while len(chain) >= 2 and turn(chain[-2], chain[-1], c) <= 0:
                chain.pop()
            chain.append(c)
        chains.append(chain[:-1])
    return chains[0] + chains[1]


def surface_stats(dist: Sequence[Sequence[float]], coords: Sequence[tuple[int, int]]) -> dict[str, float]:
    """Statistics anyone can compute without looking for a tour: the sum, the sum of squares, the largest and
    smallest distance, the minimum spanning tree's weight, the two-nearest bound (half the sum over cities of
    their two shortest distances) and the convex hull's perimeter (in the stated distances; every tour is at
    least as long, and exactly as long when all cities are on the hull). Sums run in a fixed order over the
    1-decimal distances, so the threshold built from them is the same float on every machine."""
    n = len(dist)
    pairs = [dist[i][j] for i in range(n) for j in range(i + 1, n)]
    # Prim from city 0, ties to the lowest id
    best = [math.inf] * n
    best[0] = 0.0
    done = [False] * n
    mst = 0.0
    for _ in range(n):
        u = min((c for c in range(n) if not done[c]), key=lambda c: (best[c], c))
        done[u] = True
        mst += best[u]
        for v in range(n):
            if not done[v] and dist[u][v] < best[v]:
                best[v] = dist[u][v]
    two_nearest = 0.0
    for i in range(n):
        near = sorted(dist[i][j] for j in range(n) if j != i)
        two_nearest += sum(near[:2])
    return {
        "sum": math.fsum(pairs),
        "sum_sq": math.fsum(x * x for x in pairs),
        "max": max(pairs, default=0.0),
        "min": min(pairs, default=0.0),
        "mst": mst,
        "two_nearest": two_nearest / 2,
        "hull": _hull_perimeter(coords, dist),
    }


RATIO_STATS = ("sum", "max", "min", "mst", "two_nearest")


def model_terms(stats: dict[str, float]) -> list[float]:
    """The regressors of the threshold model: 1, the statistics divided by the hull perimeter (the sum of
    squares by its square), and every product of two of those ratios. Ratios make the model scale-free; the
    products let it bend where the optimum's dependence on them is not linear (at 4 and 5 cities)."""
    hull = stats["hull"]
    ratios = [stats[k] / hull for k in RATIO_STATS] + [stats["sum_sq"] / (hull * hull)]
    products = [a * b for i, a in enumerate(ratios) for b in ratios[i:]]
    return [1.0, *ratios, *products]


# Conditional median of optimum / hull perimeter given the model terms, per number of cities:
# T = hull x sum(coef x term), a linear quantile regression (tau = 0.5) fitted on generated instances with exact
# optima by bench/calibrate_tspd_threshold.py, which prints this table. Since T is the median optimum *given*
# the surface statistics, about half the instances with any values of them are YES: they cannot tell YES from
# NO. MEDIAN_MAP then maps that linear prediction to the median ratio among calibration instances with similar
# predictions (KNOT_BINS equal-count bins): the linear form alone left "T below the hull perimeter, so NO" at
# 4 cities (67 % for that one statistic).
KNOT_BINS = 15
MEDIAN_MAP: dict[int, tuple[tuple[float, float], ...]] = {
    4: (
        (1.00332, 1.00505), (1.0048, 1.00526), (1.00559, 1.00526), (1.00649, 1.0056), (1.00719, 1.00602),
        (1.00803, 1.00578), (1.00894, 1.00746), (1.00969, 1.00719), (1.01067, 1.00881), (1.01175, 1.01053),
        (1.0132, 1.01247), (1.0148, 1.0129), (1.01678, 1.01705), (1.01955, 1.02073), (1.02444, 1.02849),
    ),
    5: (
        (1.00467, 1.00513), (1.00689, 1.00573), (1.0082, 1.00702), (1.00924, 1.0092), (1.01023, 1.00985),
        (1.01149, 1.01064), (1.01282, 1.01231), (1.01416, 1.01271), (1.01534, 1.01463), (1.01681, 1.01513),
        (1.01822, 1.01724), (1.01999, 1.01987), (1.0217, 1.02249), (1.02401, 1.02764), (1.02748, 1.03124),
    ),
    6: (
        (1.00647, 1.00639), (1.0092, 1.01096), (1.01141, 1.01202), (1.01322, 1.01102), (1.01519, 1.01357),
        (1.01701, 1.01516), (1.01885, 1.01849), (1.02076, 1.01906), (1.0225, 1.02036), (1.02449, 1.02266),
        (1.02681, 1.02602), (1.0295, 1.03204), (1.03236, 1.0337), (1.03681, 1.03523), (1.04271, 1.05119),
    ),
    7: (
        (1.01039, 1.01084), (1.01459, 1.01487), (1.0176, 1.01769), (1.02019, 1.0225), (1.02284, 1.02132),
        (1.02553, 1.02477), (1.02798, 1.02703), (1.03058, 1.02929), (1.03376, 1.03073), (1.03657, 1.036),
        (1.03988, 1.03663), (1.04345, 1.04411), (1.04772, 1.04413), (1.05383, 1.05534), (1.06403, 1.07217),
    ),
    8: (
        (1.01632, 1.01748), (1.02205, 1.02233), (1.02637, 1.02761), (1.03027, 1.03048), (1.03368, 1.03501),
        (1.03718, 1.03525), (1.04049, 1.04119), (1.04449, 1.04396), (1.04769, 1.04615), (1.0513, 1.04517),
        (1.05563, 1.05397), (1.06042, 1.06), (1.06628, 1.06824), (1.07295, 1.07439), (1.08527, 1.09005),
    ),
    9: (
        (1.02623, 1.02534), (1.03452, 1.03456), (1.0409, 1.04167), (1.04585, 1.04331), (1.04978, 1.05183),
        (1.0541, 1.05543), (1.05847, 1.05629), (1.06228, 1.06226), (1.06598, 1.06276), (1.07071, 1.07197),
        (1.07533, 1.07388), (1.08013, 1.07938), (1.08582, 1.08596), (1.09448, 1.09641), (1.1065, 1.11197),
    ),
    10: (
        (1.03354, 1.0317), (1.04483, 1.04236), (1.05189, 1.05107), (1.0578, 1.06242), (1.06306, 1.06454),
        (1.06858, 1.07234), (1.0733, 1.07677), (1.07785, 1.07529), (1.08306, 1.08022), (1.08845, 1.09021),
        (1.09365, 1.09122), (1.09942, 1.09612), (1.10591, 1.10794), (1.11572, 1.11748), (1.13207, 1.13399),
    ),
    11: (
        (1.05056, 1.04561), (1.06237, 1.06352), (1.06998, 1.06847), (1.07628, 1.0796), (1.08177, 1.08361),
        (1.08713, 1.0868), (1.09248, 1.09308), (1.09768, 1.09962), (1.10291, 1.10094), (1.10865, 1.11),
        (1.11454, 1.11286), (1.12089, 1.11531), (1.12885, 1.12965), (1.13769, 1.13946), (1.15168, 1.15781),
    ),
    12: (
        (1.06663, 1.06233), (1.07948, 1.07927), (1.08772, 1.0875), (1.09516, 1.09242), (1.10141, 1.10601),
        (1.10698, 1.1), (1.11209, 1.11089), (1.11713, 1.11853), (1.12285, 1.12235), (1.12887, 1.12901),
        (1.1346, 1.13922), (1.14179, 1.14152), (1.15135, 1.1505), (1.16186, 1.16228), (1.17996, 1.18113),
    ),
    13: (
        (1.08103, 1.08059), (1.09659, 1.09533), (1.10674, 1.10498), (1.11541, 1.11779), (1.12177, 1.12389),
        (1.12776, 1.12661), (1.13344, 1.13604), (1.13961, 1.13854), (1.14589, 1.14313), (1.15163, 1.15091),
        (1.15874, 1.16233), (1.16555, 1.16391), (1.17431, 1.17612), (1.18441, 1.1843), (1.20304, 1.2056),
    ),
}
MEDIAN_MODEL: dict[int, tuple[float, ...]] = {
    4: (
        10.6946, -7.56685, -4.59609, 1.09808, -7.90347, 0.900022, -2.66863, 0.842519, 4.00214, 0.709524,
        2.47065, 0.900161, 1.38405, -1.74228, -0.484156, 0.91855, -1.5259, 0.933848, -0.556722, -1.36685,
        -0.419243, -1.41406, 1.92393, 0.188894, 2.60465, -0.722504, -0.97586, -0.42113,
    ),
    5: (
        0.380769, -0.255883, 1.78397, 0.578089, 2.03355, -0.0707711, -0.0103277, 0.65768, -1.16806,
        0.662701, -0.404715, -1.33652, -1.55964, -0.901513, 0.157819, -1.13199, 1.30615, 1.89717, -0.870986,
        0.911031, -1.18737, -2.31599, 0.0537073, -0.611387, -0.27956, 1.0499, 2.01232, 1.07818,
    ),
    6: (
        -0.00603836, 0.302846, 2.49464, 1.51701, 1.7094, -0.205595, -0.989866, 0.188148, -0.740859,
        -0.732663, -0.61864, -0.308715, -0.605743, -1.76188, -0.464693, -1.32338, 0.976697, 1.57782,
        -1.42273, 2.70516, -0.954315, 0.519735, -0.169582, 0.56942, 0.613511, -0.0429403, 0.598116,
        0.726355,
    ),
    7: (
        -1.11897, 0.837411, 3.565, -0.827985, 2.02144, 0.21305, -1.92029, -0.0231958, -0.353804, -0.152734,
        -0.569128, -0.253293, 0.0792895, -3.10103, 0.819487, -1.76976, 0.164915, 1.25241, -1.0744, 4.74634,
        -1.48646, -0.505964, -0.0498575, 0.462693, 0.683137, 0.0199952, 0.482673, 0.0673458,
    ),
    8: (
        -0.958834, 0.843735, 1.50274, 3.87126, -0.395964, 0.839634, -1.27348, -0.0212856, 0.0683003,
        -0.769668, -0.0312093, -0.610999, -0.0586099, -1.62757, -1.29606, 0.561329, -0.953733, -0.186085,
        -1.381, 1.64498, -0.748077, 0.585831, 0.633025, 0.0935495, -0.405165, 0.688806, 1.28515, 0.281255,
    ),
    9: (
        -2.35897, 1.12512, 5.30661, 4.16247, 1.81498, -1.01172, -2.07053, -0.0823843, -0.465143, -0.548933,
        -0.397109, 0.0118662, 0.274055, -4.14571, -3.02579, -2.48751, 0.86007, 1.34042, 2.29451, 1.64323,
        -1.98426, 0.819792, 0.185584, 0.637853, 0.731638, 0.306759, -0.177626, -0.231491,
    ),
    10: (
        -6.31836, 2.2238, 10.2099, 1.52673, 2.69763, -1.68993, -4.31109, -0.167692, -1.10297, -0.210896,
        -0.752434, 0.402491, 0.633168, -6.27474, 2.24834, -2.75544, 0.972998, 2.53776, -6.32599, -2.3489,
        2.75792, -0.129753, 0.521856, 0.814467, 1.82037, -0.243544, -1.20767, -0.608686,
    ),
    11: (
        -4.04705, 1.6423, 5.39545, -0.689566, -1.63287, 0.221627, -3.11564, -0.103887, -0.822467, -0.193569,
        -0.00599191, -0.0537088, 0.351025, -2.90394, 1.69399, -0.222698, 0.617057, 1.98974, 8.82202,
        -1.18973, -0.16838, 1.02528, 0.434738, 0.329235, 0.459936, 0.331082, -0.279936, -0.29741,
    ),
    12: (
        -5.68209, 2.13278, 6.54501, -14.3108, 1.45313, -3.08667, -4.51616, -0.16746, -0.697882, 2.7162,
        -0.212367, 0.381792, 0.686115, -3.74406, -0.161847, -2.24042, 1.42876, 1.86475, 20.3234, -0.561946,
        -3.87271, -5.91186, -0.0479436, 0.946189, 0.568985, -0.0273511, -0.967165, -0.705645,
    ),
    13: (
        -2.94629, 1.15499, 0.922777, 8.58943, 0.54228, -2.16866, -2.24282, -0.0759329, 0.0611323, -0.976245,
        -0.198584, 0.288775, 0.277114, -1.11133, 8.14096, -1.96909, 0.263959, -0.0146477, -7.91706, 5.60442,
        -5.76794, 1.16473, 1.05285, -0.520233, 0.590989, 0.545659, -0.748065, -0.24148,
    ),
}


def _hull_perimeter(coords: Sequence[tuple[int, int]], dist: Sequence[Sequence[float]]) -> float:
    hull = hull_cities(coords)
    return math.fsum(dist[hull[k]][hull[(k + 1) % len(hull)]] for k in range(len(hull)))


def non_convex_cities(
    n: int, rng: random.Random, first: tuple[list[tuple[int, int]], list[list[float]]] | None = None
) -> tuple[list[tuple[int, int]], list[list[float]]]:
    """Random cities, drawn again while the shortest tour is no longer than the convex hull's perimeter (in the
    stated distances): all cities on the hull, or the inner ones so close to it that the rounded distances
    tie. Walking the hull is then an optimal tour, so a surface statistic would decide (over half the 4-city
    draws are like that), and no threshold set from the surface statistics could leave both answers equally
    likely."""
    coords, dist = first or random_cities(n, rng)
    while n >= 3 and held_karp(dist)[0] <= _hull_perimeter(coords, dist) + LENGTH_TOL:
        coords, dist = random_cities(n, rng)
    return coords, dist


def median_threshold(dist: Sequence[Sequence[float]], coords: Sequence[tuple[int, int]]) -> float:
    """T = the predicted median optimum for instances with these surface statistics, put half-way between two
    multiples of 0.1 (x.x5). Every tour length is a multiple of 0.1, so no tour ties with T: rounding T to
    1 decimal made ties, all YES, common at 4 and 5 cities (66 % YES at level 1)."""
    coef = MEDIAN_MODEL.get(len(dist))
    if coef is None:
        raise ValueError(f"no TSP-D threshold model for {len(dist)} cities (levels 1-10 have 4-13)")
    stats = surface_stats(dist, coords)
    value = 0.0
    for c, term in zip(coef, model_terms(stats), strict=True):
        value += c * term
    value = stats["hull"] * _piecewise(MEDIAN_MAP[len(dist)], value)
    # 1e-6 keeps a value that is a multiple of 0.1 up to float noise (23.099999...) on the right side
    return (math.floor(value * 10 + 1e-6) + 0.5) / 10


def _piecewise(knots: Sequence[tuple[float, float]], x: float) -> float:
    """Linear interpolation between the knots (sorted by x), flat beyond the ends."""
    if x <= knots[0][0]:
        return knots[0][1]
    for (x0, y0), (x1, y1) in itertools.pairwise(knots):
        if x <= x1:
            return y0 if x1 == x0 else y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    return knots[-1][1]


ThresholdRule = Literal["at_optimum", "median_given_surface", "paper_total_fraction"]
# The papers' TSP-D: "a threshold of 0.75, setting factor of the allowed travel distance to the total possible
# distance" (0.75 x the sum of all pairwise distances).
PAPER_FRACTION = 0.75


def paper_threshold(dist: list[list[float]]) -> float:
    n = len(dist)
    return round(PAPER_FRACTION * sum(dist[i][j] for i in range(n) for j in range(i + 1, n)), 1)


def cities_2dp(n: int, rng: random.Random) -> tuple[list[tuple[int, int]], list[list[float]]]:
    """n distinct points of the 10 x 10 grid (as `random_cities`) and their distances rounded to 2 decimals."""
    cells = rng.sample(range(GRID * GRID), n)
    coords = [(c % GRID, c // GRID) for c in cells]
    return coords, [[round(math.dist(a, b), DECIMALS) for b in coords] for a in coords]


def at_optimum_instance(n: int, rng: random.Random) -> TSPDData:
    """The default rule: non-convex cities (2-decimal distances), a fair coin, T = opt +- half a hundredth."""
    coords, dist = cities_2dp(n, rng)
    while True:
        opt = held_karp(dist)[0]
        if n < 3 or opt > _hull_perimeter(coords, dist) + LENGTH_TOL:
            break
        coords, dist = cities_2dp(n, rng)
    yes = rng.random() < 0.5
    hundredths = round(opt * 10**DECIMALS)  # tour lengths are sums of 2-decimal numbers
    threshold = (hundredths + (0.5 if yes else -0.5)) / 10**DECIMALS
    return TSPDData(num_cities=n, distances=dist, coords=coords, threshold=threshold)


def generate(level: int, rng: random.Random, threshold_rule: ThresholdRule = "at_optimum") -> TSPDData:
    """`threshold_rule` "at_optimum" (default: a coin, then T = the optimum +- 0.005 on 2-decimal distances, so
    only the optimum to 0.01 decides), "median_given_surface" (the previous default, 1-decimal distances: T is
    the median optimum predicted from the distance matrix's surface statistics) or "paper_total_fraction" (the
    papers' T = 0.75 x the sum of all distances: every instance is YES, so an always-YES answer scores 100 %;
    kept as an option for comparison with the papers, not as the default)."""
    n = params(level)["num_cities"]
    if threshold_rule == "at_optimum":
        return at_optimum_instance(n, rng)
    coords, dist = random_cities(n, rng)
    if threshold_rule == "paper_total_fraction":
        return TSPDData(num_cities=n, distances=dist, coords=coords, threshold=paper_threshold(dist))
    coords, dist = non_convex_cities(n, rng, (coords, dist))
    return TSPDData(num_cities=n, distances=dist, coords=coords, threshold=median_threshold(dist, coords))


def _answer(feasible: bool) -> dict[str, Any]:
    return {"Feasible": "YES" if feasible else "NO"}


def solve(data: TSPDData) -> Gold:
    opt = held_karp(data.distances)[0]
    feasible = opt <= data.threshold + LENGTH_TOL
    return Gold(answer=_answer(feasible), value=1.0 if feasible else 0.0)


def render(data: TSPDData) -> list[bytes]:
    caption = f"Cities and distances (length limit: {fmt_dist(data.threshold)})"
    return [render_cities(data.distances, data.coords, caption)]


def text(data: TSPDData) -> TaskText:
    n = data.num_cities
    return TaskText(
        intro=(
            "Travelling salesman decision problem: given cities, the distance between every pair of them "
            "and a length limit, decide whether some closed tour that visits every city exactly once and "
            "returns to its start has a total length within the limit."
        ),
        question=(
            f"There are {n} cities, numbered 0 to {n - 1}, and the distance between any two cities is the "
            f"same in both directions. Is there a tour through all {n} cities, returning to its starting "
            f"city, whose total distance is at most {fmt_dist(data.threshold)}?"
        ),
        output="Answer YES if such a tour exists and NO if every tour is longer. Keep your reasoning brief.",
        example=example_literal({"Feasible": "<YES_OR_NO>"}),
        data_lines=distance_lines(data.distances),
    )


def parse(obj: dict[str, Any]) -> dict[str, Any] | ParseError:
    said = read_decision(obj)  # the reading shared with GCP-D
    return said if isinstance(said, ParseError) else _answer(said)


def verify(data: TSPDData, gold: Gold, answer: dict[str, Any]) -> Verdict:
    said = answer.get("Feasible")
    if said not in ("YES", "NO"):
        return Verdict(verdict="wrong", reason="Feasible is not YES or NO")
    expected = gold.answer.get("Feasible")
    if expected not in ("YES", "NO"):
        expected = solve(data).answer["Feasible"]
    if said == expected:
        return Verdict(verdict="correct")
    if expected == "YES":
        return Verdict(
            verdict="wrong",
            reason=f"answered NO, but a tour of length {fmt_dist(held_karp(data.distances)[0])} "
            f"<= {fmt_dist(data.threshold)} exists",
        )
    return Verdict(
        verdict="wrong",
        reason=f"answered YES, but the shortest tour has length {fmt_dist(held_karp(data.distances)[0])} "
        f"> {fmt_dist(data.threshold)}",
    )


def heuristic(data: TSPDData) -> dict[str, Any]:
    # A model that builds the nearest-neighbour tour says YES iff that tour fits: never wrong on NO
    # instances, wrong on YES instances whose greedy tour overshoots the limit.
    tour = nearest_neighbour(data.distances, 0)
    return _answer(tour_length(data.distances, tour[:-1]) <= data.threshold + LENGTH_TOL)


def random_answer(data: TSPDData, rng: random.Random) -> dict[str, Any]:
    return _answer(rng.random() < 0.5)


TASK = TaskSpec(
    name="TSP-D",
    benchmark="nphardeval4v",
    complexity="NPC",
    data_model=TSPDData,
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
