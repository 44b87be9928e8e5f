"""Measure GraphVerse generation: CPU ms per instance by phase, instances/s on 1 and 2 Ray workers, the
speed-up and the projected wall time of the full 11,000-instance split.

    PYTHONPATH=. .venv/bin/python bench/bench_graphverse_generate.py [--limit 300] [--workers 1 2]
        [--split full] [--seed 0] [--no-ray]

1. In process (`workers=0`), the slice's `limit` instances (round-robin over task x edit x level cells, so
   every cell is represented) with every phase's CPU time (`time.process_time`, exclusive of the phases
   nested in it): sampling (random walks, molecule draws), layout (Graphviz neato), layout repair,
   legibility checks (candidate layouts, weight-label placement), rendering (Pillow drawing), PNG encoding
   and decoding, image edits (OpenCV), exact solvers (gold answers, GED bounds), writing (Parquet, PNG
   files, content hashes) and the rest. CPU time does not count other sessions' load; wall time does.
2. The same chunks, scheduled on 2 workers as `gie.dataset` schedules them (longest first, a new chunk
   whenever a worker frees), from their measured CPU times: the speed-up the scheduling allows on two
   idle cores, beside the former schedule (chunks of 4 in plan order, results taken in submission order).
3. Ray runs on 1 and 2 workers of a local Ray started here: Ray start-up and the workers' source loading
   are timed apart (a warm-up slice), then the slice's wall time, instances/s, the speed-up and the full
   split's projection (start-up + 11,000 / rate). The load average is printed with every wall figure: on a
   shared machine wall time also measures other people's work, so the speed-up is only meaningful when the
   load stays under the number of cores.
"""

from __future__ import annotations

import argparse
import heapq
import os
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gie import dataset as gd  # noqa: E402
from gie.sources.registry import get_source  # noqa: E402

FULL = 11_000
SOURCES = ("us-airports", "wikidata-costar", "wikidata-film-kg", "nci-molecules", "les-miserables")


def load() -> str:
    return "load " + " ".join(f"{x:.1f}" for x in os.getloadavg()) + f" on {os.cpu_count()} cores"


class Phases:
    """Exclusive CPU time per phase: entering a phase charges the time so far to the enclosing one."""

    def __init__(self) -> None:
        self.cpu: dict[str, float] = defaultdict(float)
        self.stack = ["other"]
        self.mark = time.process_time()
        self.undo: list[tuple[Any, str, Any]] = []

    def _switch(self) -> None:
        now = time.process_time()
        self.cpu[self.stack[-1]] += now - self.mark
        self.mark = now

    def wrap(self, owner: Any, name: str, phase: str) -> None:
        fn = getattr(owner, name)

        def timed(*a: Any, **k: Any) -> Any:
            self._switch()
            self.stack.append(phase)
            try:
                return fn(*a, **k)
            finally:
                self._switch()
                self.stack.pop()

        self.undo.append((owner, name, fn))
        setattr(owner, name, timed)

    def restore(self) -> None:
        for owner, name, fn in reversed(self.undo):
            setattr(owner, name, fn)
        self._switch()


def in_process(split: str, seed: int, limit: int) -> tuple[dict[str, float], float, float, list[float]]:
    """(CPU s by phase, CPU s, wall s, CPU s of each chunk) of one in-process generation."""
    import gie.edits as ed
    import gie.layout as lay
    import gie.render as ren
    import gie.tasks.construction as con
    import gie.tasks.ged as ged
    from gie.edits import png as edpng
    from gie.tasks.config import TaskConfig

    ph = Phases()
    for owner, name, phase in [
        (con, "sample_single", "sampling"), (con, "sample_pair", "sampling"),
        (lay, "layout_graph", "layout (neato)"), (lay, "_repair", "layout repair"),
        (lay, "layout_defects", "legibility checks"), (ren, "weight_label_positions", "legibility checks"),
        (ren, "_render_cached", "rendering (Pillow)"), (ren, "to_png", "PNG encode/decode"),
        (edpng, "encode", "PNG encode/decode"), (edpng, "decode", "PNG encode/decode"),
        *[(ed, n, "image edits (OpenCV)") for n in ("patch_perturb", "apply_patch_edit", "recolor_nodes_png",
                                                   "spatial_recolor", "spatial_candidates", "attentional_focus",
                                                   "compose_split")],
        (TaskConfig, "solve_graphs", "exact solvers"), (ged, "ged_bounds", "exact solvers"),
        (gd, "write_dataset", "writing + hashing"),
    ]:
        ph.wrap(owner, name, phase)
    chunk_cpu: list[float] = []
    chunk = gd._chunk

    def timed_chunk(*a: Any, **k: Any) -> Any:
        c0 = time.process_time()
        out = chunk(*a, **k)
        chunk_cpu.append(time.process_time() - c0)
        return out

    gd._chunk = timed_chunk  # type: ignore[assignment]
    per_job: list[float] = []
    one = gd.generate_one

    def timed_one(*a: Any, **k: Any) -> Any:
        c0 = time.process_time()
        out = one(*a, **k)
        per_job.append(time.process_time() - c0)
        return out

    gd.generate_one = timed_one  # type: ignore[assignment]
    try:
        with tempfile.TemporaryDirectory() as tmp:
            c0, t0 = time.process_time(), time.perf_counter()
            gd.generate_split(Path(tmp) / "ds", split, seed, limit=limit, workers=0)  # type: ignore[arg-type]
            cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    finally:
        gd._chunk = chunk  # type: ignore[assignment]
        gd.generate_one = one  # type: ignore[assignment]
        ph.restore()
    in_process.per_job = per_job  # type: ignore[attr-defined]
    return dict(ph.cpu), cpu, wall, chunk_cpu


