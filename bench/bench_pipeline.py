"""Records per second through the whole local pipeline (plan -> model actor -> score task -> Parquet sink)
with the oracle baseline on a local 2-CPU Ray.

Target (issues 2 and 5): >= 300 records/s.   Usage: python bench/bench_pipeline.py [--per-level 10]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import ray

from cluster.config import DatasetSpec, ModelSpec, RunConfig
from cluster.pipeline import run_model
from evalcore.dataset import load_dataset
from evalcore.records import SampleSink
from nphe4v.generate import generate_version


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--per-level", type=int, default=10)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--replicas", type=int, default=1)
    args = p.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-pipe-"))
    try:
        generate_version(tmp / "ds", version="bench", seed=1, per_level=args.per_level)
        ds = load_dataset(tmp / "ds")
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        model = ModelSpec(name="oracle", batch_size=args.batch_size, replicas=args.replicas)
        cfg = RunConfig(name="bench", out=str(tmp / "run"), datasets=[DatasetSpec(path=str(tmp / "ds"))],
                        models=[model])
        # warm the workers (imports, task modules) so the figure is steady-state throughput
        warm = RunConfig(**{**cfg.model_dump(), "out": str(tmp / "warm"), "prompt_modes": ["full_text_only"],
                            "recognition": {"enabled": False}})
        run_model(warm, model, ds, "bench", "warm", SampleSink(tmp / "warm"))
        sink = SampleSink(tmp / "run")
        t0 = time.perf_counter()
        stats = run_model(cfg, model, ds, "bench", "bench", sink)
        dt = time.perf_counter() - t0
        rate = stats.written / dt
        print(f"pipeline: {stats.written} oracle records in {dt:.1f} s = {rate:.0f} records/s on a local 2-CPU Ray "
              f"(batch {args.batch_size}, {args.replicas} replica); target >= 300/s: {'PASS' if rate >= 300 else 'MISS'}")
    finally:
        ray.shutdown()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
