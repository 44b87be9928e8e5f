"""VGR v4's claim reader, structured notations: JSON flattened to `key: value` lines, markdown tables and CSV
read by what each column holds (never by a header word). See `judge.reader`."""

from __future__ import annotations

import re
from typing import Any

from judge.reader_lexicon import Lexicon, _tokens

# ------------------------------------------------------------------------------------------ structures


def _flat(x: Any) -> bool:
    return not isinstance(x, (dict, list)) or (isinstance(x, list) and all(not isinstance(y, (dict, list))
                                                                            for y in x))


def _child(key: str, k: Any, names: frozenset[str]) -> str:
    """The key a nested value is read under: the parent's last word and its own ({"path": {"nodes": [...]}} ->
    "path nodes"), and the word before a node ({"neighbours": {"A": {"nodes": [...]}}} -> "neighbours A nodes")."""
    words = key.split()
    keep = words[-2:] if len(words) > 1 and words[-1] in names else words[-1:]
    return " ".join([*keep, str(k)])


def _flatten_json(v: Any, key: str = "", out: list[str] | None = None, depth: int = 0,
                  extra: dict[str, Any] | None = None, names: frozenset[str] = frozenset()) -> list[str]:
    """JSON (or any nested data) as `key: value` statements. `extra`: scalars of the parent record that
    describe this object (`{"tour": {...}, "value": 12}`: the 12 is the tour's), read in its first record.
    `names`: the instance's node names (an object keyed by nodes is one statement per node, not a record)."""
    out = [] if out is None else out
    if depth > 20 or len(out) > 5000:
        return out
    prefix = f"{key}: " if key else ""

    if isinstance(v, dict) and v and names and all(str(k) in names for k in v) and not extra:
        # {"neighbours": {"A": [...], "B": [...]}}: a node's entry each, never one record of all of them
        for k, x in v.items():
            if _flat(x):
                out.append(f"{key} {k}: {', '.join(map(str, x)) if isinstance(x, list) else x}".strip())
            else:
                _flatten_json(x, _child(key, k, names), out, depth + 1, names=names)
        return out
    if isinstance(v, dict):
        items = {**v, **(extra or {})}
        flats = {k: x for k, x in items.items() if _flat(x)}
        nested = {k: x for k, x in items.items() if not _flat(x)}
        if 1 < len(flats) <= 8 and any(isinstance(x, list) for x in flats.values()) \
                and not all(str(k).isdigit() for k in v):  # {"1": [...], "2": [...]}: one line per class
            # one record ({"members": [...], "property": "clique"}, {"path": [...], "total": 12}): one statement;
            # its nested parts ({"legs": [{...}]}) follow it
            out.append(prefix + "  ".join(f"{k}: {', '.join(map(str, x)) if isinstance(x, list) else x}"
                                          for k, x in flats.items()))
            for k, x in nested.items():
                _flatten_json(x, _child(key, k, names), out, depth + 1, names=names)
            return out
        objs = [k for k, x in nested.items() if isinstance(x, dict)]
        if len(objs) == 1 and flats and len(flats) <= 3 and not any(isinstance(x, list) for x in flats.values()):
            # one object with scalars beside it: the scalars describe that object
            _flatten_json(nested[objs[0]], _child(key, objs[0], names), out, depth + 1,
                          {k: x for k, x in flats.items()}, names)
            for k, x in nested.items():
                if k != objs[0]:
                    _flatten_json(x, _child(key, k, names), out, depth + 1, names=names)
            return out
        for k, x in items.items():
            if isinstance(x, (dict, list)):
                # the parent key stays with the child ({"path": {"nodes": [...]}} -> "path nodes: ...")
                _flatten_json(x, _child(key, k, names), out, depth + 1, names=names)
            else:
                out.append(f"{prefix}{k}: {x}")
    elif isinstance(v, list):
        if all(not isinstance(x, (dict, list)) for x in v):
            out.append(prefix + ", ".join(str(x) for x in v))
        else:
            for x in v:
                if isinstance(x, list) and all(not isinstance(y, (dict, list)) for y in x):
                    out.append(prefix + ", ".join(str(y) for y in x))
                elif isinstance(x, dict) and all(_flat(y) for y in x.values()):
                    out.append(" ".join(f"{k} {', '.join(map(str, y)) if isinstance(y, list) else y}"
                                        for k, y in x.items()) + (f" ({key})" if key else ""))
                else:
                    _flatten_json(x, key, out, depth + 1, names=names)
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
    keep = [c for c in range(width) if kinds[c] != "text"]
    if task == "CN" and [kinds[c] for c in keep] == ["node", "node"] and not heads_distinct:
        # one row per (node, neighbour), the rows of each node together: that node's neighbour list
        runs: list[tuple[str, list[str]]] = []
        for r in rows:
            a, b = (r[keep[0]] if keep[0] < len(r) else ""), (r[keep[1]] if keep[1] < len(r) else "")
            if runs and runs[-1][0] == a:
                runs[-1][1].append(b)
            else:
                runs.append((a, [b]))
        if len({a for a, _ in runs}) == len(runs):
            return [f"{a} neighbours: {', '.join(bs)}" for a, bs in runs]
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
            # a column of node lists holds neighbours; in a paired task "N1: C3" would read as a mapping pair
            out.append(f"{vals[0]} neighbours: {vals[1]}" if task == "CN" or lex.paired else f"{vals[0]}: {vals[1]}")
        elif pattern and pattern[0] in ("path", "list"):
            words = " ".join(head) + " " + text_cells
            out.append(f"{words}: {vals[0]}" + (f" total {vals[1]}" if len(vals) > 1 and pattern[1] == "num" else ""))
        else:
            out.append(" ".join(head) + ": " + " ".join(r))
    return out


