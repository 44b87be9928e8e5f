"""Time generating a full NPHardEval4V version (9 tasks x 10 levels x 10 instances, images, manifest).

Target (issue 2): <= 60 s on 2 cores.   Usage: python bench/bench_generate.py [--per-level 10] [--workers 2]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

from nphe4v.generate import generate_version


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--per-level", type=int, default=10)
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    args = p.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-gen-"))
    try:
        t0 = time.perf_counter()
        m = generate_version(tmp / "ds", version="bench", seed=1, per_level=args.per_level, workers=args.workers)
        dt = time.perf_counter() - t0
        n = sum(t.count for t in m.tasks.values())
        size = sum(f.stat().st_size for f in (tmp / "ds").rglob("*") if f.is_file())
        print(f"generate: {n} instances (+{n} PNGs) in {dt:.1f} s on {args.workers} workers "
              f"= {n / dt:.1f} instances/s; dataset {size / 1e6:.1f} MB; target <= 60 s: "
              f"{'PASS' if dt <= 60 else 'MISS'}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
