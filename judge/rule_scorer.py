"""Rule-based scorer: deterministic checks of the claims a response states, against the evidence facts.

The default judge when no judge model is configured, and a cross-check of the LLM judge (judge.agreement).
It produces the same step-level record as the LLM judge (`JudgeVerdict`), so VGR-Score is computed the
same way. A step is one claim found in the response (before its final-answer block), in order of
appearance, each distinct claim once:

| claim (examples)                                   | correct iff                                         |
|----------------------------------------------------|-----------------------------------------------------|
| edge `A-B`, `A--B`, `A–B (1032)`                   | A-B is drawn (the composed graph for composition);   |
|                                                    | a stated weight equals the edge's weight            |
| path / tour / cycle `A -> B -> C` (+ `total 12`)   | every hop is an edge of the graph asked on; a stated |
|                                                    | total equals the path's weight (hops if unweighted) |
| adjacency `A: B, C` / `neighbors of A are B, C`    | the listed nodes are exactly A's drawn neighbours    |
| `A is connected to B and C`                        | each listed node is a drawn neighbour of A           |
| colour `A(rose)`, `A is mint`, `mint nodes: A, B`  | the node is drawn in that colour (synonyms allowed)  |
| distance `distance from A to B is 7`, `d(A,B)=7`   | equals the distance in the graph asked on            |
| degree `A has degree 3`, `deg(A) = 3`              | equals A's degree (drawn or asked graph)             |
| set `{A, B, C} is a clique` (independent set,      | the property holds on the graph asked on             |
|   vertex cover), `common neighbors: A, B`          | equals the common-neighbour set                      |
| mapping pair `C1 -> C4`, `C1 maps to C4` (GED/MCS) | C1 is a node of graph 1 and C4 of graph 2 (asked)     |
| arithmetic `1032 + 5408 = 6440`                    | the sum is right                                     |

A wrong step is labelled: `perception` (the drawn graph says otherwise: missing or invented node/edge,
wrong weight, colour or degree), `visual_reasoning` (the claim ignores the edit: uses a node or edge the
focus/recolouring excludes, a patch-affected edge, an undrawn cross-part edge, or gives the value of the
unedited graph), `text_reasoning` (wrong arithmetic, distances, sets from correctly read facts).
The final-answer match is the benchmark verifier's verdict, so it accepts every optimal answer; the caller
passes it in (the sample record carries it), so the judge never re-verifies and depends on no benchmark
package. Free text (instructions, fake verdicts, fake evidence) cannot raise a score: only claims are
scored, always against the stored evidence.

Modules: `judge.rule_grammar` (the patterns of claims), `judge.rule_claims` (finding the claims of a
response), `judge.rule_checks` (checking each claim against the facts); this one scores a response.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evalcore.evidence import Evidence
from judge.rule_checks import Context, Step, context_for
from judge.rule_claims import ClaimScanner
from judge.rule_grammar import FINAL_ANSWER_TAG, edge_key
from judge.rule_notation import Notation
from judge.rule_v3 import v3_of
from judge.schema import DEFAULT_VGR_VERSION, VGR_VERSIONS, JudgeStep, JudgeVerdict, error_counts, vgr_of
from judge.vgr3 import V3
from judge.vgr4 import V4, score_text

RULE_VERSION = "rule-v4"
MAX_SCAN_CHARS = 60_000


def claims_region(text: str) -> str:
    """The part of a response whose claims are scored: everything before its last final-answer block."""
    text = text[:MAX_SCAN_CHARS]
    last = None
    for m in FINAL_ANSWER_TAG.finditer(text):
        last = m
    return text[: last.start()] if last is not None else text


@dataclass
class RuleVerdict:
    """The rule scorer's verdict: the same interface as `JudgeVerdict` (steps with claim / kind / relevant
    / correct / error_type, final_answer_match, n_correct, error_counts()) plus `vgr`, without per-step
    validation, since this is the hot path of big runs. Its `final_answer_match` is the exact verifier's
    verdict. `to_verdict()` gives the pydantic model."""

    steps: list[Step]
    final_answer_match: bool
    v3: V3 | None = None  # VGR v3; None unless scored as v3
    v4: V4 | None = None  # VGR v4 (the default); None when scored as v2 or v3

    @property
    def n_correct(self) -> int:
        return sum(1 for s in self.steps if s.correct)

    def error_counts(self) -> dict[str, int]:
        return error_counts(self.steps)

    @property
    def vgr(self) -> float | None:
        """The score; None only under v4 for a response the reader cannot read (`v4.reason`)."""
        if self.v4 is not None:
            return self.v4.vgr
        return self.v3.vgr if self.v3 is not None else vgr_of(self.steps, self.final_answer_match)

    def to_verdict(self) -> JudgeVerdict:
        return JudgeVerdict(
            steps=[JudgeStep(claim=s.claim, correct=s.correct, error_type=s.error_type, kind=s.kind,  # type: ignore[arg-type]
                             relevant=s.relevant) for s in self.steps],
            final_answer_match=self.final_answer_match,
        )


def _notation(ctx: Context) -> Notation:
    def weight(a: str, b: str) -> float | None:
        for g in ctx.graphs:
            if g.asked.has_edge(a, b):
                return float(g.asked.edges[a, b].get("weight", 1))
        return None

    return Notation(ctx.names.__contains__, ctx.facts.paired, ctx.facts.weighted, ctx.facts.task,
                    ctx.facts.query, weight)


def score_response(evidence: Evidence, text: str | None, *, final_match: bool,
                   gold: Mapping[str, Any] | None = None, gold_value: float | None = None,
                   vgr_version: str = DEFAULT_VGR_VERSION, program_output: str | None = None) -> RuleVerdict:
    """Step-level verdict of one response. `final_match` is F: the benchmark verifier's verdict on the
    response's final answer (the sample record's verdict == "correct"), given by the caller. `gold` and
    `gold_value` (the exact solver's answer and value, from the caller) give v3 its critical facts;
    `vgr_version` "v2" scores as rule-v2 did (for old runs)."""
    if vgr_version not in VGR_VERSIONS:
        raise ValueError(f"vgr_version {vgr_version!r}: expected one of {', '.join(VGR_VERSIONS)}")
    if vgr_version == "v4":
        v4 = score_text(evidence, text, final_match=bool(final_match), gold=gold, gold_value=gold_value,
                        program_output=program_output)
        return RuleVerdict(steps=v4_steps(v4), final_answer_match=bool(final_match), v4=v4)
    ctx = context_for(evidence)
    steps = ClaimScanner(ctx, _notation(ctx)(claims_region(text))).run() if text else []
    v3 = v3_of(ctx, steps, gold, gold_value, bool(final_match), evidence) if vgr_version == "v3" else None
    return RuleVerdict(steps=steps, final_answer_match=bool(final_match), v3=v3)


def v4_steps(v4: V4) -> list[Step]:
    """The judged claims of a v4 verdict as step records (neutral claims, which neither earn nor cost, are
    left out): derived claims are inferences, perception claims readings."""
    out: list[Step] = []
    seen: set[tuple[Any, ...]] = set()
    for it in v4.checked:
        if it.truth == "neutral" or it.key in seen:
            continue
        seen.add(it.key)
        c = it.claim
        text = f"{c.kind} {' '.join(c.nodes)}" + (f" {c.prop}" if c.prop else "") + \
            (f" = {c.value:g}" if c.value is not None else "")
        out.append(Step(c.pos, it.key, text[:160], it.truth == "true", it.error_type,
                        "inference" if c.derived else "reading", True))
    return out


# --------------------------------------------------------------------------------------------- synthetic


def _col_witness(evidence: Evidence, chi: int) -> list[str]:
    """Why χ colours are needed: a clique of χ nodes, or (χ = 3 without a triangle) an odd cycle."""
    import networkx as nx

    from judge.critical import odd_cycle

    g = evidence.facts.graphs[0].asked
    clique = next((sorted(c) for c in nx.find_cliques(g) if len(c) >= chi), None) if chi >= 2 else None
    if clique:
        return [f"{', '.join(clique[:chi])} form a clique."]
    cyc = odd_cycle(g) if chi == 3 else None
    return [f"Odd cycle: {' -> '.join([*cyc, cyc[0]])}."] if cyc else []


def demo_response(evidence: Evidence, gold_answer: Mapping[str, Any], *, mistakes: int = 0,
                  seed: int = 0) -> str:
    """A well-formed reasoning trace in the benchmark's envelope: it reads the asked graph's edges (with
    colours and weights), states the gold answer's path/set, and, with `mistakes`, misreads that many
    edges. Used by the demo baselines, the tests and the benches; deterministic for a seed."""
    import json
    import random

    rng = random.Random(seed)
    lines = []
    for g in evidence.facts.graphs:
        if len(evidence.facts.graphs) > 1:
            lines.append(f"Graph {g.index + 1}:")
        for u, v in sorted(edge_key(a, b) for a, b in g.asked.edges()):
            w = g.asked.edges[u, v].get("weight")
            s = f"{u}({g.drawn_color.get(u, 'sky')})--{v}({g.drawn_color.get(v, 'sky')})"
            lines.append(s + (f", weight {w}" if w is not None and evidence.facts.weighted else ""))
        nodes = sorted(g.asked.nodes)
        if nodes:
            a = nodes[0]
            nb = sorted(g.asked[a])
            if nb:
                lines.append(f"{a} is connected to {', '.join(nb)}.")
    all_nodes = sorted({n for g in evidence.facts.graphs for n in g.graph})
    for _ in range(mistakes):
        u, v = rng.sample(all_nodes, 2) if len(all_nodes) >= 2 else (all_nodes[0], all_nodes[0])
        g0 = evidence.facts.graphs[0]
        if not g0.graph.has_edge(u, v):
            lines.append(f"I also see the edge {u}-{v}.")
    path = gold_answer.get("Path") or gold_answer.get("Tour") or gold_answer.get("Cycle")
    if path and len(path) >= 2:
        total = gold_answer.get("Distance", gold_answer.get("Length", gold_answer.get("Diameter")))
        chain = " -> ".join(str(p) for p in path)
        if gold_answer.get("Path") and evidence.facts.weighted and total is not None:
            # the running distance at every node: what a shortest-path argument establishes
            g = evidence.facts.graphs[0].asked
            run, parts = 0.0, [str(path[0])]
            for a, b in zip(path, path[1:], strict=False):
                w = g.edges[a, b].get("weight", 1) if g.has_edge(a, b) else 0
                run += float(w)
                parts.append(f"{b} ({run:g})")
            chain = " -> ".join(parts)
        lines.append(f"Path: {chain}" + (f", total {total}" if total is not None else "") + ".")
    if isinstance(gold_answer.get("Coloring"), dict):
        lines += [f"{n}: color {c}" for n, c in sorted(gold_answer["Coloring"].items())]
        lines += _col_witness(evidence, len(set(gold_answer["Coloring"].values())))
    if gold_answer.get("CommonNeighbors") is not None:
        # the derivation of a common-neighbour set: both query nodes' neighbourhoods, then their overlap
        g = evidence.facts.graphs[0].asked
        for q in ("source", "target"):
            n = str(evidence.facts.query.get(q))
            if n in g:
                lines.append(f"Neighbours of {n}: {', '.join(sorted(g[n]))}.")
        if gold_answer["CommonNeighbors"]:
            lines.append(f"Common neighbours: {', '.join(str(x) for x in gold_answer['CommonNeighbors'])}.")
    for key in ("Clique", "IndependentSet", "Cover"):
        if gold_answer.get(key):
            word = {"Clique": "clique", "IndependentSet": "independent set", "Cover": "vertex cover"}[key]
            lines.append(f"{', '.join(gold_answer[key])} form a {word}.")
    if evidence.facts.paired and isinstance(gold_answer.get("Mapping"), dict):
        pairs = [f"{a} -> {b}" for a, b in sorted(gold_answer["Mapping"].items()) if b is not None]
        lines.append("Graph 1 to Graph 2 mapping: " + "; ".join(pairs) + ".")
    return (
        "<root><reasoning>" + "\n".join(lines) + "</reasoning><final_answer>"
        + json.dumps(dict(gold_answer), ensure_ascii=False) + "</final_answer></root>"
    )
