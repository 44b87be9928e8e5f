"""The judge card's generator: labelled responses per instance, one family per construction.

What a response states is decided here from the graph the question is asked on (the evidence's facts), the
gold answer and a wrong answer the caller passes (the exact verifier called it wrong), never from the
judge's reader: the claims are built with networkx and written by `judge.card_notation`. Each family's
property is in `judge.card` (`FAMILIES`). A case is one response; `base` names the case it is compared to
(families that add something to a response, or must cost against it).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import networkx as nx

from evalcore.evidence import Evidence
from judge.card_heldout import HELDOUT, render_heldout, transcription_heldout
from judge.card_notation import (
    LANGUAGES,
    STRUCTURED,
    UNSEEN,
    Chain,
    Claim,
    Coloring,
    Dist,
    Mapping,
    Nbrs,
    Prop,
    num,
    render,
)

CAP = 300  # claims per pooled / all-pairs family: enough to cover every small testmini graph


@dataclass(frozen=True)
class CardInput:
    instance_id: str
    task: str
    evidence: Evidence
    gold: dict[str, Any]
    gold_value: float | None
    wrong: dict[str, Any]  # an answer the exact verifier calls wrong


@dataclass(frozen=True)
class Case:
    family: str
    instance_id: str
    task: str
    text: str
    right: bool  # the final answer is the gold one (else the wrong one)
    base: str | None = None  # case_id of the response this one is compared to

    @property
    def case_id(self) -> str:
        return f"{self.family}|{self.instance_id}"


def envelope(reasoning: str, answer: dict[str, Any]) -> str:
    return (f"<root><reasoning>\n{reasoning}\n</reasoning>"
            f"<final_answer>{json.dumps(answer, ensure_ascii=False)}</final_answer></root>")


# ------------------------------------------------------------------------------------------------ claims


class Graphs:
    """The instance's graphs as the card reads them: the asked graph(s) and the drawn ones."""

    def __init__(self, inp: CardInput) -> None:
        f = inp.evidence.facts
        self.inp, self.task, self.weighted, self.paired = inp, inp.task, f.weighted, f.paired
        self.asked = [nx.Graph(g.asked) for g in f.graphs]
        self.drawn = [nx.Graph(g.graph) for g in f.graphs]
        self.colors = [dict(g.drawn_color) for g in f.graphs]
        self.g = self.asked[0]
        self.query = dict(f.query or {})

    def w(self, a: str, b: str) -> float:
        return float(self.g.edges[a, b].get("weight", 1)) if self.weighted else 1.0

    def chain(self, nodes: list[str], what: str = "path") -> Chain | None:
        nodes = [str(x) for x in nodes]
        if len(nodes) < 2 or any(not self.g.has_edge(a, b) for a, b in itertools.pairwise(nodes)):
            return None
        legs = tuple(self.w(a, b) for a, b in itertools.pairwise(nodes)) if self.weighted else None
        return Chain(tuple(nodes), legs, what)

    def non_edges(self, k: int) -> list[tuple[str, str]]:
        """Pairs adjacent neither in the asked nor in the drawn graph (a true negative either way)."""
        out = []
        for a, b in itertools.combinations(sorted(self.g), 2):
            if not self.g.has_edge(a, b) and not self.drawn[0].has_edge(a, b):
                out.append((a, b))
                if len(out) >= k:
                    break
        return out


def _shortest_odd_cycle(g: nx.Graph) -> list[str] | None:
    for bound in range(3, min(len(g), 11) + 1, 2):
        for cyc in nx.simple_cycles(g, length_bound=bound):
            if len(cyc) % 2 == 1:
                return [str(x) for x in cyc]
    return None


