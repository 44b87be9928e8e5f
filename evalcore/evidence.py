"""Graph evidence, as the judge reads it: the evidence text E_G a judge scores a response against (GraphVerse
paper §4.4, C.3) and the parsed facts of the instance's graphs the rule-based scorer checks claims with.

The types only: a judged benchmark builds them from its instances (`Benchmark.judge_evidence`; GraphVerse's
builder is `gie.evidence`), and the judge (`judge/`) reads them, so neither imports the other. `gold_text` is the
gold answer set as the judge is given it, the same for every judged benchmark.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import networkx as nx


@dataclass
class LogicalGraph:
    """One graph of the instance as the model sees it (before the question's restriction)."""

    index: int
    graph: nx.Graph  # drawn structure, colours before any recolouring (composition: the composed graph)
    drawn_color: dict[str, str]  # colour each node is drawn in (after recolouring)
    images: list[tuple[int, int | None]]  # (image index, composition part or None)
    edit: dict[str, Any] | None  # the edit metadata targeting this graph, if any
    asked: nx.Graph  # the graph the question is finally asked on
    affected_nodes: frozenset[str] = frozenset()  # entities the edit touched
    affected_edges: frozenset[tuple[str, str]] = frozenset()
    part_of: dict[str, int] = field(default_factory=dict)  # composition: node -> part (0/1)


@dataclass
class Facts:
    """Parsed evidence for the rule-based scorer (built once per instance)."""

    task: str
    kind: str
    query: dict[str, Any]
    weighted: bool
    graphs: list[LogicalGraph]

    @property
    def paired(self) -> bool:
        # from the instance, not a restated task list: two logical graphs are two molecules to map
        return len(self.graphs) > 1


@dataclass(frozen=True)
class Evidence:
    task: str
    text: str
    sha256: str
    facts: Facts = field(compare=False, repr=False)
    version: str = ""  # the builder's wording version (part of the text; bumped when it changes)


def format_number(x: Any) -> str:
    """A number as evidence writes it: an integral float without its `.0`."""
    if isinstance(x, float) and x.is_integer():
        return str(int(x))
    return str(x)


def gold_text(task: str, gold_answer: Mapping[str, Any], gold_value: float | None) -> str:
    """The gold answer set as given to the judge: the optimal value and one optimal answer."""
    import json

    value = "none" if gold_value is None else format_number(float(gold_value))
    return (
        f"Optimal value: {value}.\n"
        f"One optimal answer: {json.dumps(dict(gold_answer), sort_keys=True, ensure_ascii=False)}\n"
        "Any other answer that is feasible on the evidence and reaches the same optimal value is also a "
        "valid gold answer."
    )
