"""One claim reader for every notation: rewrites the notations a response may use into the canonical forms
the claim scanner reads (`A -> B -> C`, `A--B, weight 12`, `d(A, B) = 3`, `A: B, C`, `X, Y form a clique`,
`C1 -> C4`), so the same fact is read the same way whether written with arrows, commas, "to", tuples,
markdown tables, JSON, bullets, set notation or sentences.

Rewrites (each keeps the fact, never adds one):

* JSON / quoted labels: ``"A"`` -> ``A``; ``{"path": [A, B]}`` is then a keyed list like ``Path: A, B``;
* bullets: a run of lines that are one label each joins the line before it as a comma list;
* keyed lists ``Path: A, B, C`` / ``tour = [A, B, C]`` and chains ``A to B to C`` -> arrows;
* tuples ``(A, B)`` / ``[A, B, 12]`` -> ``A--B`` (with weight); on paired tasks after a mapping word, pairs;
* ``N(S) ∩ N(T) = {X, Y}`` -> common neighbours (when S, T are the query) or nothing;
* ``X's neighbors are``, ``lines from X to`` -> adjacency; ``A and B are 3 hops apart`` -> a distance;
* paired tasks: ``A = X`` and ``A ↔ X`` -> mapping pairs;
* markdown tables: each row becomes the sentence its cells state (header-aware: distance, weight,
  degree, neighbours, mapping, colour).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from judge.rule_grammar import LABEL

_L = LABEL
_QUOTED = re.compile(r"[\"'“”‘’`](" + _L + r")[\"'“”‘’`]")
_BULLET = re.compile(r"^[ \t]*(?:[-*•+]|\d+[.)])[ \t]*(" + _L + r")[ \t]*[,.;]?[ \t]*$")
_KEYED_LIST = re.compile(
    r"(?i)\b(path|tour|cycle|route|walk|order)\b\s*(?:is|:|=)?\s*[\[(]?\s*((?-i:" + _L + r")(?:\s*,\s*(?-i:" + _L
    + r")){2,})\s*[\])]?"
)
_TO_CHAIN = re.compile(r"(?<![A-Za-z])(" + _L + r")((?:\s+to\s+" + _L + r"(?![A-Za-z0-9])){2,})")
_TUPLE = re.compile(
    r"(?<![A-Za-z0-9_(\[])[(\[]\s*(" + _L + r")\s*,\s*(" + _L + r")\s*(?:,\s*(\d+(?:\.\d+)?)\s*)?[)\]]"
)
_CAP = re.compile(
    r"N\s*\(\s*(" + _L + r")\s*\)\s*(?:∩|\^|&|\bintersect(?:ion)?\b|\band\b)\s*N\s*\(\s*(" + _L
    + r")\s*\)\s*(?:=|:|is)\s*[{\[(]?\s*((?:" + _L + r"(?:\s*,\s*)?)*)\s*[}\])]?|N\s*\(\s*(" + _L + r")\s*\)\s*(?:∩|\^|&)\s*N"
)
_POSSESSIVE = re.compile(r"(?i)(?<![A-Za-z0-9])((?-i:" + _L + r"))['’]s\s+neighbou?rs?\s*(?:are|:|=|include)?\s*")
_LINES_FROM = re.compile(
    r"(?i)\b(?:i\s+(?:can\s+)?see\s+)?(?:lines?|edges?|connections?|bonds?|links?)\s+(?:going\s+)?from\s+((?-i:" + _L
    + r"))\s+to\s+"
)
_HOPS_APART = re.compile(
    r"(?i)(?<![A-Za-z0-9])((?-i:" + _L + r"))\s+and\s+((?-i:" + _L + r"))\s+are\s+(\d+)\s+(?:hops?|edges?|steps?)"
    r"\s+apart|(?<![A-Za-z0-9])((?-i:" + _L + r"))\s+is\s+(\d+)\s+(?:hops?|edges?|steps?)\s+(?:away\s+)?from\s+((?-i:"
    + _L + r"))"
)
_MAP_GAP = re.compile(r"(?<![A-Za-z0-9])(" + _L + r")\s*(?:↔|<->|⟷|<=>|=(?!=))\s*(" + _L + r")(?![A-Za-z0-9])")
_SET_KEY = re.compile(r"(?i)(?:clique|independent|cover|common|set|members?)\W{0,6}$")
_NUMBERED = re.compile(r"\n[ \t]*\d+[.)][ \t]")
_KEYED_WORDS = ("path", "tour", "cycle", "route", "walk", "order")
_TO_HINT = re.compile(r" to \S{2,4} to ")
_TUPLE_HINT = re.compile(r"[(\[]\s*" + _L + r"\s*,")
_MAP_WORD = re.compile(r"(?i)map|match|pair|correspond|align")
_TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$")
_SEP_ROW = re.compile(r"^\s*\|?\s*:?-{2,}")
_LABELS = re.compile(r"(?<![A-Za-z0-9_])" + _L + r"(?![A-Za-z0-9_])")
_NUM = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(?:km|mi|miles|hops?|edges?)?\s*$")
_PAIR_CELL = re.compile(r"^\s*(" + _L + r")\s*(?:-{1,2}|–|—|↔|<->|,|/)\s*(" + _L + r")\s*$")
_ARROWS = re.compile(r"->|→|⟶|=>")


class Notation:
    """Rewrites one response's claims region; `is_label(tok)` says whether a token names a node,
    `paired` whether the task maps graph 1 onto graph 2, `query` the question's source/target."""

    def __init__(self, is_label: Callable[[str], bool], paired: bool, weighted: bool, task: str,
                 query: dict, edge_weight: Callable[[str, str], float | None]) -> None:
        self.is_label = is_label
        self.paired = paired
        self.weighted = weighted
        self.task = task
        self.source = str(query.get("source")) if query.get("source") is not None else None
        self.target = str(query.get("target")) if query.get("target") is not None else None
        self.edge_weight = edge_weight

    def __call__(self, text: str) -> str:
        if '"' in text:
            text = text.replace('"', "")  # JSON: keys and strings read as plain text
        if "'" in text or "“" in text or "`" in text or "’" in text:
            text = _QUOTED.sub(r"\1", text)
        if "|" in text:
            text = self._tables(text)
        # each rewrite runs only when one scan for all notations says it may be present (the hot path)
        low = text.lower()
        if "\n- " in text or "\n* " in text or "\n• " in text or "\n+ " in text or _NUMBERED.search(text):
            text = self._bullets(text)
        if "N(" in text or "N (" in text:
            text = _CAP.sub(self._cap, text)
        if any(w in low for w in _KEYED_WORDS):
            text = _KEYED_LIST.sub(
                lambda m: f"{m.group(1)}: " + " -> ".join(x.strip() for x in m.group(2).split(",")), text)
        if " to " in text:
            if _TO_HINT.search(text):
                text = _TO_CHAIN.sub(lambda m: m.group(1) + re.sub(r"\s+to\s+", " -> ", m.group(2)), text)
            if " from " in text:
                text = _LINES_FROM.sub(lambda m: f"{m.group(1)} is connected to ", text)
        if ("(" in text or "[" in text) and _TUPLE_HINT.search(text):
            text = _TUPLE.sub(self._tuple, text)
        if "'s " in text or "’s " in text:
            text = _POSSESSIVE.sub(lambda m: f"neighbors of {m.group(1)} are ", text)
        if " apart" in text or " from " in text:
            text = _HOPS_APART.sub(self._hops, text)
        if self.paired:
            text = _MAP_GAP.sub(lambda m: f"{m.group(1)} -> {m.group(2)}", text)
        return text

    # ---- rewrites

    def _cap(self, m: re.Match[str]) -> str:
        if m.group(1) is None:
            return " "
        pair = {m.group(1), m.group(2)}
        members = [x for x in _LABELS.findall(m.group(3) or "")]
        if pair == {self.source, self.target}:
            return "common neighbors: " + (", ".join(members) if members else "none")
        return " "  # about another pair: no claim the checks know

    def _tuple(self, m: re.Match[str]) -> str:
        a, b, w = m.group(1), m.group(2), m.group(3)
        if not (self.is_label(a) and self.is_label(b)) or _SET_KEY.search(m.string, max(0, m.start() - 40), m.start()):
            return m.group(0)  # a two-member set ("clique: [A, B]") is a set, not an edge
        if self.paired and _MAP_WORD.search(m.string, max(0, m.start() - 200), m.start()):
            return f"{a} -> {b}"
        return f"{a}--{b}" + (f", weight {w}" if w is not None and self.weighted else "")

    def _hops(self, m: re.Match[str]) -> str:
        if m.group(1) is not None:
            return f"d({m.group(1)}, {m.group(2)}) = {m.group(3)}"
        return f"d({m.group(4)}, {m.group(6)}) = {m.group(5)}"

    def _bullets(self, text: str) -> str:
        if "\n" not in text:
            return text
        lines = text.split("\n")
        out: list[str] = []
        joined = False
        for line in lines:
            m = _BULLET.match(line)
            if m and out and self.is_label(m.group(1)):
                sep = "" if not joined and out[-1].rstrip().endswith((":", "=", "{", "[")) else ", "
                if not joined and not sep:
                    out[-1] = out[-1].rstrip() + " " + m.group(1)
                else:
                    out[-1] = out[-1].rstrip() + (", " if joined else " ") + m.group(1)
                joined = True
                continue
            joined = False
            out.append(line)
        return "\n".join(out)

    def _tables(self, text: str) -> str:
        lines = text.split("\n")
        out: list[str] = []
        header: list[str] | None = None
        for line in lines:
            if not _TABLE_ROW.match(line):
                header = None
                out.append(line)
                continue
            if _SEP_ROW.match(line.replace("|", " ").strip() or "-") and "-" in line and not _LABELS.search(line):
                continue
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if header is None and not any(self.is_label(t) for c in cells for t in _LABELS.findall(c)):
                header = [c.lower() for c in cells]
                continue
            out.append(self._row(cells, header or []))
        return "\n".join(out)

    def _row(self, cells: list[str], header: list[str]) -> str:
        head = " ".join(header)
        nums = [(i, float(m.group(1))) for i, c in enumerate(cells) if (m := _NUM.match(c))]
        labels = [(i, t) for i, c in enumerate(cells) for t in _LABELS.findall(c) if self.is_label(t)]
        cols = {i for i, _ in labels}
        # a path in one cell ("A → B → C") and a number: the path with its total
        for i, c in enumerate(cells):
            if _ARROWS.search(c) and len([t for t in _LABELS.findall(c) if self.is_label(t)]) >= 2:
                path = " -> ".join(t for t in _LABELS.findall(c) if self.is_label(t))
                tail = [v for j, v in nums if j != i]
                return path + (f", total {_n(tail[-1])}." if tail else ".")
        if len(labels) == 2 and len(nums) == 1:
            (_, a), (_, b) = labels
            v = nums[0][1]
            pair_in_one = any(_PAIR_CELL.match(c) for c in cells)
            if not pair_in_one and len(cols) != 2:
                return ""
            if self.weighted and self.edge_weight(a, b) is not None and "dist" not in head:
                return f"{a}--{b}, weight {_n(v)}."
            return f"d({a}, {b}) = {_n(v)}."
        if len(labels) == 1 and len(nums) == 1:
            a, v = labels[0][1], nums[0][1]
            if "deg" in head:
                return f"deg({a}) = {int(v)}."
            if "col" in head and self.task == "COL":
                return f"{a}: color {_n(v)}."
            if ("dist" in head or "cost" in head or "hop" in head) and self.source and a != self.source:
                return f"d({self.source}, {a}) = {_n(v)}."
            return ""
        if len(labels) >= 2 and len(cols) == 2 and not nums:
            first = min(cols)
            a = [t for i, t in labels if i == first]
            rest = [t for i, t in labels if i != first]
            if len(a) != 1:
                return ""
            if self.paired and len(rest) == 1 and ("map" in head or "graph 2" in head or "g2" in head
                                                   or "molecule 2" in head or "→" in head):
                return f"{a[0]} -> {rest[0]}."
            if "neighbo" in head or "adjacen" in head:
                return f"neighbors of {a[0]} are {', '.join(rest)}."
            return ""
        if self.task == "COL" and len(labels) == 1 and "col" in head:
            rest = [c for i, c in enumerate(cells) if i not in cols and c]
            if len(rest) == 1:
                return f"{labels[0][1]}: color {rest[0]}."
        return ""


def _n(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)
