"""`parser: paper` against the original code on model outputs written from scratch.

`paper_parser_published.py` and `paper_parser_variants.py` check the reproduction of the original NPHardEval4V
code on the papers' published outputs and on rewrites of them; those outputs are almost never right answers,
so the checkers' branches for a right answer, a near miss and the many ways a capable model spells a right
answer are taken rarely. Here the outputs are built from nothing but the instances (`Data/` of the 4V
repository, read with `nphe4v.peer.read`):

* **answers** from exact solutions computed here (brute force, not the project's solvers): BSP every position
  of the target in the sorted array, EDP the edit distance, SPP every simple start-end path with its cost, KSP
  every subset (optimal, best suboptimal, over capacity), TSP-D and GCP-D the exact truth (a tour within the
  threshold, or the Held-Karp optimum; the exact chromatic number against k) and GCP-D also networkx's greedy
  count (the original's truth), TSP the Held-Karp tour and nearest-neighbour tours (the original compares
  with one from a random start), GCP an exact colouring, MSP a complete schedule by backtracking where one
  exists; then near misses (off by one, one element swapped, suboptimal but feasible, over capacity, a conflict,
  a 1-based answer) and wrong ones;
* **spellings** of the answer: the keys as asked and near them (case, spaces, snake case, extra, missing,
  reordered, nested one level down), values as strings or floats or of odd Python types (bytes, complex, a
  tuple or a set), paths as lists or "0 -> 1" or with arrows; rendered as Python or JSON literals,
  pretty-printed, with trailing commas, smart quotes, a lead-in sentence, without braces, as YAML-like lines,
  as XML child elements;
* **envelopes**: `<root>` with the reasoning before or after the answer, no `<root>`, no reasoning tags, a
  `<think>` block, code fences around the whole or inside the answer, a draft block before the final one, an
  unclosed tag, an XML declaration, a namespace, CDATA, escaped entities, an attribute, a tag in other case,
  HTML in the reasoning, the format echoed before the answer, no tags at all, text around.

Every choice is drawn from a `random.Random` seeded per instance from a string, and nothing is printed in hash
order (no set of strings), so the texts are the same in every process and on every machine. The ORIGINAL parsers and checkers (`Open/check/*.py` at 61e8020, executed as
`paper_parser_published.original_decision` executes them, TSP with the same seeded start) and
`nphe4v.scoring.score_answer_paper` decide each output; the script prints the counts per task and every
disagreement, and exits 1 when there is one.

Usage: PYTHONPATH=$PWD python bench/paper_parser_fresh.py --upstream PATH [--seed 0] [--show 5]
`--write-golden FILE` keeps the original's decisions (tests/snapshots/paper_decisions_fresh.json), which
tests/test_paper_fresh.py checks `parser: paper` against without the original code.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import math
import random
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from paper_parser_published import TASKS, our_instances  # noqa: E402
from paper_parser_variants import Decisions  # noqa: E402

from evalcore.schema import Instance  # noqa: E402
from nphe4v.paper_check import tsp_start  # noqa: E402

# outputs per instance and task (TSP-D's checker builds a Christofides tour per answer: fewer, for the test's time)
PER_INSTANCE = {"BSP": 30, "EDP": 32, "SPP": 36, "KSP": 36, "TSP-D": 10, "GCP-D": 30, "TSP": 44, "GCP": 40,
                "MSP": 36}
Answer = tuple[str, Any]  # (kind: correct / near / wrong, the answer as a Python value)


# ------------------------------------------------------------------------------------------------ solutions

def edit_distance(a: str, b: str) -> int:
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(prev[j - 1] if ca == cb else 1 + min(prev[j], cur[j - 1], prev[j - 1]))
        prev = cur
    return prev[-1]


def simple_paths(data: dict[str, Any], limit: int = 400) -> list[tuple[int, list[int]]]:
    """(cost, path) of the simple start-end paths, cheapest first; a hop costs the first listed edge's weight."""
    adj: dict[int, list[int]] = {}
    weight: dict[tuple[int, int], int] = {}
    for e in data["edges"]:
        for a, b in ((e["u"], e["v"]), (e["v"], e["u"])):
            adj.setdefault(a, []).append(b)
            weight.setdefault((a, b), e["weight"])
    out: list[tuple[int, list[int]]] = []
    stack = [(data["start"], [data["start"]], 0)]
    while stack and len(out) < limit:
        node, path, cost = stack.pop()
        if node == data["end"]:
            out.append((cost, path))
            continue
        for nxt in sorted(adj.get(node, []), reverse=True):
            if nxt not in path:
                stack.append((nxt, [*path, nxt], cost + weight[(node, nxt)]))
    return sorted(out)


