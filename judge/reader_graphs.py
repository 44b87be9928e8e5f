"""VGR v4's claim reader, graph-description languages: Graphviz DOT blocks and RDF/Turtle triples read to the
statements the rest of the reader parses (see `judge.reader`). A DOT graph's name says what its edges are
(`graph path { A -- B [label=5]; ... }` is a walk with its legs, `graph clique { A; B; }` a set); Turtle
subjects become records (`:s a :Path ; :visits ( :A :B ) ; :length 5 .`), node subjects their properties."""

from __future__ import annotations

import re
from typing import Any

from judge.reader_lexicon import _KW, Lexicon
from judge.reader_structures import _flatten_json

DOT_OPEN = re.compile(r"^\s*(?:strict\s+)?(?:di)?graph\b\s*(\"[^\"]{0,100}\"|[\w.]{0,100})\s*\{\s*$", re.I)
_DOT_ATTR = re.compile(r"(\w+)\s*=\s*(\"[^\"]{0,200}\"|[^,\s\]]+)")
_DOT_EDGE = re.compile(r"\s*(?:--|->)\s*")
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")


def _unq(s: str) -> str:
    s = s.strip()
    return s[1:-1] if len(s) > 1 and s[0] == s[-1] == '"' else s


def _words(name: str) -> str:
    return _CAMEL.sub(" ", _unq(name)).replace("_", " ").strip()


def _is_num(s: str) -> bool:
    try:
        float(s)
        return True
    except ValueError:
        return False


def dot_statements(name: str, body: list[str]) -> list[str]:
    """The statements of one DOT graph (its name and the lines between the braces)."""
    title = _words(name)
    edges: list[tuple[list[str], dict[str, str]]] = []
    nodes: list[tuple[str, dict[str, str]]] = []
    label = None
    for raw in ";".join(body).split(";"):
        st = raw.strip()
        if not st or st.startswith(("//", "#")):
            continue
        head, _, attr = st.partition("[")
        attrs = {k.lower(): _unq(v) for k, v in _DOT_ATTR.findall(attr)}
        if not attr and "=" in head:  # a graph attribute: label="path length: 12"
            k, _, v = head.partition("=")
            if k.strip().lower() == "label":
                label = _unq(v)
            continue
        ids = [_unq(x) for x in _DOT_EDGE.split(head.strip()) if x.strip()]
        if len(ids) > 1:
            edges.append((ids, attrs))
        elif ids:
            nodes.append((ids[0], attrs))
    out: list[str] = []
    kinds = {_KW.get(w.lower()) for w in title.split()}
    hops = [(ids[i], ids[i + 1], a.get("label", a.get("weight", ""))) for ids, a in edges for i in range(len(ids) - 1)]
    chain = all(hops[i][1] == hops[i + 1][0] for i in range(len(hops) - 1))
    if hops and chain and kinds & {"path", "tour", "cycle", "dist", "hops"}:
        seq = " -- ".join([hops[0][0], *(b for _a, b, _w in hops)])
        ws = [w for _a, _b, w in hops]
        out.append(f"{title}: {seq}" + (f" = {' + '.join(ws)}" if all(_is_num(w) for w in ws) else ""))
    elif hops and len({a for a, _b, _w in hops}) == 1 and not any(w for _a, _b, w in hops):
        out.append(f"{title}: {hops[0][0]}: {', '.join(b for _a, b, _w in hops)}")  # a star: one node's neighbours
    else:
        arrow = " → " if kinds & {"map"} else " -- "
        out += [f"{title}: {a}{arrow}{b}" + (f" ({w})" if w else "") for a, b, w in hops]
    coloured = [(n, a.get("color") or a.get("colour") or a.get("label")) for n, a in nodes]
    if coloured and all(c and _is_num(c) for _n, c in coloured):
        out += [f"{title}: {n}: {c}" for n, c in coloured]
    elif nodes:
        out.append(f"{title}: {', '.join(n for n, _a in nodes)}")
    if label:
        out.append(label)
    return out


# ------------------------------------------------------------------------------------------ Turtle

_TTL_TERM = re.compile(r"\(|\)|\[|\]|;|,|\"[^\"]{0,200}\"|[^\s()\[\];,]+")


def _local(t: str) -> str:
    t = _unq(t)
    if t.startswith("<") and t.endswith(">"):
        t = re.split(r"[#/]", t[1:-1])[-1]
    return t.rsplit(":", 1)[-1] if ":" in t and not _is_num(t) else t


def turtle_statements(text: str, lex: Lexicon) -> list[str]:
    """The statements of a block of Turtle triples: a node subject's properties ("A colour: 1", "A neighbours:
    B, C"), any other subject as one record of its properties (`judge.reader_structures._flatten_json`)."""
    records: dict[str, dict[str, Any]] = {}
    for st in re.split(r"\s\.\s*(?:\n|$)", text):
        st = st.strip()
        if not st or st.lower().startswith(("@prefix", "prefix", "@base")):
            continue
        toks = _TTL_TERM.findall(st)
        if len(toks) < 3:
            continue
        subj = _local(toks[0])
        rec = records.setdefault(subj, {})
        pred: str | None = None
        coll: list[str] | None = None
        for t in toks[1:]:
            if t == "(":
                coll = []
            elif t == ")":
                if pred is not None and coll is not None:
                    rec.setdefault(pred, []).extend(coll)
                coll = None
            elif coll is not None:
                coll.append(_local(t))
            elif t == ";":
                pred = None
            elif t in (",", "[", "]"):
                continue
            elif pred is None:
                pred = "type" if t == "a" else _words(_local(t))
            else:
                v = _local(t)
                rec.setdefault(pred, []).append(_words(v) if pred == "type" else v)
    out: list[str] = []
    for subj, rec in records.items():
        flat = {k: (v[0] if len(v) == 1 and k not in ("visits", "members", "between", "neighbours") else v)
                for k, v in rec.items()}
        if subj in lex.names:
            out += [f"{subj} {k}: {', '.join(v) if isinstance(v, list) else v}" for k, v in flat.items()]
        else:
            out += _flatten_json(flat)
    return out
