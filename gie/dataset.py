"""GraphVerse splits: full (11,000), testmini (1,060) and train (3,500), written in the standard dataset
folder layout (`evalcore.dataset.write_dataset`, benchmark "graphverse", version "graphverse-<split>").

Distribution (our Tables 5/6): every task has 1,000 instances in `full`, spread as evenly as possible over
the edits it takes (200 per edit; COL 250 over four; TSP 500 over none and recolor), and each (task, edit)
cell half easy, half hard (GraphArena's levels, `gie.catalogue.LEVEL_RANGES`). `testmini` picks a stratified
subset of `full` (largest-remainder allocation per task x edit x level cell, then a seeded sample of each
cell), so its rows are identical to the corresponding `full` rows, ids included. `train` is allocated the
same way from its own seed stream.

Ids: `<task>-L01-<index>` easy, `<task>-L02-<index>` hard (task in lower case) (`Instance.level` 1 / 2, `meta.level` names it).

Determinism: instance j of cell (task, edit, level) is generated from
`derive_seed(seed, stream, task, edit, level, j)` where stream is "graphverse-test" (full and testmini) or
"graphverse-train"; worker count and chunking never change a byte. Paired tasks edit both images for even j
and one image for odd j (half and half).

Train/test disjointness: the streams never share a source node or a molecule (`gie.splits`): large walk
sources are cut into node regions by a hash of each node id and walks stay inside their stream's region,
small ones belong whole to one stream, molecules go one in four to train by a hash of their id.

Parallelism: `generate_split` runs chunks of jobs as Ray tasks (`workers` CPUs of a local Ray), longest
first, and writes results in plan order, so the files do not depend on the worker count.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from evalcore.dataset import DatasetManifest, build_instance, write_dataset
from evalcore.rng import derive_seed, rng_for
from evalcore.schema import Instance
from gie import splits
from gie.catalogue import PAIRED_TASKS, TASK_EDITS, TASK_NAMES
from gie.levels import LEVEL_NUMBER, LEVELS, Level
from gie.sources import user_copies

# As `nphe4v.generate.GENERATOR_REVISION`: bumped whenever a split's bytes for the same seed change (pinned in
# tests/test_generator_revision.py); cached dataset folders are keyed on it.
GENERATOR_REVISION = "2026-12-04"

Split = Literal["full", "testmini", "train"]
SPLITS: tuple[Split, ...] = ("full", "testmini", "train")
FULL_PER_TASK = 1000
TESTMINI_TOTAL = 1060
TRAIN_TOTAL = 3500


@dataclass(frozen=True)
class Job:
    task: str
    edit: str
    level: Level
    j: int  # index within the (task, edit, level) cell of its stream
    index: int  # instance index within the task (ids: <task>-L01-<index>)
    stream: str
    paired_mode: str | None


Cell = tuple[str, str, Level]


def cells() -> list[Cell]:
    return [(t, e, lv) for t in TASK_NAMES for e in TASK_EDITS[t] for lv in LEVELS]


def full_counts() -> dict[Cell, int]:
    out = {}
    for t in TASK_NAMES:
        edits = TASK_EDITS[t]
        slots = [(e, lv) for e in edits for lv in LEVELS]
        base, extra = divmod(FULL_PER_TASK, len(slots))
        for k, (e, lv) in enumerate(slots):
            out[(t, e, lv)] = base + (1 if k < extra else 0)
    return out


def allocate(total: int, sizes: dict[Cell, int]) -> dict[Cell, int]:
    """Largest-remainder allocation of `total` proportional to `sizes` (ties by cell order)."""
    whole = sum(sizes.values())
    quotas = {c: total * n / whole for c, n in sizes.items()}
    out = {c: int(q) for c, q in quotas.items()}
    order = sorted(sizes, key=lambda c: (-(quotas[c] - out[c]), list(sizes).index(c)))
    for c in order[: total - sum(out.values())]:
        out[c] += 1
    return out


def _paired_mode(task: str, edit: str, j: int) -> str | None:
    if task not in PAIRED_TASKS or edit == "none":
        return None
    return "both" if j % 2 == 0 else "one"


def plan(split: Split, seed: int, limit: int | None = None) -> list[Job]:
    """The instances of a split, in generation order. With `limit`, the first `limit` jobs taken
    round-robin over cells, so even a small limit covers every task x edit."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; known: {', '.join(SPLITS)}")
    counts = full_counts()
    # A cell's instances take the indices after the task's earlier cells (in the full set's numbering).
    offsets: dict[Cell, int] = {}
    used: dict[str, int] = {}
    for c in cells():
        offsets[c] = used.get(c[0], 0)
        used[c[0]] = offsets[c] + counts[c]
    shares = allocate(TESTMINI_TOTAL if split == "testmini" else TRAIN_TOTAL, counts)
    jobs: list[tuple[int, int, Job]] = []
    for ci, c in enumerate(cells()):
        t, e, lv = c
        if split == "full":
            js = list(range(counts[c]))
        elif split == "testmini":
            js = sorted(rng_for(seed, "graphverse-testmini", t, e, lv).sample(range(counts[c]), shares[c]))
        else:
            js = list(range(shares[c]))
        stream = "graphverse-train" if split == "train" else "graphverse-test"
        for rank, j in enumerate(js):
            jobs.append((rank, ci, Job(t, e, lv, j, offsets[c] + j, stream, _paired_mode(t, e, j))))
    if limit is not None:
        # Round-robin over task x edit first, the level alternating from one pair to the next, so a limit
        # of one per task x edit (the demo's 51) covers every task and edit with both levels present.
        pairs = list(dict.fromkeys((t, e) for t, e, _ in cells()))
        cell_list = cells()

        def order(x: tuple[int, int, Job]) -> tuple[int, int, int]:
            t, e, lv = cell_list[x[1]]
            pi = pairs.index((t, e))
            return (x[0], (LEVELS.index(lv) + pi) % len(LEVELS), pi)

        jobs.sort(key=order)
        jobs = jobs[:limit]
    jobs.sort(key=lambda x: (x[1], x[0]))
    return [job for _, _, job in jobs]


