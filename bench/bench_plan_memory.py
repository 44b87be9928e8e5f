"""The driver's memory for planning a paper-size run: every request made up front (before) vs lazily (now).

    python bench/bench_plan_memory.py                       # both paper configs, RSS
    python bench/bench_plan_memory.py --tracemalloc         # also Python's own allocation peak (slower)

For each of configs/paper-nphardeval4v.yaml (30 models) and configs/paper-graphverse.yaml (23 models, over the
full split instead of testmini), two fresh processes plan the run from the same datasets:
  eager  what the driver did before lazy planning: every model's unfinished requests (pydantic ModelRequest
         with prompt text) built and batched before the scheduler starts; peak = all of them at once;
  lazy   `cluster.pipeline.model_job` for every model (counts only), then every batch taken as a scheduler
         would, each model holding `--window` batches in flight (generous: 8 replicas x 4 in flight) until
         its plan is done; peak = the counts plus the batches in flight.
Printed per config and mode: requests, planning seconds, the process's peak RSS above its RSS once the datasets
are in memory, and with --tracemalloc the peak of Python allocations during planning.

DATASETS ARE SYNTHETIC AT FULL SIZE: generating the papers' full datasets (900 NPHardEval4V instances with
their figures, 11,000 GraphVerse samples) takes far longer than the measurement, so the demo's small real
datasets (configs/demo.yaml, generated once under --data-root) are cloned, instance by instance under new ids,
up to the full sizes (900 and 11,000). Prompts, references and images are the real ones of the cloned
instances, so every request has a real request's size; only the number of distinct problems differs.
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ["configs/paper-nphardeval4v.yaml", "configs/paper-graphverse.yaml"]
FULL = {"nphardeval4v": 900, "graphverse": 11_000}  # 9 tasks x 10 levels x 10; GraphVerse full split


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def full_size(benchmark: str, data_root: Path) -> Any:
    """The demo's dataset of `benchmark`, cloned up to the paper's full size (see the module docstring)."""
    from dataclasses import replace

    from cluster.config_file import load_config
    from cluster.run import resolve_dataset

    demo = load_config(ROOT / "configs/demo.yaml", {})
    spec = next(s for s in demo.datasets if s.benchmark == benchmark)
    small = resolve_dataset(spec, data_root)
    copies = math.ceil(FULL[benchmark] / len(small.instances))
    clones = [i if c == 0 else i.model_copy(update={"instance_id": f"{i.instance_id}~{c}"})
              for c in range(copies) for i in small.instances][: FULL[benchmark]]
    return replace(small, instances=tuple(clones))


def child(mode: str, config: str, data_root: Path, window: int, trace: bool) -> dict[str, Any]:
    from cluster.config_file import load_config
    from cluster.pipeline import ModelStats, model_job
    from cluster.plan import plan_model
    from evalcore.records import SampleSink

    cfg = load_config(ROOT / config, {})
    datasets = [full_size(s.benchmark, data_root) for s in cfg.datasets]
    versions = [ds.manifest.version for ds in datasets]
    sink = SampleSink(Path(tempfile.mkdtemp(prefix="bench-plan-")))  # a fresh run: nothing written yet
    import gc

    gc.collect()
    base = _rss_mb()
    if trace:
        import tracemalloc

        tracemalloc.start()
    t0 = time.perf_counter()
    requests = 0
    if mode == "eager":
        held = []  # the batches of every model, as the driver held them before the first result
        for m in cfg.models:
            for d, ds in enumerate(datasets):
                todo = [w for w in plan_model(cfg, m, ds, versions[d]) if not sink.is_done(w.key)]
                held += [todo[i : i + m.batch_size] for i in range(0, len(todo), m.batch_size)]
                requests += len(todo)
    else:
        jobs = [model_job(cfg, m, datasets, "bench", sink, ModelStats(m.name), versions=versions)
                for m in cfg.models]
        counted = sum(j.queued_requests for j in jobs)
        inflight: list[list[Any]] = [[] for _ in jobs]
        while any(j.batches for j in jobs):
            for j, mine in zip(jobs, inflight, strict=True):
                if j.batches:
                    mine.append(j.batches.popleft())
                    requests += mine[-1].size
                    if len(mine) > window:
                        mine.pop(0)  # its result came back: the batch is gone from the driver
        assert requests == counted, (requests, counted)
    seconds = time.perf_counter() - t0
    out = {"mode": mode, "config": config, "models": len(cfg.models), "requests": requests,
           "seconds": round(seconds, 1), "rss_mb": round(_peak_rss_mb() - base, 1)}
    if trace:
        import tracemalloc

        out["traced_mb"] = round(tracemalloc.get_traced_memory()[1] / 2**20, 1)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--configs", nargs="+", default=CONFIGS)
    ap.add_argument("--data-root", default="data", help="where the demo datasets are generated (once) and read")
    ap.add_argument("--window", type=int, default=32, help="batches in flight per model (lazy mode)")
    ap.add_argument("--tracemalloc", action="store_true")
    ap.add_argument("--child", nargs=2, metavar=("MODE", "CONFIG"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    data_root = Path(args.data_root)
    if args.child:
        print(json.dumps(child(*args.child, data_root, args.window, args.tracemalloc)))
        return
    for c in args.configs:  # generate the demo datasets here, once, not in the measured children
        from cluster.config_file import load_config

        for s in load_config(ROOT / c, {}).datasets:
            full_size(s.benchmark, data_root)
    rows = []
    for c in args.configs:
        for mode in ("eager", "lazy"):
            cmd = [sys.executable, __file__, "--child", mode, c, "--data-root", str(data_root),
                   "--window", str(args.window)] + (["--tracemalloc"] if args.tracemalloc else [])
            res = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if res.returncode != 0:
                sys.exit(f"{mode} {c} failed:\n{res.stderr[-2000:]}")
            r = json.loads(res.stdout.strip().splitlines()[-1])
            rows.append(r)
            traced = f"  traced peak {r['traced_mb']:8.1f} MB" if "traced_mb" in r else ""
            print(f"{Path(c).stem:22s} {mode:5s} {r['models']:3d} models {r['requests']:8,d} requests "
                  f"{r['seconds']:6.1f} s  peak RSS +{r['rss_mb']:8.1f} MB{traced}", flush=True)
    eager = max(r["rss_mb"] for r in rows if r["mode"] == "eager")
    lazy = max(r["rss_mb"] for r in rows if r["mode"] == "lazy")
    print(f"planning_peak_rss eager={eager:.0f}MB lazy={lazy:.0f}MB (synthetic full-size datasets, "
          f"window {args.window} batches per model)")


if __name__ == "__main__":
    main()
