"""VGR v4's claim reader: free text -> typed claims, whatever the notation. It judges nothing.

The reader turns the reasoning of a response into `Claim`s. *Perception* claims restate the input (an edge,
its weight, a neighbour list); *derived* claims state something the answer is built from (a walk with its
running totals or total, a distance, a set with its property, a neighbour set of a query node, a mapping
pair, a colour assignment). `judge.vgr4` checks them against the graph and decides the credit.

Notations read to the same claims: arrows (`->`, `→`, `\\to`, `\\rightarrow`, `\\mapsto`, "to", "then"),
numbered / nested / bulleted lists, markdown tables and CSV (read by what each column holds, never by a header
word), JSON of any shape (flattened to `key: value` lines), YAML / outline keys over their indented entries,
s-expressions (parsed as data), HTML tables, Graphviz DOT and RDF/Turtle (`judge.reader_graphs`), ASCII links
(`A --5--> B`), LaTeX (`$d(A,B)=5$`, `\\text{}`), thousands separators and units, and keywords in English,
German, French, Spanish and Chinese. A response mostly in another script (kana, Cyrillic, ...) is unreadable. Statements with a negation
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
import tomllib
from collections.abc import Callable, Iterable
from typing import Any

from judge.reader_graphs import DOT_OPEN, dot_statements, turtle_statements
from judge.reader_lexicon import (
    _ANAPHORA,
    _CHEAP_KW,
    _COUNTED,
    _FENCE,
    _KW,
    _LATEX,
    _MARKER,
    _SENT_SPLIT,
    _SEXPR_SPLIT,
    _TABLE_SEP,
    _THOUSANDS,
    _TOML_HEAD,
    _TOML_PAIR,
    _TOML_PARTS,
    _WORDS,
    GRAPH_NOUNS,
    MAX_READ_CHARS,
    OTHER_SCRIPT,
    PROGRAM,
    Claim,
    Lexicon,
    Reading,
    _has_node,
    _tokens,
    foreign_words,
)
from judge.reader_statements import _Statement
from judge.reader_structures import (
    _cell_kind,
    _cells,
    _flatten_json,
    _is_csv_block,
    _table_rows,
    html_to_text,
    sexpr_statements,
)
from judge.rule_grammar import shape

__all__ = ["MAX_READ_CHARS", "PROGRAM", "Claim", "Lexicon", "Reading", "lexicon_of", "read", "statements"]


# ------------------------------------------------------------------------------------------ the reader


# "for 12 in all" after a number is a total ("in all" elsewhere is not: "in all cases")
_IN_ALL = re.compile(r"(?i)(\d)(\s+)in all\b")


def _normalise(text: str) -> str:
    text = html_to_text(text)
    if "in all" in text:
        text = _IN_ALL.sub(r"\1\2in total", text)
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
        dot = DOT_OPEN.match(ln) if s.endswith("{") else None
        if dot is not None:  # a Graphviz graph: its statements up to the closing brace
            j = i + 1
            while j < n and lines[j].strip() != "}" and j - i < 2000:
                j += 1
            out += [(st, False, False) for st in dot_statements(dot.group(1), lines[i + 1:j])]
            i = j + 1
            continue
        if (s.lower().startswith("@prefix") or (in_code and code_lang in ("turtle", "ttl"))) and not code:
            j = i
            while j < n and not _FENCE.match(lines[j]) and (in_code or lines[j].strip()):
                j += 1
            out += [(st, False, False) for st in turtle_statements("\n".join(lines[i:j]), lex)]
            i = j
            continue
        if code:
            out.append((PROGRAM + " " + s, False, True))
            i += 1
            continue
        head = _TOML_HEAD.match(s)
        parts = [p for p in _TOML_PARTS.split(head.group(1)) if p] if head else []
        if parts and head.group(1) not in lex.names and not all(p in lex.names for p in parts):  # (`[A]`: a node)
            # a TOML table: its name is read before each `key = value` line under it, as a YAML key is before the
            # entries indented under it ("[neighbours.A]" / "nodes = [B, C]" -> "neighbours A nodes = [B, C]");
            # an inline table is one statement per entry ("running = {B = 5}" -> "path running B = 5")
            i += 1
            while i < n and (_TOML_PAIR.match(lines[i]) or not lines[i].strip()):
                key, _, value = lines[i].strip().partition("=")
                try:
                    inline = tomllib.loads(lines[i]) if value.strip().startswith("{") else {}
                except tomllib.TOMLDecodeError:
                    inline = {}
                sub = next(iter(inline.values()), None)
                entries = [f"{key.strip()} {k} = {v}" for k, v in sub.items()] if isinstance(sub, dict) and sub \
                    else [lines[i].strip()] if lines[i].strip() else []
                out += [(part, False, False) for e in entries
                        for part in _SENT_SPLIT.split(_thousands(f"{' '.join(parts)} {e}")) if part.strip()]
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
            if end is not None:
                stop = text.find("\n", end)
                if text[end: stop if stop >= 0 else len(text)].strip() not in ("", ",", ";", "."):
                    val = None  # `[301] --(1)--> [DRA]`: a bracketed name that opens a line of text, not JSON
            if end is not None and isinstance(val, (dict, list)):
                for flat in _flatten_json(val, names=lex.names):
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
            if body.endswith(":") and nxt.strip() and len(nxt) - len(nxt.lstrip()) > indent \
                    and not _has_node(body, lex):
                # a key and the entries indented under it (YAML, outlines): each entry is read under the key
                # ("neighbours:" / "  A: [B, C]" -> "neighbours A: [B, C]")
                key = body.rstrip(":").strip()
                j = i + 1
                while j < n and lines[j].strip() and len(lines[j]) - len(lines[j].lstrip()) > indent:
                    sub = lines[j]
                    lines[j] = sub[: len(sub) - len(sub.lstrip())] + key + " " + _MARKER.sub("", sub, count=1).strip()
                    j += 1
                i += 1
                continue
        if body.startswith("(") and body.endswith(")") and "," not in body and "=" not in body \
                and (sx := sexpr_statements(body, lex)) is not None:
            # an s-expression: read as data, like JSON (a headed group is a record, its scalars beside it)
            out.extend((st, False, False) for st in sx)
            i += 1
            continue
        if body.startswith("(") and (") (" in body or ")(" in body):
            # groups that do not parse as one expression: each is a statement, under the head word of the whole
            head = _WORDS.match(body, 1)
            sep = f")\n{head.group(0)} (" if head and not _has_node(head.group(0), lex) else ")\n("
            body = _SEXPR_SPLIT.sub(sep, body)
        if body:
            for part in _SENT_SPLIT.split(_thousands(body)):
                if part and part.strip():
                    out.append((part, False, code))
        i += 1
    return out


_GRAPH_CTX = re.compile(rf"(?i)\b(?:{'|'.join(GRAPH_NOUNS)})\s*(?:_\s*)?(1|2|one|two)\b"
                        r"|\b(first|second)\s+(?:graph|molecule)")


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
        if "_" in s:  # the parts of a key such as `neighbours_of_JMG` (`_tokens` splits it the same way)
            ws += [p for w in ws if "_" in w for p in w.split("_")]
        if lex.names.isdisjoint(ws) and not any(_KW.get(w.lower()) in _CHEAP_KW for w in ws) \
                and not any("\u4e00" <= ch <= "\u9fff" or ch in "✗✘❌Σ∑δ" for ch in s):
            words += sum(1 for w in ws if not w.isdigit())  # no node and nothing a walk or rejection needs
            continue
        toks = _tokens(s, lex)
        words += sum(1 for t in toks if t.t in ("word", "kw"))
        if not code and any(t.t == "node" for t in toks):
            reading.node_statements += 1
            reading.other_script += OTHER_SCRIPT.search(s) is not None
        seen_nodes.update(t.v for t in toks if t.t == "node")
        first = ws[0].lower() if ws else ""
        if any(t.t == "kw" and t.v == "rej" for t in toks) and (
                not any(t.t == "node" for t in toks) or first in _ANAPHORA):
            for c in last:  # "... Rejected." / "that fails because ..." after a candidate: the response rejects it
                c.neutral = True
        if not any(t.t == "node" for t in toks):
            nums = [t.v for t in toks if t.t == "num"]
            # (with every part of a key: `path_length(12)`, `total_cost = 12` say a total as "length: 12" does)
            kws = {t.v for t in toks if t.t == "kw"} | {_KW[w.lower()] for w in ws if w.lower() in _KW}
            if len(nums) == 1 and kws & {"total", "dist", "hops"} and last and last[-1].kind == "walk" \
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
        st.counts = _COUNTED.search(s) is not None
        got = st.read()
        open_dist = st.open_dist
        nums = st._numbers()
        if not got and "run" in st.kws and len(st.nodes) == 1 and len(nums) == 1 and last \
                and last[-1].kind == "walk" and st.nodes[0] in last[-1].nodes[1:]:
            # "cumulative: / DAY: 1267" under a walk: the running total at that node of the walk
            w = last[-1]
            at = max(i for i, x in enumerate(w.nodes) if x == st.nodes[0])
            w.nums = tuple(sorted({**dict(w.nums), at: nums[0]}.items()))
            continue
        if got and not code and len(nums) >= 2:
            used = {c.value for c in got} | {v for c in got for _, v in c.nums}
            if any(x not in used for x in nums):
                # a number the reading does not account for ("via A (weight 5) gives 12", "costs 5, for 12 in
                # all"): which number is which is a guess, so what was read is credited when true and never
                # charged when false
                for c in got:
                    c.soft = True
                reading.guessed[pos] = (frozenset(st.nodes), frozenset(nums))
        if not got and st.kws & {"neg", "rej", "deg"}:
            # a negative or rejected statement the reader has no form for, or a node's degree (a restatement of
            # the input): read, and neutral
            got = [Claim("note", tuple(st.nodes), pos=pos, neutral=True)]
        reading.claims.extend(got)
        if not got and not code and foreign_words(s, lex) >= 2:
            reading.unparsed += 1  # it says something about a node the reader has no form for
        if not got and not code and (len(st.nodes) >= 2 or nums):
            # nodes with a number, or two nodes, read to nothing: data the reader has no form for
            reading.unread.append((frozenset(st.nodes), frozenset(nums)))
        reading.parsed += bool(got)
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