def _instance_seed(seed: int, job: Job) -> int:
    return derive_seed(seed, job.stream, job.task, job.edit, job.level, job.j)


def generate_one(seed: int, job: Job) -> tuple[Instance, list[bytes]]:
    from gie.tasks import get_config, get_task
    from gie.tasks.construction import build_data

    spec, cfg = get_task(job.task), get_config(job.task)
    s = _instance_seed(seed, job)
    data = build_data(cfg, job.edit, rng_for(s), paired_mode=job.paired_mode,  # type: ignore[arg-type]
                      stream=splits.stream_of_stream_name(job.stream), level=job.level)
    meta: dict[str, Any] = {
        "level": job.level,
        "edit": job.edit,
        "paired_mode": job.paired_mode,
        "source": data.source.name,
        "scenario": data.scenario,
        "stream": job.stream,
        "cell_index": job.j,
    }
    return build_instance(spec, LEVEL_NUMBER[job.level], job.index, data, seed=s, meta=meta)


def _chunk(seed: int, jobs: list[Job], user_sources: dict[str, object] | None = None
           ) -> list[tuple[Instance, list[bytes]]]:
    # A Ray worker may predate the driver's --source choice (its environment is fixed at start) or hold an
    # older read of a copy edited since: the driver's sources identity travels with the task, so a worker
    # never draws from other graphs than the driver's.
    if user_sources is not None and user_sources != user_copies.user_sources_identity():
        spec = user_sources["spec"]
        assert isinstance(spec, dict)
        user_copies.use_user_sources(spec)
    return [generate_one(seed, job) for job in jobs]


# Estimated CPU ms of one instance by (edit, level), measured on a testmini slice (seed 2026, 200
# instances): focus and recolouring redraw and re-solve until the edit changes the answer, and hard graphs
# are bigger. Only used to size chunks and to hand out the longest ones first; never changes a byte.
_COST_MS: dict[tuple[str, Level], float] = {
    ("none", "easy"): 40, ("composition", "easy"): 30, ("focus", "easy"): 45, ("patch", "easy"): 65,
    ("recolor", "easy"): 120, ("none", "hard"): 100, ("composition", "hard"): 90, ("patch", "hard"): 240,
    ("focus", "hard"): 600, ("recolor", "hard"): 750,
}
# A chunk (one Ray task) holds jobs of one cell worth about this much CPU, at most CHUNK_MAX of them:
# big enough that Ray's per-task cost (~ms) stays negligible, small enough to balance two workers.
CHUNK_MS = 1500.0
CHUNK_MAX = 16


# Hard GED / MCS pairs have a heavy tail (an exact GED may take 20-40 s on the MILP): their chunks are
# smaller and go first, so a slow one is never the last task running.
PAIRED_HARD_FACTOR = 4.0


def _cost(job: Job) -> float:
    ms = _COST_MS.get((job.edit, job.level), 100.0)
    return ms * PAIRED_HARD_FACTOR if job.task in PAIRED_TASKS and job.level == "hard" else ms


def _chunks(jobs: list[Job]) -> Iterable[list[Job]]:
    """Consecutive jobs of one cell, up to CHUNK_MS of estimated work (CHUNK_MAX jobs) each."""
    chunk: list[Job] = []
    spent = 0.0
    for job in jobs:
        full = len(chunk) >= CHUNK_MAX or spent + _cost(job) > CHUNK_MS
        if chunk and (full or (job.task, job.edit, job.level) != (chunk[0].task, chunk[0].edit, chunk[0].level)):
            yield chunk
            chunk, spent = [], 0.0
        chunk.append(job)
        spent += _cost(job)
    if chunk:
        yield chunk


# Below this many jobs a local Ray start (a few seconds) costs more than it saves.
RAY_MIN_JOBS = 64


