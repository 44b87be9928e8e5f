"""Does the standard LP relaxation alone decide TSP-D / GCP-D? (issue 31)

Per level, over the leak bench's dataset (same seeds as bench/bench_decision_leaks.py, default 300 instances per
level and task), prints the YES share and how often the task's LP relaxation proves the answer NO:
TSP-D - the subtour-elimination LP (the Held-Karp bound) above the threshold T: no tour can be <= T;
GCP-D - the fractional chromatic number above k: no k-colouring exists (the Lovász theta of the complement and
the vector chromatic number, an SDP, lie between the clique number and it).
A relaxation never proves a YES instance NO (the bench counts it, as a check); "rule" is the accuracy of answering
NO exactly when it proves NO. Unlike the leak bench's statistics, a relaxation's optimum is constructed by a
solver (an LP's fractional tour or colouring), so it is a certificate like the leak bench's DSatur and 2-opt
columns, not a learner's feature: the figures say how far the papers' sizes let a polynomial-time bound decide.

    PYTHONPATH=. nice -n 10 python bench/bench_decision_relaxations.py [instances_per_level] [--task TSP-D|GCP-D]
        [--levels 1-10] [--peer-gcpd DIR]

`--peer-gcpd DIR` also reads the NPHardEval4V repository's GCP-D files from DIR (its `Data/GCP-D` folder's
parent, e.g. a checkout of the original repository) and prints the same shares for them.
"""

from __future__ import annotations

import argparse
import random
import time
from pathlib import Path

from evalcore.graph_solvers import k_coloring
from evalcore.relaxations import fractional_chromatic, subtour_bound
from nphe4v.tasks import gcpd, tspd

# A relaxation proves NO when its optimum exceeds the threshold by more than the LP's rounding (a tour length has
# 2 decimals and a fractional chromatic number is a rational with a small denominator, so 1e-6 separates both).
PROOF_TOL = 1e-6


def _line(level: int, size: str, yes: list[bool], proved: list[bool], dt: float) -> str:
    n_yes = sum(yes)
    n_no = len(yes) - n_yes
    no_proved = sum(p for p, y in zip(proved, yes, strict=True) if not y)
    yes_proved = sum(p for p, y in zip(proved, yes, strict=True) if y)
    rule = sum((not p) == y for p, y in zip(proved, yes, strict=True)) / len(yes)
    of_no = f"{no_proved / n_no:17.3f}" if n_no else f"{'n/a (no NO)':>17}"
    of_yes = f"{yes_proved / n_yes:18.3f}" if n_yes else f"{'n/a (no YES)':>18}"
    return f"  L{level:02d}  {size:>5}  {n_yes / len(yes):.3f}  {of_no}  {of_yes}  {rule:.3f}  {dt:6.1f}"


HEADER = "level  size   YES    proved NO (of NO)  proved NO (of YES)  rule   s"


def run_tspd(per_level: int, levels: range) -> None:
    print("TSP-D, subtour LP > T\n" + HEADER, flush=True)
    for level in levels:
        t0 = time.perf_counter()
        data = [tspd.generate(level, random.Random(f"leak-TSP-D-{level}-{i}")) for i in range(per_level)]
        yes = [tspd.solve(d).value == 1.0 for d in data]
        proved = [subtour_bound(d.distances) > d.threshold + PROOF_TOL for d in data]
        print(_line(level, str(data[0].num_cities), yes, proved, time.perf_counter() - t0), flush=True)


def _gcpd_line(level: int, data: list[gcpd.GCPDData], t0: float) -> str:
    yes = [k_coloring(d.num_vertices, d.edges, d.k) is not None for d in data]
    proved = [fractional_chromatic(d.num_vertices, d.edges) > d.k + PROOF_TOL for d in data]
    return _line(level, f"{data[0].num_vertices} k{data[0].k}", yes, proved, time.perf_counter() - t0)


def run_gcpd(per_level: int, levels: range) -> None:
    print("GCP-D, fractional chromatic number > k\n" + HEADER, flush=True)
    for level in levels:
        t0 = time.perf_counter()
        data = [gcpd.generate(level, random.Random(f"leak-GCP-D-{level}-{i}")) for i in range(per_level)]
        print(_gcpd_line(level, data, t0), flush=True)


def run_peer_gcpd(root: Path) -> None:
    from nphe4v.peer.read import read_peer

    records = read_peer("nphardeval4v", root, tasks=["GCP-D"])
    if not records:
        raise SystemExit(f"{root}: no GCP-D files found (expected Data/GCP-D/ inside)")
    print(f"GCP-D of the NPHardEval4V repository ({root}), fractional chromatic number > k\n" + HEADER, flush=True)
    for level in sorted({r.level for r in records}):
        t0 = time.perf_counter()
        data = [gcpd.GCPDData.model_validate(r.data) for r in records if r.level == level]
        print(_gcpd_line(level, data, t0), flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("per_level", type=int, nargs="?", default=300)
    p.add_argument("--task", choices=["TSP-D", "GCP-D"], help="one task only (default both)")
    p.add_argument("--levels", default="1-10", help="a level or a range, e.g. 5-10")
    p.add_argument("--peer-gcpd", type=Path, help="also the original repository's GCP-D files under this folder")
    args = p.parse_args()
    lo, _, hi = args.levels.partition("-")
    levels = range(int(lo), int(hi or lo) + 1)
    if args.task in (None, "TSP-D"):
        run_tspd(args.per_level, levels)
    if args.task in (None, "GCP-D"):
        run_gcpd(args.per_level, levels)
    if args.peer_gcpd:
        run_peer_gcpd(args.peer_gcpd)


if __name__ == "__main__":
    main()
