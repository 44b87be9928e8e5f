"""Whether a quote states a fact (the grounded LLM judge's steps 1 and 2, `judge.grounding`): the quote check's
normalisation, the fact's names and numbers in its quote (`fact_in_quote`), and the relation itself as the claim
reader reads it in the quote alone (`stated_claims`): `A: B, C` states the adjacencies A-B and A-C, never the edge
B-C, and a node list states no path. The reader's claims that state the fact are what VGR v4 then judges."""

from __future__ import annotations

import dataclasses
import functools
import html
import re
import unicodedata

from judge.reader import Claim, Lexicon, Reading, read
from judge.schema import Fact

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


# Memoised, as the quote check runs once per fact and a judgment quotes one line for each fact it states there:
# pure functions of the text (tuples, so that a cached value cannot be changed).
@functools.lru_cache(maxsize=8192)
def normalise(text: str) -> str:
    """What the quote check compares: entities decoded (the judge saw the response escaped), NFKC,
    casefolded, every whitespace dropped (line breaks and spacing are layout, not content)."""
    return _SPACE.sub("", unicodedata.normalize("NFKC", html.unescape(text)).casefold())


@functools.lru_cache(maxsize=8192)
def _words(text: str) -> tuple[str, ...]:
    return tuple(w.casefold() for w in _WORD.findall(unicodedata.normalize("NFKC", html.unescape(text))))


@functools.lru_cache(maxsize=8192)
def _numbers(text: str) -> tuple[float, ...]:
    t = _THOUSANDS.sub("", unicodedata.normalize("NFKC", html.unescape(text)))
    return tuple(float(x) for x in _NUMBER.findall(t))


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
    return stated_claims(fact, quote, lex) is not None


# the claim kinds that are a fact of each type (any other matching claim states it in passing: a walk's hop states
# an edge, a walk's total a distance; the fact is then judged as the judge stated it)
_SAME_KIND = {"edge": ("edge", "pairnum"), "distance": ("dist", "pairnum"), "path": ("walk",), "set": ("set",),
              "neighbors": ("adj", "neigh"), "mapping": ("map",), "assign": ("assign",)}


# What the reader reads in a text, read once: a judgment quotes one line for each fact it states there (a mapping's
# pairs, a flood of paraphrases), and the same response is judged again (another template or judge, a rerun; an
# honest and a hostile judge in the tests): 58 % of the quotes the hostile batteries read had been read before.
# Keyed by the lexicon's identity (one per evidence, `judge.vgr4.lexicon`); the entry holds the lexicon, so its id
# cannot be reused while the entry lives. A reading is shared, so never changed: `stated_claims` hands out
# copies of its claims, `judge.grounding` only looks at the whole response's reading.
# Bounded in entries and in text: a longer text (a hostile megabyte response) is read, not kept, so the cache holds
# at most _READINGS_MAX x _READING_TEXT_MAX characters of keys.
_READINGS: dict[tuple[int, str], tuple[Lexicon, Reading]] = {}
_READINGS_MAX = 4096
_READING_TEXT_MAX = 16_384


def reading_of(text: str, lex: Lexicon) -> Reading:
    """`judge.reader.read(text, lex)`, read once per (text, lexicon); the reading must not be changed."""
    key = (id(lex), text)
    hit = _READINGS.get(key)
    if hit is not None and hit[0] is lex:
        return hit[1]
    reading = read(text, lex)
    if len(text) > _READING_TEXT_MAX:
        return reading
    if len(_READINGS) >= _READINGS_MAX:
        _READINGS.clear()
    _READINGS[key] = (lex, reading)
    return reading


def stated_claims(fact: Fact, quote: str, lex: Lexicon) -> list[Claim] | None:
    """The claims VGR v4 judges for a fact the quote states, or None when the reader, run on the quote alone,
    does not read the fact's relation there. The claim is the reader's own when it is of the fact's kind (a
    path keeps its running totals, a negated or rejected statement stays neutral), else the fact as the judge
    states it. A mapping pair or a colour assignment brings every pair / assignment its quote states: a
    mapping or a colouring is the run the response writes, and a judge cannot cut a line of it down to the
    pairs that fit. [] for a grounded fact with nothing to judge: a drawn colour or a degree (perception the
    reader does not read), a non-adjacency (a true negative), a deletion (a mapping is the pairs it states),
    `none`. A fact naming a node the graph does not have is judged as stated: it can only be false."""
    if fact.type in ("color", "degree", "none"):
        return []
    nodes = [str(n) for n in fact.nodes if n is not None]
    if any(n not in lex.names for n in nodes):
        own = claim_of_fact(fact)
        return [own] if own is not None else []
    if fact.type == "mapping" and (len(fact.nodes) < 2 or fact.nodes[1] is None):
        return []  # a deletion: the reader has no form for it; its node is checked in the quote
    claims = reading_of(quote, lex).claims
    c = _stating(fact, nodes, claims)
    if c is None:
        return None
    if fact.type == "non_edge":
        return []
    if fact.type in ("mapping", "assign"):
        return [dataclasses.replace(x) for x in claims if x.kind == c.kind]
    if c.kind in _SAME_KIND.get(fact.type, ()):
        # which molecule a fact is about comes from the judge's structured `graph` (the quote alone may not say)
        graph = fact.graph - 1 if fact.graph in (1, 2) else c.graph
        return [dataclasses.replace(c, graph=graph)]
    own = claim_of_fact(fact)
    if own is None:
        return []
    return [dataclasses.replace(own, neutral=c.neutral, soft=c.soft, graph=c.graph, code=c.code)]


