"""The papers' checkers: NPHardEval4V's parse and correct decisions as the original open-model code made them
(`Open/run/*.py` + `Open/check/*.py` of lizhouf/NPHardEval4V, commit 61e8020), quirks included, on our
instance data. `parser: paper` grades with these (`nphe4v.scoring.score_answer_paper`); our exact verifiers are
not involved. Written from the original code's behaviour (read, not copied); the per-task rules and their
quirks are listed in docs/metrics.md ("The papers' parser") and checked against the original code on the
papers' published outputs by `bench/paper_parser_published.py` and tests/test_paper_published.py.

Decisions per task (parse = what ER counts; correct = the checker's verdict):

* BSP — tagged parse. Correct: **never** — the open checker re-parses the already parsed answer as XML, finds
  no tags in a dict, and grades it invalid (only a parsed *string* holding a second tagged block could pass).
* EDP — tagged parse with the cut at the first `}`. Correct iff `int(Operations)` (int() of an int, a float
  (truncated) or a digit string) equals the edit distance.
* SPP — tagged parse demanding `<reasoning>` tags, cut at the first `}`. Correct iff the mapping's `Path`
  ("a->b->…", each part int()-able) starts and ends at the endpoints, every hop is an edge (the first listed
  edge between the two nodes gives the weight), the summed weight equals `int(TotalDistance)` and the
  shortest distance; with no path, iff TotalDistance is neither an int nor a digit string.
* KSP — tagged parse. Correct iff `Feasible` (a string) is "yes" in any case exactly when the optimum is > 0,
  `int(TotalValue)` and the ids in `SelectedItemIds` (default []: an answer without ids fails unless the
  optimum is 0) are distinct existing items within capacity whose values sum to TotalValue = the optimum.
* TSP-D — tagged parse demanding `<reasoning>` tags. Truth = the Christofides tour of networkx's
  `traveling_salesman_problem` is within the threshold (<=); correct iff `Feasible` (a string, default "no";
  bytes such as b'NO' are read as no) is "yes" exactly then.
* GCP-D — tagged parse demanding `<reasoning>` tags. Truth = networkx's greedy colouring (`largest_first`)
  uses <= k colours (greedy over-estimates χ: some true YES are graded NO); correct iff `Feasible` is "yes"
  exactly then.
* TSP — parsable iff the output is not empty. Correct iff the hard parse gives a mapping whose `Path` is
  "a->…->a" of n+1 int()-able ids (not checked distinct; out-of-range ids crash the original: wrong) and its
  length (matrix entries summed in order) equals, as an exact float, the nearest-neighbour tour's from a
  random start city. The original draws the start unseeded; here it is drawn from the instance id
  (`tsp_start`), so a run is reproducible; TotalDistance is not read.
* GCP — parsable iff the output is not empty. Correct iff the hard parse gives a mapping (keys int()-able)
  where no edge joins two equal colours and every vertex with a neighbour has one; the number of colours is
  **not** checked (but every colour must be hashable: the original counts them with a set, and crashes).
* MSP — parsable iff the output is not empty. Correct iff the hard parse gives a mapping {meeting: [slots]}
  (keys int()-able) with every meeting present, slots < the slot count, exactly `duration` consecutive slots,
  every attendee available, no unknown meeting, and no attendee booked twice in a slot.

An answer the original code would crash on (an exception its runner does not catch) is wrong here, and
unparsable when the crash is in the parse. Never raises.
"""

from __future__ import annotations

import hashlib
import heapq
from typing import Any

from evalcore.schema import ParseError
from nphe4v.paper_parse import HardAnswer, hard_literal, hard_parsable, parse_hard, parse_tagged

PAPER_TASKS: tuple[str, ...] = ("BSP", "EDP", "SPP", "KSP", "TSP-D", "GCP-D", "TSP", "GCP", "MSP")
HARD_TASKS: tuple[str, ...] = ("TSP", "GCP", "MSP")
# the tagged parser's options per task (the original's four parser variants)
TAGGED_RULES: dict[str, dict[str, bool]] = {
    "BSP": {}, "KSP": {}, "EDP": {"brace_cut": True},
    "SPP": {"require_reasoning": True, "brace_cut": True},
    "TSP-D": {"require_reasoning": True}, "GCP-D": {"require_reasoning": True},
}


