"""The rule scorer's checks: whether each kind of claim holds in the evidence facts, and the error type of a
wrong one (see the table in `judge.rule_scorer`). `ClaimChecks` records one step per distinct claim;
`judge.rule_claims.ClaimScanner` finds the claims in a response and calls these checks."""

from __future__ import annotations

import bisect
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from evalcore.evidence import Evidence, Facts, LogicalGraph
from judge.rule_grammar import COLOR_WORDS, GRAPH_CTX, edge_key, shape

# Claims that can neither earn nor cost (correct readings, correct irrelevant claims) are kept for the
# record up to this many; errors and credited steps are always kept (the scan limit bounds them), so
# padding placed before the reasoning cannot push its mistakes out of the count.
MAX_STEPS = 200
# claim kinds that restate the drawn graph (never earn, cost when wrong)
_READINGS = frozenset({"edge", "adj", "color", "colorgroup", "deg", "ghost", "ambiguous"})
# per task: which set property is the question's
_SET_OF_TASK = {"MCP": "clique", "MIS": "independent set", "MVC": "vertex cover", "CN": "common"}
_CLAIM_CHARS = 160


# --------------------------------------------------------------------------------------------- context


@dataclass
class _G:
    lg: LogicalGraph
    drawn: nx.Graph
    asked: nx.Graph
    drawn_edges: frozenset[tuple[str, str]]
    asked_edges: frozenset[tuple[str, str]]
    _dist: dict[tuple[bool, bool], dict[str, dict[str, float]]] = field(default_factory=dict)

    def distances(self, asked: bool, weighted: bool) -> dict[str, dict[str, float]]:
        key = (asked, weighted)
        if key not in self._dist:
            g = self.asked if asked else self.drawn
            if weighted:
                self._dist[key] = {s: dict(d) for s, d in nx.all_pairs_dijkstra_path_length(g, weight="weight")}
            else:
                self._dist[key] = {s: dict(d) for s, d in nx.all_pairs_shortest_path_length(g)}
        return self._dist[key]


@dataclass
class Context:
    facts: Facts
    graphs: list[_G]
    names: frozenset[str]
    shapes: frozenset[str]
    digit_names: bool = False  # some node is named by digits only (an airport "101")

    @classmethod
    def of(cls, facts: Facts) -> Context:
        gs = []
        for lg in facts.graphs:
            gs.append(_G(lg=lg, drawn=lg.graph, asked=lg.asked,
                         drawn_edges=frozenset(edge_key(u, v) for u, v in lg.graph.edges()),
                         asked_edges=frozenset(edge_key(u, v) for u, v in lg.asked.edges())))
        names = frozenset(n for g in gs for n in (*g.drawn.nodes, *g.asked.nodes))
        return cls(facts=facts, graphs=gs, names=names, shapes=frozenset(shape(n) for n in names),
                   digit_names=any(n.isdigit() for n in names))


_CTX_CACHE: dict[str, Context] = {}


def context_for(evidence: Evidence) -> Context:
    ctx = _CTX_CACHE.get(evidence.sha256)
    if ctx is None:
        if len(_CTX_CACHE) > 4096:
            _CTX_CACHE.clear()
        ctx = _CTX_CACHE[evidence.sha256] = Context.of(evidence.facts)
    return ctx



# --------------------------------------------------------------------------------------------- checks



@dataclass
class Step:
    pos: int
    key: tuple[Any, ...]
    claim: str
    correct: bool
    error_type: str = "none"
    kind: str = "inference"
    relevant: bool = True