def knapsack_sets(data: dict[str, Any]) -> tuple[int, list[list[int]], list[list[int]], list[list[int]]]:
    """(optimum, optimal id sets, best suboptimal sets, over-capacity sets worth more) by enumerating subsets."""
    items, cap = data["items"], data["capacity"]
    n = len(items)
    w = [0] * (1 << n)
    v = [0] * (1 << n)
    for mask in range(1, 1 << n):
        low = (mask & -mask).bit_length() - 1
        w[mask] = w[mask & (mask - 1)] + items[low]["weight"]
        v[mask] = v[mask & (mask - 1)] + items[low]["value"]
    opt = max(v[m] for m in range(1 << n) if w[m] <= cap)
    below = max((v[m] for m in range(1 << n) if w[m] <= cap and v[m] < opt), default=0)

    def ids(mask: int) -> list[int]:
        return [items[i]["id"] for i in range(n) if mask >> i & 1]

    best = [ids(m) for m in range(1 << n) if w[m] <= cap and v[m] == opt][:6]
    sub = [ids(m) for m in range(1 << n) if w[m] <= cap and v[m] == below][:6]
    over = [ids(m) for m in range(1 << n) if w[m] > cap and v[m] > opt][:6]
    return opt, best, sub, over


def held_karp(dist: list[list[float]]) -> tuple[float, list[int]]:
    """The optimal closed tour from city 0 (numpy, one layer of subsets at a time)."""
    d = np.asarray(dist, dtype=float)
    n = len(d)
    m = n - 1
    full = 1 << m
    dp = np.full((full, m), np.inf)
    parent = np.full((full, m), -1, dtype=np.int64)
    for j in range(m):
        dp[1 << j, j] = d[0, j + 1]
    sizes = np.zeros(full, dtype=np.int64)
    for j in range(m):
        sizes += (np.arange(full) >> j) & 1
    inner = d[1:, 1:]
    for size in range(2, m + 1):
        masks = np.nonzero(sizes == size)[0]
        for k in range(m):
            with_k = masks[(masks >> k) & 1 == 1]
            prev = with_k ^ (1 << k)
            cand = dp[prev] + inner[:, k][None, :]
            parent[with_k, k] = cand.argmin(axis=1)
            dp[with_k, k] = cand.min(axis=1)
    closing = dp[full - 1] + d[1:, 0]
    last = int(closing.argmin())
    tour, mask = [], full - 1
    while last >= 0:
        tour.append(last + 1)
        mask, last = mask ^ (1 << last), int(parent[mask, last])
    tour = [0, *reversed(tour), 0]
    return float(closing.min()), tour


def nearest_neighbour(dist: list[list[float]], start: int) -> list[int]:
    tour, left = [start], set(range(len(dist))) - {start}
    while left:
        tour.append(min(sorted(left), key=lambda c: dist[tour[-1]][c]))
        left.discard(tour[-1])
    return [*tour, start]


def exact_colouring(n: int, edges: list[list[int]]) -> dict[int, int]:
    """A colouring of vertices 1..n with the fewest colours (backtracking, most-constrained vertex first)."""
    adj: dict[int, set[int]] = {v: set() for v in range(1, n + 1)}
    for u, v in edges:
        adj[u].add(v)
        adj[v].add(u)
    for k in range(1, n + 1):
        col: dict[int, int] = {}

        def place(col: dict[int, int] = col, k: int = k) -> bool:
            if len(col) == n:
                return True
            v = max((u for u in adj if u not in col),
                    key=lambda u: (len({col[x] for x in adj[u] if x in col}), len(adj[u]), -u))
            for c in range(k):
                if all(col.get(x) != c for x in adj[v]):
                    col[v] = c
                    if place():
                        return True
                    del col[v]
            return False

        if place():
            return dict(sorted(col.items()))
    raise AssertionError("unreachable")


def greedy_count(n: int, edges: list[list[int]]) -> int:
    import networkx as nx

    g = nx.Graph()
    g.add_nodes_from(range(1, n + 1))
    g.add_edges_from(map(tuple, edges))
    return max(nx.coloring.greedy_color(g, strategy="largest_first").values()) + 1


def msp_schedule(data: dict[str, Any]) -> tuple[dict[int, list[int]] | None, dict[int, list[int]]]:
    """(a complete conflict-free schedule or None, a best-effort one: each meeting at the slot most of its
    attendees have free)."""
    slots = data["num_slots"]
    attendees = {m["id"]: [p for p in data["participants"] if m["id"] in p["meetings"]] for m in data["meetings"]}
    dur = {m["id"]: m.get("duration", 1) for m in data["meetings"]}

    def free(mid: int, s: int) -> int:
        return sum(all(t in p["available_slots"] for t in range(s, s + dur[mid])) for p in attendees[mid])

    options = {mid: [s for s in range(slots - dur[mid] + 1) if free(mid, s) == len(attendees[mid])]
               for mid in dur}
    effort = {mid: list(range(s, s + dur[mid])) for mid in dur
              for s in [max(range(slots - dur[mid] + 1), key=lambda s, mid=mid: (free(mid, s), -s))]}
    clash = {a: {b for b in dur if b != a and any(p in attendees[b] for p in attendees[a])} for a in dur}
    order = sorted(dur, key=lambda mid: (len(options[mid]), mid))
    chosen: dict[int, int] = {}

    def place(i: int) -> bool:
        if i == len(order):
            return True
        mid = order[i]
        for s in options[mid]:
            taken = {t for b in clash[mid] if b in chosen for t in range(chosen[b], chosen[b] + dur[b])}
            if not taken & set(range(s, s + dur[mid])):
                chosen[mid] = s
                if place(i + 1):
                    return True
                del chosen[mid]
        return False

    if all(options.values()) and place(0):
        return {mid: list(range(chosen[mid], chosen[mid] + dur[mid])) for mid in sorted(dur)}, effort
    return None, effort


