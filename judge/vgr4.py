"""VGR-Score v4: a reader (`judge.reader`) turns a response into typed claims; this judge checks each derived
claim whole against the graph the question is asked on, groups claims by the object they describe, and
credits the critical facts of the optimum that ONE consistent candidate solution establishes.

Public entry point (stable; the judge card and the stage call it):

    score_text(evidence, text, *, final_match, gold=None, gold_value=None, program_output=None) -> V4
        evidence     judge.evidence.Evidence of the instance
        text         the whole response (its final-answer block is cut off here)
        final_match  F: the exact verifier's verdict on the final answer
        gold, gold_value  the exact solver's answer and optimal value
        program_output    a PoT sample's program stdout (`pot_stdout`): what it prints beyond the final answer
                          is read as claims
    V4.vgr is a float in [0, 100], or None with V4.reason == "unreadable" when the response talks about the
    graph but states nothing the reader can parse, or "partly unreadable" when a critical fact is missing and
    a statement read to nothing could state one, or a statement was misread (`judge_reading`).

Formula (docs/judge.md has the rationale):

    q = K / n   K = critical facts of the credited candidate's optimum that the response states, n = all of them
    E = distinct false claims (perception or derived; neutral and soft claims excluded)
    VGR = 100 × (F·(a + (1−a)·q) + (1−F)·b·q) × (K + 1)/(K + 1 + E),   a = 0.5, b = 0.8
    an instance without critical facts: 100 × F·a / (1 + E)

A *candidate* is a complete object of the asked kind that is optimal (the s–t walk of SD that is a shortest
path, a diametral pair's shortest path or distance, the query pair's neighbourhoods on CN, a Hamiltonian tour
of optimal length, a cycle of optimal length, a set with the property and the optimal size, a proper colouring
with χ classes plus its lower-bound witness, an injective mapping of optimal cost / size). Sub-optimal or
partial objects, solutions of other questions, transcriptions and true negatives are neither credit nor
error; atoms of different objects are never pooled.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from evalcore.evidence import Evidence
from judge.critical import ANSWER_WEIGHT, WRONG_CEILING, critical_facts
from judge.reader import Claim, Lexicon, Reading, lexicon_of, read
from judge.rule_checks import Context, context_for, holds
from judge.rule_grammar import FINAL_ANSWER_TAG, edge_key
from judge.vgr4_objects import Checked, Credit, runs_of

VGR_FORMULA_V4 = "vgr-v4"
UNREADABLE = "unreadable"
PARTLY_UNREADABLE = "partly unreadable"




@dataclass
class V4:
    vgr: float | None
    reason: str | None
    share: float
    n_critical: int
    n_stated: int
    n_errors: int
    checked: list[Checked] = field(default_factory=list)
    candidate: str = ""


def claims_region(text: str) -> str:
    """Everything before the response's last final-answer block."""
    last = None
    for m in FINAL_ANSWER_TAG.finditer(text):
        last = m
    return text[: last.start()] if last is not None else text


def formula(q: float, k: int, e: int, f: bool, has_critical: bool = True) -> float:
    if not has_critical:
        return 100.0 * (ANSWER_WEIGHT if f else 0.0) / (1 + e)
    base = (ANSWER_WEIGHT + (1 - ANSWER_WEIGHT) * q) if f else WRONG_CEILING * q
    return 100.0 * base * (k + 1) / (k + 1 + e)


_LEX: dict[str, Lexicon] = {}


def lexicon(evidence: Evidence, ctx: Context) -> Lexicon:
    lx = _LEX.get(evidence.sha256)
    if lx is None:
        if len(_LEX) > 4096:
            _LEX.clear()
        f = ctx.facts
        lx = _LEX[evidence.sha256] = lexicon_of(ctx.names, f.task, f.query,
                                               [set(g.asked) | set(g.drawn) for g in ctx.graphs])
    return lx


# ------------------------------------------------------------------------------------------ checks


