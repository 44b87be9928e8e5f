"""Machinery shared by the 11 GraphVerse task specs: the instance data model, instance construction
(sample -> label -> edit -> asked graph), rendering from data, and the prompt text.

Instance data (docs/graphverse-design.md, "Instance data"):

    {"scenario": ..., "source": {"name", "licence", "node_ids", "labels"},
     "graphs": [node-link per rendered image], "asked": [node-link per graph asked on],
     "query": {...}, "edit": {...}, "layout_seed": int}

`edit` always has
    kind     none | patch | composition | focus | recolor
    targets  the logical graphs edited (single-image tasks: [0]; paired: [0], [1] or [0, 1]; [] for none)
    images   one [logical graph, part] per rendered image; part is 0/1 for the two views of a composed
             graph, else null
    details  one metadata dict (from gie.edits) per target, in `targets` order
Rendered image i uses layout seed `gie.render.image_seed(layout_seed, i)`; patch and recolour edits are
re-applied to the rendered PNG from their metadata, focus colours live in the stored graphs, and
composition is the split itself, so `render(data)` re-creates every PNG byte for byte.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import networkx as nx
from pydantic import BaseModel, ConfigDict, model_validator

from gie import answers, edits, solvers, splits
from gie.graphs import (
    DEFAULT_COLOR,
    PALETTE,
    canonical_graph,
    from_node_link,
    make_labels,
    molecule_labels,
    to_node_link,
)
from gie.layout import image_seed, pick_layout_seed
from gie.render import render_graph
from gie.sample import (
    LEVEL_NUMBER,
    LEVEL_RANGES,
    SOURCE_MAX_NODES,
    Level,
    NodeRange,
    SampleError,
    sample_molecule,
    sample_subgraph,
)
from gie.sources.base import Scenario, Source
from gie.sources.molecules import Molecule, MoleculeSource
from gie.sources.registry import get_source
from nphe4v.core.prompting import example_literal
from nphe4v.core.schema import ComplexityClass, Gold, ParseError, Verdict
from nphe4v.core.task import TaskSpec, TaskText

EditKind = Literal["none", "patch", "composition", "focus", "recolor"]
EDIT_KINDS: tuple[EditKind, ...] = ("none", "patch", "composition", "focus", "recolor")
PairedMode = Literal["one", "both"]
RecolorMode = Literal["only", "avoid"]

# Colours a question may name. "sky" is the plain node fill and never names a constraint.
NAMED_COLORS: tuple[str, ...] = tuple(c for c in PALETTE if c != DEFAULT_COLOR)
PATCH_GRIDS = (2, 3)
RECOLOR_MARGIN = 24.0
MAX_ATTEMPTS = 60


class RetryInstance(Exception):
    """This draw cannot make a valid instance (e.g. no edit choice changes the gold); draw again."""


# ============================================================================================ data model


class SourceInfo(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    licence: str
    # original ids of the sampled nodes, aligned with `labels` (the display labels given to them)
    node_ids: list[str]
    labels: list[str]


class GVData(BaseModel):
    model_config = ConfigDict(extra="forbid")

    scenario: Scenario
    source: SourceInfo
    graphs: list[dict[str, Any]]
    asked: list[dict[str, Any]]
    query: dict[str, Any] = {}
    edit: dict[str, Any]
    layout_seed: int

    @model_validator(mode="after")
    def _consistent(self) -> GVData:
        kind = self.edit.get("kind")
        if kind not in EDIT_KINDS:
            raise ValueError(f"edit.kind {kind!r} is not one of {', '.join(EDIT_KINDS)}")
        for key in ("targets", "images", "details"):
            if key not in self.edit:
                raise ValueError(f"edit.{key} missing")
        if len(self.edit["images"]) != len(self.graphs):
            raise ValueError(f"edit.images lists {len(self.edit['images'])} images for {len(self.graphs)} graphs")
        if len(self.edit["details"]) != len(self.edit["targets"]):
            raise ValueError("edit.details must hold one entry per edit.targets entry")
        if not 1 <= len(self.asked) <= 2:
            raise ValueError(f"asked holds {len(self.asked)} graphs; expected 1 or 2")
        for what, items in (("graphs", self.graphs), ("asked", self.asked)):
            for i, nl in enumerate(items):
                try:
                    from_node_link(nl)
                except (KeyError, TypeError) as e:
                    raise ValueError(f"{what}[{i}] is not node-link data ({e})") from None
        if len(self.source.node_ids) != len(self.source.labels):
            raise ValueError("source.node_ids and source.labels differ in length")
        asked0 = {n["id"] for n in self.asked[0]["nodes"]}
        for key in ("source", "target"):
            if key in self.query and self.query[key] not in asked0:
                raise ValueError(f"query.{key} {self.query[key]!r} is not a node of asked[0]")
        return self

    def asked_graphs(self) -> list[nx.Graph]:
        return [from_node_link(a) for a in self.asked]

    def image_graphs(self) -> list[nx.Graph]:
        return [from_node_link(g) for g in self.graphs]


# ============================================================================================ scenarios


@dataclass(frozen=True)
class Nouns:
    node: str
    nodes: str
    edge: str
    edges: str
    network: str


SCENARIO_TEXT: dict[str, tuple[str, Nouns]] = {
    # source name -> (what the picture shows, nouns used by task sentences)
    "us-airports": (
        "The picture shows part of the US domestic flight network: each circle is an airport labelled with "
        "its IATA code, and a line means there is a direct scheduled route between the two airports.",
        Nouns("airport", "airports", "route", "routes", "flight network"),
    ),
    "wikidata-costar": (
        "The picture shows a collaboration network of film actors taken from Wikidata: each circle is an "
        "actor, labelled with a three-letter code, and a line joins two actors who appeared together in at "
        "least two films.",
        Nouns("actor", "actors", "collaboration", "collaborations", "collaboration network"),
    ),
    "wikidata-film-kg": (
        "The picture shows part of a film knowledge graph taken from Wikidata: each circle is an entity (a "
        "film, a director or actor, a genre or a country), labelled with a three-letter code, and a line is "
        "a fact linking a film to its director, a lead actor, a genre or its country of origin.",
        Nouns("entity", "entities", "link", "links", "knowledge graph"),
    ),
    "karate": (
        "The picture shows the friendship network of a university karate club (Zachary's study): each "
        "circle is a member, labelled M01 to M34, and a line joins two members who were friends outside "
        "the club.",
        Nouns("member", "members", "friendship", "friendships", "friendship network"),
    ),
    "davis": (
        "The picture shows a social network from a 1930s study of a Southern town: circles are women "
        "(labelled with their initials) and social events (labelled E01 to E14), and a line joins a woman "
        "to an event she attended.",
        Nouns("node", "nodes", "tie", "ties", "social network"),
    ),
    "florentine": (
        "The picture shows the marriage network of Renaissance Florentine families: each circle is a "
        "family, labelled with a three-letter code, and a line is a marriage tie between two families.",
        Nouns("family", "families", "marriage tie", "marriage ties", "marriage network"),
    ),
    "les-miserables": (
        "The picture shows a social network of characters of Les Miserables: each circle is a character, "
        "labelled with a three-letter code, and a line joins two characters who appear together in a "
        "chapter.",
        Nouns("character", "characters", "tie", "ties", "social network"),
    ),
    "nci-molecules": (
        "The picture shows a molecule from the NCI compound database as a graph: each circle is an atom "
        "labelled with its element symbol and a number (C1, C2, O1, ...), and a line is a chemical bond "
        "(hydrogen atoms and bond orders are not shown).",
        Nouns("atom", "atoms", "bond", "bonds", "molecule"),
    ),
    # The paper's own sources, when the user supplies copies (gie.sources.use_user_sources).
    "dblp": (
        "The picture shows part of the DBLP co-authorship network: each circle is an author, labelled with "
        "a three-letter code, and a line joins two authors who wrote a paper together.",
        Nouns("author", "authors", "co-authorship", "co-authorships", "co-authorship network"),
    ),
    **{
        name: (
            f"The picture shows part of the {title} social network: each circle is a user, labelled with a "
            "three-letter code, and a line joins two users who are connected on the platform.",
            Nouns("user", "users", "connection", "connections", "social network"),
        )
        for name, title in (("digg", "Digg"), ("flixster", "Flixster"), ("lastfm", "Last.fm"), ("pokec", "Pokec"))
    },
    "dbpedia": (
        "The picture shows part of the DBpedia knowledge graph: each circle is an entity, labelled with a "
        "three-letter code, and a line is a fact linking two entities.",
        Nouns("entity", "entities", "link", "links", "knowledge graph"),
    ),
    "openflights": (
        "The picture shows part of the world flight network from OpenFlights: each circle is an airport "
        "labelled with its IATA code, and a line means there is a direct scheduled route between the two "
        "airports.",
        Nouns("airport", "airports", "route", "routes", "flight network"),
    ),
    **{
        name: (
            f"The picture shows a molecule from {title} as a graph: each circle is an atom labelled with its "
            "element symbol and a number (C1, C2, O1, ...), and a line is a chemical bond (hydrogen atoms and "
            "bond orders are not shown).",
            Nouns("atom", "atoms", "bond", "bonds", "molecule"),
        )
        for name, title in (("pubchemqc", "PubChemQC"), ("pcqm4mv2", "PCQM4Mv2"))
    },
}
MOLECULE_DATABASES = {"nci-molecules": "the NCI compound database", "pubchemqc": "PubChemQC",
                      "pcqm4mv2": "PCQM4Mv2"}
WEIGHT_SENTENCE = "The red number on a line is the flight distance of that route in kilometres."
PAIRED_SCENARIO = (
    "The pictures show two molecules from the NCI compound database as graphs, Graph 1 and Graph 2 (each "
    "picture is captioned): each circle is an atom labelled with its element symbol and a number (C1, C2, "
    "O1, ...), and a line is a chemical bond (hydrogen atoms and bond orders are not shown). The labels of "
    "the two molecules are independent of each other."
)
GENERIC_SCENARIO = (
    "The picture shows a network: each circle is a node labelled with a short code, and a line is an edge "
    "between two nodes.",
    Nouns("node", "nodes", "edge", "edges", "network"),
)


# ============================================================================================ task config


QueryFn = Callable[[nx.Graph, random.Random], dict[str, Any]]
ValidFn = Callable[[nx.Graph, dict[str, Any]], bool]
TextFn = Callable[[Nouns, dict[str, Any]], str]


@dataclass(frozen=True)
class TaskConfig:
    name: str
    complexity: ComplexityClass
    # (source name, weight); molecules for paired tasks
    sources: tuple[tuple[str, float], ...]
    edits: tuple[EditKind, ...]
    task_text: TextFn
    weighted: bool = False
    query: QueryFn | None = None
    # is this (asked graph, query) a proper instance (feasible, not degenerate)?
    valid: ValidFn = lambda g, q: g.number_of_edges() > 0
    recolor_modes: tuple[RecolorMode, ...] = ("only", "avoid")
    # smallest focused subgraph M
    focus_min: int = 4
    # nodes a recolour must not touch (the query's endpoints stay visible and asked)
    keep: Callable[[dict[str, Any]], set[str]] = lambda q: set()
    paired: bool = False
    # With probability prefer_rate an instance must satisfy `prefer` on its asked graph (CYC: has a
    # cycle, MCP: a clique of 3+), so degenerate answers stay possible but rare.
    prefer: Callable[[nx.Graph], bool] | None = None
    prefer_rate: float = 0.0
    # TSP: the sampled airports become a complete graph weighted by great-circle km (the paper's design)
    complete: bool = False
    # what the scenario adds for weighted drawings (TSP reads its distances from a table)
    weight_sentence: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def node_range(self, level: Level = "easy") -> NodeRange:
        return LEVEL_RANGES[self.name][level]


def gold_key(task: str, gold: Gold) -> Any:
    """What must differ for a recolouring to matter: the value, or the set itself for CN."""
    if task == "CN":
        return tuple(sorted(map(str, gold.answer.get("CommonNeighbors", []))))
    return gold.value


# ============================================================================================ sampling


def _label_walk_graph(g: nx.Graph, weighted: bool) -> tuple[nx.Graph, list[str], list[str]]:
    names = {n: str(g.nodes[n].get("name", n)) for n in g}
    codes = {n: str(g.nodes[n]["code"]) for n in g if "code" in g.nodes[n]}
    labels = make_labels(names, codes)
    h = nx.Graph()
    for n in sorted(g, key=lambda x: labels[x]):
        h.add_node(labels[n], color=DEFAULT_COLOR)
    for u, v, d in g.edges(data=True):
        if weighted:
            h.add_edge(labels[u], labels[v], weight=int(d["weight"]))
        else:
            h.add_edge(labels[u], labels[v])
    order = sorted(g, key=lambda x: labels[x])
    return canonical_graph(h), [str(n) for n in order], [labels[n] for n in order]


def _label_molecule(m: Molecule) -> tuple[nx.Graph, list[str], list[str]]:
    g = m.graph()
    labels = molecule_labels({n: g.nodes[n]["element"] for n in g})
    h = nx.Graph()
    for n in sorted(g, key=lambda x: labels[x]):
        h.add_node(labels[n], color=DEFAULT_COLOR, element=g.nodes[n]["element"])
    for u, v in g.edges():
        h.add_edge(labels[u], labels[v])
    order = sorted(g, key=lambda x: labels[x])
    return canonical_graph(h), order, [labels[n] for n in order]


def _source_admits(name: str, stream: splits.Stream | None) -> bool:
    """Can `stream` draw from this source at all? (A small walk source belongs to one stream.)"""
    if stream is None:
        return True
    src = get_source(name)
    if isinstance(src, MoleculeSource):
        return True
    whole = splits.whole_source_stream(name, src.number_of_nodes())
    return whole is None or whole == stream


def _source_reaches(name: str, lo: int) -> bool:
    """Does the source have at least `lo` nodes (a walk source) or a molecule of `lo`+ atoms?"""
    src = get_source(name)
    if isinstance(src, MoleculeSource):
        return any(m.size >= lo for m in src.molecules)
    return src.number_of_nodes() >= lo


def _pick_source(
    cfg: TaskConfig, rng: random.Random, stream: splits.Stream | None = None, level: Level = "easy"
) -> str:
    lo = cfg.node_range(level).lo
    pairs = [(n, w) for n, w in cfg.sources
             if _source_admits(n, stream) and _source_reaches(n, lo)
             and (cfg.complete or SOURCE_MAX_NODES.get(n, lo) >= lo)]
    if not pairs:
        raise ValueError(f"{cfg.name}: no source serves the {stream} stream at the {level} level")
    return rng.choices([n for n, _ in pairs], weights=[w for _, w in pairs])[0]


_REGIONS: dict[tuple[int, str], frozenset[str] | None] = {}


def _walk_region(src: Source, stream: splits.Stream | None) -> frozenset[str] | None:
    if stream is None:
        return None
    key = (id(src), stream)
    if key not in _REGIONS:
        _REGIONS[key] = splits.region(src.name, stream, src.adjacency or src.starts())
    return _REGIONS[key]


def _complete_with_distances(g: nx.Graph, src: Source) -> nx.Graph:
    """The complete graph on g's nodes, each pair weighted by the source's distance (great-circle km)."""
    assert src.weight is not None, f"{src.name} has no distances for a complete graph"
    h = nx.Graph()
    nodes = sorted(g)
    for n in nodes:
        h.add_node(n, **g.nodes[n])
    for i, u in enumerate(nodes):
        for v in nodes[i + 1 :]:
            h.add_edge(u, v, weight=int(src.weight(u, v)))
    return h


def focus_range(cfg: TaskConfig, node_range: NodeRange) -> NodeRange:
    """The level's range raised for an attention-focusing edit: the target (>= focus_min nodes), its
    neighbours and a separate same-colour distractor must all fit, which a 4- or 5-node connected graph
    cannot hold (docs/deviations.md: focus instances draw from the upper part of the easy range)."""
    lo = min(node_range.hi, max(node_range.lo, cfg.focus_min + 3))
    return NodeRange(lo, node_range.hi, node_range.max_edges_per_node)


def _sample_single(
    cfg: TaskConfig, rng: random.Random, stream: splits.Stream | None, level: Level = "easy",
    *, focus: bool = False,
) -> tuple[str, nx.Graph, SourceInfo]:
    src_name = _pick_source(cfg, rng, stream, level)
    src = get_source(src_name)
    node_range = cfg.node_range(level)
    if focus:
        node_range = focus_range(cfg, node_range)
    if isinstance(src, MoleculeSource):
        def ok_mol(m: Molecule) -> bool:
            if stream is not None and splits.stream_of_id(src.name, m.mol_id) != stream:
                return False
            return cfg.valid(m.graph(), {}) if cfg.query is None else True

        mol = sample_molecule(src, node_range, rng, accept=ok_mol)
        g, ids, labels = _label_molecule(mol)
        return src_name, g, SourceInfo(name=src.name, licence=src.licence, node_ids=ids, labels=labels)
    assert isinstance(src, Source)

    def ok(g: nx.Graph) -> bool:
        # Validity never depends on labels, so candidates are checked on original ids (labelling is slow).
        if cfg.complete:
            return g.number_of_nodes() >= node_range.lo
        return cfg.valid(g, {}) if cfg.query is None else _has_query(cfg, g)

    g0 = sample_subgraph(src, node_range, rng, accept=ok, region=_walk_region(src, stream))
    if cfg.complete:
        g0 = _complete_with_distances(g0, src)
    g, ids, labels = _label_walk_graph(g0, cfg.weighted)
    return src_name, g, SourceInfo(name=src.name, licence=src.licence, node_ids=ids, labels=labels)


def _has_query(cfg: TaskConfig, g: nx.Graph) -> bool:
    assert cfg.query is not None
    try:
        q = cfg.query(g, random.Random(0))
    except RetryInstance:
        return False
    return cfg.valid(g, q)


def _sample_pair(
    cfg: TaskConfig, rng: random.Random, stream: splits.Stream | None, level: Level = "easy",
    *, focus: bool = False,
) -> tuple[str, list[nx.Graph], SourceInfo]:
    src_name = _pick_source(cfg, rng, stream, level)
    src = get_source(src_name)
    assert isinstance(src, MoleculeSource)
    node_range = cfg.node_range(level)
    if focus:
        node_range = focus_range(cfg, node_range)
    ok = (lambda m: splits.stream_of_id(src.name, m.mol_id) == stream) if stream is not None else None
    a = sample_molecule(src, node_range, rng, accept=ok)
    # GraphArena pairs molecules of equal size; within one atom keeps the edit distance about structure.
    near = NodeRange(max(node_range.lo, a.size - 1), min(node_range.hi, a.size + 1),
                     node_range.max_edges_per_node)
    b = sample_molecule(src, near, rng, accept=ok, exclude=[a.mol_id], skew=False)
    ga, ida, la = _label_molecule(a)
    gb, idb, lb = _label_molecule(b)
    info = SourceInfo(name=src.name, licence=src.licence, node_ids=ida + idb, labels=la + lb)
    return src_name, [ga, gb], info


# ============================================================================================ edits


def _captions(cfg: TaskConfig, images: list[list[Any]]) -> list[str | None]:
    if len(images) == 1:
        return [None]
    out: list[str | None] = []
    for logical, part in images:
        parts = "" if part is None else ("Part A" if part == 0 else "Part B")
        if cfg.paired:
            out.append(f"Graph {logical + 1}" + (f", {parts.replace('Part', 'part')}" if parts else ""))
        else:
            out.append(parts)
    return out


def _legends(edit: dict[str, Any], graphs: list[nx.Graph]) -> list[tuple[str, ...]]:
    """Colour legend per image: only on images whose question names a colour."""
    out: list[tuple[str, ...]] = []
    for i, (logical, _) in enumerate(edit["images"]):
        if logical not in edit["targets"] or edit["kind"] not in ("focus", "recolor"):
            out.append(())
            continue
        meta = edit["details"][edit["targets"].index(logical)]
        # Recolouring: the colours the edited picture shows. The first render, made before the recoloured
        # set is chosen, lists every original colour; node positions do not depend on the legend's entries.
        gone = set(meta.get("recoloured", ())) if edit["kind"] == "recolor" else set()
        colours = {graphs[i].nodes[n].get("color", DEFAULT_COLOR) for n in graphs[i] if n not in gone}
        if edit["kind"] == "recolor":
            colours.add(meta["new_color"])
        out.append(tuple(c for c in PALETTE if c in colours))
    return out


def render_data(cfg: TaskConfig, data: GVData) -> list[bytes]:
    return [png for png, _, _ in _render_images(cfg, data.edit, data.image_graphs(), data.layout_seed, final=True)]


def _render_images(
    cfg: TaskConfig, edit: dict[str, Any], graphs: list[nx.Graph], layout_seed: int, *, final: bool
) -> list[tuple[bytes, dict[str, tuple[float, float]], float]]:
    captions = _captions(cfg, edit["images"])
    legends = _legends(edit, graphs)
    out = []
    for i, g in enumerate(graphs):
        png, pos, radius = render_graph(g, image_seed(layout_seed, i), caption=captions[i], legend=legends[i],
                                        distance_table=cfg.complete)
        logical = edit["images"][i][0]
        if final and logical in edit["targets"]:
            meta = edit["details"][edit["targets"].index(logical)]
            if edit["kind"] == "patch":
                png = _PATCHED.pop(_patch_key(png, meta), None) or edits.apply_patch_edit(png, meta)
            elif edit["kind"] == "recolor":
                new = PALETTE[meta["new_color"]]
                png = edits.recolor_nodes_png(png, pos, radius, {n: new for n in meta["recoloured"]})
        out.append((png, pos, radius))
    return out


# patch_perturb already returns the edited PNG, byte-identical to apply_patch_edit(base, meta) (both
# encode _apply_patch(decode(base), meta)); keeping it for the final render saves one PNG encode.
_PATCHED: dict[str, bytes] = {}


def _patch_key(png: bytes, meta: dict[str, Any]) -> str:
    return hashlib.sha256(png).hexdigest() + json.dumps(meta, sort_keys=True)


def _remember_patch(png: bytes, meta: dict[str, Any], edited: bytes) -> None:
    if len(_PATCHED) > 16:
        _PATCHED.clear()
    _PATCHED[_patch_key(png, meta)] = edited


def _edit_targets(cfg: TaskConfig, kind: EditKind, paired_mode: PairedMode | None, rng: random.Random) -> list[int]:
    if kind == "none":
        return []
    if not cfg.paired:
        return [0]
    mode = paired_mode or rng.choice(("one", "both"))
    return [0, 1] if mode == "both" else [rng.randrange(2)]


_SOLVED: dict[str, Gold] = {}


def _solve(cfg: TaskConfig, asked: list[nx.Graph], query: dict[str, Any]) -> Gold:
    # Generation solves the final asked graph(s) and build_instance solves them again: a small
    # per-process memo keeps exact GED from running twice.
    key = json.dumps([cfg.name, [to_node_link(a) for a in asked], query], sort_keys=True)
    if key not in _SOLVED:
        if len(_SOLVED) > 256:
            _SOLVED.clear()
        _SOLVED[key] = solvers.solve(cfg.name, asked, query)
    return _SOLVED[key]


def _choose_query(cfg: TaskConfig, g: nx.Graph, rng: random.Random) -> dict[str, Any]:
    if cfg.query is None:
        return {}
    q = cfg.query(g, rng)
    if not cfg.valid(g, q):
        raise RetryInstance("no valid query")
    return q


def build_data(
    cfg: TaskConfig,
    kind: EditKind,
    rng: random.Random,
    *,
    paired_mode: PairedMode | None = None,
    stream: splits.Stream | None = None,
    level: Level = "easy",
) -> GVData:
    """One instance of `cfg` with edit `kind` at `level`; retries whole draws until every constraint
    holds. `stream` ("train"/"test") keeps the draw inside that stream's share of the sources
    (`gie.splits`); None draws from everything."""
    if kind not in cfg.edits:
        raise ValueError(f"{cfg.name} does not take the {kind!r} edit; allowed: {', '.join(cfg.edits)}")
    last: Exception | None = None
    want_preferred = cfg.prefer is not None and rng.random() < cfg.prefer_rate
    for _ in range(MAX_ATTEMPTS):
        try:
            return _build_once(cfg, kind, rng, paired_mode, stream, want_preferred, level)
        except (RetryInstance, SampleError, ValueError) as e:
            # ValueError: an edit found no admissible choice on this graph (gie.edits raises it then).
            last = e
    raise SampleError(f"{cfg.name}/{kind}: no valid instance in {MAX_ATTEMPTS} draws (last: {last})")


def _build_once(
    cfg: TaskConfig,
    kind: EditKind,
    rng: random.Random,
    paired_mode: PairedMode | None,
    stream: splits.Stream | None,
    want_preferred: bool = False,
    level: Level = "easy",
) -> GVData:
    if cfg.paired:
        src_name, logical, info = _sample_pair(cfg, rng, stream, level, focus=kind == "focus")
    else:
        src_name, g, info = _sample_single(cfg, rng, stream, level, focus=kind == "focus")
        logical = [g]
    scenario = get_source(src_name).scenario
    targets = _edit_targets(cfg, kind, paired_mode, rng)
    edit: dict[str, Any] = {"kind": kind, "targets": targets, "images": [], "details": []}
    query: dict[str, Any] = {}
    if kind == "composition":
        images: list[nx.Graph] = []
        asked = list(logical)
        for li, g in enumerate(logical):
            if li in targets:
                v1, v2, _, meta = edits.compose_split(g, rng)
                if cfg.weighted:
                    meta["cross_weights"] = [g.edges[u, v]["weight"] for u, v in meta["cross_edges"]]
                edit["details"].append(meta)
                for part, vs in enumerate((v1, v2)):
                    images.append(canonical_graph(g.subgraph(vs)))
                    edit["images"].append([li, part])
            else:
                images.append(g)
                edit["images"].append([li, None])
        if not cfg.paired:
            query = _choose_query(cfg, logical[0], rng)
    elif kind == "focus":
        images, asked = [], []
        for li, g in enumerate(logical):
            edit["images"].append([li, None])
            if li not in targets:
                images.append(g)
                asked.append(g)
                continue
            focus, others = _focus_colours(rng)
            n = g.number_of_nodes()
            lo = min(cfg.focus_min, n - 1)
            hi = max(lo, (2 * n) // 3)
            colours, meta = edits.attentional_focus(g, rng, focus, DEFAULT_COLOR, (lo, hi), other_colors=others)
            coloured = canonical_graph(g)
            for v, c in colours.items():
                coloured.nodes[v]["color"] = c
            coloured = canonical_graph(coloured)
            images.append(coloured)
            asked.append(canonical_graph(coloured.subgraph(meta["target"])))
            edit["details"].append(meta)
        if not cfg.paired:
            query = _choose_query(cfg, asked[0], rng)
    else:
        images = list(logical)
        asked = list(logical)
        edit["images"] = [[li, None] for li in range(len(logical))]
        if not cfg.paired:
            query = _choose_query(cfg, logical[0], rng)

    new_colors = [rng.choice(NAMED_COLORS) for _ in targets] if kind == "recolor" else []
    for li, new_color in zip(targets if kind == "recolor" else [], new_colors, strict=True):
        # The paper recolours a graph whose nodes already carry colours (appendix A.2: "assigning initial
        # colors to nodes in the original graph"); the recoloured image must be read, not assumed.
        images[li] = _initial_colours(images[li], new_color, cfg.keep(query), rng)
        asked[li] = images[li]
    captions = cfg.paired or kind == "composition"
    layout_seed, ambiguities = pick_layout_seed(images, rng, captions=captions, distance_table=cfg.complete)
    if ambiguities:
        # Hard-level graphs sometimes have no legible drawing among the candidate layouts: draw another
        # graph rather than store an image with touching labels or an edge through a foreign node.
        raise RetryInstance(f"no legible layout ({ambiguities} defects)")

    if kind in ("patch", "recolor"):
        # The edit metadata is computed on the base drawing (positions of the unedited render, with the
        # final legend so that the render cache serves the final pass too).
        edit_base = {"kind": kind, "targets": targets, "images": edit["images"],
                     "details": [{"new_color": c} for c in new_colors] or [{} for _ in targets]}
        rendered = _render_images(cfg, edit_base, images, layout_seed, final=False)
        if kind == "patch":
            for li in targets:
                png, pos, radius = rendered[li]
                g = images[li]
                edited, meta = edits.patch_perturb(png, pos, [list(e) for e in sorted(g.edges())], radius,
                                                   rng.choice(PATCH_GRIDS), rng.choice(("flip", "swap")), rng)
                _remember_patch(png, meta, edited)
                edit["details"].append(meta)
        else:
            asked, details = _recolor(cfg, images, rendered, targets, new_colors, query, rng)
            edit["details"] = details

    for i, a in enumerate(asked):
        if a.number_of_nodes() == 0:
            raise RetryInstance(f"asked graph {i} is empty")
    if not cfg.paired and not cfg.valid(asked[0], query):
        raise RetryInstance("asked graph not valid for the task")
    if want_preferred and cfg.prefer is not None and not cfg.prefer(asked[0]):
        raise RetryInstance("asked graph lacks the preferred property")
    gold = _solve(cfg, asked, query)
    if gold.value is None:
        raise RetryInstance("no feasible answer")
    if kind == "focus" and not cfg.paired and gold_key(cfg.name, gold) == gold_key(
            cfg.name, _solve(cfg, logical, query)):
        # As for recolouring: a focus edit the model may ignore without changing its answer tests nothing.
        # (Paired tasks skip this check: it would double the exact GED/MCS cost per draw.)
        raise RetryInstance("ignoring the focus edit gives the same answer")
    return GVData(
        scenario=scenario,
        source=info,
        graphs=[to_node_link(g) for g in images],
        asked=[to_node_link(a) for a in asked],
        query=query,
        edit=edit,
        layout_seed=layout_seed,
    )


def _focus_colours(rng: random.Random) -> tuple[str, list[str]]:
    """The focus colour c* and two distractor background colours (the base fill is sky)."""
    picks = rng.sample(NAMED_COLORS, 3)
    return picks[0], picks[1:]


# Share of nodes drawn in the recolouring's colour before the edit: enough that the colour's group is
# not just the recoloured region, few enough that the region still decides most of it.
RECOLOR_PRIOR_SHARE = 0.2
INITIAL_COLOURS = 3


def _initial_colours(g: nx.Graph, new_color: str, keep: set[str], rng: random.Random) -> nx.Graph:
    """A copy of g with every node in one of INITIAL_COLOURS named colours, the recolouring colour among
    them (never on `keep` nodes, which must stay asked in "avoid" mode), at least two colours in use."""
    others = rng.sample([c for c in NAMED_COLORS if c != new_color], INITIAL_COLOURS - 1)
    h = canonical_graph(g)
    nodes = sorted(h)
    for _ in range(MAX_ATTEMPTS):
        colours = {
            v: rng.choice(others) if v in keep or rng.random() >= RECOLOR_PRIOR_SHARE else new_color
            for v in nodes
        }
        if len(set(colours.values())) >= 2 or len(nodes) < 2:
            break
    for v in nodes:
        h.nodes[v]["color"] = colours[v]
    return h


def _recolor(
    cfg: TaskConfig,
    images: list[nx.Graph],
    rendered: list[tuple[bytes, dict[str, tuple[float, float]], float]],
    targets: list[int],
    new_colors: list[str],
    query: dict[str, Any],
    rng: random.Random,
) -> tuple[list[nx.Graph], list[dict[str, Any]]]:
    """Spatially-conditioned recolouring of each target image, with a colour constraint that changes
    the gold answer versus ignoring the edit (else RetryInstance). The constraint covers every node
    drawn in the new colour after the edit: the recoloured ones and those that had the colour before."""
    asked = list(images)
    base_key = gold_key(cfg.name, _solve(cfg, images, query))
    details = []
    keep = cfg.keep(query)
    for li, new_color in zip(targets, new_colors, strict=True):
        g = images[li]
        _, pos, _ = rendered[li]
        mode: RecolorMode = rng.choice(cfg.recolor_modes)
        options = edits.spatial_candidates(g, pos, RECOLOR_MARGIN)
        rng.shuffle(options)
        chosen_meta = None
        is_last = li == targets[-1]
        for anchor, direction, recoloured in options[:12]:
            if keep & set(recoloured):
                continue
            if all(g.nodes[v].get("color") == new_color for v in recoloured):
                continue  # the edit would change no pixel
            h = edits.recolor_constraint_graph(g, recoloured, mode, new_color)
            h = canonical_graph(h)
            trial = list(asked)
            trial[li] = h
            if h.number_of_nodes() == 0 or (not cfg.paired and not cfg.valid(h, query)):
                continue
            if cfg.paired and h.number_of_nodes() < 2:
                continue
            gold = _solve(cfg, trial, query)
            if gold.value is None:
                continue
            # The last target must leave the gold different from ignoring every recolouring.
            if is_last and gold_key(cfg.name, gold) == base_key:
                continue
            _, meta = edits.spatial_recolor(g, pos, rng, new_color, anchor=anchor, direction=direction,
                                            margin=RECOLOR_MARGIN)
            meta["mode"] = mode
            chosen_meta = meta
            asked = trial
            break
        if chosen_meta is None:
            raise RetryInstance("no recolouring changes the answer")
        details.append(chosen_meta)
    return asked, details


# ============================================================================================ text


DIRECTION_WORDS = {"left": "to the left of", "right": "to the right of", "above": "above", "below": "below"}


def _pair_list(edges: Sequence[Sequence[str]], weights: Sequence[int] | None) -> str:
    if weights is None:
        return ", ".join(f"{u}–{v}" for u, v in edges)
    return ", ".join(f"{u}–{v} ({w} km)" for (u, v), w in zip(edges, weights, strict=True))


def _which(cfg: TaskConfig, logical: int) -> str:
    return f"the picture of Graph {logical + 1}" if cfg.paired else "the picture"


def edit_sentences(cfg: TaskConfig, data: GVData, nouns: Nouns) -> list[str]:
    """The question's account of the edit: what changed and which graph the question is about."""
    e = data.edit
    out: list[str] = []
    for li, meta in zip(e["targets"], e["details"], strict=True):
        where = _which(cfg, li)
        subject = f"molecule of Graph {li + 1}" if cfg.paired else nouns.network
        if e["kind"] == "patch":
            if meta["op"] == "flip":
                out.append(f"In {where}, one rectangular patch has been mirrored. Undo this in your mind and "
                           f"read the {subject} as it was originally drawn.")
            else:
                out.append(f"In {where}, two rectangular patches have been swapped with each other. Undo this "
                           f"in your mind and read the {subject} as it was originally drawn.")
        elif e["kind"] == "composition":
            ab = "two pictures, Part A and Part B" if not cfg.paired else (
                f"two pictures, Graph {li + 1}, part A and Graph {li + 1}, part B")
            links = _pair_list(meta["cross_edges"], meta.get("cross_weights"))
            out.append(
                f"The {subject} is split across {ab}; the following {nouns.edges} join {nouns.nodes} of "
                f"part A to {nouns.nodes} of part B and are not drawn: {links}. "
                f"Answer about the whole {subject}: both parts together with these {nouns.edges}."
            )
        elif e["kind"] == "focus":
            c = meta["color"]
            out.append(
                f"In {where}, look at the {nouns.nodes} drawn in {c}: answer only about the largest connected "
                f"group of {c} {nouns.nodes} and the {nouns.edges} among them. Ignore all other "
                f"{nouns.nodes}, including smaller {c} groups."
            )
        elif e["kind"] == "recolor":
            c = meta["new_color"]
            out.append(
                f"In {where}, every {nouns.node} {DIRECTION_WORDS[meta['direction']]} {meta['anchor']} "
                f"(comparing the centres of the circles) has been recoloured {c}; the other {nouns.nodes}, "
                f"{meta['anchor']} included, keep their original colours."
            )
            if meta["mode"] == "avoid":
                out.append(
                    f"The {nouns.nodes} now drawn in {c} (recoloured or {c} already) are excluded: remove them "
                    f"and their {nouns.edges}, and answer about what remains."
                )
            else:
                out.append(
                    f"Answer only about the {nouns.nodes} now drawn in {c} (recoloured or {c} already) and "
                    f"the {nouns.edges} among them; ignore every {nouns.node} of another colour."
                )
    return out


