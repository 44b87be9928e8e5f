"""The grounded LLM judge (template vgr_judge_v3): what of a judge's verdict is believed, and what code decides.

1. **Quote check.** A step's `quote` must occur in the response's reasoning (before its final answer block,
   `judge.rule_scorer.claims_region`) after normalisation (HTML entities, Unicode NFKC, case, all whitespace
   dropped). A step without a quote or whose quote is not there is dropped: an invented claim never counts.
2. **Fact in quote.** A structured fact must be what the quote says: every node it names occurs in the
   quote as a word (a path's nodes in order, either way round), a number value as a number, a colour as a
   word. A fact not in its quote is dropped too (a real quote cannot carry an invented fact).
3. **Code check.** A structured fact (`judge.schema.FACT_TYPES`) is checked against the graph by the rule
   scorer's checks (`judge.rule_checks.ClaimChecks`), which set `correct`, `error_type`, `kind` and task
   relevance; the judge's labels are only recorded. Under v2 a step earns only when code calls it relevant
   *and* the judge says it leads to the final answer (the judge can withhold credit, never grant it); v3
   credits critical facts, decided by code. On paired tasks (GED/MCS) a one-graph fact that names no graph
   is `unknown` unless both graphs agree on it. COL colour classes are checked together: two adjacent
   nodes in one class are one error (`clash`).
4. **Unstructured steps** keep the judge's labels but never earn: only a judge's "incorrect" counts.
5. **Dedupe by fact.** Steps carry the rule scorer's semantic key (a path and its reverse, a cycle and its
   rotations are one key), so paraphrases of one fact are one step; unstructured steps merge by quote.

The result is a list of the rule scorer's `Step`s (plus what the judge said), so the VGR formula scores an
LLM judgment and a rule judgment the same way (`grounded_fields`, the one seam to the formula).
"""

from __future__ import annotations

import html
import json
import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from judge.evidence import Evidence
from judge.reader import Claim, Lexicon, read
from judge.rule_checks import ClaimChecks, Context, Step, context_for
from judge.rule_grammar import edge_key
from judge.rule_scorer import claims_region
from judge.rule_v3 import v3_of
from judge.schema import Fact, JudgeStep, claim_key, verdict_fields
from judge.vgr4 import lexicon

_SPACE = re.compile(r"\s+")
_WORD = re.compile(r"[0-9A-Za-z_]+")
_NUMBER = re.compile(r"(?<![A-Za-z_])\d+(?:\.\d+)?")
_THOUSANDS = re.compile(r"(?<=\d)[,\u202f\u00a0'](?=\d{3}(?!\d))")
# the set property a `set` fact names (the v3 schema's words, and plain spellings a judge may use)
_SET_LABELS = {
    "clique": "clique", "maximum clique": "clique",
    "independent_set": "independent set", "independent set": "independent set",
    "vertex_cover": "vertex cover", "vertex cover": "vertex cover", "cover": "vertex cover",
    "common_neighbors": "common", "common neighbors": "common", "common_neighbours": "common",
    "common neighbours": "common", "common": "common",
}
Truth = Literal["true", "false", "unknown"]


def normalise(text: str) -> str:
    """What the quote check compares: entities decoded (the judge saw the response escaped), NFKC,
    casefolded, every whitespace dropped (line breaks and spacing are layout, not content)."""
    return _SPACE.sub("", unicodedata.normalize("NFKC", html.unescape(text)).casefold())


def _words(text: str) -> list[str]:
    return [w.casefold() for w in _WORD.findall(unicodedata.normalize("NFKC", html.unescape(text)))]


def _numbers(text: str) -> list[float]:
    t = _THOUSANDS.sub("", unicodedata.normalize("NFKC", html.unescape(text)))
    return [float(x) for x in _NUMBER.findall(t)]


