"""Response generator for the VGR v4 properties (no tests here). Separate from the reader: it knows the graph
and the gold optimum (networkx), never the reader's patterns.

`derivation(inst, ev)` is the complete derivation of the gold optimum as objects; `render(objs, notation)`
writes them in one of `NOTATIONS`; `attacks(inst, ev)` gives the non-derivations the properties bound (edge
transcriptions, pooled small sets, all-pairs mappings, other-question solutions); `neutral_additions` gives
true perception facts, true negatives and rejected candidates; `unsupported(inst, ev)` prose the reader is not
built to read.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import networkx as nx

from gie.evidence import Evidence
from judge.critical import critical_facts, odd_cycle

NOTATIONS = ("arrow", "numbered", "nested", "latex", "latex_text", "json", "table", "csv", "prose", "german",
             "chinese", "french")

Obj = tuple  # ("walk", nodes, runs|None, total|None) ("neigh", head, nodes) ("set", prop, nodes)
# ("assign", {n: c}) ("map", [(a, x)]) ("dist", a, b, d) ("closed", nodes, total|None)


def _n(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def _w(g: nx.Graph, a: str, b: str, weighted: bool) -> float:
    return float(g.edges[a, b].get("weight", 1)) if weighted else 1.0


def _runs(g: nx.Graph, p: list[str], weighted: bool) -> list[float]:
    out, run = [0.0], 0.0
    for a, b in itertools.pairwise(p):
        run += _w(g, a, b, weighted)
        out.append(run)
    return out


def derivation(inst, ev: Evidence) -> list[Obj]:
    """The complete derivation of the gold optimum (empty where the instance has no critical facts)."""
    task, gold, value = inst.task, dict(inst.gold.answer), inst.gold.value
    g = ev.facts.graphs[0].asked
    wt = ev.facts.weighted
    q = ev.facts.query
    if task in ("SD", "DIAM") and gold.get("Path") and len(gold["Path"]) > 1:
        p = [str(x) for x in gold["Path"]]
        return [("walk", p, _runs(g, p, wt), _runs(g, p, wt)[-1])]
    if task == "CN":
        s, t = str(q["source"]), str(q["target"])
        common = sorted(set(g[s]) & set(g[t]))
        out: list[Obj] = [("neigh", s, sorted(g[s])), ("neigh", t, sorted(g[t]))]
        if common:
            out.append(("set", "common", common))
        return out
    if task == "TSP" and gold.get("Tour") and len(gold["Tour"]) > 2:
        p = [str(x) for x in gold["Tour"]]
        p = p + [p[0]] if p[0] != p[-1] else p
        return [("closed", p, _runs(g, p, wt)[-1])]
    if task == "CYC" and gold.get("Cycle") and len(gold["Cycle"]) > 2:
        p = [str(x) for x in gold["Cycle"]]
        return [("closed", p + [p[0]] if p[0] != p[-1] else p, None)]
    if task in ("MCP", "MIS", "MVC"):
        key, prop = {"MCP": ("Clique", "clique"), "MIS": ("IndependentSet", "independent set"),
                     "MVC": ("Cover", "vertex cover")}[task]
        members = sorted(str(x) for x in gold.get(key) or [])
        return [("set", prop, members)] if members else []
    if task == "COL" and isinstance(gold.get("Coloring"), dict):
        col = {str(n): int(c) for n, c in sorted(gold["Coloring"].items()) if str(n) in g}
        out = [("assign", col)]
        chi = int(value)
        wit = next((sorted(c) for c in nx.find_cliques(g) if len(c) >= chi), None)
        if wit and chi >= 2:
            out.append(("set", "clique", wit[:chi]))
        elif chi == 3:
            cyc = odd_cycle(g)
            if cyc:
                out.append(("closed", cyc + [cyc[0]], None))
        return out
    if task in ("GED", "MCS") and isinstance(gold.get("Mapping"), dict):
        pairs = [(str(a), str(x)) for a, x in sorted(gold["Mapping"].items()) if x is not None]
        return [("map", pairs)] if pairs else []
    return []


# ------------------------------------------------------------------------------------------ render


def _walk(nodes: list[str], runs: list[float] | None, total: float | None, n: str, closed: bool = False) -> list[str]:
    """One walk in notation n: running totals beside the nodes where given, else a total."""
    arrow = {"latex": r" \to ", "latex_text": r" \rightarrow ", "chinese": " → "}.get(n, " -> ")
    if n in ("arrow", "latex", "latex_text", "chinese"):
        parts = [f"{x} ({_n(runs[i])})" if runs and i else x for i, x in enumerate(nodes)]
        body = arrow.join(parts)
        tot = f", total {_n(total)}" if total is not None and not runs else ""
        if n == "latex":
            return [f"${body}${tot}"]
        if n == "latex_text":
            return [rf"$\text{{{'Tour' if closed else 'Path'}: }} {body}${tot}"]
        if n == "chinese":
            return [("回路：" if closed else "路径：") + body + (f"，总距离 {_n(total)}" if total is not None and not runs
                                                             else "")]
        return [("Tour: " if closed else "Path: ") + body + tot]
    if n == "numbered":
        if runs:
            return [f"{i}. {a} -> {b} (running total {_n(runs[i])})" for i, (a, b) in
                    enumerate(itertools.pairwise(nodes), start=1)]
        return [f"1. {'Cycle' if closed else 'Path'}: {' -> '.join(nodes)}" + (f", total {_n(total)}" if total is not None
                                                                             else "")]
    if n == "nested":
        items = [f"  - {x} ({_n(runs[i])})" if runs and i else f"  - {x}" for i, x in enumerate(nodes)]
        out = [f"- {'Tour' if closed else 'Path'}:", *items]
        return out + ([f"- Total: {_n(total)}"] if total is not None and not runs else [])
    if n in ("table", "csv"):
        run = 0.0
        rows = []
        for i, (a, b) in enumerate(itertools.pairwise(nodes), start=1):
            leg = (runs[i] - runs[i - 1]) if runs else None
            run = runs[i] if runs else run
            rows.append((a, b, _n(leg) if leg is not None else "", _n(run) if runs else ""))
        if not runs:
            if n == "table":
                return ["| Order | Node |", "|---|---|", *[f"| {i} | {x} |" for i, x in enumerate(nodes, 1)],
                        "", f"{'Cycle' if closed else 'Path'} above" + (f", total {_n(total)}" if total is not None
                                                                           else "")] if False else \
                    [f"| {'Cycle' if closed else 'Path'} | Total |", "|---|---|",
                     f"| {' → '.join(nodes)} | {_n(total) if total is not None else ''} |"]
            return ["route,total", f"{' → '.join(nodes)},{_n(total) if total is not None else ''}"]
        if n == "table":
            return ["| From | To | Leg | Running total |", "|---|---|---|---|", *[f"| {a} | {b} | {w} | {r} |" for a, b, w, r in rows]]
        return ["from,to,leg,running", *[f"{a},{b},{w},{r}" for a, b, w, r in rows]]
    if n == "json":
        d: dict[str, Any] = {"tour" if closed else "path": nodes}
        if runs:
            d["distance_from_start"] = {x: runs[i] for i, x in enumerate(nodes) if i}
        if total is not None:
            d["total"] = total
        return [json.dumps(d)]
    if n == "prose":
        s = f"Start at {nodes[0]}"
        for i, x in enumerate(nodes[1:], start=1):
            s += f", then go to {x}" + (f" (cost so far {_n(runs[i])})" if runs else "")
        return [s + (f", total {_n(total)}." if total is not None and not runs else ".")]
    if n == "german":
        s = f"{'Die Rundreise' if closed else 'Der Weg'} beginnt bei {nodes[0]}"
        for i, x in enumerate(nodes[1:], start=1):
            s += f", dann nach {x}" + (f" (bisher {_n(runs[i])})" if runs else "")
        return [s + (f", insgesamt {_n(total)}." if total is not None and not runs else ".")]
    if n == "french":
        s = f"{'La tournée' if closed else 'Le chemin'} part de {nodes[0]}"
        for i, x in enumerate(nodes[1:], start=1):
            s += f", puis va à {x}" + (f" (cumul {_n(runs[i])})" if runs else "")
        return [s + (f", total {_n(total)}." if total is not None and not runs else ".")]
    raise ValueError(n)


_PROP = {
    "clique": {"german": "eine Clique", "french": "une clique", "chinese": "团"},
    "independent set": {"german": "eine unabhängige Menge", "french": "un ensemble indépendant",
                        "chinese": "独立集"},
    "vertex cover": {"german": "eine Knotenüberdeckung", "french": "une couverture de sommets",
                     "chinese": "顶点覆盖"},
    "common": {"german": "gemeinsame Nachbarn", "french": "voisins communs", "chinese": "共同邻居"},
}


def _set(prop: str, nodes: list[str], n: str) -> list[str]:
    ls = ", ".join(nodes)
    word = "common neighbours" if prop == "common" else prop
    if n in ("arrow", "numbered"):
        return [f"{'1. ' if n == 'numbered' else ''}{{{ls}}} is a {word}" if prop != "common"
                else f"{'1. ' if n == 'numbered' else ''}Common neighbours: {{{ls}}}"]
    if n == "nested":
        return [f"- The {word}:", *[f"  - {x}" for x in nodes]]
    if n == "latex":
        return [rf"$\{{{ls}\}}$ is a {word}"]
    if n == "latex_text":
        return [rf"$\text{{{word}}} = \{{{ls}\}}$"]
    if n == "json":
        return [json.dumps({word.replace(" ", "_"): nodes})]
    if n == "table":
        return [f"| {word.title()} | Size |", "|---|---|", f"| {ls} | {len(nodes)} |"]
    if n == "csv":
        return [f"{word},size", f"\"{' '.join(nodes)}\",{len(nodes)}"]
    if n == "prose":
        return [f"The nodes {ls} form a {word}." if prop != "common" else f"The common neighbours are {ls}."]
    if n == "german":
        return [f"{ls} bilden {_PROP[prop]['german']}." if prop != "common"
                else f"Die gemeinsamen Nachbarn sind {ls}."]
    if n == "french":
        return [f"{ls} forment {_PROP[prop]['french']}." if prop != "common" else f"Les voisins communs sont {ls}."]
    if n == "chinese":
        return [f"{'、'.join(nodes)} 构成{_PROP[prop]['chinese']}。" if prop != "common"
                else f"共同邻居是 {'、'.join(nodes)}。"]
    raise ValueError(n)


def _neigh(head: str, nodes: list[str], n: str) -> list[str]:
    ls = ", ".join(nodes)
    return {
        "arrow": [f"N({head}) = {{{ls}}}"], "numbered": [f"1. Neighbours of {head}: {ls}"],
        "nested": [f"- Neighbours of {head}:", *[f"  - {x}" for x in nodes]],
        "latex": [rf"$N({head}) = \{{{ls}\}}$"], "latex_text": [rf"$\text{{neighbours of }} {head} = \{{{ls}\}}$"],
        "json": [json.dumps({f"neighbors of {head}": nodes})],
        "table": ["| Node | Neighbours |", "|---|---|", f"| {head} | {ls} |"],
        "csv": ["node,neighbours", f"{head},\"{' '.join(nodes)}\""],
        "prose": [f"The neighbours of {head} are {ls}."], "german": [f"Die Nachbarn von {head} sind {ls}."],
        "french": [f"Les voisins de {head} sont {ls}."], "chinese": [f"{head} 的邻居是 {'、'.join(nodes)}。"],
    }[n]


def _assign(col: dict[str, int], n: str) -> list[str]:
    items = sorted(col.items())
    if n == "json":
        return [json.dumps({"coloring": col})]
    if n == "table":
        return ["| Node | Colour |", "|---|---|", *[f"| {a} | {c} |" for a, c in items]]
    if n == "csv":
        return ["node,colour", *[f"{a},{c}" for a, c in items]]
    fmt = {"arrow": "{a}: color {c}", "numbered": "{i}. {a} -> colour {c}", "nested": "- {a}: colour {c}",
           "latex": "$c({a}) = {c}$", "latex_text": r"$\text{{colour of }} {a} = {c}$",
           "prose": "{a} gets colour {c}.", "german": "{a} bekommt Farbe {c}.", "french": "{a} reçoit la couleur {c}.",
           "chinese": "{a} 的颜色是 {c}。"}[n]
    return [fmt.format(a=a, c=c, i=i) for i, (a, c) in enumerate(items, 1)]


def _map(pairs: list[tuple[str, str]], n: str) -> list[str]:
    if n == "json":
        return [json.dumps({"mapping": dict(pairs)})]
    if n == "table":
        return ["| Graph 1 | Graph 2 |", "|---|---|", *[f"| {a} | {x} |" for a, x in pairs]]
    if n == "csv":
        return ["graph 1,graph 2", *[f"{a},{x}" for a, x in pairs]]
    fmt = {"arrow": "{a} -> {x}", "numbered": "{i}. {a} ↔ {x}", "nested": "- {a} maps to {x}",
           "latex": r"${a} \mapsto {x}$", "latex_text": r"$\text{{{a}}} \to \text{{{x}}}$",
           "prose": "{a} corresponds to {x}.", "german": "{a} entspricht {x}.", "french": "{a} correspond à {x}.",
           "chinese": "{a} 对应 {x}。"}[n]
    return [fmt.format(a=a, x=x, i=i) for i, (a, x) in enumerate(pairs, 1)]


def _dist(a: str, b: str, d: float, n: str) -> list[str]:
    return {
        "arrow": [f"d({a}, {b}) = {_n(d)}"], "numbered": [f"1. d({a}, {b}) = {_n(d)}"],
        "nested": [f"- distance {a}–{b}: {_n(d)}"], "latex": [f"$d({a},{b}) = {_n(d)}$"],
        "latex_text": [rf"$\text{{dist}}({a}, {b}) = {_n(d)}$"], "json": [json.dumps({f"d({a},{b})": d})],
        "table": ["| Pair | Distance |", "|---|---|", f"| {a}–{b} | {_n(d)} |"],
        "csv": ["pair,distance", f"{a}–{b},{_n(d)}"],
        "prose": [f"The distance from {a} to {b} is {_n(d)}."], "german": [f"Der Abstand von {a} nach {b} ist {_n(d)}."],
        "french": [f"La distance de {a} à {b} est {_n(d)}."], "chinese": [f"{a} 到 {b} 的距离是 {_n(d)}。"],
    }[n]


def render_objs(objs: list[Obj], n: str) -> list[str]:
    lines: list[str] = []
    for o in objs:
        if lines:
            lines.append("")
        if o[0] == "walk":
            lines += _walk(o[1], o[2], o[3], n)
        elif o[0] == "closed":
            lines += _walk(o[1], None, o[2], n, closed=True)
        elif o[0] == "neigh":
            lines += _neigh(o[1], o[2], n)
        elif o[0] == "set":
            lines += _set(o[1], o[2], n)
        elif o[0] == "assign":
            lines += _assign(o[1], n)
        elif o[0] == "map":
            lines += _map(o[1], n)
        elif o[0] == "dist":
            lines += _dist(o[1], o[2], o[3], n)
        elif o[0] == "text":
            lines.append(o[1])
    return lines


def envelope(lines: list[str], answer: dict[str, Any] | None) -> str:
    final = json.dumps(answer, ensure_ascii=False) if answer is not None else ""
    return "<root><reasoning>\n" + "\n".join(lines) + f"\n</reasoning><final_answer>{final}</final_answer></root>"


def judged(inst, ev: Evidence, lines: list[str], answer: dict[str, Any] | None, final_match: bool):
    """The rule judge's verdict on `lines` as a response's reasoning with `answer` as its final answer,
    against the instance's gold (`final_match`: the exact verifier's verdict on `answer`)."""
    from judge.rule_scorer import score_response

    return score_response(ev, envelope(lines, answer), final_match=final_match, gold=inst.gold.answer,
                          gold_value=inst.gold.value)


# ------------------------------------------------------------------------------------------ attacks


def transcription(ev: Evidence, style: str = "dash") -> list[str]:
    """Every drawn edge, as a model often writes it before reasoning."""
    out = []
    for lg in ev.facts.graphs:
        for u, v, d in sorted(lg.graph.edges(data=True)):
            w = d.get("weight")
            ws = f", weight {w}" if w is not None and ev.facts.weighted else ""
            if style == "picture":
                out.append(f"The picture shows the link between {u} and {v}{ws}.")
            else:
                out.append(f"{u}--{v}{ws}")
    return out


def pooled_sets(inst, ev: Evidence) -> list[str]:
    """Many small true sets whose atoms cover the optimum's (sets below the optimum's size; a set of the
    optimum's size with the property would be a solution)."""
    g = ev.facts.graphs[0].asked
    value = int(inst.gold.value) if inst.gold.value is not None else 0
    out = []
    if inst.task in ("MCP", "COL"):
        for c in nx.enumerate_all_cliques(g):
            if 2 <= len(c) < max(value, 3 if inst.task == "COL" else 0) or (inst.task == "MCP" and 2 <= len(c) < value):
                out.append(f"{{{', '.join(sorted(c))}}} form a clique")
    elif inst.task == "MIS":
        for a, b in itertools.combinations(sorted(g), 2):
            if not g.has_edge(a, b) and value > 2:
                out.append(f"{{{a}, {b}}} is an independent set")
    elif inst.task == "MVC":
        out.append(f"All nodes {', '.join(sorted(g))} form a vertex cover")
    return out[:300]


