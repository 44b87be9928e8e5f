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
The final-answer match is the benchmark verifier's verdict (`gie.answers.verify`), so it accepts every
optimal answer. Free text (instructions, fake verdicts, fake evidence) cannot raise a score: only claims
are scored, always against the stored evidence.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from judge.evidence import Evidence, Facts, LogicalGraph
from judge.schema import JudgeStep, JudgeVerdict, error_counts, vgr_of

RULE_VERSION = "rule-v2"
MAX_SCAN_CHARS = 60_000
# Claims that can neither earn nor cost (correct readings, correct irrelevant claims) are kept for the
# record up to this many; errors and credited steps are always kept (the scan limit bounds them), so
# padding placed before the reasoning cannot push its mistakes out of the count.
MAX_STEPS = 200
# claim kinds that restate the drawn graph (never earn, cost when wrong)
_READINGS = frozenset({"edge", "adj", "color", "colorgroup", "deg", "ghost"})
# per task: which set property is the question's
_SET_OF_TASK = {"MCP": "clique", "MIS": "independent set", "MVC": "vertex cover", "CN": "common"}
_CLAIM_CHARS = 160

COLOR_WORDS: dict[str, frozenset[str]] = {
    # palette name -> words a model may use for it
    "sky": frozenset({"sky", "blue", "light blue", "sky blue", "skyblue", "lightblue"}),
    "rose": frozenset({"rose", "pink", "light pink"}),
    "mint": frozenset({"mint", "green", "light green", "mint green"}),
    "amber": frozenset({"amber", "orange", "gold", "golden"}),
    "lilac": frozenset({"lilac", "purple", "violet", "lavender", "light purple"}),
    "lemon": frozenset({"lemon", "yellow", "light yellow"}),
    "teal": frozenset({"teal", "cyan", "turquoise"}),
    "coral": frozenset({"coral", "salmon", "orange", "red"}),
    "grey": frozenset({"grey", "gray", "light grey", "light gray", "silver"}),
    "lime": frozenset({"lime", "green", "yellow-green", "lime green", "light green"}),
}
_ALL_COLOR_WORDS = frozenset(w for ws in COLOR_WORDS.values() for w in ws)
_COLOR_ALT = "|".join(sorted((re.escape(w) for w in _ALL_COLOR_WORDS), key=len, reverse=True))

# Upper-case words that look like labels but are not (acronyms models write).
_STOP = frozenset("""
AND THE FOR YES NOT BUT ALL ANY ARE BFS DFS MST TSP MIS MVC MCP MCS GED CYC COL DIAM SD CN JSON NULL NONE
TRUE FALSE OK ID IDS NO ONE TWO SET MAX MIN SUM END TOP LOW KEY MAP ADD NEW OLD USE THEN STEP PATH EDGE NODE
G1 G2 V1 V2 E1 E2 P1 P2
""".split())

