"""Response generator for the VGR v3 property battery (no tests here).

`Facts(instance)` knows an instance's critical facts (from the gold optimum, `judge.critical`), true facts
that are critical for no optimum, and false facts; `render(...)` writes a chosen selection of them and a
final answer in any of `NOTATIONS`, in the benchmark's envelope. What is rendered is decided here from the
graph and the gold answer only, never from instance-specific constants, so the battery holds for any
generated dataset.
"""

from __future__ import annotations

import itertools
import json
import random
from dataclasses import dataclass
from typing import Any

from gie.evidence import Evidence, build_evidence
from judge.critical import Candidate, critical_facts

NOTATIONS = ("arrow", "dash", "to", "tuple", "table", "json", "bullet", "prose")

# ---------------------------------------------------------------------------------------------- pieces
# A piece is one statement about the instance: ("path", nodes, runs|None, total|None), ("edge", u, v, w),
# ("dist", u, v, d), ("set", prop, nodes), ("map", a, x), ("assign", n, label), ("nonedge_as_edge", u, v)


@dataclass
class Generated:
    critical: list[tuple]  # pieces that together state every critical fact of the gold optimum
    noncritical: list[tuple]  # true pieces stating no critical fact of any optimum
    false: list[tuple]  # false pieces (each one distinct false fact)


def _w(g, a, b) -> float:
    return float(g.edges[a, b].get("weight", 1))


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


def pieces(inst, ev: Evidence | None = None, seed: int = 0) -> Generated:
    ev = ev or build_evidence(inst.task, inst.data)
    task, gold, value = inst.task, dict(inst.gold.answer), inst.gold.value
    crit = critical_facts(ev, gold, value)
    g = ev.facts.graphs[0].asked
    weighted = ev.facts.weighted
    q = ev.facts.query
    rng = random.Random(seed)
    critical: list[tuple] = []
    if task == "SD" and gold.get("Path") and len(gold["Path"]) > 1:
        p = [str(x) for x in gold["Path"]]
        run, runs = 0.0, []
        for a, b in itertools.pairwise(p):
            run += _w(g, a, b)
            runs.append(run)
        # one hop per piece: the share of the path stated grows hop by hop
        for i in range(1, len(p)):
            critical.append(("hop", p[0], p[i - 1], p[i], runs[i - 2] if i > 1 else 0.0, runs[i - 1], _w(g, p[i - 1], p[i])))
    elif task == "DIAM" and gold.get("Path"):
        p = [str(x) for x in gold["Path"]]
        critical += [("edge", a, b, None) for a, b in itertools.pairwise(p)]
        critical.append(("dist", p[0], p[-1], float(value)))
    elif task == "CN":
        s, t = str(q["source"]), str(q["target"])
        common = sorted(set(g[s]) & set(g[t]))
        if common:
            for x in common:
                critical += [("edge", s, x, None), ("edge", t, x, None)]
        else:
            critical += [("edge", s, x, None) for x in sorted(g[s])] + [("edge", t, x, None) for x in sorted(g[t])]
    elif task in ("TSP", "CYC"):
        p = [str(x) for x in (gold.get("Tour") or gold.get("Cycle") or [])]
        if len(p) > 3:
            critical += [("edge", a, b, _w(g, a, b) if weighted else None) for a, b in itertools.pairwise(p)]
            if task == "TSP":
                critical.append(("tour", p, float(value)))
    elif task in ("MCP", "MIS", "MVC"):
        key, prop = {"MCP": ("Clique", "clique"), "MIS": ("IndependentSet", "independent set"),
                     "MVC": ("Cover", "vertex cover")}[task]
        members = sorted(str(x) for x in gold.get(key) or [])
        if task == "MVC":
            rest = sorted(set(g) - set(members))
            # growing subsets of the complement are independent; the whole cover comes last
            critical += [("set", "independent set", rest[: k + 1]) for k in range(len(rest)) if k >= 1]
            critical.append(("set", prop, members))
        else:
            critical += [("set", prop, members[: k + 1]) for k in range(len(members))]
    elif task == "COL":
        col = gold.get("Coloring") or {}
        critical += [("assign", str(n), str(c)) for n, c in sorted(col.items())]
        if crit.witnesses:
            w = crit.witnesses[0]
            critical += [("edge", a[1], a[2], None) for a in sorted(w.atoms)]
    elif task in ("GED", "MCS"):
        m = gold.get("Mapping") or {}
        critical += [("map", str(a), str(x)) for a, x in sorted(m.items()) if x is not None]
    union = set().union(*(c.atoms for c in crit.candidates), *(w.atoms for w in crit.witnesses)) \
        if crit.candidates or crit.witnesses else set()
    noncritical: list[tuple] = []
    if not ev.facts.paired:
        for a, b in sorted(g.edges):
            if ("E", *sorted((a, b))) not in union and len(noncritical) < 6:
                noncritical.append(("edge", a, b, _w(g, a, b) if weighted else None))
        nodes = sorted(g)
        for n in nodes[:3]:
            noncritical.append(("color", n, ev.facts.graphs[0].drawn_color.get(n, "sky")))
    else:
        for gi, lg in enumerate(ev.facts.graphs[:2]):
            for a, b in sorted(lg.asked.edges)[:3]:
                noncritical.append(("gedge", gi + 1, a, b))
    false: list[tuple] = []
    drawn = ev.facts.graphs[0].graph
    nodes = sorted(g)
    # false in the drawn graph and in the graph asked on (a drawn edge the edit removes is a true reading)
    pairs = [(a, b) for a, b in itertools.combinations(nodes, 2) if not g.has_edge(a, b) and not drawn.has_edge(a, b)]
    rng.shuffle(pairs)
    for a, b in pairs[:3]:
        false.append(("edge", a, b, None) if not ev.facts.paired else ("gedge", 1, a, b))
    if weighted:
        for a, b in sorted(g.edges)[: 3 - len(false)]:
            false.append(("edge", a, b, _w(g, a, b) + 7))
    names = {str(n) for lg in ev.facts.graphs for n in lg.graph}
    k = 0
    while len(false) < 3 and nodes:
        k += 1
        base = nodes[k % len(nodes)]
        ghost = "Z" + base[1:] if base[0] != "Z" else "Q" + base[1:]
        ghost = ghost[:-1] + chr(ord("A") + k % 26) if ghost in names or ghost == base else ghost
        if ghost not in names and not any(f[0] == "ghost" and f[1] == ghost for f in false):
            false.append(("ghost", ghost, base))
        if k > 60:
            break
    return Generated(critical, noncritical, false)


