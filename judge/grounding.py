"""The grounded LLM judge (template vgr_judge_v3): what of a judge's verdict is believed, and what code decides.

1. **Quote check.** A step's `quote` must occur in the response's reasoning (before its final answer block,
   `judge.rule_scorer.claims_region`) after normalisation (HTML entities, Unicode NFKC, case, all whitespace
   dropped). A step without a quote or whose quote is not there is dropped: an invented claim never counts.
2. **Fact in quote, relation in quote** (`judge.grounding_facts`). A structured fact must be what the quote says:
   its nodes occur there as words (a path's in order), a number value as a number; and the claim reader, run on
   the quote alone, must read the fact's relation there (`A: B, C` states A-B and A-C, never B-C; a node list
   states no path, set or mapping). Otherwise the step is dropped.
3. **VGR v4 (the default): the rule judge's own judge.** The claims of the kept steps (the reader's claim that
   states each fact, kept whole: a path's running totals, a negation) are judged by `judge.vgr4.judge_reading`
   exactly as the rule judge's: each claim checked whole against the graph, credit only for the optimum that one
   consistent candidate establishes, true perception never credit, false claims cost, F the exact verifier's.
   The claims stand in the response's line order, whatever order the judge listed them in, so a walk written hop
   by hop, a mapping or a colouring is the run the response writes; a claim the response itself rejects in
   context is neutral. So the LLM judge and the rule judge differ only in who reads. Steps without a structured
   fact are recorded with the judge's label and never scored.
4. **VGR v3 / v2** (`vgr_version`): a structured fact is checked by the v3 rule scorer's checks
   (`judge.rule_checks.ClaimChecks`), which set `correct`, `error_type`, `kind` and task relevance; the judge's
   labels are only recorded. Under v2 a step earns only when code calls it relevant *and* the judge says it
   leads to the final answer; v3 credits critical facts, decided by code. On GED/MCS a one-graph fact that names
   no graph is `unknown` unless both graphs agree on it; two adjacent nodes in one colour class are one error
   (`clash`); an unstructured step the judge calls wrong costs.
5. **Dedupe by fact.** Steps carry the checker's semantic key (a path and its reverse, a cycle and its
   rotations are one key), so paraphrases of one fact are one step; unstructured steps merge by quote.

`grounded_fields` is the one seam to the formula: an LLM judgment and a rule judgment are scored the same way.
"""

from __future__ import annotations

import bisect
import dataclasses
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from evalcore.evidence import Evidence
from judge.grounding_facts import (
    _SET_LABELS,
    _canonical_path,
    _label,
    _num,
    claim_of_fact,
    fact_in_quote,
    normalise,
    reader_states,
    reading_of,
    stated_claims,
)
from judge.reader import Claim, Lexicon, Reading, read
from judge.rule_checks import ClaimChecks, Context, Step, context_for
from judge.rule_grammar import edge_key
from judge.rule_scorer import claims_region
from judge.rule_v3 import v3_of
from judge.schema import DEFAULT_VGR_VERSION, Fact, JudgeStep, claim_key, verdict_fields
from judge.vgr4 import UNREADABLE, V4, judge_reading, lexicon
from judge.vgr4_objects import runs_of

__all__ = ["Grounded", "GroundedStep", "claim_of_fact", "fact_in_quote", "ground_verdict", "grounded_fields",
           "normalise", "reader_states", "stated_claims"]
Truth = Literal["true", "false", "unknown"]



def _checks(ctx: Context, quote: str, graph: int | None) -> ClaimChecks:
    c = ClaimChecks(ctx, quote)
    # which graph a fact is about comes from the judge's structured `graph`, not from words in the quote
    if len(ctx.graphs) > 1 and graph in (1, 2):
        c.gctx_pos, c.gctx_idx = [0], [int(graph) - 1]
    else:
        c.gctx_pos, c.gctx_idx = [], []
    return c