class _Crash(Exception):
    """What would have stopped the original run; graded wrong."""


def paper_parse(task: str, text: str | None) -> tuple[bool, Any]:
    """(parsable as the original's ER counts it, what its checker receives)."""
    if task in HARD_TASKS:
        return hard_parsable(text), text
    value = parse_tagged(text, **TAGGED_RULES[task])
    return not isinstance(value, ParseError), ("" if isinstance(value, ParseError) else value)


def paper_correct(task: str, data: dict[str, Any], parsed: Any, instance_id: str = "") -> bool:
    """The original checker's verdict on what `paper_parse` gave it; a crash of the original is wrong."""
    try:
        return bool(_CHECKERS[task](data, parsed, instance_id))
    except Exception:  # the original would stop here (or catch it and grade invalid): not correct either way
        return False


def paper_decision(task: str, data: dict[str, Any], text: str | None, instance_id: str = "") -> tuple[bool, bool]:
    """(parsable, correct) as the original code decides for one output."""
    parsable, parsed = paper_parse(task, text)
    return parsable, parsable and paper_correct(task, data, parsed, instance_id)


# ------------------------------------------------------------------------------------------------ helpers

def _get(solution: Any, key: str, default: Any) -> Any:
    """`solution.get(key, default)`: only a mapping has it (anything else raised in the original)."""
    if not isinstance(solution, dict):
        raise _Crash("not a dictionary")
    return solution.get(key, default)


def _lower_is_yes(value: Any) -> bool:
    if isinstance(value, bytes):  # b'NO'.lower() works in the original, and bytes never equal 'yes': read as a no
        return False
    if not isinstance(value, str):  # `.lower()` of a non-string raised; the checkers caught it: wrong
        raise _Crash("not a string")
    return value.lower() == "yes"


def _int(value: Any) -> int:
    """Python's int() as the checkers call it: ints, bools, floats (truncated) and digit strings."""
    if isinstance(value, int | float | str | bytes):
        return int(value)
    raise _Crash(f"int() of {type(value).__name__}")


# ------------------------------------------------------------------------------------------------ P tasks

def _bsp(data: dict[str, Any], parsed: Any, _iid: str) -> bool:
    # the open checker parses its input again as a tagged answer: a dict (what the runner gives it) has no tags
    if not isinstance(parsed, str):
        return False
    again = parse_tagged(parsed)
    if isinstance(again, ParseError) or not isinstance(again, dict) or "Position" not in again:
        return False
    array = sorted(data["array"])
    position = _int(again["Position"])
    if position == -1 or position >= len(array):
        return False
    return array[position] == data["target"]  # negative positions index from the end, as in the original


def _edit_distance(a: str, b: str) -> int:
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cur[j] = prev[j - 1] if a[i - 1] == b[j - 1] else 1 + min(prev[j], cur[j - 1], prev[j - 1])
        prev = cur
    return prev[-1]


def _edp(data: dict[str, Any], parsed: Any, _iid: str) -> bool:
    try:
        reported = _int(_get(parsed, "Operations", -1))
    except Exception:
        return False
    return reported != -1 and reported == _edit_distance(data["string_a"], data["string_b"])


def _spp(data: dict[str, Any], parsed: Any, _iid: str) -> bool:
    start, end = data["start"], data["end"]
    path_string, cost = _get(parsed, "Path", ""), _get(parsed, "TotalDistance", "")
    edges = data["edges"]
    adj: dict[int, dict[int, int]] = {}
    for e in edges:  # networkx keeps the last weight given for an edge
        adj.setdefault(e["u"], {})[e["v"]] = e["weight"]
        adj.setdefault(e["v"], {})[e["u"]] = e["weight"]
    best = _dijkstra(adj, start, end)
    if best is None:
        if isinstance(cost, int):
            return False
        if not isinstance(cost, str):
            raise _Crash("isdigit() of a non-string")
        return not cost.isdigit()
    if not isinstance(path_string, str):
        return False
    try:
        path = [int(p) for p in path_string.split("->")]
        total = _int(cost)
    except Exception:
        return False
    if not path or path[0] != start or path[-1] != end:
        return False
    walked = 0
    for a, b in zip(path, path[1:], strict=False):
        edge = next((e for e in edges if (e["u"], e["v"]) in ((a, b), (b, a))), None)
        if edge is None:
            return False
        walked += edge["weight"]
    return walked == total and walked == best