def _label(value: float | str | None) -> str:
    """A word value as compared: `1`, `1.0` and `"1"` are one colour class."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return " ".join(str(value).casefold().split()) if value is not None else ""


def _run_in(seq: list[str], nodes: list[str]) -> bool:
    """Whether `nodes` occur as one contiguous run of `seq`, either way round (a cycle's closing node may be
    left implicit)."""
    runs = [nodes, nodes[::-1]]
    if len(nodes) > 2 and nodes[0] == nodes[-1]:  # a cycle: any rotation, with or without its closing node
        ring = nodes[:-1]
        rots = [r[k:] + r[:k] for r in (ring, ring[::-1]) for k in range(len(r))]
        runs = [x for r in rots for x in (r, [*r, r[0]])]
    k = len(seq)
    return any(seq[i:i + len(r)] == r for r in runs for i in range(k - len(r) + 1))


def fact_in_quote(fact: Fact, quote: str, names: frozenset[str] | None = None) -> bool:
    """Whether the quote states the fact: its nodes occur as words (a path's in order, either way round), a
    number value as a number, a colour (drawn or assigned class) as a word. With the instance's node
    `names`, a path's nodes must be one contiguous run of the node names the quote writes (as spelt in
    the graph): `A -> B -> C` states the path A, B, C, not A, C."""
    if names is not None and fact.type == "path" and all(n is not None and n in names for n in fact.nodes):
        seq = [w for w in _WORD.findall(unicodedata.normalize("NFKC", html.unescape(quote))) if w in names]
        if all(n in seq for n in fact.nodes) and not _run_in(seq, [str(n) for n in fact.nodes]):
            return False
    words = _words(quote)
    flat = normalise(quote)
    names = [n.casefold() for n in fact.nodes if n is not None]
    if not names or any(not n for n in names) or (fact.nodes and fact.nodes[0] is None):
        return False

    def at(name: str, start: int) -> int:
        """Index after the first occurrence of `name` in the quote's words from `start`, or -1."""
        if _WORD.fullmatch(name):
            try:
                return words.index(name, start) + 1
            except ValueError:
                return -1
        return start if normalise(name) in flat else -1

    def in_order(seq: list[str]) -> bool:
        pos = 0
        for n in seq:
            pos = at(n, pos)
            if pos < 0:
                return False
        return True

    if fact.type == "path":
        orders = [names, names[::-1]]
        if len(names) > 2 and names[0] == names[-1]:  # a cycle: any rotation, either way round
            ring = names[:-1]
            orders = [r[k:] + r[:k] for r in (ring, ring[::-1]) for k in range(len(r))]
        if not any(in_order(o) for o in orders):
            return False
    elif any(at(n, 0) < 0 for n in names):
        return False
    if isinstance(fact.value, float):
        if not any(abs(x - fact.value) < 1e-6 for x in _numbers(quote)):
            return False
    elif fact.type in ("color", "assign") and fact.value is not None:
        word = _label(fact.value)
        if _WORD.fullmatch(word):
            if word not in words and not (word.isdigit() and float(word) in _numbers(quote)):
                return False
        elif normalise(word) not in flat:
            return False
    return True


def _same_walk(a: list[str], b: list[str]) -> bool:
    if a == b or a == b[::-1]:
        return True
    if len(a) > 2 and a[0] == a[-1] and len(b) > 2 and b[0] == b[-1]:
        return _canonical_path(a) == _canonical_path(b)
    return False


def _near(x: float | None, y: float | None) -> bool:
    return x is not None and y is not None and abs(x - y) < 1e-6


def reader_states(fact: Fact, quote: str, lex: Lexicon) -> bool:
    """Whether the claim reader, run on the quote alone, reads the fact's relation there (not only its node
    names): `A: B, C` states the adjacencies A-B and A-C, never the edge B-C. Colours and degrees, which the
    reader does not read and which never earn, are grounded by `fact_in_quote` alone."""
    if fact.type in ("color", "degree", "none"):
        return True
    nodes = [str(n) for n in fact.nodes if n is not None]
    if any(n not in lex.names for n in nodes):
        return True  # a node the graph does not have: such a fact can only be false (an error), never credit
    claims: list[Claim] = read(quote, lex).claims
    value = fact.value if isinstance(fact.value, float) else None
    if fact.type == "mapping" and (len(fact.nodes) < 2 or fact.nodes[1] is None):
        return True  # a deletion: the reader has no form for it; its node is checked in the quote
    for c in claims:
        cn = list(c.nodes)
        if fact.type == "edge" and len(nodes) == 2:
            u, v = nodes
            if c.kind in ("edge", "pairnum") and {u, v} == set(cn) and (value is None or _near(c.value, value)):
                return True
            if c.kind == "walk" and any({u, v} == {a, b} for a, b in zip(cn, cn[1:] + cn[:1] if c.closed else cn[1:],
                                                                         strict=False)):
                hop = len(cn) == 2 and (_near(dict(c.nums).get(1), value) or _near(c.value, value))
                if value is None or hop:
                    return True
            if c.kind in ("adj", "neigh") and ((cn[0] == u and v in cn[1:]) or (cn[0] == v and u in cn[1:])):
                return value is None
        elif fact.type == "non_edge" and len(nodes) == 2:
            if c.neutral and set(nodes) <= set(cn):
                return True
        elif fact.type == "distance" and len(nodes) == 2:
            if c.kind in ("dist", "pairnum") and set(cn) == set(nodes) and _near(c.value, value):
                return True
            if c.kind == "walk" and {cn[0], cn[-1]} == set(nodes) and (
                    _near(c.value, value) or _near(dict(c.nums).get(len(cn) - 1), value)):
                return True
            starts = {x.nodes[0] for x in claims if x.kind == "walk"}
            if c.kind == "walk" and any(  # a running total beside a node of a walk that starts at the other end
                    _near(v, value) and ((cn[i] == nodes[1] and nodes[0] in starts)
                                         or (cn[i] == nodes[0] and nodes[1] in starts)) for i, v in c.nums):
                return True
        elif fact.type == "path" and c.kind == "walk":
            walk = cn + [cn[0]] if c.closed else cn
            if _same_walk(walk, nodes) or _same_walk(cn, nodes):
                total = c.value if c.value is not None else dict(c.nums).get(len(cn) - 1)
                return value is None or _near(total, value)
        elif fact.type == "set" and c.kind == "set":
            want = _SET_LABELS.get(_label(fact.value).replace("_", " "), _SET_LABELS.get(_label(fact.value), ""))
            if set(cn) == set(nodes) and (not want or want == c.prop):
                return True
        elif fact.type == "neighbors" and c.kind in ("adj", "neigh") and nodes and cn[0] == nodes[0]:
            if set(cn[1:]) == set(nodes[1:]):
                return True
        elif fact.type == "mapping" and c.kind == "map" and cn == nodes[:2]:
            return True
        elif fact.type == "assign" and c.kind == "assign" and cn == nodes[:1] and c.prop == _label(fact.value):
            return True
    return False


