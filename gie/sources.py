"""Real graph sources, all offline, plus loaders for user files.

Built-in sources (each loaded on first use and cached per process):

| name | scenario | graph | licence |
|---|---|---|---|
| `us-airports` | flights | 352 US airports (IATA), undirected July 2026 routes, weights = great-circle km | public domain (OurAirports, US DOT BTS) |
| `wikidata-costar` | collaborations | actors joined when they appeared together in a film | CC0 (Wikidata) |
| `wikidata-film-kg` | knowledge | film -- director / genre / country / lead-cast triples | CC0 (Wikidata) |
| `nci-molecules` | molecules | the 5K NCI molecules shipped with RDKit; heavy atoms and bonds | NCI Open Database (public domain) |
| `karate`, `davis`, `florentine`, `les-miserables` | friendships | networkx's classic social graphs | see SOCIAL below |

A source exposes what the random-walk sampler needs (`starts`, `step`) and `induced(ids)`, the
subgraph on original ids with node attributes `name` (a human name), optionally `code` (a preferred
display code such as an IATA code) and `element` (atoms), and edge `weight` where the source has one.
User-file loaders raise `SourceFileError` whose message is one line `file:line: what is wrong`.
"""

from __future__ import annotations

import csv
import gzip
import io
import math
import random
import re
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Literal

import networkx as nx

Scenario = Literal["flights", "collaborations", "knowledge", "molecules", "friendships"]
SCENARIOS: tuple[Scenario, ...] = ("flights", "collaborations", "knowledge", "molecules", "friendships")

LICENCE_AIRPORTS = (
    "Public domain: airport records from OurAirports, routes from US DOT BTS On-Time Performance "
    "(July 2026), as packaged by bokeh-sampledata (loader BSD-3-Clause)"
)
LICENCE_WIKIDATA = "CC0-1.0: Wikidata film statements, as packaged by bokeh-sampledata movies.db"
LICENCE_NCI = (
    "NCI Open Database compounds (US Government work, public domain); file rdkit/Data/NCI/first_5K.smi "
    "shipped with RDKit (BSD-3-Clause)"
)
SOCIAL: dict[str, tuple[str, str]] = {
    # name -> (citation, licence)
    "karate": ("Zachary (1977), karate club friendships", "BSD-3-Clause (networkx); published data"),
    "davis": ("Davis, Gardner & Gardner (1941), Southern women and the events they attended",
              "BSD-3-Clause (networkx); published data"),
    "florentine": ("Padgett & Ansell (1993), Florentine families' marriage ties",
                   "BSD-3-Clause (networkx); published data"),
    "les-miserables": ("Knuth (1993), Stanford GraphBase: co-appearing characters of Les Miserables",
                       "BSD-3-Clause (networkx); Stanford GraphBase data, free use"),
}
EARTH_RADIUS_KM = 6371.0088


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

    def _node_attrs(self, n: str) -> dict[str, str]:
        attrs = {"name": self.names.get(n, n)}
        if n in self.codes:
            attrs["code"] = self.codes[n]
        return attrs

    def number_of_nodes(self) -> int:
        return len(self.adjacency)

    def number_of_edges(self) -> int:
        return sum(len(nb) for nb in self.adjacency.values()) // 2


def _adjacency_from_edges(nodes: Iterable[str], edges: Iterable[tuple[str, str]]) -> dict[str, tuple[str, ...]]:
    adj: dict[str, set[str]] = {n: set() for n in nodes}
    for u, v in edges:
        if u == v:
            continue
        adj.setdefault(u, set()).add(v)
        adj.setdefault(v, set()).add(u)
    # Sorted neighbour tuples: the walk's choices then depend only on the seed, not on set order.
    return {n: tuple(sorted(nb)) for n, nb in sorted(adj.items())}


def _largest_component(adj: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
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


# --- flights -------------------------------------------------------------------------------------


def haversine_km(lat1: float, lon1: float, lat2: float, lon2: float) -> int:
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lon2 - lon1)
    a = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return max(1, round(2 * EARTH_RADIUS_KM * math.asin(math.sqrt(a))))


