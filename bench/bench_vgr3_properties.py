"""VGR v3's property battery (tests/test_judge_vgr3.py), or with --v4 VGR v4's (tests/test_judge_vgr4.py), with
every per-notation property in every notation on every instance of a GraphVerse split. The suite checks the
per-notation properties in the arrow notation and one more rotated within each task x edit cell (every
notation on about a seventh of each cell); this is the exhaustive audit (v4: also every neutral addition on
both bases and answers, and the attack bounds per task: mean <= 10, max <= 20).

    PYTHONPATH=. .venv/bin/python bench/bench_vgr3_properties.py [--v4] [--split testmini] [--seed 2026] [--workers 2] [--data DIR]

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

from evalcore.dataset import load_dataset  # noqa: E402

_INSTANCES: list = []  # the split's instances, read once per worker process (`_load`)
_V4: list[bool] = [False]


def _load(root: str, v4: bool = False) -> None:
    _INSTANCES[:] = load_dataset(root, check_images=False).instances
    _V4[0] = v4


def _check(span: tuple[int, int]) -> tuple[list[tuple[str, str]], float, dict[str, list[float]]]:
    """Failures (task, message) of instances [lo, hi) of the worker's split, the CPU seconds spent, and (v4)
    the attack scores per task/family."""
    lo, hi = span
    t0 = time.process_time()
    attacks: dict[str, list[float]] = {}
    if _V4[0]:
        from test_judge_vgr4 import check_instance

        out = []
        for inst in _INSTANCES[lo:hi]:
            bad, att = check_instance(inst)
            out += [(inst.task, f) for f in bad]
            for fam, v in att.items():
                attacks.setdefault(f"{inst.task}/{fam}", []).append(v)
    else:
        from test_judge_vgr3 import _check_instance

        out = [(inst.task, f) for inst in _INSTANCES[lo:hi] for f in _check_instance(inst)]
    return out, time.process_time() - t0, attacks


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_split_args(ap)
    ap.add_argument("--v4", action="store_true", help="VGR v4's properties (the default judge) instead of v3's")
    args = ap.parse_args()
    with split_folder(args) as root:
        n = len(load_dataset(root, check_images=False).instances)
        step = max(1, n // (8 * max(1, args.workers)))
        chunks = [(lo, min(n, lo + step)) for lo in range(0, n, step)]
        t0 = time.perf_counter()
        # spawn, not fork: a child forked after Polars has read the dataset deadlocks in Polars' thread pool
        with ProcessPoolExecutor(max(1, args.workers), mp_context=multiprocessing.get_context("spawn"),
                                 initializer=_load, initargs=(str(root), args.v4)) as pool:
            results = list(pool.map(_check, chunks))
        failures = [f for fs, _, _ in results for f in fs]
        cpu = sum(c for _, c, _ in results)
        if args.v4:
            from test_judge_vgr4 import _bounds

            attacks: dict[str, list[float]] = {}
            for _, _, att in results:
                for key, vals in att.items():
                    attacks.setdefault(key, []).extend(vals)
            failures += [(key.split("/")[0], key) for key in _bounds(attacks)]
            worst = max(((sum(v) / len(v), max(v), k) for k, v in attacks.items()), default=(0.0, 0.0, ""))
            print(f"attacks (wrong answers): {len(attacks)} task/family cells, highest mean {worst[0]:.1f} "
                  f"({worst[2]}), highest max {max((max(v) for v in attacks.values()), default=0.0):.1f}")
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
