"""Generating an NPHardEval4V dataset version from the task modules (the core's dataset I/O writes it)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from nphe4v.core.dataset import LEVELS, DatasetError, DatasetManifest, build_instance, write_dataset
from nphe4v.core.rng import derive_seed, rng_for
from nphe4v.core.schema import Instance


def _generate_chunk(args: tuple[str, str, int, int, Sequence[int]]) -> list[tuple[Instance, list[bytes]]]:
    from nphe4v.tasks import get_task

    version, task_name, seed, level, indices = args
    spec = get_task(task_name)
    out = []
    for index in indices:
        s = derive_seed(seed, version, task_name, level, index)
        data = spec.generate(level, rng_for(s))
        out.append(build_instance(spec, level, index, data, seed=s))
    return out


def generate_version(
    out: Path,
    *,
    version: str,
    seed: int,
    per_level: int = 10,
    tasks: Sequence[str] | None = None,
    levels: Sequence[int] = LEVELS,
    workers: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> DatasetManifest:
    """Generate a fresh NPHardEval4V version. The same (version, seed) gives byte-identical files."""
    from nphe4v.tasks import TASK_MODULES, get_task

    if per_level < 1:
        raise DatasetError(f"{out}: per_level {per_level}: must be at least 1")
    if not version or "/" in version or "\\" in version or ".." in version:
        raise DatasetError(f"{out}: version {version!r}: must be one name without '..' or path separators")
    names = list(tasks or TASK_MODULES)
    for n in names:
        get_task(n)  # fail fast on an unknown task name
    jobs = [(version, n, seed, lv, list(range(per_level))) for n in names for lv in levels]
    workers = workers or min(len(jobs), os.cpu_count() or 1)
    results: list[tuple[Instance, list[bytes]]] = []
    done = 0
    if workers <= 1:
        chunks: Iterable[list[tuple[Instance, list[bytes]]]] = map(_generate_chunk, jobs)
    else:
        pool = ProcessPoolExecutor(max_workers=workers)
        chunks = pool.map(_generate_chunk, jobs)
    try:
        for chunk in chunks:
            results.extend(chunk)
            done += len(chunk)
            if progress:
                progress(done, len(jobs) * per_level)
    finally:
        if workers > 1:
            pool.shutdown()
    params = {n: {str(lv): get_task(n).params(lv) for lv in levels} for n in names}
    return write_dataset(
        out,
        results,
        benchmark="nphardeval4v",
        version=version,
        seed=seed,
        per_level=per_level,
        source="generated",
        params=params,
    )

