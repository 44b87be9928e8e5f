"""Building one GraphVerse instance: sample -> label -> edit -> asked graph(s) -> query -> gold, retrying
whole draws until every constraint holds (valid for the task, the edit changes the answer, a legible
layout)."""

from __future__ import annotations

import json
import random
from typing import Any, Literal

import networkx as nx

from evalcore.schema import Gold
from gie import edits, splits
from gie.catalogue import EditKind
from gie.graphs import DEFAULT_COLOR, PALETTE, canonical_graph, to_node_link
from gie.layout import pick_layout_seed
from gie.levels import Level
from gie.sample import SampleError
from gie.sources.registry import get_source
from gie.tasks.config import RecolorMode, RetryInstance, TaskConfig, gold_key_is_value
from gie.tasks.drawing import image_positions, remember_patch, render_images
from gie.tasks.instance import GVData
from gie.tasks.sampling import asked_range, sample_pair, sample_single

PairedMode = Literal["one", "both"]

# Colours a question may name. "sky" is the plain node fill and never names a constraint.
NAMED_COLORS: tuple[str, ...] = tuple(c for c in PALETTE if c != DEFAULT_COLOR)
PATCH_GRIDS = (2, 3)
RECOLOR_MARGIN = 24.0
# recolouring choices tried per drawing before the whole draw is redrawn
RECOLOR_TRIES = 12
RECOLOR_TRIES_HARD = 64
MAX_ATTEMPTS = 60
# Focus / recolour draws are rejected more often (hard: the asked side must reach the hard range, and SD's
# 14-airport drawings rarely leave a question the edit changes; both levels: a degenerate edited graph is
# redrawn); most rejections come before the layout. A cap only ever changes draws that would have failed.
MAX_ATTEMPTS_EDIT = 200


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
    attempts = MAX_ATTEMPTS_EDIT if kind in ("focus", "recolor") else MAX_ATTEMPTS
    for _ in range(attempts):
        try:
            return _build_once(cfg, kind, rng, paired_mode, stream, want_preferred, level)
        except (RetryInstance, SampleError, ValueError) as e:
            # ValueError: an edit found no admissible choice on this graph (gie.edits raises it then).
            last = e
    raise SampleError(f"{cfg.name}/{kind}: no valid instance in {attempts} draws (last: {last})")


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
        src_name, logical, info = sample_pair(cfg, rng, stream, level, edit=kind)
    else:
        src_name, g, info = sample_single(cfg, rng, stream, level, edit=kind)
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
            lo, hi = _focus_sizes(cfg, level, g.number_of_nodes())
            colours, meta = edits.attentional_focus(g, rng, focus, DEFAULT_COLOR, (lo, hi), other_colors=others)
            coloured = canonical_graph(g)
            for v, c in colours.items():
                coloured.nodes[v]["color"] = c
            coloured = canonical_graph(coloured)
            images.append(coloured)
            asked.append(canonical_graph(coloured.subgraph(meta["target"])))
            edit["details"].append(meta)
        if not cfg.paired:
            query = _focus_query(cfg, asked[0], logical[0], rng, level)
    else:
        images = list(logical)
        asked = list(logical)
        edit["images"] = [[li, None] for li in range(len(logical))]
        if not cfg.paired:
            query = _choose_query(cfg, logical[0], rng)

    if kind == "focus":
        # A focus question is fixed before drawing: reject it before the (costly) legible-layout search.
        _checked_gold(cfg, kind, level, asked, logical, targets, query, want_preferred)
    new_colors = [rng.choice(NAMED_COLORS) for _ in targets] if kind == "recolor" else []
    for li, new_color in zip(targets if kind == "recolor" else [], new_colors, strict=True):
        # The paper recolours a graph whose nodes already carry colours (appendix A.2: "assigning initial
        # colors to nodes in the original graph"); the recoloured image must be read, not assumed.
        # At the hard level the colour's earlier nodes must leave room for an asked side of the level's size.
        most = images[li].number_of_nodes() - asked_range(cfg, level).lo - 2 if level == "hard" else None
        images[li] = _initial_colours(images[li], new_color, cfg.keep(query), rng, most)
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
        if kind == "patch":
            rendered = render_images(cfg, edit_base, images, layout_seed, final=False)
            for li in targets:
                png, pos, radius = rendered[li]
                g = images[li]
                edited, meta = edits.patch_perturb(png, pos, [list(e) for e in sorted(g.edges())], radius,
                                                   rng.choice(PATCH_GRIDS), rng.choice(("flip", "swap")), rng)
                remember_patch(png, meta, edited)
                edit["details"].append(meta)
        else:
            # Recolouring needs only the node centres: drawing the pixels here was wasted on every draw
            # that finds no recolouring (most hard ones); the final pass draws them once.
            positions = image_positions(cfg, edit_base, images, layout_seed)
            asked, details, query = _recolor(cfg, images, positions, targets, new_colors, query, rng, level)
            edit["details"] = details

    _checked_gold(cfg, kind, level, asked, logical, targets, query, want_preferred)
    return GVData(
        scenario=scenario,
        source=info,
        graphs=[to_node_link(g) for g in images],
        asked=[to_node_link(a) for a in asked],
        query=query,
        edit=edit,
        layout_seed=layout_seed,
    )