class _Judge:
    def __init__(self, ctx: Context, evidence: Evidence):
        self.ctx, self.ev, self.f = ctx, evidence, ctx.facts
        self.g = ctx.graphs[0].asked
        self.prev_end: tuple[str, float] | None = None  # where the last true walk ended, and its running total
        self.prev_hop = False  # whether that walk was a single hop
        # a single hop from nothing ("A to B costs 5") read either way: its running total may sit at either end
        self.prev_other: tuple[str, float] | None = None
        self.prev_claim: Claim | None = None
        self.runs_on = False  # the walk just checked continues the last one (its numbers run on from there)
        self.guessed: frozenset[int] = frozenset()  # statements read with a number left over (Reading.guessed)

    def w(self, a: str, b: str, g: nx.Graph | None = None) -> float:
        g = self.g if g is None else g
        return float(g.edges[a, b].get("weight", 1)) if self.f.weighted else 1.0

    def dist(self, a: str, b: str) -> float | None:
        return self.ctx.graphs[0].distances(True, self.f.weighted).get(a, {}).get(b)

    def graphs_of(self, c: Claim) -> list[int]:
        if len(self.ctx.graphs) == 1:
            return [0]
        return [c.graph] if c.graph is not None else list(range(len(self.ctx.graphs)))

    def check(self, c: Claim) -> Checked:
        fn = getattr(self, "_" + c.kind)
        self.runs_on = False
        truth, err, key = fn(c)
        if truth == "false" and (c.neutral or c.soft):
            truth = "neutral"
        if truth == "true" and c.neutral:
            truth = "neutral"
        return Checked(c, truth, err if truth == "false" else "none", key, self.runs_on)

    def _edge(self, c: Claim) -> tuple[str, str, tuple]:
        u, v = c.nodes
        e = edge_key(u, v)
        hits = [self.ctx.graphs[i] for i in self.graphs_of(c) if e in self.ctx.graphs[i].drawn_edges
                or e in self.ctx.graphs[i].asked_edges]
        key = ("E", e, c.value)
        if self.f.paired and c.graph is None and hits and len(hits) < len(self.ctx.graphs):
            return "neutral", "none", key  # true in one molecule only and no molecule named
        if not hits:
            return "false", "perception", key
        if c.value is not None and self.f.weighted:
            ws = [float(g.drawn.edges[e].get("weight", 1)) for g in hits if e in g.drawn_edges]
            if not any(abs(x - c.value) < 1e-6 for x in ws):
                return "false", "perception", key
        return "true", "none", key

    def _pairnum(self, c: Claim) -> tuple[str, str, tuple]:
        """A table row `A–B | k`: the edge's weight, or the distance; anything else is not read as an error."""
        u, v = c.nodes
        e = edge_key(u, v)
        g = self.ctx.graphs[0]
        if e in g.drawn_edges and (not self.f.weighted or abs(float(g.drawn.edges[e].get("weight", 1))
                                                              - float(c.value or 0)) < 1e-6):
            return "true", "none", ("E", e, c.value)
        d = self.dist(u, v)
        if d is not None and c.value is not None and abs(d - c.value) < 1e-6:
            c.kind = "dist"
            return "true", "none", ("D", e, c.value)
        return "neutral", "none", ("PN", e, c.value)

    def _adj(self, c: Claim) -> tuple[str, str, tuple]:
        head, listed = c.nodes[0], set(c.nodes[1:])
        key = ("A", head, tuple(sorted(listed)), c.complete)
        for i in self.graphs_of(c):
            g = self.ctx.graphs[i]
            for gg in (g.drawn, g.asked):
                if head in gg and (listed == set(gg[head]) if c.complete else listed <= set(gg[head])):
                    return "true", "none", key
        return "false", "perception", key

    def _neigh(self, c: Claim) -> tuple[str, str, tuple]:
        truth, err, key = self._adj(c)
        return truth, "text_reasoning" if truth == "false" else err, ("NB",) + key[1:]

    def _walk(self, c: Claim) -> tuple[str, str, tuple]:
        got = self._walk_as_written(c)
        if got[0] == "false" and len(c.nodes) == 2 and not c.closed and c.nums and not self.f.paired:
            # one hop has no direction in words ("we reach B from A", "to B via A"): read from its other end,
            # its numbers beside the node it reaches
            other = dataclasses.replace(c, nodes=c.nodes[::-1], nums=tuple((1, v) for _, v in c.nums))
            again = self._walk_as_written(other)
            if again[0] == "true":
                c.nodes, c.nums = other.nodes, other.nums
                return again
        return got

    def _walk_as_written(self, c: Claim) -> tuple[str, str, tuple]:
        nodes = list(c.nodes)
        if c.closed:
            nodes.append(nodes[0])
        fwd = tuple(nodes)
        key = ("W", min(fwd, fwd[::-1]), c.value, c.nums)
        if self.f.paired:
            return "neutral", "none", key
        g = self.g
        for n in nodes:
            if n not in g:
                return "false", "perception" if n not in self.ctx.graphs[0].drawn else "visual_reasoning", key
        run = 0.0
        runs = [0.0]
        for a, b in itertools.pairwise(nodes):
            if a == b or not g.has_edge(a, b):
                drawn = self.ctx.graphs[0].drawn.has_edge(a, b)
                return "false", "visual_reasoning" if drawn else "perception", key
            run += self.w(a, b)
            runs.append(run)
        given = dict(c.nums)
        starts = [float(given.get(0, 0.0))]
        end = next((e for e in (self.prev_end, self.prev_other) if e is not None and e[0] == nodes[0]), None)
        if 0 not in given and end is not None:
            # a walk written hop by hop: its numbers may run on from where the last one ended; after a hop, that
            # is tried first (a hop stated by its weight alone carries the running total on), after a whole
            # walk last (the hop lines that follow a stated path start again from its first node)
            starts.insert(0 if self.prev_hop else 1, end[1])
        for start in starts:
            ok = all(any(abs(said - x) < 1e-6 for x in (runs[i] + start, self.w(nodes[i - 1], nodes[i]), float(i)))
                     for i, said in c.nums if i)
            if ok and (c.value is None or abs(c.value - run) < 1e-6 or abs(c.value - run - start) < 1e-6):
                if end is not None and end is self.prev_other and start == end[1] and self.prev_claim is not None:
                    # it runs on from the other end of the hop before: that hop was written the other way round
                    last = self.prev_claim
                    last.nodes, last.nums = last.nodes[::-1], tuple((1, v) for _, v in last.nums)
                self.prev_claim = c
                self.prev_end = (nodes[-1], start + run)  # where a walk written hop by hop has got to
                self.prev_hop = len(nodes) == 2
                self.prev_other = (nodes[0], run) if self.prev_hop and not start else None
                # it continues the last walk only when a number it states is a total from there on
                self.runs_on = bool(start) and (
                    any(abs(said - runs[i] - start) < 1e-6 for i, said in c.nums if i)
                    or (c.value is not None and abs(c.value - run - start) < 1e-6))
                return "true", "none", key
        if c.value is not None and all(abs(said - runs[i] - starts[0]) < 1e-6 or i == 0 for i, said in c.nums):
            return "false", "text_reasoning", key  # the hops hold, the total does not
        return "false", "perception" if self.f.weighted else "text_reasoning", key

    def _note(self, c: Claim) -> tuple[str, str, tuple]:
        return "neutral", "none", ("note", c.pos)

    def _dist(self, c: Claim) -> tuple[str, str, tuple]:
        a, b = c.nodes
        key = ("D", edge_key(a, b), c.value)
        if c.prop == "hops" and self.f.weighted:
            return self._hop_count(c)
        d = self.dist(a, b)
        if c.via is None and self._row_as_relaxation(c, d):
            return self._dist(c)
        if c.via is not None:
            return self._relaxation(c, d, key)
        if d is not None and c.value is not None and abs(d - c.value) < 1e-6:
            return "true", "none", key
        return "false", "text_reasoning", key

    def _hop_count(self, c: Claim) -> tuple[str, str, tuple]:
        """"A is 3 hops from B" in a weighted graph: the fewest edges between them, not the distance; true, it
        neither earns nor costs."""
        a, b = c.nodes
        key = ("H", edge_key(a, b), c.value)
        h = self.ctx.graphs[0].distances(True, False).get(a, {}).get(b)
        ok = h is not None and c.value is not None and abs(h - c.value) < 1e-6
        return ("neutral", "none", key) if ok else ("false", "text_reasoning", key)

    def _row_as_relaxation(self, c: Claim, d: float | None) -> bool:
        """A table row `B, 12, A` read by inferred meaning (soft) that is not the distance B–A: when it is the
        distance from SD's source to one node through the other (a Dijkstra table's Node / Distance / Previous),
        `c` becomes that relaxation and True is returned. Not a statement whose numbers were guessed: which
        number is the distance is not known there."""
        a, b = c.nodes
        src = str(self.f.query.get("source"))
        if not c.soft or c.pos in self.guessed or self.f.task != "SD" or src not in self.g or src in c.nodes \
                or c.value is None or (d is not None and abs(d - c.value) < 1e-6):
            return False
        for x, y in ((a, b), (b, a)):
            dv = self.dist(src, y)
            if dv is not None and self.g.has_edge(x, y) and abs(dv + self.w(y, x) - c.value) < 1e-6:
                c.nodes, c.via = (src, x), y
                return True
        return False

    def _relaxation(self, c: Claim, d: float | None, key: tuple) -> tuple[str, str, tuple]:
        """"The distance to B through A is 12" from the source a: true when A is B's neighbour and d(a, A) +
        w(A, B) is 12; credited as a distance only when that is also d(a, B), else a candidate a later step
        improved, which neither earns nor costs."""
        a, b = c.nodes
        via = c.via
        assert via is not None
        dv = self.dist(a, via)
        ok = (c.value is not None and dv is not None and via in self.g and self.g.has_edge(via, b)
              and abs(dv + self.w(via, b) - c.value) < 1e-6)
        if not ok:
            return "false", "text_reasoning", ("DV", a, via, b, c.value)
        if d is not None and abs(d - c.value) < 1e-6:
            return "true", "none", key
        return "neutral", "none", ("DV", a, via, b, c.value)

    def _ncommon(self, c: Claim) -> tuple[str, str, tuple]:
        """"A and B have 3 common neighbours": a count; true, it neither earns nor costs."""
        a, b = c.nodes
        key = ("NC", edge_key(a, b), c.value)
        if a not in self.g or b not in self.g:
            return "false", "perception", key
        ok = c.value is not None and abs(len(set(self.g[a]) & set(self.g[b])) - c.value) < 1e-6
        return ("neutral", "none", key) if ok else ("false", "text_reasoning", key)

    def _set(self, c: Claim) -> tuple[str, str, tuple]:
        key = ("S", c.prop, tuple(sorted(c.nodes)))
        nodes = sorted(set(c.nodes))
        if c.prop == "common":
            q = self.f.query
            s, t = str(q.get("source")), str(q.get("target"))
            ok = s in self.g and t in self.g and set(nodes) <= (set(self.g[s]) & set(self.g[t]))
            return ("true", "none", key) if ok else ("false", "text_reasoning", key)
        if c.prop == "vertex cover" and c.value is not None:
            # "A covers 6 edges": the edges the nodes touch; a vertex cover only when that is every edge
            touched = sum(1 for u, v in self.g.edges if u in c.nodes or v in c.nodes)
            if abs(touched - c.value) > 1e-6:
                return "false", "text_reasoning", key
            if touched < self.g.number_of_edges():
                return "neutral", "none", key
        if holds(c.prop, self.g, nodes, self.f.query):
            return "true", "none", key
        return "false", "text_reasoning", key

    def _map(self, c: Claim) -> tuple[str, str, tuple]:
        a, x = c.nodes
        key = ("P", a, x)
        if len(self.ctx.graphs) < 2:
            return "neutral", "none", key
        ok = a in self.ctx.graphs[0].asked and x in self.ctx.graphs[1].asked
        return ("true", "none", key) if ok else ("false", "perception", key)

    def _assign(self, c: Claim) -> tuple[str, str, tuple]:
        n = c.nodes[0]
        key = ("C", n, c.prop)
        return ("true", "none", key) if n in self.g else ("false", "perception", key)


