"""GED: graph edit distance between two molecules shown in two pictures (element = node label)."""

from __future__ import annotations

import random
from collections.abc import Hashable, Sequence
from typing import Any

import networkx as nx

from evalcore.schema import Gold, ParseError, Verdict
from gie.edit_distance import ged_bounds, ged_cost, node_label, solve_ged
from gie.solvers import sorted_labels
from gie.tasks.answer_parsing import EDITS, Bare, parse_value_with_mapping
from gie.tasks.config import TaskConfig
from gie.tasks.scenarios import Nouns
from gie.tasks.spec import build_spec
from gie.tasks.verdicts import Witness, close, num_str, resolve_mapping, value_verdict, with_witness


def _text(n: Nouns, q: dict[str, Any]) -> str:
    return ("Find the graph edit distance from the first molecule to the second: the smallest total cost "
            "of edits that turn the first graph into the second, where deleting or inserting an atom costs "
            "1, changing an atom's element costs 1, and deleting or inserting a bond costs 1. Give it with "
            "the node mapping of an optimal edit.")


ANSWER_EXAMPLE: dict[str, Any] = {"Distance": 4, "Mapping": {"AAA": "XXX", "BBB": "YYY", "CCC": None}}
ANSWER_INSTRUCTION = (
    "Mapping maps every node name of the first graph to a node name of the second graph, or to null "
    "if the node is deleted (no two nodes to the same one); Distance is the minimum total edit cost."
)


# ------------------------------------------------------------------------------------------------ answer


def parse(obj: dict[str, Any]) -> dict[str, Any] | ParseError:
    return parse_value_with_mapping(obj, "Distance", ("Distance", "EditDistance", "GED", "Cost", "TotalCost"),
                                    EDITS)


def solve(graphs: Sequence[nx.Graph], query: dict[str, Any]) -> Gold:
    cost, mapping = solve_ged(graphs[0], graphs[1])
    return Gold(answer={"Distance": cost, "Mapping": mapping}, value=float(cost))


def value_bounds(graphs: Sequence[nx.Graph], query: dict[str, Any]) -> tuple[float, float]:
    # A few thousand A* states and a local descent: ~0.1 s, against up to a minute for the exact MILP.
    lo, hi = ged_bounds(graphs[0], graphs[1], max_evals=2000)
    return float(lo), float(hi)


def _ged_witness(G1: nx.Graph, G2: nx.Graph, stated: float, mapping: dict[str, str | None]) -> Witness:
    images, why = resolve_mapping(G1, G2, mapping)
    if why:
        return Witness(why)
    cost = ged_cost(G1, G2, images)  # type: ignore[arg-type]
    if not close(stated, cost):
        return Witness(consistent=False, note=f"states Distance {num_str(stated)} but the mapping's edit cost "
                                              f"is {cost}")
    return Witness(consistent=True)


def verify(graphs: Sequence[nx.Graph], query: dict[str, Any], gold: Gold, ans: dict[str, Any]) -> Verdict:
    G1, G2 = graphs
    v = value_verdict(ans["Distance"], gold.value, "Distance", "the edit distance")
    return with_witness(v, ans["Mapping"], lambda: _ged_witness(G1, G2, ans["Distance"], ans["Mapping"]))


def _greedy_ged(G1: nx.Graph, G2: nx.Graph) -> dict[Hashable, Hashable | None]:
    """Match nodes by label then closest degree, high degree first; unmatched G1 nodes are deleted."""
    o1 = sorted(G1.nodes, key=lambda v: (-G1.degree(v), str(v)))
    free = sorted(G2.nodes, key=lambda v: (-G2.degree(v), str(v)))
    out: dict[Hashable, Hashable | None] = {}
    for u in o1:
        if not free:
            out[u] = None
            continue
        lab = node_label(G1.nodes[u])
        v = min(free, key=lambda w: (node_label(G2.nodes[w]) != lab, abs(G2.degree(w) - G1.degree(u)), str(w)))
        out[u] = v
        free.remove(v)
    return out


def heuristic(graphs: Sequence[nx.Graph], query: dict[str, Any]) -> dict[str, Any]:
    G1, G2 = graphs
    mapping = _greedy_ged(G1, G2)
    return {"Distance": ged_cost(G1, G2, mapping), "Mapping": mapping}  # type: ignore[arg-type]


def random_answer(graphs: Sequence[nx.Graph], query: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    n1, n2 = sorted_labels(graphs[0]), sorted_labels(graphs[1])
    k = rng.randint(0, min(len(n1), len(n2)))
    pairs = dict(zip(rng.sample(n1, k), rng.sample(n2, k), strict=True))
    mapping = {u: pairs.get(u) for u in n1}
    return {"Distance": rng.randint(0, len(n1) + len(n2) + graphs[0].number_of_edges()
                                    + graphs[1].number_of_edges()), "Mapping": mapping}


CONFIG = TaskConfig(
    name="GED",
    sources=(("nci-molecules", 1.0),),
    task_text=_text,
    focus_min=3,
    solve=solve,
    value_bounds=value_bounds,
    parse=parse,
    verify=verify,
    heuristic=heuristic,
    random_answer=random_answer,
    answer_example=ANSWER_EXAMPLE,
    answer_instruction=ANSWER_INSTRUCTION,
    bare=Bare(number="Distance", units=EDITS),
)
TASK = build_spec(CONFIG)