def _join(path: list[int]) -> str:
    return "->".join(map(str, path))


def candidates(inst: Instance) -> tuple[dict[str, list[Any]], str]:
    """The answers a model could give for one instance, by kind, and a line of reasoning about them."""
    t, d = inst.task, inst.data
    if t == "BSP":
        arr, target = sorted(d["array"]), d["target"]
        pos = [i for i, x in enumerate(arr) if x == target]
        peer = inst.meta.get("peer_array", arr)
        near = [pos[0] + 1, pos[0] - 1, peer.index(target), -1, len(arr), pos[0] - len(arr), target]
        return ({"correct": [{"Position": p} for p in pos], "near": [{"Position": p} for p in near],
                 "wrong": [{"Position": None}, {"Position": "NOT_FOUND"}, {}, {"Index": pos[0]}]},
                f"The sorted array is {arr}; binary search for {target} ends at index {pos[0]}.")
    if t == "EDP":
        k = edit_distance(d["string_a"], d["string_b"])
        near = [k + 1, k - 1, k + 2, max(len(d["string_a"]), len(d["string_b"]))]
        return ({"correct": [{"Operations": k}], "near": [{"Operations": x} for x in near],
                 "wrong": [{"Operations": 0}, {"Operations": -1}, {"Operations": "N"}, {"Distance": k}]},
                f"Filling the DP table for '{d['string_a']}' -> '{d['string_b']}' gives {k} edits at the corner.")
    if t == "SPP":
        paths = simple_paths(d)
        best = paths[0][0]
        opt = [p for c, p in paths if c == best]
        sub = [(c, p) for c, p in paths if c > best][:4]
        o = opt[0]
        near = [{"Path": _join(p), "TotalDistance": c} for c, p in sub]
        near += [{"Path": _join(o), "TotalDistance": best + 1}, {"Path": _join(o[::-1]), "TotalDistance": best},
                 {"Path": _join(o[:-1]), "TotalDistance": best}]
        if len(o) > 2:
            near.append({"Path": _join(o[:1] + o[2:]), "TotalDistance": best})
        return ({"correct": [{"Path": _join(p), "TotalDistance": best} for p in opt], "near": near,
                 "wrong": [{"Path": f"{d['start']}->{d['end']}", "TotalDistance": 1}, {"Path": _join(o)},
                           {"TotalDistance": best}]},
                f"Dijkstra from {d['start']}: the cheapest route {_join(o)} costs {best} (next best "
                f"{sub[0][0] if sub else 'none'}).")
    if t == "KSP":
        opt, best, sub, over = knapsack_sets(d)

        def ans(v: int, ids: list[int], feas: str = "YES") -> dict[str, Any]:
            return {"Feasible": feas, "TotalValue": v, "SelectedItemIds": ids}

        values = {it["id"]: it["value"] for it in d["items"]}
        near = [ans(sum(values[i] for i in s), s) for s in sub + over[:2]]
        near += [ans(opt + 1, best[0]), ans(opt, [i + 1 for i in best[0]]), ans(opt, best[0] + best[0][:1]),
                 {"Feasible": "YES", "TotalValue": opt}, ans(opt, best[0], "NO")]
        return ({"correct": [ans(opt, s) for s in best], "near": near,
                 "wrong": [ans(0, [], "NO"), {"TotalValue": opt}, ans(opt, list(values))]},
                f"Capacity {d['capacity']}; by DP the best value is {opt} with items {best[0]}.")
    if t == "TSP-D":
        tour = nearest_neighbour(d["distances"], 0)
        length = math.fsum(d["distances"][a][b] for a, b in zip(tour, tour[1:], strict=False))  # the same on every Python
        if length > d["threshold"]:  # the greedy tour is an upper bound: only then is the optimum needed
            length, tour = held_karp(d["distances"])
        yes = length <= d["threshold"]
        return ({"correct": [{"Feasible": "YES" if yes else "NO"}], "near": [{"Feasible": "NO" if yes else "YES"}],
                 "wrong": [{"Feasible": "MAYBE"}, {}, {"TotalDistance": round(length, 2)}]},
                f"A tour {_join(tour)} of length {length:.2f} against the limit {d['threshold']:.2f}.")
    if t == "GCP-D":
        n, edges, k = d["num_vertices"], d["edges"], d["k"]
        chi, greedy = max(exact_colouring(n, edges).values()) + 1, greedy_count(n, edges)
        yes, gyes = ("YES" if chi <= k else "NO"), ("YES" if greedy <= k else "NO")
        return ({"correct": [{"Feasible": yes}, {"Feasible": gyes}],
                 "near": [{"Feasible": "NO" if yes == "YES" else "YES"}],
                 "wrong": [{"Feasible": "UNKNOWN"}, {}, {"Colors": chi}]},
                f"Backtracking finds {chi} colours suffice ({k} allowed); largest-first greedy uses {greedy}.")
    if t == "TSP":
        dist = d["distances"]
        n = len(dist)
        s0 = tsp_start(inst.instance_id, n)
        nn = nearest_neighbour(dist, s0)
        length, opt = held_karp(dist)
        others = [nearest_neighbour(dist, s) for s in range(n) if s != s0]
        rot = [nn[i:-1] + nn[:i] + [nn[i]] for i in range(1, n)]
        swap = nn[:]
        if n > 3:
            swap[1], swap[2] = swap[2], swap[1]
        near = [opt, opt[::-1], nn[::-1], swap, [c + 1 for c in nn], nn[:-1], nn[:-2] + [nn[1], nn[-1]],
                *others[:4], *rot[:3]]
        return ({"correct": [{"Path": _join(nn), "TotalDistance": round(math.fsum(dist[a][b] for a, b in
                                                                                 zip(nn, nn[1:], strict=False)), 2)}],
                 "near": [{"Path": _join(p), "TotalDistance": round(length, 2)} for p in near],
                 "wrong": [{"Path": _join([*range(n), 0])}, {"Path": _join(list(range(n)))}, {"TotalDistance": 0}]},
                f"Nearest neighbour from city {s0} gives {_join(nn)}; the optimum is {length:.2f}.")
    if t == "GCP":
        n, edges = d["num_vertices"], d["edges"]
        col = exact_colouring(n, edges)
        names = ["red", "green", "blue", "yellow", "purple", "orange"]
        good = {v: names[c] for v, c in col.items()}
        touched = sorted({v for e in edges for v in e})
        u, w = edges[0]
        clash = {**good, u: good[w]}
        lonely = {v: c for v, c in good.items() if v in touched}
        near = [clash, {v: c for v, c in good.items() if v != touched[-1]}, {v - 1: c for v, c in good.items()},
                {v: c for v, c in good.items() if v < n}]
        return ({"correct": [good, {v: c + 1 for v, c in col.items()}, {v: v for v in range(1, n + 1)}, lonely],
                 "near": near, "wrong": [{v: "red" for v in range(1, n + 1)}, {}, {"colors": max(col.values()) + 1}]},
                f"Colouring vertices in order of degree with {max(col.values()) + 1} colours: {good}.")
    sched, effort = msp_schedule(d)
    base = sched or effort
    first = min(base)
    slots = d["num_slots"]
    near = [effort, {**base, first: [slots]}, {m: s for m, s in base.items() if m != first},
            {**base, max(base) + 1: [0]}, {**base, first: [base[first][0], base[first][0] + 1]},
            {m: [0] for m in base}]
    verdict = "a clash-free plan exists" if sched else "no plan satisfies everyone"
    return ({"correct": [sched] if sched else [], "near": near, "wrong": [{}, {m: 0 for m in base}, [0, 1]]},
            f"Meetings need slots where every attendee is free; {verdict}: {base}.")


