"""Explorer page timings on a synthetic 1M-sample run, and the server's peak memory.

    python bench/bench_explorer.py [--source RUN_DIR] [--rows 1000000] [--work DIR] [--repeat 5]

The synthetic run is the demo run (`jobs/eval_all.py --config configs/demo.yaml`, made once under WORK
unless --source names a run) with its samples and judgments replicated under many model names
(`<model>-NNN`) until it holds --rows samples; it points at the demo's datasets, so sample pages show real
images, prompts and evidence. The real `nphe4v view --annotate` server is started on the demo run and on
the synthetic run, each twice: without the run's interval cache (`cache/`, removed first: the bootstrap bounds
then compute in the background after the server listens) and with it; the script prints each start-up time
(aims: <= 3 s on the demo, <= 15 s and <= 2 GB at 1M samples), the time until the bootstrap bounds are shown,
then each page's first and median time over --repeat requests, and the server's peak RSS (VmHWM). Aim: every
page within 1 s.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import polars as pl
from demo_run import demo_run  # bench/demo_run.py (this script's folder is on sys.path)

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT))
sys.path.insert(0, str(PROJECT / "tests"))  # the browser tests' server helper (tests/cdp_browser.py)

from cdp_browser import view_server  # noqa: E402

from evalcore.records import KEY_COLUMNS  # noqa: E402
from evalcore.shards import slug  # noqa: E402


def synthetic(source: Path, rows: int, work: Path) -> Path:
    out = work / f"run-{rows}"
    if (out / "manifest.json").is_file():
        return out
    samples = pl.read_parquet(sorted(source.glob("samples/*/*/*.parquet")))
    judg_files = sorted(source.glob("judgments/**/*.parquet"))
    judgments = pl.read_parquet(judg_files) if judg_files else None
    copies = math.ceil(rows / samples.height)
    tmp = work / f".run-{rows}.tmp"
    (tmp / "samples").mkdir(parents=True, exist_ok=True)
    written = 0
    for i in range(copies):
        part = samples.with_columns(model=pl.col("model") + f"-{i:03d}")
        if written + part.height > rows:
            part = part.head(rows - written)
        for (bench, model), grp in part.group_by(["benchmark", "model"], maintain_order=True):
            d = tmp / "samples" / slug(str(bench)) / slug(str(model))
            d.mkdir(parents=True, exist_ok=True)
            grp.write_parquet(d / "part-00000000000000000000-synth.parquet", compression="zstd")
        written += part.height
        if judgments is not None:
            keep = part.select(KEY_COLUMNS)
            j = judgments.with_columns(model=pl.col("model") + f"-{i:03d}").join(keep, on=KEY_COLUMNS, how="semi")
            d = tmp / "judgments" / "rule-based"
            d.mkdir(parents=True, exist_ok=True)
            j.write_parquet(d / f"part-{i:05d}-synth.parquet", compression="zstd")
        if written >= rows:
            break
    if (source / "judgments" / "manifest.json").is_file():
        (tmp / "judgments" / "manifest.json").write_text((source / "judgments" / "manifest.json").read_text())
    manifest = json.loads((source / "manifest.json").read_text())
    manifest["run_id"] = f"synthetic-{rows}"
    (tmp / "manifest.json").write_text(json.dumps(manifest, indent=2))
    os.replace(tmp, out)
    return out


def get(url: str) -> tuple[float, int, int]:
    t0 = time.perf_counter()
    with urllib.request.urlopen(url, timeout=300) as r:
        body = r.read()
        status = r.status
    return time.perf_counter() - t0, status, len(body)


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def startup(run: Path, label: str) -> None:
    """Start the server on `run` without and then with its interval cache; print both start-ups."""
    shutil.rmtree(run / "cache", ignore_errors=True)
    for state in ("no interval cache", "interval cache present"):
        t0 = time.perf_counter()
        with view_server([run], stdout=subprocess.DEVNULL, timeout=3600, probe="/error-probe") as (base, server):
            up = time.perf_counter() - t0
            rss = peak_rss_mb(server.pid)
            # the bootstrap bounds are on the page once the note saying they are being computed is gone
            while "being computed" in urllib.request.urlopen(base + "/", timeout=600).read().decode():
                time.sleep(0.2)
            ready = time.perf_counter() - t0
            print(f"start-up, {label}, {state}: listening after {up:.1f} s (peak RSS {rss:.0f} MB); "
                  f"bootstrap bounds shown after {ready:.1f} s; peak RSS {peak_rss_mb(server.pid):.0f} MB",
                  flush=True)


def pages(run: Path) -> list[tuple[str, str]]:
    lf = pl.scan_parquet(sorted(run.glob("samples/*/*/*.parquet")))
    label = json.loads((run / "manifest.json").read_text())["run_id"]
    models = sorted(lf.select(pl.col("model").unique()).collect()["model"].to_list())
    a, b = models[len(models) // 2], models[len(models) // 2 + 1]
    nph = lf.filter((pl.col("model") == a) & (pl.col("benchmark") == "nphardeval4v")).head(1).collect().row(0, named=True)
    gv = lf.filter((pl.col("model") == a) & (pl.col("benchmark") == "graphverse")).head(1).collect().row(0, named=True)
    q = urllib.parse.urlencode

    def sample(r: dict) -> str:
        return "/sample?" + q({"run": label, **{c: r[c] for c in KEY_COLUMNS}})

    return [
        ("leaderboards", "/"),
        ("leaderboards, one prompt mode", "/?mode=figure%2Blimited_text"),
        ("the report's figures", "/figures"),
        ("samples, no filter", "/samples"),
        ("samples, no filter, page 500", "/samples?page=500"),
        ("samples, one model", "/samples?" + q({"model": a})),
        ("samples, model+task+level+verdict", "/samples?" + q({"model": a, "task": "TSP", "level": 5,
                                                              "outcome": "wrong"})),
        ("samples, graphverse edit, all models", "/samples?" + q({"benchmark": "graphverse", "variant": "patch"})),
        ("compare two models", "/compare?" + q({"model": a, "model_b": b})),
        ("compare, graphverse, verdict", "/compare?" + q({"model": a, "model_b": b, "benchmark": "graphverse",
                                                         "outcome": "correct"})),
        ("sample, nphardeval4v", sample(nph)),
        ("sample, graphverse + judge + evidence", sample(gv)),
        ("annotate, one task and model", "/annotate?" + q({"annotator": "bench", "task": "SD", "model": a})),
        ("annotate, everything", "/annotate?" + q({"annotator": "bench"})),
    ]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--source", type=Path, default=None, help="run to replicate (default: the demo run)")
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--work", type=Path, default=Path("/tmp/nphe4v-bench-explorer"))
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--startup-only", action="store_true", help="print the start-up figures only")
    args = p.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    source = args.source or demo_run(args.work)
    t0 = time.perf_counter()
    run = synthetic(source, args.rows, args.work)
    n = pl.scan_parquet(sorted(run.glob("samples/*/*/*.parquet"))).select(pl.len()).collect().item()
    n_models = len(list(run.glob("samples/nphardeval4v/*")))
    print(f"synthetic run {run}: {n:,} samples, {n_models} models ({time.perf_counter() - t0:.1f} s to build or find)")
    startup(source, "demo run")
    startup(run, f"{n:,} samples")
    if args.startup_only:
        return 0
    t0 = time.perf_counter()
    # a server that exits before it listens raises here with the tail of its stderr
    with view_server([run], "--annotate", stdout=subprocess.DEVNULL, timeout=3600,
                     probe="/error-probe") as (base, server):
        print(f"server start-up (runs read, leaderboards computed): {time.perf_counter() - t0:.1f} s; "
              f"peak RSS so far {peak_rss_mb(server.pid):.0f} MB")
        print(f"{'page':42s} {'first s':>8s} {'median s':>9s} {'KB':>7s}")
        worst = 0.0
        for name, path in pages(run):
            first, status, size = get(base + path)
            assert status == 200, (name, status)
            times = [get(base + path)[0] for _ in range(args.repeat)]
            med = statistics.median(times)
            worst = max(worst, first, med)
            print(f"{name:42s} {first:8.3f} {med:9.3f} {size / 1024:7.0f}")
        print(f"slowest page: {worst:.3f} s (aim: 1 s); server peak RSS {peak_rss_mb(server.pid):.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