# ------------------------------------------------------------------------------------------ entry point


def judge_reading(evidence: Evidence, reading: Reading, *, final_match: bool, gold: Mapping[str, Any] | None,
                  gold_value: float | None) -> V4:
    ctx = context_for(evidence)
    j = _Judge(ctx, evidence)
    j.guessed = frozenset(reading.guessed)
    checked = [j.check(c) for c in reading.claims]
    errors = {it.key for it in checked if it.truth == "false"}
    if ctx.facts.task == "COL":  # a stated colouring that puts two adjacent nodes in one class is false
        g = ctx.graphs[0].asked
        for run in runs_of(checked, "assign"):
            clash = next((edge_key(u, v) for u, v in g.edges if u in run and v in run and run[u] == run[v]), None)
            if clash is not None:
                errors.add(("clash", clash))
    gold = dict(gold or {})
    crit = critical_facts(evidence, gold, gold_value)
    f = bool(final_match)
    if reading.unreadable:
        return V4(None, UNREADABLE, 0.0, 0, 0, 0, checked)
    k, n, label = Credit(j, checked, gold, gold_value if gold_value is not None else crit.gold_value).best()
    # (CN with both query nodes isolated: no edge is critical, the two empty neighbour sets are; Credit says so)
    has_critical = n > 0 or any(c.size for c in crit.candidates)
    # a statement read with numbers left over of which no claim holds (its false claims being soft, not charged)
    # was misread, not read
    misread = [reading.guessed[p] for p in reading.guessed
               if all(it.truth != "true" and not it.claim.neutral for it in checked if it.claim.pos == p)]
    if not has_critical:
        if misread:
            return V4(None, PARTLY_UNREADABLE, 0.0, 0, 0, len(errors), checked)
        return V4(formula(0.0, 0, len(errors), f, False), None, 0.0, 0, 0, len(errors), checked)
    q = k / n if n else 0.0
    if misread or (q < 1 and reading.unread and _about_optimum(crit, reading.unread)):
        # a critical fact is missing and the response states data about the optimum's nodes in a form the reader
        # has none for: the missing fact may be there, so a number would read the notation, not the reasoning.
        # A misread statement is worse: false as read, it may be a fact or an error, so no number is right
        return V4(None, PARTLY_UNREADABLE, q, n, k, len(errors), checked, label)
    return V4(formula(q, k, len(errors), f), None, q, n, k, len(errors), checked, label)


