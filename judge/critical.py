"""VGR-Score v3: the critical facts of an instance and the score of a response against them.

A response earns reasoning credit only for the *critical facts* it states correctly: what a correct solution
must establish, taken from an optimal witness (docs/judge.md has the table and the formula). The witness comes
from the caller's gold answer (the exact solver's, passed with the evidence; the judge imports no benchmark)
and, where several optima exist, from the other optima this module finds with generic graph algorithms
(networkx) or recognises among the response's own stated witnesses: the response is credited against the
optimum it comes closest to.

Facts are compared as *atoms*, tuples that do not depend on notation:

    ("E", u, v)        u-v adjacent (u < v)            ("N", u, v)   u, v not adjacent
    ("D", u, v, d)     shortest u-v distance d         ("T", x)      a closed tour/cycle of total x
    ("M", prop, n)     n belongs to the solution set   ("P", a, x)   mapping pair a (graph 1) -> x (graph 2)
    ("A", n, label)    colour class of n (COL; matched up to a renaming of the classes)
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import networkx as nx

from evalcore.evidence import Evidence

VGR_FORMULA_V3 = "vgr-v3"
# weight of a right final answer without any critical fact, and the ceiling of a wrong answer that states
# every critical fact (docs/judge.md: "right answer, no reasoning" 50; "wrong answer, complete process" 80)
ANSWER_WEIGHT = 0.5
WRONG_CEILING = 0.8
MAX_OPTIMA = 48  # alternative optima enumerated per instance (the gold one is always among them)

Atom = tuple[Any, ...]


def _e(u: str, v: str) -> tuple[str, str]:
    return (u, v) if u <= v else (v, u)


def num(x: Any) -> float:
    return round(float(x), 6)


@dataclass(frozen=True)
class Candidate:
    """One optimum's critical facts: `atoms` matched as a set; `coloring` (COL) matched up to renaming."""

    atoms: frozenset[Atom]
    coloring: tuple[tuple[str, str], ...] = ()

    @property
    def size(self) -> int:
        return len(self.atoms) + len(self.coloring)


@dataclass(frozen=True)
class Critical:
    candidates: tuple[Candidate, ...]
    witnesses: tuple[Candidate, ...] = ()  # COL lower-bound witnesses (any one counts)
    gold_value: float | None = None


# ---------------------------------------------------------------------------------------- atoms of facts


def path_atoms(nodes: list[str]) -> set[Atom]:
    return {("E", *_e(a, b)) for a, b in zip(nodes, nodes[1:], strict=False) if a != b}


def set_atoms(prop: str, nodes: Iterable[str], g: nx.Graph | None = None, query: Mapping[str, Any] | None = None
              ) -> set[Atom]:
    """What a true set claim establishes: membership plus the pairwise facts its property implies."""
    s = sorted(set(nodes))
    out: set[Atom] = {("M", prop, n) for n in s}
    pairs = list(itertools.combinations(s, 2))
    if prop == "clique":
        out |= {("E", a, b) for a, b in pairs}
    elif prop == "independent set":
        out |= {("N", a, b) for a, b in pairs}
    elif prop == "vertex cover" and g is not None:
        rest = sorted(set(g) - set(s))
        out |= {("N", a, b) for a, b in itertools.combinations(rest, 2)}
    elif prop == "common" and query:
        src, tgt = query.get("source"), query.get("target")
        if src is not None and tgt is not None:
            out |= {("E", *_e(str(src), n)) for n in s} | {("E", *_e(str(tgt), n)) for n in s}
    return out


# ---------------------------------------------------------------------------------------- optima


def _asked(ev: Evidence, i: int = 0) -> nx.Graph:
    return ev.facts.graphs[i].asked


def _weight(g: nx.Graph, a: str, b: str) -> float:
    return float(g.edges[a, b].get("weight", 1))


