"""CYC: does a cycle exist, and a longest simple cycle if so (molecules bring their rings)."""

from __future__ import annotations

import random
from collections.abc import Hashable, Sequence
from typing import Any

import networkx as nx

from evalcore.coerce import as_yes_no, get_key
from evalcore.schema import Gold, ParseError, Verdict
from gie.solvers import bitmasks, bits, canonical_cycle, sorted_labels
from gie.tasks._sources import SOCIAL, mix
from gie.tasks.answer_parsing import Bare, bad_value, missing_key, node_names
from gie.tasks.config import TaskConfig
from gie.tasks.heuristic_graph import heuristic_graph
from gie.tasks.scenarios import Nouns
from gie.tasks.spec import build_spec
from gie.tasks.verdicts import (
    Resolver,
    correct,
    infeasible,
    missing_edge,
    num_str,
    objective,
    open_cycle,
    wrong,
)


def _valid(g: nx.Graph, q: dict[str, Any]) -> bool:
    return g.number_of_nodes() >= 3 and g.number_of_edges() > 0


def _text(n: Nouns, q: dict[str, Any]) -> str:
    return (f"Decide whether the {n.network} contains a cycle: a closed route through at least three "
            f"distinct {n.nodes} that uses each {n.edge} and each {n.node} at most once. If it does, give "
            f"a longest such cycle.")


ANSWER_EXAMPLE: dict[str, Any] = {"HasCycle": "YES", "Cycle": ["AAA", "BBB", "CCC", "DDD", "AAA"]}
ANSWER_INSTRUCTION = (
    "HasCycle is \"YES\" or \"NO\"; if YES, Cycle lists the node names of a longest simple cycle in "
    "order, ending at the starting node (an empty list if NO)."
)


# ------------------------------------------------------------------------------------------------ exact solver


def _hamiltonian_cycle(adj: list[int], block: int, budget: int = 20_000) -> list[int] | None:
    """A Hamiltonian cycle of the block found by a budgeted DFS (fewest-onward-options first), or None
    if there is none or the budget ran out. An exact shortcut: dense blocks are usually Hamiltonian and
    the DFS finds one in O(n) steps, where the subset DP would enumerate ~2^n paths."""
    verts = bits(block)
    k = len(verts)
    start = verts[0]
    path = [start]
    steps = 0

    def dfs(here: int, seen: int) -> bool:
        nonlocal steps
        steps += 1
        if steps > budget:
            return False
        if len(path) == k:
            return bool(adj[here] >> start & 1)
        options = bits(adj[here] & block & ~seen)
        options.sort(key=lambda w: ((adj[w] & block & ~seen).bit_count(), w))
        for w in options:
            path.append(w)
            if dfs(w, seen | 1 << w):
                return True
            path.pop()
        return False

    return path if dfs(start, 1 << start) else None


def _longest_cycle_in_block(adj: list[int], block: int) -> tuple[int, list[int]]:
    """Longest simple cycle inside the vertex set `block` (bitmask): (length, [v0, ..., v_{k-1}]).

    Subset-path DP per start s = the cycle's smallest vertex: ends[mask] is the set of vertices v such
    that some simple path from s through exactly `mask` ends at v, using only vertices above s. Layers
    grow by one vertex, only reachable states are stored (sparse graphs touch few masks).
    """
    verts = bits(block)
    ham = _hamiltonian_cycle(adj, block)
    if ham is not None:
        return len(ham), ham
    best_len = 0
    best: tuple[int, int, int, dict[int, int]] | None = None
    for s in verts:
        allowed = block & ~((1 << (s + 1)) - 1)  # vertices above s
        if (allowed | 1 << s).bit_count() <= best_len:
            break  # later starts have even fewer vertices to use
        ends: dict[int, int] = {1 << s: 1 << s}
        layer = [1 << s]
        size = 1
        while layer:
            nxt: list[int] = []
            for mask in layer:
                reach = ends[mask]
                # Every vertex outside the mask adjacent to some current end extends some path.
                free = allowed & ~mask
                while free:
                    low = free & -free
                    free ^= low
                    if adj[low.bit_length() - 1] & reach:
                        new = mask | low
                        got = ends.get(new)
                        if got is None:
                            ends[new] = low
                            nxt.append(new)
                        else:
                            ends[new] = got | low
            size += 1
            for mask in nxt:
                if size >= 3 and size > best_len and ends[mask] & adj[s]:
                    best_len, best = size, (s, mask, ends[mask] & adj[s], ends)
                    break
            layer = nxt
    if best is None:
        return 0, []
    s, mask, closing, ends = best
    # Walk back from the smallest closing end: the predecessor is any end of the smaller mask adjacent
    # to the current vertex (smallest index, for determinism).
    v = (closing & -closing).bit_length() - 1
    rev = [v]
    while mask != 1 << s:
        prev_mask = mask ^ (1 << v)
        cand = ends[prev_mask] & adj[v]
        v = (cand & -cand).bit_length() - 1
        rev.append(v)
        mask = prev_mask
    return best_len, rev[::-1]


