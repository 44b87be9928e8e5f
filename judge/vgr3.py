"""VGR-Score v3 of one response: the share of critical facts it states, against the closest optimum, the
number of distinct false claims it makes, and the exact verifier's verdict (docs/judge.md):

    q   = |stated ∩ C*| / |C*|      C* = the optimum's critical facts the response comes closest to
    K   = |stated ∩ C*|,  E = distinct false claims about the asked graph,  F = verifier's verdict (0/1)
    VGR = 100 × (F·(a + (1−a)·q) + (1−F)·b·q) × (K + 1) / (K + 1 + E),    a = 0.5, b = 0.8

An instance without critical facts (nothing to establish) scores 100·F·1/(1+E).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import networkx as nx

from evalcore.evidence import Evidence
from judge.critical import (
    ANSWER_WEIGHT,
    WRONG_CEILING,
    Atom,
    Candidate,
    Critical,
    critical_facts,
    num,
    path_atoms,
    set_atoms,
)


@dataclass(frozen=True)
class V3:
    vgr: float
    share: float
    n_critical: int
    n_stated: int  # K: critical facts of the closest optimum stated correctly
    n_errors: int


def v3_score(share: float, stated: int, errors: int, final_match: bool, has_critical: bool = True) -> float:
    if not has_critical:
        return 100.0 * (1.0 if final_match else 0.0) / (1 + errors)
    base = (ANSWER_WEIGHT + (1 - ANSWER_WEIGHT) * share) if final_match else WRONG_CEILING * share
    return 100.0 * base * (stated + 1) / (stated + 1 + errors)


def _coloring_match(cand: tuple[tuple[str, str], ...], stated: Mapping[str, str]) -> int:
    """Nodes whose stated class agrees with the candidate colouring under the best renaming of classes."""
    if not stated:
        return 0
    by_node = dict(cand)
    counts: dict[tuple[str, str], int] = {}
    for n, lab in stated.items():
        c = by_node.get(n)
        if c is not None:
            counts[(c, lab)] = counts.get((c, lab), 0) + 1
    # greedy on a small bipartite table is not always optimal: try every assignment when it is small
    gold_labels = sorted({c for c, _ in counts})
    said = sorted({lab for _, lab in counts})
    if len(gold_labels) <= 6 and len(said) <= 7:
        best = 0
        for perm in itertools.permutations(said, min(len(said), len(gold_labels))):
            best = max(best, sum(counts.get((c, lab), 0) for c, lab in zip(gold_labels, perm, strict=False)))
        return best
    used_c: set[str] = set()
    used_l: set[str] = set()
    total = 0
    for (c, lab), k in sorted(counts.items(), key=lambda x: -x[1]):
        if c not in used_c and lab not in used_l:
            used_c.add(c)
            used_l.add(lab)
            total += k
    return total


def _ged_cost(g1: nx.Graph, g2: nx.Graph, m: Mapping[str, str]) -> int:
    def label(g: nx.Graph, n: str) -> Any:
        a = g.nodes[n]
        return a.get("element", a.get("color"))

    cost = sum(1 for u in g1 if u not in m) + sum(1 for u, v in m.items() if label(g1, u) != label(g2, v))
    cost += g2.number_of_nodes() - len(set(m.values()))
    kept = sum(1 for a, b in g1.edges if a in m and b in m and g2.has_edge(m[a], m[b]))
    return cost + (g1.number_of_edges() - kept) + (g2.number_of_edges() - kept)


def own_optima(ev: Evidence, crit: Critical, stated: set[Atom], closed_paths: Iterable[tuple[list[str], float]],
               true_sets: Iterable[tuple[str, list[str]]], coloring: Mapping[str, str]) -> list[Candidate]:
    """Optima the response itself states (a tour, cycle, set, mapping or colouring that is optimal by the
    gold value): credited against as any other optimum, so a right solution other than the gold one counts."""
    task, value = ev.facts.task, crit.gold_value
    out: list[Candidate] = []
    if value is None:
        return out
    g = ev.facts.graphs[0].asked
    for p, total in closed_paths:
        if task == "TSP" and set(p) == set(g) and len(p) == g.number_of_nodes() + 1 and abs(total - value) < 1e-6:
            out.append(Candidate(frozenset(path_atoms(p) | {("T", num(value))})))
        elif task == "CYC" and len(p) - 1 == int(value) and len(set(p)) == len(p) - 1:
            out.append(Candidate(frozenset(path_atoms(p))))
    want = {"MCP": "clique", "MIS": "independent set", "MVC": "vertex cover"}.get(task)
    for prop, nodes in true_sets:
        if prop == want and len(set(nodes)) == int(value):
            out.append(Candidate(frozenset(set_atoms(prop, nodes, g))))
    if task == "COL" and coloring and set(coloring) == set(g) and len(set(coloring.values())) == int(value):
        if all(coloring[a] != coloring[b] for a, b in g.edges):
            out.append(Candidate(frozenset(), tuple(sorted(coloring.items()))))
    if task in ("GED", "MCS") and len(ev.facts.graphs) == 2:
        pairs = [(a[1], a[2]) for a in stated if a[0] == "P"]
        m = dict(pairs)
        g1, g2 = ev.facts.graphs[0].asked, ev.facts.graphs[1].asked
        if m and len(m) == len(pairs) and len(set(m.values())) == len(m) and all(a in g1 and x in g2 for a, x in pairs):
            ok = False
            if task == "GED":
                ok = _ged_cost(g1, g2, m) == int(value)
            else:
                ok = len(m) == int(value) and all(
                    g1.has_edge(a, b) == g2.has_edge(m[a], m[b]) for a, b in itertools.combinations(m, 2))
            if ok:
                out.append(Candidate(frozenset(("P", a, x) for a, x in pairs)))
    return out


def score_atoms(ev: Evidence, gold: Mapping[str, Any] | None, value: float | None, stated: set[Atom],
                errors: int, final_match: bool, *, own: Iterable[Candidate] = (),
                coloring: Mapping[str, str] | None = None, crit: Critical | None = None) -> V3:
    """VGR v3 from the atoms a response states correctly, its distinct false claims and F."""
    crit = crit if crit is not None else critical_facts(ev, gold, value)
    cands = [*crit.candidates, *own]
    best_k, best_n, best_q = 0, 0, -1.0
    for c in cands:
        if c.size == 0:
            continue
        k = len(c.atoms & stated) + (_coloring_match(c.coloring, coloring or {}) if c.coloring else 0)
        n = c.size
        if crit.witnesses:  # COL: the colouring plus the best-stated lower-bound witness
            wk, wn = max(((len(w.atoms & stated), len(w.atoms)) for w in crit.witnesses),
                         key=lambda x: (x[0] / x[1] if x[1] else 0, -x[1]))
            k, n = k + wk, n + wn
        q = k / n
        if q > best_q or (q == best_q and n < best_n):
            best_k, best_n, best_q = k, n, q
    if best_n == 0:
        return V3(v3_score(0.0, 0, errors, final_match, has_critical=False), 0.0, 0, 0, errors)
    return V3(v3_score(best_q, best_k, errors, final_match), best_q, best_n, best_k, errors)