def _sd(ev: Evidence, gold: Mapping[str, Any]) -> list[Candidate]:
    g = _asked(ev)
    q = ev.facts.query
    s, t = str(q.get("source")), str(q.get("target"))
    paths: list[list[str]] = []
    if gold.get("Path"):
        paths.append([str(x) for x in gold["Path"]])
    if s in g and t in g and nx.has_path(g, s, t):
        paths += itertools.islice(nx.all_shortest_paths(g, s, t, weight="weight"), MAX_OPTIMA)
    out = []
    for p in paths:
        if len(p) < 2 or any(n not in g for n in p) or not all(g.has_edge(a, b) for a, b in zip(p, p[1:], strict=False)):
            continue
        atoms = path_atoms(p)
        run = 0.0
        for a, b in zip(p, p[1:], strict=False):
            run += _weight(g, a, b)
            atoms.add(("D", *_e(s, b), num(run)))
        out.append(Candidate(frozenset(atoms)))
    return out


def _diam(ev: Evidence, gold: Mapping[str, Any], value: float | None) -> list[Candidate]:
    g = _asked(ev)
    dist = dict(nx.all_pairs_shortest_path_length(g))
    d = value if value is not None else max((max(x.values()) for x in dist.values()), default=0)
    pairs = [(a, b) for a in sorted(dist) for b, x in sorted(dist[a].items()) if a < b and x == d]
    paths: list[list[str]] = []
    if gold.get("Path"):
        paths.append([str(x) for x in gold["Path"]])
    for a, b in pairs[:MAX_OPTIMA]:
        paths += itertools.islice(nx.all_shortest_paths(g, a, b), 4)
    out = []
    for p in paths:
        if len(p) >= 2 and all(n in g for n in p) and dist[p[0]].get(p[-1]) == d:
            out.append(Candidate(frozenset(path_atoms(p) | {("D", *_e(p[0], p[-1]), num(d))})))
    return out


def _cn(ev: Evidence, gold: Mapping[str, Any]) -> list[Candidate]:
    g = _asked(ev)
    q = ev.facts.query
    s, t = str(q.get("source")), str(q.get("target"))
    if s not in g or t not in g:
        return []
    common = sorted(set(g[s]) & set(g[t]))
    if common:
        atoms = {("E", *_e(s, n)) for n in common} | {("E", *_e(t, n)) for n in common}
    else:  # nothing in common: the two neighbourhoods show it
        atoms = {("E", *_e(s, n)) for n in g[s]} | {("E", *_e(t, n)) for n in g[t]}
    return [Candidate(frozenset(atoms))]


def _sets(ev: Evidence, gold: Mapping[str, Any], value: float | None, prop: str, key: str) -> list[Candidate]:
    g = _asked(ev)
    found: list[list[str]] = []
    if gold.get(key):
        found.append([str(x) for x in gold[key]])
    k = int(value) if value is not None else (len(found[0]) if found else 0)
    if g.number_of_nodes() <= 40:
        if prop == "clique":
            src: Iterable[list[str]] = nx.find_cliques(g)
        else:
            src = nx.find_cliques(nx.complement(g))
        for c in itertools.islice(src, 4000):
            if prop == "vertex cover":
                c = sorted(set(g) - set(c))
            if len(c) == k:
                found.append(sorted(c))
                if len(found) > MAX_OPTIMA:
                    break
    return [Candidate(frozenset(set_atoms(prop, c, g))) for c in found]


def _closed(nodes: Iterable[str]) -> list[str]:
    p = [str(x) for x in nodes]
    if p and p[0] != p[-1]:
        p.append(p[0])
    return p


def _tour(ev: Evidence, gold: Mapping[str, Any], value: float | None) -> list[Candidate]:
    p = _closed(gold.get("Tour") or [])
    atoms = path_atoms(p)
    if value is not None:
        atoms.add(("T", num(value)))
    return [Candidate(frozenset(atoms))] if len(p) > 2 else []


def _cyc(ev: Evidence, gold: Mapping[str, Any]) -> list[Candidate]:
    p = _closed(gold.get("Cycle") or [])
    return [Candidate(frozenset(path_atoms(p)))] if len(p) > 3 else []


