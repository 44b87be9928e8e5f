"""Legible drawings at both levels: no two labels overlap and no edge passes through a foreign node,
checked with `gie.legibility.legibility_problems` on the node positions the renderer itself used.

The suite checks a stratified sample (every task x edit cell, both levels); `bench/bench_legibility.py` walks
every image of a whole split (testmini: 1,060 instances, easy and hard) and exits non-zero on any problem."""

from __future__ import annotations

from pathlib import Path

import networkx as nx
import pytest

from evalcore.dataset import load_dataset
from gie.legibility import legibility_problems
from gie.legibility_audit import instance_legibility_problems
from gie.style import NODE_RADIUS

SEED = 2026


def image_problems(inst, root: Path) -> list[str]:
    return instance_legibility_problems(inst, root)


def test_check_flags_overlaps_and_edges_through_nodes():
    g = nx.Graph([("AAA", "BBB"), ("BBB", "CCC")])
    g.add_node("DDD")
    clean = {"AAA": (100.0, 100.0), "BBB": (300.0, 100.0), "CCC": (300.0, 300.0), "DDD": (100.0, 300.0)}
    assert legibility_problems(g, clean, weighted=False, width=400, height=400) == []
    # DDD on the segment AAA-BBB: the edge passes through a foreign node
    through = dict(clean, DDD=(200.0, 104.0))
    assert any("passes" in p and "'DDD'" in p for p in legibility_problems(g, through, weighted=False))
    # CCC almost on top of BBB: discs and labels overlap
    touching = dict(clean, CCC=(300.0 + NODE_RADIUS, 100.0 + NODE_RADIUS))
    assert any("apart" in p for p in legibility_problems(g, touching, weighted=False))
    outside = dict(clean, AAA=(5.0, 100.0))
    assert any("outside" in p for p in legibility_problems(g, outside, weighted=False, width=400, height=400))


def test_weight_label_conflicts_are_reported():
    g = nx.Graph()
    # three nearly parallel, very short weighted edges: their km boxes cannot all find a free spot
    for u, v in [("AAA", "BBB"), ("CCC", "DDD"), ("EEE", "FFF")]:
        g.add_edge(u, v, weight=12345)
    pos = {"AAA": (100.0, 100.0), "BBB": (170.0, 100.0), "CCC": (100.0, 112.0), "DDD": (170.0, 112.0),
           "EEE": (100.0, 124.0), "FFF": (170.0, 124.0)}
    assert any("weight label" in p for p in legibility_problems(g, pos, weighted=True))


@pytest.mark.slow(reason="generates a 102-row testmini slice, every task x edit x level (~20 s on 2 cores)")
def test_every_image_of_a_both_level_sample_is_legible(graphverse_split):
    out = graphverse_split("testmini", SEED, limit=102)
    ds = load_dataset(out)
    assert {i.level for i in ds.instances} == {1, 2}
    problems = [p for inst in ds.instances for p in image_problems(inst, out)]
    assert problems == []
