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
    graph but states nothing the reader can parse.

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

import itertools
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from judge.critical import ANSWER_WEIGHT, WRONG_CEILING, critical_facts, odd_cycle
from judge.evidence import Evidence
from judge.reader import Claim, Lexicon, Reading, lexicon_of, read
from judge.rule_checks import Context, context_for, holds
from judge.rule_grammar import FINAL_ANSWER_TAG, edge_key

VGR_FORMULA_V4 = "vgr-v4"
UNREADABLE = "unreadable"


@dataclass
class Checked:
    claim: Claim
    truth: str  # true / false / neutral
    error_type: str = "none"
    key: tuple[Any, ...] = ()


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
        truth, err, key = fn(c)
        if truth == "false" and (c.neutral or c.soft):
            truth = "neutral"
        if truth == "true" and c.neutral:
            truth = "neutral"
        return Checked(c, truth, err if truth == "false" else "none", key)

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
        if 0 not in given and self.prev_end is not None and self.prev_end[0] == nodes[0]:
            # a walk written hop by hop: its numbers may run on from where the last one ended; after a hop, that
            # is tried first (a hop stated by its weight alone carries the running total on), after a whole
            # walk last (the hop lines that follow a stated path start again from its first node)
            starts.insert(0 if self.prev_hop else 1, self.prev_end[1])
        for start in starts:
            ok = all(any(abs(said - x) < 1e-6 for x in (runs[i] + start, self.w(nodes[i - 1], nodes[i]), float(i)))
                     for i, said in c.nums if i)
            if ok and (c.value is None or abs(c.value - run) < 1e-6 or abs(c.value - run - start) < 1e-6):
                self.prev_end = (nodes[-1], start + run)  # where a walk written hop by hop has got to
                self.prev_hop = len(nodes) == 2
                return "true", "none", key
        if c.value is not None and all(abs(said - runs[i] - starts[0]) < 1e-6 or i == 0 for i, said in c.nums):
            return "false", "text_reasoning", key  # the hops hold, the total does not
        return "false", "perception" if self.f.weighted else "text_reasoning", key

    def _note(self, c: Claim) -> tuple[str, str, tuple]:
        return "neutral", "none", ("note", c.pos)

    def _dist(self, c: Claim) -> tuple[str, str, tuple]:
        a, b = c.nodes
        key = ("D", edge_key(a, b), c.value)
        d = self.dist(a, b)
        if d is not None and c.value is not None and abs(d - c.value) < 1e-6:
            return "true", "none", key
        return "false", "text_reasoning", key

    def _set(self, c: Claim) -> tuple[str, str, tuple]:
        key = ("S", c.prop, tuple(sorted(c.nodes)))
        nodes = sorted(set(c.nodes))
        if c.prop == "common":
            q = self.f.query
            s, t = str(q.get("source")), str(q.get("target"))
            ok = s in self.g and t in self.g and set(nodes) <= (set(self.g[s]) & set(self.g[t]))
            return ("true", "none", key) if ok else ("false", "text_reasoning", key)
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


# ------------------------------------------------------------------------------------------ objects


def _chain_walks(items: list[Checked]) -> list[list[Checked]]:
    """Consecutive true walks that continue one another (the next starts where the last ended and carries
    running totals) describe one walk, written hop by hop."""
    out: list[list[Checked]] = []
    for it in items:
        if it.claim.kind != "walk" or it.truth != "true":
            continue
        prev = out[-1][-1].claim if out else None
        if prev is not None and prev.nodes[-1] == it.claim.nodes[0] and it.claim.nums \
                and prev.pos >= it.claim.pos - 2 and (prev.nums or len(prev.nodes) == 2):
            # (a whole walk stated first is its own object; the hop lines after it describe it again)
            out[-1].append(it)
        else:
            out.append([it])
    return out


