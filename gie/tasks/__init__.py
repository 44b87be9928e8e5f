"""The 11 GraphVerse tasks as `TaskSpec`s (benchmark "graphverse"); `evalcore.benchmarks.task_for`
reaches them through `get_task`. Task names come from `gie.catalogue`; each task's module
`gie.tasks.<name lowercased>` holds its `CONFIG` (drawing, question, solve / parse / verify / heuristic) and
`TASK`. Modules load on first use so one broken task cannot hide the others."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from evalcore.task import TaskSpec
from gie.catalogue import CATALOGUE, entry

if TYPE_CHECKING:
    from gie.tasks.config import TaskConfig

TASK_MODULES: dict[str, str] = {name: f"gie.tasks.{name.lower()}" for name in CATALOGUE}

_cache: dict[str, TaskSpec[Any]] = {}


def get_task(name: str) -> TaskSpec[Any]:
    entry(name)  # KeyError naming the known tasks
    if name not in _cache:
        _cache[name] = importlib.import_module(TASK_MODULES[name]).TASK
    return _cache[name]


def get_config(name: str) -> TaskConfig:
    """The task's `TaskConfig` (sources, query picker, answer functions)."""
    entry(name)
    return importlib.import_module(TASK_MODULES[name]).CONFIG


def all_tasks() -> list[TaskSpec[Any]]:
    return [get_task(n) for n in TASK_MODULES]