def _run_ray(seed: int, chunks: list[list[Job]], workers: int,
             on_chunk: Callable[[int, list[tuple[Instance, list[bytes]]]], None]) -> None:
    """Chunks as Ray tasks (one CPU each) on the running Ray, or on a local one with `workers` CPUs
    started (and stopped) here. `on_chunk(i, results)` gets chunk i's results as they finish, in any
    order; the caller puts them back in plan order.

    Scheduling, for the two workers to stay busy to the end: the chunks expected to take longest go
    first (no long chunk left to run alone at the end), and a new chunk is submitted whenever any one
    finishes (waiting for them in submission order left a worker idle behind a slow chunk)."""
    import ray

    from evalcore.local_ray import start_local_ray

    started = not ray.is_initialized()
    if started:
        # Workers inherit the driver's environment: put the gie the driver imported first on their path
        # (a worktree run from a script that edited sys.path included).
        here = str(Path(__file__).resolve().parents[1])
        old = os.environ.get("PYTHONPATH", "")
        if here not in old.split(os.pathsep):
            os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (here, old) if p)
        # "local": a private Ray, never another one already running on this machine
        start_local_ray(workers, log_to_driver=False)
    try:
        # Chunks are pure functions of (seed, jobs): a retry after a worker crash gives the same bytes.
        remote = ray.remote(num_cpus=1, max_retries=2)(_chunk)
        spec = user_copies.user_sources_identity()
        order = sorted(range(len(chunks)), key=lambda i: -sum(_cost(j) for j in chunks[i]))
        # Two per worker: the next chunk is queued when one finishes; the object store holds few results.
        window = 2 * workers
        pending: dict[Any, int] = {}
        nxt = 0
        while nxt < len(order) or pending:
            while nxt < len(order) and len(pending) < window:
                pending[remote.remote(seed, chunks[order[nxt]], spec)] = order[nxt]
                nxt += 1
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                on_chunk(pending.pop(ref), ray.get(ref))
    finally:
        if started:
            ray.shutdown()


def generate_split(
    out: Path,
    split: Split,
    seed: int,
    limit: int | None = None,
    workers: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> DatasetManifest:
    """Generate one GraphVerse split into `out`. The same (split, seed, limit) gives byte-identical files
    whatever `workers` is: 0 generates in this process, n >= 1 runs Ray tasks on n CPUs, None picks Ray
    on every CPU for sets of at least `RAY_MIN_JOBS` instances and this process below that."""
    from gie.tasks import get_task

    jobs = plan(split, seed, limit)
    if workers is None:
        workers = (os.cpu_count() or 1) if len(jobs) >= RAY_MIN_JOBS else 0
    chunks = list(_chunks(jobs))
    by_chunk: list[list[tuple[Instance, list[bytes]]] | None] = [None] * len(chunks)
    done = 0

    def on_chunk(i: int, chunk: list[tuple[Instance, list[bytes]]]) -> None:
        nonlocal done
        by_chunk[i] = chunk
        done += len(chunk)
        if progress:
            progress(done, len(jobs))

    if workers <= 0:
        for i, c in enumerate(chunks):
            on_chunk(i, _chunk(seed, c))
    else:
        _run_ray(seed, chunks, workers, on_chunk)
    # Plan order, whatever order the chunks finished in: the files never depend on the worker count.
    results = [r for chunk in by_chunk if chunk is not None for r in chunk]
    if len(results) != len(jobs):
        raise RuntimeError(f"graphverse {split}: {len(results)} of {len(jobs)} instances came back")
    order = [c[0] for c in cells()]
    tasks = sorted({j.task for j in jobs}, key=order.index)
    levels = sorted({LEVEL_NUMBER[j.level] for j in jobs})
    params = {t: {str(lv): get_task(t).params(lv) for lv in levels} for t in tasks}
    cell_counts: dict[str, dict[str, dict[str, int]]] = {}
    for j in jobs:
        by_edit = cell_counts.setdefault(j.task, {}).setdefault(j.edit, {})
        by_edit[j.level] = by_edit.get(j.level, 0) + 1
    extra = {
        "split": split,
        "limit": limit,
        "counts": cell_counts,
        "sources": _source_licences(results),
        "train_test_rule": (f"streams share no source node: large walk sources split by sha256(source, node id) "
                            f"% {splits.TRAIN_ONE_IN} == 0 -> train, walks stay in their region; small sources "
                            f"whole ({splits.SMALL_SOURCE_STREAM}); molecules by sha256(source, id)"),
    }
    return write_dataset(
        out,
        results,
        benchmark="graphverse",
        version=f"graphverse-{split}",
        seed=seed,
        per_level=None,
        source="generated",
        params=params,
        extra=extra,
    )


def _source_licences(results: Sequence[tuple[Instance, list[bytes]]]) -> dict[str, str]:
    out: dict[str, str] = {}
    for inst, _ in results:
        src = inst.data["source"]
        out.setdefault(src["name"], src["licence"])
    return dict(sorted(out.items()))