def derivation(G: Graphs) -> list[Claim]:  # noqa: N803
    """A complete, correct derivation of the gold answer (empty where the gold has nothing to derive)."""
    t, gold, value = G.task, G.inp.gold, G.inp.gold_value
    out: list[Claim | None] = []
    if t in ("SD", "DIAM"):
        p = [str(x) for x in gold.get("Path") or []]
        out = [G.chain(p), Dist(p[0], p[-1], float(value))] if len(p) > 1 and value is not None else []
    elif t == "CN":
        s, q = str(G.query.get("source")), str(G.query.get("target"))
        if s in G.g and q in G.g:
            common = tuple(sorted(str(x) for x in gold.get("CommonNeighbors") or []))
            out = [Nbrs(s, tuple(sorted(G.g[s]))), Nbrs(q, tuple(sorted(G.g[q]))), Prop(common, "common", (s, q))]
    elif t in ("TSP", "CYC"):
        p = [str(x) for x in gold.get("Tour") or gold.get("Cycle") or []]
        out = [G.chain(p, "tour" if t == "TSP" else "cycle")] if len(p) > 3 else []
    elif t in ("MCP", "MIS", "MVC"):
        key = {"MCP": "Clique", "MIS": "IndependentSet", "MVC": "Cover"}[t]
        members = tuple(sorted(str(x) for x in gold.get(key) or []))
        if t == "MVC":
            rest = tuple(sorted(set(G.g) - set(members)))
            out = ([Prop(rest, "independent set")] if len(rest) > 1 else []) + [Prop(members, "vertex cover")]
        elif members:
            out = [Prop(members, "clique" if t == "MCP" else "independent set")]
    elif t == "COL":
        col = {str(n): int(c) for n, c in (gold.get("Coloring") or {}).items()}
        k = int(gold.get("NumColors") or len(set(col.values())) or 0)
        if col:
            out = [Coloring(tuple(sorted(col.items())), k)]
            clique = max(nx.find_cliques(G.g), key=len, default=[])
            if len(clique) == k and k > 1:
                out.append(Prop(tuple(sorted(str(x) for x in clique)), "clique"))
            elif k == 3:
                odd = _shortest_odd_cycle(G.g)
                out.append(G.chain([*odd, odd[0]], "cycle") if odd else None)
    elif t in ("GED", "MCS"):
        pairs = tuple(sorted((str(a), str(x)) for a, x in (gold.get("Mapping") or {}).items() if x is not None))
        if pairs and value is not None:
            out = [Mapping(pairs, "cost" if t == "GED" else "size", float(value))]
    return [c for c in out if c is not None]


def transcription(G: Graphs) -> list[str]:  # noqa: N803
    """True readings of every drawn edge, in four styles a model writes before it reasons."""
    lines: list[str] = []
    for gi, d in enumerate(G.drawn):
        tag = f"In graph {gi + 1}, " if G.paired else ""
        if G.paired:
            lines.append(f"Graph {gi + 1}:")
        for a, b in sorted(d.edges):
            w = d.edges[a, b].get("weight")
            lines.append(f"{tag}{a}--{b}" + (f", weight {num(w)}" if G.weighted and w is not None else ""))
        for a, b in sorted(d.edges):
            w = d.edges[a, b].get("weight")
            lines.append(f"{tag}the picture shows the link {a} – {b}"
                         + (f" ({num(w)})" if G.weighted and w is not None else "") + ".")
        lines += [f"{tag}{n}: {', '.join(sorted(d[n]))}" for n in sorted(d) if d[n]]
        lines += ["", "| Node | Adjacent nodes |", "|---|---|"] + [
            f"| {n} | {', '.join(sorted(d[n]))} |" for n in sorted(d)] + [""]
    return lines


def colours(G: Graphs) -> list[str]:  # noqa: N803
    return [f"{n} is drawn in {c}." for gi, cs in enumerate(G.colors) for n, c in sorted(cs.items())][:40]


