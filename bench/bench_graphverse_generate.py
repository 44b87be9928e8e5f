"""Measure GraphVerse generation speed and extrapolate the full 11,000-instance set.

    .venv/bin/python bench/bench_graphverse_generate.py --limit 220 [--workers 2] [--split full]

Generates `limit` instances (round-robin over task x edit cells, so every cell is represented) into a
temporary folder with a process pool, prints instances/s and the projected wall time of the full set.
Per-process source loading (film KG, co-star index, molecules: a few seconds) is paid once per worker
and included; the projection subtracts it once so it is not multiplied by the set size.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gie.dataset import _instance_seed, generate_one, generate_split, plan  # noqa: E402
from gie.sources import get_source  # noqa: E402

FULL = 11_000


def _cpu() -> float:
    """CPU seconds (user + system) of this process and its finished children (the pool workers)."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def per_task_profile(limit: int, seed: int) -> None:
    """Serial time per task x edit on a warm process (source loading excluded)."""
    for name in ("us-airports", "wikidata-costar", "wikidata-film-kg", "nci-molecules", "les-miserables"):
        get_source(name)
    times: dict[str, list[float]] = defaultdict(list)
    for job in plan("full", seed, limit):
        t = time.perf_counter()
        generate_one(seed, job)
        times[f"{job.task}/{job.edit}"].append(time.perf_counter() - t)
        _ = _instance_seed
    total = sum(sum(v) for v in times.values())
    n = sum(len(v) for v in times.values())
    print(f"serial warm: {n} instances in {total:.1f} s = {n / total:.2f} inst/s per core")
    for k, v in sorted(times.items(), key=lambda kv: -sum(kv[1]) / len(kv[1]))[:12]:
        print(f"  {k:18s} mean {1000 * sum(v) / len(v):7.1f} ms  max {1000 * max(v):7.1f} ms  (n={len(v)})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=220)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--split", default="full", choices=("full", "testmini", "train"))
    ap.add_argument("--profile", action="store_true", help="also time each task x edit serially")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        c0 = _cpu()
        generate_split(Path(tmp) / "ds", a.split, a.seed, limit=a.limit, workers=a.workers)
        wall = time.perf_counter() - t0
        cpu = _cpu() - c0
    rate = a.limit / wall
    # One source load per worker happens regardless of the set size.
    t, c = time.perf_counter(), time.process_time()
    for name in ("us-airports", "wikidata-costar", "wikidata-film-kg", "nci-molecules"):
        get_source(name)
    load = time.perf_counter() - t
    load_cpu = time.process_time() - c
    steady = a.limit / max(wall - load, 1e-9)
    print(f"{a.limit} instances, {a.workers} workers: {wall:.1f} s wall, {rate:.2f} inst/s "
          f"(source loading ~{load:.1f} s per worker)")
    print(f"extrapolated full set ({FULL}): {FULL / steady / 60:.1f} min steady-state "
          f"+ {load:.0f} s loading (budget 10 min)")
    # On a shared machine wall time also measures other people's load; CPU time does not.
    cpu_per = max(cpu - a.workers * load_cpu, 1e-9) / a.limit
    print(f"CPU: {cpu:.1f} s for {a.limit} instances ({load_cpu:.1f} s of it source loading per worker) = "
          f"{1000 * cpu_per:.0f} ms/instance; on {a.workers} idle cores the full set needs "
          f"~{FULL * cpu_per / a.workers / 60:.1f} min + {load_cpu:.0f} s loading")
    if a.profile:
        per_task_profile(a.limit, a.seed)


if __name__ == "__main__":
    main()
