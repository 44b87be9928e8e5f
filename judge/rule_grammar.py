"""The rule scorer's claim grammar: what a node label looks like, the gaps between labels (edge dash, arrow,
list separator), the keywords and phrases around claims, and the words a model may use for each palette
colour. Patterns only; `judge.rule_claims` applies them, `judge.rule_checks` checks what they find."""

from __future__ import annotations

import re

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
STOP_WORDS = frozenset("""
AND THE FOR YES NOT BUT ALL ANY ARE BFS DFS MST TSP MIS MVC MCP MCS GED CYC COL DIAM SD CN JSON NULL NONE
TRUE FALSE OK ID IDS NO ONE TWO SET MAX MIN SUM END TOP LOW KEY MAP ADD NEW OLD USE THEN STEP PATH EDGE NODE
G1 G2 V1 V2 E1 E2 P1 P2
""".split())

# A node label: an upper-case letter then 1-3 letters/digits (JFK, C1, Cl1), a digit then an upper-case
# letter (airport codes such as 1MP), or 2-4 digits (a few airports are named 101): an all-digit token is a
# node only when the instance has a node of exactly that name (`judge.rule_claims`), never by its shape.
LABEL = r"(?:[A-Z][A-Za-z0-9]{1,3}|[0-9][A-Z][A-Za-z0-9]{0,2}|[0-9]{2,4}(?![.,][0-9]))"
# the scan's token: without all-digit names unless the instance has one (numbers are frequent, names like
# 101 rare), so the common case never visits every number
LABEL_TOKEN = re.compile(r"(?<![A-Za-z0-9_])(?:[A-Z][A-Za-z0-9]{1,3}|[0-9][A-Z][A-Za-z0-9]{0,2})(?![A-Za-z0-9_])")
LABEL_TOKEN_DIGITS = re.compile(r"(?<![A-Za-z0-9_])" + LABEL + r"(?![A-Za-z0-9_])")
GRAPH_CTX = re.compile(
    r"(?i)\b(?:graph|molecule|image|picture)\s*(1|2|one|two)\b|\bG\s*_?\s*([12])\b|\b(first|second)\s+(?:graph|molecule|image|picture)"
)
FINAL_ANSWER_TAG = re.compile(r"(?i)<\s*final[\s_-]*answer\s*>")
_EDGE_GAP = re.compile(r"\s*(?:-{1,2}|–{1,2}|—|<->|<-->|↔|―|\s-\s)\s*")
_ARROW_GAP = re.compile(r"\s*(?:->|-->|→|⟶|=>|⇒|➔|➜|↦|\bmaps?\s+to\b|\bmapped\s+to\b|\bcorresponds\s+to\b)\s*")
_LIST_GAP = re.compile(r"""\s*["']?\s*(?:,|;|\band\b|&|,\s*and\b)\s*["']?\s*|\s+""")
_ADJ_GAP = re.compile(
    r"\s*(?::|->\s*\[|→\s*\[|:\s*[\[{(])\s*|\s+(?:is\s+(?:directly\s+)?(?:connected|adjacent|linked)\s+(?:to|with)"
    r"|connects\s+(?:to|with)|neighbou?rs?\s*(?::|are|=)?|has\s+neighbou?rs?\s*:?)\s*[\[{(]?\s*"
)
ADJ_COMPLETE = re.compile(r"(?i)neighbou?rs|^\s*:")
ADJ_PREFIX = re.compile(r"(?i)(?:neighbou?rs?\s+of|N\s*\()\s*$")
ADJ_PREFIX_GAP = re.compile(r"\s*(?:\)\s*)?(?::|=|are|is)\s*[\[{(]?\s*")
WEIGHT_AFTER = re.compile(
    r"(?i)\s*(?:\(\s*|\[\s*|:\s*|=\s*|,\s*(?=w)|\s(?:with\s+)?)(?:(?:weight|w|cost|distance)\s*(?:of\s*)?[:=]?\s*)?"
    r"(\d+(?:\.\d+)?)(?!\d|\.\d)"
)
TOTAL_AFTER = re.compile(
    r"(?i)^[^\n.;]{0,40}?(?:total(?:\s+(?:weight|distance|length|cost))?|length|distance|cost|weight|sum|hops?)\s*"
    r"(?:of|is|=|:|equals)?\s*(\d+(?:\.\d+)?)"
)
TOTAL_EQ = re.compile(r"^[^\n;]{0,60}?=\s*(\d+(?:\.\d+)?)(?!\s*[+\-*/\d])")
HOPS_AFTER = re.compile(r"(?i)^\s*[(\[,:]?\s*(\d+)\s*(?:hops?|edges?)\b")
COLOR_GROUP_BEFORE = re.compile(
    rf"(?i)\b({_COLOR_ALT})(?:[\s-]+colou?red)?\s+(?:nodes?|vertices|airports?|atoms?|members?|actors?|entities|"
    rf"families|characters?|circles?)[^.\n:]{{0,24}}?(?::|\bare\b|=|\binclude\b|\bincludes\b)\s*[\[{{(]?\s*$"
)
_TOK = r"(?<![A-Za-z0-9_])(" + LABEL + r")(?![A-Za-z0-9_])"
COLOR_CLAIM = re.compile(
    _TOK + rf"\s*(?i:\(\s*(?:colou?r\s*[:=]?\s*)?({_COLOR_ALT})\s*\)|\s(?:is|are|was|appears)\s+(?:colou?red\s+|"
    rf"drawn\s+in\s+|filled\s+(?:with|in)\s+|in\s+)?({_COLOR_ALT})\b)"
)
DEG_CLAIM = re.compile(
    _TOK + r"\s*(?i:\)\s*)?(?i:has\s+(?:a\s+)?degree(?:\s+of)?|\(\s*degree|,\s*degree|:\s*degree)\s*[:=]?\s*(\d+)"
)
DEG_CLAIM_PREFIX = re.compile(r"(?i:degree\s+of|deg\s*\()\s*" + _TOK + r"\s*\)?\s*(?i:is|=|:)\s*(\d+)")
# keywords that introduce claims, found in one pass: group index -> kind
KEYWORDS = re.compile(
    r"(?i)(dist|\bd\s*\()|(neighbo|\bN\s*\()|(node|vert|airport|atom|member|actor|entit|famil|character|circle)"
    r"|(clique|independent|cover|common)"
)
KEYWORD_KINDS = (None, "dist", "adj", "group", "set")
COLOR_PAREN = re.compile(rf"(?i)^\s*\(\s*(?:colou?r\s*[:=]?\s*)?(?:{_COLOR_ALT})\s*\)")
DIST_BEFORE = re.compile(r"(?i)(?:distance|dist|\bd)\s*(?:\(|from\s+|between\s+)\s*$")
DIST_MID = re.compile(r"\s*(?:,|to|and)\s*")
DIST_AFTER = re.compile(r"(?i)\s*\)?\s*(?:is|=|:|of|equals)\s*(\d+(?:\.\d+)?)")
SET_AFTER = re.compile(
    r"(?i)^\s*[\]})]?\s*(?:form|forms|is|are|would\s+be|makes?)\s+(?:a|an|the)?\s*(?:valid\s+)?(?:(?:maximum|minimum|max|min|largest|"
    r"smallest)\s+)?(?:\d+-)?(clique|independent\s+set|vertex\s+cover|cover)\b"
)
SET_BEFORE = re.compile(
    r"(?i)\b(clique|independent\s+set|vertex\s+cover|common\s+neighbou?rs?)\b[^.\n]{0,30}?(?::|=|\bis\b|\bare\b)\s*[\[{(]?\s*$"
)
# a number in brackets after a path node: that hop's weight or the running total (`A -> B (1200 km) -> C`)
HOP_NUMBER = re.compile(r"(?i)^\s*[(\[]\s*(?:total\s*[:=]?\s*|d\s*=\s*)?(\d+(?:\.\d+)?)\s*(?:km|mi|miles|hops?|edges?)?\s*[)\]]")
# a COL colour assignment: `C1: 1`, `C1 = color 2`, `C1 -> colour 3`, `C1 gets color 2`, `C1 (color 1)`
ASSIGN = re.compile(
    r"(?<![A-Za-z0-9_])(" + LABEL + r")(?![A-Za-z0-9_])\s*(?::|=|->|→|\(|\s(?:gets|is\s+assigned|receives|takes))\s*"
    r"(?i:colou?r|class)?\s*#?\s*(\d{1,2})(?!\d|\.\d)"
)
ARITH = re.compile(r"(?<![\d.])(\d+(?:\.\d+)?)((?:\s*\+\s*\d+(?:\.\d+)?)+)\s*=\s*(\d+(?:\.\d+)?)")


