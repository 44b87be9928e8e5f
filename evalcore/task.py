"""The task-module contract shared by NPHardEval4V and GraphVerse.

A task is a bundle of pure functions over a typed instance (`data_model`). No I/O happens here:
rendering returns PNG bytes, the generator writes them. A registry maps task names to specs.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from evalcore.schema import ComplexityClass, Gold, ParseError, Verdict

D = TypeVar("D", bound=BaseModel)


class TaskText(BaseModel):
    """The pieces a prompt is assembled from (see `evalcore.prompting`).

    `question` must carry every scalar the task needs (target, strings, start/end, capacity,
    threshold, k, counts) because it is sent in every prompt mode (figure+limited_text sends
    `limited_question` instead when a task sets it); `data_lines` carry the bulk data
    (edges, items, distances, availability) that the image shows and that only full-text modes repeat.
    """

    intro: str
    question: str
    output: str
    example: str
    data_lines: tuple[str, ...] = ()
    # The question in figure+limited_text when it differs: the papers' EDP gives its two strings only in
    # the figure there, so they cannot be in `question`. None means `question` is used in every mode.
    limited_question: str | None = None


@dataclass(frozen=True)
class TaskSpec(Generic[D]):
    name: str
    benchmark: str
    complexity: ComplexityClass
    data_model: type[D]
    # level -> the size parameters for that level (recorded in the dataset manifest)
    params: Callable[[int], dict[str, Any]]
    # (level, rng) -> a fresh instance; all randomness comes from rng
    generate: Callable[[int, random.Random], D]
    # exact solver: gold answer in final-answer shape plus its optimal value
    solve: Callable[[D], Gold]
    # PNG bytes of the picture(s) of the instance (one per image)
    render: Callable[[D], list[bytes]]
    text: Callable[[D], TaskText]
    # extracted final-answer mapping -> canonical answer mapping, or why it is not an answer
    parse: Callable[[dict[str, Any]], dict[str, Any] | ParseError]
    # (instance, gold, canonical answer) -> correct / wrong with a reason
    verify: Callable[[D, Gold, dict[str, Any]], Verdict]
    # the textbook heuristic a model often imitates, as a final-answer mapping
    heuristic: Callable[[D], dict[str, Any]]
    # a well-formed answer with random content
    random_answer: Callable[[D, random.Random], dict[str, Any]]
    # `parse` also takes what a final answer holds when it is not a mapping (a number, a list, or the
    # block's text when that is no literal: `evalcore.extract.extract_final_answer_text`)
    bare_answers: bool = False

    def load(self, data: dict[str, Any]) -> D:
        return self.data_model.model_validate(data)


class TaskRegistry:
    def __init__(self) -> None:
        self._tasks: dict[str, TaskSpec[Any]] = {}

    def register(self, spec: TaskSpec[Any]) -> TaskSpec[Any]:
        if spec.name in self._tasks:
            raise ValueError(f"task {spec.name!r} registered twice")
        self._tasks[spec.name] = spec
        return spec

    def get(self, name: str) -> TaskSpec[Any]:
        try:
            return self._tasks[name]
        except KeyError:
            raise KeyError(f"unknown task {name!r}; known: {', '.join(sorted(self._tasks))}") from None

    def names(self) -> list[str]:
        return list(self._tasks)

    def __contains__(self, name: object) -> bool:
        return name in self._tasks
