"""VGR v4's claim reader, its vocabulary: keywords in five languages, the normalising patterns, the token
classes, and the types a reading is made of (`Lexicon`, `Claim`, `Reading`). See `judge.reader`."""

from __future__ import annotations

import re
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
_kw("clique", "clique cliques clica triangle triangles dreieck dreiecke triángulo triángulos")  # a triangle: a 3-clique
_kw("indep", "independent unabhängige unabhängig unabhaengige indépendant indépendante independiente")
_kw("cover", "cover covers überdeckung knotenüberdeckung deckt abdeckt überdeckt couverture couvre couvrent "
             "cobertura recubrimiento cubrimiento cubre cubren")
_kw("common", "common gemeinsame gemeinsamen commun communs communs comunes común comun")
_kw("neigh", "neighbors neighbours neighbor neighbour nachbarn nachbar voisins voisin vecinos vecino")
# "X is adjacent to A, B" names some of X's neighbours, "the neighbours of X are A, B" all of them: read alike
# except for that (`_Statement._neigh`)
_kw("adjw", "adjacent benachbart adjacents adyacente adyacentes")
_kw("conn", "connected linked connects verbunden relié reliée conectado conectada")
_kw("dist", "distance distances dist abstand entfernung distanz distancia costs cost kostet kosten "
            "coûte cuesta length länge longueur longitud apart")
# "3 hops": a count of edges, which is the distance only where the graph has no weights (`_Statement`)
_kw("hops", "hops hop")
_kw("total", "total totals sum insgesamt gesamt summe somme suma")
_kw("run", "cumulative running cumul acumulado bisher kumulativ far accumulated")  # a running total beside a hop
# ("far": "so far", "the distance so far is 12")
_kw("edge", "edge edges link links kante kanten arête arêtes arista aristas line lines")
_kw("weight", "weight weights gewicht poids peso")
_kw("deg", "degree degrees grad degré grado")
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
        ("覆盖", "cover"), ("共同", "common"), ("邻居", "neigh"), ("相邻", "adjw"), ("距离", "dist"),
        ("总", "total"), ("着色", "color"), ("边", "edge"), ("权重", "weight"), ("颜色", "color"), ("映射", "map"), ("对应", "map"),
        ("没有", "neg"), ("不", "neg"), ("无效", "rej"), ("冲突", "rej"), ("到", "to"), ("至", "to"), ("和", "and"),
        ("与", "and"), ("然后", "then"), ("成本", "dist"), ("花费", "dist"),
        ("包括", "some"), ("包含", "some"), ("之一", "some")]  # "some": a partial list ("A的邻居包括B")

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
# a count of hops, edges or steps ("Total 2 hops: A -> B -> C" states no length; `_UNITS` drops these words from
# the tokens, so the statement's text is searched)
_COUNTED = re.compile(r"\d\s*(?:hops?|edges?|legs?|steps?|stops?|nodes?|cities|vertices|kanten|arêtes|aristas|sauts"
                      r"|saltos|étapes|schritte|pasos)\b", re.I)
# TOML: a `[table.name]` header and the `key = value` lines under it
_TOML_HEAD = re.compile(r"^\[\s*([A-Za-z_][\w.\- ]*?)\s*\]$")
_TOML_PAIR = re.compile(r'^\s*(?:"[^"]+"|[\w-]+)\s*=\s*\S')
_TOML_PARTS = re.compile(r"[._\s]+")
_TABLE_SEP = re.compile(r"^\s*\|?\s*:?-{2,}")
_SEXPR_SPLIT = re.compile(r"\)\s?\(")
_SENT_SPLIT = re.compile(r"(?<=[.!?;])\s+(?=\S)|[。；！？\n]")
_TOKEN = re.compile(
    r"(?P<num>\d+(?:\.\d+)?)(?![A-Za-z_\d])"  # not 4 of `44E`: backtracking past a node name's digits
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
    r"|(?P<sigma>[Σ∑])"
    r"|(?P<delta>δ)"
    r"|(?P<cjk>[\u4e00-\u9fff]+)"
)
# the words that name one graph of a paired task beside its number ("graph 1", "Molekül 2", "g1"): read by the
# statement splitter (`reader._GRAPH_CTX`) and the edge reader (`reader_statements._graph_mentions`)
GRAPH_NOUNS = ("graph", "graphe", "grafo", "molecule", "molécule", "molekül", "molécula", "g")
# words that make the node after them a node the distance is taken through, not an end ("the distance to B
# through A is 12": a Dijkstra relaxation, d(source, A) + w(A, B))
VIA_WORDS = frozenset("via through thru über par por através".split())
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
# possessives before a neighbour word name neighbours of a node the statement does not name ("remove its
# neighbours A, B")
POSSESSIVES = frozenset("its their his her seine ihre ses leurs sus".split())
# words that open a statement about the previous one ("that fails because ..."): a rejection there rejects it
_ANAPHORA = frozenset("that this it which so thus hence but dies das es cela ce ceci esto eso".split())
# scripts of languages the reader has no vocabulary for (kana, Cyrillic, Greek, Hangul, Arabic, Hebrew, Thai,
# Devanagari): English, German, French, Spanish (Latin) and Chinese (Han) are read
# (Greek only as two letters in a row: one Greek letter is mathematics, `Σ = 12`, `δ(A, B)`, not a language)
OTHER_SCRIPT = re.compile(r"[\u3040-\u30ff\u0400-\u04ff\uac00-\ud7af\u0600-\u06ff\u0590-\u05ff"
                          r"\u0e00-\u0e7f\u0900-\u097f]|[\u0370-\u03ff]{2}")
