"""GraphVerse splits: byte-identical regeneration (in process and as Ray tasks on 1 or 2 workers), the
standard folder layout, easy/hard levels, stratified testmini, train/test disjointness by overlap."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from evalcore.dataset import load_dataset
from gie import dataset as gd
from gie import splits
from gie.catalogue import LEVEL_RANGES, TASK_EDITS, TASK_NAMES
from gie.levels import LEVELS
from gie.sources.registry import get_source
from gie.stats import stats
from gie.tasks import get_task

SEED = 3
LIMIT = 102  # the 51 task x edit cells at both levels


@pytest.fixture(scope="module")
def small_split(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("gv") / "a"
    gd.generate_split(out, "full", SEED, limit=LIMIT, workers=0)
    return out


@pytest.fixture(scope="module")
def small_train(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("gv") / "train"
    gd.generate_split(out, "train", SEED, limit=LIMIT, workers=0)
    return out


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.slow(reason="generates a 102-instance GraphVerse slice twice and compares every byte")
def test_split_regenerates_byte_identically(small_split: Path, tmp_path: Path):
    from gie import layout, render
    from gie.tasks import construction

    # Per-process memos must not be what makes the bytes equal.
    render._render_cached.cache_clear()
    layout.clear_layout_memo()
    construction._SOLVED.clear()
    again = tmp_path / "b"
    gd.generate_split(again, "full", SEED, limit=LIMIT, workers=0)
    assert _files(small_split) == _files(again)


@pytest.mark.slow(reason="reads a generated 102-instance GraphVerse slice (~20 s to generate on 2 cores)")
def test_split_loads_with_images_and_covers_every_cell(small_split: Path):
    ds = load_dataset(small_split, check_images=True)
    assert ds.manifest.benchmark == "graphverse" and ds.manifest.version == "graphverse-full"
    assert len(ds.instances) == LIMIT
    cells = Counter((i.task, i.meta["edit"], i.meta["level"]) for i in ds.instances)
    assert set(cells) == {(t, e, lv) for t in TASK_NAMES for e in TASK_EDITS[t] for lv in LEVELS}
    for inst in ds.instances:
        assert inst.level == {"easy": 1, "hard": 2}[inst.meta["level"]]
        assert inst.instance_id.startswith(f"{inst.task.lower()}-L0{inst.level}-")
        spec = get_task(inst.task)
        data = spec.load(inst.data)
        assert inst.benchmark == "graphverse" and inst.meta["edit"] == data.edit["kind"]
        assert inst.gold.value == spec.solve(data).value
        assert len(inst.images) == len(data.graphs)
    assert ds.manifest.extra["split"] == "full" and ds.manifest.extra["sources"]
    frames = stats(small_split, show=False)
    assert frames["task_edit"].filter(frames["task_edit"]["task"] == "all")["total"].item() == LIMIT


@pytest.mark.slow(reason="reads a generated 102-instance GraphVerse slice (~20 s to generate on 2 cores)")
def test_sampled_sizes_follow_the_level(small_split: Path):
    ds = load_dataset(small_split)
    for inst in ds.instances:
        if inst.meta["edit"] in ("composition",):
            continue  # the parts of a split graph are smaller than the sampled graph
        r = LEVEL_RANGES[inst.task][inst.meta["level"]]
        for g in inst.data["graphs"]:
            assert r.lo <= len(g["nodes"]) <= r.hi, (inst.instance_id, len(g["nodes"]), r)


@pytest.mark.ray
def test_ray_workers_match_in_process(tmp_path: Path):
    """Real Ray tasks on 1 and 2 workers write the same bytes as in-process generation."""
    gd.generate_split(tmp_path / "ray2", "full", SEED, limit=12, workers=2)
    gd.generate_split(tmp_path / "ray1", "full", SEED, limit=12, workers=1)
    gd.generate_split(tmp_path / "local", "full", SEED, limit=12, workers=0)
    assert _files(tmp_path / "ray2") == _files(tmp_path / "ray1") == _files(tmp_path / "local")


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
    levels = Counter((j.task, j.edit, j.level) for j in full)
    assert levels[("SD", "patch", "easy")] == levels[("SD", "patch", "hard")] == 100
    assert levels[("COL", "focus", "easy")] == levels[("COL", "focus", "hard")] == 125
    for split_jobs, total in ((mini, 1060), (train, 3500)):
        cells = Counter((j.task, j.edit, j.level) for j in split_jobs)
        for cell, n in levels.items():
            assert abs(cells[cell] - n * total / 11000) < 1
        by_level = Counter(j.level for j in split_jobs)
        assert abs(by_level["easy"] - by_level["hard"]) <= len(levels) // 2
    # testmini rows are full rows: same ids (index) and the same seed stream
    full_keys = {(j.task, j.edit, j.level, j.j): j for j in full}
    for j in mini:
        assert full_keys[(j.task, j.edit, j.level, j.j)] == j
    assert {j.stream for j in train} == {"graphverse-train"} and {j.stream for j in full} == {"graphverse-test"}
    paired = Counter(j.paired_mode for j in full if j.task in ("GED", "MCS") and j.edit != "none")
    assert paired["one"] == paired["both"] == 800  # 2 tasks x 4 edits x 200, half each


def test_testmini_instance_equals_full_instance():
    job = gd.plan("testmini", SEED)[5]
    inst_a, png_a = gd.generate_one(SEED, job)
    full_job = next(j for j in gd.plan("full", SEED)
                    if (j.task, j.edit, j.level, j.j) == (job.task, job.edit, job.level, job.j))
    inst_b, png_b = gd.generate_one(SEED, full_job)
    assert inst_a == inst_b and png_a == png_b


def _subgraphs(path: Path) -> dict[str, list[tuple[str, set[str]]]]:
    """Per source, the (instance id, source node set) of every sampled subgraph; molecules by id."""
    out: dict[str, list[tuple[str, set[str]]]] = {}
    for inst in load_dataset(path).instances:
        src = inst.data["source"]
        ids = src["node_ids"]
        if src["name"] == "nci-molecules":
            for mol in sorted({i.split(":")[0] for i in ids}):
                out.setdefault("nci-molecules", []).append((inst.instance_id, {mol}))
        else:
            out.setdefault(src["name"], []).append((inst.instance_id, set(ids)))
    return out


@pytest.mark.slow(reason="generates 102-instance train and full slices of GraphVerse")
def test_no_train_subgraph_shares_over_half_its_nodes_with_a_test_subgraph(small_split: Path, small_train: Path):
    test, train = _subgraphs(small_split), _subgraphs(small_train)
    assert train and test
    compared = 0
    for source, train_graphs in train.items():
        for tid, a in train_graphs:
            for sid, b in test.get(source, []):
                compared += 1
                assert len(a & b) <= len(a) / 2, (source, tid, sid, sorted(a & b))
    assert compared > 100


def test_stream_regions_are_disjoint_and_walks_stay_inside():
    import random

    from gie.sample import rwr_nodes

    for name in ("us-airports", "wikidata-film-kg", "les-miserables", "karate"):
        src = get_source(name)
        nodes = list(src.adjacency)
        train = splits.region(name, "train", nodes)
        test = splits.region(name, "test", nodes)
        as_set = {s: (set(nodes) if r is None else set(r)) for s, r in (("train", train), ("test", test))}
        assert not as_set["train"] & as_set["test"]
        assert as_set["train"] or as_set["test"]
        for stream, r in (("train", train), ("test", test)):
            if r is not None and r:
                walked = rwr_nodes(src, 30, random.Random(1), region=r)
                assert set(walked) <= r, (name, stream)
