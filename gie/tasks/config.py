"""What one GraphVerse task module declares (`TaskConfig`): how its instances are drawn and asked, and its
own answer functions (solve, parse, verify, heuristic, random answer). Catalogue facts (complexity,
single or paired, edits, node ranges, weighted) are read from `gie.catalogue`, never restated here."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import networkx as nx

from evalcore.schema import ComplexityClass, Gold, ParseError, Verdict
from gie.catalogue import EditKind, TaskEntry, entry
from gie.levels import Level, NodeRange
from gie.tasks.answer_parsing import Bare
from gie.tasks.scenarios import Nouns
from gie.tasks.verdicts import Parser, Verifier, guarded_parse, guarded_verify

RecolorMode = Literal["only", "avoid"]

QueryFn = Callable[[nx.Graph, random.Random], dict[str, Any]]
ValidFn = Callable[[nx.Graph, dict[str, Any]], bool]
TextFn = Callable[[Nouns, dict[str, Any]], str]
# (graphs asked on, query) -> gold answer in final-answer shape plus its optimal value (None: infeasible)
SolveFn = Callable[[Sequence[nx.Graph], dict[str, Any]], Gold]
HeuristicFn = Callable[[Sequence[nx.Graph], dict[str, Any]], dict[str, Any]]
RandomFn = Callable[[Sequence[nx.Graph], dict[str, Any], random.Random], dict[str, Any]]


class RetryInstance(Exception):
    """This draw cannot make a valid instance (e.g. no edit choice changes the gold); draw again."""


def _gold_value(gold: Gold) -> Any:
    return gold.value


def gold_key_is_value(cfg: TaskConfig) -> bool:
    return cfg.gold_key is _gold_value


@dataclass(frozen=True, kw_only=True)
class TaskConfig:
    name: str
    # (source name, weight); molecules for paired tasks
    sources: tuple[tuple[str, float], ...]
    task_text: TextFn
    # the answer functions, over the graph(s) the question is finally asked on
    solve: SolveFn
    parse: Parser
    verify: Verifier
    # the textbook shortcut a model might imitate, as a final-answer mapping
    heuristic: HeuristicFn
    # a well-formed answer with random content (feasible only by luck)
    random_answer: RandomFn
    answer_example: dict[str, Any]
    answer_instruction: str
    # how a final answer that is not a mapping (a bare number, list or text) reads; None: mappings only
    bare: Bare | None = None
    # What must differ for an edit to matter: the optimal value, or (CN) the set itself.
    gold_key: Callable[[Gold], Any] = _gold_value
    # Cheap (lower, upper) bounds on the gold value, when gold_key is the value: checks that only compare
    # values (does a recolouring change the answer?) try them before an exact solve (GED's can take a
    # minute). They only ever skip a solve whose value is known to differ, so they change no instance.
    value_bounds: Callable[[Sequence[nx.Graph], dict[str, Any]], tuple[float, float]] | None = None
    query: QueryFn | None = None
    # is this (asked graph, query) a proper instance (feasible, not degenerate)?
    valid: ValidFn = lambda g, q: g.number_of_edges() > 0
    recolor_modes: tuple[RecolorMode, ...] = ("only", "avoid")
    # smallest focused subgraph M
    focus_min: int = 4
    # smallest gold value an edited (focus / recolour) question may have: below it the answer needs no
    # search (MIS / MVC of one node); `gie.tasks.construction.degenerate`
    min_answer: int = 0
    # nodes a recolour must not touch (the query's endpoints stay visible and asked)
    keep: Callable[[dict[str, Any]], set[str]] = lambda q: set()
    # With probability prefer_rate an instance must satisfy `prefer` on its asked graph (CYC: has a
    # cycle, MCP: a clique of 3+), so degenerate answers stay possible but rare.
    prefer: Callable[[nx.Graph], bool] | None = None
    prefer_rate: float = 0.0
    # TSP: the sampled airports become a complete graph weighted by great-circle km (the paper's design)
    complete: bool = False
    # what the scenario adds for weighted drawings (TSP reads its distances from a table)
    weight_sentence: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def entry(self) -> TaskEntry:
        return entry(self.name)

    @property
    def complexity(self) -> ComplexityClass:
        return self.entry.complexity

    @property
    def edits(self) -> tuple[EditKind, ...]:
        return self.entry.edits

    @property
    def paired(self) -> bool:
        return self.entry.paired

    @property
    def weighted(self) -> bool:
        return self.entry.weighted

    def node_range(self, level: Level = "easy") -> NodeRange:
        return self.entry.levels[level]

    def solve_graphs(self, graphs: Sequence[nx.Graph], query: dict[str, Any]) -> Gold:
        """The gold answer on the graph(s) asked on; infeasible instances (SD unreachable, TSP without a
        Hamiltonian cycle) get value None and an answer stating "none"."""
        want = 2 if self.paired else 1
        if len(graphs) != want:
            raise ValueError(f"{self.name} needs {want} graph(s), got {len(graphs)}")
        return self.solve(graphs, query)

    def parse_answer(self, obj: Any) -> dict[str, Any] | ParseError:
        """Canonical answer from an extracted final answer (a mapping, or a bare value read by `bare`), or
        why it is not one. Never raises."""
        return guarded_parse(self.parse, obj, self.bare)

    def verify_answer(self, graphs: Sequence[nx.Graph], query: dict[str, Any], gold: Gold, canonical: Any
                      ) -> Verdict:
        """The verdict on a canonical answer over the graph(s) asked on. Never raises."""
        return guarded_verify(self.parse, self.verify, graphs, query, gold, canonical)
