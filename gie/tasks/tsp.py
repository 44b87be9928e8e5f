"""TSP as in the paper: the sampled airports form a complete graph, drawn with the pairwise great-circle
distances in a table in the image; the question asks for the shortest round trip through all of them.
TSP takes only the recolouring edit (besides none): patch, composition and focus would let a model read
the answer off the distance table without looking at the graph (the paper's appendix A.2)."""

from __future__ import annotations

import random
from collections.abc import Hashable, Sequence
from typing import Any

import networkx as nx

from gie import solvers
from gie.tasks.answer_parsing import NONE_WORDS, answer_number, bad_value, is_word, missing_key, node_names
from gie.tasks.config import TaskConfig
from gie.tasks.heuristic_graph import heuristic_graph
from gie.tasks.scenarios import Nouns
from gie.tasks.spec import build_spec
from gie.tasks.verdicts import (
    Resolver,
    close,
    correct,
    infeasible,
    missing_edge,
    num_str,
    objective,
    open_cycle,
    quoted,
    wrong,
)
from nphe4v.core.coerce import as_number, get_key
from nphe4v.core.schema import Gold, ParseError, Verdict

TABLE_SENTENCE = (
    "Every two airports are joined by a thin line (any airport can be flown to from any other), and the "
    "table under the drawing gives the great-circle distance in kilometres between every two airports."
)


def _valid(g: nx.Graph, q: dict[str, Any]) -> bool:
    n = g.number_of_nodes()
    return n >= 3 and g.number_of_edges() == n * (n - 1) // 2


def _text(n: Nouns, q: dict[str, Any]) -> str:
    return (f"Plan a round trip that starts and ends at the same {n.node}, visits every {n.node} exactly "
            f"once, and has the smallest total distance.")


ANSWER_EXAMPLE: dict[str, Any] = {"Tour": ["AAA", "BBB", "CCC", "DDD", "AAA"], "Length": 42}
ANSWER_INSTRUCTION = (
    "Tour lists node names in visiting order, using only drawn edges, visiting every node once and "
    "ending at the starting node; Length is the total weight of the tour."
)


# ------------------------------------------------------------------------------------------------ answer


def parse(obj: dict[str, Any]) -> dict[str, Any] | ParseError:
    has_t, raw_t = get_key(obj, "Tour", "Route", "Cycle", "Path")
    has_l, raw_l = get_key(obj, "Length", "TotalLength", "TourLength", "Cost", "TotalCost", "Distance",
                         "TotalDistance", "TotalWeight")
    if not has_t:
        return missing_key("Tour")
    tour = node_names(raw_t, "Tour")
    if isinstance(tour, ParseError):
        return tour
    if not has_l:
        if tour:
            return missing_key("Length")
        return {"Tour": [], "Length": None}
    if is_word(raw_l, NONE_WORDS) or as_number(raw_l) == -1:
        length = None
    else:
        length = answer_number(raw_l)
        if length is None:
            return bad_value("Length", raw_l)
    return {"Tour": tour, "Length": length}


def solve(graphs: Sequence[nx.Graph], query: dict[str, Any]) -> Gold:
    length, tour = solvers.tsp(graphs[0])
    if length is None:
        return Gold(answer={"Tour": [], "Length": None}, value=None)
    return Gold(answer={"Tour": tour, "Length": length}, value=float(length))


