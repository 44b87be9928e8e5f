"""COL: chromatic number with an optimal colouring. As in the paper, no recolouring edit: a colouring
question over pre-coloured nodes is not a natural formulation."""

from __future__ import annotations

import random
from collections.abc import Hashable, Sequence
from typing import Any

import networkx as nx

from evalcore.coerce import as_int, get_key
from evalcore.graph_solvers import chromatic_number
from evalcore.schema import Gold, ParseError, Verdict
from gie.solvers import bitmasks, sorted_labels
from gie.tasks._sources import SOCIAL, mix
from gie.tasks.answer_parsing import COLOURS, Bare, answer_number, bad_value, colouring_map, missing_key
from gie.tasks.config import TaskConfig
from gie.tasks.heuristic_graph import heuristic_graph
from gie.tasks.scenarios import Nouns
from gie.tasks.spec import build_spec
from gie.tasks.verdicts import Resolver, infeasible, objective, quoted, sorted_edges, stated_value


def _valid(g: nx.Graph, q: dict[str, Any]) -> bool:
    return g.number_of_nodes() >= 3 and g.number_of_edges() > 0


def _text(n: Nouns, q: dict[str, Any]) -> str:
    return (f"Give every {n.node} a colour number (1, 2, 3, ...) so that any two directly linked {n.nodes} "
            f"get different numbers, using as few numbers as possible. (These numbers have nothing to do "
            f"with the fill colours in the picture.)")


ANSWER_EXAMPLE: dict[str, Any] = {"NumColors": 2, "Coloring": {"AAA": 1, "BBB": 2, "CCC": 1}}
ANSWER_INSTRUCTION = (
    "Coloring maps every node name to a colour number 1..k so that adjacent nodes differ, using as "
    "few colours as possible; NumColors is k."
)


# ------------------------------------------------------------------------------------------------ exact solver


def chromatic(G: nx.Graph) -> tuple[int, dict[Hashable, int]]:
    """Chromatic number and an optimal colouring {label: colour 1..k}, via NPHardEval4V's exact solver
    (it numbers vertices 1..N, so labels are relabelled in sorted order and back)."""
    labels, _ = bitmasks(G)
    index = {v: i + 1 for i, v in enumerate(labels)}
    edges = sorted({tuple(sorted((index[u], index[v]))) for u, v in G.edges if u != v})
    k, colouring = chromatic_number(len(labels), edges)  # type: ignore[arg-type]
    return k, {labels[i - 1]: c + 1 for i, c in sorted(colouring.items())}


# ------------------------------------------------------------------------------------------------ answer


_COLORING_KEYS = ("Coloring", "Colouring", "Colors", "Colours", "VertexColors", "VertexColours")
_NUM_COLOR_KEYS = ("NumColors", "NumColours", "NumberOfColors", "NumberOfColours", "ColorsUsed",
                   "ChromaticNumber")


def parse(obj: dict[str, Any]) -> dict[str, Any] | ParseError:
    has_k, raw_k = get_key(obj, *_NUM_COLOR_KEYS)
    has_c, raw_c = get_key(obj, *_COLORING_KEYS)
    if not has_c:
        return missing_key("Coloring")
    # The colouring is the answer; NumColors may be left out and only sets value_consistent.
    k = None if not has_k or raw_k is None else as_int(answer_number(raw_k, COLOURS))
    if has_k and raw_k is not None and k is None:
        return bad_value("NumColors", raw_k)
    colouring = colouring_map(raw_c)
    return colouring if isinstance(colouring, ParseError) else {"NumColors": k, "Coloring": colouring}


def solve(graphs: Sequence[nx.Graph], query: dict[str, Any]) -> Gold:
    k, colouring = chromatic(graphs[0])
    return Gold(answer={"NumColors": k, "Coloring": colouring}, value=float(k))


def verify(graphs: Sequence[nx.Graph], query: dict[str, Any], gold: Gold, ans: dict[str, Any]) -> Verdict:
    G = graphs[0]
    colouring: dict[str, str] = ans["Coloring"]
    nodes, why = Resolver(G).resolve(list(colouring), "Coloring")
    if why:
        return infeasible(why)
    colour = {v: c for v, c in zip(nodes, colouring.values(), strict=True)}
    missed = sorted(set(G.nodes) - set(colour), key=str)
    if missed:
        return infeasible(f"no colour for {quoted(missed)}")
    for a, b in sorted_edges(G):
        if colour[a] == colour[b]:
            return infeasible(f"adjacent {str(a)!r} and {str(b)!r} share colour {colour[a]!r}")
    used = len(set(colour.values()))
    v = objective(used, gold.value, "min", "the number of colours", "the chromatic number")
    return stated_value(v, ans["NumColors"], used, "NumColors", "the number of colours the colouring uses")


def heuristic(graphs: Sequence[nx.Graph], query: dict[str, Any]) -> dict[str, Any]:
    G, labels = heuristic_graph(graphs)
    if not labels:
        return {"NumColors": 0, "Coloring": {}}
    found = nx.greedy_color(G, strategy="saturation_largest_first")
    colouring = {v: found[v] + 1 for v in labels}
    return {"NumColors": len(set(colouring.values())), "Coloring": colouring}


def random_answer(graphs: Sequence[nx.Graph], query: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    labels = sorted_labels(graphs[0])
    n = len(labels)
    if n == 0:
        return {"NumColors": 0, "Coloring": {}}
    k = rng.randint(1, max(1, n))
    colouring = {v: rng.randint(1, k) for v in labels}
    return {"NumColors": len(set(colouring.values())), "Coloring": colouring}


CONFIG = TaskConfig(
    name="COL",
    sources=mix((SOCIAL, 0.35), ("nci-molecules", 0.25), ("us-airports", 0.2), ("wikidata-costar", 0.2)),
    task_text=_text,
    valid=_valid,
    solve=solve,
    parse=parse,
    verify=verify,
    heuristic=heuristic,
    random_answer=random_answer,
    answer_example=ANSWER_EXAMPLE,
    answer_instruction=ANSWER_INSTRUCTION,
    bare=Bare(number="NumColors", units=COLOURS),
)
TASK = build_spec(CONFIG)
