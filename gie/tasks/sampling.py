"""Drawing the graph(s) of one instance: pick a source, sample a subgraph (or whole molecules) within
the level's node range, and relabel it with display labels."""

from __future__ import annotations

import random

import networkx as nx

from gie import splits
from gie.graphs import DEFAULT_COLOR, canonical_graph, make_labels, molecule_labels
from gie.levels import Level, NodeRange
from gie.sample import SOURCE_MAX_NODES, sample_molecule, sample_subgraph
from gie.sources.base import Source
from gie.sources.molecules import Molecule, MoleculeSource
from gie.sources.registry import get_source
from gie.tasks.config import RetryInstance, TaskConfig
from gie.tasks.instance import SourceInfo


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
    cfg: TaskConfig, rng: random.Random, stream: splits.Stream | None = None, level: Level = "easy",
    lo: int | None = None,
) -> str:
    lo = cfg.node_range(level).lo if lo is None else lo
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


def room(asked_lo: int) -> int:
    """Nodes a hard drawing holds beyond the asked graph's minimum: the focus target's neighbours and a
    separate same-colour distractor, or the recoloured side the question leaves out."""
    return max(4, -(-2 * asked_lo // 5))


def drawing_range(cfg: TaskConfig, level: Level, edit: str) -> NodeRange:
    """Nodes per drawn graph for `edit` at `level`. The asked graph must meet the level's range
    (`asked_range`); at the hard level a focus or recolour question is asked on part of the drawing, so the
    drawing starts `room(lo)` nodes higher (capped by what the source can draw within its edge budget,
    e.g. SD's 14 airports) and stays within the level's maximum, which keeps drawings as legible and exact
    solving as fast as on the plain hard rows (docs/deviations.md, "hard means hard for the asked graph").
    Easy focus drawings keep `focus_range`."""
    r = cfg.node_range(level)
    if edit == "focus" and level == "easy":
        return focus_range(cfg, r)
    if edit not in ("focus", "recolor") or level != "hard":
        return r
    lo = min(_source_cap(cfg), r.hi, r.lo + room(r.lo))
    return NodeRange(lo, r.hi, r.max_edges_per_node)


def asked_range(cfg: TaskConfig, level: Level) -> NodeRange:
    """The node range the graph a question is asked on must meet: the level's (`gie.catalogue`)."""
    return cfg.node_range(level)


def _source_cap(cfg: TaskConfig) -> int:
    """The most nodes every source of the task can draw (molecules: the largest molecule; walk sources:
    SOURCE_MAX_NODES, e.g. 14 flight airports within SD's edge budget); TSP's complete graph has no cap."""
    caps = []
    for name, _ in cfg.sources:
        src = get_source(name)
        if isinstance(src, MoleculeSource):
            caps.append(max(m.size for m in src.molecules))
        elif not cfg.complete:
            caps.append(SOURCE_MAX_NODES.get(name, 10**6))
    return max(caps, default=10**6)


def sample_single(
    cfg: TaskConfig, rng: random.Random, stream: splits.Stream | None, level: Level = "easy",
    *, edit: str = "none",
) -> tuple[str, nx.Graph, SourceInfo]:
    node_range = drawing_range(cfg, level, edit)
    src_name = _pick_source(cfg, rng, stream, level, node_range.lo)
    src = get_source(src_name)
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


def sample_pair(
    cfg: TaskConfig, rng: random.Random, stream: splits.Stream | None, level: Level = "easy",
    *, edit: str = "none",
) -> tuple[str, list[nx.Graph], SourceInfo]:
    node_range = drawing_range(cfg, level, edit)
    src_name = _pick_source(cfg, rng, stream, level, node_range.lo)
    src = get_source(src_name)
    assert isinstance(src, MoleculeSource)
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
