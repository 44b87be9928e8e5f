"""The toy benchmark's plug-in object: its name, title, levels and tasks, and one metric of its own (accuracy
per level, beside the default leaderboard). Everything else (the `generate:` section's checks and canonical
form, generation, prompt modes, planning, scoring) is the `evalcore.benchmark.Benchmark` defaults."""

from __future__ import annotations

from typing import Any

import polars as pl

from evalcore.benchmark import Benchmark, Summary, leaderboard
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

    def summaries(self, samples: pl.LazyFrame, parser: str) -> list[Summary]:
        by_level = (samples.group_by("model", "level")
                    .agg(n=pl.len(), acc=(pl.col("verdict") == "correct").mean())
                    .sort("model", "level").collect())
        return [Summary(f"{self.title} leaderboard", "toy_leaderboard.csv", leaderboard(samples)),
                Summary(f"{self.title} accuracy per level", "toy_by_level.csv", by_level)]


BENCHMARK = Toy()
