"""Built-in baseline "models": they answer through the same text interface as any model.

- oracle: the exact gold answer (end-to-end check of prompt, parse and verify: must score ER = A' = 1);
  on recognition it answers truthfully.
- greedy: the textbook heuristic of each task; claims to recognise every figure.
- random: a well-formed answer with random content; a coin flip on recognition.
- always-yes: says YES to everything (the recognition control); its task answers are unparsable prose.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from evalcore.prompting import POT_MODE, format_program, format_response
from evalcore.rng import rng_for
from evalcore.schema import RECOGNITION_MODE, ModelRequest

BaselineKind = Literal["oracle", "greedy", "heuristic", "random", "always-yes"]
# "heuristic" is GraphVerse's name for the same baseline (2-approx cover, nearest-neighbour tour, DSATUR, ...)
BASELINES: tuple[BaselineKind, ...] = ("oracle", "greedy", "heuristic", "random", "always-yes")


def baseline_answer(kind: BaselineKind, request: ModelRequest) -> str:
    from evalcore.benchmarks import task_for

    ref = request.reference or {}
    key = request.key
    rng = rng_for(request.sampling.seed or 0, kind, key.as_str())
    if key.prompt_mode == RECOGNITION_MODE:
        if kind == "oracle":
            yes = key.variant == "match"
        elif kind == "random":
            yes = rng.random() < 0.5
        else:
            yes = True
        return ("YES" if yes else "NO") + ", the figure and the description " + (
            "match." if yes else "differ."
        )
    if kind == "always-yes":
        return "Yes."
    spec = task_for(key.benchmark, request.task)
    answer: dict[str, Any]
    if kind == "oracle":
        answer = ref["gold"]
    else:
        data = spec.load(ref["data"])
        answer = spec.heuristic(data) if kind in ("greedy", "heuristic") else spec.random_answer(data, rng)
    answer = json.loads(json.dumps(answer, default=_jsonable))
    if key.prompt_mode == POT_MODE:  # a program that prints the answer (GraphVerse program-of-thought)
        return format_program(answer, note=f"{kind} baseline")
    return format_response(answer, reasoning=f"{kind} baseline")


def _jsonable(v: object) -> object:
    if isinstance(v, set | tuple):
        return list(v)
    return str(v)