class ClaimChecks:
    def __init__(self, ctx: Context, text: str) -> None:
        self.ctx = ctx
        self.f = ctx.facts
        self.text = text
        self.steps: dict[tuple[Any, ...], Step] = {}
        self.inert = 0  # correct steps that neither earn nor cost
        self._kw: dict[str, list[int]] | None = None
        self.gctx_pos: list[int] = []
        self.gctx_idx: list[int] = []
        if self.f.paired:
            for m in GRAPH_CTX.finditer(text):
                word = (m.group(1) or m.group(2) or m.group(3) or "").lower()
                self.gctx_pos.append(m.start())
                self.gctx_idx.append(0 if word in ("1", "one", "first") else 1)

    # ---- helpers

    def add(self, pos: int, key: tuple[Any, ...], claim: str, correct: bool, error: str = "none") -> None:
        if key in self.steps:
            return
        kind = "reading" if key[0] in _READINGS else "inference"
        relevant = self.relevant(key)
        if correct and not (relevant and kind == "inference"):
            self.inert += 1
            if self.inert > MAX_STEPS:
                return
        self.steps[key] = Step(pos, key, " ".join(claim.split())[:_CLAIM_CHARS], correct,
                                "none" if correct else error, kind, relevant)

    def relevant(self, key: tuple[Any, ...]) -> bool:
        """Whether a claim bears on the question (only such inference steps earn). Readings are about the
        drawn graph and count as relevant; a sum earns nothing by itself (the path total it supports does)."""
        what, task = key[0], self.f.task
        if what in _READINGS:
            return True
        ends = {self.f.query.get("source"), self.f.query.get("target")} - {None}
        if what == "path":
            nodes = key[2]
            if task in ("DIAM", "TSP", "CYC"):
                return True
            if task in ("SD", "CN"):
                return nodes[0] in ends or nodes[-1] in ends
            return False
        if what == "dist":
            a, b = key[2]
            return task == "DIAM" or (task == "SD" and bool({a, b} & ends))
        if what == "set":
            return _SET_OF_TASK.get(task) == key[2]
        if what == "map":
            return self.f.paired
        return False

    def graph_at(self, pos: int) -> list[int]:
        """Indices of the logical graphs a claim at `pos` may be about (paired: the last named graph)."""
        if len(self.ctx.graphs) == 1:
            return [0]
        i = bisect.bisect_right(self.gctx_pos, pos) - 1
        return [self.gctx_idx[i]] if i >= 0 else list(range(len(self.ctx.graphs)))

    def edge_error(self, g: _G, u: str, v: str) -> str:
        e = edge_key(u, v)
        lg = g.lg
        if e in g.drawn_edges:
            return "visual_reasoning"  # drawn, but the edit excludes it from the graph asked on
        kind = self.f.kind if lg.edit is not None else "none"
        if kind == "patch" and (u in lg.affected_nodes or v in lg.affected_nodes or e in lg.affected_edges):
            return "visual_reasoning"
        if kind == "composition" and lg.part_of.get(u) is not None and lg.part_of.get(u) != lg.part_of.get(v):
            return "visual_reasoning"
        return "perception"

    def node_error(self, g: _G, n: str) -> str:
        return "visual_reasoning" if n in g.drawn else "perception"

    def snippet(self, a: int, b: int) -> str:
        return self.text[a:b]

    # ---- claims: each checks one claim and records it as a step

    def edge_claim(self, pos: int, end: int, u: str, v: str, weight: float | None) -> None:
        cands = self.graph_at(pos)
        e = edge_key(u, v)
        key = ("edge", tuple(cands), e, weight)
        hits = [e in self.ctx.graphs[i].drawn_edges for i in cands]
        ok = any(hits)
        if ok and not all(hits):
            # a paired task and no molecule named: true in one, false in the other, so neither (never true
            # by luck, never an error by bad luck)
            self.add(pos, ("ambiguous", *key), self.snippet(pos, end), True)
            return
        if not ok:
            self.add(pos, key, self.snippet(pos, end), False, self.edge_error(self.ctx.graphs[cands[0]], u, v))
            return
        if weight is not None and self.f.weighted:
            ws = [self.ctx.graphs[i].drawn.edges[e].get("weight") for i in cands if e in self.ctx.graphs[i].drawn_edges]
            ok = any(w is not None and abs(float(w) - weight) < 1e-6 for w in ws)
            self.add(pos, key, self.snippet(pos, end), ok, "perception")
            return
        self.add(pos, key, self.snippet(pos, end), True)

    def path_claim(self, pos: int, end: int, nodes: list[str], total: float | None,
                   hops: dict[int, float] | None = None) -> None:
        cands = self.graph_at(pos)
        key = ("path", tuple(cands), tuple(nodes), total, tuple(sorted((hops or {}).items())))
        best_err: str | None = "perception"
        best_g: _G | None = None
        for i in cands:
            g = self.ctx.graphs[i]
            err = None
            for n in nodes:
                if n not in g.asked:
                    err = self.node_error(g, n) if n in self.ctx.names else "perception"
                    break
            if err is None:
                for a, b in zip(nodes, nodes[1:], strict=False):
                    if a == b or edge_key(a, b) not in g.asked_edges:
                        err = "text_reasoning" if a == b else self.edge_error(g, a, b)
                        break
            if err is None:
                best_err, best_g = None, g
                break
            if best_err == "perception":
                best_err = err
        if best_err is not None or best_g is None:
            self.add(pos, key, self.snippet(pos, end), False, best_err or "perception")
            return
        if hops:
            g = best_g
            # a number beside the first node is where the running total starts (a path continued from an
            # earlier line: "B (1267 km) -> C (2608 km)")
            run = hops.get(0, 0.0)
            for i, (a, b) in enumerate(zip(nodes, nodes[1:], strict=False), start=1):
                w = float(g.asked.edges[a, b].get("weight", 1)) if self.f.weighted else 1.0
                run += w
                said = hops.get(i)
                if said is not None and not any(abs(said - x) < 1e-6 for x in (w, run, float(i))):
                    # a number beside a hop is its weight, the running total or the hop count; else misread
                    self.add(pos, key, self.snippet(pos, end), False,
                             "perception" if self.f.weighted else "text_reasoning")
                    return
        if total is not None:
            g = best_g
            if self.f.weighted:
                value = float(sum(g.asked.edges[a, b].get("weight", 1) for a, b in zip(nodes, nodes[1:], strict=False)))
            else:
                value = float(len(nodes) - 1)
            self.add(pos, key, self.snippet(pos, end), abs(value - total) < 1e-6, "text_reasoning")
            return
        self.add(pos, key, self.snippet(pos, end), True)

    def adjacency_claim(self, pos: int, end: int, a: str, listed: list[str], complete: bool) -> None:
        cands = self.graph_at(pos)
        key = ("adj", tuple(cands), a, tuple(sorted(set(listed))), complete)
        ok = False
        err = "perception"
        for i in cands:
            g = self.ctx.graphs[i]
            if a not in g.drawn:
                continue
            nbrs = set(g.drawn[a])
            if (set(listed) == nbrs) if complete else set(listed) <= nbrs:
                ok = True
                break
            asked_nbrs = set(g.asked[a]) if a in g.asked else set()
            if (set(listed) == asked_nbrs) if complete else set(listed) <= asked_nbrs:
                ok = True  # the neighbours within the graph asked on: also a correct reading
                break
        self.add(pos, key, self.snippet(pos, end), ok, err)

    def color_claim(self, pos: int, end: int, n: str, word: str) -> None:
        cands = self.graph_at(pos)
        word = " ".join(word.lower().split())
        key = ("color", tuple(cands), n, word)
        ok = False
        err = "perception"
        for i in cands:
            g = self.ctx.graphs[i]
            if n not in g.drawn:
                continue
            c = g.lg.drawn_color.get(n, "sky")
            if word in COLOR_WORDS.get(c, frozenset({c})):
                ok = True
                break
            if n in g.lg.affected_nodes and self.f.kind in ("recolor", "focus"):
                err = "visual_reasoning"
        self.add(pos, key, self.snippet(pos, end), ok, err)

    def color_group_claim(self, pos: int, end: int, word: str, listed: list[str]) -> None:
        cands = self.graph_at(pos)
        word = " ".join(word.lower().split())
        key = ("colorgroup", tuple(cands), word, tuple(sorted(set(listed))))
        ok = False
        for i in cands:
            g = self.ctx.graphs[i]
            if all(n in g.drawn and word in COLOR_WORDS.get(g.lg.drawn_color.get(n, "sky"), frozenset()) for n in listed):
                ok = True
                break
        err = "visual_reasoning" if self.f.kind in ("recolor", "focus") else "perception"
        self.add(pos, key, self.snippet(pos, end), ok, err)

    def distance_claim(self, pos: int, end: int, a: str, b: str, value: float) -> None:
        cands = self.graph_at(pos)
        key = ("dist", tuple(cands), edge_key(a, b), value)
        weighted = self.f.weighted
        ok = False
        err = "text_reasoning"
        for i in cands:
            g = self.ctx.graphs[i]
            d = g.distances(True, weighted).get(a, {}).get(b)
            if d is not None and abs(d - value) < 1e-6:
                ok = True
                break
            d0 = g.distances(False, weighted).get(a, {}).get(b)
            if d0 is not None and abs(d0 - value) < 1e-6 and g.lg.edit is not None:
                err = "visual_reasoning"
        self.add(pos, key, self.snippet(pos, end), ok, err)

    def degree_claim(self, pos: int, end: int, n: str, value: int) -> None:
        cands = self.graph_at(pos)
        key = ("deg", tuple(cands), n, value)
        ok = any(
            (n in g.drawn and g.drawn.degree(n) == value) or (n in g.asked and g.asked.degree(n) == value)
            for g in (self.ctx.graphs[i] for i in cands)
        )
        self.add(pos, key, self.snippet(pos, end), ok, "perception")

    def set_claim(self, pos: int, end: int, prop: str, listed: list[str]) -> None:
        cands = self.graph_at(pos)
        prop = " ".join(prop.lower().split())
        if prop.startswith("common"):
            prop = "common"
        elif prop == "cover":
            prop = "vertex cover"
        key = ("set", tuple(cands), prop, tuple(sorted(set(listed))))
        s = sorted(set(listed))
        ok = False
        err = "text_reasoning"
        for i in cands:
            g = self.ctx.graphs[i]
            if holds(prop, g.asked, s, self.f.query):
                ok = True
                break
            if any(n not in g.asked for n in s) or (g.lg.edit is not None and holds(prop, g.drawn, s, self.f.query)):
                err = "visual_reasoning"
        self.add(pos, key, self.snippet(pos, end), ok, err)

    def assign_claim(self, pos: int, end: int, n: str, label: str) -> None:
        """A COL colour assignment: a choice, so only a node that does not exist makes it wrong (a clash
        between adjacent nodes is counted once the whole colouring is read, in `judge.rule_v3`)."""
        cands = self.graph_at(pos)
        ok = any(n in self.ctx.graphs[i].asked for i in cands)
        self.add(pos, ("assign", n, label), self.snippet(pos, end), ok,
                 "perception" if not any(n in g.drawn for g in self.ctx.graphs) else "visual_reasoning")

    def mapping_claim(self, pos: int, end: int, a: str, x: str) -> None:
        g1, g2 = self.ctx.graphs[0], self.ctx.graphs[1]
        key = ("map", a, x)
        if a in g1.asked and x in g2.asked:
            self.add(pos, key, self.snippet(pos, end), True)
            return
        if a in g1.drawn and x in g2.drawn:
            self.add(pos, key, self.snippet(pos, end), False, "visual_reasoning")  # excluded by the edit
            return
        self.add(pos, key, self.snippet(pos, end), False, "perception")


def holds(prop: str, g: nx.Graph, nodes: list[str], query: Mapping[str, Any]) -> bool:
    if any(n not in g for n in nodes):
        return False
    if prop == "clique":
        return all(g.has_edge(a, b) for k, a in enumerate(nodes) for b in nodes[k + 1 :])
    if prop == "independent set":
        return not any(g.has_edge(a, b) for k, a in enumerate(nodes) for b in nodes[k + 1 :])
    if prop == "vertex cover":
        s = set(nodes)
        return all(u in s or v in s for u, v in g.edges())
    if prop == "common":
        a, b = query.get("source"), query.get("target")
        if a not in g or b not in g:
            return False
        return set(nodes) == (set(g[a]) & set(g[b]))
    return False
