"""The nine NPHardEval4V tasks. Modules are imported on first use so one broken task cannot hide others."""

from __future__ import annotations

import importlib
from typing import Any

from evalcore.schema import ComplexityClass
from evalcore.task import TaskSpec

# name -> module, in the paper's order: P, NP-complete, NP-hard
TASK_MODULES: dict[str, str] = {
    "BSP": "nphe4v.tasks.bsp",
    "EDP": "nphe4v.tasks.edp",
    "SPP": "nphe4v.tasks.spp",
    "KSP": "nphe4v.tasks.ksp",
    "TSP-D": "nphe4v.tasks.tspd",
    "GCP-D": "nphe4v.tasks.gcpd",
    "TSP": "nphe4v.tasks.tsp",
    "GCP": "nphe4v.tasks.gcp",
    "MSP": "nphe4v.tasks.msp",
}

TASK_CLASS: dict[str, ComplexityClass] = {
    "BSP": "P", "EDP": "P", "SPP": "P",
    "KSP": "NPC", "TSP-D": "NPC", "GCP-D": "NPC",
    "TSP": "NPH", "GCP": "NPH", "MSP": "NPH",
}

_cache: dict[str, TaskSpec[Any]] = {}


def get_task(name: str) -> TaskSpec[Any]:
    if name not in TASK_MODULES:
        raise KeyError(f"unknown task {name!r}; known: {', '.join(TASK_MODULES)}")
    if name not in _cache:
        _cache[name] = importlib.import_module(TASK_MODULES[name]).TASK
    return _cache[name]


def all_tasks() -> list[TaskSpec[Any]]:
    return [get_task(n) for n in TASK_MODULES]
