"""Structured facts: the notation-free form of a claim, checked by code against the evidence.

An LLM judge returns, per step, the fact the step states (`Fact`, schema below); `check_fact` decides
whether it holds on the graph the question is asked on, overriding the judge's own label, and
`score_facts` turns a response's facts into VGR v3 exactly as the rule scorer does (same checks:
`judge.rule_checks`; same atoms and score: `judge.rule_v3`). Schema (JSON):

    {"type": T, "nodes": [str, ...], "value": number | string | null, "graph": 1 | 2 | null}

T: edge [u, v] (value: weight or null) | non_edge [u, v] | distance [u, v] value | path [n0..nk] (value:
total or null; closed when nk == n0) | set [members] value "clique" / "independent_set" / "vertex_cover" /
"common_neighbors" | neighbors [n, listed...] value "complete" / "partial" | mapping [a, x] (x null:
deleted) | assign [n] value colour class (COL) | color [n] value drawn colour | degree [n] value.
`graph` names the molecule on GED/MCS; a paired fact without it that holds in one molecule and not the
other is "unknown" (never true by luck). "unknown" neither earns nor costs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from judge.evidence import Evidence
from judge.rule_checks import ClaimChecks, Step, context_for
from judge.rule_grammar import edge_key
from judge.rule_v3 import v3_of
from judge.vgr3 import V3, v3_score

Truth = Literal["true", "false", "unknown"]
FACT_TYPES = ("edge", "non_edge", "distance", "path", "set", "neighbors", "mapping", "assign", "color", "degree")
_ARITY = {"edge": (2, 2), "non_edge": (2, 2), "distance": (2, 2), "path": (2, 64), "set": (1, 64),
          "neighbors": (2, 64), "mapping": (1, 2), "assign": (1, 1), "color": (1, 1), "degree": (1, 1)}
_SET_PROPS = {"clique": "clique", "independent_set": "independent set", "independent set": "independent set",
              "vertex_cover": "vertex cover", "vertex cover": "vertex cover", "common_neighbors": "common",
              "common neighbors": "common", "common": "common"}
_NUMERIC = frozenset({"distance", "degree"})


@dataclass(frozen=True)
class Fact:
    type: str
    nodes: tuple[str, ...]
    value: float | str | None = None
    graph: int | None = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Fact | None:
        """A canonical fact (same fact, same value: merge duplicates by it), or None when malformed."""
        try:
            t = str(d.get("type", "")).strip().lower()
            if t not in FACT_TYPES:
                return None
            raw = d.get("nodes") or []
            nodes = [None if n is None else str(n).strip() for n in raw]
            lo, hi = _ARITY[t]
            if not lo <= len(nodes) <= hi or any(n in (None, "") for n in nodes[: 1 if t == "mapping" else None]):
                return None
            g = d.get("graph")
            graph = None if g in (None, "", 0) else int(g)
            if graph not in (None, 1, 2):
                return None
            v = d.get("value")
            value: float | str | None
            if t in _NUMERIC or (t in ("edge", "path") and v is not None):
                value = round(float(v), 6)
            elif t == "set":
                value = _SET_PROPS.get(str(v).strip().lower())
                if value is None:
                    return None
            elif t == "neighbors":
                value = "complete" if str(v).strip().lower() == "complete" else "partial"
            elif t in ("assign", "color"):
                if v is None:
                    return None
                value = str(int(v)) if isinstance(v, (int, float)) and float(v).is_integer() else str(v).strip().lower()
            else:
                value = None
            if t in ("edge", "non_edge", "distance"):
                nodes = list(edge_key(nodes[0], nodes[1]))  # type: ignore[arg-type]
            elif t == "set":
                nodes = sorted(set(nodes))  # type: ignore[arg-type]
            elif t == "neighbors":
                nodes = [nodes[0], *sorted(set(nodes[1:]))]  # type: ignore[list-item,type-var]
            elif t == "mapping" and len(nodes) == 1:
                nodes = [nodes[0], None]
            return cls(t, tuple(nodes), value, graph)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return None

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "nodes": list(self.nodes), "value": self.value, "graph": self.graph}


class _Checks(ClaimChecks):
    """The rule scorer's checks with the molecule fixed by the fact (not read from surrounding text)."""

    def __init__(self, evidence: Evidence, cands: list[int]) -> None:
        super().__init__(context_for(evidence), "")
        self.cands = cands

    def graph_at(self, pos: int) -> list[int]:
        return self.cands


