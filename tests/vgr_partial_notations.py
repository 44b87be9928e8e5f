"""Renderers for the partial-reading properties of VGR v4 (no tests here): the derivation objects of
`vgr4_responses.derivation` written in notations and languages that neither `vgr4_responses.NOTATIONS` nor the
judge card (`judge.card_notation`, `judge.card_heldout`) writes, some of which the reader reads only in part.

`render(objs, notation)` for `notation` in `NOTATIONS`; `remarks(inst, ev, rng)` gives narrative lines a model
writes around its reasoning (degrees, places in the picture, impressions) that state no critical fact.
"""

from __future__ import annotations

import itertools
import json
import random
from typing import Any

from vgr4_responses import Obj, _n

from gie.evidence import Evidence

NOTATIONS = ("portuguese", "dutch", "xml", "python", "toml", "brackets")

_PROSE: dict[str, dict[str, Any]] = {
    "portuguese": dict(path="O caminho", tour="O circuito", start="começa em", then="depois vai para",
                       run="acumulado", total="total", form="formam", common="Os vizinhos comuns são",
                       neigh="Os vizinhos de {h} são", color="{a} recebe a cor {v}.", map="{a} corresponde a {v}.",
                       dist="A distância de {a} a {b} é {d}.",
                       prop={"clique": "um clique", "independent set": "um conjunto independente",
                             "vertex cover": "uma cobertura de vértices"}),
    "dutch": dict(path="Het pad", tour="De ronde", start="begint bij", then="dan naar", run="tot nu toe",
                  total="totaal", form="vormen", common="De gemeenschappelijke buren zijn",
                  neigh="De buren van {h} zijn", color="{a} krijgt kleur {v}.", map="{a} hoort bij {v}.",
                  dist="De afstand van {a} tot {b} is {d}.",
                  prop={"clique": "een kliek", "independent set": "een onafhankelijke verzameling",
                        "vertex cover": "een knoopbedekking"}),
}


def _q(xs: list[str]) -> str:
    return ", ".join(f'"{x}"' for x in xs)


def _walk(nodes: list[str], runs: list[float] | None, total: float | None, n: str, closed: bool) -> list[str]:
    kind = "tour" if closed else "path"
    if n in _PROSE:
        t = _PROSE[n]
        s = f"{t['tour'] if closed else t['path']} {t['start']} {nodes[0]}"
        for i, x in enumerate(nodes[1:], 1):
            s += f", {t['then']} {x}" + (f" ({t['run']} {_n(runs[i])})" if runs else "")
        return [s + (f", {t['total']} {_n(total)}." if total is not None and not runs else ".")]
    if n == "xml":
        head = f"<{kind}" + (f' total="{_n(total)}"' if total is not None and not runs else "") + ">"
        stops = [f'  <stop node="{x}"' + (f' cumulative="{_n(runs[i])}"' if runs and i else "") + "/>"
                 for i, x in enumerate(nodes)]
        return [head, *stops, f"</{kind}>"]
    if n == "python":
        out = [f"{kind} = {list(nodes)!r}"]
        if runs:
            out.append("so_far = {" + ", ".join(f"{x!r}: {_n(runs[i])}" for i, x in enumerate(nodes) if i) + "}")
        return out + ([f"total = {_n(total)}"] if total is not None and not runs else [])
    if n == "toml":
        out = [f"[{kind}]", f"nodes = [{_q(nodes)}]"]
        if runs:
            out.append("running = {" + ", ".join(f"{x} = {_n(runs[i])}" for i, x in enumerate(nodes) if i) + "}")
        return out + ([f"total = {_n(total)}"] if total is not None and not runs else [])
    if n == "brackets":
        s = f"[{nodes[0]}]"
        for i, x in enumerate(nodes[1:], 1):
            s += f" --({_n(runs[i] - runs[i - 1])})--> [{x}]" if runs else f" ---> [{x}]"
        end = runs[-1] if runs else total
        return [s + (f"  => {_n(end)}" if end is not None else "")]
    raise ValueError(n)


def _pairs(items: list[tuple[str, Any]], n: str, what: str) -> list[str]:
    """COL's colour assignments (node, class) or GED/MCS's mapping pairs (graph-1 node, graph-2 node)."""
    t = _PROSE.get(n)
    if t:
        return [t[what].format(a=a, v=v) for a, v in items]
    name, tag, (ka, kv), bracket = {"color": ("coloring", "color", ("node", "value"), "[{a}] <- colour {v}"),
                                    "map": ("mapping", "pair", ("g1", "g2"), "[{a}] <=> [{v}]")}[what]
    return {"xml": [f'<{tag} {ka}="{a}" {kv}="{v}"/>' for a, v in items],
            "python": [f"{name} = [" + ", ".join(f"({a!r}, {v!r})" for a, v in items) + "]"],
            "toml": [f"[{name}]", *[f"{a} = {json.dumps(v)}" for a, v in items]],
            "brackets": [bracket.format(a=a, v=v) for a, v in items]}[n]


