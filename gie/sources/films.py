"""Films (Wikidata): actors who co-starred, the film knowledge graph (director / genre / country /
lead cast), and the triples loader for the paper's DBpedia."""

from __future__ import annotations

import random
import re
import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import networkx as nx

from gie.sources.base import (
    Source,
    SourceFileError,
    adjacency_from_edges,
    bokeh_data,
    largest_component,
    read_text,
    user_licence,
)

LICENCE_WIKIDATA = "CC0-1.0: Wikidata film statements, as packaged by bokeh-sampledata movies.db"


@dataclass(frozen=True)
class Film:
    fid: int
    title: str
    year: int | None
    directors: tuple[str, ...]
    genres: tuple[str, ...]
    countries: tuple[str, ...]
    cast: tuple[str, ...]


def _split(value: str | None) -> tuple[str, ...]:
    return tuple(sorted({x.strip() for x in (value or "").split(",") if x.strip()}))


@lru_cache(maxsize=1)
def wikidata_films() -> tuple[Film, ...]:
    path = bokeh_data("movies.db")
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = con.execute('SELECT ID, Title, Year, Genre, Director, "Cast", Country FROM omdb ORDER BY ID').fetchall()
    finally:
        con.close()
    return tuple(
        Film(int(r[0]), str(r[1]), r[2], _split(r[4]), _split(r[3]), _split(r[6]), _split(r[5])) for r in rows
    )


@dataclass
class CoStarSource(Source):
    """Actors joined when they share at least `min_shared` films. The graph (1.7M pairs at
    min_shared=1) is never built: the walk steps actor -> one of their films -> a co-star, and
    `induced` intersects film sets only for the sampled actors."""

    films_of: dict[str, tuple[int, ...]] = field(default_factory=dict)
    cast_of: dict[int, tuple[str, ...]] = field(default_factory=dict)
    min_shared: int = 1
    _nb_cache: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def starts(self) -> Sequence[str]:
        return sorted(a for a, fs in self.films_of.items() if len(fs) >= max(2, self.min_shared))

    def neighbours(self, actor: str) -> tuple[str, ...]:
        if actor not in self._nb_cache:
            counts: dict[str, int] = {}
            for f in self.films_of.get(actor, ()):
                for other in self.cast_of[f]:
                    if other != actor:
                        counts[other] = counts.get(other, 0) + 1
            self._nb_cache[actor] = tuple(sorted(a for a, c in counts.items() if c >= self.min_shared))
        return self._nb_cache[actor]

    def step(self, node: str, rng: random.Random) -> str | None:
        nb = self._nb_cache.get(node)
        if nb is None:
            nb = self.neighbours(node)
        return nb[int(rng.random() * len(nb))] if nb else None

    def walk_table(self) -> tuple[Mapping[str, tuple[str, ...]], Callable[[str], tuple[str, ...]]] | None:
        if type(self).step is not CoStarSource.step:
            return None
        return self._nb_cache, self.neighbours

    def induced(self, ids: Iterable[str]) -> nx.Graph:
        keep = sorted(set(ids))
        g = nx.Graph()
        for n in keep:
            g.add_node(n, name=n)
        films = {a: set(self.films_of.get(a, ())) for a in keep}
        for i, u in enumerate(keep):
            for v in keep[i + 1 :]:
                if len(films[u] & films[v]) >= self.min_shared:
                    g.add_edge(u, v)
        return g

    def induced_adjacency(self, ids: Iterable[str]) -> Mapping[str, Iterable[str]]:
        # `induced`'s pair test without the graph (see Source.induced_adjacency)
        keep = sorted(set(ids))
        adj: dict[str, set[str]] = {n: set() for n in keep}
        films = {a: set(self.films_of.get(a, ())) for a in keep}
        for i, u in enumerate(keep):
            for v in keep[i + 1 :]:
                if len(films[u] & films[v]) >= self.min_shared:
                    adj[u].add(v)
                    adj[v].add(u)
        return adj

    def number_of_nodes(self) -> int:
        return len(self.films_of)

    def number_of_edges(self) -> int:
        return sum(len(self.neighbours(a)) for a in self.films_of) // 2


