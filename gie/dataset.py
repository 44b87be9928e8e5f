"""GraphVerse splits: full (11,000), testmini (1,060) and train (3,500), written in the standard dataset
folder layout (`nphe4v.core.dataset.write_dataset`, benchmark "graphverse", version "graphverse-<split>").

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

Parallelism: `generate_split` runs chunks of jobs as Ray tasks (`workers` CPUs of a local Ray) and writes
results in plan order, so the files do not depend on the worker count.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from gie import splits
from gie.catalogue import PAIRED_TASKS, TASK_EDITS, TASK_NAMES
from gie.levels import LEVEL_NUMBER, LEVELS, Level
from gie.sources import user_copies
from nphe4v.core.dataset import DatasetManifest, build_instance, write_dataset
from nphe4v.core.rng import derive_seed, rng_for
from nphe4v.core.schema import Instance

Split = Literal["full", "testmini", "train"]
SPLITS: tuple[Split, ...] = ("full", "testmini", "train")
FULL_PER_TASK = 1000
TESTMINI_TOTAL = 1060
TRAIN_TOTAL = 3500
CHUNK = 4


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


def _chunks(jobs: list[Job], size: int) -> Iterable[list[Job]]:
    for i in range(0, len(jobs), size):
        yield jobs[i : i + size]


# Below this many jobs a local Ray start (a few seconds) costs more than it saves.
RAY_MIN_JOBS = 64


def _run_ray(seed: int, chunks: list[list[Job]], workers: int,
             on_chunk: Callable[[list[tuple[Instance, list[bytes]]]], None]) -> None:
    """Chunks as Ray tasks (one CPU each) on the running Ray, or on a local one with `workers` CPUs
    started (and stopped) here. Results are taken in submission order, so output order is the plan's."""
    import ray

    started = not ray.is_initialized()
    if started:
        # Workers inherit the driver's environment: put the gie the driver imported first on their path
        # (a worktree run from a script that edited sys.path included).
        here = str(Path(__file__).resolve().parents[1])
        old = os.environ.get("PYTHONPATH", "")
        if here not in old.split(os.pathsep):
            os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (here, old) if p)
        # "local": a private Ray, never another one already running on this machine
        ray.init(address="local", num_cpus=workers, include_dashboard=False, log_to_driver=False)
    try:
        # Chunks are pure functions of (seed, jobs): a retry after a worker crash gives the same bytes.
        remote = ray.remote(num_cpus=1, max_retries=2)(_chunk)
        spec = user_copies.user_sources_identity()
        window = 4 * workers  # keeps every worker busy without holding the whole split in the object store
        pending = []
        for c in chunks:
            pending.append(remote.remote(seed, c, spec))
            if len(pending) >= window:
                on_chunk(ray.get(pending.pop(0)))
        for ref in pending:
            on_chunk(ray.get(ref))
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
    results: list[tuple[Instance, list[bytes]]] = []

    def on_chunk(chunk: list[tuple[Instance, list[bytes]]]) -> None:
        results.extend(chunk)
        if progress:
            progress(len(results), len(jobs))

    chunks = list(_chunks(jobs, CHUNK))
    if workers <= 0:
        for c in chunks:
            on_chunk(_chunk(seed, c))
    else:
        _run_ray(seed, chunks, workers, on_chunk)
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
