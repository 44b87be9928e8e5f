"""Reading a peer data folder: `read_peer` (every task's instances, in canonical order) and
`read_peer_answers` (the answers files shipped with V1/V2)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from nphe4v.peer.fields import format_error, load_json
from nphe4v.peer.formats import ANSWER_FILES, JSON_FILES, TASK_FOLDERS, PeerKind, PeerRecords
from nphe4v.peer.gcp_files import read_gcp_task
from nphe4v.peer.json_tasks import read_json_task
from nphe4v.peer.tsp_files import read_tsp_task


def _data_dir(kind: str, root: Path) -> Path:
    root = Path(root)
    if kind == "nphardeval4v":
        return root / "Data" if (root / "Data").is_dir() else root
    if kind == "nphardeval":
        return root
    raise ValueError(f"unknown peer kind {kind!r}; expected 'nphardeval' or 'nphardeval4v'")


def read_peer(kind: PeerKind, root: Path, tasks: Iterable[str] | None = None) -> PeerRecords:
    """Read one peer data folder: kind "nphardeval4v" -> the 4V `Data/` folder (root or root/Data);
    kind "nphardeval" -> one version folder (Data_V0, Data_V1, ...; MFP is not part of 4V and is ignored).

    Returns a list of records in task order (BSP ... MSP), each task in peer order; task folders that
    are missing are skipped and reported in `.warnings`. Malformed files raise `PeerFormatError`.
    """
    data_dir = _data_dir(kind, root)
    if not data_dir.is_dir():
        raise FileNotFoundError(f"peer data folder not found: {data_dir}")
    wanted = list(TASK_FOLDERS) if tasks is None else list(tasks)
    for t in wanted:
        if t not in TASK_FOLDERS:
            raise KeyError(f"unknown task {t!r}; known: {', '.join(TASK_FOLDERS)}")
    base = data_dir.parent
    common_meta = {"peer": kind, "version": data_dir.name}
    out = PeerRecords()
    for task in wanted:
        folder = data_dir / TASK_FOLDERS[task]
        if not folder.is_dir():
            out.warnings.append(f"{task}: folder {folder} missing, skipped")
            continue
        if task in JSON_FILES:
            out.extend(read_json_task(task, folder, base, common_meta))
        elif task in ("TSP", "TSP-D"):
            out.extend(read_tsp_task(task, folder, base, common_meta))
        else:
            out.extend(read_gcp_task(task, folder, base, common_meta))
    return out


def read_peer_answers(root: Path) -> dict[str, list[dict[str, Any]]]:
    """The answers files of a text-benchmark version folder (V1, V2), keyed by our task name.
    Tasks without an answers file (MSP everywhere; everything in 4V and V0) are absent."""
    root = Path(root)
    out: dict[str, list[dict[str, Any]]] = {}
    for task, name in ANSWER_FILES.items():
        path = root / TASK_FOLDERS[task] / name
        if not path.is_file():
            continue
        items = load_json(path)
        if not isinstance(items, list):
            raise format_error(str(path), f"expected a JSON list, got {type(items).__name__}")
        for i, a in enumerate(items):
            if not isinstance(a, dict):
                raise format_error(str(path), f"item {i}: expected an object, got {type(a).__name__}")
        out[task] = items
    return out