# ------------------------------------------------------------------------------------------------ spellings

def _rekey(v: Any, f: Callable[[str], str], only_first: bool = False) -> Any:
    if not isinstance(v, dict) or not any(isinstance(k, str) for k in v):
        return None
    first = next(k for k in v if isinstance(k, str))
    return {(f(k) if isinstance(k, str) and (not only_first or k == first) else k): x for k, x in v.items()}


def _map_values(v: Any, f: Callable[[Any], Any]) -> Any:
    """`f` applied to every number and string inside `v` (keys kept)."""
    if isinstance(v, dict):
        return {k: _map_values(x, f) for k, x in v.items()}
    if isinstance(v, list):
        return [_map_values(x, f) for x in v]
    return f(v)


def _path(v: Any, f: Callable[[str], Any]) -> Any:
    if not isinstance(v, dict) or not isinstance(v.get("Path"), str):
        return None
    return {k: (f(x) if k == "Path" else x) for k, x in v.items()}


def _field(v: Any, key: str, f: Callable[[Any], Any]) -> Any:
    if not isinstance(v, dict) or key not in v:
        return None
    return {k: (f(x) if k == key else x) for k, x in v.items()}


def _int_keyed(v: Any, f: Callable[[int, Any], tuple[Any, Any]]) -> Any:
    if not isinstance(v, dict) or not v or not all(isinstance(k, int) for k in v):
        return None
    return dict(f(k, x) for k, x in v.items())


def _bytes_ok(x: Any) -> bool:
    return isinstance(x, list) and all(type(c) is int and 0 <= c < 256 for c in x)


def _odd(v: Any, rng: random.Random) -> Any:
    """One value of the answer as a literal of another type a Python-minded model might write."""
    if not isinstance(v, dict) or not v:
        return None
    key = rng.choice(list(v))
    x = v[key]
    odd = {str: lambda: x.encode(), int: lambda: rng.choice([complex(x, 0), (x,), None, True, str(x).encode()]),
           # a set only of numbers: a set of strings prints in the process's hash order
           list: lambda: rng.choice([tuple(x), set(x) if all(isinstance(c, int) for c in x) else tuple(x),
                                     bytes(x) if _bytes_ok(x) else None,
                                     {c: True for c in x if isinstance(c, int)}, None])}.get(type(x))
    return None if odd is None else {**v, key: odd()}


