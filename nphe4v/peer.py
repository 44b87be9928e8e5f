"""Readers for the data published with NPHardEval (text benchmark, versions V0, V1, ...) and NPHardEval4V.

`read_peer` turns the peer files into `PeerRecord`s whose `data` validates against our task data models
(`get_task(task).load(record.data)`); `read_peer_answers` reads the answers files shipped with V1/V2;
`compare_with_answers` checks our exact solvers against those answers. File formats are described in
shared/peers/MANIFEST.md, quirks in docs/nphardeval4v-peer-spec.md (sections 4 and 6).

Canonical order: record i of a JSON file is level i//10 + 1; TSP/GCP records are ordered by file level,
then instance (CSV file number / block position in the DIMACS file). `peer_index` is that position.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from nphe4v.core.coerce import as_yes_no
from nphe4v.tasks import get_task

PeerKind = Literal["nphardeval", "nphardeval4v"]
TaskName = Literal["BSP", "EDP", "SPP", "KSP", "TSP-D", "GCP-D", "TSP", "GCP", "MSP"]
CompareStatus = Literal["equal", "ours_better", "theirs_not_comparable", "MISMATCH"]

# our task name -> the peer's folder name (same in every version)
TASK_FOLDERS: dict[str, str] = {
    "BSP": "BSP",
    "EDP": "EDP",
    "SPP": "SPP",
    "KSP": "KSP",
    "TSP-D": "TSP_Decision",
    "GCP-D": "GCP_Decision",
    "TSP": "TSP",
    "GCP": "GCP",
    "MSP": "MSP",
}
JSON_FILES: dict[str, str] = {
    "BSP": "bsp_instances.json",
    "EDP": "edp_instances.json",
    "SPP": "spp_instances.json",
    "KSP": "ksp_instances.json",
    "MSP": "msp_instances.json",
}
ANSWER_FILES: dict[str, str] = {
    "BSP": "bsp_answers.json",
    "EDP": "edp_answers.json",
    "SPP": "spp_answers.json",
    "KSP": "ksp_answers.json",
    "TSP-D": "tsp_d_answers.json",
    "GCP-D": "gcp_d_answers.json",
    "TSP": "tsp_answers.json",
    "GCP": "gcp_answers.json",
}
LEVELS = range(1, 11)
PER_LEVEL = 10
_TOL = 1e-6


class PeerFormatError(ValueError):
    """A peer file does not have the documented format. The message is one line naming the file."""


class PeerRecord(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    task: TaskName
    level: int = Field(ge=1, le=10)
    peer_index: int = Field(ge=0)
    data: dict[str, Any]
    source_file: str
    meta: dict[str, Any] = Field(default_factory=dict)


class PeerRecords(list[PeerRecord]):
    """The records read by `read_peer`, plus the warnings (skipped task folders) it collected."""

    def __init__(self, records: Iterable[PeerRecord] = (), warnings: Iterable[str] = ()) -> None:
        super().__init__(records)
        self.warnings: list[str] = list(warnings)

    def by_task(self, task: str) -> list[PeerRecord]:
        return [r for r in self if r.task == task]


# --------------------------------------------------------------------------------------------------
# small checked accessors; `ctx` is the "file: item i" prefix of the error message


def _fail(ctx: str, msg: str) -> PeerFormatError:
    return PeerFormatError(f"{ctx}: {msg}".replace("\n", " "))


def _field(obj: Any, key: str, ctx: str) -> Any:
    if not isinstance(obj, dict):
        raise _fail(ctx, f"expected an object, got {type(obj).__name__}")
    if key not in obj:
        raise _fail(ctx, f"missing field {key!r}")
    return obj[key]


def _int(value: Any, ctx: str, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _fail(ctx, f"field {name!r}: expected an integer, got {value!r:.40}")
    if isinstance(value, float) and not value.is_integer():
        raise _fail(ctx, f"field {name!r}: expected an integer, got {value!r}")
    return int(value)


def _int_list(value: Any, ctx: str, name: str) -> list[int]:
    if not isinstance(value, list):
        raise _fail(ctx, f"field {name!r}: expected a list, got {type(value).__name__}")
    return [_int(v, ctx, f"{name}[{i}]") for i, v in enumerate(value)]


def _obj_list(value: Any, ctx: str, name: str) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        raise _fail(ctx, f"field {name!r}: expected a list, got {type(value).__name__}")
    for i, v in enumerate(value):
        if not isinstance(v, dict):
            raise _fail(ctx, f"field {name!r}[{i}]: expected an object, got {type(v).__name__}")
    return value


def _str(value: Any, ctx: str, name: str) -> str:
    if not isinstance(value, str):
        raise _fail(ctx, f"field {name!r}: expected a string, got {type(value).__name__}")
    return value


def _load_json(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise _fail(str(path), f"not UTF-8 text ({e.reason})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise _fail(str(path), f"line {e.lineno}: invalid JSON: {e.msg}") from None


def _validate(task: str, data: dict[str, Any], ctx: str) -> dict[str, Any]:
    """Validate against our data model; return its JSON-shaped dump (so `load` round-trips)."""
    try:
        model = get_task(task).load(data)
    except ValidationError as e:
        first = e.errors()[0]
        loc = ".".join(str(p) for p in first["loc"]) or "data"
        more = f" (+{e.error_count() - 1} more)" if e.error_count() > 1 else ""
        raise _fail(ctx, f"does not fit the {task} data model: {loc}: {first['msg']}{more}") from None
    return model.model_dump(mode="json")


# --------------------------------------------------------------------------------------------------
# JSON tasks: BSP, EDP, SPP, KSP, MSP


def _bsp(obj: Any, ctx: str) -> tuple[dict[str, Any], dict[str, Any]]:
    array = _int_list(_field(obj, "array", ctx), ctx, "array")
    target = _int(_field(obj, "target", ctx), ctx, "target")
    # The peer prompt passes sorted(array); the image shows the stored order (kept in meta).
    return {"array": sorted(array), "target": target}, {"peer_array": array}


def _edp(obj: Any, ctx: str) -> tuple[dict[str, Any], dict[str, Any]]:
    a = _str(_field(obj, "string_a", ctx), ctx, "string_a")
    b = _str(_field(obj, "string_b", ctx), ctx, "string_b")
    return {"string_a": a, "string_b": b}, {}


def _spp(obj: Any, ctx: str) -> tuple[dict[str, Any], dict[str, Any]]:
    nodes = _int_list(_field(obj, "nodes", ctx), ctx, "nodes")
    if nodes != list(range(len(nodes))):
        raise _fail(ctx, f"field 'nodes': expected 0..n-1, got {nodes!r:.60}")
    edges = []
    for j, e in enumerate(_obj_list(_field(obj, "edges", ctx), ctx, "edges")):
        ectx = f"{ctx}: edges[{j}]"
        edges.append(
            {
                "u": _int(_field(e, "from", ectx), ectx, "from"),
                "v": _int(_field(e, "to", ectx), ectx, "to"),
                "weight": _int(_field(e, "weight", ectx), ectx, "weight"),
            }
        )
    meta: dict[str, Any] = {}
    for key in ("complexity_level", "replace_pos"):  # replace_pos: 4V's 8 replaced instances
        if isinstance(obj, dict) and key in obj:
            meta[key] = _int(obj[key], ctx, key)
    data = {
        "num_nodes": len(nodes),
        "edges": edges,
        "start": nodes[0] if nodes else 0,
        "end": nodes[-1] if nodes else 0,
    }
    return data, meta


def _ksp(obj: Any, ctx: str) -> tuple[dict[str, Any], dict[str, Any]]:
    items = []
    for j, it in enumerate(_obj_list(_field(obj, "items", ctx), ctx, "items")):
        ictx = f"{ctx}: items[{j}]"
        items.append({k: _int(_field(it, k, ictx), ictx, k) for k in ("id", "weight", "value")})
    capacity = _int(_field(obj, "knapsack_capacity", ctx), ctx, "knapsack_capacity")
    return {"items": items, "capacity": capacity}, {}


def _msp(obj: Any, ctx: str) -> tuple[dict[str, Any], dict[str, Any]]:
    meetings = []
    for j, m in enumerate(_obj_list(_field(obj, "meetings", ctx), ctx, "meetings")):
        mctx = f"{ctx}: meetings[{j}]"
        meetings.append({k: _int(_field(m, k, mctx), mctx, k) for k in ("id", "duration")})
    raw = _field(obj, "participants", ctx)
    if not isinstance(raw, dict):
        raise _fail(
            ctx, f"field 'participants': expected an object keyed by participant id, got {type(raw).__name__}"
        )
    participants = []
    for pid, p in raw.items():
        pctx = f"{ctx}: participants[{pid!r}]"
        try:
            pid_int = int(pid)
        except ValueError:
            raise _fail(pctx, "participant id is not an integer") from None
        participants.append(
            {
                "id": pid_int,
                "available_slots": _int_list(_field(p, "available_slots", pctx), pctx, "available_slots"),
                "meetings": _int_list(_field(p, "meetings", pctx), pctx, "meetings"),
            }
        )
    participants.sort(key=lambda p: p["id"])
    num_slots = _int(_field(obj, "time_slots", ctx), ctx, "time_slots")
    meta: dict[str, Any] = {}
    if "complexity_level" in obj:
        meta["complexity_level"] = _int(obj["complexity_level"], ctx, "complexity_level")
    return {"num_slots": num_slots, "meetings": meetings, "participants": participants}, meta


_JSON_CONVERTERS = {"BSP": _bsp, "EDP": _edp, "SPP": _spp, "KSP": _ksp, "MSP": _msp}


def _read_json_task(task: str, folder: Path, base: Path, common_meta: dict[str, Any]) -> list[PeerRecord]:
    path = folder / JSON_FILES[task]
    if not path.is_file():
        raise _fail(str(path), "file missing")
    items = _load_json(path)
    if not isinstance(items, list):
        raise _fail(str(path), f"expected a JSON list, got {type(items).__name__}")
    if len(items) != PER_LEVEL * len(LEVELS):
        raise _fail(
            str(path), f"expected {PER_LEVEL * len(LEVELS)} instances (10 per level), found {len(items)}"
        )
    rel = path.relative_to(base).as_posix()
    out = []
    for i, obj in enumerate(items):
        ctx = f"{path}: item {i}"
        data, meta = _JSON_CONVERTERS[task](obj, ctx)
        out.append(
            PeerRecord(
                task=task,  # type: ignore[arg-type]
                level=i // PER_LEVEL + 1,
                peer_index=i,
                data=_validate(task, data, ctx),
                source_file=rel,
                meta={**common_meta, **meta},
            )
        )
    return out


# --------------------------------------------------------------------------------------------------
# file-per-level tasks: TSP / TSP-D (CSV per instance), GCP / GCP-D (DIMACS blocks per level)


def _level_of(numbers: set[int], where: Path) -> int:
    """Offset turning file level numbers into levels 1..10: 0..9 (4V, V0) -> +1, 1..10 (V1, V2) -> 0."""
    if numbers == set(range(10)):
        return 1
    if numbers == set(LEVELS):
        return 0
    raise _fail(str(where), f"file level numbers {sorted(numbers)} are neither 0..9 nor 1..10")


def _csv_rows(path: Path) -> list[tuple[int, list[str]]]:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise _fail(str(path), f"not UTF-8 text ({e.reason})") from None
    rows = [(n, row) for n, row in enumerate(csv.reader(io.StringIO(text)), start=1)]
    while rows and not any(c.strip() for c in rows[-1][1]):
        rows.pop()
    for n, row in rows:
        if not any(c.strip() for c in row):
            raise _fail(str(path), f"line {n}: empty line inside the data")
    if not rows:
        raise _fail(str(path), "empty file")
    return rows


def _float_cell(cell: str, path: Path, line: int, col: int) -> float:
    try:
        x = float(cell)
    except ValueError:
        raise _fail(str(path), f"line {line}: column {col + 1}: not a number: {cell!r:.30}") from None
    if not math.isfinite(x):
        raise _fail(str(path), f"line {line}: column {col + 1}: not a finite number: {cell!r:.30}")
    return x


def _read_matrix(path: Path, with_threshold: bool) -> tuple[list[list[float]], float | None]:
    rows = [(n, [_float_cell(c, path, n, j) for j, c in enumerate(r)]) for n, r in _csv_rows(path)]
    n = len(rows[0][1])
    expected = n + 1 if with_threshold else n
    if len(rows) != expected:
        what = "n matrix rows + 1 threshold row" if with_threshold else "an n x n matrix"
        raise _fail(str(path), f"expected {what} with n={n}, found {len(rows)} rows")
    for line, row in rows:
        if len(row) != n:
            raise _fail(str(path), f"line {line}: expected {n} values, found {len(row)}")
    threshold = None
    if with_threshold:
        line, last = rows.pop()
        if any(x != last[0] for x in last):
            raise _fail(str(path), f"line {line}: threshold row holds different values")
        threshold = last[0]
    return [r for _, r in rows], threshold


def _read_coords(path: Path, n: int) -> list[list[int]]:
    coords = []
    for line, row in _csv_rows(path):
        if len(row) != 2:
            raise _fail(str(path), f"line {line}: expected 'x,y', found {len(row)} values")
        xy = [_float_cell(c, path, line, j) for j, c in enumerate(row)]
        if not all(v.is_integer() for v in xy):
            raise _fail(str(path), f"line {line}: coordinates are not integers")
        coords.append([int(v) for v in xy])
    if len(coords) != n:
        raise _fail(str(path), f"expected {n} coordinate rows (one per city), found {len(coords)}")
    return coords


_TSP_NAME = {
    "TSP": (re.compile(r"^synthesized_data_TSP_level_(\d+)_instance_(\d+)\.csv$"), "_positions.csv"),
    "TSP-D": (re.compile(r"^decision_data_TSP_level_(\d+)_instance_(\d+)\.csv$"), "_locations.csv"),
}


def _read_tsp_task(task: str, folder: Path, base: Path, common_meta: dict[str, Any]) -> list[PeerRecord]:
    pattern, coord_suffix = _TSP_NAME[task]
    found: dict[tuple[int, int], Path] = {}
    for p in folder.iterdir():
        m = pattern.match(p.name)
        if m:
            found[(int(m.group(1)), int(m.group(2)))] = p
    if not found:
        raise _fail(str(folder), f"no {pattern.pattern} files")
    offset = _level_of({k for k, _ in found}, folder)
    per_level: dict[int, list[int]] = defaultdict(list)
    for k, j in found:
        per_level[k].append(j)
    expected = max(max(js) for js in per_level.values())  # instances are numbered 1..m in every level
    for k in sorted(per_level):
        missing = sorted(set(range(1, expected + 1)) - set(per_level[k]))
        if missing:
            raise _fail(
                str(folder), f"level {k}: instance file(s) {missing} missing (others have 1..{expected})"
            )
    out = []
    for idx, (k, j) in enumerate(sorted(found)):
        path = found[(k, j)]
        matrix, threshold = _read_matrix(path, with_threshold=task == "TSP-D")
        coord_path = path.with_name(path.name[: -len(".csv")] + coord_suffix)
        coords = _read_coords(coord_path, len(matrix)) if coord_path.is_file() else None
        data: dict[str, Any] = {"num_cities": len(matrix), "distances": matrix, "coords": coords}
        if threshold is not None:
            data["threshold"] = threshold
        meta = {**common_meta, "file_level": k, "instance": j}
        if coords is not None:
            meta["coords_file"] = coord_path.relative_to(base).as_posix()
        out.append(
            PeerRecord(
                task=task,  # type: ignore[arg-type]
                level=k + offset,
                peer_index=idx,
                data=_validate(task, data, str(path)),
                source_file=path.relative_to(base).as_posix(),
                meta=meta,
            )
        )
    return out


_GCP_NAME = {
    "GCP": re.compile(r"^synthesized_data_GCP_(\d+)\.txt$"),
    "GCP-D": re.compile(r"^decision_data_GCP_(\d+)\.txt$"),
}
_CHI_COMMENT = re.compile(r"chromatic number\s+(\d+)", re.IGNORECASE)
_K_COMMENT = re.compile(r"colou?red with\s+(\d+)\s+colou?rs", re.IGNORECASE)


def _dimacs_blocks(path: Path) -> list[tuple[int, list[tuple[int, str]]]]:
    """Blank-line separated blocks of (line number, stripped line); each block tagged by its first line."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise _fail(str(path), f"not UTF-8 text ({e.reason})") from None
    blocks: list[tuple[int, list[tuple[int, str]]]] = []
    current: list[tuple[int, str]] = []
    for n, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            if current:
                blocks.append((current[0][0], current))
                current = []
            continue
        current.append((n, line))
    if current:
        blocks.append((current[0][0], current))
    return blocks


