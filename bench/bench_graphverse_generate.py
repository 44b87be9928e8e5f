"""Measure GraphVerse generation speed (easy and hard levels) on 1 and 2 Ray workers and extrapolate
the full 11,000-instance set.

    PYTHONPATH=. .venv/bin/python bench/bench_graphverse_generate.py --limit 204 [--workers 1 2] [--split full]

Generates `limit` instances (round-robin over task x edit x level cells, so every cell is represented)
into a temporary folder as Ray tasks, once per worker count, prints instances/s, the speed-up from 1 to
2 workers and the projected wall time of the full set. Ray start-up and per-worker source loading are
paid once per run and included in the wall time; the projection subtracts the one-off part measured on
the same run (time to the first finished chunk) so it is not multiplied by the set size. The machine's
load average is printed with the figures: on a shared machine wall time also measures other people's
work.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gie.dataset import _instance_seed, generate_one, generate_split, plan  # noqa: E402
from gie.sources.registry import get_source  # noqa: E402

FULL = 11_000


def per_task_profile(limit: int, seed: int) -> None:
    """Serial time per task x edit on a warm process (source loading excluded)."""
    for name in ("us-airports", "wikidata-costar", "wikidata-film-kg", "nci-molecules", "les-miserables"):
        get_source(name)
    times: dict[str, list[float]] = defaultdict(list)
    for job in plan("full", seed, limit):
        t = time.perf_counter()
        generate_one(seed, job)
        times[f"{job.task}/{job.edit}/{job.level}"].append(time.perf_counter() - t)
        _ = _instance_seed
    total = sum(sum(v) for v in times.values())
    n = sum(len(v) for v in times.values())
    print(f"serial warm: {n} instances in {total:.1f} s = {n / total:.2f} inst/s per core")
    for k, v in sorted(times.items(), key=lambda kv: -sum(kv[1]) / len(kv[1]))[:12]:
        print(f"  {k:18s} mean {1000 * sum(v) / len(v):7.1f} ms  max {1000 * max(v):7.1f} ms  (n={len(v)})")


def run(split: str, seed: int, limit: int, workers: int) -> tuple[float, float]:
    """(wall seconds, seconds until the first chunk came back) of one Ray generation."""
    first: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()

        def progress(done: int, total: int) -> None:
            if not first:
                first.append(time.perf_counter() - t0)

        generate_split(Path(tmp) / "ds", split, seed, limit=limit, workers=workers, progress=progress)  # type: ignore[arg-type]
        wall = time.perf_counter() - t0
    return wall, first[0] if first else 0.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=204)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--split", default="full", choices=("full", "testmini", "train"))
    ap.add_argument("--profile", action="store_true", help="also time each task x edit serially")
    a = ap.parse_args()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    rates: dict[int, float] = {}
    for w in a.workers:
        wall, startup = run(a.split, a.seed, a.limit, w)
        # The first chunk carries Ray start-up and source loading; steady state is the rest.
        steady = (a.limit - gen_chunk()) / max(wall - startup, 1e-9)
        rates[w] = steady
        print(f"{a.limit} instances, {w} worker(s): {wall:.1f} s wall ({startup:.1f} s to the first chunk), "
              f"{a.limit / wall:.2f} inst/s overall, {steady:.2f} inst/s steady; "
              f"projected full set ({FULL}): {(FULL / steady + startup) / 60:.1f} min")
    if 1 in rates and 2 in rates:
        print(f"speed-up 1 -> 2 workers: {rates[2] / rates[1]:.2f}x (aim >= 1.7x)")
    # Wall time on a shared machine measures other people's load too; CPU time of an in-process run
    # does not: it projects the full set on idle cores with perfect scaling.
    for name in ("us-airports", "wikidata-costar", "wikidata-film-kg", "nci-molecules"):
        get_source(name)
    with tempfile.TemporaryDirectory() as tmp:
        c0 = time.process_time()
        generate_split(Path(tmp) / "ds", a.split, a.seed, limit=a.limit, workers=0)  # type: ignore[arg-type]
        cpu = time.process_time() - c0
    print(f"in process: {1000 * cpu / a.limit:.0f} CPU ms/instance -> full set on 2 idle cores "
          f"~{FULL * cpu / a.limit / 2 / 60:.1f} min (1 core ~{FULL * cpu / a.limit / 60:.1f} min)")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if a.profile:
        per_task_profile(a.limit, a.seed)


def gen_chunk() -> int:
    from gie.dataset import CHUNK

    return CHUNK


if __name__ == "__main__":
    main()
