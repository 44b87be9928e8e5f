"""The 11 GraphVerse tasks as `TaskSpec`s (benchmark "graphverse"); `nphe4v.core.benchmarks.task_for`
reaches them through `get_task`. Modules load on first use so one broken task cannot hide the others."""

from __future__ import annotations

import importlib
from typing import Any

from nphe4v.core.schema import ComplexityClass
from nphe4v.core.task import TaskSpec

TASK_MODULES: dict[str, str] = {
    "SD": "gie.tasks.sd",
    "DIAM": "gie.tasks.diam",
    "CN": "gie.tasks.cn",
    "TSP": "gie.tasks.tsp",
    "MCP": "gie.tasks.mcp",
    "MVC": "gie.tasks.mvc",
    "MIS": "gie.tasks.mis",
    "CYC": "gie.tasks.cyc",
    "COL": "gie.tasks.col",
    "GED": "gie.tasks.ged",
    "MCS": "gie.tasks.mcs",
}
TASK_NAMES: tuple[str, ...] = tuple(TASK_MODULES)
SINGLE_TASKS: tuple[str, ...] = TASK_NAMES[:9]
PAIRED_TASKS: tuple[str, ...] = ("GED", "MCS")
TASK_CLASS: dict[str, ComplexityClass] = {t: ("P" if t in ("SD", "DIAM", "CN") else "NPH") for t in TASK_NAMES}
EDIT_KINDS: tuple[str, ...] = ("none", "patch", "composition", "focus", "recolor")
# The paper's exclusions (appendix A.2): no recolouring for colouring; TSP takes recolouring only.
TASK_EDITS: dict[str, tuple[str, ...]] = {
    t: (("none", "recolor") if t == "TSP" else tuple(e for e in EDIT_KINDS if not (t == "COL" and e == "recolor")))
    for t in TASK_NAMES
}

_cache: dict[str, TaskSpec[Any]] = {}


def get_task(name: str) -> TaskSpec[Any]:
    if name not in TASK_MODULES:
        raise KeyError(f"unknown GraphVerse task {name!r}; known: {', '.join(TASK_MODULES)}")
    if name not in _cache:
        _cache[name] = importlib.import_module(TASK_MODULES[name]).TASK
    return _cache[name]


def get_config(name: str) -> Any:
    """The task's `gie.tasks.common.TaskConfig` (sources, node range, edits, query picker)."""
    get_task(name)
    return importlib.import_module(TASK_MODULES[name]).CONFIG


def all_tasks() -> list[TaskSpec[Any]]:
    return [get_task(n) for n in TASK_MODULES]