def _joined(chain: list[Checked]) -> tuple[list[str], dict[int, float], float | None]:
    nodes: list[str] = []
    nums: dict[int, float] = {}
    total = None
    for it in chain:
        c = it.claim
        base = len(nodes) - 1 if nodes else 0
        for i, v in c.nums:
            if i == 0 and base:
                continue
            nums[base + i] = v
        nodes = nodes + list(c.nodes[1:]) if nodes else list(c.nodes)
        total = c.value if c.value is not None else total
    return nodes, nums, total


def _runs_of(items: list[Checked], kind: str) -> list[dict[str, str]]:
    """The objects that true `assign` / `map` claims describe: a run of such claims in consecutive statements
    (at most one statement between) is one colouring or one mapping. A run that gives a node two partners is
    not a function, so no object at all: a dump of every pair is not a mapping, whatever runs it contains."""
    runs: list[list[Claim]] = []
    last = -10
    for it in items:
        c = it.claim
        if c.kind != kind or it.truth != "true":
            continue
        if c.pos - last > 2 or not runs:
            runs.append([])
        runs[-1].append(c)
        last = c.pos
    out: list[dict[str, str]] = []
    for run in runs:
        m: dict[str, str] = {}
        ok = True
        for c in run:
            key, val = c.nodes[0], (c.nodes[1] if kind == "map" else c.prop)
            if m.setdefault(key, val) != val:
                ok = False
                break
        if ok and m:
            out.append(m)
    return out