def _flight_source(
    name: str,
    licence: str,
    airports: dict[str, tuple[str, float, float]],
    routes: Iterable[tuple[str, str]],
) -> Source:
    """airports: IATA -> (name, lat, lon); routes between IATA codes (direction dropped)."""
    adj = _largest_component(
        _adjacency_from_edges([], ((u, v) for u, v in routes if u in airports and v in airports))
    )

    def weight(u: str, v: str) -> int:
        _, la, lo = airports[u]
        _, lb, lob = airports[v]
        return haversine_km(la, lo, lb, lob)

    return Source(
        name=name,
        scenario="flights",
        licence=licence,
        description="airports joined by a direct scheduled route; edge labels are great-circle distances in km",
        adjacency=adj,
        names={k: airports[k][0] for k in adj},
        codes={k: k for k in adj},
        weight=weight,
    )


def _bokeh_data(name: str) -> Path:
    from bokeh_sampledata import package_path

    return Path(package_path(name))


@lru_cache(maxsize=1)
def us_airports() -> Source:
    airports: dict[str, tuple[str, float, float]] = {}
    with open(_bokeh_data("airports.csv"), newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            code = row["IATA"].strip()
            if re.fullmatch(r"[A-Z0-9]{3}", code):
                airports[code] = (row["Name"], float(row["Latitude"]), float(row["Longitude"]))
    with gzip.open(_bokeh_data("routes.csv.gz"), "rt", encoding="utf-8", newline="") as f:
        routes = [(r["Source"], r["Destination"]) for r in csv.DictReader(f)]
    return _flight_source("us-airports", LICENCE_AIRPORTS, airports, routes)


def load_openflights(airports_path: str | Path, routes_path: str | Path, *, licence: str = "") -> Source:
    """OpenFlights `airports.dat` (14 comma-separated quoted fields, `\\N` for null) and `routes.dat`
    (9 fields). Airports without an IATA code and routes touching them are skipped, as OpenFlights
    itself leaves many unresolved; malformed lines are errors."""
    airports: dict[str, tuple[str, float, float]] = {}
    for lineno, row in _csv_rows(airports_path):
        if len(row) != 14:
            raise SourceFileError(f"{airports_path}:{lineno}: expected 14 comma-separated fields "
                                  f"(OpenFlights airports.dat), found {len(row)}")
        code = row[4].strip()
        try:
            lat, lon = float(row[6]), float(row[7])
        except ValueError:
            raise SourceFileError(f"{airports_path}:{lineno}: latitude/longitude {row[6]!r}, {row[7]!r} "
                                  "are not numbers") from None
        if not (-90 <= lat <= 90 and -180 <= lon <= 180):
            raise SourceFileError(f"{airports_path}:{lineno}: latitude/longitude {lat}, {lon} out of range")
        if re.fullmatch(r"[A-Z0-9]{3}", code):
            airports[code] = (row[1], lat, lon)
    routes = []
    for lineno, row in _csv_rows(routes_path):
        if len(row) != 9:
            raise SourceFileError(f"{routes_path}:{lineno}: expected 9 comma-separated fields "
                                  f"(OpenFlights routes.dat), found {len(row)}")
        routes.append((row[2].strip(), row[4].strip()))
    src = _flight_source(f"openflights:{Path(airports_path).name}", licence or _user_licence(airports_path),
                         airports, routes)
    if not src.adjacency:
        raise SourceFileError(f"{routes_path}:1: no route joins two airports of {airports_path}")
    return src


def _csv_rows(path: str | Path) -> Iterable[tuple[int, list[str]]]:
    text = _read_text(path)
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = next(csv.reader([line]))
        except csv.Error as e:
            raise SourceFileError(f"{path}:{lineno}: unreadable CSV ({e})") from None
        yield lineno, row


def _read_text(path: str | Path) -> str:
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


def _user_licence(path: str | Path) -> str:
    return f"user file {Path(path).name}: licence not recorded"


# --- Wikidata films --------------------------------------------------------------------------------


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
    path = _bokeh_data("movies.db")
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
    adj = _largest_component(_adjacency_from_edges([], edges))
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
    for lineno, line in enumerate(_read_text(path).splitlines(), start=1):
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
    adj = _adjacency_from_edges([], edges)
    return Source(
        name=f"triples:{Path(path).name}",
        scenario="knowledge",
        licence=licence or _user_licence(path),
        description="a knowledge graph: entities linked by facts",
        adjacency=adj,
        names={n: _entity_name(n) for n in adj},
    )


def _entity_name(iri: str) -> str:
    tail = re.split(r"[/#:]", iri.rstrip("/"))[-1] or iri
    return tail.replace("_", " ")


def load_snap_edgelist(path: str | Path, *, scenario: Scenario = "friendships", licence: str = "") -> Source:
    """SNAP edge list: one `u v` pair per line (whitespace separated, an optional third weight column
    ignored), comments starting with '#' or '%'."""
    edges = []
    for lineno, line in enumerate(_read_text(path).splitlines(), start=1):
        s = line.strip()
        if not s or s[0] in "#%":
            continue
        parts = s.split()
        if len(parts) not in (2, 3):
            raise SourceFileError(f"{path}:{lineno}: expected 'u v' (two node ids), found {len(parts)} fields")
        edges.append((parts[0], parts[1]))
    if not edges:
        raise SourceFileError(f"{path}:1: no edges")
    adj = _adjacency_from_edges([], edges)
    return Source(
        name=f"snap:{Path(path).name}",
        scenario=scenario,
        licence=licence or _user_licence(path),
        description="a network from a SNAP edge list",
        adjacency=adj,
        names={n: n for n in adj},
    )


# --- social graphs -------------------------------------------------------------------------------


@lru_cache(maxsize=4)
def social(name: str) -> Source:
    if name not in SOCIAL:
        raise KeyError(f"unknown social graph {name!r}; known: {', '.join(SOCIAL)}")
    citation, licence = SOCIAL[name]
    codes: dict[str, str] = {}
    if name == "karate":
        g = nx.relabel_nodes(nx.karate_club_graph(), {i: f"member {i + 1}" for i in range(34)})
        codes = {f"member {i + 1}": f"M{i + 1:02d}" for i in range(34)}
        desc = "members of a karate club; lines join members who were friends outside the club"
    elif name == "davis":
        g = nx.davis_southern_women_graph()
        codes = {n: f"E{int(n[1:]):02d}" for n in g if re.fullmatch(r"E\d+", n)}
        desc = "women and the social events they attended; a line joins a woman to each event she went to"
    elif name == "florentine":
        g = nx.florentine_families_graph()
        desc = "Renaissance Florentine families; lines are marriage ties"
    else:
        g = nx.les_miserables_graph()
        desc = "characters of Les Miserables; lines join characters who appear in the same chapter"
    adj = _adjacency_from_edges([str(n) for n in g], ((str(u), str(v)) for u, v in g.edges()))
    return Source(
        name=name,
        scenario="friendships",
        licence=f"{licence}; {citation}",
        description=desc,
        adjacency=adj,
        names={n: n for n in adj},
        codes=codes,
    )


# --- molecules -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Molecule:
    mol_id: str
    smiles: str
    elements: tuple[str, ...]
    bonds: tuple[tuple[int, int], ...]

    @property
    def size(self) -> int:
        return len(self.elements)

    def graph(self) -> nx.Graph:
        """Atom ids `<mol_id>:<atom index>`, attributes `name` (element) and `element`."""
        g = nx.Graph()
        for i, el in enumerate(self.elements):
            g.add_node(f"{self.mol_id}:{i}", name=el, element=el)
        for i, j in self.bonds:
            g.add_edge(f"{self.mol_id}:{i}", f"{self.mol_id}:{j}")
        return g


@dataclass
class MoleculeSource:
    name: str
    licence: str
    molecules: tuple[Molecule, ...]
    scenario: Scenario = "molecules"
    description: str = "molecules drawn as graphs: atoms are nodes labelled by element, bonds are lines"

    def with_size(self, lo: int, hi: int) -> list[Molecule]:
        return [m for m in self.molecules if lo <= m.size <= hi]

    def number_of_nodes(self) -> int:
        return sum(m.size for m in self.molecules)


def _molecule(mol_id: str, smiles: str) -> Molecule | None:
    from rdkit import Chem, RDLogger

    RDLogger.DisableLog("rdApp.*")
    mol = Chem.MolFromSmiles(smiles)
    if mol is None or mol.GetNumAtoms() == 0:
        return None
    elements = tuple(a.GetSymbol() for a in mol.GetAtoms())
    bonds = []
    for b in mol.GetBonds():
        i, j = b.GetBeginAtomIdx(), b.GetEndAtomIdx()
        bonds.append((min(i, j), max(i, j)))
    return Molecule(mol_id, smiles, elements, tuple(sorted(bonds)))


def _connected(m: Molecule) -> bool:
    adj: dict[int, list[int]] = {i: [] for i in range(m.size)}
    for i, j in m.bonds:
        adj[i].append(j)
        adj[j].append(i)
    seen, stack = {0}, [0]
    while stack:
        for v in adj[stack.pop()]:
            if v not in seen:
                seen.add(v)
                stack.append(v)
    return len(seen) == m.size


# Heavy-atom tokens of a SMILES string: bracket atoms, two-letter organic-subset atoms, then one-letter
# ones. Counting them first lets us skip RDKit parsing of molecules too big for any task.
_SMILES_ATOM = re.compile(r"\[[^\]]+\]|Br|Cl|[BCNOPSFI]|[bcnops]")
MAX_MOLECULE_ATOMS = 30  # hard levels: CYC/COL up to 30 atoms, GED/MCS up to 20


def smiles_atom_count(smiles: str) -> int:
    return sum(1 for t in _SMILES_ATOM.findall(smiles) if t not in ("[H]",))


@lru_cache(maxsize=1)
def nci_molecules(max_atoms: int = MAX_MOLECULE_ATOMS) -> MoleculeSource:
    """Single-fragment molecules of first_5K.smi with at most `max_atoms` heavy atoms (salts and
    mixtures, written with '.', are skipped: a molecule must be one connected graph)."""
    import rdkit

    path = Path(rdkit.__file__).parent / "Data" / "NCI" / "first_5K.smi"
    mols = []
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) < 2 or "." in parts[0] or smiles_atom_count(parts[0]) > max_atoms:
            continue
        m = _molecule(f"NCI{parts[1]}", parts[0])
        if m is not None and 2 <= m.size <= max_atoms and _connected(m):
            mols.append(m)
    return MoleculeSource(name="nci-molecules", licence=LICENCE_NCI, molecules=tuple(mols))


