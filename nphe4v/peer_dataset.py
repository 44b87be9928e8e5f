"""`nphe4v import-peer`: the published instances as a dataset folder, gold from our exact solvers.

Instance ids follow our scheme (task, level, index within the level); `peer_index` keeps the position in
the peer's files so results can be matched with theirs.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Literal

from nphe4v.dataset import DatasetManifest, build_instance, write_dataset
from nphe4v.peer import read_peer
from nphe4v.progress import Bar
from nphe4v.tasks import get_task


def import_peer_dataset(
    kind: Literal["nphardeval", "nphardeval4v"], root: Path, out: Path
) -> tuple[DatasetManifest, list[str]]:
    root = Path(root)
    if not root.exists():
        raise FileNotFoundError(f"{root}: peer data folder not found")
    records = read_peer(kind, root)
    if not records:
        raise ValueError(f"{root}: no peer task folders found (expected BSP/, EDP/, ... inside)")
    seen: dict[tuple[str, int], int] = defaultdict(int)
    items = []
    with Bar(f"import {kind}", len(records)) as bar:
        for rec in records:
            spec = get_task(rec.task)
            index = seen[(rec.task, rec.level)]
            seen[(rec.task, rec.level)] += 1
            meta = {**rec.meta, "source_file": rec.source_file}
            items.append(
                build_instance(spec, rec.level, index, spec.load(rec.data), peer_index=rec.peer_index, meta=meta)
            )
            bar.advance()
    version = f"peer-{kind}-{root.resolve().name}"
    manifest = write_dataset(
        out, items, benchmark="nphardeval4v", version=version, seed=None, per_level=None,
        source=f"peer:{kind}:{root.resolve().name}",
    )
    return manifest, list(records.warnings)
