"""GraphVerse splits: byte-identical regeneration, the standard folder layout, stratified testmini,
train/test disjointness."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from gie import dataset as gd
from gie.stats import stats
from gie.tasks import TASK_EDITS, TASK_NAMES, get_task
from nphe4v.dataset import load_dataset

SEED = 3
LIMIT = 52  # >= the 51 task x edit cells


@pytest.fixture(scope="module")
def small_split(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("gv") / "a"
    gd.generate_split(out, "full", SEED, limit=LIMIT, workers=1)
    return out


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_split_regenerates_byte_identically(small_split: Path, tmp_path: Path):
    from gie import render
    from gie.tasks import common

    # Per-process memos must not be what makes the bytes equal.
    render._render_cached.cache_clear()
    common._SOLVED.clear()
    again = tmp_path / "b"
    gd.generate_split(again, "full", SEED, limit=LIMIT, workers=1)
    assert _files(small_split) == _files(again)


def test_split_loads_with_images_and_covers_every_cell(small_split: Path):
    ds = load_dataset(small_split, check_images=True)
    assert ds.manifest.benchmark == "graphverse" and ds.manifest.version == "graphverse-full"
    assert len(ds.instances) == LIMIT
    cells = Counter((i.task, i.meta["edit"]) for i in ds.instances)
    assert set(cells) == {(t, e) for t in TASK_NAMES for e in TASK_EDITS[t]}
    for inst in ds.instances:
        spec = get_task(inst.task)
        data = spec.load(inst.data)
        assert inst.benchmark == "graphverse" and inst.meta["edit"] == data.edit["kind"]
        assert inst.gold.value == spec.solve(data).value
        assert len(inst.images) == len(data.graphs)
    assert ds.manifest.extra["split"] == "full" and ds.manifest.extra["sources"]
    frames = stats(small_split, show=False)
    assert frames["task_edit"].filter(frames["task_edit"]["task"] == "all")["total"].item() == LIMIT


def test_pool_matches_serial(tmp_path: Path):
    gd.generate_split(tmp_path / "pool", "full", SEED, limit=16, workers=2)
    gd.generate_split(tmp_path / "serial", "full", SEED, limit=16, workers=1)
    assert _files(tmp_path / "pool") == _files(tmp_path / "serial")


def test_split_sizes_and_stratification():
    full = gd.plan("full", SEED)
    mini = gd.plan("testmini", SEED)
    train = gd.plan("train", SEED)
    assert (len(full), len(mini), len(train)) == (11_000, 1_060, 3_500)
    per_task = Counter(j.task for j in full)
    assert set(per_task.values()) == {1000}
    full_cells = Counter((j.task, j.edit) for j in full)
    assert full_cells[("SD", "patch")] == 200 and full_cells[("COL", "focus")] == 250
    assert full_cells[("TSP", "recolor")] == 500
    mini_cells = Counter((j.task, j.edit) for j in mini)
    for cell, n in full_cells.items():
        assert abs(mini_cells[cell] - n * 1060 / 11000) < 1
    # testmini rows are full rows: same ids (index) and the same seed stream
    full_keys = {(j.task, j.edit, j.j): j for j in full}
    for j in mini:
        assert full_keys[(j.task, j.edit, j.j)] == j
    assert {j.stream for j in train} == {"graphverse-train"} and {j.stream for j in full} == {"graphverse-test"}
    paired = Counter(j.paired_mode for j in full if j.task in ("GED", "MCS") and j.edit != "none")
    assert paired["one"] == paired["both"] == 800  # 2 tasks x 4 edits x 200, half each


def test_testmini_instance_equals_full_instance():
    job = gd.plan("testmini", SEED)[5]
    inst_a, png_a = gd.generate_one(SEED, job)
    full_job = next(j for j in gd.plan("full", SEED) if (j.task, j.edit, j.j) == (job.task, job.edit, job.j))
    inst_b, png_b = gd.generate_one(SEED, full_job)
    assert inst_a == inst_b and png_a == png_b


def _keys(inst) -> list[list[str]]:
    ids = inst.data["source"]["node_ids"]
    if inst.data["source"]["name"] == "nci-molecules":
        return [[m] for m in sorted({i.split(":")[0] for i in ids})]
    return [ids]


def test_train_and_test_never_share_a_source_subgraph():
    for job in gd.plan("train", SEED, limit=6):
        inst, _ = gd.generate_one(SEED, job)
        assert all(gd.split_of_ids(k) == "train" for k in _keys(inst))
    for job in gd.plan("full", SEED, limit=6):
        inst, _ = gd.generate_one(SEED, job)
        assert all(gd.split_of_ids(k) == "test" for k in _keys(inst))
