"""MAX: a row of boxes with distinct numbers; which position holds the largest? A task as the project's task
contract (`evalcore.task.TaskSpec`) wants it: a typed instance, a generator drawing all randomness from `rng`,
an exact solver, a picture drawn with the project's helpers, the prompt's pieces, a parser that never raises, a
verifier, the heuristic a model may imitate and a well-formed random answer."""

from __future__ import annotations

import random
from typing import Any

from pydantic import BaseModel, Field, model_validator

from evalcore.coerce import as_int, get_key
from evalcore.draw import INK, centered_text, new_canvas, title, to_png
from evalcore.prompting import example_literal
from evalcore.schema import Gold, ParseError, Verdict
from evalcore.task import TaskSpec, TaskText


class MaxData(BaseModel):
    values: list[int] = Field(min_length=2)

    @model_validator(mode="after")
    def _distinct(self) -> MaxData:
        if len(set(self.values)) != len(self.values):
            raise ValueError("values must be distinct (the largest is at one position)")
        return self


def params(level: int) -> dict[str, Any]:
    return {"length": 3 + 2 * level, "max_value": 20 * level}


def generate(level: int, rng: random.Random) -> MaxData:
    p = params(level)
    return MaxData(values=rng.sample(range(1, p["max_value"] + 1), p["length"]))


def solve(data: MaxData) -> Gold:
    pos = max(range(len(data.values)), key=data.values.__getitem__)
    return Gold(answer={"Position": pos}, value=data.values[pos])


def render(data: MaxData) -> list[bytes]:
    n = len(data.values)
    cell = min(80, (1024 - 80) // n)
    img, draw = new_canvas(1024, 240)
    title(draw, "Numbers", y=40)
    x0 = (1024 - cell * n) / 2
    for i, v in enumerate(data.values):
        draw.rectangle([x0 + i * cell, 100, x0 + (i + 1) * cell, 100 + cell], outline=INK, width=3)
        centered_text(draw, (x0 + (i + 0.5) * cell, 100 + cell / 2), str(v), 30)
    return [to_png(img)]


def text(data: MaxData) -> TaskText:
    return TaskText(
        intro="Largest number: a row of boxes holds distinct integers.",
        question=f"The row has {len(data.values)} boxes. At which 0-based position is the largest number?",
        output="Give the position as an integer.",
        example=example_literal({"Position": "<POSITION>"}),
        data_lines=("Numbers: " + ", ".join(map(str, data.values)),),
    )


def parse(obj: dict[str, Any]) -> dict[str, Any] | ParseError:
    found, raw = get_key(obj, "Position")
    if not found:
        return ParseError(kind="missing_key", detail="Position")
    pos = as_int(raw)
    if pos is None:
        return ParseError(kind="bad_value", detail=f"Position={raw!r:.60}")
    return {"Position": pos}


def verify(data: MaxData, gold: Gold, answer: dict[str, Any]) -> Verdict:
    pos = answer["Position"]
    if not 0 <= pos < len(data.values):
        return Verdict(verdict="wrong", reason=f"position {pos} out of range 0..{len(data.values) - 1}")
    if data.values[pos] != max(data.values):  # from the instance, not the stored gold
        return Verdict(verdict="wrong", reason=f"values[{pos}]={data.values[pos]} is not the largest")
    return Verdict(verdict="correct")


def heuristic(data: MaxData) -> dict[str, Any]:
    return {"Position": len(data.values) - 1}  # "the last one": right only by chance


def random_answer(data: MaxData, rng: random.Random) -> dict[str, Any]:
    return {"Position": rng.randrange(len(data.values))}


TASK = TaskSpec(
    name="MAX", benchmark="toy", complexity="P", data_model=MaxData, params=params, generate=generate,
    solve=solve, render=render, text=text, parse=parse, verify=verify, heuristic=heuristic,
    random_answer=random_answer,
)
