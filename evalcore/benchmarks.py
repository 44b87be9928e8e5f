"""The benchmark registry: every `Benchmark` object installed under the `nphe4v.benchmarks` entry-point group.

A benchmark is a distribution's entry point (`[project.entry-points."nphe4v.benchmarks"]` in its
pyproject.toml: `NAME = "package.module:OBJECT"`), so the core names no benchmark and imports none: NPHardEval4V
and GraphVerse register from this project's pyproject.toml, a third benchmark from its own package
(docs/extending.md). Loaded once per process, on first use.
"""

from __future__ import annotations

from functools import lru_cache
from importlib.metadata import EntryPoint, distributions
from typing import Any

from evalcore.task import TaskSpec

# An `evalcore.benchmark.Benchmark`. Not imported, not even for type checking: its base class generates datasets
# with `evalcore.dataset`, which asks this registry for task specs, and the core's modules have no import cycle.
Benchmark = Any

ENTRY_POINT_GROUP = "nphe4v.benchmarks"


class BenchmarkError(KeyError):
    """An unknown benchmark name, or an entry point that is not a Benchmark (one line naming it)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


@lru_cache(maxsize=1)
def registry() -> dict[str, Benchmark]:
    """Name -> Benchmark, in entry-point order with the default benchmark first."""
    found: dict[str, Benchmark] = {}
    for ep in _entry_points():
        if ep.name in found:
            continue  # the same distribution seen twice on the path (an editable install and a build folder)
        obj = ep.load()
        if getattr(obj, "name", None) != ep.name or not callable(getattr(obj, "task", None)):
            raise BenchmarkError(f"entry point {ENTRY_POINT_GROUP}:{ep.name} = {ep.value}: not a Benchmark named "
                                 f"{ep.name!r}")
        found[ep.name] = obj
    if not found:
        raise BenchmarkError(f"no benchmark is registered under the entry-point group {ENTRY_POINT_GROUP!r} "
                             "(is the project installed? `pip install -e .`)")
    return dict(sorted(found.items(), key=lambda kv: not kv[1].default))


def _entry_points() -> list[EntryPoint]:
    # every distribution on the path, not `entry_points()`: that keeps only the first distribution of a name, and
    # a stale `*.egg-info` in the working folder (a build left it there) would hide the installed one's
    return [ep for dist in distributions() for ep in dist.entry_points if ep.group == ENTRY_POINT_GROUP]


def names() -> list[str]:
    return list(registry())


def get(name: str) -> Benchmark:
    try:
        return registry()[name]
    except KeyError:
        raise BenchmarkError(f"unknown benchmark {name!r}; known: {', '.join(registry())}") from None


def default() -> Benchmark:
    """The benchmark a run config's dataset entry means when it names none."""
    return next(iter(registry().values()))


def task_for(benchmark: str, task: str) -> TaskSpec[Any]:
    return get(benchmark).task(task)
