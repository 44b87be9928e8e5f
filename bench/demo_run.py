"""The README's demo run, made once per bench work folder: the source run the report and explorer benches
copy under many model names (`bench_report.py`, `bench_explorer.py`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]


def demo_run(work: Path) -> Path:
    """`work/demo`: the demo job's run folder (kept between bench runs; delete it to redo it)."""
    out = work / "demo"
    if not (out / "manifest.json").is_file():
        subprocess.run([sys.executable, str(PROJECT / "jobs" / "eval_all.py"), "--config",
                        str(PROJECT / "configs" / "demo.yaml"), "--out", str(out), "--data-root",
                        str(work / "data"), "--no-html"], check=True, cwd=PROJECT)
    return out