def load_smiles_csv(path: str | Path, *, licence: str = "") -> MoleculeSource:
    """CSV with a header naming a `smiles` column and optionally an `id` (or `name`) column."""
    rows = list(_csv_rows(path))
    if not rows:
        raise SourceFileError(f"{path}:1: empty file, expected a header with a 'smiles' column")
    hline, header = rows[0]
    lower = [h.strip().lower() for h in header]
    if "smiles" not in lower:
        raise SourceFileError(f"{path}:{hline}: header has no 'smiles' column (found {', '.join(header)})")
    si = lower.index("smiles")
    ii = next((lower.index(k) for k in ("id", "name") if k in lower), None)
    mols = []
    for lineno, row in rows[1:]:
        if len(row) != len(header):
            raise SourceFileError(f"{path}:{lineno}: expected {len(header)} fields like the header, found {len(row)}")
        mid = row[ii].strip() if ii is not None else f"row{lineno}"
        m = _molecule(mid, row[si].strip())
        if m is None:
            raise SourceFileError(f"{path}:{lineno}: RDKit cannot parse SMILES {row[si].strip()[:40]!r}")
        if m.size >= 2 and _connected(m):
            mols.append(m)
    return MoleculeSource(name=f"smiles:{Path(path).name}", licence=licence or _user_licence(path),
                          molecules=tuple(mols))


