"""`nphe4v import-peer`: the published instances as a dataset folder, gold from our exact solvers.

Instance ids follow our scheme (task, level, index within the level); `peer_index` keeps the position in
the peer's files so results can be matched with theirs.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from functools import partial
from pathlib import Path
from typing import Any, Literal

from evalcore.dataset import DatasetManifest, build_instance, instance_id, write_dataset
from evalcore.graph_solvers import SolveBudgetExceeded
from evalcore.progress import Bar
from evalcore.schema import Gold, Instance
from evalcore.task import TaskSpec
from nphe4v.peer.formats import PeerRecord
from nphe4v.peer.read import read_peer
from nphe4v.tasks import get_task

# Work allowed to one exact colouring search (coloring._NodeBudget steps, ~1-2 s of Python at any size). Every
# published GCP / GCP-D instance needs under 20,000; a dense 70-vertex graph could search for hours.
DEFAULT_SOLVE_BUDGET = 10_000_000
# Tasks whose exact solver is exponential in practice and takes a step budget (TSP's Held-Karp is bounded by n).
_BUDGETED = ("GCP", "GCP-D")
UNKNOWN_GOLD = Gold(answer={}, value=None)


def _build(
    spec: TaskSpec[Any], rec: PeerRecord, index: int, meta: dict[str, Any], budget: int | None
) -> tuple[tuple[Instance, list[bytes]], str | None]:
    """The instance with exact gold, or with gold marked unknown and a one-line report when the search for it
    ran past `budget`."""
    data = spec.load(rec.data)
    if spec.name not in _BUDGETED or budget is None:
        return build_instance(spec, rec.level, index, data, peer_index=rec.peer_index, meta=meta), None
    bounded = dataclasses.replace(spec, solve=partial(spec.solve, max_steps=budget))
    try:
        return build_instance(bounded, rec.level, index, data, peer_index=rec.peer_index, meta=meta), None
    except SolveBudgetExceeded as e:
        unknown = dataclasses.replace(spec, solve=lambda _data: UNKNOWN_GOLD)
        item = build_instance(
            unknown, rec.level, index, data, peer_index=rec.peer_index, meta={**meta, "gold": "unknown"}
        )
        iid = instance_id(spec.name, rec.level, index)
        return item, f"{rec.source_file} (peer index {rec.peer_index}, {iid}): gold unknown: {e}"


def import_peer_dataset(
    kind: Literal["nphardeval", "nphardeval4v"],
    root: Path,
    out: Path,
    solve_budget: int | None = DEFAULT_SOLVE_BUDGET,
) -> tuple[DatasetManifest, list[str]]:
    """Returns the manifest and one warning line per problem (missing folders, gold left unknown)."""
    root = Path(root)
    if not root.exists():
        raise FileNotFoundError(f"{root}: peer data folder not found")
    records = read_peer(kind, root)
    if not records:
        raise ValueError(f"{root}: no peer task folders found (expected BSP/, EDP/, ... inside)")
    seen: dict[tuple[str, int], int] = defaultdict(int)
    items = []
    warnings = list(records.warnings)
    with Bar(f"import {kind}", len(records)) as bar:
        for rec in records:
            spec = get_task(rec.task)
            index = seen[(rec.task, rec.level)]
            seen[(rec.task, rec.level)] += 1
            meta = {**rec.meta, "source_file": rec.source_file}
            item, problem = _build(spec, rec, index, meta, solve_budget)
            items.append(item)
            if problem:
                warnings.append(problem)
            bar.advance()
    version = f"peer-{kind}-{root.resolve().name}"
    manifest = write_dataset(
        out, items, benchmark="nphardeval4v", version=version, seed=None, per_level=None,
        source=f"peer:{kind}:{root.resolve().name}",
    )
    return manifest, warnings