def pooled(G: Graphs) -> list[Claim]:  # noqa: N803
    """Many small true claims about many objects, whose atoms could be reassembled into the optimum's. None
    of them is itself a candidate solution: no set of the optimum's size, no cycle of the optimal length, no
    path from a query node (SD) or between a diametral pair (DIAM), so a judge owes them no credit."""
    g, t, v = G.g, G.task, G.inp.gold_value
    opt = int(v) if v is not None else None
    tris = [tuple(sorted(c)) for c in nx.enumerate_all_cliques(g) if len(c) == 3][:CAP]
    if t in ("MCP", "COL"):
        size = opt if t == "MCP" else int(G.inp.gold.get("NumColors") or 0)  # COL: a clique of chi is its witness
        small = ([Prop(c, "clique") for c in tris] if size is None or size > 3 else []) + (
            [Prop(tuple(sorted(e)), "clique") for e in g.edges] if size is None or size > 2 else [])
        return small[:CAP]
    if t == "MIS":
        return [Prop((a, b), "independent set") for a, b in G.non_edges(CAP)] if opt is None or opt > 2 else []
    if t == "MVC":
        nodes = tuple(sorted(g))
        covers = [nodes] + [tuple(x for x in nodes if x != u) for u in nodes]
        return [Prop(c, "vertex cover") for c in covers if opt is None or len(c) > opt]
    if t == "CN":
        s, q = str(G.query.get("source")), str(G.query.get("target"))
        return [Nbrs(x, tuple(sorted(g[x]))) for x in sorted(g) if x not in (s, q) and g[x]]
    if t in ("SD", "DIAM", "TSP", "CYC"):
        avoid: set[str] = set()
        if t == "SD":
            avoid = {str(G.query.get("source")), str(G.query.get("target"))}
        elif t == "DIAM":
            p = [str(x) for x in G.inp.gold.get("Path") or []]
            avoid = set(p[:1] + p[-1:])
        # DIAM: a path between ANY diametral pair answers the question; none is pooled
        diametral = _diametral_pairs(g) if t == "DIAM" else set()
        out: list[Claim] = [c for e in sorted(g.edges) if not set(e) & avoid and frozenset(e) not in diametral
                            and (c := G.chain(list(e))) is not None]
        for m in sorted(g):
            for a, b in itertools.combinations(sorted(g[m]), 2):
                if (len(out) < CAP and not {a, b} & avoid and frozenset((a, b)) not in diametral
                        and (c := G.chain([a, m, b])) is not None):
                    out.append(c)
        if t == "CYC" and (opt is None or opt > 3):
            out += [c for tri in tris if (c := G.chain([*tri, tri[0]], "cycle")) is not None]
        if t == "DIAM":
            out += [Dist(a, b, 1.0) for a, b in sorted(g.edges) if not {a, b} & avoid
                    and frozenset((a, b)) not in diametral]
        return out[: CAP * 2]
    return []


def _diametral_pairs(g: nx.Graph) -> set[frozenset]:
    """The node pairs at the diameter's (hop) distance within a component: each one's path is a right answer."""
    lengths = dict(nx.all_pairs_shortest_path_length(g))
    d = max((x for row in lengths.values() for x in row.values()), default=0)
    return {frozenset((a, b)) for a, row in lengths.items() for b, x in row.items() if a != b and x == d}


def all_pairs(G: Graphs) -> list[str]:  # noqa: N803
    if not G.paired or len(G.asked) < 2:
        return []
    pairs = [(a, x) for a in sorted(G.asked[0]) for x in sorted(G.asked[1])]
    return [f"{a} -> {x}" for a, x in pairs[: CAP * 2]]