def _parse_dimacs_block(
    task: str, path: Path, lines: list[tuple[int, str]]
) -> tuple[dict[str, Any], dict[str, Any]]:
    comments: list[str] = []
    header: tuple[int, int] | None = None
    edges: list[tuple[int, int]] = []
    for n, line in lines:
        parts = line.split()
        if parts[0] == "c":
            comments.append(line[1:].strip())
        elif parts[0] == "p":
            if header is not None:
                raise _fail(str(path), f"line {n}: second 'p' line in one graph")
            if len(parts) != 4 or parts[1] != "edge" or not (parts[2].isdigit() and parts[3].isdigit()):
                raise _fail(str(path), f"line {n}: expected 'p edge N M', got {line!r:.40}")
            header = (int(parts[2]), int(parts[3]))
        elif parts[0] == "e":
            if header is None:
                raise _fail(str(path), f"line {n}: edge before the 'p edge N M' line")
            if len(parts) != 3 or not (parts[1].isdigit() and parts[2].isdigit()):
                raise _fail(str(path), f"line {n}: expected 'e u v', got {line!r:.40}")
            u, v = int(parts[1]), int(parts[2])
            if not (1 <= u <= header[0] and 1 <= v <= header[0]):
                raise _fail(str(path), f"line {n}: vertex out of range 1..{header[0]}: {line!r:.40}")
            if u == v:
                raise _fail(str(path), f"line {n}: self-loop {line!r:.40}")
            edges.append((u, v))
        else:
            raise _fail(str(path), f"line {n}: unknown line type {line!r:.40}")
    first = lines[0][0]
    if header is None:
        raise _fail(str(path), f"line {first}: graph without a 'p edge N M' line")
    if header[1] != len(edges):
        raise _fail(str(path), f"line {first}: 'p' line announces {header[1]} edges, found {len(edges)}")
    norm = sorted({(min(u, v), max(u, v)) for u, v in edges})
    meta: dict[str, Any] = {"duplicate_edges": len(edges) - len(norm)} if len(norm) != len(edges) else {}
    text = " ".join(comments)
    data: dict[str, Any] = {"num_vertices": header[0], "edges": [list(e) for e in norm]}
    chi = _CHI_COMMENT.search(text)
    if chi:
        meta["peer_chromatic_number"] = int(chi.group(1))
        if task == "GCP":
            # The papers' GCP prompt allows exactly the file's chromatic number of colours.
            data["k"] = int(chi.group(1))
    if task == "GCP-D":
        k = _K_COMMENT.search(text)
        if not k:
            raise _fail(str(path), f"line {first}: no 'can be colored with K colors' comment")
        data["k"] = int(k.group(1))
    return data, meta


