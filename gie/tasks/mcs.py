"""MCS: maximum common induced subgraph of two molecules (elements ignored, need not be connected)."""

from __future__ import annotations

import random
from collections.abc import Hashable, Sequence
from typing import Any

import networkx as nx

from gie import paired
from gie.solvers import sorted_labels
from gie.tasks.answer_parsing import parse_value_with_mapping
from gie.tasks.config import TaskConfig
from gie.tasks.scenarios import Nouns
from gie.tasks.spec import build_spec
from gie.tasks.verdicts import close, induced_mismatch, num_str, resolve_mapping, value_verdict, with_witness
from nphe4v.core.schema import Gold, ParseError, Verdict


def _text(n: Nouns, q: dict[str, Any]) -> str:
    return ("Find a maximum common subgraph of the two molecules: a largest set of atoms in the first and "
            "an equally large set in the second, matched one to one, such that two atoms of the first are "
            "bonded exactly when their matches in the second are bonded. Elements are ignored and the "
            "common part need not be connected.")


ANSWER_EXAMPLE: dict[str, Any] = {"Size": 2, "Mapping": {"AAA": "XXX", "BBB": "YYY"}}
ANSWER_INSTRUCTION = (
    "Mapping maps node names of the first graph to node names of the second graph so that the mapped "
    "nodes induce the same edges in both graphs, with as many nodes as possible; Size is their number."
)


# ------------------------------------------------------------------------------------------------ answer


def parse(obj: dict[str, Any]) -> dict[str, Any] | ParseError:
    return parse_value_with_mapping(obj, "Size", ("Size", "MCSSize", "NumNodes", "NumberOfNodes"))


def solve(graphs: Sequence[nx.Graph], query: dict[str, Any]) -> Gold:
    size, mapping = paired.solve_mcs(graphs[0], graphs[1])
    return Gold(answer={"Size": size, "Mapping": mapping}, value=float(size))


def _mcs_witness(G1: nx.Graph, G2: nx.Graph, stated: float, mapping: dict[str, str | None]) -> str | None:
    images, why = resolve_mapping(G1, G2, mapping)
    if why:
        return why
    pairs = {k: v for k, v in images.items() if v is not None}
    why = induced_mismatch(G1, G2, pairs)
    if why:
        return f"not a common induced subgraph: {why}"
    if not close(stated, len(pairs)):
        return f"states Size {num_str(stated)} but the mapping has {len(pairs)} pairs"
    return None


def verify(graphs: Sequence[nx.Graph], query: dict[str, Any], gold: Gold, ans: dict[str, Any]) -> Verdict:
    G1, G2 = graphs
    v = value_verdict(ans["Size"], gold.value, "Size", "the maximum common subgraph's size")
    return with_witness(v, ans["Mapping"], lambda: _mcs_witness(G1, G2, ans["Size"], ans["Mapping"]))


def _greedy_mcs(G1: nx.Graph, G2: nx.Graph) -> dict[Hashable, Hashable]:
    """Grow an induced-consistent mapping from the two highest-degree nodes, preferring nodes next to it."""
    o1 = sorted(G1.nodes, key=lambda v: (-G1.degree(v), str(v)))
    o2 = sorted(G2.nodes, key=lambda v: (-G2.degree(v), str(v)))
    pairs: dict[Hashable, Hashable] = {}
    while True:
        used = set(pairs.values())
        near = [u for u in o1 if u not in pairs and any(w in pairs for w in G1[u])]
        far = [u for u in o1 if u not in pairs and u not in near]
        pick = None
        for u in near + far:
            for v in o2:
                if v in used:
                    continue
                if all(G1.has_edge(u, a) == G2.has_edge(v, b) for a, b in pairs.items()):
                    pick = (u, v)
                    break
            if pick:
                break
        if pick is None:
            return pairs
        pairs[pick[0]] = pick[1]


def heuristic(graphs: Sequence[nx.Graph], query: dict[str, Any]) -> dict[str, Any]:
    pairs = _greedy_mcs(*graphs)
    return {"Size": len(pairs), "Mapping": pairs}


def random_answer(graphs: Sequence[nx.Graph], query: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    n1, n2 = sorted_labels(graphs[0]), sorted_labels(graphs[1])
    k = rng.randint(0, min(len(n1), len(n2)))
    pairs = dict(zip(rng.sample(n1, k), rng.sample(n2, k), strict=True))
    return {"Size": k, "Mapping": pairs}


CONFIG = TaskConfig(
    name="MCS",
    sources=(("nci-molecules", 1.0),),
    task_text=_text,
    focus_min=3,
    solve=solve,
    parse=parse,
    verify=verify,
    heuristic=heuristic,
    random_answer=random_answer,
    answer_example=ANSWER_EXAMPLE,
    answer_instruction=ANSWER_INSTRUCTION,
)
TASK = build_spec(CONFIG)
