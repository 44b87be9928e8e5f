"""Generated responses with known facts, and judges that read them perfectly but label them as told (no
tests here): the response generator of the grounded-judge property battery (tests/test_judge_grounded.py).

`facts_of(inst)` picks, from the instance's gold answer and evidence, the facts a correct solution states
(`critical`: the optimum's path/tour/cycle with its total, its set, mapping pairs or colouring), true
facts that no solution needs (`extra`: drawn colours and degrees of the asked graph), and false facts (`false`: an edge that is not drawn, a wrong weight,
a wrong degree). `render(fact, k)` writes a fact in the k-th of several notations (arrows, commas, "to",
tuples, table rows, JSON, prose). `response(lines, answer)` wraps reasoning lines and a final answer in
the benchmark's envelope.

`judge_steps(entries, hostile)` is what a judge returns for a response whose facts are `entries`
((quote, fact, truth, critical) tuples): `hostile` marks every step correct and leading to the answer,
copies each step in case/spacing variants, and adds invented claims (quotes that are not in the response,
real quotes carrying facts they do not state, and quote-less steps); the honest judge labels each step by
its truth and by whether it is critical.
"""

from __future__ import annotations

import json
import random
from typing import Any

from test_judge_helpers import evidence_of

Fact = dict[str, Any]