def longest_cycle(G: nx.Graph) -> tuple[int, list[Hashable] | None]:
    """Length (edges = nodes) of a longest simple cycle and the cycle closed [a, ..., a]; (0, None) for a forest.

    A cycle lies inside one biconnected block, so the exponential DP only ever sees one block at a time
    (molecules and trees-with-rings break into tiny blocks).
    """
    labels, adj = bitmasks(G)
    index = {v: i for i, v in enumerate(labels)}
    best_len, best_cycle = 0, None
    blocks = [sorted(index[v] for v in b) for b in nx.biconnected_components(G) if len(b) >= 3]
    blocks.sort(key=lambda b: (-len(b), b))
    for block in blocks:
        if len(block) <= best_len:
            break
        mask = sum(1 << i for i in block)
        sub_adj = [a & mask for a in adj]
        length, cyc = _longest_cycle_in_block(sub_adj, mask)
        if length > best_len:
            best_len, best_cycle = length, cyc
    if best_cycle is None:
        return 0, None
    names = [labels[i] for i in best_cycle]
    return best_len, canonical_cycle([*names, names[0]])


# ------------------------------------------------------------------------------------------------ answer


def parse(obj: dict[str, Any]) -> dict[str, Any] | ParseError:
    has_h, raw_h = get_key(obj, "HasCycle", "CycleExists", "Exists")
    has_c, raw_c = get_key(obj, "Cycle", "LongestCycle")
    # The cycle is the witness and decides; HasCycle may be left out when a cycle (or an empty list) is
    # given, and is kept as stated (None when not) for value_consistent.
    if not has_h or raw_h is None:
        if not has_c:
            return missing_key("HasCycle")
        said = None
    else:
        yes = as_yes_no(raw_h)
        if yes is None:
            return bad_value("HasCycle", raw_h)
        said = "YES" if yes else "NO"
    if not has_c:
        if said == "YES":
            return missing_key("Cycle")
        return {"HasCycle": said, "Cycle": []}
    cycle = node_names(raw_c, "Cycle")
    if isinstance(cycle, ParseError):
        return cycle
    return {"HasCycle": said, "Cycle": cycle}


def solve(graphs: Sequence[nx.Graph], query: dict[str, Any]) -> Gold:
    length, cycle = longest_cycle(graphs[0])
    if cycle is None:
        return Gold(answer={"HasCycle": "NO", "Cycle": []}, value=0.0)
    return Gold(answer={"HasCycle": "YES", "Cycle": cycle}, value=float(length))


def verify(graphs: Sequence[nx.Graph], query: dict[str, Any], gold: Gold, ans: dict[str, Any]) -> Verdict:
    G = graphs[0]
    said, names = ans["HasCycle"], ans["Cycle"]
    longest = gold.value or 0
    if not names:
        if said == "YES":
            return wrong("says YES but gives no cycle")
        if longest == 0:
            return correct("the graph has no cycle")
        return wrong(f"says NO, but the graph has a cycle (the longest has {num_str(longest)} nodes)")
    v = _graded_cycle(G, names, longest)
    if said is None or v.witness_valid is not True:
        return v
    if said == "YES":
        return v.model_copy(update={"value_consistent": True})
    return v.model_copy(update={"value_consistent": False, "reason": "; ".join(
        filter(None, [v.reason, "says NO but lists a cycle"]))})


def _graded_cycle(G: nx.Graph, names: list[str], longest: float) -> Verdict:
    """The verdict on a listed cycle: it decides, whatever HasCycle says."""
    res = Resolver(G)
    body, why = res.resolve(open_cycle(names, res), "Cycle")
    if why:
        return infeasible(why)
    if len(body) < 3:
        return infeasible(f"a cycle needs at least 3 distinct nodes, got {len(body)}")
    why = missing_edge(G, body, closed=True)
    if why:
        return infeasible(why)
    if longest == 0:
        return wrong("gold says the graph has no cycle, yet the stated cycle is valid: gold is wrong?", True)
    return objective(len(body), longest, "max", "the cycle's length", "the longest cycle's length")


def heuristic(graphs: Sequence[nx.Graph], query: dict[str, Any]) -> dict[str, Any]:
    G, labels = heuristic_graph(graphs)
    if not labels:
        return {"HasCycle": "NO", "Cycle": []}
    try:
        edges = nx.find_cycle(G)
    except nx.NetworkXNoCycle:
        return {"HasCycle": "NO", "Cycle": []}
    cycle = [e[0] for e in edges]
    return {"HasCycle": "YES", "Cycle": [*cycle, cycle[0]]}


def random_answer(graphs: Sequence[nx.Graph], query: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    labels = sorted_labels(graphs[0])
    n = len(labels)
    if n == 0:
        return {"HasCycle": "NO", "Cycle": []}
    if n < 3 or rng.random() < 0.3:
        return {"HasCycle": "NO", "Cycle": []}
    cyc = rng.sample(labels, rng.randint(3, n))
    return {"HasCycle": "YES", "Cycle": [*cyc, cyc[0]]}


CONFIG = TaskConfig(
    name="CYC",
    sources=mix(("nci-molecules", 0.35), (SOCIAL, 0.25), ("wikidata-film-kg", 0.2), ("us-airports", 0.2)),
    task_text=_text,
    valid=_valid,
    prefer=lambda g: not nx.is_forest(g),
    prefer_rate=0.8,
    solve=solve,
    parse=parse,
    verify=verify,
    heuristic=heuristic,
    random_answer=random_answer,
    answer_example=ANSWER_EXAMPLE,
    answer_instruction=ANSWER_INSTRUCTION,
    bare=Bare(names="Cycle", word="HasCycle"),
)
TASK = build_spec(CONFIG)