def _read_gcp_task(task: str, folder: Path, base: Path, common_meta: dict[str, Any]) -> list[PeerRecord]:
    pattern = _GCP_NAME[task]
    found: dict[int, Path] = {}
    for p in folder.iterdir():
        m = pattern.match(p.name)
        if m:
            found[int(m.group(1))] = p
    if not found:
        raise _fail(str(folder), f"no {pattern.pattern} files")
    offset = _level_of(set(found), folder)
    out = []
    for k in sorted(found):
        path = found[k]
        blocks = _dimacs_blocks(path)
        if len(blocks) != PER_LEVEL:
            raise _fail(str(path), f"expected {PER_LEVEL} graphs, found {len(blocks)}")
        for j, (first, lines) in enumerate(blocks):
            data, meta = _parse_dimacs_block(task, path, lines)
            out.append(
                PeerRecord(
                    task=task,  # type: ignore[arg-type]
                    level=k + offset,
                    peer_index=len(out),
                    data=_validate(task, data, f"{path}: line {first}"),
                    source_file=path.relative_to(base).as_posix(),
                    meta={**common_meta, **meta, "file_level": k, "instance": j + 1, "line": first},
                )
            )
    return out


# --------------------------------------------------------------------------------------------------


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
            out.extend(_read_json_task(task, folder, base, common_meta))
        elif task in ("TSP", "TSP-D"):
            out.extend(_read_tsp_task(task, folder, base, common_meta))
        else:
            out.extend(_read_gcp_task(task, folder, base, common_meta))
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
        items = _load_json(path)
        if not isinstance(items, list):
            raise _fail(str(path), f"expected a JSON list, got {type(items).__name__}")
        for i, a in enumerate(items):
            if not isinstance(a, dict):
                raise _fail(str(path), f"item {i}: expected an object, got {type(a).__name__}")
        out[task] = items
    return out


