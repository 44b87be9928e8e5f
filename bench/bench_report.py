"""Time `nphe4v report --html` on a synthetic ~400k-sample run (issue 11.6).

The run is made for real like the demo's NPHardEval4V part (the four built-in baselines, three prompt modes,
recognition with controls, scored by the real scorer) on a per_level-8 version, so that each of the 40 model
names (copies of the four baselines) holds 9,360 samples: 374,400 in all, plus a few 10 MB responses. The report runs in a child process; its wall time, peak RSS and the HTML size
are printed against the targets (<= 30 s, <= 1.5 GB, <= 10 MB).

Usage: python bench/bench_report.py [--models 40] [--huge 3] [--n-boot 500] [--keep DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import polars as pl

from cluster.backends.baseline import BaselineBackend
from cluster.config import DatasetSpec, ModelSpec, RunConfig
from cluster.plan import plan_model
from nphe4v.core.dataset import load_dataset
from nphe4v.core.records import SAMPLE_SCHEMA
from nphe4v.core.shards import slug
from nphe4v.generate import generate_version
from nphe4v.scoring import score_sample

BASELINES = ("oracle", "greedy", "random", "always-yes")
HUGE_CHARS = 10_000_000


def build_run(root: Path, n_models: int, n_huge: int, per_level: int) -> tuple[Path, int]:
    ds_dir = root / "ds"
    generate_version(ds_dir, version="bench-report", seed=2026, per_level=per_level)
    ds = load_dataset(ds_dir)
    by_id = ds.by_id()
    cfg = RunConfig(name="bench-report", out=str(root / "run"), datasets=[DatasetSpec(path=str(ds_dir))],
                    models=[ModelSpec(name=b, backend="baseline") for b in BASELINES])
    base = []
    for spec in cfg.models:
        items = list(plan_model(cfg, spec, ds, ds.manifest.version))
        responses = asyncio.run(BaselineBackend(spec.name).generate([w.request for w in items]))
        for w, resp in zip(items, responses, strict=True):
            base.append(score_sample("bench", ds.manifest.version, by_id[w.instance_id], w.request, resp).model_dump())
    base_df = pl.DataFrame(base, schema=SAMPLE_SCHEMA)
    run = root / "run"
    names = []
    for i in range(n_models):
        kind = BASELINES[i % len(BASELINES)]
        name = f"{kind}-{i:02d}"
        names.append((name, kind))
        part = base_df.filter(pl.col("model") == kind).with_columns(model=pl.lit(name))
        if i < n_huge:  # a model that echoed a 10 MB answer back
            big = "x" * HUGE_CHARS
            part = part.with_columns(raw_response=pl.when(pl.int_range(pl.len()) == 0).then(pl.lit(big))
                                     .otherwise(pl.col("raw_response")))
        out = run / "samples" / "nphardeval4v" / slug(name)
        out.mkdir(parents=True, exist_ok=True)
        part.write_parquet(out / "part-0.parquet")
    manifest = {
        "run_id": "bench-report", "status": "complete", "attempts": 1,
        "config": {**cfg.model_dump(mode="json"),
                   "models": [{"name": n, "backend": "baseline", "baseline": k} for n, k in names]},
        "datasets": [{"benchmark": "nphardeval4v", "version": ds.manifest.version, "seed": ds.manifest.seed,
                      "path": str(ds_dir.resolve()), "dataset_sha256": ds.manifest.dataset_sha256}],
    }
    (run / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return run, base_df.height // len(BASELINES) * n_models


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--models", type=int, default=40)
    p.add_argument("--huge", type=int, default=3, help="models whose first response is 10 MB")
    p.add_argument("--per-level", type=int, default=8,
                   help="instances per task and level: 8 gives 9,360 samples per model (the demo's count x 4)")
    p.add_argument("--n-boot", type=int, default=500)
    p.add_argument("--keep", type=Path, default=None,
                   help="build the run here and keep it (a later call with the same DIR reuses it)")
    args = p.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="bench-report-"))
    root.mkdir(parents=True, exist_ok=True)
    try:
        t0 = time.perf_counter()
        if (root / "run" / "manifest.json").is_file():  # --keep DIR from an earlier call: measure again
            run = root / "run"
            n = pl.scan_parquet(sorted(run.glob("samples/**/*.parquet"))).select(pl.len()).collect().item()
            print(f"reusing {run}: {n} samples")
        else:
            run, n = build_run(root, args.models, args.huge, args.per_level)
            print(f"built {n} samples ({args.models} models, {args.huge} x 10 MB responses) in "
                  f"{time.perf_counter() - t0:.1f} s")
        html = root / "report.html"
        cmd = [sys.executable, "-m", "nphe4v.cli", "report", str(run), "--html", str(html),
               "--n-boot", str(args.n_boot)]
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        # wait4: the report process's own CPU time and peak RSS (RUSAGE_CHILDREN would add the dataset
        # generator's worker processes)
        stderr = proc.stderr.read() if proc.stderr else ""
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        dt = time.perf_counter() - t0
        if proc.returncode != 0:
            print(stderr[-3000:], file=sys.stderr)
            raise SystemExit(f"report failed with exit code {proc.returncode}")
        rss_gb = usage.ru_maxrss / 1024 ** 2  # Linux: kB
        cpu = usage.ru_utime + usage.ru_stime
        size_mb = html.stat().st_size / 1e6
        # on a shared machine the wall time includes waiting for a core; the CPU time does not
        print(f"report: {n} samples in {dt:.1f} s wall, {cpu:.1f} s CPU "
              f"(target <= 30 s: {'PASS' if dt <= 30 else 'MISS'}); "
              f"peak RSS {rss_gb:.2f} GB (target <= 1.5 GB: {'PASS' if rss_gb <= 1.5 else 'MISS'}); "
              f"HTML {size_mb:.2f} MB (target <= 10 MB: {'PASS' if size_mb <= 10 else 'MISS'})")
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
