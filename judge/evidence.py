"""The evidence a judge scores against, for any judged benchmark: `evidence_for(instance)` asks the instance's
benchmark plug-in (`Benchmark.judge_evidence`; GraphVerse's builder is `gie.evidence`); the types and the gold
text are the shared core's (`evalcore.evidence`), so the judge names and imports no benchmark."""

from __future__ import annotations

from typing import Any

from evalcore import benchmarks
from evalcore.evidence import Evidence, Facts, LogicalGraph, gold_text


def evidence_for(instance: Any) -> Evidence:
    """Evidence of an `evalcore.schema.Instance` of a judged benchmark."""
    return benchmarks.get(instance.benchmark).judge_evidence(instance)  # type: ignore[no-any-return]


__all__ = ["Evidence", "Facts", "LogicalGraph", "evidence_for", "gold_text"]