def other_question(G: Graphs) -> list[Claim]:  # noqa: N803
    """A correct solution of a neighbouring question: another target, another pair, n-1 cities."""
    g, t, gold = G.g, G.task, G.inp.gold
    w = "weight" if G.weighted else None
    if t == "SD":
        s, q = str(G.query.get("source")), str(G.query.get("target"))
        on = set(str(x) for x in gold.get("Path") or [])
        if s not in g:
            return []
        dist, paths = nx.single_source_dijkstra(g, s, weight=w or (lambda a, b, d: 1))
        others = sorted((len(set(p) & on), -len(p), x) for x, p in paths.items() if x not in on and x != q)
        if not others:
            return []
        x = others[0][2]
        return [c for c in (G.chain(paths[x]), Dist(s, x, float(dist[x]))) if c is not None]
    if t == "DIAM":
        p = [str(x) for x in gold.get("Path") or []]
        ends = set(p[:1] + p[-1:])
        diametral = _diametral_pairs(g)  # a path between any of them answers the asked question
        best = None
        for a, b in itertools.combinations(sorted(g), 2):
            if a in ends or b in ends or frozenset((a, b)) in diametral or not nx.has_path(g, a, b):
                continue
            sp = nx.shortest_path(g, a, b)
            if best is None or len(sp) > len(best):
                best = sp
        return [G.chain(best), Dist(best[0], best[-1], float(len(best) - 1))] if best and len(best) > 1 else []
    if t == "CN":
        s, q = str(G.query.get("source")), str(G.query.get("target"))
        for a, b in itertools.combinations(sorted(x for x in g if x not in (s, q)), 2):
            common = tuple(sorted(set(g[a]) & set(g[b])))
            if common and not set(common) & {s, q}:  # the whole common set, none of it a query node
                return [Nbrs(a, tuple(sorted(g[a]))), Nbrs(b, tuple(sorted(g[b]))), Prop(common, "common", (a, b))]
        return []
    if t == "TSP":
        cities = sorted(g)
        rest = cities[:-1]
        if len(rest) < 3:
            return []
        if len(rest) <= 8:
            tours = ([rest[0], *perm, rest[0]] for perm in itertools.permutations(rest[1:]))
            best = min((c for p in tours if (c := G.chain(p, "tour")) is not None), key=lambda c: c.total, default=None)
        else:  # nearest neighbour: a true tour of the n-1 cities, with its true length
            tour, left = [rest[0]], set(rest[1:])
            while left:
                nxt = min((x for x in left if g.has_edge(tour[-1], x)), key=lambda x: G.w(tour[-1], x), default=None)
                if nxt is None:
                    return []
                tour.append(nxt)
                left.discard(nxt)
            best = G.chain([*tour, tour[0]], "tour")
        return [best] if best is not None else []
    return []


def negatives(G: Graphs) -> list[str]:  # noqa: N803
    if G.paired:
        out = []
        for gi, g in enumerate(G.asked[:2]):
            pairs = [(a, b) for a, b in itertools.combinations(sorted(g), 2)
                     if not g.has_edge(a, b) and not G.drawn[gi].has_edge(a, b)][:3]
            out += [f"In graph {gi + 1} there is no bond between {a} and {b}." for a, b in pairs]
        return out
    return [s for a, b in G.non_edges(4) for s in (f"There is no edge {a}–{b}.", f"{a} and {b} are not adjacent.")]