def _snake(k: str) -> str:
    return "".join(("_" + c.lower()) if c.isupper() and i else c.lower() for i, c in enumerate(k))


def _spaced(k: str) -> str:
    return "".join((" " + c) if c.isupper() and i else c for i, c in enumerate(k))


YES_SPELLINGS = ("Yes", "yes", "Y", "TRUE", " YES")
SPELLINGS: list[tuple[str, int, Callable[[Any, random.Random], Any]]] = [
    ("as asked", 60, lambda v, r: v),
    ("keys in lower case", 3, lambda v, r: _rekey(v, str.lower)),
    ("keys in snake case", 3, lambda v, r: _rekey(v, _snake)),
    ("keys with spaces", 2, lambda v, r: _rekey(v, _spaced)),
    ("keys in upper case", 1, lambda v, r: _rekey(v, str.upper)),
    ("a key with a trailing space", 1, lambda v, r: _rekey(v, lambda k: k + " ", only_first=True)),
    ("keys reordered", 6, lambda v, r: dict(reversed(v.items())) if isinstance(v, dict) and len(v) > 1 else None),
    ("an extra key", 6, lambda v, r: {**v, r.choice(["Explanation", "Confidence", "Steps", "Note"]):
                                      r.choice(["see above", 0.9, ["step 1", "step 2"], {"checked": True}])}
     if isinstance(v, dict) else None),
    ("a key dropped", 3, lambda v, r: dict(list(v.items())[1:]) if isinstance(v, dict) and len(v) > 1 else None),
    ("numbers as strings", 7, lambda v, r: _map_values(v, lambda x: str(x) if isinstance(x, int | float)
                                                       and not isinstance(x, bool) else x)),
    ("numbers as floats", 3, lambda v, r: _map_values(v, lambda x: float(x) if isinstance(x, int)
                                                      and not isinstance(x, bool) else x)),
    ("nested one level down", 3, lambda v, r: {r.choice(["final_answer", "answer", "Answer"]): v}),
    ("inside a list", 2, lambda v, r: [v]),
    ("the bare value", 2, lambda v, r: next(iter(v.values())) if isinstance(v, dict) and len(v) == 1 else None),
    ("YES/NO as booleans", 3, lambda v, r: _field(v, "Feasible", lambda x: {"YES": True, "NO": False}.get(x, x))),
    ("YES/NO in other case", 5, lambda v, r: _field(v, "Feasible", lambda x: r.choice(YES_SPELLINGS)
                                                    if x == "YES" else r.choice(["No", "no", "N", " NO"]))),
    ("path as a list", 4, lambda v, r: _path(v, lambda p: [int(c) if c.strip().isdigit() else c for c in p.split("->")])),
    ("path with spaces", 5, lambda v, r: _path(v, lambda p: p.replace("->", " -> "))),
    ("path with arrows", 2, lambda v, r: _path(v, lambda p: p.replace("->", r.choice(["\u2192", " \u2192 "])))),
    ("path with dashes", 2, lambda v, r: _path(v, lambda p: p.replace("->", "-"))),
    ("path with commas", 1, lambda v, r: _path(v, lambda p: p.replace("->", ", "))),
    ("path with padding", 1, lambda v, r: _path(v, lambda p: f" {p}\n")),
    ("ids as strings", 3, lambda v, r: _field(v, "SelectedItemIds", lambda x: [str(i) for i in x])),
    ("ids as a string", 2, lambda v, r: _field(v, "SelectedItemIds", lambda x: ", ".join(map(str, x)))),
    ("ids as digits", 1, lambda v, r: _field(v, "SelectedItemIds", lambda x: "".join(map(str, x)))),
    ("ids as a tuple", 1, lambda v, r: _field(v, "SelectedItemIds", tuple)),
    ("ids as a set", 1, lambda v, r: _field(v, "SelectedItemIds", set)  # of numbers only (see _odd)
     if isinstance(v, dict) and isinstance(v.get("SelectedItemIds"), list)
     and all(isinstance(i, int) for i in v["SelectedItemIds"]) else None),
    ("vertex keys as strings", 5, lambda v, r: _int_keyed(v, lambda k, x: (str(k), x))),
    ("vertex keys named", 2, lambda v, r: _int_keyed(v, lambda k, x: (f"{r.choice(['Vertex', 'Meeting'])} {k}", x))),
    ("values as numbers", 2, lambda v, r: _int_keyed(v, lambda k, x: (k, x[0] if isinstance(x, list) and x else
                                                                       (len(x) if isinstance(x, str) else x)))),
    ("values as tuples", 2, lambda v, r: _int_keyed(v, lambda k, x: (k, tuple(x) if isinstance(x, list) else x))),
    ("values as strings", 2, lambda v, r: _int_keyed(v, lambda k, x: (k, str(x)))),
    ("values in lists", 1, lambda v, r: _int_keyed(v, lambda k, x: (k, x if isinstance(x, list) else [x]))),
    ("a value of an odd Python type", 3, lambda v, r: _odd(v, r)),
    ("slot lists as bytes", 1, lambda v, r: _int_keyed(v, lambda k, x: (k, bytes(x) if _bytes_ok(x) else x))),
    ("colouring nested", 2, lambda v, r: _int_keyed(v, lambda k, x: (k, x)) and {"coloring": v, "colors": 3}),
]