def _dijkstra(adj: dict[int, dict[int, int]], s: int, t: int) -> int | None:
    dist = {s: 0}
    heap = [(0, s)]
    while heap:
        d, u = heapq.heappop(heap)
        if u == t:
            return d
        if d > dist.get(u, d):
            continue
        for v, w in adj.get(u, {}).items():
            if d + w < dist.get(v, d + w + 1):
                dist[v] = d + w
                heapq.heappush(heap, (d + w, v))
    return 0 if s == t else None


# ------------------------------------------------------------------------------------------------ NP-complete

def _knapsack_optimum(items: list[dict[str, Any]], capacity: int) -> int:
    dp = [0] * (capacity + 1)
    for it in items:
        w, v = it["weight"], it["value"]
        for c in range(capacity, w - 1, -1):
            dp[c] = max(dp[c], v + dp[c - w])
    return dp[capacity]


def _ksp(data: dict[str, Any], parsed: Any, _iid: str) -> bool:
    items = {it["id"]: (it["weight"], it["value"]) for it in data["items"]}
    capacity = data["capacity"]
    optimum = _knapsack_optimum(data["items"], capacity)
    feasible = _lower_is_yes(_get(parsed, "Feasible", ""))
    if feasible != (optimum > 0):
        return False
    try:
        total_value = _int(_get(parsed, "TotalValue", -1))
        ids = _get(parsed, "SelectedItemIds", [])
        if isinstance(ids, int | float) or ids is None:
            return False  # not iterable: the original's map() raised inside its try
        selected = [_int(i) for i in ids]
    except Exception:
        return False
    if len(set(selected)) != len(selected):
        return False
    weight = value = 0
    for i in selected:
        if i not in items:
            return False
        weight += items[i][0]
        value += items[i][1]
    return weight <= capacity and total_value == value and total_value == optimum


def _tspd(data: dict[str, Any], parsed: Any, _iid: str) -> bool:
    feasible = _lower_is_yes(_get(parsed, "Feasible", "no"))
    import networkx as nx
    import numpy as np

    matrix = np.array(data["distances"], dtype=float)
    tour = nx.approximation.traveling_salesman_problem(nx.from_numpy_array(matrix))
    length = sum(matrix[tour[i], tour[i + 1]] for i in range(len(tour) - 1)) + matrix[tour[-1], tour[0]]
    return feasible == bool(length <= data["threshold"])


def greedy_colour_count(num_vertices: int, edges: list[Any]) -> int:
    """networkx's greedy colouring with the `largest_first` strategy on vertices 1..n (the original's truth)."""
    import networkx as nx

    g = nx.Graph()
    g.add_nodes_from(range(1, num_vertices + 1))
    g.add_edges_from((u, v) for u, v in edges if 1 <= u <= num_vertices and 1 <= v <= num_vertices)
    colouring = nx.coloring.greedy_color(g, strategy="largest_first")
    return max(colouring.values()) + 1 if colouring else 0


def _gcpd(data: dict[str, Any], parsed: Any, _iid: str) -> bool:
    feasible = _lower_is_yes(_get(parsed, "Feasible", "no"))
    return feasible == (greedy_colour_count(data["num_vertices"], data["edges"]) <= data["k"])


# ------------------------------------------------------------------------------------------------ NP-hard

def _hard_mapping(text: Any, *, none_is_empty: bool = False) -> dict[int, Any]:
    found: HardAnswer | None = parse_hard(text)
    value = hard_literal(found)
    if isinstance(value, ParseError):
        if none_is_empty and (found is None or not found.from_xml):
            return {}  # GCP's parse_answer gives {} when there is no answer or the tagged text does not read
        raise _Crash(value.kind)
    if not isinstance(value, dict):
        raise _Crash("not a mapping")
    return {int(k): v for k, v in value.items()}


def tsp_start(instance_id: str, n: int) -> int:
    """The nearest-neighbour tour's start city: the original draws it unseeded (np.random.choice); here a
    fixed draw from the instance id, so every run grades the same answer the same way."""
    return int.from_bytes(hashlib.sha256(instance_id.encode()).digest()[:8], "big") % n