def task_text(cfg: TaskConfig, data: GVData) -> TaskText:
    src = data.source.name
    if cfg.paired:
        scenario = PAIRED_SCENARIO.replace("the NCI compound database", MOLECULE_DATABASES.get(src, "a database"))
        nouns = SCENARIO_TEXT["nci-molecules"][1]
    else:
        scenario, nouns = SCENARIO_TEXT.get(src, GENERIC_SCENARIO)
        if cfg.weighted:
            scenario += " " + (cfg.weight_sentence or WEIGHT_SENTENCE)
    if data.edit["kind"] == "composition" and not cfg.paired:
        scenario = scenario.replace("The picture shows", "The two pictures show", 1)
    question = " ".join([cfg.task_text(nouns, data.query), *edit_sentences(cfg, data, nouns)])
    return TaskText(
        intro=scenario,
        question=question,
        output=answers.ANSWER_INSTRUCTIONS[cfg.name] + " Use the node labels exactly as drawn.",
        example=example_literal(answers.ANSWER_EXAMPLES[cfg.name]),
        data_lines=(),
    )


# ============================================================================================ spec


def _level_name(level: int) -> Level:
    for name, number in LEVEL_NUMBER.items():
        if number == level:
            return name
    raise ValueError(f"GraphVerse level {level} is not one of {sorted(LEVEL_NUMBER.values())} (1 easy, 2 hard)")


