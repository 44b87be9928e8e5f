"""VGR v4's claim reader: free text -> typed claims, whatever the notation. It judges nothing.

The reader turns the reasoning of a response into `Claim`s. *Perception* claims restate the input (an edge,
its weight, a neighbour list); *derived* claims state something the answer is built from (a walk with its
running totals or total, a distance, a set with its property, a neighbour set of a query node, a mapping
pair, a colour assignment). `judge.vgr4` checks them against the graph and decides the credit.

Notations read to the same claims: arrows (`->`, `→`, `\\to`, `\\rightarrow`, `\\mapsto`, "to", "then"),
numbered / nested / bulleted lists, markdown tables and CSV (read by what each column holds, never by a header
word), JSON of any shape (flattened to `key: value` lines), LaTeX (`$d(A,B)=5$`, `\\text{}`), thousands
separators and units, and keywords in English, German, French, Spanish and Chinese. Statements with a negation
("there is no edge A-B", "is not a clique") or a rejection ("conflict", "invalid") are kept but *neutral*: the
judge neither credits nor charges them. Claims inside a ```python block are the program's transcription:
perception only (its printed values, outside the block, are read like any text).

Linear time: every pattern is a single regular-expression pass over a line without nested quantifiers over
the same characters; JSON is decoded once per block start and the scan resumes past a failed decode; the
text read is capped at `MAX_READ_CHARS`.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from judge.rule_grammar import STOP_WORDS, shape

MAX_READ_CHARS = 200_000
PROGRAM = "\x00program"  # marks a line of a ```python block (its transcription is perception)

# ------------------------------------------------------------------------------------------ vocabulary

_KW: dict[str, str] = {}


def _kw(kind: str, words: str) -> None:
    for w in words.split():
        _KW[w] = kind


_kw("path", "path paths route walk pfad weg chemin camino ruta percorso")
_kw("tour", "tour tours rundreise rundtour tournée tournee recorrido circuit")
_kw("cycle", "cycle cycles zyklus kreis ciclo")
_kw("clique", "clique cliques clica")
_kw("indep", "independent unabhängige unabhängig unabhaengige indépendant indépendante independiente")
_kw("cover", "cover überdeckung knotenüberdeckung couverture cobertura recubrimiento cubrimiento")
_kw("common", "common gemeinsame gemeinsamen commun communs communs comunes común comun")
_kw("neigh", "neighbors neighbours neighbor neighbour nachbarn nachbar voisins voisin vecinos vecino adjacent "
             "benachbart adjacents adyacentes")
_kw("conn", "connected linked connects verbunden relié reliée conectado conectada")
_kw("dist", "distance distances dist hops hop abstand entfernung distanz distancia costs cost kostet kosten "
            "coûte cuesta length länge longueur longitud apart")
_kw("total", "total totals sum insgesamt gesamt summe somme suma")
_kw("run", "cumulative running cumul acumulado bisher kumulativ")  # a running total beside a hop
_kw("edge", "edge edges link links kante kanten arête arêtes arista aristas line lines")
_kw("weight", "weight weights gewicht poids peso")
_kw("color", "color colour colors colours farbe couleur class classes coloring colouring färbung coloration "
             "coloración")
_kw("map", "maps mapped mapping map corresponds correspond matched matches abbildung zuordnung entspricht "
           "zugeordnet correspond correspondance corresponde")
_kw("neg", "no not none never isn't aren't doesn't don't cannot can't without nor kein keine keinen nicht "
           "pas sin ningún ninguna")
_kw("rej", "invalid fails fail failed conflict conflicts reject rejected rejects impossible backtrack "
           "backtracking discard discarded ungültig konflikt invalide conflit inválido inválida conflicto")
_kw("to", "to nach zu à hacia hasta")
_kw("then", "then dann puis luego")
_kw("and", "and und et y")

# Chinese keywords (no spaces between words): found by substring within a CJK run
_CJK = [("路径", "path"), ("回路", "tour"), ("环", "cycle"), ("圈", "cycle"), ("团", "clique"), ("独立集", "indep"),
        ("覆盖", "cover"), ("共同", "common"), ("邻居", "neigh"), ("相邻", "neigh"), ("距离", "dist"),
        ("总", "total"), ("着色", "color"), ("边", "edge"), ("权重", "weight"), ("颜色", "color"), ("映射", "map"), ("对应", "map"),
        ("没有", "neg"), ("不", "neg"), ("无效", "rej"), ("冲突", "rej"), ("到", "to"), ("至", "to"), ("和", "and"),
        ("与", "and"), ("然后", "then"), ("成本", "dist"), ("花费", "dist")]

SET_KW = {"clique": "clique", "indep": "independent set", "cover": "vertex cover", "common": "common"}
_COLOR_NAMES = frozenset("red blue green yellow orange purple pink grey gray black white brown cyan teal mint "
                         "rose sky amber lilac lemon coral lime".split())

# ------------------------------------------------------------------------------------------ normalisation

_LATEX = [
    (re.compile(r"\\(?:text|mathrm|mathit|mathbf|textbf|operatorname)\s*\{([^{}\n]{0,200})\}"), r"\1"),
    (re.compile(r"\\(?:to|rightarrow|longrightarrow|mapsto|Rightarrow|implies|longmapsto)(?![A-Za-z])"), " → "),
    (re.compile(r"\\(?:leftrightarrow|Leftrightarrow|iff)(?![A-Za-z])"), " ↔ "),
    (re.compile(r"\\[{}]"), lambda m: m.group(0)[1]),
    (re.compile(r"\\(?:cap)(?![A-Za-z])"), " ∩ "),
    (re.compile(r"\\(?:neq|ne)(?![A-Za-z])"), " ≠ "),
    (re.compile(r"\\(?:quad|qquad|,|;|!|left|right|displaystyle)(?![A-Za-z])"), " "),
    (re.compile(r"\\\\"), "\n"),
    (re.compile(r"\$+|\\\(|\\\)|\\\[|\\\]"), " "),
]
_THOUSANDS = re.compile(r"(?<=\d)[,\u202f\u00a0'’](?=\d{3}(?![\d.]))")
_MARKER = re.compile(r"^\s*(?:[-*•+◦▪‣]|\d{1,3}[.)]|\(\d{1,3}\)|[a-z][.)]|(?:step|schritt|étape|paso)\s*\d{1,3}\s*[:.)]"
                     r"|#{1,6})\s+", re.I)
_FENCE = re.compile(r"^\s*```\s*([A-Za-z0-9_+-]*)\s*$")
_TABLE_SEP = re.compile(r"^\s*\|?\s*:?-{2,}")
_SEXPR_SPLIT = re.compile(r"\)\s?\(")
_SENT_SPLIT = re.compile(r"(?<=[.!?;])\s+(?=\S)|[。；！？\n]")
_TOKEN = re.compile(
    r"(?P<num>\d+(?:\.\d+)?)(?![A-Za-z_])"
    r"|(?P<word>[A-Za-z0-9_À-ɏ]+(?:'t(?![A-Za-z]))?)"
    r"|(?P<arrow>-+>|=+>|→|⟶|⇒|➔|➜|↦|⟹|⇢|⟼)"
    r"|(?P<bi><-+>|↔|⟷|<=>)"
    r"|(?P<dash>-{1,2}|–{1,2}|—|―|−)"
    r"|(?P<eq>=|:|：|≡)"
    r"|(?P<neq>≠|!=)"
    r"|(?P<lp>[(\[{])|(?P<rp>[)\]}])"
    r"|(?P<sep>[,;、，&/])"
    r"|(?P<cap>∩)"
    r"|(?P<plus>\+)"
    r"|(?P<rejsym>[✗✘❌×])"
    r"|(?P<cjk>[\u4e00-\u9fff]+)"
)
_UNITS = frozenset("km mi miles mile hops hop units unit edges steps m kilometers kilometres".split())


_WORDS = re.compile(r"[A-Za-z0-9_À-ɏ]+")
# words between a graph-1 node and a graph-2 node that make the pair a mapping ({"g1": "C1", "g2": "O2"})
_CLASS_WORD = re.compile(r"(?:c|class|color|colour)_?(\d{1,2})")
# words between a node and its colour class ("A gets colour 2", "A bekommt Farbe 2", "c(A) = 2")
_ASSIGN_WORDS = frozenset("gets get is assigned receives takes has in with bekommt erhält ist reçoit est recibe es el "
                          "recebe the la le".split())
_MAP_WORDS = frozenset("is onto g2 graph2 graph_2 molecule2 target est associé associée associe es asociado "
                       "asociada asignado asignada corresponde ist wird auf abgebildet zugeordnet se asigna a "
                       "asignar".split())
# words that open a statement about the previous one ("that fails because ..."): a rejection there rejects it
_ANAPHORA = frozenset("that this it which so thus hence but dies das es cela ce ceci esto eso".split())
_CHEAP_KW = frozenset({"rej", "total", "dist", "weight"})  # kinds a statement without nodes can matter by


def _has_node(s: str, lex: Lexicon) -> bool:
    """Whether a node name occurs in `s` (a fast check in C before the full tokenizer)."""
    return not lex.names.isdisjoint(_WORDS.findall(s))


@dataclass(frozen=True)
class Lexicon:
    """What the reader needs of an instance: its node names (per graph on paired tasks), task and query."""

    names: frozenset[str]
    task: str
    query: dict[str, Any]
    paired: bool
    g1: frozenset[str] = frozenset()
    g2: frozenset[str] = frozenset()
    shapes: frozenset[str] = frozenset()  # label shapes of the names (JFK -> AAA, C1 -> A9, Cl1 -> Aa9)


@dataclass
class Claim:
    kind: str  # perception: edge, adj, pairnum ; derived: walk, dist, set, neigh, map, assign
    nodes: tuple[str, ...]
    value: float | None = None  # weight, distance, total
    prop: str = ""  # set property, colour label
    nums: tuple[tuple[int, float], ...] = ()  # walk: a number beside node i (a running total or hop weight)
    graph: int | None = None  # paired tasks: the molecule named (0/1)
    pos: int = 0  # statement index (order of appearance)
    soft: bool = False  # read from a table/CSV cell by inferred meaning: if false, neutral (not an error)
    neutral: bool = False  # negated or rejected by the response: neither credit nor error
    code: bool = False  # inside a program: perception only
    complete: bool = False  # neigh: the full neighbour list is claimed
    closed: bool = False  # walk: a tour/cycle stated without repeating its first node

    @property
    def derived(self) -> bool:
        return self.kind in ("walk", "dist", "set", "neigh", "map", "assign")


@dataclass
class Reading:
    claims: list[Claim] = field(default_factory=list)
    nodes_seen: int = 0  # distinct node names mentioned in the reasoning
    words: int = 0

    @property
    def unreadable(self) -> bool:
        """Text that talks about the graph (or is long) but states no claim the reader can parse."""
        return not self.claims and (self.nodes_seen >= 2 or self.words >= 60)


# ------------------------------------------------------------------------------------------ tokens


@dataclass(slots=True)
class _Tok:
    t: str  # node num kw arrow bi dash eq neq lp rp sep cap word colorword
    v: Any


_SKIP = _Tok("skip", "")
# What a token's text means apart from node names (which depend on the instance): memoised, since the same
# words, numbers and symbols recur across responses. Tokens are never mutated, so one object serves all.
_TOK_CACHE: dict[str, _Tok | tuple[_Tok, ...]] = {}


def _classify(kind: str | None, text: str) -> _Tok | tuple[_Tok, ...]:
    if kind == "num":
        return _Tok("num", float(text))
    if kind == "word":
        low = text.lower()
        k = _KW.get(low)
        if k is None and low.endswith("s"):
            k = _KW.get(low[:-1])
        if k is None and "_" in low:  # JSON keys: distance_from_start, independent_set
            k = next((_KW[p] for p in low.split("_") if p in _KW and _KW[p] not in ("to", "and")), None)
        if k == "and":
            return _Tok("sep", ",")
        if k is not None:
            return _Tok("kw", k)
        if low in _UNITS:
            return _SKIP
        if low in _COLOR_NAMES:
            return _Tok("colorword", low)
        return _Tok("word", low)
    if kind == "cjk":
        return tuple(_Tok("sep", ",") if k == "and" else _Tok("kw", k) for key, k in _CJK if key in text)
    if kind == "rejsym":
        return _Tok("kw", "rej")
    if kind == "cap":
        return _Tok("kw", "common")
    return _Tok(kind or "word", text)


def _tokens(s: str, lex: Lexicon) -> list[_Tok]:
    out: list[_Tok] = []
    names = lex.names
    cache = _TOK_CACHE
    for m in _TOKEN.finditer(s):
        text = m.group(0)
        if text in names:
            out.append(_Tok("node", text))
            continue
        if text[:1].isupper() and text not in STOP_WORDS and shape(text) in lex.shapes:
            out.append(_Tok("node", text))  # shaped like the graph's labels but not one: an invented node
            continue
        tok = cache.get(text)
        if tok is None:
            if len(cache) > 100_000:
                cache.clear()
            tok = cache[text] = _classify(m.lastgroup, text)
        if tok.__class__ is tuple:
            out.extend(tok)  # type: ignore[arg-type]
        elif tok is not _SKIP:
            out.append(tok)  # type: ignore[arg-type]
    return out


# ------------------------------------------------------------------------------------------ statements


class _Statement:
    def __init__(self, toks: list[_Tok], lex: Lexicon, pos: int, soft: bool, code: bool, graph: int | None):
        self.toks, self.lex, self.pos, self.soft, self.code, self.graph = toks, lex, pos, soft, code, graph
        for i in range(1, len(toks) - 1):  # Spanish "de A a B": "a" between two nodes is "to"
            if toks[i].t == "word" and toks[i].v == "a" and toks[i - 1].t == "node" and toks[i + 1].t == "node":
                toks[i] = _Tok("kw", "to")
        self.kws = {t.v for t in toks if t.t == "kw"}
        self.types = {t.t for t in toks}
        self.words = words = {t.v for t in toks if t.t == "word"}
        if "n" in words and any(t.t == "word" and t.v == "n" and i + 1 < len(toks) and toks[i + 1].t == "lp"
                                for i, t in enumerate(toks)):
            self.kws.add("neigh")  # N(X)
        self.nodes = [t.v for t in toks if t.t == "node"]
        self.out: list[Claim] = []
        self.question = False
        self.walk_start: str | None = None
        self.names_graph = False
        self.open_dist: tuple[str, str] | None = None
        self.negated = bool(self.kws & {"neg", "rej"}) or "neq" in self.types

    def claim(self, kind: str, nodes: Iterable[str], **kw: Any) -> None:
        neutral = self.negated or self.question
        if self.code and kind in ("walk", "dist", "set", "neigh", "map", "assign"):
            neutral = True  # a program's logic is not a claim; what it prints is read elsewhere
        self.out.append(Claim(kind, tuple(nodes), pos=self.pos, soft=self.soft, neutral=neutral, code=self.code,
                              graph=self.graph, **kw))

    def read(self) -> list[Claim]:
        if not self.nodes:
            return []
        lex, task = self.lex, self.lex.task
        if lex.paired and (not self.names_graph or "map" in self.kws) and self._mapping():
            return self.out  # a statement about one named molecule ("In graph 1, C1: C2") maps nothing
        set_kw = [k for k in ("clique", "indep", "cover", "common") if k in self.kws]
        if task == "COL" and not set_kw and self._assign():
            return self.out
        if set_kw:
            self._set(SET_KW[set_kw[0]])
            return self.out
        if "neigh" in self.kws or ("conn" in self.kws and not self._has_arrow(symbols_only=True)):
            self._neigh()
            return self.out
        if ("dist" in self.kws or self._d_paren()) and not self._has_arrow(symbols_only=True) \
                and len(self.nodes) <= 2:
            if self._numbers():
                self._dist()
            elif len(self.nodes) == 2:
                self.open_dist = (self.nodes[0], self.nodes[1])  # "distance A – B" then "value: 3"
            return self.out
        if self._has_arrow() or ({"path", "tour", "cycle"} & self.kws and len(self.nodes) >= 2) \
                or self._chain_like():
            self._walk()
            return self.out
        self._edges()
        return self.out

    # -- helpers

    def _has_arrow(self, symbols_only: bool = False) -> bool:
        if len(self.nodes) < 2:
            return False
        return "arrow" in self.types or (not symbols_only and bool(self.kws & {"to", "then"}))

    def _chain_like(self) -> bool:
        """`A - B - C` (three or more nodes joined by dashes) or `(A, B, C) with length 12`: a walk."""
        if len(self.nodes) < 3:
            return False
        gaps: set[str] = set()
        seen = 0
        for t in self.toks:
            if t.t == "node":
                seen += 1
            elif 0 < seen < len(self.nodes) and t.t not in ("lp", "rp"):
                gaps.add(t.t)
        return gaps == {"dash"} or (gaps == {"sep"} and bool(self.kws & {"dist", "total"}))

    def _d_paren(self) -> bool:
        return "d" in self.words and any(t.t == "word" and t.v == "d" and i + 1 < len(self.toks)
                                         and self.toks[i + 1].t == "lp" for i, t in enumerate(self.toks))

    def _numbers(self) -> list[float]:
        return [t.v for t in self.toks if t.t == "num"]

    def _mapping(self) -> bool:
        """GED/MCS: `a -> x`, `a ↔ x`, `a = x`, `a maps to x`, `a: x` pairs (a of graph 1, x of graph 2)."""
        toks, pairs = self.toks, []
        i = 0
        link = {"arrow", "bi", "eq"}
        while i < len(toks):
            if toks[i].t == "node":
                j = i + 1
                seen_link = False
                while j < len(toks) and j - i <= 6 and (
                        toks[j].t in link or toks[j].t in ("lp", "rp", "dash")
                        or (toks[j].t == "kw" and toks[j].v in ("map", "to"))
                        or (toks[j].t == "word" and (toks[j].v in _MAP_WORDS or toks[j].v.startswith("g2_")))):
                    seen_link = seen_link or toks[j].t not in ("lp", "rp", "dash")
                    j += 1
                if seen_link and j < len(toks) and toks[j].t == "node":
                    a, x = toks[i].v, toks[j].v
                    g1, g2, names = self.lex.g1, self.lex.g2, self.lex.names
                    # an invented node on one side: a pair all the same (judged false)
                    if (a in g1 or a not in names) and (x in g2 or x not in names) and (a in names or x in names):
                        pairs.append((a, x))
                        i = j + 1
                        continue
            i += 1
        if not pairs and "map" in self.kws and len(self.nodes) == 2 and self.nodes[0] in self.lex.g1 \
                and self.nodes[1] in self.lex.g2:
            pairs = [(self.nodes[0], self.nodes[1])]  # "pair (A, X) of the mapping"
        if not pairs or "edge" in self.kws and "map" not in self.kws:
            return False
        if len(pairs) * 2 < len(self.nodes) and "map" not in self.kws:
            return False  # a walk or an edge list that happens to hold one arrow
        for a, x in pairs:
            self.claim("map", (a, x))
        return True

    def _assign(self) -> bool:
        """COL: `A: 1`, `A = colour 2`, `A -> 3`, `A gets colour 2`, `colour 1: A, B`."""
        toks = self.toks
        got = False
        i = 0
        while i < len(toks):
            t = toks[i]
            if t.t == "node":
                j = i + 1
                while j < len(toks) and j - i <= 4 and toks[j].t in ("eq", "arrow", "lp", "rp", "kw", "word") and \
                        not (toks[j].t == "kw" and toks[j].v not in ("color", "to")) and \
                        not (toks[j].t == "word" and toks[j].v not in _ASSIGN_WORDS):
                    j += 1
                if j < len(toks) and (j > i + 1 or "color" in self.kws) and toks[j].t == "num" \
                        and float(toks[j].v).is_integer() \
                        and toks[j].v <= 50:
                    self.claim("assign", (t.v,), prop=str(int(toks[j].v)))
                    got = True
                    i = j + 1
                    continue
            i += 1
        for i, t in enumerate(toks[:-1]):  # mermaid classes: "A:::c2"
            if t.t == "node" and i + 2 < len(toks) and toks[i + 1].t == "eq" and toks[-1] is not t:
                k = next((x for x in toks[i + 1:i + 5] if x.t != "eq"), None)
                m = _CLASS_WORD.fullmatch(k.v) if k is not None and k.t == "word" else None
                if m:
                    self.claim("assign", (t.v,), prop=m.group(1))
                    got = True
        if got:
            return True
        # colour k: A, B, C
        for i, t in enumerate(toks[:-1]):
            if t.t == "kw" and t.v == "color" and toks[i + 1].t == "num":
                rest = [x.v for x in toks[i + 2:] if x.t == "node"]
                for n in rest:
                    self.claim("assign", (n,), prop=str(int(toks[i + 1].v)))
                return bool(rest)
        return False

    def _set(self, prop: str) -> None:
        nodes = list(dict.fromkeys(self.nodes))
        q = self.lex.query
        pair = self._of_pair() if prop == "common" else None
        if pair is not None and set(pair) != {str(q.get("source")), str(q.get("target"))}:
            self.claim("note", pair)  # the common neighbours of another pair: another question
            self.out[-1].neutral = True
            return
        if prop == "common":
            ends = [str(q.get("source")), str(q.get("target"))]
            rest = [n for n in nodes if n not in ends]
            if rest or all(e in nodes for e in ends):
                nodes = rest
            if not nodes:
                return
        self.claim("set", nodes, prop=prop)

    def _of_pair(self) -> tuple[str, str] | None:
        """The pair named by "of X and Y" / "N(X) ∩ N(Y)" / "X 和 Y 的", when the statement names one."""
        toks = self.toks
        idx = [i for i, t in enumerate(toks) if t.t == "node"]
        if len(idx) < 2:
            return None
        i, j = idx[0], idx[1]
        before = toks[i - 1] if i else None
        if before is not None and ((before.t == "word" and before.v in ("of", "von", "de", "between", "zwischen",
                                                                        "entre", "for", "für"))
                                   or (before.t == "lp" and i >= 2 and toks[i - 2].t == "word"
                                       and toks[i - 2].v == "n")):
            if all(t.t in ("sep", "rp", "lp", "kw", "word") for t in toks[i + 1:j]):
                return (toks[i].v, toks[j].v)
        return None

    def _neigh(self) -> None:
        toks = self.toks
        head = None
        for _i, t in enumerate(toks):  # "neighbours of X", "N(X)", "X's neighbours"
            if t.t == "node":
                head = t.v
                break
        if head is None:
            return
        listed = [n for n in dict.fromkeys(self.nodes) if n != head]
        if not listed:
            if "neigh" in self.kws and not self._numbers():  # "N(S) = {}": an empty neighbourhood
                q = self.lex.query
                query = self.lex.task == "CN" and head in (str(q.get("source")), str(q.get("target")))
                self.claim("neigh" if query else "adj", (head,), complete=True)
            return
        q = self.lex.query
        nums = self._numbers()
        if len(listed) == 1 and len(nums) == 1 and self.lex.task != "CN":
            self.claim("edge", (head, listed[0]), value=nums[0])  # "A is connected to B (weight 5)"
            return
        complete = "neigh" in self.kws and "conn" not in self.kws
        if self.lex.task == "CN" and head in (str(q.get("source")), str(q.get("target"))):
            self.claim("neigh", (head, *listed), complete=complete)
        else:
            self.claim("adj", (head, *listed), complete=complete)

    def _dist(self) -> None:
        nums = self._numbers()
        if len(self.nodes) == 2 and len(nums) >= 2 and self.kws & {"total", "run"} and self.kws & {"to", "then"}:
            # "from A to B costs 5, so reaching B costs 12 in total": a hop with its running total
            self.claim("walk", tuple(self.nodes), nums=((1, nums[-1]),))
            return
        src = self.lex.query.get("source")
        if len(self.nodes) == 2:
            a, b = self.nodes
        elif self.lex.task == "SD" and src is not None and self.nodes[0] != str(src):
            a, b = str(src), self.nodes[0]
        elif self.walk_start is not None and self.nodes[0] != self.walk_start:
            a, b = self.walk_start, self.nodes[0]  # "distance from start: X = 3" after a walk
        else:
            return
        self.claim("dist", (a, b), value=nums[-1])

    def _walk(self) -> None:
        toks = self.toks
        nodes: list[str] = []
        nums: dict[int, float] = {}
        total: float | None = None
        after_total = arrow_open = False
        depth = 0
        last_node = max(i for i, t in enumerate(toks) if t.t == "node")
        for i, t in enumerate(toks):
            if t.t == "node":
                if not nodes or nodes[-1] != t.v:
                    nodes.append(t.v)
                after_total = arrow_open = False
            elif t.t == "kw" and (t.v == "total" or (t.v in ("dist", "weight") and i > last_node)):
                after_total = True
            elif t.t == "lp":
                depth += 1
            elif t.t == "rp":
                depth = max(0, depth - 1)
            elif t.t == "arrow":
                arrow_open = True
            elif t.t == "num":
                if arrow_open and i < last_node and not after_total:
                    nums[len(nodes)] = t.v  # "A -->|5| B": the label on the arrow belongs to the hop into B
                elif after_total or (total is None and t is toks[-1] and nodes and len(nodes) - 1 in nums):
                    total = t.v
                elif nodes and (len(nodes) - 1) not in nums:
                    nums[len(nodes) - 1] = t.v
                elif nodes:
                    total = t.v
        if len(nodes) < 2:
            return
        tail = [t for t in toks[last_node + 1:]]
        tail_nums = [t.v for t in tail if t.t == "num"]
        hops = len(nodes) - 1
        if len(tail_nums) >= 2 and not any(i < hops for i in nums):
            # after the walk, a list of numbers: "= 5 + 7 = 12", "legs: 5, 7  length: 12": the hops' weights,
            # then the total
            nums = {i + 1: w for i, w in enumerate(tail_nums[:hops])} if len(tail_nums) in (hops, hops + 1) else {}
            total = tail_nums[-1] if len(tail_nums) != hops else None
        if len(nodes) == 2 and total is not None and not nums:
            nums[1], total = total, None  # one hop: its number is the running value at its end
        closed = bool({"tour", "cycle"} & self.kws) and nodes[0] != nodes[-1]
        # "A -> B -> C (12)": one number after the last node and none elsewhere is the total
        if total is None and list(nums) == [len(nodes) - 1] and len(nodes) > 2:
            total = nums.pop(len(nodes) - 1)
        self.claim("walk", nodes, value=total, nums=tuple(sorted(nums.items())), closed=closed)

    def _edges(self) -> None:
        """Edges: `A-B`, `A--B, weight 5`, `(A, B, 5)`, `A is connected to B`, a bare `A, B, 5` row."""
        toks = self.toks
        n = len(toks)
        found = False
        for i, t in enumerate(toks):
            if t.t != "node":
                continue
            j = i + 1
            while j < n and toks[j].t in ("dash", "bi", "sep", "word") and j - i <= 3 and \
                    not (toks[j].t == "word" and toks[j].v not in ("and", "between", "with")):
                j += 1
            if j >= n or toks[j].t != "node" or j == i + 1:
                continue
            gap = {x.t for x in toks[i + 1:j]}
            if not gap & {"dash", "bi"} and not (len(self.nodes) == 2 and ("edge" in self.kws
                                                                          or self._tuple_like())):
                continue
            w = None
            k = j + 1
            while k < n and k - j <= 4 and toks[k].t in ("sep", "lp", "eq", "kw", "word", "rp"):
                k += 1
            if k < n and toks[k].t == "num":
                w = toks[k].v
            after = [x.v for x in toks[j + 1:] if x.t == "num"]
            if len(after) == 2 and "run" in self.kws and len(self.nodes) == 2:
                # "A – B: 5 (cumulative 12)": a hop with its weight and the running total
                self.claim("walk", (t.v, toks[j].v), nums=((1, after[1]),))
                return
            self.claim("pairnum" if self.soft and w is not None else "edge", (t.v, toks[j].v), value=w)
            found = True
        if not found and "edge" in self.kws and len(self.nodes) == 2 and "between" in {x.v for x in toks}:
            self.claim("edge", tuple(self.nodes))

    def _tuple_like(self) -> bool:
        kinds = [t.t for t in self.toks if t.t not in ("lp", "rp", "sep")]
        return kinds in (["node", "node"], ["node", "node", "num"])


# ------------------------------------------------------------------------------------------ structures


def _flatten_json(v: Any, key: str = "", out: list[str] | None = None, depth: int = 0) -> list[str]:
    out = [] if out is None else out
    if depth > 20 or len(out) > 5000:
        return out
    prefix = f"{key}: " if key else ""

    def flat(x: Any) -> bool:
        return not isinstance(x, (dict, list)) or (isinstance(x, list) and all(
            not isinstance(y, (dict, list)) for y in x))

    if isinstance(v, dict):
        if 1 < len(v) <= 8 and all(flat(x) for x in v.values()) and any(isinstance(x, list) for x in v.values()) \
                and not all(str(k).isdigit() for k in v):  # {"1": [...], "2": [...]}: one line per class
            # one record ({"members": [...], "property": "clique"}, {"path": [...], "total": 12}): one statement
            out.append(prefix + "  ".join(f"{k}: {', '.join(map(str, x)) if isinstance(x, list) else x}"
                                          for k, x in v.items()))
            return out
        for k, x in v.items():
            if isinstance(x, (dict, list)):
                # the parent key stays with the child ({"path": {"nodes": [...]}} -> "path nodes: ...")
                _flatten_json(x, f"{key.rsplit(' ', 1)[-1]} {k}".strip(), out, depth + 1)
            else:
                out.append(f"{prefix}{k}: {x}")
    elif isinstance(v, list):
        if all(not isinstance(x, (dict, list)) for x in v):
            out.append(prefix + ", ".join(str(x) for x in v))
        else:
            for x in v:
                if isinstance(x, list) and all(not isinstance(y, (dict, list)) for y in x):
                    out.append(prefix + ", ".join(str(y) for y in x))
                elif isinstance(x, dict) and all(flat(y) for y in x.values()):
                    out.append(" ".join(f"{k} {', '.join(map(str, y)) if isinstance(y, list) else y}"
                                        for k, y in x.items()) + (f" ({key})" if key else ""))
                else:
                    _flatten_json(x, key, out, depth + 1)
    else:
        out.append(prefix + str(v))
    return out


def _cells(line: str) -> list[str]:
    s = line.strip()
    if s.startswith("|"):
        s = s[1:]
    if s.endswith("|"):
        s = s[:-1]
    return [c.strip() for c in s.split("|")]


def _cell_kind(cell: str, lex: Lexicon) -> str:
    toks = _tokens(cell, lex)
    nodes = [t for t in toks if t.t == "node"]
    nums = [t for t in toks if t.t == "num"]
    if not toks:
        return "empty"
    if len(nodes) == 1 and not nums and len(toks) <= 3:
        return "node"
    if len(nodes) == 2 and not nums and any(t.t in ("dash", "bi") for t in toks):
        return "pair"
    if len(nodes) >= 2 and any(t.t == "arrow" for t in toks):
        return "path"
    if len(nodes) >= 2:
        return "list"
    if not nodes and len(nums) == 1:
        return "num"
    return "text"


def _table_rows(rows: list[list[str]], header: list[str] | None, lex: Lexicon) -> list[str]:
    """Rows of a table (markdown or CSV) as statements, by what each column holds."""
    if not rows:
        return []
    width = max(len(r) for r in rows)
    kinds: list[str] = []
    for c in range(width):
        ks = {_cell_kind(r[c], lex) if c < len(r) else "empty" for r in rows} - {"empty"}
        kind = ks.pop() if len(ks) == 1 else ("list" if ks <= {"node", "list", "pair"} and ks else "text")
        if kind == "num" and c == 0 and [r[c].strip().rstrip(".") for r in rows if c < len(r)] in (
                [str(i) for i in range(1, len(rows) + 1)], [str(i) for i in range(len(rows))]):
            kind = "text"  # a row number ("#", "step"): not a value of the row
        kinds.append(kind)
    head = [h.lower() for h in (header or [])]
    task, q = lex.task, lex.query
    src = str(q.get("source")) if q.get("source") is not None else None
    out: list[str] = []
    # one node per row beside the same words ("M01, clique"): the rows list the members of one set
    if all(k in ("node", "text", "empty") for k in kinds) and kinds.count("node") == 1:
        c = kinds.index("node")
        labels = {" ".join(r[i] for i in range(min(len(r), width)) if kinds[i] == "text").strip() for r in rows}
        if len(labels) == 1:
            return [f"{labels.pop()} {' '.join(head)}: " + ", ".join(r[c] for r in rows if c < len(r))]
    prev_end: str | None = None
    firsts = [r[0] for r in rows if r]
    heads_distinct = len(set(firsts)) == len(firsts)
    seconds = [r[1] for r in rows if len(r) > 1]
    seconds_distinct = len(set(seconds)) == len(seconds)
    for r in rows:
        cells = [(kinds[c], r[c]) for c in range(min(len(r), width)) if kinds[c] not in ("text",)]
        pattern = [k for k, _ in cells]
        vals = [v for _, v in cells]
        text_cells = " ".join(r[c] for c in range(min(len(r), width)) if kinds[c] == "text")
        if pattern[:2] == ["node", "node"] and lex.paired and "num" not in pattern and seconds_distinct:
            out.append(f"{vals[0]} → {vals[1]}")  # an injective two-column table: a mapping
        elif pattern[:2] == ["node", "node"] and pattern[2:] in (["num", "num"],):
            # a hop with its weight and the running total: chained into one walk (judge.vgr4)
            start = vals[0]
            out.append(f"{start} ({0 if start == src else ''}) → {vals[1]} ({vals[3]})" if prev_end != start
                       else f"{start} → {vals[1]} ({vals[3]})")
            prev_end = vals[1]
        elif pattern in (["node", "node", "num"], ["pair", "num"]):
            a, b = (vals[0], vals[1]) if pattern[0] == "node" else [t.v for t in _tokens(vals[0], lex)
                                                                      if t.t == "node"]
            out.append(f"{a} — {b} ({vals[-1]})")
        elif pattern == ["node", "node"] and task == "CN" and heads_distinct:
            out.append(f"{vals[0]} neighbours: {vals[1]}")  # one row per node: a neighbour list
        elif pattern == ["node", "node"]:
            out.append(f"{vals[0]} — {vals[1]}")
        elif pattern == ["node", "num"] and task in ("COL", "SD"):
            if task == "COL":
                out.append(f"{vals[0]}: color {vals[1]}")
            elif src is not None:
                out.append(f"d({src}, {vals[0]}) = {vals[1]}")
        elif pattern == ["num", "list"] and task == "COL":
            out.append(f"color {vals[0]}: {vals[1]}")
        elif pattern in (["node", "list"], ["node", "node"]) or pattern[:2] == ["node", "list"]:
            out.append(f"{vals[0]} neighbours: {vals[1]}" if task == "CN" else f"{vals[0]}: {vals[1]}")
        elif pattern and pattern[0] in ("path", "list"):
            words = " ".join(head) + " " + text_cells
            out.append(f"{words}: {vals[0]}" + (f" total {vals[1]}" if len(vals) > 1 and pattern[1] == "num" else ""))
        else:
            out.append(" ".join(head) + ": " + " ".join(r))
    return out


def _is_csv_block(lines: list[str]) -> bool:
    return len(lines) >= 2 and lines[0].count(",") >= 1 and "." not in lines[0].rstrip(".")


# ------------------------------------------------------------------------------------------ the reader


def _normalise(text: str) -> str:
    if "\\" in text or "$" in text:
        for pat, rep in _LATEX:
            text = pat.sub(rep, text)  # type: ignore[arg-type]
    return text


def _thousands(s: str) -> str:
    return _THOUSANDS.sub("", s) if "," in s or "'" in s or "\u202f" in s or "\u00a0" in s else s


def statements(text: str, lex: Lexicon) -> list[tuple[str, bool, bool]]:
    """The text as statements (string, soft, code): structures expanded to lines first."""
    text = _normalise(text[:MAX_READ_CHARS])
    lines = text.split("\n")
    out: list[tuple[str, bool, bool]] = []
    i, n = 0, len(lines)
    in_code = False
    code_lang = ""
    json_resume = 0
    csv_resume = 0
    dec = json.JSONDecoder()
    offsets: list[int] = []
    off = 0
    for ln in lines:
        offsets.append(off)
        off += len(ln) + 1
    while i < n:
        ln = lines[i]
        fence = _FENCE.match(ln)
        if fence:
            if in_code:
                in_code = False
            else:
                in_code, code_lang = True, fence.group(1).lower()
            i += 1
            continue
        code = in_code and code_lang in ("python", "py", "python3")
        s = ln.strip()
        if code:
            out.append((PROGRAM + " " + s, False, True))
            i += 1
            continue
        # JSON of any shape, at a line start
        if s[:1] in "{[" and offsets[i] >= json_resume and not code:
            start = offsets[i] + (len(ln) - len(ln.lstrip()))
            try:
                val, end = dec.raw_decode(text, start)
            except ValueError as e:
                # resume past where the decode failed, so a long broken block is scanned once, not per line
                json_resume = max(start + 1, int(getattr(e, "pos", start + 1) or start + 1))
                val, end = None, None
            except RecursionError:  # nesting no answer has: no JSON is decoded from here on
                json_resume, val, end = len(text) + 1, None, None
            if end is not None and isinstance(val, (dict, list)):
                for flat in _flatten_json(val):
                    out.append((flat, False, False))
                while i < n and offsets[i] < end:
                    i += 1
                continue
        # markdown table
        if s.startswith("|") and i + 1 < n and _TABLE_SEP.match(lines[i + 1]) and not code:
            header = _cells(ln)
            j = i + 2
            rows = []
            while j < n and lines[j].strip().startswith("|"):
                rows.append(_cells(_thousands(lines[j])))
                j += 1
            for st in _table_rows(rows, header, lex):
                out.append((st, True, False))
            i = j
            continue
        if s.startswith("|") and s.count("|") >= 3 and not code:  # a table without a header line
            j = i
            rows = []
            while j < n and lines[j].strip().startswith("|"):
                if not _TABLE_SEP.match(lines[j]):
                    rows.append(_cells(lines[j]))
                j += 1
            for st in _table_rows(rows, None, lex):
                out.append((st, True, False))
            i = j
            continue
        # CSV: a header line without node names, then rows with as many commas
        if "," in s and not code and offsets[i] >= csv_resume and not _has_node(s, lex):
            j = i + 1
            block = []
            first: list[str] | None = None
            while j < n and lines[j].strip():
                row = next(csv.reader([lines[j]]), [])
                if len(row) != s.count(",") + 1:
                    break
                kinds = [_cell_kind(c.strip(), lex) for c in row]
                if first is not None and any(k != f and "empty" not in (k, f) for k, f in zip(kinds, first,
                                                                                         strict=True)):
                    break  # a row whose cells hold other things: the block has ended
                first = first or kinds
                block.append(lines[j])
                j += 1
            if block and _is_csv_block([s, *block]):
                rows = [[c.strip() for c in r] for r in csv.reader(block)]
                for st in _table_rows(rows, [c.strip() for c in s.split(",")], lex):
                    out.append((st, True, False))
                i = j
                continue
            csv_resume = offsets[j] if j < n else off  # not a CSV block: its lines never start another scan
        body = _MARKER.sub("", ln, count=1).strip()
        # nested lists: single-node items under a header ending with ":" join that header
        indent = len(ln) - len(ln.lstrip())
        nxt = lines[i + 1] if i + 1 < n else ""
        deeper = bool(_MARKER.match(nxt)) and len(nxt) - len(nxt.lstrip()) > indent
        if (body.endswith(":") or deeper) and not code:
            j = i + 1
            items = []
            while j < n:
                item = _MARKER.sub("", lines[j], count=1).strip()
                toks = _tokens(item, lex)
                kinds = [t.t for t in toks if t.t not in ("lp", "rp")]
                if item and kinds in (["node"], ["node", "num"]) and _MARKER.match(lines[j]) and (
                        body.endswith(":") or len(lines[j]) - len(lines[j].lstrip()) > indent):
                    items.append(item)
                    j += 1
                else:
                    break
            if items:
                out.append((body.rstrip(":") + ": " + ", ".join(items), False, False))
                i = j
                continue
        if body.startswith("(") and (") (" in body or ")(" in body):
            # an s-expression: each group is a statement, under the head word of the whole ("(mapping (a x) …")
            head = _WORDS.match(body, 1)
            sep = f")\n{head.group(0)} (" if head and not _has_node(head.group(0), lex) else ")\n("
            body = _SEXPR_SPLIT.sub(sep, body)
        if body:
            for part in _SENT_SPLIT.split(_thousands(body)):
                if part and part.strip():
                    out.append((part, False, code))
        i += 1
    return out


_GRAPH_CTX = re.compile(r"(?i)\b(?:graph|molecule|g)\s*(?:_\s*)?(1|2|one|two)\b|\b(first|second)\s+(?:graph|molecule)")


def read(text: str, lex: Lexicon) -> Reading:
    """Every claim of `text` (the reasoning of a response), in order."""
    reading = Reading()
    seen_nodes: set[str] = set()
    graph: int | None = None
    words = 0
    last: list[Claim] = []
    walk_start: str | None = None
    in_program = False
    open_dist: tuple[str, str] | None = None
    for pos, (s, soft, code) in enumerate(statements(text, lex)):
        ms = list(_GRAPH_CTX.finditer(s)) if lex.paired else []
        if lex.paired:
            m = ms[-1] if ms else None
            if m is not None:
                w = (m.group(1) or m.group(2) or "").lower()
                graph = 0 if w in ("1", "one", "first") else 1
        if code and s.startswith(PROGRAM):
            s = s[len(PROGRAM) + 1:]
            if not in_program:  # a program was read: its transcription is perception, never "unreadable"
                reading.claims.append(Claim("note", (), pos=pos, neutral=True, code=True))
                in_program = True
        else:
            in_program = False
        ws = _WORDS.findall(s)
        if lex.names.isdisjoint(ws) and not any(_KW.get(w.lower()) in _CHEAP_KW for w in ws) \
                and not any("\u4e00" <= ch <= "\u9fff" or ch in "✗✘❌" for ch in s):
            words += sum(1 for w in ws if not w.isdigit())  # no node and nothing a walk or rejection needs
            continue
        toks = _tokens(s, lex)
        words += sum(1 for t in toks if t.t in ("word", "kw"))
        seen_nodes.update(t.v for t in toks if t.t == "node")
        first = ws[0].lower() if ws else ""
        if any(t.t == "kw" and t.v == "rej" for t in toks) and (
                not any(t.t == "node" for t in toks) or first in _ANAPHORA):
            for c in last:  # "... Rejected." / "that fails because ..." after a candidate: the response rejects it
                c.neutral = True
        if not any(t.t == "node" for t in toks):
            nums = [t.v for t in toks if t.t == "num"]
            kws = {t.v for t in toks if t.t == "kw"}
            if len(nums) == 1 and kws & {"total", "dist"} and last and last[-1].kind == "walk" \
                    and last[-1].value is None:
                last[-1].value = nums[0]  # "Total: 12" on the line after a walk: that walk's total
            elif len(nums) == 1 and "weight" in kws and last and last[-1].kind == "edge" and last[-1].value is None:
                last[-1].value = nums[0]  # {"edge": [A, B], "weight": 5}: that edge's weight
            elif len(nums) == 1 and open_dist is not None:
                d = Claim("dist", open_dist, value=nums[0], pos=pos)
                reading.claims.append(d)
                last = [d]
            open_dist = None
            continue
        st = _Statement(toks, lex, pos, soft, code, graph)
        st.walk_start = walk_start
        # a statement about one named molecule (naming both is a mapping's "graph 1 -> graph 2")
        st.names_graph = len({(m.group(1) or m.group(2) or "").lower() in ("1", "one", "first") for m in ms}) == 1
        st.question = s.rstrip().endswith(("?", "？"))
        got = st.read()
        open_dist = st.open_dist
        if not got and st.kws & {"neg", "rej"}:
            # a negative or rejected statement the reader has no form for: read, and neutral
            got = [Claim("note", tuple(st.nodes), pos=pos, neutral=True)]
        reading.claims.extend(got)
        if got:
            last = got
        for c in got:
            if c.kind == "walk":
                walk_start = c.nodes[0]
    reading.nodes_seen = len(seen_nodes)
    reading.words = words
    return reading


def lexicon_of(names: Iterable[str], task: str, query: dict[str, Any], graphs: list[Iterable[str]]) -> Lexicon:
    gs = [frozenset(str(n) for n in g) for g in graphs]
    ns = frozenset(str(n) for n in names)
    # shapes of multi-character labels only: a one-letter shape would make every capital a node
    shapes = frozenset(shape(n) for n in ns if len(n) >= 2 and not n.isdigit())
    return Lexicon(ns, task, dict(query), len(gs) > 1, gs[0] if gs else frozenset(),
                   gs[1] if len(gs) > 1 else frozenset(), shapes)


ReadFn = Callable[[str, Lexicon], Reading]
