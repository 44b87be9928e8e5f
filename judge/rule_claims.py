"""The rule scorer's claim extraction: one pass over a response that finds the claims it states (edges,
paths, adjacency lists, colours, degrees, distances, sets, mappings, sums) with the patterns of
`judge.rule_grammar`, and hands each to its check in `judge.rule_checks`."""

from __future__ import annotations

import bisect
import re

from judge.rule_checks import ClaimChecks, Step
from judge.rule_grammar import (
    ADJ_COMPLETE,
    ADJ_PREFIX,
    ADJ_PREFIX_GAP,
    ARITH,
    ASSIGN,
    COLOR_CLAIM,
    COLOR_GROUP_BEFORE,
    COLOR_PAREN,
    DEG_CLAIM,
    DEG_CLAIM_PREFIX,
    DIST_AFTER,
    DIST_BEFORE,
    DIST_MID,
    HOP_NUMBER,
    HOPS_AFTER,
    KEYWORD_KINDS,
    KEYWORDS,
    LABEL_TOKEN,
    LABEL_TOKEN_DIGITS,
    SET_AFTER,
    SET_BEFORE,
    STOP_WORDS,
    TOTAL_AFTER,
    TOTAL_EQ,
    WEIGHT_AFTER,
    adj_gap,
    gap_kind,
    shape,
)


class ClaimScanner(ClaimChecks):
    """Finds the claims of one response (its claims region) and checks each; `run()` gives the steps in
    order of appearance."""

    def run(self) -> list[Step]:
        text = self.text
        names = self.ctx.names
        shapes = self.ctx.shapes
        mentions: list[tuple[int, int, str]] = []
        token = LABEL_TOKEN_DIGITS if self.ctx.digit_names else LABEL_TOKEN
        for m in token.finditer(text):
            tok = m.group(0)
            if tok in names or (tok not in STOP_WORDS and not tok.isdigit() and shape(tok) in shapes):
                mentions.append((m.start(), m.end(), tok))
        self._arith()
        n = len(mentions)
        gaps: list[str] = [text[mentions[i][1] : mentions[i + 1][0]] for i in range(n - 1)]
        kinds: list[str] = [gap_kind(g) if len(g) <= 60 else "x" for g in gaps]
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
        m = COLOR_PAREN.match(after)
        if m:
            end += m.end()
            after = after[m.end() :]
        if kind == "-" and len(toks) == 2:
            m = WEIGHT_AFTER.match(after) if self.f.weighted else None
            w = float(m.group(1)) if m else None
            self.edge_claim(pos, end + (m.end() if m else 0), toks[0], toks[1], w)
            return
        if kind == ">" and len(toks) == 2 and self.f.paired:
            self.mapping_claim(pos, end, toks[0], toks[1])
            return
        total = None
        tend = end
        hops: dict[int, float] = {}
        if kind == ">":
            for k in range(len(ms) - 1):
                gap = COLOR_PAREN.sub("", self.text[ms[k][1] : ms[k + 1][0]], count=1)
                mh = HOP_NUMBER.match(gap)
                if mh:
                    hops[k] = float(mh.group(1))
            mh = HOP_NUMBER.match(after)
            if mh:
                hops[len(ms) - 1] = float(mh.group(1))
                after = after[mh.end() :]
                tend = end = end + mh.end()
        m = TOTAL_EQ.match(after) or TOTAL_AFTER.match(after) or HOPS_AFTER.match(after)
        if m:
            total, tend = float(m.group(1)), end + m.end()
        self.path_claim(pos, tend, toks, total, hops)

    def _node_facts(self) -> None:
        """Claims about single nodes: colours, degrees, COL colour assignments (one pass of each pattern)."""
        names = self.ctx.names
        if self.f.task == "COL":
            for m in ASSIGN.finditer(self.text):
                if m.group(1) in names:
                    self.assign_claim(m.start(), m.end(), m.group(1), str(int(m.group(2))))
        for m in COLOR_CLAIM.finditer(self.text):
            if m.group(1) in names:
                self.color_claim(m.start(), m.end(), m.group(1), m.group(2) or m.group(3))
        if "deg" in self.text or "Deg" in self.text:
            for m in DEG_CLAIM.finditer(self.text):
                if m.group(1) in names:
                    self.degree_claim(m.start(), m.end(), m.group(1), int(m.group(2)))
            for m in DEG_CLAIM_PREFIX.finditer(self.text):
                if m.group(1) in names:
                    self.degree_claim(m.start(), m.end(), m.group(1), int(m.group(2)))

    def near(self, kind: str, lo: int, hi: int) -> bool:
        """Whether a keyword of `kind` ends within [lo, hi] (positions found once per text)."""
        if self._kw is None:
            kw: dict[str, list[int]] = {"dist": [], "adj": [], "group": [], "set": []}
            for m in KEYWORDS.finditer(self.text):
                kw[KEYWORD_KINDS[m.lastindex or 0] or "dist"].append(m.end())
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
        mb = DIST_BEFORE.search(before) if i + 1 < len(mentions) and self.near("dist", start - 20, start) else None
        if mb:
            s2, e2, tok2 = mentions[i + 1]
            if DIST_MID.fullmatch(text[end:s2]) and tok2 in self.ctx.names:
                m = DIST_AFTER.match(text[e2 : e2 + 40])
                if m:
                    self.distance_claim(start - (len(before) - mb.start()), e2 + m.end(), tok, tok2,
                                        float(m.group(1)))
        # adjacency A: B, C  /  A is connected to B and C  /  neighbours of A: B, C
        if i + 1 < len(mentions) and kinds[i] == "x" and len(gaps[i]) <= 60:
            gap = COLOR_PAREN.sub("", gaps[i].replace("*", "").replace("`", ""), count=1)
            prefix = self.near("adj", start - 20, start) and ADJ_PREFIX.search(before) is not None
            m = (ADJ_PREFIX_GAP.fullmatch(gap) if prefix else None) or adj_gap(gap)
            if m:
                j = self._list_after(i + 1, mentions, kinds)
                listed = [t for _, _, t in mentions[i + 1 : j + 1]]
                known = [t for t in listed if t in self.ctx.names]
                bare_colon = gap.strip() == ":"
                same_name_pair = self.f.paired and bare_colon and listed == [tok]  # "C1: C1" maps C1 onto C1
                if known and len(known) == len(listed) and (tok not in listed or same_name_pair):
                    complete = prefix or bool(ADJ_COMPLETE.search(gap))
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
                m = COLOR_GROUP_BEFORE.search(before) if self.near("group", start - 60, start) else None
                if m:
                    self.color_group_claim(start - (len(before) - m.start()), lend, m.group(1), listed)
                m = SET_BEFORE.search(before) if self.near("set", start - 60, start) else None
                prop = m.group(1) if m else None
                sstart = start - (len(before) - m.start()) if m else start
                if prop is None:
                    m2 = SET_AFTER.match(text[lend : lend + 60]) if self.near("set", lend, lend + 60) else None
                    if m2 and listed:
                        prop = m2.group(1)
                        lend = lend + m2.end()
                if prop is not None:
                    self.set_claim(sstart, lend, prop, listed)

    def _arith(self) -> None:
        for m in ARITH.finditer(self.text):
            terms = [float(m.group(1)), *(float(x) for x in re.findall(r"\d+(?:\.\d+)?", m.group(2)))]
            result = float(m.group(3))
            ok = abs(sum(terms) - result) < 1e-6
            self.add(m.start(), ("sum", tuple(terms), result), m.group(0), ok, "text_reasoning")
