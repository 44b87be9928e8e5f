"""Building one GraphVerse instance: sample -> label -> edit -> asked graph(s) -> query -> gold, retrying
whole draws until every constraint holds (valid for the task, the edit changes the answer, a legible
layout)."""

from __future__ import annotations

import json
import random
from typing import Any, Literal

import networkx as nx

from gie import edits, splits
from gie.catalogue import EditKind
from gie.graphs import DEFAULT_COLOR, PALETTE, canonical_graph, to_node_link
from gie.layout import pick_layout_seed
from gie.levels import Level
from gie.sample import SampleError
from gie.sources.registry import get_source
from gie.tasks.config import RecolorMode, RetryInstance, TaskConfig
from gie.tasks.drawing import remember_patch, render_images
from gie.tasks.instance import GVData
from gie.tasks.sampling import sample_pair, sample_single
from nphe4v.core.schema import Gold

PairedMode = Literal["one", "both"]

# Colours a question may name. "sky" is the plain node fill and never names a constraint.
NAMED_COLORS: tuple[str, ...] = tuple(c for c in PALETTE if c != DEFAULT_COLOR)
PATCH_GRIDS = (2, 3)
RECOLOR_MARGIN = 24.0
MAX_ATTEMPTS = 60


def _edit_targets(cfg: TaskConfig, kind: EditKind, paired_mode: PairedMode | None, rng: random.Random) -> list[int]:
    if kind == "none":
        return []
    if not cfg.paired:
        return [0]
    mode = paired_mode or rng.choice(("one", "both"))
    return [0, 1] if mode == "both" else [rng.randrange(2)]


_SOLVED: dict[str, Gold] = {}


def solve_asked(cfg: TaskConfig, asked: list[nx.Graph], query: dict[str, Any]) -> Gold:
    # Generation solves the final asked graph(s) and build_instance solves them again: a small
    # per-process memo keeps exact GED from running twice.
    key = json.dumps([cfg.name, [to_node_link(a) for a in asked], query], sort_keys=True)
    if key not in _SOLVED:
        if len(_SOLVED) > 256:
            _SOLVED.clear()
        _SOLVED[key] = cfg.solve_graphs(asked, query)
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
        src_name, logical, info = sample_pair(cfg, rng, stream, level, focus=kind == "focus")
    else:
        src_name, g, info = sample_single(cfg, rng, stream, level, focus=kind == "focus")
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
        rendered = render_images(cfg, edit_base, images, layout_seed, final=False)
        if kind == "patch":
            for li in targets:
                png, pos, radius = rendered[li]
                g = images[li]
                edited, meta = edits.patch_perturb(png, pos, [list(e) for e in sorted(g.edges())], radius,
                                                   rng.choice(PATCH_GRIDS), rng.choice(("flip", "swap")), rng)
                remember_patch(png, meta, edited)
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
    gold = solve_asked(cfg, asked, query)
    if gold.value is None:
        raise RetryInstance("no feasible answer")
    if kind == "focus" and not cfg.paired and cfg.gold_key(gold) == cfg.gold_key(
            solve_asked(cfg, logical, query)):
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
    base_key = cfg.gold_key(solve_asked(cfg, images, query))
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
            gold = solve_asked(cfg, trial, query)
            if gold.value is None:
                continue
            # The last target must leave the gold different from ignoring every recolouring.
            if is_last and cfg.gold_key(gold) == base_key:
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
