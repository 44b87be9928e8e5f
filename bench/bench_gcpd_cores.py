"""Which 4-critical graphs do GCP-D's NO instances hold, per level? (issue 31 item 3)

A NO instance (not k-colourable, k = 3) holds a 4-critical subgraph, and that subgraph is the certificate. Where the
papers' sizes leave few kinds of it, a learner on local statistics (induced subgraph counts, triangles at a vertex)
can learn the kinds instead of solving. This bench measures how few: per level, over the NO instances of a
generated dataset (default 300 instances per level, the seeds of bench_decision_leaks.py), it extracts one
4-critical subgraph of each (edges dropped in a seeded random order while the rest stays not 3-colourable, so every
edge kept is critical) and prints how many isomorphism classes occur (networkx: Weisfeiler-Lehman hash, then an
exact isomorphism test within a hash), what share of the NO instances the commonest 1, 3 and 10 classes cover,
the classes' vertex and edge counts, and how many NO instances hold a K4 or an odd wheel (some vertex's
neighbourhood holds an odd cycle: a certificate a vertex's own neighbourhood shows); and the accuracy over all
instances of the rules "NO iff a K4" and "NO iff an odd cycle in some neighbourhood" (no YES graph holds either,
so each rule is a floor under what a learner that can count 4-vertex cliques, or look at neighbourhoods, reaches).

    PYTHONPATH=. nice -n 10 python bench/bench_gcpd_cores.py [instances_per_level] [--levels 1-10]
"""

from __future__ import annotations

import argparse
import random
from collections import Counter

import networkx as nx

from evalcore.graph_solvers import k_coloring
from nphe4v.tasks import gcpd
from nphe4v.tasks.chi4_cores import k4_free, wheel_free


def critical_subgraph(n: int, edges: list[tuple[int, int]], k: int, rng: random.Random) -> nx.Graph:
    """One (k + 1)-critical subgraph of a graph that is not k-colourable, without its isolated vertices."""
    order = list(edges)
    rng.shuffle(order)
    kept = set(edges)
    for e in order:
        kept.discard(e)
        if k_coloring(n, sorted(kept), k) is not None:
            kept.add(e)
    return nx.Graph(sorted(kept))


class Classes:
    """Isomorphism classes of graphs: a Weisfeiler-Lehman hash narrows, an exact test decides."""

    def __init__(self) -> None:
        self.reps: dict[str, list[nx.Graph]] = {}
        self.count: Counter[tuple[str, int]] = Counter()

    def add(self, g: nx.Graph) -> tuple[str, int]:
        h = nx.weisfeiler_lehman_graph_hash(g, iterations=4)
        reps = self.reps.setdefault(h, [])
        for i, r in enumerate(reps):
            if nx.is_isomorphic(g, r):
                self.count[(h, i)] += 1
                return h, i
        reps.append(g)
        self.count[(h, len(reps) - 1)] += 1
        return h, len(reps) - 1

    def graph(self, key: tuple[str, int]) -> nx.Graph:
        return self.reps[key[0]][key[1]]


def run(per_level: int, levels: range) -> None:
    print("level  n   NO  classes  top1   top3   top10  K4     odd wheel  rule K4  rule wheel  "
          "commonest classes (vertices/edges: share)")
    for level in levels:
        data = [gcpd.generate(level, random.Random(f"leak-GCP-D-{level}-{i}")) for i in range(per_level)]
        no = [d for d in data if k_coloring(d.num_vertices, d.edges, d.k) is None]
        classes = Classes()
        k4 = wheel = 0
        for i, d in enumerate(no):
            classes.add(critical_subgraph(d.num_vertices, d.edges, d.k, random.Random(f"core-{level}-{i}")))
            k4 += not k4_free(d.num_vertices, d.edges)
            wheel += not wheel_free(d.num_vertices, d.edges)
        ranked = classes.count.most_common()
        share = [sum(c for _, c in ranked[:top]) / max(len(no), 1) for top in (1, 3, 10)]
        yes = len(data) - len(no)  # every YES graph is K4-free and wheel-free (3-colourable), so a rule errs on NO only
        rules = [(held + yes) / len(data) for held in (k4, wheel)]
        common = ", ".join(
            f"{classes.graph(key).number_of_nodes()}/{classes.graph(key).number_of_edges()}: {c / len(no):.2f}"
            for key, c in ranked[:4])
        print(f"  L{level:02d}  {data[0].num_vertices:2d}  {len(no):3d}  {len(ranked):7d}  {share[0]:.3f}  "
              f"{share[1]:.3f}  {share[2]:.3f}  {k4 / max(len(no), 1):.3f}  {wheel / max(len(no), 1):9.3f}  "
              f"{rules[0]:7.3f}  {rules[1]:10.3f}  {common}",
              flush=True)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("per_level", nargs="?", type=int, default=300)
    p.add_argument("--levels", default="1-10", help="e.g. 1-10 or 5-10")
    args = p.parse_args()
    lo, _, hi = args.levels.partition("-")
    run(args.per_level, range(int(lo), int(hi or lo) + 1))


if __name__ == "__main__":
    main()
