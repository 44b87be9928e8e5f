"""GraphVerse splits: full (11,000), testmini (1,060) and train (3,500), written in the standard dataset
folder layout (`nphe4v.dataset.write_dataset`, benchmark "graphverse", version "graphverse-<split>").

Distribution (our Tables 5/6): every task has 1,000 instances in `full`, spread as evenly as possible over
the edits it takes (200 per edit; COL 250 over four; TSP 500 over none and recolor). `testmini` picks a
stratified subset of `full` (largest-remainder allocation per task x edit cell, then a seeded sample of
each cell), so its rows are identical to the corresponding `full` rows, ids included. `train` is allocated
the same way from its own seed stream.

Determinism: instance j of cell (task, edit) is generated from `derive_seed(seed, stream, task, edit, j)`
where stream is "graphverse-test" (full and testmini) or "graphverse-train"; worker count and chunking
never change a byte. Paired tasks edit both images for even j and one image for odd j (half and half).

Train/test disjointness: a sampled source subgraph (its sorted original node ids) or molecule is admitted
to the test stream iff a hash of it is not 0 mod 4, and to the train stream iff it is, so no source
subgraph or molecule can occur in both (checked by `split_of_ids`).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from nphe4v.core.rng import derive_seed, rng_for
from nphe4v.core.schema import Instance
from nphe4v.dataset import DatasetManifest, build_instance, write_dataset

Split = Literal["full", "testmini", "train"]
SPLITS: tuple[Split, ...] = ("full", "testmini", "train")
FULL_PER_TASK = 1000
TESTMINI_TOTAL = 1060
TRAIN_TOTAL = 3500
LEVEL = 1  # GraphVerse has no levels; size varies within each task's node range
CHUNK = 8


@dataclass(frozen=True)
class Job:
    task: str
    edit: str
    j: int  # index within the (task, edit) cell of its stream
    index: int  # instance index within the task (ids: <task>-L01-<index>)
    stream: str
    paired_mode: str | None


def cells() -> list[tuple[str, str]]:
    from gie.tasks import TASK_EDITS, TASK_NAMES

    return [(t, e) for t in TASK_NAMES for e in TASK_EDITS[t]]


def full_counts() -> dict[tuple[str, str], int]:
    from gie.tasks import TASK_EDITS, TASK_NAMES

    out = {}
    for t in TASK_NAMES:
        edits = TASK_EDITS[t]
        base, extra = divmod(FULL_PER_TASK, len(edits))
        for k, e in enumerate(edits):
            out[(t, e)] = base + (1 if k < extra else 0)
    return out


def allocate(total: int, sizes: dict[tuple[str, str], int]) -> dict[tuple[str, str], int]:
    """Largest-remainder allocation of `total` proportional to `sizes` (ties by cell order)."""
    whole = sum(sizes.values())
    quotas = {c: total * n / whole for c, n in sizes.items()}
    out = {c: int(q) for c, q in quotas.items()}
    order = sorted(sizes, key=lambda c: (-(quotas[c] - out[c]), list(sizes).index(c)))
    for c in order[: total - sum(out.values())]:
        out[c] += 1
    return out


def _paired_mode(task: str, edit: str, j: int) -> str | None:
    from gie.tasks import PAIRED_TASKS

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
    offsets: dict[tuple[str, str], int] = {}
    used: dict[str, int] = {}
    for t, e in cells():
        offsets[(t, e)] = used.get(t, 0)
        used[t] = offsets[(t, e)] + counts[(t, e)]
    jobs: list[tuple[int, int, Job]] = []
    for ci, (t, e) in enumerate(cells()):
        if split == "full":
            js = list(range(counts[(t, e)]))
        elif split == "testmini":
            n = allocate(TESTMINI_TOTAL, counts)[(t, e)]
            js = sorted(rng_for(seed, "graphverse-testmini", t, e).sample(range(counts[(t, e)]), n))
        else:
            js = list(range(allocate(TRAIN_TOTAL, counts)[(t, e)]))
        stream = "graphverse-train" if split == "train" else "graphverse-test"
        for rank, j in enumerate(js):
            jobs.append((rank, ci, Job(t, e, j, offsets[(t, e)] + j, stream, _paired_mode(t, e, j))))
    if limit is not None:
        jobs.sort(key=lambda x: (x[0], x[1]))
        jobs = jobs[:limit]
    jobs.sort(key=lambda x: (x[1], x[0]))
    return [job for _, _, job in jobs]


def split_of_ids(ids: Sequence[str]) -> str:
    """'train' or 'test': the stream a sampled node-id set (or one molecule id) may belong to."""
    h = hashlib.sha256("\x1f".join(sorted(ids)).encode()).digest()
    return "train" if int.from_bytes(h[:4], "big") % 4 == 0 else "test"


def _filter(stream: str) -> Callable[[Sequence[str]], bool]:
    want = "train" if stream == "graphverse-train" else "test"
    return lambda ids: split_of_ids(ids) == want


def _instance_seed(seed: int, job: Job) -> int:
    return derive_seed(seed, job.stream, job.task, job.edit, job.j)


def generate_one(seed: int, job: Job) -> tuple[Instance, list[bytes]]:
    from gie.tasks import get_config, get_task
    from gie.tasks.common import build_data

    spec, cfg = get_task(job.task), get_config(job.task)
    s = _instance_seed(seed, job)
    data = build_data(cfg, job.edit, rng_for(s), paired_mode=job.paired_mode,  # type: ignore[arg-type]
                      split_filter=_filter(job.stream))
    meta: dict[str, Any] = {
        "edit": job.edit,
        "paired_mode": job.paired_mode,
        "source": data.source.name,
        "scenario": data.scenario,
        "stream": job.stream,
        "cell_index": job.j,
    }
    return build_instance(spec, LEVEL, job.index, data, seed=s, meta=meta)


def _chunk(args: tuple[int, list[Job]]) -> list[tuple[Instance, list[bytes]]]:
    seed, jobs = args
    return [generate_one(seed, job) for job in jobs]


def _chunks(jobs: list[Job], size: int) -> Iterable[list[Job]]:
    for i in range(0, len(jobs), size):
        yield jobs[i : i + size]


def generate_split(
    out: Path,
    split: Split,
    seed: int,
    limit: int | None = None,
    workers: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> DatasetManifest:
    """Generate one GraphVerse split into `out`. The same (split, seed, limit) gives byte-identical files."""
    from gie.tasks import get_task

    jobs = plan(split, seed, limit)
    workers = workers or min(os.cpu_count() or 1, max(1, len(jobs) // CHUNK))
    results: list[tuple[Instance, list[bytes]]] = []
    args = [(seed, c) for c in _chunks(jobs, CHUNK)]
    if workers <= 1:
        it: Iterable[list[tuple[Instance, list[bytes]]]] = map(_chunk, args)
        pool = None
    else:
        pool = ProcessPoolExecutor(max_workers=workers)
        it = pool.map(_chunk, args)
    try:
        for chunk in it:
            results.extend(chunk)
            if progress:
                progress(len(results), len(jobs))
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)
    tasks = sorted({j.task for j in jobs}, key=lambda t: [c[0] for c in cells()].index(t))
    params = {t: {str(LEVEL): get_task(t).params(LEVEL)} for t in tasks}
    cell_counts: dict[str, dict[str, int]] = {}
    for j in jobs:
        cell_counts.setdefault(j.task, {}).setdefault(j.edit, 0)
        cell_counts[j.task][j.edit] += 1
    extra = {
        "split": split,
        "limit": limit,
        "counts": cell_counts,
        "sources": _source_licences(results),
        "train_test_rule": "sha256 of sorted source node ids (or molecule id): train iff first 4 bytes % 4 == 0",
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
