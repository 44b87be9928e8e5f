"""SD: weighted shortest distance between two airports (flights, great-circle km on the routes)."""

from __future__ import annotations

import random
from collections.abc import Hashable, Sequence
from typing import Any

import networkx as nx

from evalcore.coerce import as_number, get_key
from evalcore.schema import Gold, ParseError, Verdict
from gie.solvers import Number, edge_weight, lex_shortest_path, require_nodes, sorted_labels, tour_weight
from gie.tasks._sources import endpoints, far_pair
from gie.tasks.answer_parsing import (
    KM,
    NONE_WORDS,
    PATH_KEYS,
    Bare,
    answer_number,
    bad_value,
    is_word,
    missing_key,
    optional_names,
)
from gie.tasks.config import TaskConfig
from gie.tasks.heuristic_graph import heuristic_graph, hop_path
from gie.tasks.scenarios import Nouns
from gie.tasks.spec import build_spec
from gie.tasks.verdicts import (
    Resolver,
    Witness,
    close,
    correct,
    missing_edge,
    num_str,
    value_verdict,
    with_witness,
    wrong,
)


def _valid(g: nx.Graph, q: dict[str, Any]) -> bool:
    s, t = q.get("source"), q.get("target")
    return s in g and t in g and s != t and not g.has_edge(s, t) and nx.has_path(g, s, t)


def _text(n: Nouns, q: dict[str, Any]) -> str:
    return (f"A traveller wants to fly from {q['source']} to {q['target']} using only the drawn {n.edges}. "
            f"Find the shortest total flight distance between them and one route that achieves it.")


ANSWER_EXAMPLE: dict[str, Any] = {"Distance": 9, "Path": ["AAA", "BBB", "CCC"]}
ANSWER_INSTRUCTION = (
    "Distance is the total weight of a shortest path; Path lists node names from the source to the "
    "target along that path."
)


# ------------------------------------------------------------------------------------------------ exact solver


def shortest_distance(G: nx.Graph, s: Hashable, t: Hashable) -> tuple[Number, list[Hashable]] | tuple[None, None]:
    """Weighted shortest distance s -> t and the lexicographically smallest shortest path, or (None, None)."""
    require_nodes(G, s, t)
    to_t = nx.single_source_dijkstra_path_length(G, t, weight=lambda u, v, d: d.get("weight", 1))
    if s not in to_t:
        return None, None
    return to_t[s], lex_shortest_path(G, s, t, to_t, weighted=True)


# ------------------------------------------------------------------------------------------------ answer


def parse(obj: dict[str, Any]) -> dict[str, Any] | ParseError:
    # The paper scores the distance; the path is a witness ("output one shortest path if required").
    has_d, raw_d = get_key(obj, "Distance", "ShortestDistance", "TotalDistance", "TotalWeight", "Weight")
    if not has_d:
        return missing_key("Distance")
    if is_word(raw_d, NONE_WORDS) or as_number(raw_d) == -1:
        dist = None
    else:
        dist = answer_number(raw_d, KM)
        if dist is None:
            return bad_value("Distance", raw_d)
    path = optional_names(obj, PATH_KEYS, "Path")
    return path if isinstance(path, ParseError) else {"Distance": dist, "Path": path}


def solve(graphs: Sequence[nx.Graph], query: dict[str, Any]) -> Gold:
    d, path = shortest_distance(graphs[0], query["source"], query["target"])
    if d is None:
        return Gold(answer={"Distance": None, "Path": []}, value=None)
    return Gold(answer={"Distance": d, "Path": path}, value=float(d))


def _sd_witness(G: nx.Graph, query: dict[str, Any], dist: float | None, names: list[str]) -> Witness:
    s, t = query["source"], query["target"]
    res = Resolver(G)
    path, why = res.resolve(names, "Path")
    if why:
        return Witness(why)
    if path[0] != s:
        return Witness(f"path starts at {names[0]!r}, not at the source {s!r}")
    if path[-1] != t:
        return Witness(f"path ends at {names[-1]!r}, not at the target {t!r}")
    why = missing_edge(G, path, closed=False)
    if why:
        return Witness(why)
    weight = tour_weight(G, path)
    if dist is None:
        return Witness(consistent=False, note="states there is no path but lists one")
    if not close(dist, weight):
        return Witness(consistent=False, note=f"states Distance {num_str(dist)} but the path's weight is "
                                              f"{num_str(weight)}")
    return Witness(consistent=True)


def verify(graphs: Sequence[nx.Graph], query: dict[str, Any], gold: Gold, ans: dict[str, Any]) -> Verdict:
    G = graphs[0]
    dist = ans["Distance"]
    if dist is None:
        v = correct("no path exists") if gold.value is None else wrong(
            f"claims no path, but the shortest distance is {num_str(gold.value)}")
    else:
        v = value_verdict(dist, gold.value, "Distance", "the shortest distance")
    return with_witness(v, ans["Path"], lambda: _sd_witness(G, query, dist, ans["Path"]))


def heuristic(graphs: Sequence[nx.Graph], query: dict[str, Any]) -> dict[str, Any]:
    G, labels = heuristic_graph(graphs)
    if not labels:
        return {"Distance": None, "Path": []}
    # Fewest hops instead of least weight: the classic mistake on weighted graphs.
    path = hop_path(G, query["source"], query["target"])
    if path is None:
        return {"Distance": None, "Path": []}
    return {"Distance": tour_weight(G, path), "Path": path}


def random_answer(graphs: Sequence[nx.Graph], query: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    G = graphs[0]
    labels = sorted_labels(G)
    n = len(labels)
    if n == 0:
        return {"Distance": None, "Path": []}
    max_w = max((edge_weight(G, u, v) for u, v in G.edges), default=1)
    s, t = query["source"], query["target"]
    middle = rng.sample([v for v in labels if v not in (s, t)], rng.randint(0, max(0, min(3, n - 2))))
    path = [s, *middle, t] if s != t else [s]
    return {"Distance": rng.randint(0, max_w * max(1, len(path) - 1)), "Path": path}


CONFIG = TaskConfig(
    name="SD",
    sources=(("us-airports", 1.0),),
    task_text=_text,
    query=far_pair,
    valid=_valid,
    recolor_modes=("avoid",),
    keep=endpoints,
    solve=solve,
    parse=parse,
    verify=verify,
    heuristic=heuristic,
    random_answer=random_answer,
    answer_example=ANSWER_EXAMPLE,
    answer_instruction=ANSWER_INSTRUCTION,
    bare=Bare(number="Distance", units=KM),
)
TASK = build_spec(CONFIG)
