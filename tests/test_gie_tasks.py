"""The 11 GraphVerse task specs: every task x edit builds, solves, renders reproducibly and grades its own
gold answer correct through the real response path; edits do what the question says."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

import networkx as nx
import pytest

from evalcore.benchmarks import task_for
from evalcore.extract import extract_final_answer
from evalcore.prompting import build_prompt, format_response
from evalcore.schema import Gold, ParseError
from gie import answers
from gie.catalogue import EDIT_KINDS, PAIRED_TASKS, TASK_CLASS, TASK_EDITS, TASK_NAMES
from gie.tasks import get_config, get_task
from gie.tasks.construction import build_data
from gie.tasks.instance import GVData

CELLS = [(t, e) for t in TASK_NAMES for e in TASK_EDITS[t]]


@cache
def instance(task: str, edit: str, seed: int = 0) -> GVData:
    mode = "both" if seed % 2 == 0 else "one"
    return build_data(get_config(task), edit, random.Random(f"{task}/{edit}/{seed}"),  # type: ignore[arg-type]
                      paired_mode=mode if task in PAIRED_TASKS else None)


def test_registry():
    assert TASK_NAMES == ("SD", "DIAM", "CN", "TSP", "MCP", "MVC", "MIS", "CYC", "COL", "GED", "MCS")
    assert {t for t, c in TASK_CLASS.items() if c == "P"} == {"SD", "DIAM", "CN"}
    assert TASK_EDITS["TSP"] == ("none", "recolor")
    assert "recolor" not in TASK_EDITS["COL"] and len(TASK_EDITS["COL"]) == 4
    assert all(TASK_EDITS[t] == EDIT_KINDS for t in TASK_NAMES if t not in ("TSP", "COL"))
    for t in TASK_NAMES:
        spec = task_for("graphverse", t)
        assert spec is get_task(t) and spec.benchmark == "graphverse" and spec.complexity == TASK_CLASS[t]
        assert spec.params(1)["nodes"][0] >= 4
    with pytest.raises(KeyError):
        get_task("TSP-D")
    with pytest.raises(ValueError, match="does not take"):
        build_data(get_config("TSP"), "patch", random.Random(0))


@pytest.mark.parametrize("task, edit", CELLS)
def test_oracle_is_correct_and_render_reproducible(task: str, edit: str):
    spec = get_task(task)
    data = instance(task, edit)
    loaded = spec.load(data.model_dump(mode="json"))
    assert loaded == data
    gold = spec.solve(loaded)
    assert gold.value is not None
    response = format_response(gold.answer, reasoning="worked it out")
    extracted = extract_final_answer(response)
    assert not isinstance(extracted, ParseError)
    parsed = spec.parse(extracted)
    assert not isinstance(parsed, ParseError), parsed
    verdict = spec.verify(loaded, gold, parsed)
    assert verdict.verdict == "correct", verdict.reason

    pngs = spec.render(loaded)
    assert len(pngs) == len(data.graphs) == len(data.edit["images"])
    assert all(p.startswith(b"\x89PNG") for p in pngs)
    from gie import layout, render

    render._render_cached.cache_clear()
    layout.clear_layout_memo()
    assert spec.render(spec.load(data.model_dump(mode="json"))) == pngs

    text = spec.text(loaded)
    assert text.data_lines == ()
    prompt = build_prompt(text, "figure+limited_text", ())
    for key in ("source", "target"):
        if key in data.query:
            assert data.query[key] in text.question
    if edit in ("focus", "recolor"):
        for meta in data.edit["details"]:
            assert (meta.get("color") or meta["new_color"]) in text.question
    assert "final_answer" in prompt.text

    h = spec.heuristic(loaded)
    r = spec.random_answer(loaded, random.Random(1))
    for ans in (h, r):
        p = spec.parse(extract_final_answer(format_response(ans)))
        assert not isinstance(p, ParseError), (ans, p)
        assert spec.verify(loaded, gold, p).verdict in ("correct", "wrong")


def _asked_and_logical(data: GVData) -> tuple[list[nx.Graph], list[nx.Graph]]:
    return data.asked_graphs(), data.image_graphs()


@dataclass(frozen=True)
class Edited:
    """An edited instance, its gold, and the gold of an answer that ignores the edit (solved on the
    drawn graphs instead of the asked ones)."""

    data: GVData
    asked: list[nx.Graph]
    shown: list[nx.Graph]
    gold: Gold
    ignoring: Gold


@pytest.fixture
def edited() -> Callable[[str, str, int], Edited]:
    """Builds the instance the way both "ignoring the edit changes the gold" tests need it, and checks
    what they both require: the gold differs (for CN the set itself) and the ignoring answer is wrong."""

    def build(task: str, edit: str, seed: int) -> Edited:
        spec = get_task(task)
        data = instance(task, edit, seed)
        asked, shown = _asked_and_logical(data)
        gold = spec.solve(data)
        ignoring = answers.solve(task, shown, data.query)
        if task == "CN":
            assert sorted(gold.answer["CommonNeighbors"]) != sorted(ignoring.answer["CommonNeighbors"])
        else:
            assert gold.value != ignoring.value
        # an answer that ignores the edit is graded wrong
        assert spec.verify(data, gold, spec.parse(ignoring.answer)).verdict == "wrong"
        return Edited(data, asked, shown, gold, ignoring)

    return build


@pytest.mark.parametrize("task", [t for t in TASK_NAMES if "recolor" in TASK_EDITS[t]])
def test_recolouring_changes_the_gold(task: str, edited: Callable[[str, str, int], Edited]):
    spec = get_task(task)
    for seed in (0, 1):
        e = edited(task, "recolor", seed)
        data, asked, shown = e.data, e.asked, e.shown
        question = spec.text(data).question
        for li, meta in zip(data.edit["targets"], data.edit["details"], strict=True):
            g, c = shown[li], meta["new_color"]
            chosen = set(meta["recoloured"])
            # drawn in colour before the edit, and the constraint covers every node drawn in c afterwards
            assert len({g.nodes[n]["color"] for n in g}) >= 2
            assert any(g.nodes[n]["color"] != c for n in chosen), "the recolouring changes some node"
            now_c = chosen | {n for n in g if g.nodes[n]["color"] == c}
            kept = set(asked[li].nodes)
            assert kept == (now_c if meta["mode"] == "only" else set(g.nodes) - now_c)
            assert set(data.query.values()).isdisjoint(now_c) or meta["mode"] == "only"
            # the recolouring condition is stated: anchor, direction and the new colour
            assert f"{edit_words(meta['direction'])} {meta['anchor']}" in question and f"recoloured {c}" in question


def edit_words(direction: str) -> str:
    return {"left": "to the left of", "right": "to the right of", "above": "above", "below": "below"}[direction]


@pytest.mark.parametrize("task", ["SD", "MIS", "GED"])
def test_focus_asks_on_the_largest_component_of_the_focus_colour(task: str):
    data = instance(task, "focus")
    asked, shown = _asked_and_logical(data)
    for li, meta in zip(data.edit["targets"], data.edit["details"], strict=True):
        g = shown[li]
        c = meta["color"]
        comps = sorted(nx.connected_components(g.subgraph([n for n in g if g.nodes[n]["color"] == c])),
                       key=len, reverse=True)
        assert set(asked[li].nodes) == comps[0] and (len(comps) == 1 or len(comps[1]) < len(comps[0]))
        assert nx.utils.edges_equal(sorted(asked[li].edges), sorted(g.subgraph(comps[0]).edges))
        assert len(comps) >= 2, "every focus target has at least one same-colour distractor group"
        assert sorted(map(sorted, comps[1:])) == sorted(meta["distractors"])


@pytest.mark.parametrize("task", [t for t in TASK_NAMES if "focus" in TASK_EDITS[t] and t not in ("GED", "MCS")])
def test_focus_changes_the_gold(task: str, edited: Callable[[str, str, int], Edited]):
    """Ignoring the focus edit (answering about the whole drawn graph) gives another answer, which the
    verifier grades wrong."""
    for seed in (0, 1):
        data = edited(task, "focus", seed).data
        assert data.edit["details"][0]["distractors"]


@pytest.mark.parametrize("task", ["SD", "CN", "MCS"])
def test_composition_asks_on_parts_plus_cross_links(task: str):
    data = instance(task, "composition")
    asked = data.asked_graphs()
    shown = data.image_graphs()
    for li, meta in zip(data.edit["targets"], data.edit["details"], strict=True):
        parts = [shown[i] for i, (lg, part) in enumerate(data.edit["images"]) if lg == li and part is not None]
        assert len(parts) == 2
        composed = nx.compose(parts[0], parts[1])
        composed.add_edges_from(meta["cross_edges"])
        assert set(composed.nodes) == set(asked[li].nodes)
        assert {frozenset(e) for e in composed.edges} == {frozenset(e) for e in asked[li].edges}
        text = get_task(task).text(data).question
        for u, v in meta["cross_edges"]:
            assert f"{u}–{v}" in text


def test_paired_modes_edit_one_or_both_images():
    assert len(instance("GED", "patch", 0).edit["targets"]) == 2
    assert len(instance("GED", "patch", 1).edit["targets"]) == 1
    assert len(instance("MCS", "composition", 0).graphs) == 4
    assert len(instance("MCS", "composition", 1).graphs) == 3


def test_instances_record_source_and_labels():
    for task, edit in [("SD", "none"), ("CN", "none"), ("CYC", "none"), ("GED", "none")]:
        data = instance(task, edit)
        src = data.source
        assert src.licence and len(src.node_ids) == len(src.labels) == sum(len(g["nodes"]) for g in data.graphs)
        assert len(set(src.labels)) == len(src.labels) or task == "GED"


def test_generate_draws_any_allowed_edit():
    spec = get_task("COL")
    data = spec.generate(1, random.Random(5))
    assert data.edit["kind"] in TASK_EDITS["COL"]


@pytest.mark.parametrize("task", ["MIS", "GED"])
def test_recoloured_image_shows_new_and_original_colours(task: str):
    """In the rendered picture the recoloured discs carry the new colour and every other disc its
    original (multi-colour) fill."""
    import cv2
    import numpy as np

    from gie.graphs import PALETTE
    from gie.tasks.drawing import render_images

    data = instance(task, "recolor", 0)
    cfg = get_config(task)
    pngs = get_task(task).render(data)
    base = render_images(cfg, data.edit, data.image_graphs(), data.layout_seed, final=False)
    # the edit was chosen on a render whose legend listed every original colour: same node positions
    first = {**data.edit, "details": [{"new_color": d["new_color"]} for d in data.edit["details"]]}
    chosen_on = render_images(cfg, first, data.image_graphs(), data.layout_seed, final=False)
    assert [p for _, p, _ in chosen_on] == [p for _, p, _ in base]
    for i, (logical, _) in enumerate(data.edit["images"]):
        if logical not in data.edit["targets"]:
            continue
        meta = data.edit["details"][data.edit["targets"].index(logical)]
        g = data.image_graphs()[i]
        _, pos, radius = base[i]
        img = cv2.imdecode(np.frombuffer(pngs[i], np.uint8), cv2.IMREAD_COLOR)
        for n in g:
            x, y = pos[n]
            b, gr, r = (int(v) for v in img[round(y - 0.6 * radius), round(x)])
            want = meta["new_color"] if n in meta["recoloured"] else g.nodes[n]["color"]
            assert (r, gr, b) == tuple(PALETTE[want]), (n, want, (r, gr, b))


@pytest.mark.parametrize("task", [t for t in TASK_NAMES if "patch" in TASK_EDITS[t]])
def test_patch_edit_moves_part_of_the_graph(task: str):
    for seed in (0, 1):
        data = instance(task, "patch", seed)
        for meta in data.edit["details"]:
            assert any(pp["nodes"] or pp["edges"] for pp in meta["per_patch"]), meta["per_patch"]