_SHAPE_TABLE = str.maketrans(
    {**{c: "A" for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ"}, **{c: "a" for c in "abcdefghijklmnopqrstuvwxyz"},
     **{c: "9" for c in "0123456789"}}
)


def shape(s: str) -> str:
    """Label shape: DEN -> AAA, C1 -> A9, Cl1 -> Aa9."""
    return s.translate(_SHAPE_TABLE)


_GAP_KINDS: dict[str, str] = {}
_ADJ_GAPS: dict[str, bool] = {}


def adj_gap(gap: str) -> bool:
    """Whether a (normalised) gap introduces an adjacency list ("A: B, C", "A is connected to B")."""
    hit = _ADJ_GAPS.get(gap)
    if hit is None:
        if len(_ADJ_GAPS) > 50_000:
            _ADJ_GAPS.clear()
        hit = _ADJ_GAPS[gap] = _ADJ_GAP.fullmatch(gap) is not None
    return hit


def gap_kind(gap: str) -> str:
    """'>' arrow, '-' edge dash, ',' list separator, 'x' anything else (memoised: gaps repeat a lot). An
    arrow may carry the hop's number first (`A (1200 km) -> B`): `hop_number` reads it."""
    k = _GAP_KINDS.get(gap)
    if k is not None:
        return k
    g = COLOR_PAREN.sub("", gap.replace("*", "").replace("`", ""), count=1)
    m = HOP_NUMBER.match(g)
    if m and _ARROW_GAP.fullmatch(g[m.end():]):
        g = g[m.end():]
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


def edge_key(u: str, v: str) -> tuple[str, str]:
    return (u, v) if u <= v else (v, u)
