"""VGR v4's claim reader, one statement: the tokens of one sentence or line read to claims (walks, sets,
mappings, colourings, distances, neighbour lists, edges), negations and rejections marked neutral. See
`judge.reader`."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from judge.reader_lexicon import (
    _ASSIGN_WORDS,
    _CLASS_WORD,
    _MAP_WORDS,
    GRAPH_NOUNS,
    POSSESSIVES,
    SET_KW,
    VIA_WORDS,
    Claim,
    Lexicon,
    _Tok,
)

# a graph's name in one word: "graph1", "graph_2", "g1", "molecule_2"
_GRAPH_WORD = re.compile(rf"(?:{'|'.join(GRAPH_NOUNS)})_?([12])")
_FROM_WORDS = frozenset("from von desde depuis".split())
# words that make a neighbour list partial ("A's neighbours include B", "B is among A's neighbours")
_SOME_WORDS = frozenset("include includes including among such like incluyen incluye umfassen darunter gehört "
                        "gehören parmi comprennent".split())
_GRAPH_NOUNS = frozenset(GRAPH_NOUNS)

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
        # "adjacent" reads as a neighbour word that lists some neighbours, not all (`_neigh`)
        self.some_neighbours = "adjw" in self.kws and "neigh" not in self.kws
        if "adjw" in self.kws:
            self.kws.add("neigh")
        # "A is 3 hops from B" reads as a distance, counted in edges (`_dist`)
        self.hop_count = "hops" in self.kws
        if self.hop_count:
            self.kws.add("dist")
        # a neighbour list that names some of them ("A's neighbours include B", "B is among A's neighbours")
        self.partial_list = not words.isdisjoint(_SOME_WORDS) or "some" in self.kws
        self.nodes = [t.v for t in toks if t.t == "node"]
        self.out: list[Claim] = []
        self.question = False
        self.counts = False  # a number of hops, edges or steps in it ("2 hops"): not a length (`read` sets it)
        self.walk_start: str | None = None
        self.names_graph = False
        self.open_dist: tuple[str, str] | None = None
        self.negated = bool(self.kws & {"neg", "rej"}) or "neq" in self.types

    def claim(self, kind: str, nodes: Iterable[str], **kw: Any) -> None:
        neutral = self.negated or self.question
        if self.code and kind in ("walk", "dist", "set", "neigh", "map", "assign"):
            neutral = True  # a program's logic is not a claim; what it prints is read elsewhere
        kw.setdefault("graph", self.graph)
        self.out.append(Claim(kind, tuple(nodes), pos=self.pos, soft=self.soft, neutral=neutral, code=self.code,
                              **kw))

    def _graph_mentions(self) -> list[tuple[int, int, int]]:
        """Paired tasks: where the statement names a graph ("graph 1", "molecule two", "G2", "graphe_1",
        "the second graph"), as (first token, last token, graph 0 or 1); none in other tasks."""
        out: list[tuple[int, int, int]] = []
        if not self.lex.paired:
            return out
        toks = self.toks
        for m, t in enumerate(toks):
            if t.t != "word":
                continue
            v = t.v.lower()
            nxt = toks[m + 1] if m + 1 < len(toks) else None
            if (g := _GRAPH_WORD.fullmatch(v)) is not None:
                out.append((m, m, int(g.group(1)) - 1))
            elif v in _GRAPH_NOUNS and nxt is not None and nxt.t == "num" and nxt.v in (1, 2):
                out.append((m, m + 1, int(nxt.v) - 1))
            elif v in _GRAPH_NOUNS and nxt is not None and nxt.t == "word" and nxt.v in ("one", "two"):
                out.append((m, m + 1, 0 if nxt.v == "one" else 1))
            elif v in ("first", "second") and nxt is not None and nxt.t == "word" and nxt.v in _GRAPH_NOUNS:
                out.append((m, m + 1, 0 if v == "first" else 1))
        return out

    def _graph_of_edge(self, i: int, j: int, named: list[tuple[int, int, int]]) -> int | None:
        """The graph an edge between tokens i and j belongs to, when the statement names one beside it
        (`named`: `_graph_mentions`): the graph named right after it ("Edge A-B in graph 1 matches edge X-Y in
        graph 2"), else the nearest named before it ("G1 has A-B, G2 has X-Y"); None when the statement names
        none (`self.graph` then)."""
        toks = self.toks
        for a, _, g in named:
            if a > j and a - j <= 4 and all(x.t in ("word", "lp", "rp", "kw") for x in toks[j + 1:a]):
                return g
        before = [(b, g) for _, b, g in named if b < i]
        return max(before)[1] if before else None

    def read(self) -> list[Claim]:
        if not self.nodes:
            return []
        lex, task = self.lex, self.lex.task
        if lex.paired and (not self.names_graph or "map" in self.kws) and self._mapping():
            return self.out  # a statement about one named molecule ("In graph 1, C1: C2") maps nothing
        set_kw = [k for k in ("clique", "indep", "cover", "common") if k in self.kws]
        # (COL: "the degree of A is 4", "A has 4 neighbours", "d(A, B) = 3" state no colour unless they say one)
        if task == "COL" and not set_kw and not self._node_arrow_node() and \
                ("color" in self.kws or not (self.kws & {"deg", "neigh", "dist"} or self._d_paren())) \
                and self._assign():
            return self.out
        if set_kw:
            self._set(SET_KW[set_kw[0]])
            return self.out
        if "neigh" in self.kws or ("conn" in self.kws and not self._has_arrow(symbols_only=True)):
            self._neigh()
            return self.out
        # (a node after "via" with one number is a relaxation; with a hop's weight beside it, a hop: `_walk`)
        if ("dist" in self.kws or self._d_paren() or (self._via() is not None and len(self._numbers()) == 1)) \
                and not self._has_arrow(symbols_only=True) and len(self.nodes) <= 2:
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

    def _node_arrow_node(self) -> bool:
        """`A -> B`, `from A go to B`, `A – B: 1`: a step or an edge between two nodes, never a node's colour
        (`A -> 2`)."""
        step = False  # an arrow, "to" or "then" since the last node ("A -->|5| B", "from A go to B")
        seen = False
        for t in self.toks:
            if t.t == "node":
                if seen and step:
                    return True
                seen, step = True, False
            elif t.t in ("arrow", "dash", "bi") or (t.t == "kw" and t.v in ("to", "then")):
                step = True
            elif t.t in ("num", "sep"):
                step = step and t.t == "num"  # "A -> 2, B -> 1": a node's colour, then the next node
        return False

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
        """The statement's numbers, without those that name a graph of a paired task ("graph 1")."""
        toks = self.toks
        return [t.v for i, t in enumerate(toks) if t.t == "num" and not (
            self.lex.paired and i and toks[i - 1].t == "word" and toks[i - 1].v.lower() in _GRAPH_NOUNS)]

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
                between = toks[i + 1:j]
                if any(t.t == "lp" and t.v == "[" for t in between) and all(
                        t.t in ("eq", "lp", "rp") for t in between):
                    seen_link = False  # `'N1': ['C1']`: a node and the list of its neighbours, not a pair
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
        nums = self._numbers()
        if prop == "common" and len(nodes) == 2 and len(nums) == 1 and "neigh" in self.kws:
            # "A and B have 3 common neighbours": how many, not which
            self.claim("ncommon", nodes, value=nums[0])
            return
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
        if prop == "vertex cover" and "edge" in self.kws and len(nums) == 1:
            self.claim("set", nodes, prop=prop, value=nums[0])  # "A covers 6 edges": how many edges they touch
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
            if t.t == "word" and t.v in POSSESSIVES and not self.soft \
                    and any(x.t == "kw" and x.v in ("neigh", "adjw") for x in toks[_i + 1:]):
                # "remove its neighbours A, B": neighbours of a node named before, not of A; nothing to check
                # here (not in a table, where a header "its neighbours" stands before the row's node)
                self.claim("note", self.nodes)
                self.out[-1].neutral = True
                return
        if head is None:
            return
        first_kw = next((i for i, t in enumerate(toks) if t.t == "kw" and t.v in ("neigh", "adjw", "conn")), None)
        before = [t.v for t in toks[:first_kw] if t.t == "node"] if first_kw is not None else []
        if len(self.nodes) == 2 and len(before) == 2 and not self._numbers():
            self.claim("edge", tuple(self.nodes))  # "A and B are adjacent / neighbours": one edge, both ways
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
        # ("the neighbours of A include B" and "B is among A's neighbours" name some of them)
        complete = "neigh" in self.kws and "conn" not in self.kws and not self.partial_list
        # "X is linked to A, B" restates edges (perception); a query node's neighbour SET is stated as one
        if self.lex.task == "CN" and head in (str(q.get("source")), str(q.get("target"))) and complete:
            self.claim("neigh", (head, *listed), complete=complete)
        elif self.partial_list:
            for n in listed:  # "A's neighbours include B, C": so many edges, not a neighbour list
                self.claim("edge", (head, n))
        else:  # another node's: "X is adjacent to A, B" is some of them (true when they are)
            self.claim("adj", (head, *listed), complete=complete and not self.some_neighbours)

    def _dist(self) -> None:
        nums = self._numbers()
        hop = len(self.nodes) == 2 and (self.kws & {"to", "then"} or not self.words.isdisjoint(_FROM_WORDS))
        if hop and ((len(nums) >= 2 and self.kws & {"total", "run"}) or (len(nums) == 1 and "run" in self.kws)):
            # "from A to B costs 5, so reaching B costs 12 in total", "we reach B from A at a cost of 5, for 12
            # in all", "go from A to B, distance so far 12" (not the distance A-B): a hop with its running total
            # (with just the hop's number and the total, both are accounted for: a misread one is charged)
            if len(nums) == 2:
                self.claim("walk", tuple(self.nodes), nums=((1, nums[0]),), value=nums[1])
            else:
                self.claim("walk", tuple(self.nodes), nums=((1, nums[-1]),))
            return
        src = self.lex.query.get("source")
        via = self._via()
        if via is not None:
            # "the distance to B through A is 12": from the source (SD's, else the walk's start) through A to
            # the other node; without a source it says nothing the reader can check
            start = str(src) if self.lex.task == "SD" and src is not None else self.walk_start
            end = next((n for n in self.nodes if n != via), None)
            if start is not None and end is not None and start != end:
                self.claim("dist", (start, end), value=nums[-1], via=via)
            return
        if len(self.nodes) == 2:
            a, b = self.nodes
        elif self.lex.task == "SD" and src is not None and self.nodes[0] != str(src):
            a, b = str(src), self.nodes[0]
        elif self.walk_start is not None and self.nodes[0] != self.walk_start:
            a, b = self.walk_start, self.nodes[0]  # "distance from start: X = 3" after a walk
        else:
            return
        # "A is 3 hops from B": a count of edges, whatever the weights (`judge.vgr4._Judge._dist`)
        self.claim("dist", (a, b), value=nums[-1], prop="hops" if self.hop_count else "")

    def _via(self) -> str | None:
        """The node right after a word such as "through" or "via" (`VIA_WORDS`), when there is one."""
        for i, t in enumerate(self.toks[:-1]):
            if t.t in ("word", "kw") and t.v.lower() in VIA_WORDS and self.toks[i + 1].t == "node":
                return self.toks[i + 1].v
        return None

    def _walk(self) -> None:
        toks = self.toks
        nodes: list[str] = []
        nums: dict[int, float] = {}
        total: float | None = None
        after_total = arrow_open = said_total = False
        depth = 0
        last_node = max(i for i, t in enumerate(toks) if t.t == "node")
        for i, t in enumerate(toks):
            if not nodes and t.t == "kw" and t.v in ("total", "dist"):
                said_total = True
            elif not nodes and t.t == "num" and (self.counts or (total is None and said_total)):
                total = total if self.counts else t.v  # "of length 12: A -> B", not "Total 2 hops: A -> B -> C"
                continue
            if t.t == "node":
                if not nodes or nodes[-1] != t.v:
                    nodes.append(t.v)
                after_total = arrow_open = False
            elif t.t == "kw" and (t.v == "total" or (t.v in ("dist", "hops", "weight") and i > last_node)):
                after_total = True
            elif t.t == "lp":
                depth += 1
            elif t.t == "rp":
                depth = max(0, depth - 1)
            elif t.t == "arrow" or (t.t == "dash" and nodes and i < last_node):
                arrow_open = True  # "A --5--> B": a number inside the link labels the hop into B
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
        closed = bool({"tour", "cycle"} & self.kws) and nodes[0] != nodes[-1] and len(nodes) > 2
        # "A -> B -> C (12)": one number after the last node and none elsewhere is the total
        if total is None and list(nums) == [len(nodes) - 1] and len(nodes) > 2:
            total = nums.pop(len(nodes) - 1)
        self.claim("walk", nodes, value=total, nums=tuple(sorted(nums.items())), closed=closed)

    def _edges(self) -> None:
        """Edges: `A-B`, `A--B, weight 5`, `(A, B, 5)`, `A is connected to B`, a bare `A, B, 5` row."""
        toks = self.toks
        n = len(toks)
        found = False
        mentions = self._graph_mentions()
        graph_numbers = {b for _, b, _ in mentions}
        for i, t in enumerate(toks):
            if t.t != "node":
                continue
            j = i + 1
            if j + 2 < n and toks[j].t == "lp" and toks[j + 1].t == "colorword" and toks[j + 2].t == "rp":
                j += 3  # "ATL(sky)--DAY(sky)": the node's drawn colour beside it
            k0 = j
            while j < n and toks[j].t in ("dash", "bi", "sep", "word") and j - k0 <= 2 and \
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
            if k + 2 < n and toks[k].t == "lp" and toks[k + 1].t == "colorword" and toks[k + 2].t == "rp":
                k += 3  # the second node's drawn colour
            k1 = k - 1
            while k < n and k - k1 <= 4 and toks[k].t in ("sep", "lp", "eq", "kw", "word", "rp"):
                k += 1
            named = self._graph_of_edge(i, j, mentions)
            if k < n and toks[k].t == "num" and k not in graph_numbers:
                w = toks[k].v  # (not the 1 of "in graph 1")
            after = [x.v for x in toks[j + 1:] if x.t == "num"]
            if len(after) == 2 and "run" in self.kws and len(self.nodes) == 2:
                # "A – B: 5 (cumulative 12)": a hop with its weight and the running total
                self.claim("walk", (t.v, toks[j].v), nums=((1, after[1]),))
                return
            self.claim("pairnum" if self.soft and w is not None else "edge", (t.v, toks[j].v), value=w,
                       graph=self.graph if named is None else named)
            found = True
        if not found and "edge" in self.kws and len(self.nodes) == 2 and "between" in {x.v for x in toks}:
            self.claim("edge", tuple(self.nodes))
        elif not found and self._adjacency_list():
            self.claim("adj", tuple(self.nodes))  # "A: B, C, D", an adjacency list's row: a restatement

    def _adjacency_list(self) -> bool:
        kinds = [t.t for t in self.toks if t.t not in ("lp", "rp")]
        first = kinds.index("node") if "node" in kinds else 0
        if self.names_graph or (first and kinds[first - 1] == "eq"):  # "In graph 1, C1: C2", "G1: A: B, C"
            kinds = kinds[first:]
        return len(kinds) >= 3 and kinds[:3] == ["node", "eq", "node"] and all(
            k == ("sep" if i % 2 == 0 else "node") for i, k in enumerate(kinds[3:]))

    def _tuple_like(self) -> bool:
        kinds = [t.t for t in self.toks if t.t not in ("lp", "rp", "sep")]
        return kinds in (["node", "node"], ["node", "node", "num"])