def _num(v: float | str | None) -> float | None:
    if isinstance(v, float):
        return v
    try:
        return float(str(v).strip()) if v is not None else None
    except ValueError:
        return None


def claim_of_fact(fact: Fact) -> Claim | None:
    """A structured fact as the claim reader would write it (None: a fact of no claim kind)."""
    nodes = tuple(str(n) for n in fact.nodes if n is not None)
    if len(nodes) != len(fact.nodes):
        return None
    t, value = fact.type, _num(fact.value)
    graph = fact.graph - 1 if fact.graph in (1, 2) and t != "mapping" else None
    if t == "edge" and len(nodes) == 2:
        return Claim("edge", nodes, value, graph=graph)
    if t == "distance" and len(nodes) == 2 and value is not None:
        return Claim("dist", nodes, value, graph=graph)
    if t == "path" and len(nodes) >= 2:
        return Claim("walk", nodes, value, graph=graph)
    if t == "set" and nodes:
        prop = _SET_LABELS.get(_label(fact.value).replace("_", " "), _SET_LABELS.get(_label(fact.value), ""))
        return Claim("set", nodes, prop=prop, graph=graph) if prop else None
    if t == "neighbors" and len(nodes) >= 2:
        return Claim("adj", nodes, complete=_label(fact.value) == "complete", graph=graph)
    if t == "mapping" and len(nodes) == 2:
        return Claim("map", nodes)
    if t == "assign" and len(nodes) == 1 and fact.value is not None:
        return Claim("assign", nodes, prop=_label(fact.value), graph=graph)
    return None


def _stating(fact: Fact, nodes: list[str], claims: list[Claim]) -> Claim | None:
    """The first claim of the quote that states the fact's relation."""
    value = fact.value if isinstance(fact.value, float) else None
    for c in claims:
        cn = list(c.nodes)
        if fact.type == "edge" and len(nodes) == 2:
            u, v = nodes
            if c.kind in ("edge", "pairnum") and {u, v} == set(cn) and (value is None or _near(c.value, value)):
                return c
            if c.kind == "walk" and any({u, v} == {a, b} for a, b in zip(cn, cn[1:] + cn[:1] if c.closed else cn[1:],
                                                                         strict=False)):
                hop = len(cn) == 2 and (_near(dict(c.nums).get(1), value) or _near(c.value, value))
                if value is None or hop:
                    return c
            if c.kind in ("adj", "neigh") and ((cn[0] == u and v in cn[1:]) or (cn[0] == v and u in cn[1:])):
                return c if value is None else None
        elif fact.type == "non_edge" and len(nodes) == 2:
            if c.neutral and set(nodes) <= set(cn):
                return c
        elif fact.type == "distance" and len(nodes) == 2:
            if c.kind in ("dist", "pairnum") and set(cn) == set(nodes) and _near(c.value, value):
                return c
            if c.kind == "walk" and {cn[0], cn[-1]} == set(nodes) and (
                    _near(c.value, value) or _near(dict(c.nums).get(len(cn) - 1), value)):
                return c
            starts = {x.nodes[0] for x in claims if x.kind == "walk"}
            if c.kind == "walk" and any(  # a running total beside a node of a walk that starts at the other end
                    _near(v, value) and ((cn[i] == nodes[1] and nodes[0] in starts)
                                         or (cn[i] == nodes[0] and nodes[1] in starts)) for i, v in c.nums):
                return c
        elif fact.type == "path" and c.kind == "walk":
            walk = cn + [cn[0]] if c.closed else cn
            if _same_walk(walk, nodes) or _same_walk(cn, nodes):
                total = c.value if c.value is not None else dict(c.nums).get(len(cn) - 1)
                return c if value is None or _near(total, value) else None
        elif fact.type == "set" and c.kind == "set":
            want = _SET_LABELS.get(_label(fact.value).replace("_", " "), _SET_LABELS.get(_label(fact.value), ""))
            if set(cn) == set(nodes) and (not want or want == c.prop):
                return c
        elif fact.type == "neighbors" and c.kind in ("adj", "neigh") and nodes and cn[0] == nodes[0]:
            if set(cn[1:]) == set(nodes[1:]):
                return c
        elif fact.type == "mapping" and c.kind == "map" and cn == nodes[:2]:
            return c
        elif fact.type == "assign" and c.kind == "assign" and cn == nodes[:1] and c.prop == _label(fact.value):
            return c
    return None


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