def _json(v: Any, **kw: Any) -> str:
    try:
        return json.dumps(v, ensure_ascii=False, **kw)
    except TypeError:  # a set or a tuple key: JSON has none, a model would write the Python literal
        return repr(v)


def _pretty(v: Any) -> str:
    if not isinstance(v, dict) or not v:
        return repr(v)
    return "{\n" + "".join(f"    {k!r}: {x!r},\n" for k, x in v.items()) + "}"


def _lines(v: Any, sep: str, join: str) -> str:
    if not isinstance(v, dict):
        return str(v)
    return join.join(f"{k}{sep}{x}" for k, x in v.items())


def _xml_children(v: Any) -> str:
    if not isinstance(v, dict):
        return str(v)
    return "".join(f"\n  <{k}>{x}</{k}>" if isinstance(k, str) and k.isidentifier() else
                   f'\n  <item key="{k}">{x}</item>' for k, x in v.items()) + "\n"


RENDERINGS: list[tuple[str, int, Callable[[Any], str]]] = [
    ("python", 40, repr),
    ("json", 22, _json),
    ("json indented", 6, lambda v: _json(v, indent=2)),
    ("python pretty, trailing comma", 6, _pretty),
    ("python spaced", 3, lambda v: repr(v).replace(": ", " : ").replace("{", "{ ").replace("}", " }")),
    ("python in double quotes", 4, lambda v: repr(v).replace("'", '"')),
    ("json, trailing comma", 3, lambda v: _json(v)[:-1] + ",}" if isinstance(v, dict) and v else _json(v)),
    ("without braces", 3, lambda v: repr(v)[1:-1] if isinstance(v, dict) else repr(v)),
    ("yaml-like lines", 3, lambda v: _lines(v, ": ", "\n")),
    ("key=value", 2, lambda v: _lines(v, "=", ", ")),
    ("xml children", 3, _xml_children),
    ("with a comment", 2, lambda v: repr(v) + "  # final"),
    ("json, then a sentence", 2, lambda v: _json(v) + "\nThis is optimal."),
    ("with a lead-in", 2, lambda v: "The answer is " + repr(v)),
    ("smart quotes", 2, lambda v: repr(v).replace("'", "\u2018", 1).replace("'", "\u2019")),
    ("as a json string", 1, lambda v: json.dumps(_json(v))),
    ("two candidates", 1, lambda v: f"{v!r} or {v!r}"),
]


# ------------------------------------------------------------------------------------------------ envelopes

