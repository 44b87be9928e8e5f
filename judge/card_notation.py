"""The judge card's own renderers: one derivation (a list of claims) written in many notations and languages.

Written for the card alone, apart from the judge's reader (`judge.rule_notation`, `judge.rule_grammar`): the card
must test the reader with notations it was not built from, so nothing here is shared with it. A claim is one
of the small records below; `render(claims, notation)` writes them as a reasoning text a model could have
written. Notations in `STRUCTURED` are ones a judge must read (the issue asks for them read to the same claims
as arrows); `LANGUAGES` are prose in other languages, which a judge may read or honestly refuse (null).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from itertools import pairwise


@dataclass(frozen=True)
class Chain:
    """A path, tour or cycle: its nodes in order (a closed one repeats its first node) and leg weights."""

    nodes: tuple[str, ...]
    legs: tuple[float, ...] | None  # None: unweighted, each hop counts 1
    what: str = "path"  # path | tour | cycle

    @property
    def steps(self) -> list[tuple[str, str, float, float]]:
        """(from, to, leg, running total) per hop."""
        out, run = [], 0.0
        for i, (a, b) in enumerate(pairwise(self.nodes)):
            w = float(self.legs[i]) if self.legs is not None else 1.0
            run += w
            out.append((a, b, w, run))
        return out

    @property
    def total(self) -> float:
        return self.steps[-1][3] if len(self.nodes) > 1 else 0.0


@dataclass(frozen=True)
class Dist:
    a: str
    b: str
    d: float


@dataclass(frozen=True)
class Nbrs:
    node: str
    members: tuple[str, ...]


@dataclass(frozen=True)
class Prop:
    """A set with a property: clique, independent set, vertex cover, or common (neighbours of `pair`)."""

    members: tuple[str, ...]
    prop: str
    pair: tuple[str, str] | None = None


@dataclass(frozen=True)
class Mapping:
    pairs: tuple[tuple[str, str], ...]
    measure: str  # cost | size
    value: float


@dataclass(frozen=True)
class Coloring:
    assign: tuple[tuple[str, int], ...]
    k: int


Claim = Chain | Dist | Nbrs | Prop | Mapping | Coloring

STRUCTURED = ("arrows", "numbered", "bullets", "mdtable", "csv", "json_flat", "json_records", "json_nested",
              "latex", "latex_text", "yaml", "thousands", "prose_en")
LANGUAGES = ("de", "zh", "fr", "es", "fi")
# notations the issue names nowhere (a judge may read them or honestly refuse them, never score them low)
UNSEEN = ("mermaid", "html_table", "sexpr")


def num(x: float, sep: bool = False) -> str:
    x = float(x)
    if x.is_integer():
        return f"{int(x):,}" if sep else str(int(x))
    return f"{x:,}" if sep else str(x)


def _j(x: float) -> int | float:
    return int(x) if float(x).is_integer() else float(x)


# --------------------------------------------------------------------------------------------- languages

@dataclass(frozen=True)
class Lang:
    leg: str  # {a} {b} {w} {t}
    hop: str  # unweighted: {a} {b} {t}
    total: str  # {what} {seq} {total}
    dist: str  # {a} {b} {d}
    nbrs: str  # {n} {list}
    prop: str  # {list} {name}
    common: str  # {s} {t} {list}
    no_common: str  # {s} {t}
    pair: str  # {a} {x}
    measure: dict[str, str]  # cost / size: {v}
    color: str  # {n} {c}
    colors: str  # {k}
    names: dict[str, str]  # property and chain names
    sep: str = ", "
    last: str = " and "


LANGS: dict[str, Lang] = {
    "prose_en": Lang(
        leg="Going from {a} to {b} costs {w}, so reaching {b} costs {t} so far.",
        hop="From {a} we move on to {b}; that is {t} steps so far.",
        total="So the {what} visits {seq} and its length is {total}.",
        dist="The shortest distance between {a} and {b} is {d}.",
        nbrs="The neighbours of {n} are {list}.", prop="{list} form a {name}.",
        common="The common neighbours of {s} and {t} are {list}.", no_common="{s} and {t} have no common neighbour.",
        pair="{a} is matched with {x}.", measure={"cost": "This matching costs {v} edit operations.",
                                                  "size": "The common substructure has {v} atoms."},
        color="{n} gets colour {c}.", colors="So {k} colours are enough.",
        names={"clique": "clique", "independent set": "independent set", "vertex cover": "vertex cover",
               "path": "path", "tour": "tour", "cycle": "cycle"}),
    "de": Lang(
        leg="Von {a} nach {b} kostet es {w}, bis {b} also insgesamt {t}.",
        hop="Von {a} geht es weiter nach {b}; das sind bisher {t} Schritte.",
        total="Der {what} besucht {seq} und hat die Länge {total}.",
        dist="Die kürzeste Entfernung zwischen {a} und {b} beträgt {d}.",
        nbrs="Die Nachbarn von {n} sind {list}.", prop="{list} bilden eine {name}.",
        common="Die gemeinsamen Nachbarn von {s} und {t} sind {list}.",
        no_common="{s} und {t} haben keinen gemeinsamen Nachbarn.",
        pair="{a} wird auf {x} abgebildet.", measure={"cost": "Diese Zuordnung kostet {v} Operationen.",
                                                      "size": "Die gemeinsame Teilstruktur hat {v} Atome."},
        color="{n} erhält Farbe {c}.", colors="Also reichen {k} Farben.",
        names={"clique": "Clique", "independent set": "unabhängige Menge", "vertex cover": "Knotenüberdeckung",
               "path": "Weg", "tour": "Rundreise", "cycle": "Kreis"}, last=" und "),
    "zh": Lang(
        leg="从 {a} 到 {b} 的代价是 {w}，到 {b} 累计为 {t}。",
        hop="从 {a} 走到 {b}，目前共 {t} 步。",
        total="所以这条{what}经过 {seq}，长度为 {total}。",
        dist="{a} 和 {b} 之间的最短距离是 {d}。",
        nbrs="{n} 的邻居是 {list}。", prop="{list} 构成一个{name}。",
        common="{s} 和 {t} 的共同邻居是 {list}。", no_common="{s} 和 {t} 没有共同邻居。",
        pair="{a} 映射到 {x}。", measure={"cost": "这个映射的编辑代价是 {v}。", "size": "公共子结构有 {v} 个原子。"},
        color="{n} 着色为 {c}。", colors="所以 {k} 种颜色就够了。",
        names={"clique": "团", "independent set": "独立集", "vertex cover": "顶点覆盖",
               "path": "路径", "tour": "回路", "cycle": "环"}, sep="、", last="和"),
    "fr": Lang(
        leg="Aller de {a} à {b} coûte {w}, donc atteindre {b} coûte {t} au total.",
        hop="De {a} on passe à {b}, soit {t} étapes jusqu'ici.",
        total="Le {what} passe par {seq} et sa longueur est {total}.",
        dist="La plus courte distance entre {a} et {b} est {d}.",
        nbrs="Les voisins de {n} sont {list}.", prop="{list} forment une {name}.",
        common="Les voisins communs de {s} et {t} sont {list}.", no_common="{s} et {t} n'ont aucun voisin commun.",
        pair="{a} est associé à {x}.", measure={"cost": "Cette correspondance coûte {v} opérations.",
                                                "size": "La sous-structure commune a {v} atomes."},
        color="{n} reçoit la couleur {c}.", colors="Donc {k} couleurs suffisent.",
        names={"clique": "clique", "independent set": "ensemble indépendant", "vertex cover": "couverture de sommets",
               "path": "chemin", "tour": "circuit", "cycle": "cycle"}, last=" et "),
    "es": Lang(
        leg="Ir de {a} a {b} cuesta {w}, así que llegar a {b} cuesta {t} en total.",
        hop="De {a} pasamos a {b}; van {t} pasos.",
        total="El {what} recorre {seq} y su longitud es {total}.",
        dist="La distancia más corta entre {a} y {b} es {d}.",
        nbrs="Los vecinos de {n} son {list}.", prop="{list} forman un {name}.",
        common="Los vecinos comunes de {s} y {t} son {list}.", no_common="{s} y {t} no tienen vecinos comunes.",
        pair="{a} se asigna a {x}.", measure={"cost": "Esta asignación cuesta {v} operaciones.",
                                              "size": "La subestructura común tiene {v} átomos."},
        color="{n} recibe el color {c}.", colors="Así que bastan {k} colores.",
        names={"clique": "clique", "independent set": "conjunto independiente", "vertex cover": "cubrimiento de vértices",
               "path": "camino", "tour": "recorrido", "cycle": "ciclo"}, last=" y "),
    "fi": Lang(
        leg="Kohteesta {a} kohteeseen {b} matka maksaa {w}, joten {b} saavutetaan hintaan {t}.",
        hop="Kohteesta {a} siirrytään kohteeseen {b}; askelia on nyt {t}.",
        total="Siis {what} kulkee {seq} ja sen pituus on {total}.",
        dist="Lyhin etäisyys solmujen {a} ja {b} välillä on {d}.",
        nbrs="Solmun {n} naapurit ovat {list}.", prop="{list} muodostavat {name}.",
        common="Solmujen {s} ja {t} yhteiset naapurit ovat {list}.", no_common="Solmuilla {s} ja {t} ei ole yhteisiä naapureita.",
        pair="{a} vastaa solmua {x}.", measure={"cost": "Tämä vastaavuus maksaa {v} muokkausta.",
                                               "size": "Yhteisessä rakenteessa on {v} atomia."},
        color="{n} saa värin {c}.", colors="Siis {k} väriä riittää.",
        names={"clique": "klikin", "independent set": "riippumattoman joukon", "vertex cover": "solmupeitteen",
               "path": "polku", "tour": "kierros", "cycle": "sykli"}, last=" ja "),
}


def _list(items: tuple[str, ...] | list[str], lang: Lang) -> str:
    items = list(items)
    if len(items) < 2:
        return "".join(items)
    return lang.sep.join(items[:-1]) + lang.last + items[-1]


def _prose(c: Claim, lang: Lang) -> list[str]:
    if isinstance(c, Chain):
        if c.legs is None:
            out = [lang.hop.format(a=a, b=b, t=num(t)) for a, b, _w, t in c.steps]
        else:
            out = [lang.leg.format(a=a, b=b, w=num(w), t=num(t)) for a, b, w, t in c.steps]
        return [*out, lang.total.format(what=lang.names[c.what], seq=_list(c.nodes, lang), total=num(c.total))]
    if isinstance(c, Dist):
        return [lang.dist.format(a=c.a, b=c.b, d=num(c.d))]
    if isinstance(c, Nbrs):
        return [lang.nbrs.format(n=c.node, list=_list(c.members, lang))]
    if isinstance(c, Prop):
        if c.prop == "common":
            s, t = c.pair or ("?", "?")
            if not c.members:
                return [lang.no_common.format(s=s, t=t)]
            return [lang.common.format(s=s, t=t, list=_list(c.members, lang))]
        return [lang.prop.format(list=_list(c.members, lang), name=lang.names[c.prop])]
    if isinstance(c, Mapping):
        return [lang.pair.format(a=a, x=x) for a, x in c.pairs] + [lang.measure[c.measure].format(v=num(c.value))]
    return [lang.color.format(n=n, c=k) for n, k in c.assign] + [lang.colors.format(k=c.k)]


# --------------------------------------------------------------------------------------------- structured

def _prop_name(c: Prop) -> str:
    return f"common neighbours of {c.pair[0]} and {c.pair[1]}" if c.prop == "common" and c.pair else c.prop


def _arrows(c: Claim, arrow: str = " -> ", sep: bool = False, unit: str = "") -> list[str]:
    if isinstance(c, Chain):
        seq = arrow.join(c.nodes)
        if c.legs is None:
            return [f"{seq} ({num(c.total)} {'edges' if c.what != 'path' else 'hops'})"]
        if sep:
            hops = c.nodes[0] + "".join(f"{arrow}{b} ({num(w, True)}{unit})" for _a, b, w, _t in c.steps)
            return [f"{hops}: total {num(c.total, True)}{unit}"]
        legs = " + ".join(num(w) for _a, _b, w, _t in c.steps)
        return [f"{seq} = {legs}" + (f" = {num(c.total)}" if len(c.steps) > 1 else "")]
    if isinstance(c, Dist):
        return [f"d({c.a}, {c.b}) = {num(c.d, sep)}"]
    if isinstance(c, Nbrs):
        return [f"N({c.node}) = {{{', '.join(c.members)}}}"]
    if isinstance(c, Prop):
        return [f"{{{', '.join(c.members)}}} is {'the set of ' if c.prop == 'common' else 'a '}{_prop_name(c)}"]
    if isinstance(c, Mapping):
        return [f"{a}{arrow}{x}" for a, x in c.pairs] + [f"{c.measure} = {num(c.value)}"]
    return [f"c({n}) = {k}" for n, k in c.assign] + [f"{c.k} colours"]


def _numbered(c: Claim) -> list[str]:
    if isinstance(c, Chain):
        out = [f"from {a} go to {b}" + (f", weight {num(w)}, running total {num(t)}" if c.legs is not None
                                          else f" ({num(t)} so far)") for a, b, w, t in c.steps]
        return [*out, f"the {c.what} {', '.join(c.nodes)} has length {num(c.total)}"]
    if isinstance(c, Dist):
        return [f"the distance from {c.a} to {c.b} is {num(c.d)}"]
    if isinstance(c, Nbrs):
        return [f"the neighbours of {c.node}: {', '.join(c.members)}"]
    if isinstance(c, Prop):
        return [f"{', '.join(c.members) or 'nothing'}: the {_prop_name(c)}"]
    if isinstance(c, Mapping):
        return [f"map {a} to {x}" for a, x in c.pairs] + [f"total {c.measure}: {num(c.value)}"]
    return [f"colour {n} with {k}" for n, k in c.assign] + [f"{c.k} colours used"]


def _bullets(c: Claim) -> list[str]:
    if isinstance(c, Chain):
        return ([f"- {c.what}: {' / '.join(c.nodes)}"]
                + [f"  - {a} – {b}: {num(w)} (cumulative {num(t)})" for a, b, w, t in c.steps]
                + [f"  - length: {num(c.total)}"])
    if isinstance(c, Dist):
        return [f"- distance {c.a} – {c.b}", f"  - value: {num(c.d)}"]
    if isinstance(c, Nbrs):
        return [f"- neighbours of {c.node}"] + [f"  - {m}" for m in c.members]
    if isinstance(c, Prop):
        return [f"- {_prop_name(c)}"] + [f"  - {m}" for m in c.members]
    if isinstance(c, Mapping):
        return ["- mapping (graph 1 ↦ graph 2)"] + [f"  - {a} ↦ {x}" for a, x in c.pairs] + [
            f"- {c.measure}: {num(c.value)}"]
    classes: dict[int, list[str]] = {}
    for n, k in c.assign:
        classes.setdefault(k, []).append(n)
    return [f"- colour {k}" + "".join(f"\n  - {n}" for n in ns) for k, ns in sorted(classes.items())] + [
        f"- colours used: {c.k}"]


def _table(c: Claim) -> list[str]:
    def t(head: list[str], rows: list[list[str]]) -> list[str]:
        return ["", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)] + [
            "| " + " | ".join(r) + " |" for r in rows] + [""]

    if isinstance(c, Chain):
        rows = [[str(i + 1), a, b, num(w), num(r)] for i, (a, b, w, r) in enumerate(c.steps)]
        return t(["#", "from", "to", "weight" if c.legs is not None else "hops", "cumulative"], rows) + [
            f"{c.what.capitalize()} length: {num(c.total)}"]
    if isinstance(c, Dist):
        return t(["from", "to", "shortest distance"], [[c.a, c.b, num(c.d)]])
    if isinstance(c, Nbrs):
        return t(["vertex", "its neighbours"], [[c.node, ", ".join(c.members)]])
    if isinstance(c, Prop):
        return t(["members", "property"], [[", ".join(c.members) or "(none)", _prop_name(c)]])
    if isinstance(c, Mapping):
        return t(["graph 1", "graph 2"], [[a, x] for a, x in c.pairs]) + [f"Total {c.measure}: {num(c.value)}"]
    return t(["vertex", "colour class"], [[n, str(k)] for n, k in c.assign]) + [f"Colours: {c.k}"]


def _csv(c: Claim) -> list[str]:
    def f(head: str, rows: list[str]) -> list[str]:
        return ["```csv", head, *rows, "```"]

    if isinstance(c, Chain):
        return f("step,from,to,weight,total", [f"{i + 1},{a},{b},{num(w)},{num(r)}"
                                                for i, (a, b, w, r) in enumerate(c.steps)]) + [
            f"{c.what} length: {num(c.total)}"]
    if isinstance(c, Dist):
        return f("source,target,distance", [f"{c.a},{c.b},{num(c.d)}"])
    if isinstance(c, Nbrs):  # an empty neighbourhood is a row with an empty cell, not no row at all
        return f("node,neighbour", [f"{c.node},{m}" for m in c.members] or [f"{c.node},"])
    if isinstance(c, Prop):
        return f("node,set", [f"{m},{_prop_name(c)}" for m in c.members])
    if isinstance(c, Mapping):
        return f("graph1,graph2", [f"{a},{x}" for a, x in c.pairs]) + [f"{c.measure}: {num(c.value)}"]
    return f("node,color", [f"{n},{k}" for n, k in c.assign]) + [f"colors: {c.k}"]


def _json(c: Claim, shape: str) -> list[str]:
    d: object
    if isinstance(c, Chain):
        legs = [{"from": a, "to": b, "weight": _j(w), "total": _j(r)} for a, b, w, r in c.steps]
        d = {"flat": {c.what: list(c.nodes), "legs": [x["weight"] for x in legs], "length": _j(c.total)},
             "records": legs + [{c.what: "end", "length": _j(c.total)}],
             "nested": {"solution": {c.what: {"nodes": list(c.nodes), "edges": [
                 {"u": x["from"], "v": x["to"], "w": x["weight"]} for x in legs]}, "value": _j(c.total)}}}[shape]
    elif isinstance(c, Dist):
        d = {"flat": {"from": c.a, "to": c.b, "distance": _j(c.d)},
             "records": [{"pair": [c.a, c.b], "distance": _j(c.d)}],
             "nested": {"solution": {"distance": {"between": [c.a, c.b], "value": _j(c.d)}}}}[shape]
    elif isinstance(c, Nbrs):
        d = {"flat": {f"N({c.node})": list(c.members)},
             "records": [{"node": c.node, "neighbors": list(c.members)}],
             "nested": {"solution": {"neighbors": {c.node: list(c.members)}}}}[shape]
    elif isinstance(c, Prop):
        name = _prop_name(c).replace(" ", "_")
        d = {"flat": {name: list(c.members)},
             "records": [{"members": list(c.members), "property": _prop_name(c)}],
             "nested": {"solution": {name: {"members": list(c.members), "size": len(c.members)}}}}[shape]
    elif isinstance(c, Mapping):
        d = {"flat": {"mapping": dict(c.pairs), c.measure: _j(c.value)},
             "records": [{"g1": a, "g2": x} for a, x in c.pairs] + [{c.measure: _j(c.value)}],
             "nested": {"solution": {"mapping": [{"from": a, "to": x} for a, x in c.pairs],
                                     c.measure: _j(c.value)}}}[shape]
    else:
        classes: dict[str, list[str]] = {}
        for n, k in c.assign:
            classes.setdefault(str(k), []).append(n)
        d = {"flat": {"coloring": dict(c.assign), "colors": c.k},
             "records": [{"node": n, "color": k} for n, k in c.assign],
             "nested": {"solution": {"classes": classes, "colors": c.k}}}[shape]
    return ["```json", json.dumps(d, ensure_ascii=False, indent=1 if shape == "nested" else None), "```"]


def _latex(c: Claim, text: bool) -> list[str]:
    def n(x: str) -> str:
        return f"\\text{{{x}}}" if text else x

    arrow = r" \rightarrow " if text else r" \to "
    if isinstance(c, Chain):
        sums = " + ".join(num(w) for _a, _b, w, _t in c.steps)
        return [f"${arrow.join(n(x) for x in c.nodes)}$, " + (f"$\\text{{length}} = {sums} = {num(c.total)}$" if text
                                                            else f"with length ${sums} = {num(c.total)}$")]
    if isinstance(c, Dist):
        return [f"$d({n(c.a)}, {n(c.b)}) = {num(c.d)}$"]
    if isinstance(c, Nbrs):
        return [f"$N({n(c.node)}) = \\{{{', '.join(n(m) for m in c.members)}\\}}$"]
    if isinstance(c, Prop):
        return [f"$\\{{{', '.join(n(m) for m in c.members)}\\}}$ is " + (
            "the set of " if c.prop == "common" else "a ") + (f"$\\text{{{_prop_name(c)}}}$" if text else _prop_name(c))]
    if isinstance(c, Mapping):
        return [f"${n(a)} \\mapsto {n(x)}$" for a, x in c.pairs] + [f"$\\text{{{c.measure}}} = {num(c.value)}$"]
    return [f"$c({n(v)}) = {k}$" for v, k in c.assign] + [f"$\\chi = {c.k}$"]


def _yaml(c: Claim) -> list[str]:
    if isinstance(c, Chain):
        return ["```yaml", f"{c.what}: [{', '.join(c.nodes)}]", "legs:"] + [
            f"  - {{from: {a}, to: {b}, weight: {num(w)}, total: {num(r)}}}" for a, b, w, r in c.steps] + [
            f"length: {num(c.total)}", "```"]
    if isinstance(c, Dist):
        return ["```yaml", f"distance: {{from: {c.a}, to: {c.b}, value: {num(c.d)}}}", "```"]
    if isinstance(c, Nbrs):
        return ["```yaml", "neighbours:", f"  {c.node}: [{', '.join(c.members)}]", "```"]
    if isinstance(c, Prop):
        return ["```yaml", f"{_prop_name(c).replace(' ', '_')}:"] + [f"  - {m}" for m in c.members] + ["```"]
    if isinstance(c, Mapping):
        return ["```yaml", "mapping:"] + [f"  {a}: {x}" for a, x in c.pairs] + [
            f"{c.measure}: {num(c.value)}", "```"]
    return ["```yaml", "coloring:"] + [f"  {n}: {k}" for n, k in c.assign] + [f"colors: {c.k}", "```"]


def _mermaid(c: Claim) -> list[str]:
    if isinstance(c, Chain):
        return ["```mermaid", "graph LR"] + [f"  {a} -->|{num(w)}| {b}" for a, b, w, _t in c.steps] + [
            "```", f"{c.what} length: {num(c.total)}"]
    if isinstance(c, Mapping):
        return ["```mermaid", "graph LR"] + [f"  g1_{a}[{a}] -.-> g2_{x}[{x}]" for a, x in c.pairs] + [
            "```", f"{c.measure}: {num(c.value)}"]
    if isinstance(c, Coloring):
        return ["```mermaid", "graph LR"] + [f"  {n}:::c{k}" for n, k in c.assign] + ["```", f"colours: {c.k}"]
    return _arrows(c)


def _html(c: Claim) -> list[str]:
    def t(head: list[str], rows: list[list[str]]) -> list[str]:
        return ["<table>", "<tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr>"] + [
            "<tr>" + "".join(f"<td>{x}</td>" for x in r) + "</tr>" for r in rows] + ["</table>"]

    if isinstance(c, Chain):
        return t(["from", "to", "weight", "total"], [[a, b, num(w), num(r)] for a, b, w, r in c.steps]) + [
            f"<p>{c.what} length: {num(c.total)}</p>"]
    if isinstance(c, Dist):
        return t(["from", "to", "distance"], [[c.a, c.b, num(c.d)]])
    if isinstance(c, Nbrs):
        return t(["node", "neighbours"], [[c.node, ", ".join(c.members)]])
    if isinstance(c, Prop):
        return t([_prop_name(c)], [[m] for m in c.members])
    if isinstance(c, Mapping):
        return t(["graph 1", "graph 2"], [[a, x] for a, x in c.pairs]) + [f"<p>{c.measure}: {num(c.value)}</p>"]
    return t(["node", "colour"], [[n, str(k)] for n, k in c.assign]) + [f"<p>colours: {c.k}</p>"]


def _sexpr(c: Claim) -> list[str]:
    if isinstance(c, Chain):
        legs = " ".join(f"({a} {b} {num(w)})" for a, b, w, _t in c.steps)
        return [f"({c.what} ({' '.join(c.nodes)}) (legs {legs}) (length {num(c.total)}))"]
    if isinstance(c, Dist):
        return [f"(distance {c.a} {c.b} {num(c.d)})"]
    if isinstance(c, Nbrs):
        return [f"(neighbours {c.node} ({' '.join(c.members)}))"]
    if isinstance(c, Prop):
        return [f"({_prop_name(c).replace(' ', '-')} ({' '.join(c.members)}))"]
    if isinstance(c, Mapping):
        return [f"(mapping {' '.join(f'({a} {x})' for a, x in c.pairs)} ({c.measure} {num(c.value)}))"]
    return [f"(coloring {' '.join(f'({n} {k})' for n, k in c.assign)} (colors {c.k}))"]


def render_claim(c: Claim, notation: str) -> list[str]:
    """The lines stating one claim in `notation` (a structured notation or a language of `LANGS`)."""
    if notation in LANGS:
        return _prose(c, LANGS[notation])
    if notation == "arrows":
        return _arrows(c)
    if notation == "thousands":
        return _arrows(c, " → ", sep=True, unit=" km")
    if notation == "numbered":
        return _numbered(c)
    if notation == "bullets":
        return _bullets(c)
    if notation == "mdtable":
        return _table(c)
    if notation == "csv":
        return _csv(c)
    if notation.startswith("json_"):
        return _json(c, notation[5:])
    if notation in ("latex", "latex_text"):
        return _latex(c, notation == "latex_text")
    if notation == "yaml":
        return _yaml(c)
    if notation in ("mermaid", "html_table", "sexpr"):
        return {"mermaid": _mermaid, "html_table": _html, "sexpr": _sexpr}[notation](c)
    raise ValueError(f"unknown notation {notation!r}")


def render(claims: list[Claim], notation: str) -> str:
    """The reasoning stating `claims` in `notation`; numbered steps are numbered across claims."""
    lines = [ln for c in claims for ln in render_claim(c, notation)]
    if notation == "numbered":
        lines = [f"Step {i + 1}: {ln}." for i, ln in enumerate(lines)]
    return "\n".join(lines)