def all_pairs(ev: Evidence) -> list[str]:
    if len(ev.facts.graphs) < 2:
        return []
    g1, g2 = ev.facts.graphs[0].asked, ev.facts.graphs[1].asked
    return [f"{a} -> {x}" for a in sorted(g1) for x in sorted(g2)]


def other_question(inst, ev: Evidence) -> list[Obj]:
    """A correct, complete solution of a neighbouring question (another target, pair, city set or graph)."""
    task = inst.task
    g = ev.facts.graphs[0].asked
    wt = ev.facts.weighted
    q = ev.facts.query
    value = inst.gold.value
    if task == "SD":
        s, t = str(q["source"]), str(q["target"])
        for x in sorted(g, key=lambda n: (-nx.dijkstra_path_length(g, s, n) if nx.has_path(g, s, n) else 0, n)):
            if x not in (s, t) and nx.has_path(g, s, x):
                p = nx.dijkstra_path(g, s, x)
                if t not in p:
                    return [("walk", p, _runs(g, p, wt), None)]
        return []
    if task == "CN":
        s, t = str(q["source"]), str(q["target"])
        for a, b in itertools.combinations(sorted(g), 2):
            if not {a, b} & {s, t}:
                common = sorted(set(g[a]) & set(g[b]))
                if common:
                    return [("text", f"Common neighbours of {a} and {b}: {', '.join(common)}"),
                            ("neigh", a, sorted(g[a])), ("neigh", b, sorted(g[b]))]
        return []
    if task == "DIAM":
        dist = dict(nx.all_pairs_shortest_path_length(g))
        for a, b in itertools.combinations(sorted(g), 2):
            if b in dist[a] and 1 < dist[a][b] < (value or 0):
                p = nx.shortest_path(g, a, b)
                return [("walk", p, _runs(g, p, wt), float(dist[a][b]))]
        return []
    if task == "TSP" and 3 < g.number_of_nodes() <= 9:
        nodes = sorted(g)
        drop = nodes[-1]
        rest = nodes[:-1]
        best = None
        for perm in itertools.permutations(rest[1:]):
            p = [rest[0], *perm, rest[0]]
            if all(g.has_edge(a, b) for a, b in itertools.pairwise(p)):
                length = _runs(g, p, wt)[-1]
                if best is None or length < best[0]:
                    best = (length, p)
        _ = drop
        return [("closed", best[1], best[0])] if best else []
    if task == "CYC":
        for c in nx.cycle_basis(g):
            if value is not None and 3 <= len(c) < int(value):
                return [("closed", [*c, c[0]], None)]
        return []
    if task in ("MCP", "MIS", "MVC"):
        key = {"MCP": "Clique", "MIS": "IndependentSet", "MVC": "Cover"}[task]
        members = sorted(str(x) for x in inst.gold.answer.get(key) or [])
        if not members:
            return []
        h = g.copy()
        h.remove_node(members[0])
        prop = {"MCP": "clique", "MIS": "independent set", "MVC": "vertex cover"}[task]
        if task == "MCP":
            best = max(nx.find_cliques(h), key=len, default=[])
        elif task == "MIS":
            best = max(nx.find_cliques(nx.complement(h)), key=len, default=[])
        else:
            mis = max(nx.find_cliques(nx.complement(h)), key=len, default=[])
            best = sorted(set(h) - set(mis))
        if best and value is not None and len(best) != int(value):
            return [("set", prop, sorted(best))]
        return []
    return []


