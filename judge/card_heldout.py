"""The judge card's held-out renderers: notations and languages that appear nowhere in the issue the judge
was built from, and that `judge.card_notation`'s families do not use either — Graphviz DOT, RDF/Turtle,
ASCII-art arrows, Japanese and Russian prose. A judge must read each to the same score as the arrows
notation, or refuse it (null, `unreadable`); a number that is neither is a wrong score (docs/judge.md,
"Judge card"). Written for the card alone, apart from the judge's reader.
"""

from __future__ import annotations

import re

from judge.card_notation import Chain, Claim, Dist, Lang, Mapping, Nbrs, Prop, _arrows, _prose, num

HELDOUT = ("dot", "turtle", "ascii", "ja", "ru")

LANGS_HELDOUT: dict[str, Lang] = {
    "ja": Lang(
        leg="{a} から {b} へのコストは {w} で、{b} までの累計は {t} です。",
        hop="{a} から {b} へ進みます。ここまで {t} ステップです。",
        total="したがって、この{what}は {seq} を通り、長さは {total} です。",
        dist="{a} と {b} の最短距離は {d} です。",
        nbrs="{n} の隣接ノードは {list} です。", prop="{list} は{name}をなします。",
        common="{s} と {t} の共通の隣接ノードは {list} です。", no_common="{s} と {t} に共通の隣接ノードはありません。",
        pair="{a} は {x} に対応します。", measure={"cost": "この対応の編集コストは {v} です。",
                                                "size": "共通部分構造は {v} 個の原子からなります。"},
        color="{n} には色 {c} を割り当てます。", colors="よって {k} 色で足ります。",
        names={"clique": "クリーク", "independent set": "独立集合", "vertex cover": "頂点被覆",
               "path": "経路", "tour": "巡回路", "cycle": "閉路"}, sep="、", last="、"),
    "ru": Lang(
        leg="Переход из {a} в {b} стоит {w}, так что до {b} набирается {t}.",
        hop="Из {a} переходим в {b}; это уже {t} шагов.",
        total="Итак, {what} проходит через {seq}, его длина равна {total}.",
        dist="Кратчайшее расстояние между {a} и {b} равно {d}.",
        nbrs="Соседи вершины {n}: {list}.", prop="Вершины {list} образуют {name}.",
        common="Общие соседи {s} и {t}: {list}.", no_common="У {s} и {t} нет общих соседей.",
        pair="{a} сопоставляется с {x}.", measure={"cost": "Стоимость этого сопоставления равна {v}.",
                                                  "size": "Общая подструктура содержит {v} атомов."},
        color="Вершина {n} получает цвет {c}.", colors="Значит, хватает {k} цветов.",
        names={"clique": "клику", "independent set": "независимое множество", "vertex cover": "вершинное покрытие",
               "path": "путь", "tour": "обход", "cycle": "цикл"}, last=" и "),
}


def _ident(s: str) -> str:
    return re.sub(r"\W+", "_", s).strip("_")


def _dot(c: Claim) -> list[str]:
    if isinstance(c, Chain):
        body = [f"  {a} -- {b}" + (f" [label={num(w)}];" if c.legs is not None else ";") for a, b, w, _t in c.steps]
        return [f"graph {c.what} {{", *body, f'  label="{c.what} length: {num(c.total)}";', "}"]
    if isinstance(c, Dist):
        return ["graph shortest_distance {", f"  {c.a} -- {c.b} [label={num(c.d)}];", "}"]
    if isinstance(c, Nbrs):
        body = [f"  {c.node} -- {m};" for m in c.members] or [f"  {c.node};"]
        return [f"graph neighbours_of_{c.node} {{", *body, "}"]
    if isinstance(c, Prop):
        name = (f"common neighbours of {c.pair[0]} and {c.pair[1]}" if c.prop == "common" and c.pair else c.prop)
        return [f"graph {_ident(name)} {{", *[f"  {m};" for m in c.members], "}"]
    if isinstance(c, Mapping):
        return ["digraph mapping {", *[f"  {a} -> {x};" for a, x in c.pairs],
                f'  label="{c.measure}: {num(c.value)}";', "}"]
    return ["graph coloring {", *[f"  {n} [color={k}];" for n, k in c.assign], f'  label="colours: {c.k}";', "}"]


