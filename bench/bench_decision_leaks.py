"""Do surface statistics give TSP-D / GCP-D answers away? (issue 19 item 1)

Per level, over a generated dataset (default 500 instances per level and task, seeds disjoint from the TSP-D
threshold calibration), prints:
- YES share;
- leave-one-out accuracy of an L2-regularised logistic regression on all surface statistics together
  (standardised), and the best single-statistic threshold rule; the target is <= 60 % at every level;
- how often a textbook heuristic finds a certificate, so a reader sees how hard each level is: TSP-D - nearest
  neighbour from city 0 + 2-opt finds a tour <= T (share of YES instances); GCP-D - DSatur finds a k-colouring
  (share of YES instances), a greedy clique finds a clique of more than k vertices (share of NO instances).

    PYTHONPATH=. nice -n 10 python bench/bench_decision_leaks.py [instances_per_level] [--task TSP-D|GCP-D]

Surface statistics. TSP-D: node and edge counts, density and degree statistics (constant: the graph is
complete), T, the sum / mean / sd / min / max of the distances, the minimum spanning tree's weight, the
two-nearest bound, the convex hull's perimeter (from the coordinates), T / sum, T / (n x mean distance),
T / MST, T / two-nearest, T / hull. GCP-D: node and edge counts, density, degree min / max / mean / sd,
triangles, isolated vertices, degeneracy, k.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from nphe4v.core.graph_solvers import adjacency, k_coloring, tour_length
from nphe4v.core.leakage import best_threshold_accuracy, loo_logistic_accuracy
from nphe4v.tasks import gcpd, tspd
from nphe4v.tasks.tsp_common import LENGTH_TOL, nearest_neighbour

TARGET = 0.60


def tspd_features(d: tspd.TSPDData) -> list[float]:
    n = d.num_cities
    s = tspd.surface_stats(d.distances, d.coords or [])
    pairs = [d.distances[i][j] for i in range(n) for j in range(i + 1, n)]
    mean = s["sum"] / len(pairs)
    sd = statistics.pstdev(pairs)
    hull = s["hull"]
    t = d.threshold
    edges = len(pairs)
    return [
        n, edges, 1.0, n - 1, n - 1, n - 1, 0.0,  # counts, density, degree min / max / mean / sd
        t, s["sum"], mean, sd, s["min"], s["max"], s["mst"], s["two_nearest"], hull,
        t / s["sum"], t / (n * mean), t / s["mst"], t / s["two_nearest"], t / hull if hull else 0.0,
    ]


def two_opt(dist: list[list[float]], tour: list[int]) -> list[int]:
    """First-improvement 2-opt on a closed tour given as [c0, ..., c_{n-1}] (no repeat)."""
    n = len(tour)
    improved = True
    while improved:
        improved = False
        for i in range(n - 1):
            for j in range(i + 2, n if i else n - 1):
                a, b, c, e = tour[i], tour[i + 1], tour[j], tour[(j + 1) % n]
                if dist[a][c] + dist[b][e] < dist[a][b] + dist[c][e] - 1e-9:
                    tour[i + 1 : j + 1] = reversed(tour[i + 1 : j + 1])
                    improved = True
    return tour


def tspd_certificate(d: tspd.TSPDData) -> bool:
    tour = two_opt(d.distances, nearest_neighbour(d.distances, 0)[:-1])
    return tour_length(d.distances, tour) <= d.threshold + LENGTH_TOL


def gcpd_features(d: gcpd.GCPDData) -> list[float]:
    n, m = d.num_vertices, len(d.edges)
    degrees, triangles, degen = gcpd.surface_profile(n, d.edges)
    return [
        n, m, 2 * m / (n * (n - 1)), min(degrees), max(degrees), statistics.fmean(degrees),
        statistics.pstdev(degrees), triangles, sum(x == 0 for x in degrees), degen, d.k,
    ]


def dsatur_colours(n: int, edges: list[tuple[int, int]]) -> int:
    """Colours used by DSatur without backtracking (highest saturation, then degree, then lowest id)."""
    adj = adjacency(n, edges)
    colour = [-1] * n
    for _ in range(n):
        def key(v: int) -> tuple[int, int, int]:
            sat = len({colour[w] for w in range(n) if adj[v] >> w & 1 and colour[w] >= 0})
            return (sat, adj[v].bit_count(), -v)

        v = max((u for u in range(n) if colour[u] < 0), key=key)
        taken = {colour[w] for w in range(n) if adj[v] >> w & 1}
        colour[v] = next(c for c in range(n) if c not in taken)
    return max(colour) + 1


def greedy_clique(n: int, edges: list[tuple[int, int]]) -> int:
    """Largest clique found by growing from every vertex, adding the candidate with most candidate neighbours."""
    adj = adjacency(n, edges)
    best = 1
    for start in range(n):
        size, cand = 1, adj[start]
        while cand:
            pick = max((w for w in range(n) if cand >> w & 1), key=lambda w: ((adj[w] & cand).bit_count(), -w))
            size += 1
            cand &= adj[pick]
        best = max(best, size)
    return best


def run_tspd(per_level: int) -> float:
    worst = 0.0
    print("TSP-D  level  n   YES   LOO-logistic  best-single  NN+2opt tour<=T (of YES)   gen s")
    for level in range(1, 11):
        t0 = time.perf_counter()
        data = [tspd.generate(level, random.Random(f"leak-TSP-D-{level}-{i}")) for i in range(per_level)]
        labels = [tspd.solve(d).value == 1.0 for d in data]
        dt = time.perf_counter() - t0
        feats = [tspd_features(d) for d in data]
        loo = loo_logistic_accuracy(feats, labels)
        single = max(best_threshold_accuracy([f[k] for f in feats], labels) for k in range(len(feats[0])))
        yes = [d for d, y in zip(data, labels, strict=True) if y]
        cert = sum(tspd_certificate(d) for d in yes) / max(len(yes), 1)
        worst = max(worst, loo)
        print(f"       L{level:02d}  {data[0].num_cities:2d}  {sum(labels) / len(labels):.3f}  {loo:12.3f}"
              f"  {single:11.3f}  {cert:24.3f}  {dt:6.1f}")
    return worst


def run_gcpd(per_level: int) -> float:
    worst = 0.0
    print("GCP-D  level  n  k   YES   LOO-logistic  best-single  DSatur k-col (of YES)  clique>k (of NO)   gen s")
    for level in range(1, 11):
        t0 = time.perf_counter()
        data = [gcpd.generate(level, random.Random(f"leak-GCP-D-{level}-{i}")) for i in range(per_level)]
        dt = time.perf_counter() - t0
        labels = [k_coloring(d.num_vertices, d.edges, d.k) is not None for d in data]
        feats = [gcpd_features(d) for d in data]
        loo = loo_logistic_accuracy(feats, labels)
        single = max(best_threshold_accuracy([f[k] for f in feats], labels) for k in range(len(feats[0])))
        yes = [d for d, y in zip(data, labels, strict=True) if y]
        no = [d for d, y in zip(data, labels, strict=True) if not y]
        col = sum(dsatur_colours(d.num_vertices, d.edges) <= d.k for d in yes) / max(len(yes), 1)
        clique = sum(greedy_clique(d.num_vertices, d.edges) > d.k for d in no) / max(len(no), 1)
        worst = max(worst, loo)
        print(f"       L{level:02d}  {data[0].num_vertices:2d}  {data[0].k}  {sum(labels) / len(labels):.3f}"
              f"  {loo:12.3f}  {single:11.3f}  {col:21.3f}  {clique:16.3f}  {dt:6.1f}")
    return worst


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("per_level", nargs="?", type=int, default=500)
    p.add_argument("--task", choices=["TSP-D", "GCP-D"], action="append")
    args = p.parse_args()
    for task in args.task or ["TSP-D", "GCP-D"]:
        worst = run_tspd(args.per_level) if task == "TSP-D" else run_gcpd(args.per_level)
        print(f"{task}: worst level LOO-logistic accuracy {worst:.3f}; target <= {TARGET:.2f}: "
              f"{'PASS' if worst <= TARGET else 'MISS'}\n")


if __name__ == "__main__":
    main()
