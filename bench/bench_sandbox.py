"""Per-program cost of the sandbox for model-written programs (nphe4v.core.sandbox).

Prints the median and minimum wall time, in ms, of: a bare `python -I -S -c pass` (the floor: the sandbox
starts two interpreters), `run_program("pass")` in strict and rlimits-only mode, and a program that
imports networkx (what a PoT program does). Usage:

    PYTHONPATH=$PWD python bench/bench_sandbox.py [--runs 20]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import time

from nphe4v.core.sandbox import check_isolation, run_program
from nphe4v.core.sandbox.layout import python


def _time(fn, runs: int) -> tuple[float, float]:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1000, min(times) * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
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
        med, low = _time(fn, args.runs)
        print(f"{name:28s} median {med:7.0f} ms   min {low:7.0f} ms")


if __name__ == "__main__":
    main()
