"""BSP — sorted array search (the paper's SAS): find the 0-based position of a target in a sorted array.

Deviation from the peer data (docs/deviations.md): values are distinct, so the position is unique, and
the array is stored sorted, so the text and the picture show the same order.
"""

from __future__ import annotations

import bisect
import random
from typing import Any

from pydantic import BaseModel, Field, model_validator

from evalcore.coerce import as_int, get_key
from evalcore.draw import INK, centered_text, new_canvas, title, to_png
from evalcore.prompting import example_literal
from evalcore.schema import Gold, ParseError, Verdict
from evalcore.task import TaskSpec, TaskText


class BSPData(BaseModel):
    array: list[int] = Field(min_length=1)
    target: int

    @model_validator(mode="after")
    def _sorted(self) -> BSPData:
        if self.array != sorted(self.array):
            raise ValueError("array must be sorted ascending")
        return self


def params(level: int) -> dict[str, Any]:
    return {"length": level + 2, "max_value": 10 + 5 * level}


def generate(level: int, rng: random.Random) -> BSPData:
    p = params(level)
    array = sorted(rng.sample(range(1, p["max_value"] + 1), p["length"]))
    return BSPData(array=array, target=rng.choice(array))


def solve(data: BSPData) -> Gold:
    # Binary search: the left-most index holding the target.
    pos = bisect.bisect_left(data.array, data.target)
    if pos >= len(data.array) or data.array[pos] != data.target:
        raise ValueError("target not in array")
    return Gold(answer={"Position": pos}, value=pos)


def render(data: BSPData) -> list[bytes]:
    n = len(data.array)
    cell = min(80, (1024 - 80) // n)
    img, draw = new_canvas(1024, 260)
    title(draw, "Sorted array", y=40)
    x0 = (1024 - cell * n) / 2
    for i, v in enumerate(data.array):
        box = [x0 + i * cell, 110, x0 + (i + 1) * cell, 110 + cell]
        draw.rectangle(box, outline=INK, width=3)
        centered_text(draw, (x0 + (i + 0.5) * cell, 110 + cell / 2), str(v), 30)
    return [to_png(img)]


def text(data: BSPData) -> TaskText:
    return TaskText(
        intro=(
            "Sorted array search: given an array of integers sorted in ascending order, locate a "
            "target value in it, as binary search does."
        ),
        question=(
            f"The array has {len(data.array)} elements. At which position is the target value "
            f"{data.target}? Positions are 0-based: the first element is at position 0."
        ),
        output="Give the position of the target as an integer and keep your reasoning brief.",
        example=example_literal({"Position": "<POSITION>"}),
        data_lines=("Array: " + ", ".join(str(v) for v in data.array),),
    )


def parse(obj: dict[str, Any]) -> dict[str, Any] | ParseError:
    found, raw = get_key(obj, "Position")
    if not found:
        return ParseError(kind="missing_key", detail="Position")
    pos = as_int(raw)
    if pos is None:
        return ParseError(kind="bad_value", detail=f"Position={raw!r:.60}")
    return {"Position": pos}


def verify(data: BSPData, gold: Gold, answer: dict[str, Any]) -> Verdict:
    pos = answer["Position"]
    if not 0 <= pos < len(data.array):
        return Verdict(verdict="wrong", reason=f"position {pos} out of range 0..{len(data.array) - 1}")
    if data.array[pos] != data.target:
        return Verdict(verdict="wrong", reason=f"array[{pos}]={data.array[pos]} is not {data.target}")
    return Verdict(verdict="correct")


def heuristic(data: BSPData) -> dict[str, Any]:
    # Linear scan: exact here, so BSP separates careless models from careful ones, not strategies.
    return {"Position": data.array.index(data.target)}


def random_answer(data: BSPData, rng: random.Random) -> dict[str, Any]:
    return {"Position": rng.randrange(len(data.array))}


TASK = TaskSpec(
    name="BSP",
    benchmark="nphardeval4v",
    complexity="P",
    data_model=BSPData,
    params=params,
    generate=generate,
    solve=solve,
    render=render,
    text=text,
    parse=parse,
    verify=verify,
    heuristic=heuristic,
    random_answer=random_answer,
)