def _mapping(gold: Mapping[str, Any]) -> list[Candidate]:
    m = gold.get("Mapping")
    if not isinstance(m, Mapping):
        return []
    return [Candidate(frozenset(("P", str(a), str(x)) for a, x in m.items() if x is not None))]


def _col(ev: Evidence, gold: Mapping[str, Any], value: float | None) -> tuple[list[Candidate], list[Candidate]]:
    g = _asked(ev)
    col = gold.get("Coloring")
    cands = []
    if isinstance(col, Mapping):
        cands.append(Candidate(frozenset(), tuple(sorted((str(n), str(c)) for n, c in col.items()))))
    k = int(value) if value is not None else len({c for _, c in cands[0].coloring}) if cands else 0
    witnesses: list[Candidate] = []
    if k >= 2 and g.number_of_nodes() <= 40:
        for c in itertools.islice(nx.find_cliques(g), 4000):
            if len(c) >= k:
                witnesses.append(Candidate(frozenset(("E", a, b) for a, b in itertools.combinations(sorted(c), 2))))
                if len(witnesses) >= MAX_OPTIMA:
                    break
        if not witnesses and k == 3:
            cyc = odd_cycle(g)
            if cyc:
                witnesses.append(Candidate(frozenset(path_atoms(_closed(cyc)))))
    return cands, witnesses


def odd_cycle(g: nx.Graph) -> list[str] | None:
    """A shortest odd cycle (the certificate that two colours do not suffice), or None."""
    best: list[str] | None = None
    for s in sorted(g):
        parent: dict[str, str | None] = {s: None}
        depth = {s: 0}
        order = [s]
        for u in order:
            for v in sorted(g[u]):
                if v not in depth:
                    depth[v], parent[v] = depth[u] + 1, u
                    order.append(v)
                elif depth[v] == depth[u] and (best is None or 2 * depth[u] + 1 < len(best)):
                    a, b = [u], [v]
                    while a[-1] != b[-1]:
                        a.append(parent[a[-1]])  # type: ignore[arg-type]
                        b.append(parent[b[-1]])  # type: ignore[arg-type]
                    cyc = a + b[-2::-1]
                    if len(cyc) % 2 == 1 and len(set(cyc)) == len(cyc):
                        best = cyc
        if best is not None and len(best) == 3:
            break
    return best


_CACHE: dict[str, Critical] = {}


def critical_facts(ev: Evidence, gold: Mapping[str, Any] | None, value: float | None) -> Critical:
    """The critical-fact candidates (one per optimum found) of an instance; cached per evidence + gold."""
    gold = dict(gold or {})
    key = ev.sha256 + repr(sorted(gold.items())) + repr(value)
    hit = _CACHE.get(key)
    if hit is not None:
        return hit
    task = ev.facts.task
    witnesses: list[Candidate] = []
    if task == "SD":
        cands = _sd(ev, gold)
    elif task == "DIAM":
        cands = _diam(ev, gold, value)
    elif task == "CN":
        cands = _cn(ev, gold)
    elif task == "TSP":
        cands = _tour(ev, gold, value)
    elif task == "MCP":
        cands = _sets(ev, gold, value, "clique", "Clique")
    elif task == "MIS":
        cands = _sets(ev, gold, value, "independent set", "IndependentSet")
    elif task == "MVC":
        cands = _sets(ev, gold, value, "vertex cover", "Cover")
    elif task == "CYC":
        cands = _cyc(ev, gold)
    elif task == "COL":
        cands, witnesses = _col(ev, gold, value)
    elif task in ("GED", "MCS") or ev.facts.paired:
        cands = _mapping(gold)
    else:
        cands = []
    out = Critical(tuple(dict.fromkeys(cands)), tuple(dict.fromkeys(witnesses)), value)
    if len(_CACHE) > 4096:
        _CACHE.clear()
    _CACHE[key] = out
    return out