def verify(graphs: Sequence[nx.Graph], query: dict[str, Any], gold: Gold, ans: dict[str, Any]) -> Verdict:
    G = graphs[0]
    names, stated = ans["Tour"], ans["Length"]
    if not names or stated is None:
        if names:
            return infeasible("states no tour exists but lists one")
        if gold.value is None:
            return correct("no tour exists")
        return wrong(f"claims no tour, but a tour of length {num_str(gold.value)} exists")
    res = Resolver(G)
    body, why = res.resolve(open_cycle(names, res), "Tour")
    if why:
        return infeasible(why)
    missed = sorted(set(G.nodes) - set(body), key=str)
    if missed:
        return infeasible(f"tour does not visit {quoted(missed)}")
    why = missing_edge(G, body, closed=True)
    if why:
        return infeasible(why)
    length = solvers.tour_weight(G, [*body, body[0]]) if len(body) > 1 else 0
    if not close(stated, length):
        return infeasible(f"states Length {num_str(stated)} but the tour's length is {num_str(length)}")
    return objective(length, gold.value, "min", "the tour's length", "the shortest tour's length")


def _greedy_tour(G: nx.Graph, budget: int = 10_000) -> tuple[list[Hashable] | None, bool]:
    """Nearest-neighbour tour over existing edges, backtracking on dead ends (cheapest edge first).

    (tour, exhausted): tour None with exhausted True means there is provably no tour."""
    labels = solvers.sorted_labels(G)
    n = len(labels)
    if n == 1:
        return [labels[0], labels[0]], True
    start = labels[0]
    path, seen, steps = [start], {start}, 0

    def dfs(here: Hashable) -> bool | None:
        nonlocal steps
        steps += 1
        if steps > budget:
            return None
        if len(path) == n:
            return G.has_edge(here, start)
        for w in sorted((v for v in G[here] if v not in seen), key=lambda v: (solvers.edge_weight(G, here, v), str(v))):
            path.append(w)
            seen.add(w)
            got = dfs(w)
            if got or got is None:
                return got
            path.pop()
            seen.discard(w)
        return False

    found = dfs(start)
    if found:
        return [*path, start], True
    return None, found is False


def _nn_order(G: nx.Graph, labels: list[Hashable]) -> list[Hashable]:
    """Nearest neighbour that jumps to the smallest unvisited label when stuck (an infeasible best effort)."""
    tour, seen = [labels[0]], {labels[0]}
    while len(tour) < len(labels):
        here = tour[-1]
        options = [v for v in G[here] if v not in seen]
        nxt = min(options, key=lambda v: (solvers.edge_weight(G, here, v), str(v))) if options else next(
            v for v in labels if v not in seen)
        tour.append(nxt)
        seen.add(nxt)
    return [*tour, labels[0]]


def _partial_weight(G: nx.Graph, tour: Sequence[Hashable]) -> int | float:
    return sum(solvers.edge_weight(G, a, b) for a, b in zip(tour, tour[1:], strict=False) if G.has_edge(a, b))


def heuristic(graphs: Sequence[nx.Graph], query: dict[str, Any]) -> dict[str, Any]:
    G, labels = heuristic_graph(graphs)
    if not labels:
        return {"Tour": [], "Length": None}
    tour, exhausted = _greedy_tour(G)
    if tour is None:
        if exhausted:
            return {"Tour": [], "Length": None}
        tour = _nn_order(G, labels)
    return {"Tour": tour, "Length": _partial_weight(G, tour)}


def random_answer(graphs: Sequence[nx.Graph], query: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    G = graphs[0]
    labels = solvers.sorted_labels(G)
    n = len(labels)
    if n == 0:
        return {"Tour": [], "Length": None}
    max_w = max((solvers.edge_weight(G, u, v) for u, v in G.edges), default=1)
    order = rng.sample(labels, n)
    return {"Tour": [*order, order[0]], "Length": rng.randint(n, max_w * n)}


CONFIG = TaskConfig(
    name="TSP",
    sources=(("us-airports", 1.0),),
    task_text=_text,
    valid=_valid,
    complete=True,
    weight_sentence=TABLE_SENTENCE,
    solve=solve,
    parse=parse,
    verify=verify,
    heuristic=heuristic,
    random_answer=random_answer,
    answer_example=ANSWER_EXAMPLE,
    answer_instruction=ANSWER_INSTRUCTION,
)
TASK = build_spec(CONFIG)
