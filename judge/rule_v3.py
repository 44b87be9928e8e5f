"""The rule scorer's VGR v3: the atoms (`judge.critical`) its checked claims establish, its distinct false
claims, and the score against the closest optimum (`judge.vgr3`).

A claim counts once however it is written: every true claim is reduced to the atoms it states (an edge, a
non-adjacency, a distance, a membership, a mapping pair, a colour class), and every false claim to the one
false atom that makes it false (the missing edge of a path, the wrong total, the set that is not a clique),
so `A--B`, `A -> B` and `(A, B)` for a missing edge are one error, not three.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from judge.critical import Atom, critical_facts, num, path_atoms, set_atoms
from judge.rule_checks import Context, Step
from judge.rule_grammar import edge_key
from judge.vgr3 import V3, own_optima, score_atoms


def _graph(ctx: Context, cands: tuple[int, ...]) -> int:
    return cands[0] if cands else 0


def _atoms(ctx: Context, key: tuple[Any, ...], paths: list[tuple[list[str], float]],
           sets: list[tuple[str, list[str]]], coloring: dict[str, str]) -> set[Atom]:
    what = key[0]
    f = ctx.facts
    if what == "edge":
        return {("E", *key[2])}
    if what == "adj":
        return {("E", *edge_key(key[2], x)) for x in key[3]}
    if what == "dist":
        a, b = key[2]
        out: set[Atom] = {("D", a, b, num(key[3]))}
        for g in (ctx.graphs[i] for i in key[1]):
            if g.asked.has_edge(a, b) and abs((g.asked.edges[a, b].get("weight", 1) if f.weighted else 1)
                                              - key[3]) < 1e-6:
                out.add(("E", a, b))  # "d(A, B) = 1" / the edge's own weight: the edge, read as a distance
        return out
    if what == "map":
        return {("P", key[1], key[2])} if key[2] is not None else set()
    if what == "nonedge":
        return {("N", *edge_key(*key[2]))}
    if what == "assign":
        coloring.setdefault(key[1], key[2])
        return set()
    gi = _graph(ctx, key[1])
    g = ctx.graphs[gi]
    if what == "set":
        sets.append((key[2], list(key[3])))
        return set_atoms(key[2], key[3], g.asked, f.query)
    if what != "path":
        return set()
    nodes = list(key[2])
    out = path_atoms(nodes)
    dist = g.distances(True, f.weighted)
    hops = dict(key[4]) if len(key) > 4 else {}
    offset = hops.get(0, 0.0)
    # the running totals count from the path's first node, or from the question's source when the first
    # node carries its own distance from it ("B (1267 km) -> C (2608 km)")
    origin = nodes[0]
    src = f.query.get("source")
    if offset and src is not None and abs(dist.get(str(src), {}).get(nodes[0], -1) - offset) < 1e-6:
        origin = str(src)
    run, runs = offset, {0: offset}
    for i, (a, b) in enumerate(zip(nodes, nodes[1:], strict=False), start=1):
        run += float(g.asked.edges[a, b].get("weight", 1)) if f.weighted else 1.0
        runs[i] = run
    total = key[3] if key[3] is not None else hops.get(len(nodes) - 1)
    if total is not None and abs(total - run) < 1e-6 and not offset:
        if nodes[0] == nodes[-1]:
            out.add(("T", num(total)))
        elif abs(dist.get(nodes[0], {}).get(nodes[-1], -1) - total) < 1e-6:
            out.add(("D", *edge_key(nodes[0], nodes[-1]), num(total)))
    for i, said in hops.items():
        if i and abs(said - runs[i]) < 1e-6 and abs(dist.get(origin, {}).get(nodes[i], -1) - said) < 1e-6:
            out.add(("D", *edge_key(origin, nodes[i]), num(said)))
    if nodes[0] == nodes[-1] and len(nodes) > 3:
        paths.append((nodes, run))
    return out


def _error_key(ctx: Context, key: tuple[Any, ...]) -> tuple[Any, ...]:
    """The false atom behind a false claim, so paraphrases of one mistake count once."""
    what = key[0]
    if what == "edge":
        return ("E", *key[2]) if key[3] is None else ("W", *key[2], key[3])
    if what in ("path", "ghost"):
        nodes = list(key[2])
        gs = [ctx.graphs[i] for i in key[1]] if what == "path" else ctx.graphs
        for a, b in zip(nodes, nodes[1:], strict=False):
            if all(edge_key(a, b) not in g.asked_edges for g in gs):
                return ("E", *edge_key(a, b))
        for n in nodes:
            if n not in ctx.names:
                return ("node", n)
    if what == "dist":
        return ("D", *key[2], num(key[3]))
    if what == "nonedge":
        return ("N", *edge_key(*key[2]))
    return key


def v3_of(ctx: Context, steps: Iterable[Step], gold: Mapping[str, Any] | None, value: float | None,
          final_match: bool, evidence: Any) -> V3:
    stated: set[Atom] = set()
    errors: set[tuple[Any, ...]] = set()
    paths: list[tuple[list[str], float]] = []
    sets: list[tuple[str, list[str]]] = []
    coloring: dict[str, str] = {}
    for s in steps:
        if s.key[0] in ("sum",) and s.correct:
            continue
        if not s.correct:
            errors.add(_error_key(ctx, s.key))
        elif s.key[0] != "ambiguous":
            stated |= _atoms(ctx, s.key, paths, sets, coloring)
    if coloring:
        g = ctx.graphs[0].asked
        for a, b in g.edges:
            if a in coloring and b in coloring and coloring[a] == coloring[b]:
                errors.add(("clash", *edge_key(a, b)))  # adjacent nodes given one colour
    crit = critical_facts(evidence, gold, value)
    own = own_optima(evidence, crit, stated, paths, sets, coloring)
    return score_atoms(evidence, gold, value, stated, len(errors), final_match, own=own, coloring=coloring,
                       crit=crit)