def _check_one(ctx: Context, fact: Fact, quote: str, graph: int | None) -> Step | None:
    """The rule scorer's step for a structured fact (None: the fact does not fit its type)."""
    c = _checks(ctx, quote, graph)
    end, task = len(quote), ctx.facts.task
    t, value = fact.type, _num(fact.value)
    nodes = [n for n in fact.nodes if n is not None]
    if t == "mapping" and len(fact.nodes) == 2 and len(ctx.graphs) == 2 and fact.nodes[0] is not None:
        if fact.nodes[1] is None:
            return _deletion(c, quote, fact.nodes[0])
        c.mapping_claim(0, end, fact.nodes[0], fact.nodes[1])
    elif len(nodes) != len(fact.nodes):
        return None
    elif t == "edge" and len(nodes) == 2:
        c.edge_claim(0, end, nodes[0], nodes[1], value if ctx.facts.weighted else None)
    elif t == "non_edge" and len(nodes) == 2:
        return _non_edge(c, quote, nodes[0], nodes[1])
    elif t == "distance" and len(nodes) == 2 and value is not None:
        c.distance_claim(0, end, nodes[0], nodes[1], value)
    elif t == "path" and len(nodes) >= 2:
        c.path_claim(0, end, _canonical_path(nodes), value)
    elif t == "set" and nodes and _label(fact.value) in _SET_LABELS:
        c.set_claim(0, end, _SET_LABELS[_label(fact.value)], nodes)
    elif t == "neighbors" and len(nodes) >= 2:
        c.adjacency_claim(0, end, nodes[0], nodes[1:], _label(fact.value) == "complete")
    elif t == "color" and len(nodes) == 1 and isinstance(fact.value, str) and fact.value.strip():
        c.color_claim(0, end, nodes[0], fact.value)
    elif t == "assign" and len(nodes) == 1 and fact.value is not None and task == "COL":
        return _assign(c, quote, nodes[0], _label(fact.value))
    elif t == "degree" and len(nodes) == 1 and value is not None and value.is_integer():
        c.degree_claim(0, end, nodes[0], int(value))
    else:
        return None
    return next(iter(c.steps.values()), None)


def _non_edge(c: ClaimChecks, quote: str, u: str, v: str) -> Step:
    """`u` and `v` are not adjacent in the graph asked on (what an independent set / a non-clique needs)."""
    cands = c.graph_at(0)
    gs = [c.ctx.graphs[i] for i in cands]
    ok = any(u in g.asked and v in g.asked and u != v and edge_key(u, v) not in g.asked_edges for g in gs)
    g = gs[0]
    err = "perception" if edge_key(u, v) in g.drawn_edges or u not in c.ctx.names or v not in c.ctx.names \
        else "visual_reasoning"
    relevant = c.f.task in ("MIS", "MCP", "MVC", "COL")
    return Step(0, ("nonedge", tuple(cands), edge_key(u, v)), quote, ok, "none" if ok else err, "reading", relevant)


def _deletion(c: ClaimChecks, quote: str, a: str) -> Step:
    """Node `a` of graph 1 is deleted (maps to nothing): a choice, false only if `a` is no node of graph 1."""
    g = c.ctx.graphs[0]
    ok = a in g.asked
    return Step(0, ("map", a, None), quote, ok, "none" if ok else c.node_error(g, a), "inference", True)


def _assign(c: ClaimChecks, quote: str, node: str, colour: str) -> Step:
    """A colour class for `node` in the response's colouring: a choice, so only a node outside the graph
    asked on makes it wrong; two adjacent nodes in one class are one error of the colouring (`_clashes`)."""
    g = c.ctx.graphs[0]
    ok = node in g.asked
    return Step(0, ("assign", node, colour), quote, ok, "none" if ok else c.node_error(g, node), "inference", True)


def _clashes(ctx: Context, steps: list[GroundedStep]) -> list[GroundedStep]:
    """One error per edge of the asked graph whose two ends the response puts in one colour class, keyed
    `("clash", u, v)` like the VGR v3 rule scorer's, so the two count it once."""
    said: dict[str, tuple[str, str]] = {}
    for s in steps:
        if s.key[0] == "assign" and s.correct:
            said.setdefault(s.key[1], (s.key[2], s.quote))
    out = []
    for a, b in sorted(edge_key(u, v) for u, v in ctx.graphs[0].asked.edges()):
        if a in said and b in said and said[a][0] == said[b][0]:
            claim = f"{a} and {b} are adjacent and both in colour class {said[a][0]}"
            out.append(GroundedStep(0, ("clash", a, b), claim, False, "text_reasoning", "inference", True,
                                    quote=said[b][1], checked="code", truth="false"))
    return out


# ------------------------------------------------------------------------------------------------ grounding


@dataclass
class GroundedStep(Step):
    """A rule-scorer step made from a judge's step: what the judge said is kept beside what counts."""

    quote: str = ""
    fact: Fact | None = None  # the structured fact (None: an unstructured step)
    truth: Truth = "true"  # code's verdict on a structured fact; unstructured: the judge's label
    judge_correct: bool = True
    judge_relevant: bool = False
    checked: str = "code"  # code: a structured fact checked against the graph; judge: unstructured