def nearest_neighbour_length(matrix: list[list[float]], start: int) -> float:
    """The original's greedy tour length: nearest unvisited city (ties to the lowest index), summed in order."""
    unvisited = set(range(len(matrix)))
    current, total = start, 0.0
    while unvisited:
        unvisited.discard(current)
        if unvisited:
            nxt = min(sorted(unvisited), key=lambda c: matrix[current][c])
            total += matrix[current][nxt]
            current = nxt
    return total + matrix[current][start]


def _tsp(data: dict[str, Any], text: Any, iid: str) -> bool:
    found = parse_hard(text)
    value = hard_literal(found)
    if isinstance(value, ParseError) or not isinstance(value, dict) or "Path" not in value:
        return False
    path = value["Path"]
    if path is None or not isinstance(path, str):
        return False
    try:
        tour = [int(p) for p in path.split("->")]
    except ValueError:
        return False
    matrix = data["distances"]
    n = len(matrix)
    if tour[0] != tour[-1] or len(tour) != n + 1:
        return False
    if any(not -n <= c < n for c in tour):
        raise _Crash("city out of range")  # IndexError in the original
    length = 0
    for a, b in zip(tour, tour[1:], strict=False):
        length += matrix[a][b]
    return length == nearest_neighbour_length(matrix, tsp_start(iid, n))


def _gcp(data: dict[str, Any], text: Any, _iid: str) -> bool:
    colours = _hard_mapping(text, none_is_empty=True)
    n = data["num_vertices"]
    adjacency: dict[int, set[int]] = {v: set() for v in range(1, n + 1)}
    for u, v in data["edges"]:
        if u in adjacency and v in adjacency:
            adjacency[u].add(v)
            adjacency[v].add(u)
    for v, neighbours in adjacency.items():
        for w in neighbours:
            if v not in colours or w not in colours or colours[v] == colours[w]:
                return False
    try:  # before its True the original prints how many colours it saw, a set of them: an unhashable colour
        set(colours.values())  # (a list, a dict) raises there, uncaught, and the run stops
    except TypeError:
        raise _Crash("unhashable colour") from None
    return True


def _msp(data: dict[str, Any], text: Any, _iid: str) -> bool:
    found = parse_hard(text)
    value = hard_literal(found)
    if isinstance(value, ParseError) or value is None or not isinstance(value, dict):
        return False
    solution = {int(k): v for k, v in value.items()}
    slots_total = data["num_slots"]
    durations = {m["id"]: m.get("duration", 1) for m in data["meetings"]}
    for m in data["meetings"]:
        slots = solution.get(m["id"])
        if slots is None:
            return False
        # bytes iterate and index as ints: to the original b'\x01' is the slot list [1]
        if not isinstance(slots, list | tuple | set | dict | str | bytes):
            raise _Crash("slots not iterable")
        if any(_ge(s, slots_total) for s in slots):
            return False
        if isinstance(slots, set | dict) and len(slots) > 1:
            raise _Crash("slots not indexable")  # the contiguity test indexes them
        slots = list(slots)
        if len(slots) != m.get("duration", 1) or not all(slots[i] + 1 == slots[i + 1] for i in range(len(slots) - 1)):
            return False
        for p in data["participants"]:
            if m["id"] in p["meetings"] and not all(s in p["available_slots"] for s in slots):
                return False
    booked: dict[int, list[Any]] = {p["id"]: [] for p in data["participants"]}
    for m_id, slots in solution.items():
        if m_id not in durations:
            return False
        try:
            if len(slots) != durations[m_id]:
                return False
        except TypeError:
            return False
        for p in data["participants"]:
            if m_id in p["meetings"]:
                booked[p["id"]].extend(slots)
    return all(len(s) == len(set(s)) for s in booked.values())


def _ge(slot: Any, bound: int) -> bool:
    if isinstance(slot, bool | int | float):
        return slot >= bound
    raise _Crash("slot not a number")  # TypeError in the original


_CHECKERS = {"BSP": _bsp, "EDP": _edp, "SPP": _spp, "KSP": _ksp, "TSP-D": _tspd, "GCP-D": _gcpd,
             "TSP": _tsp, "GCP": _gcp, "MSP": _msp}