# --------------------------------------------------------------------------------------------------
# comparison of our exact solvers with the peer answers files


def _num(x: Any) -> float | None:
    if isinstance(x, bool):
        return float(x)
    if isinstance(x, int | float) and math.isfinite(x):
        return float(x)
    return None


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= _TOL * max(1.0, abs(a), abs(b))


def _decision(gold_answer: dict[str, Any]) -> bool | None:
    for key, val in gold_answer.items():
        if key.lower() == "feasible":
            return as_yes_no(val)
    return None


def _row(rec: PeerRecord, theirs: Any, ours: Any, status: CompareStatus, note: str = "") -> dict[str, Any]:
    return {
        "task": rec.task,
        "level": rec.level,
        "peer_index": rec.peer_index,
        "theirs": _num(theirs),
        "ours": _num(ours),
        "status": status,
        "note": note,
        "their_tour": None,
        "our_tour": None,
    }


def _cmp_value(rec: PeerRecord, theirs: Any, ours: float | None) -> dict[str, Any]:
    if theirs is None and ours is None:
        return _row(rec, None, None, "equal", "no path")
    t = _num(theirs)
    if t is None and theirs is not None:
        return _row(rec, None, ours, "theirs_not_comparable", f"their value {theirs!r:.30} is not a number")
    if t is not None and ours is not None and _close(t, ours):
        return _row(rec, t, ours, "equal")
    return _row(rec, t, ours, "MISMATCH", "exact task: values differ")


