"""What every graph source is: a walkable `Source` (adjacency, display names and codes, edge weights),
its scenario, the error a malformed user file raises, and the readers shared by the file loaders."""

from __future__ import annotations

import csv
import gzip
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import networkx as nx

Scenario = Literal["flights", "collaborations", "knowledge", "molecules", "friendships"]
SCENARIOS: tuple[Scenario, ...] = ("flights", "collaborations", "knowledge", "molecules", "friendships")


class SourceFileError(ValueError):
    """A user file that cannot be read as a graph; the message is one line naming file:line."""


@dataclass
class Source:
    """A walkable graph. Subclasses override `step`/`induced` when the graph is implicit."""

    name: str
    scenario: Scenario
    licence: str
    description: str
    adjacency: dict[str, tuple[str, ...]] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)
    codes: dict[str, str] = field(default_factory=dict)
    weight: Callable[[str, str], int] | None = None

    def starts(self) -> Sequence[str]:
        return sorted(n for n, nb in self.adjacency.items() if nb)

    def step(self, node: str, rng: random.Random) -> str | None:
        nb = self.adjacency.get(node, ())
        # int(random() * n) rather than randrange: same uniform choice, a third of the cost per step.
        return nb[int(rng.random() * len(nb))] if nb else None

    def walk_table(self) -> tuple[Mapping[str, tuple[str, ...]], Callable[[str], tuple[str, ...]]] | None:
        """What `step` draws from, for walks that inline it: (neighbour tuples by node, the neighbours of
        a node missing there), a step being `nb[int(rng.random() * len(nb))]`, or no move when nb is
        empty. None when a subclass steps some other way."""
        if type(self).step is not Source.step:
            return None
        return self.adjacency, lambda node: ()

    def induced(self, ids: Iterable[str]) -> nx.Graph:
        keep = set(ids)
        g = nx.Graph()
        for n in sorted(keep):
            g.add_node(n, **self._node_attrs(n))
        for u in sorted(keep):
            for v in self.adjacency.get(u, ()):
                if v in keep and u < v:
                    if self.weight is None:
                        g.add_edge(u, v)
                    else:
                        g.add_edge(u, v, weight=self.weight(u, v))
        return g

    def induced_adjacency(self, ids: Iterable[str]) -> Mapping[str, Iterable[str]]:
        """The adjacency of `induced(ids)` (node -> neighbours), without building the graph: the sampler
        checks most walks by size and edge count alone and rejects them, so it builds the graph (names,
        codes, weights) only for a candidate that passes. Same edges as `induced`, by the same test."""
        if type(self).induced is not Source.induced:
            return self.induced(ids)._adj  # a subclass's own induced graph: read its adjacency
        keep = set(ids)
        adj: dict[str, set[str]] = {n: set() for n in keep}
        for u in keep:
            # the intersection runs in C over a hub's long neighbour tuple; what is left is tiny
            for v in keep.intersection(self.adjacency.get(u, ())):
                if u < v:
                    adj[u].add(v)
                    adj[v].add(u)
        return adj

    def _node_attrs(self, n: str) -> dict[str, str]:
        attrs = {"name": self.names.get(n, n)}
        if n in self.codes:
            attrs["code"] = self.codes[n]
        return attrs

    def number_of_nodes(self) -> int:
        return len(self.adjacency)

    def number_of_edges(self) -> int:
        return sum(len(nb) for nb in self.adjacency.values()) // 2


def adjacency_from_edges(nodes: Iterable[str], edges: Iterable[tuple[str, str]]) -> dict[str, tuple[str, ...]]:
    adj: dict[str, set[str]] = {n: set() for n in nodes}
    for u, v in edges:
        if u == v:
            continue
        adj.setdefault(u, set()).add(v)
        adj.setdefault(v, set()).add(u)
    # Sorted neighbour tuples: the walk's choices then depend only on the seed, not on set order.
    return {n: tuple(sorted(nb)) for n, nb in sorted(adj.items())}


def largest_component(adj: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
    # Plain BFS: building a networkx graph of the 120k-edge film KG just for this costs seconds.
    seen: set[str] = set()
    best: set[str] = set()
    for start in adj:
        if start in seen:
            continue
        comp = {start}
        frontier = [start]
        while frontier:
            nxt = []
            for u in frontier:
                for v in adj.get(u, ()):
                    if v not in comp:
                        comp.add(v)
                        nxt.append(v)
            frontier = nxt
        seen |= comp
        if len(comp) > len(best):
            best = comp
    return {n: nb for n, nb in adj.items() if n in best}


def bokeh_data(name: str) -> Path:
    from bokeh_sampledata import package_path

    return Path(package_path(name))


def csv_rows(path: str | Path) -> Iterable[tuple[int, list[str]]]:
    text = read_text(path)
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = next(csv.reader([line]))
        except csv.Error as e:
            raise SourceFileError(f"{path}:{lineno}: unreadable CSV ({e})") from None
        yield lineno, row


def read_text(path: str | Path) -> str:
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as e:
        raise SourceFileError(f"{path}:0: cannot read ({e.strerror})") from None
    if p.suffix == ".gz":
        raw = gzip.decompress(raw)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        lineno = raw[: e.start].count(b"\n") + 1
        raise SourceFileError(f"{path}:{lineno}: not UTF-8 text") from None


def user_licence(path: str | Path) -> str:
    return f"user file {Path(path).name}: licence not recorded"
