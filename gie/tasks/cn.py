"""CN: the common neighbours of two given nodes."""

from __future__ import annotations

import random
from collections.abc import Hashable, Sequence
from typing import Any

import networkx as nx

from evalcore.schema import Gold, ParseError, Verdict
from gie.solvers import require_nodes, sorted_labels
from gie.tasks._sources import SOCIAL, endpoints, mix, neighbour_pair
from gie.tasks.answer_parsing import Bare, parse_node_set
from gie.tasks.config import TaskConfig
from gie.tasks.heuristic_graph import heuristic_graph
from gie.tasks.scenarios import Nouns
from gie.tasks.spec import build_spec
from gie.tasks.verdicts import Resolver, correct, infeasible, quoted, stated_value, wrong


def _valid(g: nx.Graph, q: dict[str, Any]) -> bool:
    s, t = q.get("source"), q.get("target")
    return s in g and t in g and s != t


def _text(n: Nouns, q: dict[str, Any]) -> str:
    return (f"List every {n.node} that is directly linked to both {q['source']} and {q['target']} "
            f"(their common neighbours in the {n.network}).")


ANSWER_EXAMPLE: dict[str, Any] = {"CommonNeighbors": ["AAA", "BBB"]}
ANSWER_INSTRUCTION = (
    "CommonNeighbors lists the names of all nodes adjacent to both given nodes (an empty list if "
    "there are none)."
)


# ------------------------------------------------------------------------------------------------ exact solver


def common_neighbors(G: nx.Graph, s: Hashable, t: Hashable) -> list[Hashable]:
    require_nodes(G, s, t)
    return sorted((set(G[s]) & set(G[t])) - {s, t}, key=str)


# ------------------------------------------------------------------------------------------------ answer


def parse(obj: dict[str, Any]) -> dict[str, Any] | ParseError:
    return parse_node_set(obj, "CommonNeighbors", ('CommonNeighbors', 'CommonNeighbours', 'CommonNeighbor', 'CommonNeighbour', 'Neighbors', 'Neighbours'))


def solve(graphs: Sequence[nx.Graph], query: dict[str, Any]) -> Gold:
    common = common_neighbors(graphs[0], query["source"], query["target"])
    return Gold(answer={"CommonNeighbors": common}, value=float(len(common)))


def gold_key(gold: Gold) -> Any:
    """An edit matters for CN when it changes the set itself, not just its size."""
    return tuple(sorted(map(str, gold.answer.get("CommonNeighbors", []))))


def verify(graphs: Sequence[nx.Graph], query: dict[str, Any], gold: Gold, ans: dict[str, Any]) -> Verdict:
    G = graphs[0]
    s, t = query["source"], query["target"]
    res = Resolver(G)
    got, why = res.resolve(ans["CommonNeighbors"], "CommonNeighbors")
    if why:
        return infeasible(why)
    truth = set(common_neighbors(G, s, t))
    extra = [v for v in got if v not in truth]
    if extra:
        return infeasible(f"{quoted(extra)} not adjacent to both {s!r} and {t!r}")
    missed = sorted(truth - set(got), key=str)
    v = wrong(f"misses common neighbour(s) {quoted(missed)}", True) if missed else correct(witness=True)
    return stated_value(v, ans.get("Size"), len(got), "Size", "the list's length")


def heuristic(graphs: Sequence[nx.Graph], query: dict[str, Any]) -> dict[str, Any]:
    G, labels = heuristic_graph(graphs)
    if not labels:
        return {"CommonNeighbors": []}
    return {"CommonNeighbors": common_neighbors(G, query["source"], query["target"])}


def random_answer(graphs: Sequence[nx.Graph], query: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    labels = sorted_labels(graphs[0])
    return {"CommonNeighbors": sorted(rng.sample(labels, rng.randint(0, len(labels))), key=str)}


CONFIG = TaskConfig(
    name="CN",
    sources=mix(("wikidata-costar", 0.35), ("wikidata-film-kg", 0.25), (SOCIAL, 0.4)),
    task_text=_text,
    query=neighbour_pair,
    valid=_valid,
    recolor_modes=("avoid",),
    focus_min=3,
    keep=endpoints,
    solve=solve,
    parse=parse,
    verify=verify,
    heuristic=heuristic,
    random_answer=random_answer,
    answer_example=ANSWER_EXAMPLE,
    answer_instruction=ANSWER_INSTRUCTION,
    bare=Bare(names="CommonNeighbors"),
    gold_key=gold_key,
)
TASK = build_spec(CONFIG)