def _cmp_bsp(rec: PeerRecord, ans: dict[str, Any]) -> dict[str, Any]:
    ours = get_task("BSP").solve(get_task("BSP").load(rec.data)).value
    theirs = ans.get("Position")
    row = _cmp_value(rec, theirs, ours)
    if row["status"] == "MISMATCH" and isinstance(theirs, int) and 0 <= theirs < len(rec.data["array"]):
        if rec.data["array"][theirs] == rec.data["target"]:  # duplicates: another index of the target
            row.update(status="equal", note="different index of a duplicated target")
    return row


def _cmp_simple(key: str) -> Any:
    def cmp(rec: PeerRecord, ans: dict[str, Any]) -> dict[str, Any]:
        spec = get_task(rec.task)
        if key not in ans:
            return _row(rec, None, None, "theirs_not_comparable", f"answer lacks {key!r}")
        return _cmp_value(rec, ans[key], spec.solve(spec.load(rec.data)).value)

    return cmp


def _coloring_problem(edges: list[list[int]], coloring: Any) -> str | None:
    """Why `coloring` ({"v": colour}) is not a proper colouring of the edges, or None."""
    if not isinstance(coloring, dict):
        return "no coloring"
    col = {str(k): v for k, v in coloring.items()}
    for u, v in edges:
        if str(u) not in col or str(v) not in col:
            return f"vertex {u if str(u) not in col else v} uncoloured"
        if col[str(u)] == col[str(v)]:
            return f"edge {u}-{v} monochromatic"
    return None