def rejected(G: Graphs) -> list[str]:  # noqa: N803
    """Candidates and attempts the response itself rejects, each stated truly."""
    g, t, gold, v = G.g, G.task, G.inp.gold, G.inp.gold_value
    w = "weight" if G.weighted else None
    if t == "SD" and v is not None:
        s, q = str(G.query.get("source")), str(G.query.get("target"))
        for p in itertools.islice(nx.shortest_simple_paths(g, s, q, weight=w), 12):
            c = G.chain(p)
            if c is not None and c.total > float(v) + 1e-9:
                return [f"Candidate {' -> '.join(c.nodes)} = {num(c.total)} is longer than {num(v)}: rejected."]
        return []
    if t == "TSP" and v is not None:
        p = [str(x) for x in gold.get("Tour") or []]
        if len(p) > 4:
            alt = G.chain([p[0], p[2], p[1], *p[3:]], "tour")
            if alt is not None and alt.total > float(v) + 1e-9:
                return [f"Candidate tour {' -> '.join(alt.nodes)} = {num(alt.total)} is longer: rejected."]
        return []
    if t == "DIAM" and v is not None:
        a, b = sorted(g.edges)[0]
        return [f"The pair {a}, {b} is only 1 apart, far below the diameter: rejected."]
    if t == "CYC":
        tri = next((c for c in nx.enumerate_all_cliques(g) if len(c) == 3), None)
        if tri and len(gold.get("Cycle") or []) > 4:
            return [f"The cycle {' -> '.join([*tri, tri[0]])} has only 3 edges; a longer one exists, so it is rejected."]
        return []
    if t == "CN":
        s, q = str(G.query.get("source")), str(G.query.get("target"))
        only = sorted(set(g[s]) - set(g[q]) - {q}) if s in g and q in g else []
        return [f"{x} is adjacent to {s} but not to {q}, so {x} is not a common neighbour." for x in only[:3]]
    if t in ("MCP", "MIS", "MVC"):
        key = {"MCP": "Clique", "MIS": "IndependentSet", "MVC": "Cover"}[t]
        members = sorted(str(x) for x in gold.get(key) or [])
        if t == "MVC":
            for m in members:
                out = [u for u in g[m] if u not in members]
                if out:
                    rest = [x for x in members if x != m]
                    return [f"{{{', '.join(rest)}}} is not a vertex cover ({m}–{out[0]} is uncovered): rejected."]
            return []
        for x in sorted(set(g) - set(members)):
            bad = [m for m in members if g.has_edge(m, x) == (t == "MIS")]
            if bad:
                why = f"{bad[0]}–{x} is {'an edge' if t == 'MIS' else 'missing'}"
                name = "an independent set" if t == "MIS" else "a clique"
                return [f"{{{', '.join(sorted([bad[0], x]))}}} is not {name} ({why}): rejected."]
        return []
    if t == "COL" and g.number_of_edges():
        a, b = sorted(g.edges)[0]
        return [f"A first attempt gave c({a}) = 1 and c({b}) = 1; that fails because {a}–{b} is an edge, "
                "so the attempt is discarded."]
    if t in ("GED", "MCS"):
        pairs = sorted((str(a), str(x)) for a, x in (gold.get("Mapping") or {}).items() if x is not None)
        if len(pairs) > 1:
            (a, x), (b, y) = pairs[:2]
            return [f"A first attempt mapped {a} to {y} and {b} to {x}; it was worse, so it is rejected."]
    return []


def invented(G: Graphs) -> list[Claim]:  # noqa: N803
    """False derived steps: a path through a missing edge, a wrong distance, a false set."""
    out: list[Claim] = []
    if G.paired:
        pairs = sorted((str(a), str(x)) for a, x in (G.inp.gold.get("Mapping") or {}).items() if x is not None)
        ghosts = [f"Q{i}" for i in range(7, 9) if f"Q{i}" not in G.asked[0] and f"Q{i}" not in G.asked[1]]
        if pairs and ghosts:
            out.append(Mapping(tuple((gh, pairs[i % len(pairs)][1]) for i, gh in enumerate(ghosts)),
                               "cost" if G.task == "GED" else "size", float(G.inp.gold_value or 0) + 3))
        return out
    ne = G.non_edges(2)
    for a, b in ne:
        out.append(Chain((a, b), (7.0,) if G.weighted else None))
    if ne:
        a, b = ne[0]
        d = nx.shortest_path_length(G.g, a, b, weight="weight" if G.weighted else None) if nx.has_path(G.g, a, b) else 0
        out.append(Dist(a, b, float(d) + 1))
        if G.task in ("MCP", "COL"):
            out.append(Prop((a, b), "clique"))
    return out


def misread(G: Graphs, claims: list[Claim]) -> list[Claim]:  # noqa: N803
    """The derivation with every leg weight misread (+7), totals from the misread legs."""
    return [Chain(c.nodes, tuple(w + 7 for w in c.legs), c.what) if isinstance(c, Chain) and c.legs else c
            for c in claims if not isinstance(c, Dist)]