def _obj(o: Obj, n: str) -> list[str]:
    k = o[0]
    if k in ("walk", "closed"):
        return _walk(o[1], o[2] if k == "walk" else None, o[3] if k == "walk" else o[2], n, k == "closed")
    if k == "text":
        return [o[1]]
    t = _PROSE.get(n)
    if k == "neigh":
        h, xs = o[1], list(o[2])
        if t:
            return [t["neigh"].format(h=h) + " " + ", ".join(xs) + "."]
        return {"xml": [f'<neighbours of="{h}">' + "".join(f"<node>{x}</node>" for x in xs) + "</neighbours>"],
                "python": [f"N[{h!r}] = {sorted(xs)!r}"], "toml": [f"neighbours.{h} = [{_q(xs)}]"],
                "brackets": [f"[{h}] neighbours: " + " ".join(f"[{x}]" for x in xs)]}[n]
    if k == "set":
        prop, xs = o[1], list(o[2])
        if t:
            return [f"{t['common']} {', '.join(xs)}." if prop == "common" else
                    f"{', '.join(xs)} {t['form']} {t['prop'][prop]}."]
        key = prop.replace(" ", "_")
        return {"xml": [f'<set property="{prop}">' + "".join(f"<node>{x}</node>" for x in xs) + "</set>"],
                "python": [f"{key} = {tuple(xs)!r}"], "toml": [f"{key} = [{_q(xs)}]"],
                "brackets": [f"{prop}: " + " ".join(f"[{x}]" for x in xs)]}[n]
    if k in ("assign", "map"):
        return _pairs(sorted(o[1].items()) if k == "assign" else list(o[1]), n, "color" if k == "assign" else "map")
    if k == "dist":
        a, b, d = o[1], o[2], o[3]
        if t:
            return [t["dist"].format(a=a, b=b, d=_n(d))]
        return {"xml": [f'<distance from="{a}" to="{b}">{_n(d)}</distance>'],
                "python": [f"dist[({a!r}, {b!r})] = {_n(d)}"], "toml": [f"distance.{a}.{b} = {_n(d)}"],
                "brackets": [f"[{a}] <-{_n(d)}-> [{b}]"]}[n]
    raise ValueError(k)


def render(objs: list[Obj], n: str) -> list[str]:
    lines: list[str] = []
    for o in objs:
        if lines:
            lines.append("")
        lines += _obj(o, n)
    return lines


def without_totals(objs: list[Obj]) -> list[Obj]:
    """The derivation with its walks' running totals and totals dropped (or, with no walk, its last object
    dropped): a partial derivation that still states an object."""
    out = [(o[0], o[1], None, None) if o[0] == "walk" else (o[0], o[1], None) if o[0] == "closed" else o
           for o in objs]
    return out if out != objs or len(objs) < 2 else objs[:-1]


def remarks(ev: Evidence, rng: random.Random) -> list[str]:
    """Narrative lines about one or two nodes that state no critical fact (a degree, a place, an impression)."""
    g = ev.facts.graphs[0].asked
    nodes = sorted(g)
    x, y = rng.sample(nodes, 2) if len(nodes) >= 2 else (nodes[0], nodes[0])
    return [
        "Let me look at the graph carefully.",
        f"Node {x} has {g.degree(x)} neighbours.",
        f"{x} looks like a hub with degree {g.degree(x)}.",
        f"{y} is located near the top of the image.",
        f"I think {x} and {y} are important here.",
        f"Between {x} and {y}, {x} seems more central.",
        f"There are {g.number_of_nodes()} nodes and {g.number_of_edges()} edges in total.",
        f"{x} appears {rng.randint(2, 4)} times in my notes.",
    ]


# one line per hop of a walk, as a model narrates it: (from, to, leg, running total, hop number) -> text
HOP_PHRASES = {
    "so_far": lambda a, b, w, r, i: f"{'First' if i == 1 else 'Next'}, I go from {a} to {b}, which costs {_n(w)}, "
                                    f"so the distance so far is {_n(r)}.",
    "weight_now": lambda a, b, w, r, i: f"From {a}, the edge to {b} has weight {_n(w)}; the path length is now {_n(r)}.",
    "adds": lambda a, b, w, r, i: f"{a} to {b} adds {_n(w)}, making it {_n(r)}.",
    "via": lambda a, b, w, r, i: f"Moving to {b} via {a} (weight {_n(w)}) gives {_n(r)}.",
    "sum": lambda a, b, w, r, i: f"Then {b}: {_n(r - w)} + {_n(w)} = {_n(r)}.",
    "reach": lambda a, b, w, r, i: f"We reach {b} from {a} at a cost of {_n(w)}, for {_n(r)} in all.",
}


def hop_lines(nodes: list[str], runs: list[float], phrase: str) -> list[str]:
    fn = HOP_PHRASES[phrase]
    return [fn(a, b, runs[i] - runs[i - 1], runs[i], i) for i, (a, b) in enumerate(itertools.pairwise(nodes), 1)]