# --- registry ------------------------------------------------------------------------------------

WALK_SOURCES: dict[str, Callable[[], Source]] = {
    "us-airports": us_airports,
    "wikidata-costar": wikidata_costar,
    "wikidata-film-kg": wikidata_film_kg,
    "karate": lambda: social("karate"),
    "davis": lambda: social("davis"),
    "florentine": lambda: social("florentine"),
    "les-miserables": lambda: social("les-miserables"),
}
MOLECULE_SOURCES: dict[str, Callable[[], MoleculeSource]] = {"nci-molecules": nci_molecules}


def get_source(name: str) -> Source | MoleculeSource:
    """The source behind a built-in name: the user's copy when `use_user_sources` replaced it."""
    user = _user_replacement(name)
    if user is not None:
        return user
    if name in WALK_SOURCES:
        return WALK_SOURCES[name]()
    if name in MOLECULE_SOURCES:
        return MOLECULE_SOURCES[name]()
    raise KeyError(f"unknown graph source {name!r}; known: {', '.join([*WALK_SOURCES, *MOLECULE_SOURCES])}")


# --- user copies of the paper's sources -------------------------------------------------------------
#
# The paper's sources (seed 002, section 4.1) cannot be installed offline, so the bundled substitutes
# are the default. A user may point a paper source (or a substitute, by its own name) at a local copy
# in the usual format; the copy then replaces the substitute(s) below wherever a task draws from them.