class _Credit:
    """The best candidate: (K, n, label)."""

    def __init__(self, j: _Judge, items: list[Checked], gold: Mapping[str, Any], value: float | None):
        self.j, self.items, self.gold, self.value = j, items, gold, value
        self.true = [it for it in items if it.truth == "true"]

    def best(self) -> tuple[int, int, str]:
        task = self.j.f.task
        fn = {"SD": self.sd, "DIAM": self.diam, "CN": self.cn, "TSP": self.tsp, "CYC": self.cyc,
              "MCP": self.sets, "MIS": self.sets, "MVC": self.sets, "COL": self.col, "GED": self.mapping,
              "MCS": self.mapping}.get(task)
        if fn is None and self.j.f.paired:
            fn = self.mapping
        return fn() if fn else (0, 0, "")

    def _runs(self, nodes: list[str]) -> list[float]:
        run, out = 0.0, [0.0]
        for a, b in itertools.pairwise(nodes):
            run += self.j.w(a, b)
            out.append(run)
        return out

    def _dists(self) -> dict[tuple[str, str], float]:
        return {edge_key(*it.claim.nodes): float(it.claim.value or 0) for it in self.true if it.claim.kind == "dist"}

    def sd(self) -> tuple[int, int, str]:
        q = self.j.f.query
        s, t = str(q.get("source")), str(q.get("target"))
        d_st = self.j.dist(s, t)
        dists = self._dists()
        best = (0, 0, "")
        for chain in _chain_walks(self.items):
            nodes, nums, total = _joined(chain)
            if nodes[0] == t and nodes[-1] == s:
                nodes = nodes[::-1]
                m = len(nodes) - 1
                nums = {m - i: v for i, v in nums.items()}  # reversed numbers are not running totals from s
                nums = {}
            if nodes[0] != s or nodes[-1] != t or d_st is None:
                continue
            runs = self._runs(nodes)
            if abs(runs[-1] - d_st) > 1e-6:
                continue  # a walk from s to t that is not shortest: a failed candidate
            hops = len(nodes) - 1
            k = hops
            for i in range(1, len(nodes)):
                said = nums.get(i)
                # the running distance at node i, or the weight of the hop into it (with the total, the same)
                if (said is not None and (abs(said - runs[i]) < 1e-6 or abs(said - runs[i] + runs[i - 1]) < 1e-6)) or \
                        abs(dists.get(edge_key(s, nodes[i]), -1) - runs[i]) < 1e-6 or \
                        (i == hops and total is not None and abs(total - runs[i]) < 1e-6):
                    k += 1
            best = max(best, (k, 2 * hops, "shortest path"), key=lambda x: (x[0] / x[1] if x[1] else 0, -x[1]))
        return best

    def diam(self) -> tuple[int, int, str]:
        d = self.value
        if d is None:
            return (0, 0, "")
        dists = self._dists()
        best = (0, 0, "")
        for chain in _chain_walks(self.items):
            nodes, nums, total = _joined(chain)
            hops = len(nodes) - 1
            if len(set(nodes)) != len(nodes) or abs((self.j.dist(nodes[0], nodes[-1]) or -1) - d) > 1e-6 \
                    or abs(self._runs(nodes)[-1] - d) > 1e-6:
                continue
            k = hops + (1 if (total is not None and abs(total - d) < 1e-6) or nums.get(hops) == d
                        or abs(dists.get(edge_key(nodes[0], nodes[-1]), -1) - d) < 1e-6 else 0)
            best = max(best, (k, hops + 1, "diametral path"), key=lambda x: (x[0] / x[1] if x[1] else 0, -x[1]))
        if best[1] == 0:
            for (_a, _b), x in dists.items():
                if abs(x - d) < 1e-6:
                    best = (1, int(d) + 1, "diametral distance")
                    break
        return best

    def cn(self) -> tuple[int, int, str]:
        crit = critical_facts(self.j.ev, self.gold, self.value)
        if not crit.candidates:
            return (0, 0, "")
        want = {(a[1], a[2]) for a in crit.candidates[0].atoms if a[0] == "E"}
        q = self.j.f.query
        s, t = str(q.get("source")), str(q.get("target"))
        said: set[tuple[str, str]] = set()
        # neighbour lists of more nodes than the query pair are a transcription of the input (perception):
        # only the query nodes' own neighbour sets, stated as such, are a derivation
        heads = {it.claim.nodes[0] for it in self.items if it.claim.kind in ("adj", "neigh")}
        dump = len(heads - {s, t}) > 0 and len(heads) > 2
        for it in self.true:
            c = it.claim
            if c.kind == "set" and c.prop == "common":
                for x in c.nodes:
                    said |= {edge_key(s, x), edge_key(t, x)}
            elif c.kind == "neigh" and c.nodes[0] in (s, t) and not dump:
                said |= {edge_key(c.nodes[0], x) for x in c.nodes[1:]}
            elif c.kind == "walk" and len(c.nodes) == 3 and {c.nodes[0], c.nodes[2]} == {s, t}:
                said |= {edge_key(s, c.nodes[1]), edge_key(t, c.nodes[1])}
        k = len(said & want)
        return (k, len(want), "query neighbourhoods") if k else (0, len(want), "")

    def _closed_walks(self) -> list[tuple[list[str], float | None]]:
        out = []
        for chain in _chain_walks(self.items):
            nodes, nums, total = _joined(chain)
            if chain[-1].claim.closed or (len(chain) == 1 and chain[0].claim.closed):
                nodes.append(nodes[0])
            if total is None:
                total = nums.get(len(nodes) - 1)
            if len(nodes) > 3 and nodes[0] == nodes[-1]:
                out.append((nodes, total))
        return out

    def tsp(self) -> tuple[int, int, str]:
        g = self.j.g
        best = (0, 0, "")
        for nodes, total in self._closed_walks():
            if set(nodes) != set(g) or len(nodes) != g.number_of_nodes() + 1 or self.value is None:
                continue
            length = self._runs(nodes)[-1]
            if abs(length - self.value) > 1e-6:
                continue
            legs = len(nodes) - 1
            k = legs + (1 if total is not None and abs(total - length) < 1e-6 else 0)
            best = max(best, (k, legs + 1, "optimal tour"))
        return best

    def cyc(self) -> tuple[int, int, str]:
        for nodes, _ in self._closed_walks():
            if self.value is not None and len(nodes) - 1 == int(self.value) and len(set(nodes)) == len(nodes) - 1:
                return (len(nodes) - 1, len(nodes) - 1, "longest cycle")
        return (0, 0, "")

    def sets(self) -> tuple[int, int, str]:
        prop = {"MCP": "clique", "MIS": "independent set", "MVC": "vertex cover"}[self.j.f.task]
        for it in self.true:
            c = it.claim
            if c.kind == "set" and c.prop == prop and self.value is not None and len(set(c.nodes)) == int(self.value):
                k = len(set(c.nodes))
                n = k + k * (k - 1) // 2 if prop != "vertex cover" else k + 1
                return (n, n, "optimal set")
        return (0, 0, "")

    def col(self) -> tuple[int, int, str]:
        g = self.j.g
        chi = int(self.value) if self.value is not None else None
        blocks = _runs_of(self.items, "assign")
        coloring = None
        for b in blocks:
            if chi is not None and set(b) == set(g) and len(set(b.values())) == chi and \
                    all(b[u] != b[v] for u, v in g.edges):
                coloring = b
        if coloring is None:
            return (0, 0, "")
        # the lower bound: a clique of χ nodes, or (χ = 3, no triangle) an odd cycle, stated true
        wit = 0
        need = chi * (chi - 1) // 2 if chi and chi >= 2 else 0
        for it in self.true:
            c = it.claim
            if c.kind == "set" and c.prop == "clique" and chi and len(set(c.nodes)) >= chi:
                wit = need
        if not wit and chi == 3:
            cyc = odd_cycle(g)
            if cyc:
                need = len(cyc)
                for nodes, _ in self._closed_walks():
                    if (len(nodes) - 1) % 2 == 1:
                        wit = need
        n = g.number_of_nodes()
        return (n + wit, n + need, "optimal colouring")

    def mapping(self) -> tuple[int, int, str]:
        from judge.vgr3 import _ged_cost

        gs = self.j.ctx.graphs
        if len(gs) < 2 or self.value is None:
            return (0, 0, "")
        g1, g2 = gs[0].asked, gs[1].asked
        blocks = [b for b in _runs_of(self.items, "map") if len(set(b.values())) == len(b)]  # injective only
        for m in blocks:
            if not m:
                continue
            if self.j.f.task == "MCS":
                ok = len(m) == int(self.value) and all(
                    g1.has_edge(a, b) == g2.has_edge(m[a], m[b]) for a, b in itertools.combinations(m, 2))
            else:
                ok = _ged_cost(g1, g2, m) == int(self.value)
            if ok:
                return (len(m), len(m), "optimal mapping")
        return (0, 0, "")


