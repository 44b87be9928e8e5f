"""The toy benchmark's plug-in object: its name, title, levels and tasks. Everything else (the `generate:`
section's checks and canonical form, generation, prompt modes, planning, scoring, the leaderboard) is the
`evalcore.benchmark.Benchmark` defaults."""

from __future__ import annotations

from typing import Any

from evalcore.benchmark import Benchmark
from evalcore.task import TaskSpec
from toy_benchmark.max_task import TASK


class Toy(Benchmark):
    name = "toy"
    title = "Toy"
    levels = (1, 2)

    def task_names(self) -> list[str]:
        return [TASK.name]

    def task(self, name: str) -> TaskSpec[Any]:
        if name != TASK.name:
            raise KeyError(f"unknown task {name!r}; known: {TASK.name}")
        return TASK


BENCHMARK = Toy()