@dataclass
class KeptClaims:
    """The claims VGR v4 judges for one kept step (empty: nothing to judge), where its quote starts."""

    step: JudgeStep
    fact: Fact | None
    quote: str
    line: int  # the line of the response's reasoning its quote starts on
    claims: list[Claim] = field(default_factory=list)
    context: bool = False  # a line of the response the judge did not quote, inside a mapping / colouring it did


@dataclass
class Grounded:
    steps: list[GroundedStep] = field(default_factory=list)
    dropped: list[dict[str, Any]] = field(default_factory=list)  # {quote, fact, reason}
    final_answer_match: bool = False  # the judge's own opinion (recorded, never scored)
    v3: Any = None  # the VGR v3 result, when the formula is v3 (`verdict_fields` reads it)
    v4: V4 | None = None  # the VGR v4 result, when the formula is v4 (the default)
    kept: list[KeptClaims] = field(default_factory=list)  # v4: the claims of every kept step
    unscored: list[GroundedStep] = field(default_factory=list)  # v4: recorded, neither credit nor error
    neutral: set[tuple[Any, ...]] = field(default_factory=set)  # v4: claims the response itself negates/rejects
    whole: Reading | None = None  # v4: the claim reader's reading of the whole response (for "unreadable")

    def v3_steps(self) -> list[GroundedStep]:
        """The steps the VGR v3 formula reads: every error and every correct structured fact. v3 credits the
        critical facts of an optimum, decided by code, so whether a fact leads to the answer is the
        solver's certificate's call; the judge's `leads_to_answer` is recorded beside it, not scored (an
        honest judge that misses a fact's role cannot lower the score, a hostile one cannot raise it)."""
        return [s for s in self.steps if not s.correct or s.fact is not None]

    def steps_json(self) -> list[dict[str, Any]]:
        return [{"claim": s.claim, "quote": s.quote, "fact": None if s.fact is None else s.fact.model_dump(),
                 "truth": s.truth, "kind": s.kind, "relevant": s.relevant, "correct": s.correct,
                 "error_type": s.error_type, "checked": s.checked, "judge_correct": s.judge_correct,
                 "judge_relevant": s.judge_relevant} for s in [*self.steps, *self.unscored]]


def _ident(c: Claim) -> tuple[Any, ...]:
    return (c.kind, c.nodes, c.value, c.prop)


def ground_verdict(evidence: Evidence, response: str, steps: Iterable[JudgeStep],
                   judge_final_match: bool = False) -> Grounded:
    """The grounded step list of a judgment (see the module docstring); order of first appearance. `steps` are
    the code-checked steps (the VGR v3 checker's); `kept` the claims VGR v4 judges (`grounded_fields`)."""
    ctx = context_for(evidence)
    lex = lexicon(evidence, ctx)
    text = claims_region(response or "")
    lines = [normalise(ln) for ln in text.split("\n")]
    starts = [0]
    for ln in lines:
        starts.append(starts[-1] + len(ln))
    region = "".join(lines)
    out = Grounded(final_answer_match=bool(judge_final_match))
    kept: list[tuple[JudgeStep, Fact | None]] = []
    for st in steps:
        quote = st.quote or ""
        fact = st.fact if st.fact is not None and st.fact.type != "none" else None
        q = normalise(quote)
        reason = None
        claims: list[Claim] | None = []
        at = region.find(q) if len(q) >= 2 else -1
        if len(q) < 2:
            reason = "no quote"
        elif at < 0:
            reason = "quote not in the response"
        elif fact is not None and not fact_in_quote(fact, quote, ctx.names):
            reason = "fact not in its quote"
        elif fact is not None and (claims := stated_claims(fact, quote, lex)) is None:
            reason = "the quote does not state the fact"
        if reason is not None:
            out.dropped.append({"quote": quote[:300], "fact": None if st.fact is None else st.fact.model_dump(),
                                "reason": reason})
            continue
        kept.append((st, fact))
        line = max(0, bisect.bisect_right(starts, at) - 1)
        out.kept.append(KeptClaims(st, fact, " ".join(quote.split())[:300], line, claims or []))
    # where each kept step stands in the response, counted in lines: a line that repeats a quoted one (a fact stated
    # again in another notation, which the judge lists once) is not counted, so it cannot cut a run in two
    # (each distinct quote once: a judge quotes one line for each fact of it)
    quoted = list(dict.fromkeys(normalise(kc.step.quote or "") for kc in out.kept))
    # a deleted node's line belongs to the mapping around it: it never cuts that mapping's run in two
    deletion = {kc.line for kc in out.kept if kc.fact is not None and kc.fact.type == "mapping" and not kc.claims}
    firsts = {kc.line for kc in out.kept} - deletion
    rank, r = [], 0
    for i, ln in enumerate(lines):
        rank.append(r)
        if ln and i not in deletion and (i in firsts or not any(ln.rstrip(".;,") in q for q in quoted)):
            r += 1
    starts_at = [kc.line for kc in out.kept]
    for kc in out.kept:
        kc.line = rank[kc.line]
    out.kept += _run_context(out.kept, text.split("\n"), lines, rank, set(starts_at), quoted, lex)
    # a claim the response negates or rejects in its context ("… Rejected." on the next line) is neutral, as the
    # rule reader reads it: the whole response is read once for that, and for whether it is readable at all (the
    # reading is shared with other judgments of the same response: looked at, never changed)
    out.whole = reading_of(text, lex)
    said = {_ident(c) for c in out.whole.claims if not c.neutral}
    out.neutral = {_ident(c) for c in out.whole.claims if c.neutral} - said
    seen: set[Any] = set()
    for i, (st, fact) in enumerate(kept):
        quote = " ".join((st.quote or "").split())[:300]
        g = _grounded(ctx, st, fact, quote) if fact is not None else None
        if g is None:  # no structured fact, or one that does not fit its type: the judge's step, unstructured
            g = _unstructured(st, quote)
        if g.key in seen:
            continue
        seen.add(g.key)
        g.pos = i
        out.steps.append(g)
    if ctx.facts.task == "COL":
        out.steps += _clashes(ctx, out.steps)
    return out


