"""VGR v3's property battery (tests/test_judge_vgr3.py) with every per-notation property in every notation on
every instance of a GraphVerse split. The suite checks the per-notation properties in the arrow notation and
one more rotated within each task x edit cell (every notation on about a seventh of each cell); this is the
exhaustive audit.

    PYTHONPATH=. .venv/bin/python bench/bench_vgr3_properties.py [--split testmini] [--seed 2026] [--workers 2] [--data DIR]

Prints instances checked, failures per task, the first few failures, and the CPU time per instance.
Exit status 1 when any property fails.
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from split_source import add_split_args, split_folder  # noqa: E402

from nphe4v.core.dataset import load_dataset  # noqa: E402

_INSTANCES: list = []  # the split's instances, read once per worker process (`_load`)


def _load(root: str) -> None:
    _INSTANCES[:] = load_dataset(root, check_images=False).instances


def _check(span: tuple[int, int]) -> tuple[list[tuple[str, str]], float]:
    """Failures (task, message) of instances [lo, hi) of the worker's split, and the CPU seconds spent."""
    from test_judge_vgr3 import _check_instance

    lo, hi = span
    t0 = time.process_time()
    out = [(inst.task, f) for inst in _INSTANCES[lo:hi] for f in _check_instance(inst)]
    return out, time.process_time() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_split_args(ap)
    args = ap.parse_args()
    with split_folder(args) as root:
        n = len(load_dataset(root, check_images=False).instances)
        step = max(1, n // (8 * max(1, args.workers)))
        chunks = [(lo, min(n, lo + step)) for lo in range(0, n, step)]
        t0 = time.perf_counter()
        # spawn, not fork: a child forked after Polars has read the dataset deadlocks in Polars' thread pool
        with ProcessPoolExecutor(max(1, args.workers), mp_context=multiprocessing.get_context("spawn"),
                                 initializer=_load, initargs=(str(root),)) as pool:
            results = list(pool.map(_check, chunks))
        failures = [f for fs, _ in results for f in fs]
        cpu = sum(c for _, c in results)
        by_task = Counter(task for task, _ in failures)
        print(f"instances={n} failures={len(failures)} wall_s={time.perf_counter() - t0:.1f} cpu_s={cpu:.1f} "
              f"cpu_ms_per_instance={1000 * cpu / max(1, n):.0f}")
        for task, k in by_task.most_common():
            print(f"  {task}: {k}")
        for _, f in failures[:10]:
            print(f"  e.g. {f}")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