_ANY_WORD = re.compile(r"[^\W\d_]{2,}")  # a word in any script (an unread statement's words are counted)


def foreign_words(s: str, lex: Lexicon) -> int:
    """How many words of `s` are neither node names, keywords nor an answer's wording (a run of CJK or kana
    counts one per two characters)."""
    k = 0
    for w in _ANY_WORD.findall(s):
        if w in lex.names:
            continue
        low = w.lower()
        if low in ANSWER_WORDS or low in _KW:
            continue
        k += max(1, len(w) // 2) if "\u3040" <= w[0] <= "\u9fff" else 1
    return k


# the words of a statement that only gives the answer ("So the final answer is A."): no claim is lost there
ANSWER_WORDS = frozenset("so the final answer is are a an thus hence therefore result solution we get gives our "
                         "it this that which of in with here".split())
_CHEAP_KW = frozenset({"rej", "total", "dist", "hops", "weight"})  # kinds a statement without nodes can matter by


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
    via: str | None = None  # dist: the node the distance is taken through ("the distance to B through A is 12")

    @property
    def derived(self) -> bool:
        return self.kind in ("walk", "dist", "set", "neigh", "map", "assign")


@dataclass
class Reading:
    claims: list[Claim] = field(default_factory=list)
    nodes_seen: int = 0  # distinct node names mentioned in the reasoning
    words: int = 0
    unparsed: int = 0  # statements naming a node, with words beyond an answer's wording, read to nothing
    # the nodes and numbers of each statement that states data (two nodes, or a node and a number) and was read
    # to nothing
    unread: list[tuple[frozenset[str], frozenset[float]]] = field(default_factory=list)
    # the same of each statement read with numbers left over (its claims soft: a guess), by statement index
    guessed: dict[int, tuple[frozenset[str], frozenset[float]]] = field(default_factory=dict)
    parsed: int = 0  # statements read to at least one claim
    node_statements: int = 0  # statements naming a node
    other_script: int = 0  # of those, written in a script the reader has no vocabulary for

    @property
    def unreadable(self) -> bool:
        """Text that talks about the graph (or is long) but states no claim the reader can parse, or states
        no derived claim while most of what it says about nodes could not be read (prose the reader has no
        form for, of which it caught a stray edge): no number is better than a guessed one."""
        if self.other_script and 2 * self.other_script >= self.node_statements:
            return True  # mostly in a language the reader does not know: what it caught is a guess
        if not self.claims:
            return self.nodes_seen >= 2 or self.words >= 60 or self.unparsed > 0
        return self.unparsed > 0 and self.unparsed >= self.parsed and not any(c.derived for c in self.claims)


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
    if kind == "sigma":  # the sum sign: a total (`Σ = 7554`)
        return _Tok("kw", "total")
    if kind == "delta":  # graph theory's distance, `δ(A, B) = 5`
        return _Tok("kw", "dist")
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
        if "_" in text and any(p in names for p in text.split("_")) \
                and any(p.lower() in _KW or p.lower().rstrip("s") in _KW for p in text.split("_")):
            # a key that names a relation and its nodes (`distance_SFB_PIE`, `neighbours_of_JAV`): its parts
            # are words, as the same key reads with spaces (an id such as Mermaid's `g1_C1` stays one word)
            for part in text.split("_"):
                if part in names:
                    out.append(_Tok("node", part))
                elif part:
                    tok = _classify("num" if part.isdigit() else "word", part)
                    if tok.__class__ is tuple:
                        out.extend(tok)  # type: ignore[arg-type]
                    elif tok is not _SKIP:
                        out.append(tok)  # type: ignore[arg-type]
            continue
        if text == "None" and out and out[-1].t in ("sep", "lp"):
            continue  # Python's null inside a literal (`("A", None)`), not a negation
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
