"""Benchmark registry: benchmark name -> the package whose `get_task(name)` returns task specs.

Packages are named as strings and imported on demand so the core never imports a benchmark it does
not run (GraphVerse plugs in here as `gie.tasks`).
"""

from __future__ import annotations

import importlib
from typing import Any

from evalcore.task import TaskSpec

BENCHMARK_PACKAGES: dict[str, str] = {
    "nphardeval4v": "nphe4v.tasks",
    "graphverse": "gie.tasks",
}


def task_for(benchmark: str, task: str) -> TaskSpec[Any]:
    if benchmark not in BENCHMARK_PACKAGES:
        raise KeyError(f"unknown benchmark {benchmark!r}; known: {', '.join(BENCHMARK_PACKAGES)}")
    return importlib.import_module(BENCHMARK_PACKAGES[benchmark]).get_task(task)
