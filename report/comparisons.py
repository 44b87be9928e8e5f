"""The report's comparisons spec (`nphe4v report --comparisons`: which arm is the baseline of which), read by the
registered benchmark that takes one (`Benchmark.compares`, `parse_comparisons`): the command line and notebooks
import it from here."""

from __future__ import annotations

from typing import Any

from evalcore import benchmarks
from evalcore.benchmark import Benchmark
from evalcore.report_section import ComparisonError

Comparisons = Any  # the comparing benchmark's spec (`Benchmark.parse_comparisons`)


def comparing() -> Benchmark | None:
    """The registered benchmark that takes a comparisons spec (the first, should several), None when none does."""
    return next((b for b in benchmarks.registry().values() if b.compares), None)


def parse_comparisons(raw: Any, source: str = "comparisons") -> Comparisons:
    """The spec in the YAML mapping ``raw`` read from ``source``; ComparisonError (one line naming ``source``
    and the field) when it is wrong or no registered benchmark takes one."""
    b = comparing()
    if b is None:
        raise ComparisonError(f"{source}: no registered benchmark takes a comparisons spec")
    return b.parse_comparisons(raw, source)


__all__ = ["ComparisonError", "Comparisons", "comparing", "parse_comparisons"]