@dataclass(frozen=True)
class PaperSource:
    replaces: tuple[str, ...]  # built-in substitutes it stands in for
    scenario: Scenario
    formats: str  # what PATH may be, for help and errors


_SOCIAL_SLOTS = ("karate", "davis", "florentine", "les-miserables")
PAPER_SOURCES: dict[str, PaperSource] = {
    "dblp": PaperSource(("wikidata-costar",), "collaborations", "SNAP edge list or node-link JSON"),
    **{
        name: PaperSource(_SOCIAL_SLOTS, "friendships", "SNAP edge list or node-link JSON")
        for name in ("digg", "flixster", "lastfm", "pokec")
    },
    "dbpedia": PaperSource(("wikidata-film-kg",), "knowledge",
                           "N-Triples / tab-separated triples, SNAP edge list or node-link JSON"),
    "openflights": PaperSource(("us-airports",), "flights",
                               "a folder holding airports.dat and routes.dat, or 'AIRPORTS.dat,ROUTES.dat'"),
    **{name: PaperSource(("nci-molecules",), "molecules", "SMILES CSV") for name in ("pubchemqc", "pcqm4mv2")},
}
USER_SOURCES_ENV = "GIE_USER_SOURCES"
_user: dict[str, Source | MoleculeSource] = {}  # substitute name -> loaded user source
_user_spec: dict[str, str] = {}  # NAME -> PATH as given, the identity of what _user holds
_user_files: dict[str, dict[str, str]] = {}  # NAME -> {file name: sha256}


def file_sha256(path: str | Path) -> str:
    try:
        st = Path(path).stat()
    except OSError as e:
        raise SourceFileError(f"{path}:0: cannot read ({e.strerror})") from None
    return _sha256_of(str(Path(path).resolve()), st.st_mtime_ns, st.st_size)


@lru_cache(maxsize=64)
def _sha256_of(path: str, mtime_ns: int, size: int) -> str:
    import hashlib

    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    except OSError as e:
        raise SourceFileError(f"{path}:0: cannot read ({e.strerror})") from None
    return h.hexdigest()


def _openflights_files(path: str) -> tuple[Path, Path]:
    if "," in path:
        a, r = (Path(x.strip()) for x in path.split(",", 1))
        return a, r
    folder = Path(path)
    return folder / "airports.dat", folder / "routes.dat"


def user_source_files(name: str, path: str) -> list[Path]:
    """The file(s) behind `--source NAME=PATH`."""
    if name == "openflights" or (name == "us-airports" and ("," in path or Path(path).is_dir())):
        return list(_openflights_files(path))
    return [Path(path)]


