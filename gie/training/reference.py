"""A reference solution per GraphVerse instance, for SFT: written from the exact solver's gold (its certificate),
in the envelope the prompt asks for (`<root><reasoning>...</reasoning><final_answer>{json}</final_answer></root>`).

The reasoning states the facts a correct solution must establish, each checkable on the graph asked on:
how the image edit is read, the graph itself (nodes, edges, weights; TSP: the cities), then the task's
certificate: SD the path with running distances and every node's shortest distance; DIAM every node's
eccentricity and a realising path; CN both neighbourhoods; MCP / MIS / MVC the set, why it is feasible and why
no larger / smaller one exists; COL the colour classes and the lower bound; CYC the cycle's edges or the forest
count; TSP the tour legs with running totals; GED the edit operations the mapping implies; MCS the mapping and
the bonds it preserves. The final answer is the gold answer itself, so the exact verifier grades it correct
(tests/test_training_reference.py checks every instance of a generated split).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any

import networkx as nx

from evalcore.prompting import format_response
from evalcore.schema import Gold, Instance
from gie.edit_distance import node_label
from gie.graphs import from_node_link
from gie.solvers import sorted_labels
from gie.tasks.mcp import max_clique

UNITS = {"SD": " km", "TSP": " km"}


def _n(x: Any) -> str:
    if isinstance(x, float) and x == int(x):
        return str(int(x))
    return str(x)


def _names(xs: Sequence[Hashable]) -> str:
    return ", ".join(str(x) for x in xs) if xs else "none"


def _w(G: nx.Graph, u: Hashable, v: Hashable) -> Any:
    return G.edges[u, v].get("weight", 1)


def _edges(G: nx.Graph, unit: str = "") -> str:
    pairs = sorted((tuple(sorted((str(u), str(v)))) for u, v in G.edges if u != v))
    weighted = any("weight" in d for _, _, d in G.edges(data=True))
    if weighted:
        return "; ".join(f"{a}-{b} {_n(_w(G, a, b))}{unit}" for a, b in pairs)
    return ", ".join(f"{a}-{b}" for a, b in pairs)


def _graph_facts(G: nx.Graph, what: str = "The graph asked on", unit: str = "", edges: bool = True) -> str:
    nodes = sorted_labels(G)
    s = f"{what} has {len(nodes)} nodes ({_names(nodes)})"
    if edges:
        s += f" and {G.number_of_edges()} edges: {_edges(G, unit) or 'none'}"
    return s + "."


def _edit_sentences(edit: dict[str, Any]) -> list[str]:
    kind = edit.get("kind", "none")
    out: list[str] = []
    for d in edit.get("details") or []:
        if kind == "patch":
            op = {"swap": "two patches of the picture are swapped", "flip": "one patch of the picture is mirrored"}.get(
                d.get("op"), "a patch of the picture is moved")
            out.append(f"In the picture {op}; I read it as originally drawn, so the nodes in the moved patch "
                       f"({_names(d.get('nodes_in_patches') or [])}) keep their own links.")
        elif kind == "composition":
            cross = [f"{a}-{b}" for a, b in d.get("cross_edges") or []]
            out.append(f"The graph is split over two parts; joining them along the cross links ({', '.join(cross) or 'none'}) "
                       "gives the whole graph.")
        elif kind == "focus":
            out.append(f"Only the largest connected {d.get('color', 'highlighted')} group counts: "
                       f"{_names(d.get('target') or [])}; smaller groups of that colour are distractors.")
        elif kind == "recolor":
            scope = "only those nodes are asked about" if d.get("mode") == "only" else "those nodes are left out"
            out.append(f"The nodes strictly {d.get('direction', '?')} of {d.get('anchor', '?')} are drawn in "
                       f"{d.get('new_color', '?')} ({_names(d.get('recoloured') or [])}), and {scope}.")
    if not out:
        out.append("The picture shows the graph as it is, with no edit to undo.")
    return out


# ------------------------------------------------------------------------------------------------ per task


def _sd(gs: list[nx.Graph], q: dict[str, Any], gold: Gold) -> list[str]:
    G, s, t = gs[0], q["source"], q["target"]
    out = [_graph_facts(G, unit=" km")]
    if gold.value is None:
        comp = sorted(nx.node_connected_component(G, s), key=str)
        return out + [f"{t} cannot be reached from {s}: the flights from {s} only reach {_names(comp)}, so there is no "
                      "route and no distance."]
    dist = nx.single_source_dijkstra_path_length(G, s, weight=lambda u, v, d: d.get("weight", 1))
    path = gold.answer["Path"]
    legs, total = [], 0
    for a, b in zip(path, path[1:], strict=False):
        total += _w(G, a, b)
        legs.append(f"{a} to {b} {_n(_w(G, a, b))} km (running total {_n(total)} km)")
    out.append(f"Following the cheapest flights from {s} (Dijkstra), the shortest distances from {s} are: "
               + "; ".join(f"{v} {_n(dist[v])} km" for v in sorted(dist, key=str)) + ".")
    out.append(f"The shortest route is {' -> '.join(map(str, path))}: " + "; ".join(legs) + ".")
    out.append(f"So the shortest distance from {s} to {t} is {_n(gold.answer['Distance'])} km, and no other route is "
               "shorter because every node's distance above is the least over all its incoming flights.")
    return out


def _diam(gs: list[nx.Graph], q: dict[str, Any], gold: Gold) -> list[str]:
    G = gs[0]
    ecc = nx.eccentricity(G)
    path = gold.answer["Path"]
    return [
        _graph_facts(G),
        "Running a breadth-first search from every node gives each node's largest hop distance (eccentricity): "
        + "; ".join(f"{v} {ecc[v]}" for v in sorted(ecc, key=str)) + ".",
        f"The largest of these is {gold.answer['Diameter']}, reached between {path[0]} and {path[-1]}; one shortest "
        f"path between them is {' - '.join(map(str, path))} with {len(path) - 1} edges.",
        f"So the diameter is {gold.answer['Diameter']}.",
    ]


def _cn(gs: list[nx.Graph], q: dict[str, Any], gold: Gold) -> list[str]:
    G, s, t = gs[0], q["source"], q["target"]
    ns, nt = sorted(G[s], key=str), sorted(G[t], key=str)
    common = gold.answer["CommonNeighbors"]
    return [
        _graph_facts(G),
        f"The neighbours of {s} are {_names(ns)}.",
        f"The neighbours of {t} are {_names(nt)}.",
        f"The nodes in both lists, other than {s} and {t} themselves, are {_names(common)}: "
        f"{len(common)} common neighbour(s).",
    ]


def _outside_reason(G: nx.Graph, chosen: Sequence[Hashable], adjacent: bool) -> str:
    """For each node outside `chosen`: a member it is (not) adjacent to, which keeps it out."""
    parts = []
    inside = set(chosen)
    for v in sorted_labels(G):
        if v in inside:
            continue
        hit = next((c for c in chosen if G.has_edge(v, c) == adjacent), None)
        if hit is not None:
            parts.append(f"{v} ({'linked to' if adjacent else 'not linked to'} {hit})")
    return "; ".join(parts) or "none"


def _mcp(gs: list[nx.Graph], q: dict[str, Any], gold: Gold) -> list[str]:
    G, clique = gs[0], gold.answer["Clique"]
    pairs = [f"{a}-{b}" for i, a in enumerate(clique) for b in clique[i + 1:]]
    return [
        _graph_facts(G),
        f"The nodes {_names(clique)} are pairwise linked: {', '.join(pairs) or 'a single node'} are all edges.",
        "No node outside can join them, each misses a member: " + _outside_reason(G, clique, adjacent=False) + ".",
        f"An exhaustive search over the node subsets finds no clique of {len(clique) + 1} nodes, so the maximum "
        f"clique has {len(clique)} nodes.",
    ]


def _mis(gs: list[nx.Graph], q: dict[str, Any], gold: Gold) -> list[str]:
    G, chosen = gs[0], gold.answer["IndependentSet"]
    return [
        _graph_facts(G),
        f"The nodes {_names(chosen)} are pairwise unlinked: no edge above joins two of them.",
        "Every other node is linked to one of them, so none can be added: "
        + _outside_reason(G, chosen, adjacent=True) + ".",
        f"An exhaustive search finds no independent set of {len(chosen) + 1} nodes, so the maximum independent set "
        f"has {len(chosen)} nodes.",
    ]


def _mvc(gs: list[nx.Graph], q: dict[str, Any], gold: Gold) -> list[str]:
    G, cover = gs[0], gold.answer["Cover"]
    rest = [v for v in sorted_labels(G) if v not in set(cover)]
    return [
        _graph_facts(G),
        f"Choosing {_names(cover)} touches every edge: each edge above has at least one end among them.",
        f"The nodes left out ({_names(rest)}) are pairwise unlinked, an independent set of {len(rest)} nodes.",
        f"A maximum independent set has {len(rest)} nodes (exhaustive search), and a cover's complement is always "
        f"independent, so no cover has fewer than {G.number_of_nodes()} - {len(rest)} = {len(cover)} nodes.",
    ]


def _col(gs: list[nx.Graph], q: dict[str, Any], gold: Gold) -> list[str]:
    G, colouring, k = gs[0], gold.answer["Coloring"], gold.answer["NumColors"]
    classes: dict[Any, list[str]] = {}
    for v, c in sorted(colouring.items(), key=lambda x: (x[1], str(x[0]))):
        classes.setdefault(c, []).append(str(v))
    out = [
        _graph_facts(G),
        "A colouring with " + str(k) + " colours: "
        + "; ".join(f"colour {c}: {_names(vs)}" for c, vs in sorted(classes.items())) + ".",
        "No edge above joins two nodes of the same colour, so it is a proper colouring.",
    ]
    clique = max_clique(G)
    if len(clique) == k:
        out.append(f"The nodes {_names(clique)} are pairwise linked, so they need {k} different colours: "
                   f"fewer than {k} is impossible.")
    else:
        out.append(f"An exhaustive search shows that {k - 1} colours cannot colour the graph properly, so "
                   f"{k} is the minimum.")
    return out + [f"The chromatic number is {k}."]


def _cyc(gs: list[nx.Graph], q: dict[str, Any], gold: Gold) -> list[str]:
    G = gs[0]
    if gold.answer["HasCycle"] == "NO":
        comps = [sorted(c, key=str) for c in nx.connected_components(G)]
        counts = "; ".join(f"{_names(c)}: {len(c)} nodes, {G.subgraph(c).number_of_edges()} edges"
                           for c in sorted(comps, key=lambda c: str(c[0])))
        return [_graph_facts(G), f"Each connected part has one edge fewer than its nodes ({counts}), so every part "
                                 "is a tree and the graph has no cycle."]
    cyc = gold.answer["Cycle"]
    legs = [f"{a}-{b}" for a, b in zip(cyc, cyc[1:], strict=False)]
    return [
        _graph_facts(G),
        f"The route {' -> '.join(map(str, cyc))} is a cycle: its edges {', '.join(legs)} all exist and it visits "
        f"{len(cyc) - 1} distinct nodes.",
        f"An exhaustive search over the graph's blocks finds no simple cycle through more than {len(cyc) - 1} nodes, "
        f"so a longest cycle has {len(cyc) - 1} nodes.",
    ]


def _tsp(gs: list[nx.Graph], q: dict[str, Any], gold: Gold) -> list[str]:
    G = gs[0]
    out = [_graph_facts(G, "The trip", edges=False) + " Every two of them are linked; the table gives the distances."]
    if gold.value is None:
        return out + ["No round trip through every airport exists."]
    tour = gold.answer["Tour"]
    legs, total = [], 0
    for a, b in zip(tour, tour[1:], strict=False):
        total += _w(G, a, b)
        legs.append(f"{a} to {b} {_n(_w(G, a, b))} km (running total {_n(total)} km)")
    return out + [
        "The tour legs: " + "; ".join(legs) + ".",
        f"It visits every airport once and returns to {tour[0]}, with total length {_n(total)} km.",
        f"An exact search over all tours finds none shorter than {_n(total)} km.",
    ]


def _ged(gs: list[nx.Graph], q: dict[str, Any], gold: Gold) -> list[str]:
    G1, G2 = gs
    mapping: dict[str, str | None] = gold.answer["Mapping"]
    relabel = [f"{u} ({node_label(G1.nodes[u])}) to {v} ({node_label(G2.nodes[v])})" for u, v in mapping.items()
               if v is not None and node_label(G1.nodes[u]) != node_label(G2.nodes[v])]
    deleted = [u for u, v in mapping.items() if v is None]
    images = {v for v in mapping.values() if v is not None}
    inserted = [v for v in sorted_labels(G2) if v not in images]
    kept = [(a, b) for a, b in G1.edges if mapping.get(a) and mapping.get(b) and G2.has_edge(mapping[a], mapping[b])]
    del_edges = [f"{a}-{b}" for a, b in G1.edges if (a, b) not in kept]
    covered = {frozenset((mapping[a], mapping[b])) for a, b in kept}
    ins_edges = [f"{x}-{y}" for x, y in G2.edges if frozenset((x, y)) not in covered]
    total = len(relabel) + len(deleted) + len(inserted) + len(del_edges) + len(ins_edges)
    return [
        _graph_facts(G1, "The first molecule"),
        _graph_facts(G2, "The second molecule"),
        "Matching the atoms: " + "; ".join(f"{u} -> {v if v is not None else 'deleted'}" for u, v in mapping.items())
        + ".",
        f"This costs {len(relabel)} element change(s) ({'; '.join(relabel) or 'none'}), {len(deleted)} atom "
        f"deletion(s) ({_names(deleted)}), {len(inserted)} atom insertion(s) ({_names(inserted)}), "
        f"{len(del_edges)} bond deletion(s) ({', '.join(del_edges) or 'none'}) and {len(ins_edges)} bond "
        f"insertion(s) ({', '.join(ins_edges) or 'none'}): {total} in total.",
        f"An exact search over all matchings finds none cheaper, so the graph edit distance is "
        f"{_n(gold.answer['Distance'])}.",
    ]


def _mcs(gs: list[nx.Graph], q: dict[str, Any], gold: Gold) -> list[str]:
    G1, G2 = gs
    mapping: dict[str, str] = gold.answer["Mapping"]
    keys = list(mapping)
    bonds = [f"{a}-{b}" for i, a in enumerate(keys) for b in keys[i + 1:] if G1.has_edge(a, b)]
    return [
        _graph_facts(G1, "The first molecule"),
        _graph_facts(G2, "The second molecule"),
        "Matching the atoms one to one: " + "; ".join(f"{u} -> {v}" for u, v in mapping.items()) + ".",
        f"Among the matched atoms of the first molecule the bonds are {', '.join(bonds) or 'none'}, and exactly the "
        "matched images of these are bonded in the second molecule, so both sides induce the same subgraph.",
        f"An exact branch-and-bound search finds no common induced subgraph with {len(mapping) + 1} atoms, so the "
        f"maximum common subgraph has {len(mapping)} atoms.",
    ]


CERTIFICATES: dict[str, Callable[[list[nx.Graph], dict[str, Any], Gold], list[str]]] = {
    "SD": _sd, "DIAM": _diam, "CN": _cn, "MCP": _mcp, "MIS": _mis, "MVC": _mvc, "COL": _col, "CYC": _cyc,
    "TSP": _tsp, "GED": _ged, "MCS": _mcs,
}


def reference_reasoning(instance: Instance) -> str:
    if instance.benchmark != "graphverse" or instance.task not in CERTIFICATES:
        raise ValueError(f"{instance.instance_id}: no reference solution for {instance.benchmark} {instance.task}")
    data = instance.data
    graphs = [from_node_link(a) for a in data["asked"]]
    sentences = _edit_sentences(data.get("edit") or {})
    sentences += CERTIFICATES[instance.task](graphs, data.get("query") or {}, instance.gold)
    return " ".join(sentences)


def reference_solution(instance: Instance) -> str:
    """The reference completion: the certificate as reasoning, the gold answer as the final answer."""
    return format_response(instance.gold.answer, reference_reasoning(instance))