def _about_optimum(crit: Any, unread: list[tuple[frozenset[str], frozenset[float]]]) -> bool:
    """Whether the statements read to nothing could state an optimum's critical facts, by the nodes and numbers
    they hold. The bar is what a stated object needs, so that a remark naming a node or two ("A and B look
    central", "A has degree 2", "B appears 2 times") is not taken for one, small numbers being everywhere: a
    mapping pair's two ends; three of the optimum's nodes (a walk, cycle, clique or neighbour set); all but one
    member of a solution set; two of its nodes beside one of its distances or its total; numbers beside half the
    nodes of a colouring."""
    with_numbers = set().union(*(nodes for nodes, nums in unread if nums))
    for c in (*crit.candidates, *crit.witnesses):
        members = {a[2] for a in c.atoms if a[0] == "M"}
        named = members | {x for a in c.atoms if a[0] in ("E", "D", "P") for x in a[1:3]}
        values = {a[3] for a in c.atoms if a[0] == "D"} | {a[1] for a in c.atoms if a[0] == "T"}
        coloured = {n for n, _ in c.coloring}
        if coloured and len(with_numbers & coloured) >= max(2, (len(coloured) + 1) // 2):
            return True
        pairs = [{a[1], a[2]} for a in c.atoms if a[0] == "P"]
        for nodes, nums in unread:
            hit = nodes & named
            if len(hit) >= 3 or (members and len(nodes & members) >= max(2, len(members) - 1)) \
                    or (len(hit) >= 2 and not values.isdisjoint(nums)) or any(p <= nodes for p in pairs):
                return True
    return False


def printed_claims_text(stdout: str | None) -> str:
    """What a PoT program printed beyond its final answer: its output without the final-answer block and
    without a last line that is the answer's JSON (the answer is F's business, not a claim)."""
    out = claims_region(stdout or "")
    lines = out.rstrip().split("\n")
    if lines and lines[-1].strip()[:1] in "{[":
        try:
            json.loads(lines[-1])
            lines = lines[:-1]
        except ValueError:
            pass
    return "\n".join(lines)


def score_text(evidence: Evidence, text: str | None, *, final_match: bool, gold: Mapping[str, Any] | None = None,
               gold_value: float | None = None, program_output: str | None = None) -> V4:
    """VGR v4 of one response (see the module docstring). `program_output`: a PoT sample's program stdout;
    what it prints beyond the final answer is read as claims after the response's reasoning."""
    ctx = context_for(evidence)
    region = claims_region(text or "")
    if program_output:
        region += "\n\nProgram output:\n" + printed_claims_text(program_output)
    reading = read(region, lexicon(evidence, ctx))
    return judge_reading(evidence, reading, final_match=final_match, gold=gold, gold_value=gold_value)
