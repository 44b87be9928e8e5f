"""VGR v4's claim reader, structured notations: JSON flattened to `key: value` lines, markdown tables and CSV
read by what each column holds (never by a header word). See `judge.reader`."""

from __future__ import annotations

from typing import Any

from judge.reader_lexicon import Lexicon, _tokens

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