# Queries tried on one hard focus target before the whole draw is redrawn.
FOCUS_QUERIES = 32


def _focus_query(cfg: TaskConfig, target: nx.Graph, whole: nx.Graph, rng: random.Random, level: Level
                 ) -> dict[str, Any]:
    """The question's query on the focus target. At the hard level the target holds most of the drawing,
    so a random pair's answer is often the same on the whole graph (the edit could be ignored); up to
    FOCUS_QUERIES pairs are drawn there and the first whose answer the edit changes is kept."""
    query = _choose_query(cfg, target, rng)
    if level != "hard" or cfg.query is None:
        return query
    for _ in range(FOCUS_QUERIES - 1):
        if cfg.gold_key(solve_asked(cfg, [target], query)) != cfg.gold_key(solve_asked(cfg, [whole], query)):
            break
        query = _choose_query(cfg, target, rng)
    return query


def _focus_sizes(cfg: TaskConfig, level: Level, n: int) -> tuple[int, int]:
    """The focus target's size range on an n-node drawing: at the hard level the level's own range (the
    question is asked on the target), leaving FOCUS_ROOM nodes for its neighbours and a distractor; at
    the easy level from focus_min up to two thirds of the drawing."""
    if level == "hard":
        r = asked_range(cfg, level)
        return r.lo, max(r.lo, min(r.hi, n - FOCUS_ROOM))
    lo = min(cfg.focus_min, n - 1)
    return lo, max(lo, (2 * n) // 3)


# Nodes a hard focus drawing keeps outside the target: at least one neighbour and a two-node distractor.
FOCUS_ROOM = 3


def asked_size_ok(cfg: TaskConfig, level: Level, g: nx.Graph) -> bool:
    """Does an edited asked graph (a focus target, a recolouring's constrained side) meet the level's node
    range? Hard questions must be hard for the graph they are about, whatever the drawing holds; at the
    easy level the focus target keeps its own minimum (focus_min) and a recolouring leaves 2+ nodes."""
    n = g.number_of_nodes()
    if level == "hard":
        return n >= asked_range(cfg, level).lo
    return n >= 2


def edited_question_problem(cfg: TaskConfig, data: GVData, level: Level) -> str | None:
    """Why a generated focus / recolour instance breaks the asked-graph rules (an edited asked graph
    below the level's node range, or a degenerate question), or None. For tests and bench audits."""
    kind, targets = data.edit["kind"], list(data.edit["targets"])
    if kind not in ("focus", "recolor"):
        return None
    asked = data.asked_graphs()
    for i in targets:
        if not asked_size_ok(cfg, level, asked[i]):
            return (f"asked graph {i} has {asked[i].number_of_nodes()} nodes, below the {level} minimum "
                    f"{asked_range(cfg, level).lo}")
    if degenerate(cfg, [asked[i] for i in targets], solve_asked(cfg, asked, data.query)):
        return "degenerate (a clique, or an answer of one node)"
    return None


def degenerate(cfg: TaskConfig, edited: list[nx.Graph], gold: Gold) -> bool:
    """An edited question whose answer needs no search: an asked graph that is one clique (the whole graph
    is the clique, any one node the independent set), or a gold value below the task's `min_answer`
    (MIS / MVC of a single node). Plain rows follow GraphArena's sampler, which rejects neither."""
    if not cfg.complete and any(g.number_of_nodes() >= 3 and g.number_of_edges() == g.number_of_nodes()
                                * (g.number_of_nodes() - 1) // 2 for g in edited):
        return True
    return gold.value is not None and gold.value < cfg.min_answer


def _checked_gold(cfg: TaskConfig, kind: EditKind, level: Level, asked: list[nx.Graph], logical: list[nx.Graph],
                  targets: list[int], query: dict[str, Any], want_preferred: bool) -> Gold:
    """The gold answer on the asked graph(s), once every constraint on the question holds (else
    RetryInstance): asked graphs non-empty, edited ones within the level's range and not degenerate,
    valid for the task, the preferred property when drawn for, a feasible answer that the edit changes."""
    for i, a in enumerate(asked):
        if a.number_of_nodes() == 0:
            raise RetryInstance(f"asked graph {i} is empty")
    if kind in ("focus", "recolor"):
        small = [i for i in targets if not asked_size_ok(cfg, level, asked[i])]
        if small:
            raise RetryInstance(f"asked graph {small[0]} is below the {level} level's node range")
    if not cfg.paired and not cfg.valid(asked[0], query):
        raise RetryInstance("asked graph not valid for the task")
    if want_preferred and cfg.prefer is not None and not cfg.prefer(asked[0]):
        raise RetryInstance("asked graph lacks the preferred property")
    gold = solve_asked(cfg, asked, query)
    if gold.value is None:
        raise RetryInstance("no feasible answer")
    if kind in ("focus", "recolor") and degenerate(cfg, [asked[i] for i in targets], gold):
        raise RetryInstance("the edited question is degenerate (a clique, or an answer of one node)")
    if kind == "focus" and not cfg.paired and cfg.gold_key(gold) == cfg.gold_key(
            solve_asked(cfg, logical, query)):
        # As for recolouring: a focus edit the model may ignore without changing its answer tests nothing.
        # (Paired tasks skip this check: it would double the exact GED/MCS cost per draw.)
        raise RetryInstance("ignoring the focus edit gives the same answer")
    return gold


def _focus_colours(rng: random.Random) -> tuple[str, list[str]]:
    """The focus colour c* and two distractor background colours (the base fill is sky)."""
    picks = rng.sample(NAMED_COLORS, 3)
    return picks[0], picks[1:]


# Share of nodes drawn in the recolouring's colour before the edit: enough that the colour's group is
# not just the recoloured region, few enough that the region still decides most of it.
RECOLOR_PRIOR_SHARE = 0.2
INITIAL_COLOURS = 3


def _initial_colours(g: nx.Graph, new_color: str, keep: set[str], rng: random.Random, most: int | None = None
                     ) -> nx.Graph:
    """A copy of g with every node in one of INITIAL_COLOURS named colours, the recolouring colour among
    them (never on `keep` nodes, which must stay asked in "avoid" mode), at least two colours in use, and
    (when `most` is given) at most max(1, most) nodes in the recolouring colour."""
    others = rng.sample([c for c in NAMED_COLORS if c != new_color], INITIAL_COLOURS - 1)
    h = canonical_graph(g)
    nodes = sorted(h)
    for _ in range(MAX_ATTEMPTS):
        colours = {
            v: rng.choice(others) if v in keep or rng.random() >= RECOLOR_PRIOR_SHARE else new_color
            for v in nodes
        }
        if most is not None and sum(c == new_color for c in colours.values()) > max(1, most):
            continue
        if len(set(colours.values())) >= 2 or len(nodes) < 2:
            break
    for v in nodes:
        h.nodes[v]["color"] = colours[v]
    return h


class _UneditedValue:
    """The gold key of the question without the recolouring, solved only when a comparison needs it: a
    trial whose value lies outside the task's cheap bounds on it (`TaskConfig.value_bounds`) differs
    without an exact solve. Comparisons give what comparing exact keys gives, so no instance changes."""

    def __init__(self, cfg: TaskConfig, graphs: list[nx.Graph], query: dict[str, Any]) -> None:
        self.cfg, self.graphs, self.query = cfg, list(graphs), query
        self.bounds: tuple[float, float] | None = None

    def same_key(self, gold: Gold) -> bool:
        cfg = self.cfg
        if cfg.value_bounds is not None and gold_key_is_value(cfg) and gold.value is not None:
            if self.bounds is None:
                self.bounds = cfg.value_bounds(self.graphs, self.query)
            lo, hi = self.bounds
            if not lo <= gold.value <= hi:
                return False
        return bool(cfg.gold_key(solve_asked(cfg, self.graphs, self.query)) == cfg.gold_key(gold))


def _recolor(
    cfg: TaskConfig,
    images: list[nx.Graph],
    positions: list[dict[str, tuple[float, float]]],
    targets: list[int],
    new_colors: list[str],
    query: dict[str, Any],
    rng: random.Random,
    level: Level = "easy",
) -> tuple[list[nx.Graph], list[dict[str, Any]], dict[str, Any]]:
    """Spatially-conditioned recolouring of each target image, with a colour constraint that changes
    the gold answer versus ignoring the edit (else RetryInstance). The constraint covers every node
    drawn in the new colour after the edit: the recoloured ones and those that had the colour before.
    Only choices whose constrained graph meets the level's node range are tried (`asked_size_ok`).
    Returns the asked graphs, the edit details and the query (`_requery` may have redrawn it)."""
    asked = list(images)
    base = _UneditedValue(cfg, images, query)
    details = []
    keep = cfg.keep(query)
    for li, new_color in zip(targets, new_colors, strict=True):
        g = images[li]
        pos = positions[li]
        mode: RecolorMode = rng.choice(cfg.recolor_modes)
        options = edits.spatial_candidates(g, pos, RECOLOR_MARGIN)
        rng.shuffle(options)
        if level == "hard":
            # cheap pre-filter on the constrained side's size, so the tries below are not spent on it
            prior = {v for v, c in g.nodes(data="color") if c == new_color}
            n = g.number_of_nodes()
            need = asked_range(cfg, level).lo
            options = [o for o in options
                       if (len(prior | set(o[2])) if mode == "only" else n - len(prior | set(o[2]))) >= need]
        chosen_meta = None
        is_last = li == targets[-1]
        # At the hard level the size filter above leaves fewer, rarer choices: more of them are tried
        # (each costs one exact solve, so paired tasks keep the easy budget).
        tries = RECOLOR_TRIES_HARD if level == "hard" and not cfg.paired else RECOLOR_TRIES
        for anchor, direction, recoloured in options[:tries]:
            if keep & set(recoloured):
                continue
            if all(g.nodes[v].get("color") == new_color for v in recoloured):
                continue  # the edit would change no pixel
            h = edits.recolor_constraint_graph(g, recoloured, mode, new_color)
            h = canonical_graph(h)
            trial = list(asked)
            trial[li] = h
            if not asked_size_ok(cfg, level, h) or (not cfg.paired and not cfg.valid(h, query)):
                continue
            if cfg.paired and h.number_of_nodes() < 2:
                continue
            gold = solve_asked(cfg, trial, query)
            if gold.value is None:
                continue
            # The last target must leave the gold different from ignoring every recolouring.
            if is_last and base.same_key(gold):
                continue
            _, meta = edits.spatial_recolor(g, pos, rng, new_color, anchor=anchor, direction=direction,
                                            margin=RECOLOR_MARGIN)
            meta["mode"] = mode
            chosen_meta = meta
            asked = trial
            break
        if chosen_meta is None and level == "hard" and cfg.query is not None and not cfg.paired:
            found = _requery(cfg, g, options[:tries], mode, new_color, rng)
            if found is not None:
                (anchor, direction, _), h, query = found
                _, chosen_meta = edits.spatial_recolor(g, pos, rng, new_color, anchor=anchor, direction=direction,
                                                       margin=RECOLOR_MARGIN)
                chosen_meta["mode"] = mode
                asked = [h]
        if chosen_meta is None:
            raise RetryInstance("no recolouring changes the answer")
        details.append(chosen_meta)
    return asked, details, query


# Queries drawn per recolouring choice when the original query's answer survives every choice.
REQUERIES = 4


def _requery(cfg: TaskConfig, g: nx.Graph, options: list[tuple[str, str, list[str]]], mode: RecolorMode,
             new_color: str, rng: random.Random) -> tuple[tuple[str, str, list[str]], nx.Graph, dict[str, Any]] | None:
    """A hard single-graph recolouring leaves the level's node count asked, so the removed side is small
    and a random query's answer rarely passes through it (SD's 14-airport drawings). Here the query is
    drawn on the constrained graph instead (its endpoints are then neither recoloured nor of the new
    colour) until the recolouring changes its answer: (choice, asked graph, query), or None."""
    for choice in options:
        if all(g.nodes[v].get("color") == new_color for v in choice[2]):
            continue
        h = canonical_graph(edits.recolor_constraint_graph(g, choice[2], mode, new_color))
        if h.number_of_nodes() < 2:
            continue
        for _ in range(REQUERIES):
            try:
                q = cfg.query(h, rng)  # type: ignore[misc]
            except RetryInstance:
                break
            if not (cfg.valid(h, q) and cfg.valid(g, q) and set(cfg.keep(q)) <= set(h)):
                continue
            gold = solve_asked(cfg, [h], q)
            if gold.value is not None and cfg.gold_key(gold) != cfg.gold_key(solve_asked(cfg, [g], q)):
                return choice, h, q
    return None