def build_spec(cfg: TaskConfig) -> TaskSpec[GVData]:
    def params(level: int) -> dict[str, Any]:
        r = cfg.node_range(_level_name(level))
        return {
            "level": _level_name(level),
            "nodes": [r.lo, r.hi],
            "max_edges_per_node": r.max_edges_per_node,
            "sources": [n for n, _ in cfg.sources],
            "edits": list(cfg.edits),
        }

    def generate(level: int, rng: random.Random) -> GVData:
        return build_data(cfg, rng.choice(cfg.edits), rng, level=_level_name(level))

    def solve(data: GVData) -> Gold:
        return _solve(cfg, data.asked_graphs(), data.query)

    def render(data: GVData) -> list[bytes]:
        return render_data(cfg, data)

    def text(data: GVData) -> TaskText:
        return task_text(cfg, data)

    def parse(obj: dict[str, Any]) -> dict[str, Any] | ParseError:
        return answers.parse(cfg.name, obj)

    def verify(data: GVData, gold: Gold, answer: dict[str, Any]) -> Verdict:
        return answers.verify(cfg.name, data.asked_graphs(), data.query, gold, answer)

    def heuristic(data: GVData) -> dict[str, Any]:
        return answers.heuristic(cfg.name, data.asked_graphs(), data.query)

    def random_answer(data: GVData, rng: random.Random) -> dict[str, Any]:
        return answers.random_answer(cfg.name, data.asked_graphs(), data.query, rng)

    return TaskSpec(
        name=cfg.name,
        benchmark="graphverse",
        complexity=cfg.complexity,
        data_model=GVData,
        params=params,
        generate=generate,
        solve=solve,
        render=render,
        text=text,
        parse=parse,
        verify=verify,
        heuristic=heuristic,
        random_answer=random_answer,
    )