def attack_lines(inst, ev: Evidence) -> dict[str, list[str]]:
    """The non-derivation families, each as reasoning lines (arrow notation for other-question solutions)."""
    return {
        "transcription": transcription(ev),
        "picture": transcription(ev, "picture"),
        "pooled": pooled_sets(inst, ev),
        "all-pairs": all_pairs(ev),
        "other-question": render_objs(other_question(inst, ev), "arrow"),
    }


# ------------------------------------------------------------------------------------------ neutral additions


def neutral_additions(inst, ev: Evidence) -> dict[str, list[str]]:
    """True perception facts, true negatives and rejected candidates: never credit, never error."""
    g = ev.facts.graphs[0].asked
    drawn = ev.facts.graphs[0].graph
    nodes = sorted(g)
    non = [(a, b) for a, b in itertools.combinations(nodes, 2) if not g.has_edge(a, b) and not drawn.has_edge(a, b)]
    paired = len(ev.facts.graphs) > 1
    facts = [] if paired else [f"{u}--{v}" + (f", weight {_n(g.edges[u, v]['weight'])}" if ev.facts.weighted else "")
                               for u, v in sorted(g.edges)[:4]]
    if paired:
        facts = [f"In graph 1, {u}--{v}." for u, v in sorted(ev.facts.graphs[0].asked.edges)[:3]]
    negs = [f"There is no edge {a}–{b}." for a, b in non[:3]] if not paired else \
        [f"In graph 1 there is no bond between {a} and {b}." for a, b in non[:2]]
    rejected: list[str] = []
    if inst.task in ("MCP", "MIS", "MVC", "COL"):
        prop = {"MCP": "clique", "MIS": "independent set", "MVC": "vertex cover", "COL": "clique"}[inst.task]
        rejected.append(f"Candidate {{{', '.join(nodes[:3])}}}: is it a {prop}? Rejected, it is invalid.")
    if inst.task in ("SD", "DIAM", "CYC", "TSP", "CN") and len(nodes) >= 3:
        rejected.append(f"Try {nodes[0]} -> {nodes[1]} -> {nodes[2]}: invalid, rejected.")
    if inst.task == "COL" and len(nodes) >= 2:
        rejected.append(f"Attempt: {nodes[0]}: color 1, {nodes[1]}: color 1 -> conflict, backtrack.")
    if paired:
        a, x = sorted(ev.facts.graphs[0].asked)[0], sorted(ev.facts.graphs[1].asked)[0]
        rejected.append(f"Mapping {a} -> {x} is rejected (conflict).")
    return {"facts": facts, "negatives": negs, "rejected": rejected}


def unsupported(inst, ev: Evidence) -> list[str]:
    """Prose in a language and construction the reader does not read (Italian narrative)."""
    nodes = sorted(ev.facts.graphs[0].asked)[:4]
    return [f"Ho osservato con attenzione i nodi {', '.join(nodes)} nell'immagine.",
            "Dopo una lunga riflessione sulla struttura del disegno, la soluzione migliore mi sembra chiara."]


def has_critical(inst, ev: Evidence) -> bool:
    crit = critical_facts(ev, inst.gold.answer, inst.gold.value)
    return any(c.size for c in crit.candidates)