def _run_context(kept: list[KeptClaims], raw: list[str], lines: list[str], rank: list[int], starts: set[int],
                 quoted: list[str], lex: Lexicon) -> list[KeptClaims]:
    """The lines the judge did not quote that lie inside (or next to) a mapping or colouring it did quote, with
    the pairs / assignments the reader reads there: a mapping or colouring is the run the response writes (the
    rule judge's `runs_of`, at most one line between), so a judge that quotes only the pairs that fit, out of
    interleaved candidates, cannot assemble a mapping the response never wrote as one."""
    kinds = {c.kind for kc in kept for c in kc.claims if c.kind in ("map", "assign")}
    if not kinds:
        return []
    near = {kc.line for kc in kept if any(c.kind in kinds for c in kc.claims)}
    out: list[KeptClaims] = []
    todo = [i for i, ln in enumerate(lines) if ln and i not in starts and not any(ln.rstrip(".;,") in q for q in quoted)]
    grew = True
    while grew:  # a run grows line by line, as the rule judge's does
        grew = False
        for i in list(todo):
            if not any(rank[i] + d in near for d in (-2, -1, 0, 1, 2)):
                continue
            todo.remove(i)
            claims = [c for c in read(raw[i], lex).claims if c.kind in kinds]
            if claims:
                out.append(KeptClaims(JudgeStep(quote=raw[i].strip(), correct=True), None,
                                      " ".join(raw[i].split())[:300], rank[i], claims, context=True))
                near.add(rank[i])
                grew = True
    return out


def _unstructured(st: JudgeStep, quote: str) -> GroundedStep:
    # never earns (relevant False); a judge's "incorrect" counts as an error
    return GroundedStep(0, ("text", claim_key(quote)), quote, st.correct, st.error_type, st.kind, False,
                        quote=quote, fact=None, truth="true" if st.correct else "false",
                        judge_correct=st.correct, judge_relevant=st.relevant, checked="judge")


def _grounded(ctx: Context, st: JudgeStep, fact: Fact, quote: str) -> GroundedStep | None:
    if len(ctx.graphs) > 1 and fact.type != "mapping" and fact.graph not in (1, 2):
        # a fact about "the graph" of a paired task: true (false) only if true (false) in both graphs,
        # otherwise unknown: it neither earns nor costs, never true by luck
        a, b = (_check_one(ctx, fact, quote, k) for k in (1, 2))
        if a is None or b is None:
            return None
        if a.correct != b.correct:
            return GroundedStep(0, ("ambiguous", *a.key), a.claim, True, "none", a.kind, False,
                                quote=quote, fact=fact, truth="unknown", judge_correct=st.correct,
                                judge_relevant=st.relevant)
        step = a
    else:
        step = _check_one(ctx, fact, quote, fact.graph)
        if step is None:
            return None
    return GroundedStep(0, step.key, step.claim, step.correct, step.error_type, step.kind,
                        bool(step.relevant and st.relevant), quote=quote, fact=fact,
                        truth="true" if step.correct else "false", judge_correct=st.correct,
                        judge_relevant=st.relevant)