def _scenario_of(name: str) -> Scenario:
    if name in PAPER_SOURCES:
        return PAPER_SOURCES[name].scenario
    src_fn = WALK_SOURCES.get(name)
    if src_fn is None:
        return "molecules"
    return {"us-airports": "flights", "wikidata-costar": "collaborations", "wikidata-film-kg": "knowledge"}.get(
        name, "friendships")


def load_node_link(path: str | Path, *, scenario: Scenario = "friendships", licence: str = "") -> Source:
    """networkx node-link JSON: {"nodes": [{"id": ..., "name"?: ...}], "links" or "edges": [{"source",
    "target"}]}. A syntax error names its line; a bad entry names its list index."""
    import json

    text = _read_text(path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise SourceFileError(f"{path}:{e.lineno}: not JSON ({e.msg})") from None
    if not isinstance(data, dict) or not isinstance(data.get("nodes"), list):
        raise SourceFileError(f"{path}:1: node-link JSON needs an object with a 'nodes' list")
    key = "links" if "links" in data else "edges"
    links = data.get(key)
    if not isinstance(links, list):
        raise SourceFileError(f"{path}:1: node-link JSON needs a 'links' (or 'edges') list")
    names: dict[str, str] = {}
    for i, node in enumerate(data["nodes"]):
        if not isinstance(node, dict) or "id" not in node or isinstance(node["id"], dict | list):
            raise SourceFileError(f"{path}:{_json_line(text, 'nodes', i)}: nodes[{i}] has no scalar 'id'")
        names[str(node["id"])] = str(node.get("name", node["id"]))
    edges = []
    for i, link in enumerate(links):
        if not isinstance(link, dict) or "source" not in link or "target" not in link:
            raise SourceFileError(f"{path}:{_json_line(text, key, i)}: {key}[{i}] needs 'source' and 'target'")
        u, v = str(link["source"]), str(link["target"])
        for end in (u, v):
            if end not in names:
                raise SourceFileError(f"{path}:{_json_line(text, key, i)}: {key}[{i}] names unknown node {end!r}")
        if u != v:
            edges.append((u, v))
    if not edges:
        raise SourceFileError(f"{path}:1: no edges")
    adj = _adjacency_from_edges([], edges)
    return Source(
        name=f"node-link:{Path(path).name}", scenario=scenario, licence=licence or _user_licence(path),
        description="a network from node-link JSON", adjacency=adj, names={n: names[n] for n in adj},
    )


def _json_line(text: str, key: str, index: int) -> int:
    """Best-effort line of the index-th entry of list `key` (entries one per line in usual dumps)."""
    start = text.find(f'"{key}"')
    if start < 0:
        return 1
    pos, depth, seen = text.find("[", start) + 1, 0, -1
    while 0 < pos < len(text):
        ch = text[pos]
        if ch in "{[":
            if depth == 0:
                seen += 1
                if seen == index:
                    return text.count("\n", 0, pos) + 1
            depth += 1
        elif ch in "}]":
            if depth == 0:
                break
            depth -= 1
        pos += 1
    return text.count("\n", 0, start) + 1


def load_user_source(name: str, path: str) -> Source | MoleculeSource:
    """Load `--source NAME=PATH`: a paper source name (PAPER_SOURCES) or a substitute's own name."""
    if name not in PAPER_SOURCES and name not in WALK_SOURCES and name not in MOLECULE_SOURCES:
        known = ", ".join([*PAPER_SOURCES, *WALK_SOURCES, *MOLECULE_SOURCES])
        raise SourceFileError(f"{path}:0: unknown source name {name!r}; known: {known}")
    files = user_source_files(name, path)
    hashes = ", ".join(f"{f.name} sha256 {file_sha256(f)}" for f in files)
    licence = f"user copy for {name} ({hashes}); licence as given by its provider"
    scenario = _scenario_of(name)
    suffix = Path(path).suffix.lower() if len(files) == 1 else ""
    src: Source | MoleculeSource
    if len(files) == 2:
        src = load_openflights(*files, licence=licence)
    elif scenario == "molecules":
        src = load_smiles_csv(path, licence=licence)
    elif suffix == ".json":
        src = load_node_link(path, scenario=scenario, licence=licence)
    elif scenario == "knowledge" and suffix in (".nt", ".tsv", ".ttl"):
        src = load_triples(path, licence=licence)
    elif scenario == "flights":
        raise SourceFileError(f"{path}:0: {name} needs OpenFlights airports.dat and routes.dat "
                              f"({PAPER_SOURCES['openflights'].formats})")
    else:
        src = load_snap_edgelist(path, scenario=scenario, licence=licence)
    src.name = name
    if isinstance(src, Source) and src.scenario != scenario:
        src.scenario = scenario
    return src


def use_user_sources(spec: dict[str, str] | None) -> dict[str, dict[str, str]]:
    """Load and install user copies (NAME -> PATH); {} or None restores the bundled substitutes.

    Every file is read now, so a malformed line fails before any generation, with one line naming file
    and line. The spec also goes to the environment (GIE_USER_SOURCES) so worker processes install the
    same copies. Returns {NAME: {file name: sha256}} for the dataset manifest.
    """
    import json
    import os

    spec = dict(sorted((spec or {}).items()))
    loaded: dict[str, Source | MoleculeSource] = {}
    files: dict[str, dict[str, str]] = {}
    social: list[Source | MoleculeSource] = []
    for name, path in spec.items():
        src = load_user_source(name, path)
        files[name] = {f.name: file_sha256(f) for f in user_source_files(name, path)}
        if name in PAPER_SOURCES and PAPER_SOURCES[name].replaces == _SOCIAL_SLOTS:
            social.append(src)
        else:
            for slot in PAPER_SOURCES[name].replaces if name in PAPER_SOURCES else (name,):
                loaded[slot] = src
    # The paper's four social networks share the four bundled social graphs' slots, in turn.
    for i, slot in enumerate(_SOCIAL_SLOTS if social else ()):
        loaded.setdefault(slot, social[i % len(social)])
    _user.clear()
    _user.update(loaded)
    _user_files.clear()
    _user_files.update(files)
    _user_spec.clear()
    _user_spec.update(spec)
    if spec:
        os.environ[USER_SOURCES_ENV] = json.dumps(spec, sort_keys=True)
    else:
        os.environ.pop(USER_SOURCES_ENV, None)
    return files


def user_sources() -> dict[str, str]:
    """The NAME -> PATH spec currently installed (after syncing with the environment)."""
    _sync_env()
    return dict(_user_spec)


def replacements(names: Iterable[str]) -> dict[str, dict[str, object]]:
    """For the built-in names among `names` that a user copy replaces: {name: {"source": NAME,
    "files": {file name: sha256}}}; recorded in the dataset manifest so a user copy changes its identity."""
    _sync_env()
    out: dict[str, dict[str, object]] = {}
    for n in names:
        src = _user.get(n)
        if src is not None:
            out[n] = {"source": src.name, "files": dict(_user_files.get(src.name, {}))}
    return out


def _sync_env() -> None:
    import json
    import os

    raw = os.environ.get(USER_SOURCES_ENV)
    want = json.loads(raw) if raw else {}
    if want != _user_spec:
        use_user_sources(want)


def _user_replacement(name: str) -> Source | MoleculeSource | None:
    _sync_env()
    return _user.get(name)


def summary() -> str:
    """One line per built-in source: nodes, edges, licence (used by docs and `stats`)."""
    out = io.StringIO()
    for name in [*WALK_SOURCES, *MOLECULE_SOURCES]:
        src = get_source(name)
        if isinstance(src, MoleculeSource):
            out.write(f"{name}: {len(src.molecules)} molecules, {src.number_of_nodes()} atoms; {src.licence}\n")
        else:
            out.write(f"{name}: {src.number_of_nodes()} nodes, {src.number_of_edges()} edges; {src.licence}\n")
    return out.getvalue()