def makespan_list(costs: list[float], workers: int) -> float:
    """Greedy list scheduling in the given order: each task to the first free worker."""
    free = [0.0] * workers
    for c in costs:
        t = heapq.heappop(free)
        heapq.heappush(free, t + c)
    return max(free)


def makespan_in_order(costs: list[float], workers: int, window: int) -> float:
    """The former driver: at most `window` tasks submitted beyond the oldest unconsumed one, results taken
    in submission order (a slow head blocks new submissions while a worker idles)."""
    free = [0.0] * workers
    finish: list[float] = []
    consumed_at = 0.0
    for i, c in enumerate(costs):
        if i >= window:
            # task i is submitted once result i - window has been taken (in order)
            consumed_at = max(consumed_at, finish[i - window])
        t = max(heapq.heappop(free), consumed_at)
        finish.append(t + c)
        heapq.heappush(free, t + c)
    return max(finish)


def ray_run(split: str, seed: int, limit: int, workers: int) -> tuple[float, float, float]:
    """(start-up s: Ray start + warm-up slice, wall s of the measured slice, CPU s of the Ray workers)."""
    import psutil
    import ray

    here = str(Path(__file__).resolve().parents[1])
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH", "")) if p)
    t0 = time.perf_counter()
    ray.init(address="local", num_cpus=workers, include_dashboard=False, log_to_driver=False)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            # Warm-up: starts the workers and loads their sources (paid once per run, not per instance).
            gd.generate_split(Path(tmp) / "warm", split, seed + 1, limit=6 * workers, workers=workers)  # type: ignore[arg-type]
            startup = time.perf_counter() - t0
            me = psutil.Process()

            def worker_cpu() -> float:
                total = 0.0
                for p in me.children(recursive=True):
                    try:
                        if "ray::" in " ".join(p.cmdline()) or "default_worker" in " ".join(p.cmdline()):
                            t = p.cpu_times()
                            total += t.user + t.system
                    except psutil.Error:
                        pass
                return total

            c0 = worker_cpu()
            t1 = time.perf_counter()
            gd.generate_split(Path(tmp) / "ds", split, seed, limit=limit, workers=workers)  # type: ignore[arg-type]
            wall = time.perf_counter() - t1
            cpu = worker_cpu() - c0
    finally:
        ray.shutdown()
    return startup, wall, cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=300)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--split", default="full", choices=("full", "testmini", "train"))
    ap.add_argument("--no-ray", action="store_true", help="only the in-process phases and the schedule")
    a = ap.parse_args()
    print(f"GraphVerse {a.split} seed {a.seed}, {a.limit} instances; {load()}")
    c0 = time.process_time()
    for name in SOURCES:
        get_source(name)
    print(f"source loading (once per process): {1000 * (time.process_time() - c0):.0f} CPU ms")

    phases, cpu, wall, chunk_cpu = in_process(a.split, a.seed, a.limit)
    n = a.limit
    print(f"\nin process: {cpu:.1f} CPU s, {wall:.1f} s wall ({load()}): {1000 * cpu / n:.0f} CPU ms/instance")
    print("CPU ms per instance by phase:")
    for k, v in sorted(phases.items(), key=lambda kv: -kv[1]):
        print(f"  {k:22s} {1000 * v / n:7.1f}  ({100 * v / max(cpu, 1e-9):4.1f} %)")
    per_job: list[float] = in_process.per_job  # type: ignore[attr-defined]
    slowest = sorted(per_job, reverse=True)[:3]
    print(f"  slowest instances: {', '.join(f'{s:.1f} s' for s in slowest)}")
    print(f"projection from CPU time: full split {FULL * cpu / n / 60:.1f} min on 1 idle core, "
          f"{FULL * cpu / n / 2 / 60:.1f} min on 2 (perfect scaling)")

    # The schedule alone, from the measured CPU of each chunk (no machine load in these figures).
    jobs = gd.plan(a.split, a.seed, a.limit)  # type: ignore[arg-type]
    chunks = list(gd._chunks(jobs))
    order = sorted(range(len(chunks)), key=lambda i: -sum(gd._cost(j) for j in chunks[i]))
    new = makespan_list([chunk_cpu[i] for i in order], 2)
    old_chunks = [per_job[i:i + 4] for i in range(0, len(per_job), 4)]
    old = makespan_in_order([sum(c) for c in old_chunks], 2, 8)
    total = sum(chunk_cpu)
    print(f"\nschedule on 2 idle cores from measured chunk CPU: {len(chunks)} chunks, speed-up "
          f"{total / new:.2f}x (former in-order chunks of 4: {total / old:.2f}x)")

    if a.no_ray:
        return
    rates: dict[int, float] = {}
    startups: dict[int, float] = {}
    for w in a.workers:
        before = load()
        startup, wall_w, cpu_w = ray_run(a.split, a.seed, n, w)
        rates[w], startups[w] = n / wall_w, startup
        print(f"\nRay, {w} worker(s): start-up {startup:.1f} s (Ray + warm-up), {n} instances in {wall_w:.1f} s "
              f"wall = {n / wall_w:.2f} inst/s; workers' CPU {cpu_w:.1f} s ({1000 * cpu_w / n:.0f} ms/instance, "
              f"{cpu_w / wall_w:.2f} cores busy); {before} before, {load()} after")
        print(f"  projected full split ({FULL}): {(startup + FULL / rates[w]) / 60:.1f} min at this load")
    if 1 in rates and 2 in rates:
        print(f"\nspeed-up 1 -> 2 workers: {rates[2] / rates[1]:.2f}x (aim >= 1.7x on a quiet machine; "
              f"{load()} now)")


if __name__ == "__main__":
    main()
