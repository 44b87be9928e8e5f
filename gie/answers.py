"""GraphVerse answer functions by task name, for callers that hold the asked graph(s) rather than an
instance (the judge's rule scorer, benches, tests). Each call looks the task up (`gie.tasks.get_config`,
names from `gie.catalogue`) and runs that task module's own function; the per-task logic lives in
`gie/tasks/<task>.py`, the shared parts in `gie.tasks.answer_parsing` and `gie.tasks.verdicts`.

* `parse(task, obj)`: canonical answer mapping or a `ParseError`; never raises.
* `verify(task, graphs, query, gold, canonical)`: correct / wrong with a reason, `witness_valid` and
  `value_consistent`; never raises.
* `solve(task, graphs, query)`: the gold answer (exact optimum) on the graph(s) asked on.
* `heuristic` is the textbook shortcut a model might imitate; `random_answer` is well-formed noise.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import networkx as nx

from evalcore.schema import Gold, ParseError, Verdict
from gie.catalogue import CATALOGUE
from gie.tasks import get_config
from gie.tasks.verdicts import wrong


def parse(task: str, obj: Any) -> dict[str, Any] | ParseError:
    """Canonical answer for `task` from an extracted final answer (a mapping, or a bare number, list or text
    where the task reads one), or why it is not one. Never raises."""
    if task not in CATALOGUE:
        return ParseError(kind="bad_value", detail=f"unknown task {task!r}")
    return get_config(task).parse_answer(obj)


def verify(task: str, graphs: Sequence[nx.Graph], query: dict[str, Any], gold: Gold, canonical: Any) -> Verdict:
    """correct / wrong (with a reason) for a canonical answer on the graph(s) asked on, plus
    `witness_valid` (is the given path / set / tour / mapping valid; None when none was given).
    Never raises."""
    if task not in CATALOGUE:
        return wrong(f"unknown task {task!r}")
    return get_config(task).verify_answer(graphs, query, gold, canonical)


def solve(task: str, graphs: Sequence[nx.Graph], query: dict[str, Any]) -> Gold:
    """Gold answer (final-answer shape) and optimal value for `task` on the graph(s) finally asked on.
    Infeasible instances (SD unreachable, TSP without a Hamiltonian cycle) get value None and an answer
    stating "none": Distance/Length null with an empty list."""
    return _config(task).solve_graphs(graphs, query)


def heuristic(task: str, graphs: Sequence[nx.Graph], query: dict[str, Any]) -> dict[str, Any]:
    """The textbook shortcut's answer, in the final-answer shape (names are the graph's labels)."""
    return _config(task).heuristic(graphs, query)


def random_answer(task: str, graphs: Sequence[nx.Graph], query: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """A well-formed answer with random content over the graph's labels (feasible only by luck)."""
    return _config(task).random_answer(graphs, query, rng)


def _config(task: str) -> Any:
    if task not in CATALOGUE:
        raise ValueError(f"unknown task {task!r}; known: {', '.join(CATALOGUE)}")
    return get_config(task)
