"""A task module's `TaskConfig` as the `TaskSpec` the runtime calls (benchmark "graphverse")."""

from __future__ import annotations

import random
from typing import Any

from evalcore.schema import Gold, ParseError, Verdict
from evalcore.task import TaskSpec, TaskText
from gie.levels import LEVEL_NUMBER, Level
from gie.tasks.config import TaskConfig
from gie.tasks.instance import GVData
from gie.tasks.prompt_text import task_text


def _level_name(level: int) -> Level:
    for name, number in LEVEL_NUMBER.items():
        if number == level:
            return name
    raise ValueError(f"GraphVerse level {level} is not one of {sorted(LEVEL_NUMBER.values())} (1 easy, 2 hard)")


def build_spec(cfg: TaskConfig) -> TaskSpec[GVData]:
    def params(level: int) -> dict[str, Any]:
        r = cfg.node_range(_level_name(level))
        return {
            "level": _level_name(level),
            "nodes": [r.lo, r.hi],
            "max_edges_per_node": r.max_edges_per_node,
            "sources": [n for n, _ in cfg.sources],
            "edits": list(cfg.edits),
        }

    # generating and drawing need the image stack (cv2, PIL) and the solvers (scipy); reading and grading an
    # answer do not: imported when used, so a trainer's reward (gie.training.reward) loads without them
    def generate(level: int, rng: random.Random) -> GVData:
        from gie.tasks.construction import build_data

        return build_data(cfg, rng.choice(cfg.edits), rng, level=_level_name(level))

    def solve(data: GVData) -> Gold:
        from gie.tasks.construction import solve_asked

        return solve_asked(cfg, data.asked_graphs(), data.query)

    def render(data: GVData) -> list[bytes]:
        from gie.tasks.drawing import render_data

        return render_data(cfg, data)

    def text(data: GVData) -> TaskText:
        return task_text(cfg, data)

    def parse(obj: Any) -> dict[str, Any] | ParseError:
        return cfg.parse_answer(obj)

    def verify(data: GVData, gold: Gold, answer: dict[str, Any]) -> Verdict:
        return cfg.verify_answer(data.asked_graphs(), data.query, gold, answer)

    def heuristic(data: GVData) -> dict[str, Any]:
        return cfg.heuristic(data.asked_graphs(), data.query)

    def random_answer(data: GVData, rng: random.Random) -> dict[str, Any]:
        return cfg.random_answer(data.asked_graphs(), data.query, rng)

    return TaskSpec(
        name=cfg.name,
        benchmark="graphverse",
        complexity=cfg.complexity,
        data_model=GVData,
        params=params,
        generate=generate,
        solve=solve,
        render=render,
        text=text,
        parse=parse,
        verify=verify,
        heuristic=heuristic,
        random_answer=random_answer,
        bare_answers=cfg.bare is not None,
    )