def _chi(rec: PeerRecord) -> float | None:
    spec = get_task("GCP")
    data = {"num_vertices": rec.data["num_vertices"], "edges": rec.data["edges"]}
    return spec.solve(spec.load(data)).value


def _cmp_gcp(rec: PeerRecord, ans: dict[str, Any]) -> dict[str, Any]:
    theirs = _num(ans.get("num_colors"))
    if theirs is None:
        return _row(rec, None, None, "theirs_not_comparable", "answer lacks num_colors")
    problem = _coloring_problem(rec.data["edges"], ans.get("coloring"))
    ours = _chi(rec)
    if problem:
        return _row(rec, theirs, ours, "theirs_not_comparable", f"their coloring invalid: {problem}")
    used = len(set(ans["coloring"].values()))
    if ours is None:
        return _row(rec, theirs, ours, "MISMATCH", "our gold has no value")
    if _close(theirs, ours):
        return _row(rec, theirs, ours, "equal")
    if ours < theirs:
        return _row(rec, theirs, ours, "ours_better", f"greedy uses {used} colours, chi = {ours:g}")
    return _row(rec, theirs, ours, "MISMATCH", f"their valid coloring uses {used} < our chi {ours:g}")


def _cmp_gcpd(rec: PeerRecord, ans: dict[str, Any]) -> dict[str, Any]:
    spec = get_task("GCP-D")
    ours = _decision(spec.solve(spec.load(rec.data)).answer)
    theirs = as_yes_no(ans.get("Feasible"))
    if theirs is None or ours is None:
        return _row(
            rec,
            theirs,
            ours,
            "theirs_not_comparable" if ours is not None else "MISMATCH",
            "no yes/no decision" + (" in their answer" if ours is not None else " in our gold"),
        )
    if theirs == ours:
        return _row(rec, theirs, ours, "equal")
    k = rec.data["k"]
    nc = _num(ans.get("num_colors"))
    if not theirs:
        if nc is not None and nc > k:
            return _row(
                rec, theirs, ours, "ours_better", f"greedy used {nc:g} colours > k={k}; chi = {_chi(rec):g}"
            )
        return _row(rec, theirs, ours, "theirs_not_comparable", f"they say NO with num_colors={nc} <= k={k}")
    problem = _coloring_problem(rec.data["edges"], ans.get("coloring"))
    if problem:
        return _row(rec, theirs, ours, "theirs_not_comparable", f"they say YES, coloring invalid: {problem}")
    return _row(rec, theirs, ours, "MISMATCH", f"their valid coloring fits k={k}, we say NO")


