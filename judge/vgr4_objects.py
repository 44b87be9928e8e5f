"""VGR v4's objects: the candidate solutions a reading's true claims describe (walks joined hop by hop,
colourings and mappings from runs of assignments) and the best of them (`Credit`: which optimum's critical
facts ONE consistent candidate establishes). The judge (`judge.vgr4`) checks claims; this decides credit."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import networkx as nx

from judge.critical import critical_facts, odd_cycle
from judge.reader import Claim
from judge.rule_grammar import edge_key


@dataclass
class Checked:
    claim: Claim
    truth: str  # true / false / neutral
    error_type: str = "none"
    key: tuple[Any, ...] = ()
    runs_on: bool = False  # walk: its numbers run on from where the previous walk ended (written hop by hop)


# ------------------------------------------------------------------------------------------ objects


def _bare_hop(c: Claim) -> bool:
    """A single hop with no number ("Step 2: go from B to C.")."""
    return len(c.nodes) == 2 and not c.nums and c.value is None and not c.closed


def chain_walks(items: list[Checked]) -> list[list[Checked]]:
    """Consecutive true walks that continue one another (the next starts where the last ended and carries
    running totals, or a total from the first one's start) describe one walk, written hop by hop."""
    out: list[list[Checked]] = []
    for it in items:
        if it.claim.kind != "walk" or it.truth != "true":
            continue
        prev = out[-1][-1].claim if out else None
        follows = prev is not None and prev.nodes[-1] == it.claim.nodes[0] and prev.pos >= it.claim.pos - 2
        if follows and (it.claim.nums or it.runs_on) and (prev.nums or len(prev.nodes) == 2):
            # (a whole walk stated first is its own object; the hop lines after it describe it again)
            out[-1].append(it)
        elif follows and _bare_hop(it.claim) and all(_bare_hop(x.claim) for x in out[-1]):
            out[-1].append(it)  # bare hops: one walk only if a total carries them on or they close (below)
        else:
            out.append([it])
    # hops are one walk only as far as a running total (or a total at the end) carries them on: walks that
    # each state only their own length are separate objects, never joined into a longer one. Bare hops that
    # come back to where they started ("go from A to B", "from B to C", "from C to A") are one closed walk:
    # hop lines are how models write a tour or a cycle, and the closed walk is checked whole like any other.
    kept: list[list[Checked]] = []
    for n, chain in enumerate(out):
        last = max((i for i, it in enumerate(chain) if i and it.runs_on), default=0)
        if n and len(chain) > 1 and joined(chain)[0] == list(out[n - 1][-1].claim.nodes) \
                and out[n - 1][-1].claim.pos >= chain[0].claim.pos - 2:
            last = len(chain) - 1  # the legs of the walk stated just before, each with its weight: that walk
        elif len(chain) > 2 and all(_bare_hop(it.claim) for it in chain) \
                and chain[0].claim.nodes[0] == chain[-1].claim.nodes[-1]:
            last = len(chain) - 1
        kept.append(chain[:last + 1])
        kept += [[it] for it in chain[last + 1:]]
    return kept


def joined(chain: list[Checked]) -> tuple[list[str], dict[int, float], float | None]:
    nodes: list[str] = []
    nums: dict[int, float] = {}
    total = None
    for it in chain:
        c = it.claim
        base = len(nodes) - 1 if nodes else 0
        for i, v in c.nums:
            if i == 0 and base:
                continue
            nums[base + i] = v
        nodes = nodes + list(c.nodes[1:]) if nodes else list(c.nodes)
        total = c.value if c.value is not None else total
    return nodes, nums, total


def runs_of(items: list[Checked], kind: str) -> list[dict[str, str]]:
    """The objects that true `assign` / `map` claims describe: a run of such claims in consecutive statements
    (at most one statement between) is one colouring or one mapping. A run that gives a node two partners is
    not a function, so no object at all: a dump of every pair is not a mapping, whatever runs it contains."""
    runs: list[list[Claim]] = []
    last = -10
    for it in items:
        c = it.claim
        if c.kind != kind or it.truth != "true":
            continue
        if c.pos - last > 2 or not runs:
            runs.append([])
        runs[-1].append(c)
        last = c.pos
    out: list[dict[str, str]] = []
    for run in runs:
        m: dict[str, str] = {}
        ok = True
        for c in run:
            key, val = c.nodes[0], (c.nodes[1] if kind == "map" else c.prop)
            if m.setdefault(key, val) != val:
                ok = False
                break
        if ok and m:
            out.append(m)
    return out


class Credit:
    """The best candidate: (K, n, label)."""

    def __init__(self, j: Any, items: list[Checked], gold: Mapping[str, Any], value: float | None):
        self.j, self.items, self.gold, self.value = j, items, gold, value
        self.true = [it for it in items if it.truth == "true"]

    def best(self) -> tuple[int, int, str]:
        task = self.j.f.task
        fn = {"SD": self.sd, "DIAM": self.diam, "CN": self.cn, "TSP": self.tsp, "CYC": self.cyc,
              "MCP": self.sets, "MIS": self.sets, "MVC": self.sets, "COL": self.col, "GED": self.mapping,
              "MCS": self.mapping}.get(task)
        if fn is None and self.j.f.paired:
            fn = self.mapping
        return fn() if fn else (0, 0, "")

    def _runs(self, nodes: list[str]) -> list[float]:
        run, out = 0.0, [0.0]
        for a, b in itertools.pairwise(nodes):
            run += self.j.w(a, b)
            out.append(run)
        return out

    def _dists(self) -> dict[tuple[str, str], float]:
        return {edge_key(*it.claim.nodes): float(it.claim.value or 0) for it in self.true if it.claim.kind == "dist"}

    def sd(self) -> tuple[int, int, str]:
        q = self.j.f.query
        s, t = str(q.get("source")), str(q.get("target"))
        d_st = self.j.dist(s, t)
        dists = self._dists()
        best = (0, 0, "")
        for chain in chain_walks(self.items):
            nodes, nums, total = joined(chain)
            if nodes[0] == t and nodes[-1] == s:
                nodes = nodes[::-1]
                m = len(nodes) - 1
                nums = {m - i: v for i, v in nums.items()}  # reversed numbers are not running totals from s
                nums = {}
            if nodes[0] != s or nodes[-1] != t or d_st is None:
                continue
            runs = self._runs(nodes)
            if abs(runs[-1] - d_st) > 1e-6:
                continue  # a walk from s to t that is not shortest: a failed candidate
            hops = len(nodes) - 1
            k = hops
            for i in range(1, len(nodes)):
                said = nums.get(i)
                # the running distance at node i, or the weight of the hop into it (with the total, the same)
                if (said is not None and (abs(said - runs[i]) < 1e-6 or abs(said - runs[i] + runs[i - 1]) < 1e-6)) or \
                        abs(dists.get(edge_key(s, nodes[i]), -1) - runs[i]) < 1e-6 or \
                        (i == hops and total is not None and abs(total - runs[i]) < 1e-6):
                    k += 1
            best = max(best, (k, 2 * hops, "shortest path"), key=lambda x: (x[0] / x[1] if x[1] else 0, -x[1]))
        return best

    def diam(self) -> tuple[int, int, str]:
        d = self.value
        if d is None:
            return (0, 0, "")
        dists = self._dists()
        best = (0, 0, "")
        for chain in chain_walks(self.items):
            nodes, nums, total = joined(chain)
            hops = len(nodes) - 1
            if len(set(nodes)) != len(nodes) or abs((self.j.dist(nodes[0], nodes[-1]) or -1) - d) > 1e-6 \
                    or abs(self._runs(nodes)[-1] - d) > 1e-6:
                continue
            k = hops + (1 if (total is not None and abs(total - d) < 1e-6) or nums.get(hops) == d
                        or abs(dists.get(edge_key(nodes[0], nodes[-1]), -1) - d) < 1e-6 else 0)
            best = max(best, (k, hops + 1, "diametral path"), key=lambda x: (x[0] / x[1] if x[1] else 0, -x[1]))
        if best[1] == 0:
            for (_a, _b), x in dists.items():
                if abs(x - d) < 1e-6:
                    best = (1, int(d) + 1, "diametral distance")
                    break
        return best

    def cn(self) -> tuple[int, int, str]:
        q = self.j.f.query
        s, t = str(q.get("source")), str(q.get("target"))
        g = self.j.g
        if s not in g or t not in g:
            return (0, 0, "")
        # neighbour lists stated one after another for more nodes than the query pair are a transcription of
        # the input (perception); the query nodes' own neighbour sets, stated apart from such a run, derive
        own = self._query_lists({s, t})
        if not g[s] and not g[t]:
            # nothing adjacent to either: the two (empty) neighbour sets are what a derivation establishes
            k = sum(1 for c in own if not c.nodes[1:] and c.complete)
            return (k, 2, "query neighbourhoods") if k else (0, 2, "")
        crit = critical_facts(self.j.ev, self.gold, self.value)
        if not crit.candidates:
            return (0, 0, "")
        want = {(a[1], a[2]) for a in crit.candidates[0].atoms if a[0] == "E"}
        said: set[tuple[str, str]] = set()
        for c in own:
            said |= {edge_key(c.nodes[0], x) for x in c.nodes[1:]}
        for it in self.true:
            c = it.claim
            if c.kind == "set" and c.prop == "common":
                for x in c.nodes:
                    said |= {edge_key(s, x), edge_key(t, x)}
            elif c.kind == "walk" and len(c.nodes) == 3 and {c.nodes[0], c.nodes[2]} == {s, t}:
                said |= {edge_key(s, c.nodes[1]), edge_key(t, c.nodes[1])}
        k = len(said & want)
        return (k, len(want), "query neighbourhoods") if k else (0, len(want), "")

    def _query_lists(self, query: set[str]) -> list[Claim]:
        """The true neighbour sets of query nodes that are not part of a run of neighbour lists (statements
        at most one apart) naming any other node."""
        runs: list[list[Checked]] = []
        last = -10
        for it in self.items:
            c = it.claim
            if c.kind not in ("adj", "neigh") or it.truth == "neutral":  # a negation lists nothing
                continue
            if c.pos - last > 2 or not runs:
                runs.append([])
            runs[-1].append(it)
            last = c.pos
        out = []
        for run in runs:
            if {it.claim.nodes[0] for it in run} <= query:
                out += [it.claim for it in run if it.truth == "true" and it.claim.kind == "neigh"]
        return out

    def _closed_walks(self) -> list[tuple[list[str], float | None]]:
        out = []
        for chain in chain_walks(self.items):
            nodes, nums, total = joined(chain)
            if chain[-1].claim.closed or (len(chain) == 1 and chain[0].claim.closed):
                nodes.append(nodes[0])
            if total is None:
                total = nums.get(len(nodes) - 1)
            if len(nodes) > 3 and nodes[0] == nodes[-1]:
                out.append((nodes, total))
        return out

    def tsp(self) -> tuple[int, int, str]:
        g = self.j.g
        best = (0, 0, "")
        for nodes, total in self._closed_walks():
            if set(nodes) != set(g) or len(nodes) != g.number_of_nodes() + 1 or self.value is None:
                continue
            length = self._runs(nodes)[-1]
            if abs(length - self.value) > 1e-6:
                continue
            legs = len(nodes) - 1
            k = legs + (1 if total is not None and abs(total - length) < 1e-6 else 0)
            best = max(best, (k, legs + 1, "optimal tour"))
        return best

    def cyc(self) -> tuple[int, int, str]:
        for nodes, _ in self._closed_walks():
            if self.value is not None and len(nodes) - 1 == int(self.value) and len(set(nodes)) == len(nodes) - 1:
                return (len(nodes) - 1, len(nodes) - 1, "longest cycle")
        return (0, 0, "")

    def sets(self) -> tuple[int, int, str]:
        prop = {"MCP": "clique", "MIS": "independent set", "MVC": "vertex cover"}[self.j.f.task]
        for it in self.true:
            c = it.claim
            if c.kind == "set" and c.prop == prop and self.value is not None and len(set(c.nodes)) == int(self.value):
                k = len(set(c.nodes))
                n = k + k * (k - 1) // 2 if prop != "vertex cover" else k + 1
                return (n, n, "optimal set")
        return (0, 0, "")

    def col(self) -> tuple[int, int, str]:
        g = self.j.g
        chi = int(self.value) if self.value is not None else None
        blocks = runs_of(self.items, "assign")
        coloring = None
        for b in blocks:
            if chi is not None and set(b) == set(g) and len(set(b.values())) == chi and \
                    all(b[u] != b[v] for u, v in g.edges):
                coloring = b
        if coloring is None:
            return (0, 0, "")
        # the lower bound: a clique of χ nodes, or (χ = 3, no triangle) an odd cycle, stated true. A graph whose
        # χ exceeds its clique number by more than that (χ = 5 with no K5: a seed-2033 COL instance) has no
        # witness of either kind, and none is asked: a complete colouring is then the whole derivation
        wit = 0
        has_clique = bool(chi) and any(len(c) >= chi for c in itertools.islice(nx.find_cliques(g), 4000))
        need = chi * (chi - 1) // 2 if chi and chi >= 2 and (has_clique or chi == 3) else 0
        for it in self.true:
            c = it.claim
            if c.kind == "set" and c.prop == "clique" and chi and len(set(c.nodes)) >= chi:
                wit = need
        if not wit and chi == 3:
            cyc = odd_cycle(g)
            if cyc:
                need = len(cyc)
                for nodes, _ in self._closed_walks():
                    if (len(nodes) - 1) % 2 == 1:
                        wit = need
        n = g.number_of_nodes()
        return (n + wit, n + need, "optimal colouring")

    def mapping(self) -> tuple[int, int, str]:
        from judge.vgr3 import _ged_cost

        gs = self.j.ctx.graphs
        if len(gs) < 2 or self.value is None:
            return (0, 0, "")
        g1, g2 = gs[0].asked, gs[1].asked
        blocks = [b for b in runs_of(self.items, "map") if len(set(b.values())) == len(b)]  # injective only
        for m in blocks:
            if not m:
                continue
            if self.j.f.task == "MCS":
                ok = len(m) == int(self.value) and all(
                    g1.has_edge(a, b) == g2.has_edge(m[a], m[b]) for a, b in itertools.combinations(m, 2))
            else:
                ok = _ged_cost(g1, g2, m) == int(self.value)
            if ok:
                return (len(m), len(m), "optimal mapping")
        return (0, 0, "")