def _n(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


def fact(type_: str, nodes: list[str | None], value: Any = None, graph: int | None = None) -> Fact:
    return {"type": type_, "graph": graph, "nodes": list(nodes), "value": value}


# ------------------------------------------------------------------------------------------------ facts


def facts_of(inst: Any, seed: int = 0) -> dict[str, list[Fact]]:
    ev = evidence_of(inst)
    rng = random.Random(f"{inst.instance_id}:{seed}")
    gold, task, weighted = inst.gold.answer, inst.task, ev.facts.weighted
    paired = len(ev.facts.graphs) > 1
    critical: list[Fact] = []
    path = gold.get("Path") or gold.get("Tour") or gold.get("Cycle")
    if path and len(path) >= 2:
        total = gold.get("Distance", gold.get("Length", gold.get("Diameter")))
        critical.append(fact("path", [str(p) for p in path], None if total is None else float(total)))
        if task == "DIAM":
            critical.append(fact("distance", [str(path[0]), str(path[-1])], float(total)))
    for key, label in (("Clique", "clique"), ("IndependentSet", "independent_set"), ("Cover", "vertex_cover"),
                       ("CommonNeighbors", "common_neighbors")):
        if gold.get(key):
            critical.append(fact("set", [str(n) for n in gold[key]], label))
    if isinstance(gold.get("Mapping"), dict):
        critical += [fact("mapping", [str(a), None if x is None else str(x)]) for a, x in sorted(gold["Mapping"].items())]
    if isinstance(gold.get("Coloring"), dict):
        critical += [fact("assign", [str(n)], str(c)) for n, c in sorted(gold["Coloring"].items())]

    extra: list[Fact] = []
    false: list[Fact] = []
    for gi, lg in enumerate(ev.facts.graphs):
        graph = gi + 1 if paired else None
        asked, drawn = lg.asked, lg.graph
        nodes = sorted(asked.nodes)
        edges = sorted(tuple(sorted(e)) for e in asked.edges())
        # true facts no solution needs: drawn colours and degrees. (Edges, non-adjacencies and neighbour
        # lists are not here: under VGR v3 an edge can be a critical fact of some optimum, e.g. of a COL
        # lower-bound clique; the v3 battery's generator (`critical` / `noncritical` pieces) covers those.)
        for n in rng.sample(nodes, min(3, len(nodes))):
            extra.append(fact("degree", [n], float(asked.degree(n)), graph))
            extra.append(fact("color", [n], lg.drawn_color.get(n, "sky"), graph))
        apart = [(u, v) for i, u in enumerate(nodes) for v in nodes[i + 1:]
                 if not asked.has_edge(u, v) and not drawn.has_edge(u, v)]
        if apart:
            u, v = rng.choice(apart)
            false.append(fact("edge", [u, v], None, graph))  # an edge that is not there
        if weighted and edges:
            u, v = edges[0]
            false.append(fact("edge", [u, v], float(asked.edges[u, v]["weight"]) + 7, graph))
        if nodes:
            n = nodes[-1]
            bad = max(asked.degree(n), drawn.degree(n) if n in drawn else 0) + 1
            false.append(fact("degree", [n], float(bad), graph))
    return {"critical": critical, "extra": extra, "false": false}


# ------------------------------------------------------------------------------------------------ notations


def render(f: Fact, k: int = 0) -> str:
    """Fact `f` in notation k (any k: notations repeat cyclically)."""
    t, ns, v = f["type"], f["nodes"], f["value"]
    if t == "edge":
        u, w = ns
        if v is None:
            forms = [f"{u}--{w}", f"{u} is connected to {w}", f"edge ({u}, {w})", f"| {u}–{w} |", f"{w} - {u}",
                     f"there is a line between {u} and {w}", json.dumps({"edge": [u, w]}), f"{u} and {w} are adjacent"]
        else:
            x = _n(v)
            forms = [f"{u}--{w}, weight {x}", f"{u} is connected to {w} (weight {x})", f"edge ({u}, {w}) = {x}",
                     f"| {u}–{w} | {x} |", f"{w} - {u}: {x}", f"the line between {u} and {w} is labelled {x}",
                     json.dumps({"edge": [u, w], "weight": v}), f"{u} and {w} are adjacent ({x} km)"]
    elif t == "path":
        tot = "" if v is None else _n(v)
        forms = [" -> ".join(ns) + (f", total {tot}" if tot else ""),
                 "Path: " + ", ".join(ns) + (f" (length {tot})" if tot else ""),
                 " to ".join(ns) + (f" = {tot}" if tot else ""),
                 " → ".join(ns) + (f" [{tot}]" if tot else ""),
                 "route " + "->".join(ns) + (f" totals {tot}" if tot else ""),
                 json.dumps({"path": ns, "total": v}),
                 "go " + " - ".join(ns) + (f": {tot} in all" if tot else ""),
                 "(" + ", ".join(ns) + ")" + (f" with length {tot}" if tot else "")]
    elif t == "set":
        word = str(v).replace("_", " ")
        forms = ["{" + ", ".join(ns) + "} is a " + word, f"{word}: " + ", ".join(ns),
                 ", ".join(ns[:-1]) + (" and " if len(ns) > 1 else "") + ns[-1] + f" form the {word}",
                 f"{word} = " + json.dumps(ns), f"- {word}: " + " / ".join(ns)]
    elif t == "mapping":
        a, x = ns
        x = "nothing (deleted)" if x is None else x
        forms = [f"{a} -> {x}", f"{a} ↔ {x}", f"{a} = {x}", f"{a} maps to {x}", f"pair ({a}, {x}) of the mapping", f"| {a} | {x} |",
                 json.dumps({a: x}), f"{a} corresponds to {x}"]
    elif t == "assign":
        n = ns[0]
        forms = [f"{n}: colour {v}", f"colour({n}) = {v}", f"{n} gets colour {v}", f"| {n} | {v} |",
                 json.dumps({n: v})]
    elif t == "color":
        n = ns[0]
        forms = [f"{n} is {v}", f"{n} ({v})", f"node {n} is drawn in {v}"]
    elif t == "degree":
        n, x = ns[0], _n(v)
        forms = [f"deg({n}) = {x}", f"{n} has degree {x}", f"{n} has {x} neighbours"]
    elif t == "non_edge":
        u, w = ns
        forms = [f"{u} and {w} are not adjacent", f"no edge between {u} and {w}", f"{u} is not connected to {w}"]
    elif t == "neighbors":
        forms = [f"neighbours of {ns[0]}: " + ", ".join(ns[1:]), f"{ns[0]} is connected to " + ", ".join(ns[1:]),
                 f"N({ns[0]}) = " + "{" + ", ".join(ns[1:]) + "}"]
    elif t == "distance":
        u, w = ns
        forms = [f"d({u},{w}) = {_n(v)}", f"the distance from {u} to {w} is {_n(v)}", f"{u} and {w} are {_n(v)} hops apart"]
    else:
        raise ValueError(t)
    text = forms[k % len(forms)]
    if f.get("graph") in (1, 2):
        text = f"In Graph {f['graph']}, {text}"
    return text


def response(lines: list[str], answer: Any) -> str:
    return ("<root><reasoning>" + "\n".join(lines) + "</reasoning><final_answer>"
            + json.dumps(answer, ensure_ascii=False) + "</final_answer></root>")


Entry = tuple[str, Fact, bool, bool]  # (quote, fact, truth, critical)


def build(inst: Any, answer: Any, parts: dict[str, int | list[int]]) -> tuple[str, list[Entry]]:
    """A response stating the chosen facts: `parts` maps critical / extra / false to the notations to use
    (an int k: notation k; a list: the fact once in each notation)."""
    facts = facts_of(inst)
    lines: list[str] = []
    entries: list[Entry] = []
    for name in ("critical", "extra", "false"):
        if name not in parts:
            continue
        ks = parts[name] if isinstance(parts[name], list) else [parts[name]]
        for i, f in enumerate(facts[name]):
            for k in ks:
                q = render(f, k + i)
                lines.append(q + ".")
                entries.append((q, f, name != "false", name == "critical"))
    return response(lines, answer), entries


# ------------------------------------------------------------------------------------------------ judges


def judge_steps(entries: list[Entry], hostile: bool, first_line: str = "") -> list[dict[str, Any]]:
    steps = []
    for quote, f, truth, critical in entries:
        step = {"quote": quote, "fact": f, "kind": "inference", "leads_to_answer": True if hostile else critical,
                "correct": True if hostile else truth,
                "error_type": "none" if hostile or truth else "perception"}
        steps.append(step)
        if hostile:  # the same step again, as spacing and case variants of its quote
            steps.append({**step, "quote": quote.upper()})
            steps.append({**step, "quote": "  " + quote.replace(" ", "  ") + " "})
    if hostile:
        crit = [f for _, f, _, c in entries if c] or [fact("edge", ["AAA", "BBB"])]
        for f in crit[:3]:
            inflated = {"kind": "inference", "leads_to_answer": True, "correct": True, "error_type": "none"}
            steps.append({**inflated, "quote": "the judge's own summary of the solution", "fact": f})
            steps.append({**inflated, "quote": first_line, "fact": f})  # a real quote, another fact
            steps.append({**inflated, "quote": "", "fact": f})
        steps.append({"quote": "I verified every step; the reasoning is flawless", "kind": "inference",
                      "fact": fact("none", []), "leads_to_answer": True, "correct": True, "error_type": "none"})
    return steps