def _tour_problem(rec: PeerRecord, path: Any, total: Any) -> tuple[str | None, float | None]:
    """(why their Path is not a Hamiltonian cycle of this matrix with length TotalDistance, its length)."""
    n = rec.data["num_cities"]
    dist = rec.data["distances"]
    if not isinstance(path, list) or not all(isinstance(c, int) and not isinstance(c, bool) for c in path):
        return "Path is not a list of city ids", None
    if not path or path[0] != path[-1]:
        return "Path is not closed", None
    if any(not 0 <= c < n for c in path):
        return f"Path uses cities outside 0..{n - 1}", None
    if len(path) != n + 1 or set(path[:-1]) != set(range(n)):
        return "Path is a walk revisiting cities, not a tour", None
    length = sum(dist[a][b] for a, b in zip(path, path[1:], strict=False))
    t = _num(total)
    if t is None or not (_close(length, t) or abs(length - t) <= 0.01 * n):
        return f"Path length {length:g} != TotalDistance {total} (answer does not match this matrix)", None
    return None, length


def _tsp_optimum(rec: PeerRecord) -> float | None:
    spec = get_task("TSP")
    data = {k: rec.data[k] for k in ("num_cities", "distances", "coords")}
    return spec.solve(spec.load(data)).value


def _cmp_tsp(rec: PeerRecord, ans: dict[str, Any]) -> dict[str, Any]:
    problem, length = _tour_problem(rec, ans.get("Path"), ans.get("TotalDistance"))
    if problem or length is None:
        return _row(rec, ans.get("TotalDistance"), None, "theirs_not_comparable", problem or "")
    ours = _tsp_optimum(rec)
    if ours is None:
        row = _row(rec, length, None, "MISMATCH", "our gold has no value")
    elif _close(length, ours):
        row = _row(rec, length, ours, "equal")
    elif ours < length:
        row = _row(rec, length, ours, "ours_better", "their tour is not optimal")
    else:
        row = _row(rec, length, ours, "MISMATCH", "their Hamiltonian tour is shorter than our optimum")
    row.update(their_tour=length, our_tour=ours)
    return row


def _cmp_tspd(rec: PeerRecord, ans: dict[str, Any]) -> dict[str, Any]:
    spec = get_task("TSP-D")
    ours = _decision(spec.solve(spec.load(rec.data)).answer)
    theirs = as_yes_no(ans.get("Feasible"))
    if ours is None:
        return _row(rec, theirs, None, "MISMATCH", "no yes/no decision in our gold")
    if theirs is None:
        return _row(rec, None, ours, "theirs_not_comparable", "no yes/no decision in their answer")
    threshold = rec.data["threshold"]
    problem, length = _tour_problem(rec, ans.get("Path"), ans.get("TotalDistance"))
    opt = None
    if length is not None:  # their tour is a real Hamiltonian cycle: it bounds our optimum from above
        opt = _tsp_optimum(rec)
    row = _tspd_status(rec, theirs, ours, threshold, problem, length, opt, _num(ans.get("TotalDistance")))
    row.update(their_tour=length, our_tour=opt)
    return row


def _tspd_status(
    rec: PeerRecord,
    theirs: bool,
    ours: bool,
    threshold: float,
    problem: str | None,
    length: float | None,
    opt: float | None,
    total: float | None,
) -> dict[str, Any]:
    note = problem or ""
    if length is not None:
        if opt is None:
            return _row(rec, theirs, ours, "MISMATCH", "our TSP gold has no value")
        note = f"their tour {length:g}, our optimum {opt:g}, threshold {threshold:g}"
        if opt > length + _TOL * max(1.0, length):
            return _row(rec, theirs, ours, "MISMATCH", note + ": our optimum is worse than their tour")
        if length <= threshold and not ours:
            return _row(rec, theirs, ours, "MISMATCH", note + ": their tour fits the threshold, we say NO")
    if theirs == ours:
        return _row(rec, theirs, ours, "equal", note)
    if not theirs and total is not None and total > threshold:
        note = f"their approximate tour {total:g} > threshold {threshold:g}"
        return _row(rec, theirs, ours, "ours_better", note)
    return _row(rec, theirs, ours, "MISMATCH", note or "decisions differ")