_TOKEN = re.compile(r"(?<![A-Za-z0-9_])[A-Z][A-Za-z0-9]{1,3}(?![A-Za-z0-9_])")
_GRAPH_CTX = re.compile(
    r"(?i)\b(?:graph|molecule|image|picture)\s*(1|2|one|two)\b|\bG\s*_?\s*([12])\b|\b(first|second)\s+(?:graph|molecule|image|picture)"
)
_FINAL = re.compile(r"(?i)<\s*final[\s_-]*answer\s*>")
_EDGE_GAP = re.compile(r"\s*(?:-{1,2}|–{1,2}|—|<->|<-->|↔|―|\s-\s)\s*")
_ARROW_GAP = re.compile(r"\s*(?:->|-->|→|⟶|=>|⇒|➔|➜|↦|\bmaps?\s+to\b|\bmapped\s+to\b|\bcorresponds\s+to\b)\s*")
_LIST_GAP = re.compile(r"""\s*["']?\s*(?:,|;|\band\b|&|,\s*and\b)\s*["']?\s*|\s+""")
_ADJ_GAP = re.compile(
    r"\s*(?::|->\s*\[|→\s*\[|:\s*[\[{(])\s*|\s+(?:is\s+(?:directly\s+)?(?:connected|adjacent|linked)\s+(?:to|with)"
    r"|connects\s+(?:to|with)|neighbou?rs?\s*(?::|are|=)?|has\s+neighbou?rs?\s*:?)\s*[\[{(]?\s*"
)
_ADJ_COMPLETE = re.compile(r"(?i)neighbou?rs|^\s*:")
_ADJ_PREFIX = re.compile(r"(?i)(?:neighbou?rs?\s+of|N\s*\()\s*$")
_ADJ_PREFIX_GAP = re.compile(r"\s*(?:\)\s*)?(?::|=|are|is)\s*[\[{(]?\s*")
_WEIGHT_AFTER = re.compile(
    r"(?i)\s*(?:\(\s*|\[\s*|:\s*|=\s*|,\s*(?=w)|\s(?:with\s+)?)(?:(?:weight|w|cost|distance)\s*(?:of\s*)?[:=]?\s*)?"
    r"(\d+(?:\.\d+)?)(?![\d.])"
)
_TOTAL_AFTER = re.compile(
    r"(?i)^[^\n.;]{0,40}?(?:total(?:\s+(?:weight|distance|length|cost))?|length|distance|cost|weight|sum|hops?)\s*"
    r"(?:of|is|=|:|equals)?\s*(\d+(?:\.\d+)?)"
)
_TOTAL_EQ = re.compile(r"^[^\n;]{0,60}?=\s*(\d+(?:\.\d+)?)(?!\s*[+\-*/\d])")
_HOPS_AFTER = re.compile(r"(?i)^\s*[(\[,:]?\s*(\d+)\s*(?:hops?|edges?)\b")
_COLOR_GROUP_BEFORE = re.compile(
    rf"(?i)\b({_COLOR_ALT})(?:[\s-]+colou?red)?\s+(?:nodes?|vertices|airports?|atoms?|members?|actors?|entities|"
    rf"families|characters?|circles?)[^.\n:]{{0,24}}?(?::|\bare\b|=|\binclude\b|\bincludes\b)\s*[\[{{(]?\s*$"
)
_TOK = r"(?<![A-Za-z0-9_])([A-Z][A-Za-z0-9]{1,3})(?![A-Za-z0-9_])"
_COLOR_CLAIM = re.compile(
    _TOK + rf"\s*(?i:\(\s*(?:colou?r\s*[:=]?\s*)?({_COLOR_ALT})\s*\)|\s(?:is|are|was|appears)\s+(?:colou?red\s+|"
    rf"drawn\s+in\s+|filled\s+(?:with|in)\s+|in\s+)?({_COLOR_ALT})\b)"
)
_DEG_CLAIM = re.compile(
    _TOK + r"\s*(?i:\)\s*)?(?i:has\s+(?:a\s+)?degree(?:\s+of)?|\(\s*degree|,\s*degree|:\s*degree)\s*[:=]?\s*(\d+)"
)
_DEG_CLAIM_PREFIX = re.compile(r"(?i:degree\s+of|deg\s*\()\s*" + _TOK + r"\s*\)?\s*(?i:is|=|:)\s*(\d+)")
# keywords that introduce claims, found in one pass: group index -> kind
_KEYWORDS = re.compile(
    r"(?i)(dist|\bd\s*\()|(neighbo|\bN\s*\()|(node|vert|airport|atom|member|actor|entit|famil|character|circle)"
    r"|(clique|independent|cover|common)"
)
_KEYWORD_KINDS = (None, "dist", "adj", "group", "set")
_COLOR_PAREN = re.compile(rf"(?i)^\s*\(\s*(?:colou?r\s*[:=]?\s*)?(?:{_COLOR_ALT})\s*\)")
_DIST_BEFORE = re.compile(r"(?i)(?:distance|dist|\bd)\s*(?:\(|from\s+|between\s+)\s*$")
_DIST_MID = re.compile(r"\s*(?:,|to|and)\s*")
_DIST_AFTER = re.compile(r"(?i)\s*\)?\s*(?:is|=|:|of|equals)\s*(\d+(?:\.\d+)?)")
_SET_AFTER = re.compile(
    r"(?i)^\s*[\]})]?\s*(?:form|forms|is|are|would\s+be|makes?)\s+(?:a|an|the)?\s*(?:valid\s+)?(?:(?:maximum|minimum|max|min|largest|"
    r"smallest)\s+)?(?:\d+-)?(clique|independent\s+set|vertex\s+cover|cover)\b"
)
_SET_BEFORE = re.compile(
    r"(?i)\b(clique|independent\s+set|vertex\s+cover|common\s+neighbou?rs?)\b[^.\n]{0,30}?(?::|=|\bis\b|\bare\b)\s*[\[{(]?\s*$"
)
_ARITH = re.compile(r"(?<![\d.])(\d+(?:\.\d+)?)((?:\s*\+\s*\d+(?:\.\d+)?)+)\s*=\s*(\d+(?:\.\d+)?)")


