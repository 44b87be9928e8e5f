"""TSP / TSP-D: one CSV per instance (distance matrix or coordinates), file names giving level and number."""

from __future__ import annotations

import csv
import io
import math
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

from nphe4v.peer.fields import format_error, level_of, validate
from nphe4v.peer.formats import PeerRecord


def _csv_rows(path: Path) -> list[tuple[int, list[str]]]:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise format_error(str(path), f"not UTF-8 text ({e.reason})") from None
    rows = [(n, row) for n, row in enumerate(csv.reader(io.StringIO(text)), start=1)]
    while rows and not any(c.strip() for c in rows[-1][1]):
        rows.pop()
    for n, row in rows:
        if not any(c.strip() for c in row):
            raise format_error(str(path), f"line {n}: empty line inside the data")
    if not rows:
        raise format_error(str(path), "empty file")
    return rows


def _float_cell(cell: str, path: Path, line: int, col: int) -> float:
    try:
        x = float(cell)
    except ValueError:
        raise format_error(str(path), f"line {line}: column {col + 1}: not a number: {cell!r:.30}") from None
    if not math.isfinite(x):
        raise format_error(str(path), f"line {line}: column {col + 1}: not a finite number: {cell!r:.30}")
    return x


def _read_matrix(path: Path, with_threshold: bool) -> tuple[list[list[float]], float | None]:
    rows = [(n, [_float_cell(c, path, n, j) for j, c in enumerate(r)]) for n, r in _csv_rows(path)]
    n = len(rows[0][1])
    expected = n + 1 if with_threshold else n
    if len(rows) != expected:
        what = "n matrix rows + 1 threshold row" if with_threshold else "an n x n matrix"
        raise format_error(str(path), f"expected {what} with n={n}, found {len(rows)} rows")
    for line, row in rows:
        if len(row) != n:
            raise format_error(str(path), f"line {line}: expected {n} values, found {len(row)}")
    threshold = None
    if with_threshold:
        line, last = rows.pop()
        if any(x != last[0] for x in last):
            raise format_error(str(path), f"line {line}: threshold row holds different values")
        threshold = last[0]
    return [r for _, r in rows], threshold


def _read_coords(path: Path, n: int) -> list[list[int]]:
    coords = []
    for line, row in _csv_rows(path):
        if len(row) != 2:
            raise format_error(str(path), f"line {line}: expected 'x,y', found {len(row)} values")
        xy = [_float_cell(c, path, line, j) for j, c in enumerate(row)]
        if not all(v.is_integer() for v in xy):
            raise format_error(str(path), f"line {line}: coordinates are not integers")
        coords.append([int(v) for v in xy])
    if len(coords) != n:
        raise format_error(str(path), f"expected {n} coordinate rows (one per city), found {len(coords)}")
    return coords


_TSP_NAME = {
    "TSP": (re.compile(r"^synthesized_data_TSP_level_(\d+)_instance_(\d+)\.csv$"), "_positions.csv"),
    "TSP-D": (re.compile(r"^decision_data_TSP_level_(\d+)_instance_(\d+)\.csv$"), "_locations.csv"),
}


def read_tsp_task(task: str, folder: Path, base: Path, common_meta: dict[str, Any]) -> list[PeerRecord]:
    pattern, coord_suffix = _TSP_NAME[task]
    found: dict[tuple[int, int], Path] = {}
    for p in folder.iterdir():
        m = pattern.match(p.name)
        if m:
            found[(int(m.group(1)), int(m.group(2)))] = p
    if not found:
        raise format_error(str(folder), f"no {pattern.pattern} files")
    offset = level_of({k for k, _ in found}, folder)
    per_level: dict[int, list[int]] = defaultdict(list)
    for k, j in found:
        per_level[k].append(j)
    expected = max(max(js) for js in per_level.values())  # instances are numbered 1..m in every level
    for k in sorted(per_level):
        missing = sorted(set(range(1, expected + 1)) - set(per_level[k]))
        if missing:
            raise format_error(
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
                data=validate(task, data, str(path)),
                source_file=path.relative_to(base).as_posix(),
                meta=meta,
            )
        )
    return out