@lru_cache(maxsize=2)
def wikidata_costar(min_shared: int = 2) -> CoStarSource:
    """Default: actors who made at least two films together ("frequent collaborators"); a single shared
    film joins a whole cast into a clique, which makes sampled subgraphs unreadably dense."""
    films_of: dict[str, list[int]] = {}
    cast_of: dict[int, tuple[str, ...]] = {}
    for film in wikidata_films():
        if len(film.cast) < 2:
            continue
        cast_of[film.fid] = film.cast
        for a in film.cast:
            films_of.setdefault(a, []).append(film.fid)
    return CoStarSource(
        name="wikidata-costar",
        scenario="collaborations",
        licence=LICENCE_WIKIDATA,
        description=(
            "film actors; two actors are joined when they appeared together in "
            + ("a film" if min_shared == 1 else f"at least {min_shared} films")
        ),
        films_of={a: tuple(fs) for a, fs in sorted(films_of.items())},
        cast_of=cast_of,
        min_shared=min_shared,
    )


KG_CAST = 3  # lead-cast triples per film: enough to tie films together through shared actors


@lru_cache(maxsize=1)
def wikidata_film_kg() -> Source:
    """Entities: films ("film:<id>"), people ("person:<name>"), genres and countries; relations:
    directed by, genre, country of origin, and starring (first KG_CAST cast names, alphabetical since
    the data has no billing order)."""
    edges: list[tuple[str, str]] = []
    names: dict[str, str] = {}
    for film in wikidata_films():
        fnode = f"film:{film.fid}"
        names[fnode] = film.title
        for d in film.directors:
            names[f"person:{d}"] = d
            edges.append((fnode, f"person:{d}"))
        for gname in film.genres:
            names[f"genre:{gname}"] = gname
            edges.append((fnode, f"genre:{gname}"))
        for c in film.countries:
            names[f"country:{c}"] = c
            edges.append((fnode, f"country:{c}"))
        for a in film.cast[:KG_CAST]:
            names[f"person:{a}"] = a
            edges.append((fnode, f"person:{a}"))
    adj = largest_component(adjacency_from_edges([], edges))
    return Source(
        name="wikidata-film-kg",
        scenario="knowledge",
        licence=LICENCE_WIKIDATA,
        description="a film knowledge graph: films linked to their directors, lead actors, genres and countries",
        adjacency=adj,
        names={n: names[n] for n in adj},
    )


def load_triples(path: str | Path, *, licence: str = "") -> Source:
    """DBpedia-style triples: N-Triples lines `<s> <p> <o> .` or tab-separated `s<TAB>p<TAB>o`.
    Literal objects ("..."@en) carry no link and are skipped; comments start with '#'."""
    ntriple = re.compile(r'<([^>]*)>\s+<([^>]*)>\s+(<([^>]*)>|"(?:[^"\\]|\\.)*"\S*)\s*\.\s*$')
    edges = []
    for lineno, line in enumerate(read_text(path).splitlines(), start=1):
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        if s.startswith("<"):
            m = ntriple.match(s)
            if not m:
                raise SourceFileError(f"{path}:{lineno}: not an N-Triples line '<s> <p> <o> .'")
            if m.group(4) is None:
                continue
            edges.append((m.group(1), m.group(4)))
        else:
            parts = line.rstrip("\r\n").split("\t")
            if len(parts) != 3 or not all(p.strip() for p in parts):
                raise SourceFileError(f"{path}:{lineno}: expected 3 tab-separated fields 'subject predicate "
                                      f"object', found {len(parts)}")
            edges.append((parts[0].strip(), parts[2].strip()))
    if not edges:
        raise SourceFileError(f"{path}:1: no triple linking two entities")
    adj = adjacency_from_edges([], edges)
    return Source(
        name=f"triples:{Path(path).name}",
        scenario="knowledge",
        licence=licence or user_licence(path),
        description="a knowledge graph: entities linked by facts",
        adjacency=adj,
        names={n: _entity_name(n) for n in adj},
    )


def _entity_name(iri: str) -> str:
    tail = re.split(r"[/#:]", iri.rstrip("/"))[-1] or iri
    return tail.replace("_", " ")