def _turtle(c: Claim, i: int) -> list[str]:
    s = f":s{i}"
    if isinstance(c, Chain):
        kind = {"path": "Path", "tour": "Tour", "cycle": "Cycle"}[c.what]
        legs = f" ;\n    :legWeights ( {' '.join(num(w) for _a, _b, w, _t in c.steps)} )" if c.legs else ""
        return [f"{s} a :{kind} ;\n    :visits ( {' '.join(':' + x for x in c.nodes)} ){legs} ;\n"
                f"    :length {num(c.total)} ."]
    if isinstance(c, Dist):
        return [f"{s} a :ShortestDistance ;\n    :between ( :{c.a} :{c.b} ) ;\n    :value {num(c.d)} ."]
    if isinstance(c, Nbrs):
        objs = ", ".join(":" + m for m in c.members) or "()"
        return [f":{c.node} :neighbours {objs} ."]
    if isinstance(c, Prop):
        kind = {"clique": "Clique", "independent set": "IndependentSet", "vertex cover": "VertexCover",
                "common": "CommonNeighbours"}[c.prop]
        of = f" ;\n    :of ( :{c.pair[0]} :{c.pair[1]} )" if c.prop == "common" and c.pair else ""
        return [f"{s} a :{kind}{of} ;\n    :members ( {' '.join(':' + m for m in c.members)} ) ."]
    if isinstance(c, Mapping):
        return [f":{a} :mapsTo :{x} ." for a, x in c.pairs] + [f"{s} a :Mapping ;\n    :{c.measure} {num(c.value)} ."]
    return [f":{n} :colour {k} ." for n, k in c.assign] + [f"{s} a :Colouring ;\n    :colours {c.k} ."]


def _ascii(c: Claim) -> list[str]:
    if isinstance(c, Chain):
        line = c.nodes[0] + "".join(f" --{num(w) if c.legs is not None else ''}--> {b}" for _a, b, w, _t in c.steps)
        return [f"{line}   [{c.what} length {num(c.total)}]"]
    return _arrows(c, " ==> ")


def render_heldout(claims: list[Claim], notation: str) -> str:
    """The reasoning stating `claims` in a held-out notation or language."""
    if notation in LANGS_HELDOUT:
        return "\n".join(ln for c in claims for ln in _prose(c, LANGS_HELDOUT[notation]))
    if notation == "dot":
        return "\n".join(["```dot", *[ln for c in claims for ln in _dot(c)], "```"])
    if notation == "turtle":
        lines = ["```turtle", "@prefix : <http://example.org/graph#> ."]
        lines += [ln for i, c in enumerate(claims) for ln in _turtle(c, i + 1)]
        return "\n".join([*lines, "```"])
    if notation == "ascii":
        return "\n".join(ln for c in claims for ln in _ascii(c))
    raise ValueError(f"unknown held-out notation {notation!r}")


def transcription_heldout(drawn: list, weighted: bool) -> str:
    """Every drawn edge (`drawn`: the instance's drawn networkx graphs) as a DOT graph and as Turtle triples,
    the input restated in the held-out notations: perception, worth nothing with a wrong answer."""
    dot, ttl = ["```dot"], ["```turtle", "@prefix : <http://example.org/graph#> ."]
    for gi, d in enumerate(drawn):
        dot.append(f"graph G{gi + 1} {{")
        for a, b in sorted(d.edges):
            w = d.edges[a, b].get("weight")
            dot.append(f"  {a} -- {b}" + (f" [label={num(w)}];" if weighted and w is not None else ";"))
            ttl.append(f":{a} :linkedTo :{b} ." if not weighted or w is None else
                       f":e_{a}_{b} a :Edge ; :ends ( :{a} :{b} ) ; :weight {num(w)} .")
        dot.append("}")
    return "\n".join([*dot, "```", *ttl, "```"])