# ------------------------------------------------------------------------------------------ entry point


def judge_reading(evidence: Evidence, reading: Reading, *, final_match: bool, gold: Mapping[str, Any] | None,
                  gold_value: float | None) -> V4:
    ctx = context_for(evidence)
    j = _Judge(ctx, evidence)
    checked = [j.check(c) for c in reading.claims]
    errors = {it.key for it in checked if it.truth == "false"}
    if ctx.facts.task == "COL":  # a stated colouring that puts two adjacent nodes in one class is false
        g = ctx.graphs[0].asked
        for run in _runs_of(checked, "assign"):
            clash = next((edge_key(u, v) for u, v in g.edges if u in run and v in run and run[u] == run[v]), None)
            if clash is not None:
                errors.add(("clash", clash))
    gold = dict(gold or {})
    crit = critical_facts(evidence, gold, gold_value)
    has_critical = any(c.size for c in crit.candidates)
    f = bool(final_match)
    if reading.unreadable:
        return V4(None, UNREADABLE, 0.0, 0, 0, 0, checked)
    if not has_critical:
        return V4(formula(0.0, 0, len(errors), f, False), None, 0.0, 0, 0, len(errors), checked)
    k, n, label = _Credit(j, checked, gold, gold_value if gold_value is not None else crit.gold_value).best()
    q = k / n if n else 0.0
    return V4(formula(q, k, len(errors), f), None, q, n, k, len(errors), checked, label)


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