# ------------------------------------------------------------------------------------------------ checks


def _canonical_path(nodes: list[str]) -> list[str]:
    """One spelling of an undirected path (it or its reverse) and of a cycle (any rotation, either way)."""
    if len(nodes) > 2 and nodes[0] == nodes[-1]:
        ring = nodes[:-1]
        best = None
        for seq in (ring, ring[::-1]):
            for k in range(len(seq)):
                r = seq[k:] + seq[:k]
                if best is None or r < best:
                    best = r
        assert best is not None
        return [*best, best[0]]
    return min(nodes, nodes[::-1])


def _checks(ctx: Context, quote: str, graph: int | None) -> ClaimChecks:
    c = ClaimChecks(ctx, quote)
    # which graph a fact is about comes from the judge's structured `graph`, not from words in the quote
    if len(ctx.graphs) > 1 and graph in (1, 2):
        c.gctx_pos, c.gctx_idx = [0], [int(graph) - 1]
    else:
        c.gctx_pos, c.gctx_idx = [], []
    return c


def _num(v: float | str | None) -> float | None:
    if isinstance(v, float):
        return v
    try:
        return float(str(v).strip()) if v is not None else None
    except ValueError:
        return None


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
class Grounded:
    steps: list[GroundedStep] = field(default_factory=list)
    dropped: list[dict[str, Any]] = field(default_factory=list)  # {quote, fact, reason}
    final_answer_match: bool = False  # the judge's own opinion (recorded, never scored)
    v3: Any = None  # the VGR v3 result, when the formula is v3 (`verdict_fields` reads it)

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
                 "judge_relevant": s.judge_relevant} for s in self.steps]


def ground_verdict(evidence: Evidence, response: str, steps: Iterable[JudgeStep],
                   judge_final_match: bool = False) -> Grounded:
    """The grounded step list of a v3 judgment (see the module docstring); order of first appearance."""
    ctx = context_for(evidence)
    region = normalise(claims_region(response or ""))
    out = Grounded(final_answer_match=bool(judge_final_match))
    kept: list[tuple[JudgeStep, Fact | None]] = []
    for st in steps:
        quote = st.quote or ""
        fact = st.fact if st.fact is not None and st.fact.type != "none" else None
        q = normalise(quote)
        reason = None
        if len(q) < 2:
            reason = "no quote"
        elif q not in region:
            reason = "quote not in the response"
        elif fact is not None and not fact_in_quote(fact, quote, ctx.names):
            reason = "fact not in its quote"
        elif fact is not None and not reader_states(fact, quote, lexicon(evidence, ctx)):
            reason = "the quote does not state the fact"
        if reason is not None:
            out.dropped.append({"quote": quote[:300], "fact": None if st.fact is None else st.fact.model_dump(),
                                "reason": reason})
            continue
        kept.append((st, fact))
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
                    final_match: bool) -> dict[str, Any]:
    """The score columns of a grounded judgment: VGR v3 over the grounded, code-checked steps, exactly as for
    the rule judge (credit = the critical facts of the closest optimum, decided by code)."""
    g.v3 = v3_of(context_for(evidence), g.v3_steps(), gold_answer, gold_value, final_match, evidence)
    fields = verdict_fields(g, final_match)
    fields["steps"] = json.dumps(g.steps_json(), ensure_ascii=False)
    fields["n_dropped"] = len(g.dropped)
    return fields