# ---------------------------------------------------------------------------------------------- render


def _path_text(p: list[str], notation: str) -> str:
    if notation == "to":
        return " to ".join(p)
    if notation in ("tuple", "json", "bullet", "table"):
        return "Path: " + ", ".join(p)
    return " -> ".join(p)


def render_piece(piece: tuple, notation: str, weighted: bool) -> str:
    kind = piece[0]
    n = notation
    if kind == "hop":
        _, src, a, b, before, run, w = piece
        if n == "arrow":
            return f"{a} ({_num(before)} km) -> {b} ({_num(run)} km)" if a != src else f"{a} -> {b} ({_num(run)} km)"
        if n == "table":
            return f"| {a}–{b} | {_num(w)} |\n| {b} | {_num(run)} |"
        if n == "json":
            return json.dumps({"edge": [a, b, w], f"d({src}, {b})": run})
        if n == "prose":
            return f"{a} is connected to {b}. The distance from {src} to {b} is {_num(run)}."
        if n == "tuple":
            return f"({a}, {b}, {_num(w)}); d({src}, {b}) = {_num(run)}"
        if n == "to":
            return f"I see lines from {a} to {b}. {src} to {b} costs d({src}, {b}) = {_num(run)}."
        if n == "bullet":
            return f"- {a}--{b} ({_num(w)})\n- d({src}, {b}) = {_num(run)}"
        return f"{a}--{b}, weight {_num(w)}. d({src}, {b}) = {_num(run)}."
    if kind == "edge":
        _, a, b, w = piece
        ws = f" ({_num(w)})" if w is not None and weighted else ""
        if n == "arrow":
            return f"{a} -> {b}{ws}"
        if n == "tuple":
            return f"({a}, {b}{', ' + _num(w) if w is not None and weighted else ''})"
        if n == "json":
            return json.dumps({"edge": [a, b] + ([w] if w is not None and weighted else [])})
        if n == "table":
            return f"| {a}–{b} | {_num(w) if w is not None and weighted else 1} |"
        if n in ("prose", "to"):
            return f"{a} is connected to {b}."
        if n == "bullet":
            return f"- {a} is adjacent to {b}"
        return f"{a}--{b}" + (f", weight {_num(w)}" if w is not None and weighted else "")
    if kind == "gedge":
        _, gi, a, b = piece
        return f"In graph {gi}, {a}--{b}."
    if kind == "dist":
        _, a, b, d = piece
        if n == "prose":
            return f"The distance from {a} to {b} is {_num(d)}."
        if n == "to":
            return f"{a} and {b} are {_num(d)} hops apart."
        if n == "json":
            return json.dumps({f"d({a}, {b})": d})
        if n == "table":
            return f"| {a}–{b} | {_num(d)} |"
        return f"d({a}, {b}) = {_num(d)}"
    if kind == "tour":
        _, p, total = piece
        if n == "to":
            return " to ".join(p) + f", total {_num(total)}"
        if n in ("tuple", "json", "bullet", "table"):
            return "Tour: " + ", ".join(p) + f" (total {_num(total)})"
        return " -> ".join(p) + f" = {_num(total)}"
    if kind == "set":
        _, prop, members = piece
        if n == "json":
            return json.dumps({prop: members})
        if n == "bullet":
            return f"The {prop}:\n" + "\n".join(f"- {m}" for m in members)
        if n in ("prose", "to"):
            return ", ".join(members) + f" form a {prop}."
        return f"{prop}: {{{', '.join(members)}}}"
    if kind == "map":
        _, a, x = piece
        if n == "arrow":
            return f"{a} -> {x}"
        if n == "json":
            return json.dumps({a: x})
        if n == "table":
            return f"| {a} | {x} |"
        if n == "tuple":
            return f"mapping pair ({a}, {x})"
        if n in ("prose", "to"):
            return f"{a} maps to {x}."
        if n == "bullet":
            return f"- {a} ↔ {x}"
        return f"{a} = {x}"
    if kind == "assign":
        _, node, lab = piece
        if n == "json":
            return json.dumps({node: int(lab)})
        if n == "table":
            return f"| {node} | {lab} |"
        if n in ("prose", "to"):
            return f"{node} gets color {lab}."
        return f"{node}: color {lab}"
    if kind == "color":
        _, node, c = piece
        return f"{node}({c})" if n != "prose" else f"{node} is {c}."
    if kind == "ghost":
        _, a, b = piece
        return f"{a}--{b}"
    raise ValueError(kind)


