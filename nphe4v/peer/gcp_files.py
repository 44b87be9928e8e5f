"""GCP / GCP-D: DIMACS blocks, one file per level."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from nphe4v.peer.fields import format_error, level_of, validate
from nphe4v.peer.formats import PER_LEVEL, PeerRecord

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
        raise format_error(str(path), f"not UTF-8 text ({e.reason})") from None
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
                raise format_error(str(path), f"line {n}: second 'p' line in one graph")
            if len(parts) != 4 or parts[1] != "edge" or not (parts[2].isdigit() and parts[3].isdigit()):
                raise format_error(str(path), f"line {n}: expected 'p edge N M', got {line!r:.40}")
            header = (int(parts[2]), int(parts[3]))
        elif parts[0] == "e":
            if header is None:
                raise format_error(str(path), f"line {n}: edge before the 'p edge N M' line")
            if len(parts) != 3 or not (parts[1].isdigit() and parts[2].isdigit()):
                raise format_error(str(path), f"line {n}: expected 'e u v', got {line!r:.40}")
            u, v = int(parts[1]), int(parts[2])
            if not (1 <= u <= header[0] and 1 <= v <= header[0]):
                raise format_error(str(path), f"line {n}: vertex out of range 1..{header[0]}: {line!r:.40}")
            if u == v:
                raise format_error(str(path), f"line {n}: self-loop {line!r:.40}")
            edges.append((u, v))
        else:
            raise format_error(str(path), f"line {n}: unknown line type {line!r:.40}")
    first = lines[0][0]
    if header is None:
        raise format_error(str(path), f"line {first}: graph without a 'p edge N M' line")
    if header[1] != len(edges):
        raise format_error(str(path), f"line {first}: 'p' line announces {header[1]} edges, found {len(edges)}")
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
            raise format_error(str(path), f"line {first}: no 'can be colored with K colors' comment")
        data["k"] = int(k.group(1))
    return data, meta


def read_gcp_task(task: str, folder: Path, base: Path, common_meta: dict[str, Any]) -> list[PeerRecord]:
    pattern = _GCP_NAME[task]
    found: dict[int, Path] = {}
    for p in folder.iterdir():
        m = pattern.match(p.name)
        if m:
            found[int(m.group(1))] = p
    if not found:
        raise format_error(str(folder), f"no {pattern.pattern} files")
    offset = level_of(set(found), folder)
    out = []
    for k in sorted(found):
        path = found[k]
        blocks = _dimacs_blocks(path)
        if len(blocks) != PER_LEVEL:
            raise format_error(str(path), f"expected {PER_LEVEL} graphs, found {len(blocks)}")
        for j, (first, lines) in enumerate(blocks):
            data, meta = _parse_dimacs_block(task, path, lines)
            out.append(
                PeerRecord(
                    task=task,  # type: ignore[arg-type]
                    level=k + offset,
                    peer_index=len(out),
                    data=validate(task, data, f"{path}: line {first}"),
                    source_file=path.relative_to(base).as_posix(),
                    meta={**common_meta, **meta, "file_level": k, "instance": j + 1, "line": first},
                )
            )
    return out