def _is_csv_block(lines: list[str]) -> bool:
    return len(lines) >= 2 and lines[0].count(",") >= 1 and "." not in lines[0].rstrip(".")


# ------------------------------------------------------------------------------------------ s-expressions

_SX_TOKEN = re.compile(r"[()]|[^\s()]+")


def _sx_parse(body: str) -> list[Any] | None:
    """One balanced s-expression (`(tour (A B C A) (length 12))`) as nested lists, or None."""
    stack: list[list[Any]] = [[]]
    for m in _SX_TOKEN.finditer(body):
        t = m.group(0)
        if t == "(":
            stack.append([])
            if len(stack) > 20:
                return None
        elif t == ")":
            if len(stack) < 2:
                return None
            done = stack.pop()
            stack[-1].append(done)
        else:
            stack[-1].append(t)
    if len(stack) != 1 or len(stack[0]) != 1 or not isinstance(stack[0][0], list):
        return None
    return stack[0][0]


def _sx_data(x: Any, lex: Lexicon) -> Any:
    """An s-expression as data: a group headed by a word is a record ({word: its items}, its headed
    sub-groups beside them); a group of two atoms is a pair ("a: x"); other groups are lists."""
    if isinstance(x, str):
        return x
    toks = _tokens(x[0], lex) if x and isinstance(x[0], str) else []
    head = x[0] if toks and toks[0].t in ("word", "kw") else None
    keyed: dict[str, list[Any]] = {}
    plain: list[Any] = []
    for y in x[1:] if head else x:
        d = _sx_data(y, lex)
        if isinstance(d, dict) and isinstance(y, list) and y and isinstance(y[0], str) and y[0] in d:
            for k, v in d.items():
                keyed.setdefault(k, []).append(v)  # (leg A B 5) (leg B C 3): one key, several values
        else:
            plain.append(d)
    pairs = [p for p in plain if isinstance(p, list) and len(p) == 2 and all(isinstance(a, str) for a in p)]
    if len(pairs) > 1 and len(pairs) == len(plain):
        plain = [f"{a}: {b}" for a, b in pairs]  # (A 1) (B 2): pairs, as "A: 1"
    elif all(isinstance(p, str) or (isinstance(p, list) and all(isinstance(a, str) for a in p)) for p in plain) \
            and any(isinstance(p, str) for p in plain):
        plain = [a for p in plain for a in (p if isinstance(p, list) else [p])]  # (neighbours X (a b c))
    own: Any = plain[0] if len(plain) == 1 and head else plain
    if head is None:
        return own
    # a headed sub-group keeps the head it is part of: (path (A B C) (legs (A B 5) ...)) -> "path legs"
    return {head: own if plain else "",
            **{f"{head} {k}": v[0] if len(v) == 1 else v for k, v in keyed.items() if k != head}}


def sexpr_statements(body: str, lex: Lexicon) -> list[str] | None:
    """The statements of a one-line s-expression, or None when `body` is not one."""
    tree = _sx_parse(body)
    if tree is None or not any(isinstance(y, list) for y in tree):
        return None
    data = _sx_data(tree, lex)
    if isinstance(data, dict):
        return _flatten_json(data)
    return [", ".join(map(str, data))] if all(isinstance(a, str) for a in data) else _flatten_json(data)


# ------------------------------------------------------------------------------------------ HTML

_HTML_TAG = re.compile(r"(?i)</?(?:p|br|div|span|b|i|u|em|strong|li|ul|ol|code|pre|thead|tbody|h[1-6])\b[^<>]{0,200}>")


def _html_rows(body: str) -> list[str]:
    """One table's rows as markdown lines (a header row of <th> cells gets its separator line). One pass over
    the tags: a cell runs from its opening tag to the next tag of the table's structure."""
    rows: list[list[tuple[str, str]]] = []
    cell: tuple[str, int] | None = None
    for k, m in enumerate(re.finditer(r"(?i)</?(?:tr|t[hd])\b[^<>]{0,200}>", body)):
        if k > 20_000:  # a table no derivation needs: its first rows are read
            break
        tag = m.group(0).lower()
        if cell is not None:
            text = _HTML_TAG.sub(" ", body[cell[1]:m.start()]).strip().replace("|", "/")
            if rows:
                rows[-1].append((cell[0], " ".join(text.split())))
            cell = None
        if tag.startswith("<tr"):
            rows.append([])
        elif tag.startswith(("<th", "<td")):
            if not rows:
                rows.append([])
            cell = (tag[1:3], m.end())
    lines = []
    for i, r in enumerate(x for x in rows if x):
        lines.append("| " + " | ".join(c for _t, c in r) + " |")
        if i == 0 and all(t == "th" for t, _c in r):
            lines.append("|" + "---|" * len(r))
    return lines


def html_to_text(text: str) -> str:
    """HTML tables as markdown tables and the common inline tags dropped: the same rows, read by the table
    reader. Linear: each table is cut out with str.find, its tags visited once."""
    if "<" not in text or ">" not in text:
        return text
    low = text.lower()
    if "<table" in low:
        parts, at = [], 0
        while (start := low.find("<table", at)) >= 0:
            end = low.find("</table", start)
            if end < 0:
                break
            close = low.find(">", end)
            close = len(text) if close < 0 else close + 1
            parts += [text[at:start], "\n" + "\n".join(_html_rows(text[start:end])) + "\n"]
            at = close
        parts.append(text[at:])
        text = "".join(parts)
        low = text.lower()
    return _HTML_TAG.sub("\n", text) if "</" in text or "<br" in low else text