def grounded_fields(g: Grounded, evidence: Evidence, gold_answer: Mapping[str, Any], gold_value: float | None,
                    final_match: bool, vgr_version: str = DEFAULT_VGR_VERSION) -> dict[str, Any]:
    """The score columns of a grounded judgment, scored exactly as the rule judge's: VGR v4 (the default) judges
    the kept steps' claims with the rule judge's own judge (`judge.vgr4.judge_reading`: one consistent
    candidate, claims about different objects never pooled, true perception never credit, F the exact
    verifier's), so the two judges differ only in who reads; "v3" scores the code-checked steps with VGR v3."""
    if vgr_version == "v4":
        _judge_v4(g, evidence, gold_answer, gold_value, final_match)
    elif vgr_version == "v3":
        g.v3 = v3_of(context_for(evidence), g.v3_steps(), gold_answer, gold_value, final_match, evidence)
    fields = verdict_fields(g, final_match)
    fields["steps"] = json.dumps(g.steps_json(), ensure_ascii=False)
    fields["n_dropped"] = len(g.dropped)
    return fields


def _judge_v4(g: Grounded, evidence: Evidence, gold_answer: Mapping[str, Any], gold_value: float | None,
              final_match: bool) -> None:
    """VGR v4 over the kept steps' claims, in the order the response states them (a walk written hop by hop, a
    mapping or a colouring is a run of the response's lines, whatever order the judge listed them in); the
    record's steps become v4's checked claims, one per distinct claim."""
    items: list[tuple[int, int, Claim, KeptClaims]] = []
    seen: set[tuple[Any, ...]] = set()
    for k, kc in enumerate(g.kept):
        for c in kc.claims:
            ident, pos = _ident(c), kc.line + c.pos
            if (ident, c.graph, pos) in seen:
                continue  # the same claim of the same line, quoted again (a paraphrase, a repeat)
            seen.add((ident, c.graph, pos))
            c = dataclasses.replace(c, pos=pos, neutral=c.neutral or ident in g.neutral)  # a copy: judging marks it
            items.append((c.pos, k, c, kc))
    items.sort(key=lambda x: (x[0], x[1]))
    reading = Reading(claims=[c for _, _, c, _ in items])
    v4 = judge_reading(evidence, reading, final_match=bool(final_match), gold=gold_answer, gold_value=gold_value)
    whole = g.whole
    if not reading.claims and whole is not None and whole.unreadable and all(kc.fact is None for kc in g.kept):
        # the judge structured nothing and the claim reader cannot read the response: no score, as the rule judge
        # gives (a judge that read degrees or colours did read it: those are perception, a bare answer)
        v4 = V4(None, UNREADABLE, 0.0, 0, 0, 0)
    g.v4 = v4
    steps: list[GroundedStep] = []
    unscored = [_unstructured(kc.step, kc.quote) for kc in g.kept if kc.fact is None and not kc.context]
    for s in unscored:  # the judge's own label on a step it could not structure: recorded, never scored
        s.correct, s.error_type, s.truth = True, "none", "unknown"
    keys: set[tuple[Any, ...]] = set()
    for it, (_, _, c, kc) in zip(v4.checked, items, strict=True):
        if it.key in keys:
            continue
        keys.add(it.key)
        text = f"{c.kind} {' '.join(c.nodes)}" + (f" {c.prop}" if c.prop else "") + \
            (f" = {c.value:g}" if c.value is not None else "")
        truth: Truth = "unknown" if it.truth == "neutral" else ("true" if it.truth == "true" else "false")
        step = GroundedStep(c.pos, it.key, text[:160], truth != "false", it.error_type,
                            "inference" if c.derived else "reading", truth == "true" and c.derived,
                            quote=kc.quote, fact=kc.fact, truth=truth, judge_correct=kc.step.correct,
                            judge_relevant=kc.step.relevant, checked="code")
        (unscored if truth == "unknown" else steps).append(step)
    ctx = context_for(evidence)
    if ctx.facts.task == "COL":  # a stated colouring's clash, as judge_reading counts it: one error per colouring
        asked = ctx.graphs[0].asked
        clashes: dict[tuple[str, str], str] = {}
        for run in runs_of(v4.checked, "assign"):
            e = next((edge_key(u, v) for u, v in asked.edges if u in run and v in run and run[u] == run[v]), None)
            if e is not None:
                clashes.setdefault(e, run[e[0]])
        for (a, b), colour in clashes.items():
            steps.append(GroundedStep(0, ("clash", a, b), f"{a} and {b} are adjacent and both in colour class {colour}",
                                      False, "text_reasoning", "inference", True, checked="code", truth="false"))
    g.steps, g.unscored = steps, unscored
