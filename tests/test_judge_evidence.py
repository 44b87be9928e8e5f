"""Evidence verbalization: snapshots per task x edit, determinism, the C.3 formats.

Regenerate snapshots after an intended change (and bump EVIDENCE_VERSION):
    UPDATE_SNAPSHOTS=1 .venv/bin/pytest tests/test_judge_evidence.py
"""

from __future__ import annotations

import copy
import os
import random
import re

import pytest
from test_judge_helpers import SNAP, load_instances

from gie.evidence import EVIDENCE_VERSION, build_evidence, gold_text
from judge.llm_judge import JudgeItem, load_template, render_messages

INSTANCES = load_instances()
UPDATE = os.environ.get("UPDATE_SNAPSHOTS") == "1"


def _snap(name: str, text: str) -> None:
    path = SNAP / name
    if UPDATE or not path.exists():
        if not UPDATE:
            pytest.fail(f"{path} missing: run with UPDATE_SNAPSHOTS=1 to create it")
        path.write_bytes(text.encode())
    assert text.encode() == path.read_bytes(), f"{path.name} changed (intended? UPDATE_SNAPSHOTS=1, bump version)"


def test_fixture_covers_every_task_edit_cell():
    from gie.catalogue import TASK_EDITS

    cells = {(i.task, i.meta["edit"]) for i in INSTANCES}
    assert cells == {(t, e) for t, es in TASK_EDITS.items() for e in es}


@pytest.mark.parametrize("inst", INSTANCES, ids=lambda i: f"{i.task}-{i.meta['edit']}")
def test_evidence_snapshot(inst):
    ev = build_evidence(inst.task, inst.data)
    _snap(f"evidence-{inst.task}-{inst.meta['edit']}.txt", ev.text)


def _shuffled(data: dict, seed: int) -> dict:
    d = copy.deepcopy(data)
    rng = random.Random(seed)
    for key in ("graphs", "asked"):
        for nl in d[key]:
            rng.shuffle(nl["nodes"])
            rng.shuffle(nl["edges"])
            for e in nl["edges"]:
                if rng.random() < 0.5:
                    e["source"], e["target"] = e["target"], e["source"]
    for meta in d["edit"]["details"]:
        for k in ("recoloured", "target", "nodes_in_patches"):
            if k in meta:
                rng.shuffle(meta[k])
    return d


def test_same_input_same_bytes_whatever_the_stored_order():
    for inst in INSTANCES:
        a = build_evidence(inst.task, inst.data)
        b = build_evidence(inst.task, copy.deepcopy(inst.data))
        c = build_evidence(inst.task, _shuffled(inst.data, 3))
        assert a.text == b.text == c.text
        assert a.sha256 == c.sha256
        assert EVIDENCE_VERSION in a.text


def test_every_edge_once_with_names_colours_and_weights():
    edge = re.compile(r"^(\S+)\((\w+)\)--(\S+)\((\w+)\)(?:, weight (\d+))?$")
    for inst in INSTANCES:
        ev = build_evidence(inst.task, inst.data)
        for lg in ev.facts.graphs:
            if inst.meta["edit"] == "composition" and lg.edit is not None:
                continue  # drawn per part; checked below
            block = ev.text.split("Graph edges with node colors (undirected; list each edge once):\n")[1 + lg.index]
            lines = [ln for ln in block.splitlines() if edge.match(ln)]
            lines = lines[: lg.graph.number_of_edges()]
            seen = set()
            for ln in lines:
                m = edge.match(ln)
                u, cu, v, cv, w = m.groups()
                assert u < v and (u, v) not in seen
                seen.add((u, v))
                assert lg.graph.has_edge(u, v)
                assert cu == lg.graph.nodes[u]["color"] and cv == lg.graph.nodes[v]["color"]
                assert (w is not None) == (inst.task in ("SD", "TSP"))
                if w is not None:
                    assert int(w) == lg.graph.edges[u, v]["weight"]
            assert seen == {tuple(sorted(e)) for e in lg.graph.edges}


def test_edit_evidence_per_kind():
    by = {(i.task, i.meta["edit"]): i for i in INSTANCES}
    # recolouring: direction, anchor, recoloured nodes, new colour
    inst = by[("SD", "recolor")]
    meta = inst.data["edit"]["details"][0]
    text = build_evidence(inst.task, inst.data).text
    assert f"Direction: {meta['direction']}" in text
    assert f"Anchor: {meta['anchor']}." in text
    assert f"New color: {meta['new_color']}." in text
    for n in meta["recoloured"]:
        assert f"{n}({meta['previous_colors'][n]}->{meta['new_color']})" in text
    # focusing: highlight colour, highlighted nodes, induced adjacency matrix
    inst = by[("MCP", "focus")]
    meta = inst.data["edit"]["details"][0]
    text = build_evidence(inst.task, inst.data).text
    assert f"Highlight color: {meta['color']}." in text
    assert ", ".join(sorted(meta["target"])) in text
    assert "Induced adjacency matrix" in text
    rows = [ln for ln in text.splitlines() if re.match(r"^\S+\s+: [01]( [01])*$", ln)]
    assert len(rows) == len(meta["target"])
    # patch: entities inside the perturbed patches
    inst = by[("CYC", "patch")]
    meta = inst.data["edit"]["details"][0]
    text = build_evidence(inst.task, inst.data).text
    assert "Entities inside the perturbed patches" in text
    for n in meta["nodes_in_patches"]:
        assert re.search(rf"\b{re.escape(n)}\(\w+\)", text.split("Entities inside the perturbed patches")[1])
    # composition: connectors and composed edges
    inst = by[("SD", "composition")]
    meta = inst.data["edit"]["details"][0]
    text = build_evidence(inst.task, inst.data).text
    assert "Cross-graph connectors" in text and "Composed graph edges" in text
    for u, v in meta["cross_edges"]:
        a, b = sorted((u, v))
        assert f"{a}(" in text and re.search(rf"{re.escape(a)}\(\w+\)--{re.escape(b)}\(\w+\), weight \d+", text)


def test_paired_tasks_verbalize_both_graphs():
    for inst in INSTANCES:
        if inst.task not in ("GED", "MCS"):
            continue
        text = build_evidence(inst.task, inst.data).text
        assert "== Graph 1 ==" in text and "== Graph 2 ==" in text
        assert text.index("== Graph 1 ==") < text.index("== Graph 2 ==")


def test_judge_prompt_snapshot():
    inst = next(i for i in INSTANCES if i.task == "SD" and i.meta["edit"] == "recolor")
    ev = build_evidence(inst.task, inst.data)
    item = JudgeItem(task=inst.task, evidence=ev.text, gold=gold_text(inst.task, inst.gold.answer, inst.gold.value),
                     question="What is the shortest distance?", response="<root>HOU -> ATL</root>")
    msgs = render_messages(load_template(), item)
    _snap("prompt-SD-recolor.txt", f"[{load_template().version}]\n" + "\n\n".join(m["content"] for m in msgs))