_SHAPE_TABLE = str.maketrans(
    {**{c: "A" for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ"}, **{c: "a" for c in "abcdefghijklmnopqrstuvwxyz"},
     **{c: "9" for c in "0123456789"}}
)


def _shape(s: str) -> str:
    """Label shape: DEN -> AAA, C1 -> A9, Cl1 -> Aa9."""
    return s.translate(_SHAPE_TABLE)


_GAP_KINDS: dict[str, str] = {}
_ADJ_GAPS: dict[str, bool] = {}


def _adj_gap(gap: str) -> bool:
    """Whether a (normalised) gap introduces an adjacency list ("A: B, C", "A is connected to B")."""
    hit = _ADJ_GAPS.get(gap)
    if hit is None:
        if len(_ADJ_GAPS) > 50_000:
            _ADJ_GAPS.clear()
        hit = _ADJ_GAPS[gap] = _ADJ_GAP.fullmatch(gap) is not None
    return hit


def _gap_kind(gap: str) -> str:
    """'>' arrow, '-' edge dash, ',' list separator, 'x' anything else (memoised: gaps repeat a lot)."""
    k = _GAP_KINDS.get(gap)
    if k is not None:
        return k
    g = _COLOR_PAREN.sub("", gap.replace("*", "").replace("`", ""), count=1)
    if len(g) > 40 or "\n" in g:  # a line break ends a list, path or edge ("B--E\nB, G form a clique")
        k = "x"
    elif _ARROW_GAP.fullmatch(g):
        k = ">"
    elif _EDGE_GAP.fullmatch(g):
        k = "-"
    elif _LIST_GAP.fullmatch(g):
        k = ","
    else:
        k = "x"
    if len(_GAP_KINDS) > 50_000:
        _GAP_KINDS.clear()
    _GAP_KINDS[gap] = k
    return k


def _e(u: str, v: str) -> tuple[str, str]:
    return (u, v) if u <= v else (v, u)


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

    @classmethod
    def of(cls, facts: Facts) -> Context:
        gs = []
        for lg in facts.graphs:
            gs.append(_G(lg=lg, drawn=lg.graph, asked=lg.asked,
                         drawn_edges=frozenset(_e(u, v) for u, v in lg.graph.edges()),
                         asked_edges=frozenset(_e(u, v) for u, v in lg.asked.edges())))
        names = frozenset(n for g in gs for n in (*g.drawn.nodes, *g.asked.nodes))
        return cls(facts=facts, graphs=gs, names=names, shapes=frozenset(_shape(n) for n in names))


_CTX_CACHE: dict[str, Context] = {}


def context_for(evidence: Evidence) -> Context:
    ctx = _CTX_CACHE.get(evidence.sha256)
    if ctx is None:
        if len(_CTX_CACHE) > 4096:
            _CTX_CACHE.clear()
        ctx = _CTX_CACHE[evidence.sha256] = Context.of(evidence.facts)
    return ctx


# --------------------------------------------------------------------------------------------- scoring


@dataclass
class _Step:
    pos: int
    key: tuple[Any, ...]
    claim: str
    correct: bool
    error_type: str = "none"
    kind: str = "inference"
    relevant: bool = True


class _Scorer:
    def __init__(self, ctx: Context, text: str) -> None:
        self.ctx = ctx
        self.f = ctx.facts
        self.text = text
        self.steps: dict[tuple[Any, ...], _Step] = {}
        self.inert = 0  # correct steps that neither earn nor cost
        self._kw: dict[str, list[int]] | None = None
        self.gctx_pos: list[int] = []
        self.gctx_idx: list[int] = []
        if self.f.paired:
            for m in _GRAPH_CTX.finditer(text):
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
        self.steps[key] = _Step(pos, key, " ".join(claim.split())[:_CLAIM_CHARS], correct,
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
        e = _e(u, v)
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

    # ---- claims

    def edge_claim(self, pos: int, end: int, u: str, v: str, weight: float | None) -> None:
        cands = self.graph_at(pos)
        e = _e(u, v)
        key = ("edge", tuple(cands), e, weight)
        ok = any(e in self.ctx.graphs[i].drawn_edges for i in cands)
        if not ok:
            self.add(pos, key, self.snippet(pos, end), False, self.edge_error(self.ctx.graphs[cands[0]], u, v))
            return
        if weight is not None and self.f.weighted:
            ws = [self.ctx.graphs[i].drawn.edges[e].get("weight") for i in cands if e in self.ctx.graphs[i].drawn_edges]
            ok = any(w is not None and abs(float(w) - weight) < 1e-6 for w in ws)
            self.add(pos, key, self.snippet(pos, end), ok, "perception")
            return
        self.add(pos, key, self.snippet(pos, end), True)

    def path_claim(self, pos: int, end: int, nodes: list[str], total: float | None) -> None:
        cands = self.graph_at(pos)
        key = ("path", tuple(cands), tuple(nodes), total)
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
                    if a == b or _e(a, b) not in g.asked_edges:
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
        key = ("dist", tuple(cands), _e(a, b), value)
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
            if _holds(prop, g.asked, s, self.f.query):
                ok = True
                break
            if any(n not in g.asked for n in s) or (g.lg.edit is not None and _holds(prop, g.drawn, s, self.f.query)):
                err = "visual_reasoning"
        self.add(pos, key, self.snippet(pos, end), ok, err)

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

    # ---- the pass

    def run(self) -> list[_Step]:
        text = self.text
        names = self.ctx.names
        shapes = self.ctx.shapes
        mentions: list[tuple[int, int, str]] = []
        for m in _TOKEN.finditer(text):
            tok = m.group(0)
            if tok in names or (tok not in _STOP and _shape(tok) in shapes):
                mentions.append((m.start(), m.end(), tok))
        self._arith()
        n = len(mentions)
        gaps: list[str] = [text[mentions[i][1] : mentions[i + 1][0]] for i in range(n - 1)]
        kinds: list[str] = [_gap_kind(g) if len(g) <= 60 else "x" for g in gaps]
        self._node_facts()
        i = 0
        while i < n:
            if i < n - 1 and kinds[i] in (">", "-"):
                k = kinds[i]
                j = i
                while j < n - 1 and kinds[j] == k:
                    j += 1
                self._run(mentions[i : j + 1], k)
                i = j
                continue
            self._single(i, mentions, kinds, gaps)
            i += 1
        return sorted(self.steps.values(), key=lambda s: s.pos)

    def _run(self, ms: list[tuple[int, int, str]], kind: str) -> None:
        toks = [t for _, _, t in ms]
        pos, end = ms[0][0], ms[-1][1]
        if any(t not in self.ctx.names for t in toks):
            # an invented label inside an edge or path: a perception error
            ghost = next(t for t in toks if t not in self.ctx.names)
            self.add(pos, ("ghost", ghost, tuple(toks)), self.snippet(pos, end), False, "perception")
            return
        after = self.text[end : end + 80]
        m = _COLOR_PAREN.match(after)
        if m:
            end += m.end()
            after = after[m.end() :]
        if kind == "-" and len(toks) == 2:
            m = _WEIGHT_AFTER.match(after) if self.f.weighted else None
            w = float(m.group(1)) if m else None
            self.edge_claim(pos, end + (m.end() if m else 0), toks[0], toks[1], w)
            return
        if kind == ">" and len(toks) == 2 and self.f.paired:
            self.mapping_claim(pos, end, toks[0], toks[1])
            return
        total = None
        tend = end
        m = _TOTAL_EQ.match(after) or _TOTAL_AFTER.match(after) or _HOPS_AFTER.match(after)
        if m:
            total, tend = float(m.group(1)), end + m.end()
        self.path_claim(pos, tend, toks, total)

    def _node_facts(self) -> None:
        """Claims about single nodes: colours, degrees (one pass of each pattern over the text)."""
        names = self.ctx.names
        for m in _COLOR_CLAIM.finditer(self.text):
            if m.group(1) in names:
                self.color_claim(m.start(), m.end(), m.group(1), m.group(2) or m.group(3))
        if "deg" in self.text or "Deg" in self.text:
            for m in _DEG_CLAIM.finditer(self.text):
                if m.group(1) in names:
                    self.degree_claim(m.start(), m.end(), m.group(1), int(m.group(2)))
            for m in _DEG_CLAIM_PREFIX.finditer(self.text):
                if m.group(1) in names:
                    self.degree_claim(m.start(), m.end(), m.group(1), int(m.group(2)))

    def near(self, kind: str, lo: int, hi: int) -> bool:
        """Whether a keyword of `kind` ends within [lo, hi] (positions found once per text)."""
        if self._kw is None:
            kw: dict[str, list[int]] = {"dist": [], "adj": [], "group": [], "set": []}
            for m in _KEYWORDS.finditer(self.text):
                kw[_KEYWORD_KINDS[m.lastindex or 0] or "dist"].append(m.end())
            self._kw = kw
        pos = self._kw[kind]
        i = bisect.bisect_left(pos, lo)
        return i < len(pos) and pos[i] <= hi

    def _list_after(self, i: int, mentions: list[tuple[int, int, str]], kinds: list[str]) -> int:
        j = i
        while j < len(kinds) and kinds[j] == ",":
            j += 1
        return j

    def _single(self, i: int, mentions: list[tuple[int, int, str]], kinds: list[str], gaps: list[str]) -> None:
        text = self.text
        start, end, tok = mentions[i]
        if tok not in self.ctx.names:
            return
        before = text[max(0, start - 60) : start]
        # distance d(A, B) = N
        mb = _DIST_BEFORE.search(before) if i + 1 < len(mentions) and self.near("dist", start - 20, start) else None
        if mb:
            s2, e2, tok2 = mentions[i + 1]
            if _DIST_MID.fullmatch(text[end:s2]) and tok2 in self.ctx.names:
                m = _DIST_AFTER.match(text[e2 : e2 + 40])
                if m:
                    self.distance_claim(start - (len(before) - mb.start()), e2 + m.end(), tok, tok2,
                                        float(m.group(1)))
        # adjacency A: B, C  /  A is connected to B and C  /  neighbours of A: B, C
        if i + 1 < len(mentions) and kinds[i] == "x" and len(gaps[i]) <= 60:
            gap = _COLOR_PAREN.sub("", gaps[i].replace("*", "").replace("`", ""), count=1)
            prefix = self.near("adj", start - 20, start) and _ADJ_PREFIX.search(before) is not None
            m = (_ADJ_PREFIX_GAP.fullmatch(gap) if prefix else None) or _adj_gap(gap)
            if m:
                j = self._list_after(i + 1, mentions, kinds)
                listed = [t for _, _, t in mentions[i + 1 : j + 1]]
                known = [t for t in listed if t in self.ctx.names]
                if known and len(known) == len(listed) and tok not in listed:
                    complete = prefix or bool(_ADJ_COMPLETE.search(gap))
                    bare_colon = gap.strip() == ":"
                    if bare_colon and self.f.paired and len(known) == 1:
                        self.mapping_claim(start, mentions[j][1], tok, known[0])  # "C1: C4" pairs graphs
                    elif not (bare_colon and self.f.task == "COL"):
                        self.adjacency_claim(start, mentions[j][1], tok, known, complete)
        # lists: colour groups and set properties (start of a list only)
        if i == 0 or kinds[i - 1] != ",":
            j = self._list_after(i, mentions, kinds)
            listed = [t for _, _, t in mentions[i : j + 1]]
            if all(t in self.ctx.names for t in listed):
                lend = mentions[j][1]
                m = _COLOR_GROUP_BEFORE.search(before) if self.near("group", start - 60, start) else None
                if m:
                    self.color_group_claim(start - (len(before) - m.start()), lend, m.group(1), listed)
                m = _SET_BEFORE.search(before) if self.near("set", start - 60, start) else None
                prop = m.group(1) if m else None
                sstart = start - (len(before) - m.start()) if m else start
                if prop is None:
                    m2 = _SET_AFTER.match(text[lend : lend + 60]) if self.near("set", lend, lend + 60) else None
                    if m2 and len(listed) >= 2:
                        prop = m2.group(1)
                        lend = lend + m2.end()
                if prop is not None:
                    self.set_claim(sstart, lend, prop, listed)

    def _arith(self) -> None:
        for m in _ARITH.finditer(self.text):
            terms = [float(m.group(1)), *(float(x) for x in re.findall(r"\d+(?:\.\d+)?", m.group(2)))]
            result = float(m.group(3))
            ok = abs(sum(terms) - result) < 1e-6
            self.add(m.start(), ("sum", tuple(terms), result), m.group(0), ok, "text_reasoning")


def _holds(prop: str, g: nx.Graph, nodes: list[str], query: Mapping[str, Any]) -> bool:
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


# --------------------------------------------------------------------------------------------- API


def final_answer_match(evidence: Evidence, gold_answer: Mapping[str, Any], gold_value: float | None,
                       text: str | None) -> bool:
    """The benchmark verifier's verdict on the response's final answer (any optimal answer matches)."""
    from gie import answers
    from nphe4v.core.extract import extract_final_answer
    from nphe4v.core.schema import Gold, ParseError

    extracted = extract_final_answer(text)
    if isinstance(extracted, ParseError):
        return False
    canonical = answers.parse(evidence.task, extracted)
    if isinstance(canonical, ParseError):
        return False
    gold = Gold(answer=dict(gold_answer), value=gold_value)
    asked = [g.asked for g in evidence.facts.graphs]
    return answers.verify(evidence.task, asked, evidence.facts.query, gold, canonical).verdict == "correct"


def claims_region(text: str) -> str:
    """The part of a response whose claims are scored: everything before its last final-answer block."""
    text = text[:MAX_SCAN_CHARS]
    last = None
    for m in _FINAL.finditer(text):
        last = m
    return text[: last.start()] if last is not None else text


@dataclass
class RuleVerdict:
    """The rule scorer's verdict: the same interface as `JudgeVerdict` (steps with claim / kind / relevant
    / correct / error_type, final_answer_match, n_correct, error_counts()) plus `vgr`, without per-step
    validation, since this is the hot path of big runs. Its `final_answer_match` is the exact verifier's
    verdict. `to_verdict()` gives the pydantic model."""

    steps: list[_Step]
    final_answer_match: bool

    @property
    def n_correct(self) -> int:
        return sum(1 for s in self.steps if s.correct)

    def error_counts(self) -> dict[str, int]:
        return error_counts(self.steps)

    @property
    def vgr(self) -> float:
        return vgr_of(self.steps, self.final_answer_match)

    def to_verdict(self) -> JudgeVerdict:
        return JudgeVerdict(
            steps=[JudgeStep(claim=s.claim, correct=s.correct, error_type=s.error_type, kind=s.kind,  # type: ignore[arg-type]
                             relevant=s.relevant) for s in self.steps],
            final_answer_match=self.final_answer_match,
        )


def score_response(
    evidence: Evidence,
    text: str | None,
    *,
    final_match: bool | None = None,
    gold_answer: Mapping[str, Any] | None = None,
    gold_value: float | None = None,
) -> RuleVerdict:
    """Step-level verdict of one response. `final_match` (e.g. the run's verifier verdict == correct)
    skips re-verifying the final answer; otherwise `gold_answer`/`gold_value` are needed."""
    if final_match is None:
        if gold_answer is None:
            raise ValueError("give final_match or the gold answer")
        final_match = final_answer_match(evidence, gold_answer, gold_value, text)
    if not text:
        return RuleVerdict(steps=[], final_answer_match=bool(final_match))
    scorer = _Scorer(context_for(evidence), claims_region(text))
    return RuleVerdict(steps=scorer.run(), final_answer_match=bool(final_match))


# --------------------------------------------------------------------------------------------- synthetic


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
        for u, v in sorted(_e(a, b) for a, b in g.asked.edges()):
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
        lines.append(f"Path: {chain}" + (f", total {total}" if total is not None else "") + ".")
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