_TABLE_HEADERS = {
    "map": "| Graph 1 | Graph 2 (mapping) |\n|---|---|",
    "assign": "| Node | Color |\n|---|---|",
}


def render(inst, chosen: list[tuple], answer: dict[str, Any] | None, notation: str, weighted: bool) -> str:
    """The reasoning stating `chosen` pieces in `notation`, then `answer` as the final answer."""
    lines = []
    if notation == "table" and chosen:
        kinds = {p[0] for p in chosen}
        head = _TABLE_HEADERS.get(chosen[0][0])
        if head:
            lines.append(head)
        elif kinds & {"hop", "edge", "dist"}:
            lines.append("| Pair / node | Distance |\n|---|---|" if kinds & {"dist", "hop"} or not weighted
                         else "| Pair | Weight |\n|---|---|")
    for p in chosen:
        if p[0] == "edge" and p[3] is not None and weighted and notation in ("prose", "to", "bullet"):
            lines.append(render_piece(p, "dash", weighted))  # these notations state no weight
            continue
        if notation == "table" and p[0] in ("set", "tour", "color", "gedge", "ghost"):
            lines.append("")  # a table ends; these are written as text
            lines.append(render_piece(p, "dash", weighted))
            continue
        lines.append(render_piece(p, notation, weighted))
    body = "\n".join(lines)
    final = json.dumps(answer, ensure_ascii=False) if answer is not None else ""
    return f"<root><reasoning>\n{body}\n</reasoning><final_answer>{final}</final_answer></root>"


def gold_candidate(inst, ev: Evidence) -> Candidate | None:
    crit = critical_facts(ev, inst.gold.answer, inst.gold.value)
    return crit.candidates[0] if crit.candidates else None


def as_facts(piece: tuple, src: str | None = None) -> list[dict[str, Any]]:
    """The structured facts (judge.schema.Fact) a piece states, as an LLM judge would return them."""
    kind = piece[0]
    if kind == "hop":
        _, s, a, b, _before, run, w = piece
        # past the first hop the text states running distances, not the weight: the edge is stated bare
        return [{"type": "edge", "nodes": [a, b], "value": w if a == s else None},
                {"type": "distance", "nodes": [s, b], "value": run}]
    if kind == "edge":
        return [{"type": "edge", "nodes": [piece[1], piece[2]], "value": piece[3]}]
    if kind == "gedge":
        return [{"type": "edge", "nodes": [piece[2], piece[3]], "graph": piece[1]}]
    if kind == "dist":
        return [{"type": "distance", "nodes": [piece[1], piece[2]], "value": piece[3]}]
    if kind == "tour":
        return [{"type": "path", "nodes": piece[1], "value": piece[2]}]
    if kind == "set":
        return [{"type": "set", "nodes": piece[2], "value": piece[1].replace(" ", "_")}]
    if kind == "map":
        return [{"type": "mapping", "nodes": [piece[1], piece[2]]}]
    if kind == "assign":
        return [{"type": "assign", "nodes": [piece[1]], "value": piece[2]}]
    if kind == "color":
        return [{"type": "color", "nodes": [piece[1]], "value": piece[2]}]
    if kind == "ghost":
        return [{"type": "edge", "nodes": [piece[1], piece[2]]}]
    raise ValueError(kind)