_COMPARERS = {
    "BSP": _cmp_bsp,
    "EDP": _cmp_simple("Operations"),
    "SPP": _cmp_simple("TotalDistance"),
    "KSP": _cmp_simple("TotalValue"),
    "GCP": _cmp_gcp,
    "GCP-D": _cmp_gcpd,
    "TSP": _cmp_tsp,
    "TSP-D": _cmp_tspd,
}


def _answers_by_level(answers: list[dict[str, Any]]) -> dict[int, list[dict[str, Any]]]:
    by_level: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for i, a in enumerate(answers):
        lvl = a.get("level")
        by_level[lvl if isinstance(lvl, int) and not isinstance(lvl, bool) else i // PER_LEVEL + 1].append(a)
    return by_level


def compare_with_answers(
    records: Iterable[PeerRecord], answers: dict[str, list[dict[str, Any]]]
) -> list[dict[str, Any]]:
    """One row per instance of every task that has an answers file: {task, level, peer_index, theirs,
    ours, status, note}. Answers are paired with records by level, then position within the level.

    status: "equal"; "ours_better" (fewer colours, shorter tour, or their greedy/approximate decision is
    wrong); "theirs_not_comparable" (their TSP walk revisits cities or does not match the matrix, invalid
    colouring, no answer for the instance); "MISMATCH" (their answer beats our exact solver, or differs on
    an exact task: a bug on our side). Records must come from one version (one record per task/index).
    """
    by_task: dict[str, list[PeerRecord]] = defaultdict(list)
    for r in records:
        by_task[r.task].append(r)
    rows: list[dict[str, Any]] = []
    for task in TASK_FOLDERS:
        if task not in answers or task not in by_task:
            continue
        recs = sorted(by_task[task], key=lambda r: r.peer_index)
        if len({r.peer_index for r in recs}) != len(recs):
            raise ValueError(f"{task}: duplicate peer_index; pass the records of a single version")
        ans_by_level = _answers_by_level(answers[task])
        recs_by_level: dict[int, list[PeerRecord]] = defaultdict(list)
        for r in recs:
            recs_by_level[r.level].append(r)
        for level, level_recs in sorted(recs_by_level.items()):
            level_ans = ans_by_level.get(level, [])
            for j, rec in enumerate(level_recs):
                if j >= len(level_ans):
                    rows.append(
                        _row(
                            rec,
                            None,
                            None,
                            "theirs_not_comparable",
                            f"no answer (answers file has {len(level_ans)} for level {level})",
                        )
                    )
                    continue
                rows.append(_COMPARERS[task](rec, level_ans[j]))
    return rows


def comparison_frame(rows: list[dict[str, Any]]) -> Any:
    """The rows of `compare_with_answers` as a polars DataFrame with a fixed schema."""
    import polars as pl

    schema = {
        "task": pl.String,
        "level": pl.Int64,
        "peer_index": pl.Int64,
        "theirs": pl.Float64,
        "ours": pl.Float64,
        "status": pl.String,
        "note": pl.String,
        "their_tour": pl.Float64,
        "our_tour": pl.Float64,
    }
    return pl.DataFrame(rows, schema=schema)


def summarize(rows: list[dict[str, Any]]) -> Any:
    """Counts per task and status as a polars DataFrame (one column per status)."""
    import polars as pl

    statuses = ["equal", "ours_better", "theirs_not_comparable", "MISMATCH"]
    order = {t: i for i, t in enumerate(TASK_FOLDERS)}
    counts: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(statuses, 0))
    for r in rows:
        counts[r["task"]][r["status"]] += 1
    table = [
        {"task": t, **c, "total": sum(c.values())}
        for t, c in sorted(counts.items(), key=lambda x: order[x[0]])
    ]
    schema = {"task": pl.String, **{s: pl.Int64 for s in statuses}, "total": pl.Int64}
    return pl.DataFrame(table, schema=schema)
