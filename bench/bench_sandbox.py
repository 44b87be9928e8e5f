"""Per-program cost of the sandbox for model-written programs (nphe4v.core.sandbox).

Prints the median and minimum wall time, in ms, and the median CPU time (this process and its children:
the sandbox's setup, both interpreters, the supervisor's polling), of: a bare `python -I -S -c pass` (the floor: the sandbox
starts two interpreters), `run_program("pass")` in strict and rlimits-only mode, and a program that
imports networkx (what a PoT program does). Then the time limit under load: a networkx shortest-path program
sharing one core with 0, 2, 4 and 8 busy loops (each in its own session, as other work would be), with its
wall time, its CPU time and its verdict under `timeout_s=1` (a CPU-time limit), beside the verdict a
wall-clock limit of the same length would have given. Usage:

    PYTHONPATH=$PWD python bench/bench_sandbox.py [--runs 20] [--load-runs 3] [--no-load]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from nphe4v.core.sandbox import SandboxLimits, check_isolation, run_program
from nphe4v.core.sandbox.layout import python

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from cpu_load import busy_loops_on_one_core  # noqa: E402  (tests/cpu_load.py: the sandbox test's load too)


def _cpu() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _time(fn, runs: int) -> tuple[float, float, float]:
    """Median and minimum wall ms, median CPU ms (this process and every child it reaped)."""
    times, cpus = [], []
    for _ in range(runs):
        t, c = time.perf_counter(), _cpu()
        fn()
        times.append(time.perf_counter() - t)
        cpus.append(_cpu() - c)
    return statistics.median(times) * 1000, min(times) * 1000, statistics.median(cpus) * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--load-runs", type=int, default=3)
    ap.add_argument("--no-load", action="store_true", help="skip the runs beside busy loops")
    args = ap.parse_args()
    check_isolation("strict")
    py = python()
    cases = {
        "bare python -I -S -c pass": lambda: subprocess.run([py, "-I", "-S", "-c", "pass"], check=True),
        "strict: pass": lambda: run_program("pass"),
        "rlimits-only: pass": lambda: run_program("pass", isolation="rlimits-only"),
        "strict: import networkx": lambda: run_program("import networkx"),
    }
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; {args.runs} runs each")
    for name, fn in cases.items():
        med, low, cpu_ms = _time(fn, args.runs)
        print(f"{name:28s} wall median {med:7.0f} ms   min {low:7.0f} ms   CPU median {cpu_ms:6.0f} ms")
    if not args.no_load:
        under_load(args.load_runs)


PROGRAM = ("import networkx as nx\nG = nx.grid_2d_graph(60, 60)\n"
           "print(nx.shortest_path_length(G, (0, 0), (59, 59)))\n")


def under_load(runs: int) -> None:
    """Busy loops share the sandbox's core: the wall clock stretches, the CPU time and the verdict do not."""
    limits = SandboxLimits(timeout_s=1)
    print(f"\nunder load, one core, timeout_s={limits.timeout_s:g} (CPU); {runs} runs each")
    for k in (0, 2, 4, 8):
        rows = []
        with busy_loops_on_one_core(k):
            for _ in range(runs):
                t0 = resource.getrusage(resource.RUSAGE_CHILDREN)
                r = run_program(PROGRAM, limits=limits)
                t1 = resource.getrusage(resource.RUSAGE_CHILDREN)
                rows.append((r.wall_s, t1.ru_utime + t1.ru_stime - t0.ru_utime - t0.ru_stime, r.error or "ok"))
        wall = statistics.median(w for w, _, _ in rows)
        cpu_s = statistics.median(c for _, c, _ in rows)
        verdicts = ",".join(sorted({v for _, _, v in rows}))
        by_wall = "timeout" if max(w for w, _, _ in rows) > limits.timeout_s else "ok"
        print(f"{k} busy loops: wall median {wall:5.2f} s  CPU median {cpu_s:4.2f} s  verdict {verdicts:8s} "
              f"(a {limits.timeout_s:g} s wall clock: {by_wall})")


if __name__ == "__main__":
    main()