def pot_program(G: Graphs) -> str:  # noqa: N803
    """A program that only transcribes the input and calls a library (derives nothing in its text)."""
    rows = []
    for gi, g in enumerate(G.asked[:2]):
        name = f"G{gi + 1}"
        edges = [(a, b, g.edges[a, b].get("weight", 1)) if G.weighted else (a, b) for a, b in sorted(g.edges)]
        rows += [f"{name} = nx.Graph()", f"{name}.add_nodes_from({sorted(g)!r})",
                 f"{name}.add_{'weighted_' if G.weighted else ''}edges_from({edges!r})"]
    call = {"SD": "nx.shortest_path(G1, {s!r}, {q!r}, weight='weight')", "DIAM": "nx.diameter(G1)",
            "CN": "sorted(nx.common_neighbors(G1, {s!r}, {q!r}))", "MCP": "max(nx.find_cliques(G1), key=len)",
            "GED": "nx.graph_edit_distance(G1, G2)"}.get(G.task, "solve(G1)")
    call = call.format(s=str(G.query.get("source")), q=str(G.query.get("target")))
    return "```python\nimport networkx as nx\n" + "\n".join(rows) + f"\nprint({call})\n```"


# ------------------------------------------------------------------------------------------------ cases


def arrows(claims: list[Claim]) -> str:
    return render(claims, "arrows")


def cases_for(inp: CardInput) -> Iterator[Case]:
    """Every family's cases on one instance (families without material here yield nothing)."""
    G = Graphs(inp)  # noqa: N806
    right, wrong = inp.gold, inp.wrong
    iid, task = inp.instance_id, inp.task

    def case(family: str, reasoning: str, is_right: bool, base: str | None = None) -> Case:
        return Case(family, iid, task, envelope(reasoning, right if is_right else wrong), is_right,
                    f"{base}|{iid}" if base else None)

    yield case("bare_right", "", True)
    yield case("bare_wrong", "", False)
    claims = derivation(G)
    trans, pool, pairs, other = transcription(G), pooled(G), all_pairs(G), other_question(G)
    yield case("wrong_transcription", "\n".join(trans), False)
    if pool:
        yield case("wrong_pooled", arrows(pool), False)
    if pairs:
        yield case("wrong_all_pairs", "\n".join(pairs), False)
    if other:
        yield case("wrong_other_question", arrows(other), False)
    yield case("wrong_mix", "\n".join([*trans, arrows(pool), *pairs, arrows(other)]), False)
    yield case("wrong_transcription_heldout", transcription_heldout(G.drawn, G.weighted), False)
    pot = pot_program(G)
    yield case("pot_right", pot, True)
    yield case("pot_wrong", pot, False)
    if not claims:
        return
    for n in STRUCTURED:
        yield case(f"derivation:{n}", render(claims, n), True)
        yield case(f"derivation_wrong:{n}", render(claims, n), False)
    for lang in LANGUAGES:
        yield case(f"language:{lang}", render(claims, lang), True)
    for n in UNSEEN:
        yield case(f"unseen:{n}", render(claims, n), True)
    for n in HELDOUT:  # notations and languages held out of the issue and of the families above
        text_h = render_heldout(claims, n)
        yield case(f"heldout:{n}", text_h, True)
        yield case(f"heldout_wrong:{n}", text_h, False)
    base_r, base_w = "derivation:arrows", "derivation_wrong:arrows"
    text = arrows(claims)
    pads = {"facts": "\n".join([*trans, *colours(G)]), "negatives": "\n".join(negatives(G)),
            "rejected": "\n".join(rejected(G))}
    for name, pad in pads.items():
        if pad:
            yield case(f"pad_{name}", pad + "\n" + text, True, base_r)
            yield case(f"pad_{name}_wrong", text + "\n" + pad, False, base_w)
    inv = invented(G)
    if inv:
        yield case("invented_steps", text + "\n" + arrows(inv), True, base_r)
    if G.weighted and any(isinstance(c, Chain) and c.legs for c in claims):
        yield case("misread_legs", arrows(misread(G, claims)), True)