def _esc(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def _root(r: str, b: str, *, before: bool = True, nl: str = "\n") -> str:
    parts = [f"<reasoning>{r}</reasoning>", f"<final_answer>{b}</final_answer>"]
    return f"<root>{nl}" + nl.join(parts if before else parts[::-1]) + f"{nl}</root>"


FENCE = "```"
ENVELOPES: list[tuple[str, int, Callable[[str, str, str, random.Random], str]]] = [
    ("root", 40, lambda r, b, dr, g: _root(r, b)),
    ("root, one line", 6, lambda r, b, dr, g: _root(r, b, nl="")),
    ("root, indented answer", 3, lambda r, b, dr, g: _root(r, f"\n    {b}\n  ", nl="\n  ")),
    ("root, answer first", 4, lambda r, b, dr, g: _root(r, b, before=False)),
    ("no root", 12, lambda r, b, dr, g: f"<reasoning>{r}</reasoning>\n<final_answer>{b}</final_answer>"),
    ("no reasoning tags", 6, lambda r, b, dr, g: f"{r}\n\n<final_answer>{b}</final_answer>"),
    ("answer tag only", 4, lambda r, b, dr, g: f"<final_answer>{b}</final_answer>"),
    ("answer first, no root", 3, lambda r, b, dr, g: f"<final_answer>{b}</final_answer>\n<reasoning>{r}</reasoning>"),
    ("chatty", 6, lambda r, b, dr, g: f"Sure! Let me work through it.\n\n{_root(r, b)}\n\nHope this helps."),
    ("fenced xml", 4, lambda r, b, dr, g: f"{FENCE}xml\n{_root(r, b)}\n{FENCE}"),
    ("fence inside the answer", 4, lambda r, b, dr, g: _root(r, f"\n{FENCE}{g.choice(['python', 'json', ''])}\n{b}"
                                                             f"\n{FENCE}\n")),
    ("think block first", 5, lambda r, b, dr, g: f"<think>\n{r}\nSo the answer is {b}.\n</think>\n\n{_root(r, b)}"),
    ("draft block first", 5, lambda r, b, dr, g: f"<root>\n<reasoning>{r}</reasoning>\n<final_answer>{dr}"
                                                 f"</final_answer>\nWait, let me re-check.\n<final_answer>{b}"
                                                 "</final_answer>\n</root>"),
    ("answer repeated", 2, lambda r, b, dr, g: f"{_root(r, b)}\nFinal: <final_answer>{b}</final_answer>"),
    ("answer closing tag missing", 3, lambda r, b, dr, g: f"<root>\n<reasoning>{r}</reasoning>\n<final_answer>{b}"
                                                          "\n</root>"),
    ("reasoning closing tag missing", 3, lambda r, b, dr, g: f"<reasoning>{r}\n<final_answer>{b}</final_answer>"),
    ("root closing tag missing", 2, lambda r, b, dr, g: f"<root>\n<reasoning>{r}</reasoning>\n<final_answer>{b}"
                                                        "</final_answer>"),
    ("self-closing reasoning", 2, lambda r, b, dr, g: f"<root><reasoning/><final_answer>{b}</final_answer></root>"),
    ("empty reasoning", 2, lambda r, b, dr, g: _root("", b)),
    ("tag named in the text first", 3, lambda r, b, dr, g: f"I will put the result in <final_answer> tags.\n"
                                                           f"{_root(r, b)}"),
    ("xml declaration", 2, lambda r, b, dr, g: f'<?xml version="1.0" encoding="UTF-8"?>\n{_root(r, b)}'),
    ("surrounding blank lines", 3, lambda r, b, dr, g: f"\n\n  {_root(r, b)}  \n\n"),
    ("cdata", 2, lambda r, b, dr, g: _root(r, f"<![CDATA[{b}]]>")),
    ("escaped entities", 3, lambda r, b, dr, g: _root(_esc(r), _esc(b))),
    ("attribute on the tag", 2, lambda r, b, dr, g: f'<root><reasoning>{r}</reasoning><final_answer format="dict">'
                                                    f"{b}</final_answer></root>"),
    ("tags in other case", 2, lambda r, b, dr, g: f"<Reasoning>{r}</Reasoning>\n<{g.choice(['Final_Answer', 'FINAL_ANSWER'])}>"
                                                  f"{b}</{g.choice(['Final_Answer', 'FINAL_ANSWER'])}>"),
    ("answer tag", 2, lambda r, b, dr, g: f"<reasoning>{r}</reasoning>\n<answer>{b}</answer>"),
    ("markdown", 3, lambda r, b, dr, g: f"### Reasoning\n{r}\n\n### Final answer\n**<final_answer>{b}</final_answer>**"),
    ("nested in another element", 2, lambda r, b, dr, g: f"<root><reasoning>{r}</reasoning><answer><final_answer>{b}"
                                                          "</final_answer></answer></root>"),
    ("two roots", 2, lambda r, b, dr, g: f"{_root(r, dr)}\n{_root(r, b)}"),
    ("windows newlines", 2, lambda r, b, dr, g: _root(r, b).replace("\n", "\r\n")),
    ("format echoed first", 2, lambda r, b, dr, g: f"Format: <reasoning>...</reasoning> "
                                                   f"<final_answer>{g.choice(['...', '{...}', 'ANSWER'])}"
                                                   f"</final_answer>\n{_root(r, b)}"),
    ("empty answer block", 1, lambda r, b, dr, g: _root(r, g.choice(["", " ", "\n"]))),
    ("answer in the reasoning only", 1, lambda r, b, dr, g: f"<root><reasoning>{r} So: {b}</reasoning></root>"),
    ("no tags, fenced json", 3, lambda r, b, dr, g: f"{r}\n\n**Final answer:**\n{FENCE}json\n{b}\n{FENCE}"),
    ("boxed", 1, lambda r, b, dr, g: f"{r}\n\nThe final answer is $\\boxed{{{b}}}$."),
    ("namespaced root", 1, lambda r, b, dr, g: _root(r, b).replace("<root>", '<root xmlns="urn:answer">', 1)),
    ("html in the reasoning", 2, lambda r, b, dr, g: _root(f"<b>Plan</b>{g.choice(['<br/>', '<br>'])}{r}", b)),
    ("json envelope", 2, lambda r, b, dr, g: json.dumps({"reasoning": r, "final_answer": b})),
]


def _reasoning(base: str, rng: random.Random) -> str:
    """The reasoning a model writes: the line about the instance, sometimes with characters XML rejects."""
    style = rng.choices(["plain", "steps", "less-than", "ampersand", "braces", "arrow", "quote"],
                        [10, 3, 2, 1, 1, 1, 1])[0]
    return {"plain": base, "steps": f"Step 1: read the data.\nStep 2: {base}\nStep 3: verify.",
            "less-than": f"{base} Every alternative is worse since a < b there.",
            "ampersand": f"{base} Checked feasibility & optimality.", "braces": f"{base} (set {{0, 1}} tried first)",
            "arrow": f"{base} Trace: start -> end.", "quote": f"{base} It's the model's \"best\" guess."}[style]


_CUMULATIVE: dict[int, list[int]] = {}


def _pick(rng: random.Random, table: list[tuple[str, int, Any]]) -> tuple[str, Any]:
    cum = _CUMULATIVE.get(id(table))
    if cum is None:
        cum = _CUMULATIVE[id(table)] = list(itertools.accumulate(w for _n, w, _f in table))
    name, _w, f = rng.choices(table, cum_weights=cum)[0]
    return name, f


def spell(value: Any, rng: random.Random) -> tuple[str, Any]:
    """One spelling (sometimes two) of `value` that applies to it."""
    labels = []
    for _ in range(2 if rng.random() < 0.2 else 1):
        for _try in range(6):
            name, f = _pick(rng, SPELLINGS)
            try:
                new = f(value, rng)
            except (TypeError, ValueError):  # made for another shape (a list of ids, a path string): not this one
                new = None
            if new is not None:
                labels.append(name)
                value = new
                break
    return " + ".join(dict.fromkeys(labels)) or "as asked", value


def output(task: str, cands: dict[str, list[Any]], reason: str, rng: random.Random) -> tuple[str, str]:
    """(label, text) of one model output."""
    kinds = [k for k in ("correct", "near", "wrong") if cands[k]]
    kind = rng.choices(kinds, [{"correct": 50, "near": 35, "wrong": 15}[k] for k in kinds])[0]
    answer = rng.choice(cands[kind])
    spelling, value = spell(answer, rng)
    rendering, render = _pick(rng, RENDERINGS)
    envelope, wrap = _pick(rng, ENVELOPES)
    draft = repr(rng.choice(cands["near"] + cands["wrong"]))
    text = wrap(_reasoning(reason, rng), render(value), draft, rng)
    return f"{kind} | {spelling} | {rendering} | {envelope}", text


def fresh_outputs(data_dir: Path, seed: int) -> Iterator[tuple[str, int, Instance, str, str]]:
    """Every (task, instance index, instance, label, text), in a fixed order: the order the golden bits follow."""
    instances = our_instances(data_dir)
    for task in TASKS:
        for i, inst in enumerate(instances[task]):
            cands, reason = candidates(inst)
            rng = random.Random(f"fresh/{seed}/{task}/{i}")  # a string seed: the same draws in every process
            for _j in range(PER_INSTANCE[task]):
                label, text = output(task, cands, reason, rng)
                yield task, i, inst, label, text


def texts_digest(texts: list[str]) -> str:
    digest = hashlib.sha256()
    for text in texts:
        digest.update(text.encode("utf-8", "surrogatepass") + b"\x00")
    return digest.hexdigest()


def main() -> None:
    from paper_parser_published import load_original_checkers, original_decision, original_instances

    from nphe4v.scoring import score_answer_paper

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--upstream", type=Path, required=True, help="checkout or bare git dir of NPHardEval4V")
    ap.add_argument("--shared", type=Path, default=Path(__file__).resolve().parents[2] / "shared")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--show", type=int, default=5, help="disagreements shown per task")
    ap.add_argument("--write-golden", type=Path, default=None, help="write the original's decisions here")
    args = ap.parse_args()
    data_dir = args.shared / "peers" / "nphardeval4v" / "Data"
    mods = load_original_checkers(args.upstream)
    orig_q = original_instances(data_dir)
    crashes: Counter[str] = Counter()
    dec = Decisions("outputs")
    texts: list[str] = []
    for task, i, inst, label, text in fresh_outputs(data_dir, args.seed):
        o_p, o_c, _dep = original_decision(mods, task, orig_q[task][i], text, inst.instance_id, crashes)
        verdict, _ = score_answer_paper(inst, text)
        dec.add(task, (o_p, o_c), (verdict != "parse_error", verdict == "correct"), label, text)
        dec.stats[task]["built correct"] += label.startswith("correct")
        texts.append(text)
    if args.write_golden:
        doc = {"generated_by": f"bench/paper_parser_fresh.py --seed {args.seed} --write-golden",
               "source": "lizhouf/NPHardEval4V@61e8020 Open/check/*.py, executed as bench/paper_parser_published.py "
                         "executes them (TSP's start: nphe4v.paper_check.tsp_start)",
               "seed": args.seed, "per_instance": PER_INSTANCE, "texts_sha256": texts_digest(texts),
               "cells": dec.cells()}
        args.write_golden.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        print(f"wrote the original code's decisions to {args.write_golden}")
    print(f"original code crashed on: {dict(crashes) or 'none'}")
    cols = ("outputs", "built correct", "orig parsed", "ours parsed", "orig correct", "ours correct", "differ")
    print(f"{'task':6} " + " ".join(f"{c:>13}" for c in cols))
    for task in (*TASKS, "all"):
        s = sum(dec.stats.values(), Counter()) if task == "all" else dec.stats[task]
        print(f"{task:6} " + " ".join(f"{s[c]:13d}" for c in cols))
    print(f"\noutputs decided differently: {len(dec.bad)}")
    for (task, part), c in Counter((t, p) for t, lab, *_ in dec.bad for p in lab.split(" | ")[1:]).most_common(30):
        print(f"  {c:5d}  {task:6} {part}")
    dec.show(args.show, lambda task, label, o, p, text:
             f"-- {task} [{label}] original parsed/correct={o}, ours={p}:\n{text[-600:]}\n")
    sys.exit(1 if dec.bad else 0)

if __name__ == "__main__":
    main()