def _run(evidence: Evidence, fact: Fact, cands: list[int]) -> Step | None:
    c = _Checks(evidence, cands)
    n, v = list(fact.nodes), fact.value
    t = fact.type
    ctx = c.ctx
    if t == "edge":
        c.edge_claim(0, 0, n[0], n[1], v if isinstance(v, float) else None)
    elif t == "non_edge":
        gs = [ctx.graphs[i] for i in cands]
        ok = all(a in g.asked for g in gs for a in n) and not any(g.asked.has_edge(*n) for g in gs)
        c.add(0, ("nonedge", tuple(cands), tuple(n)), f"{n[0]} not adjacent to {n[1]}", ok, "perception")
    elif t == "distance":
        c.distance_claim(0, 0, n[0], n[1], float(v))  # type: ignore[arg-type]
    elif t == "path":
        c.path_claim(0, 0, n, v if isinstance(v, float) else None)
    elif t == "set":
        c.set_claim(0, 0, str(v), n)
    elif t == "neighbors":
        c.adjacency_claim(0, 0, n[0], n[1:], v == "complete")
    elif t == "mapping":
        a, x = n[0], n[1]
        if x is None:
            ok = a in ctx.graphs[0].asked
            c.add(0, ("map", a, None), f"{a} deleted", ok, "perception")
        else:
            c.mapping_claim(0, 0, a, x)
    elif t == "assign":
        c.assign_claim(0, 0, n[0], str(v))
    elif t == "color":
        c.color_claim(0, 0, n[0], str(v))
    elif t == "degree":
        c.degree_claim(0, 0, n[0], int(float(v)))  # type: ignore[arg-type]
    steps = list(c.steps.values())
    return steps[0] if steps else None


def _check(evidence: Evidence, fact: Fact) -> tuple[Truth, str, Step | None]:
    graphs = evidence.facts.graphs
    if fact.graph is not None:
        if fact.graph > len(graphs):
            return "false", "perception", None
        cand_sets = [[fact.graph - 1]]
    elif len(graphs) > 1 and fact.type not in ("mapping", "assign"):
        cand_sets = [[i] for i in range(len(graphs))]  # each molecule alone: agreement or ambiguity
    else:
        cand_sets = [[0] if len(graphs) == 1 else list(range(len(graphs)))]
    results = [_run(evidence, fact, cs) for cs in cand_sets]
    if any(r is None for r in results):
        return "unknown", "none", None
    steps = [r for r in results if r is not None]
    if any(s.key[0] == "ambiguous" for s in steps) or len({s.correct for s in steps}) > 1:
        return "unknown", "none", None
    first = steps[0]
    return ("true" if first.correct else "false"), first.error_type, first


def check_fact(fact: Fact, evidence: Evidence) -> tuple[Truth, str]:
    """Whether `fact` holds on the graph the question is asked on: ("true" | "false" | "unknown",
    error type of a false fact: perception / visual_reasoning / text_reasoning, else "none")."""
    truth, err, _ = _check(evidence, fact)
    return truth, err


def score_facts(evidence: Evidence, gold_answer: Mapping[str, Any] | None, gold_value: float | None,
                facts: Iterable[Fact | tuple[Fact, Any]], final_match: bool, *, extra_errors: int = 0) -> V3:
    """VGR v3 of a response from its structured facts, each checked here (a judge's own label is ignored):
    duplicates merge by the canonical fact; false facts are errors (distinct false atoms); "unknown"
    neither earns nor costs. `extra_errors`: steps without a structured fact that the judge marks wrong
    (they can only cost; nothing earns without a checked fact)."""
    steps: list[Step] = []
    seen: set[Fact] = set()
    for item in facts:
        fact = item[0] if isinstance(item, tuple) else item
        if fact in seen:
            continue
        seen.add(fact)
        truth, _, step = _check(evidence, fact)
        if truth != "unknown" and step is not None:
            steps.append(step)
    res = v3_of(context_for(evidence), steps, gold_answer, gold_value, bool(final_match), evidence)
    if extra_errors:
        errors = res.n_errors + int(extra_errors)
        vgr = v3_score(res.share, res.n_stated, errors, bool(final_match), has_critical=res.n_critical > 0)
        res = V3(vgr, res.share, res.n_critical, res.n_stated, errors)
    return res
