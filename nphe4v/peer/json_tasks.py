"""The JSON tasks (BSP, EDP, SPP, KSP, MSP): one file of instances per task, converted to our data models."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nphe4v.peer.fields import (
    format_error,
    int_field,
    int_list_field,
    load_json,
    obj_list_field,
    required_field,
    str_field,
    validate,
)
from nphe4v.peer.formats import JSON_FILES, LEVELS, PER_LEVEL, PeerRecord


def _bsp(obj: Any, ctx: str) -> tuple[dict[str, Any], dict[str, Any]]:
    array = int_list_field(required_field(obj, "array", ctx), ctx, "array")
    target = int_field(required_field(obj, "target", ctx), ctx, "target")
    # The peer prompt passes sorted(array); the image shows the stored order (kept in meta).
    return {"array": sorted(array), "target": target}, {"peer_array": array}


def _edp(obj: Any, ctx: str) -> tuple[dict[str, Any], dict[str, Any]]:
    a = str_field(required_field(obj, "string_a", ctx), ctx, "string_a")
    b = str_field(required_field(obj, "string_b", ctx), ctx, "string_b")
    return {"string_a": a, "string_b": b}, {}


def _spp(obj: Any, ctx: str) -> tuple[dict[str, Any], dict[str, Any]]:
    nodes = int_list_field(required_field(obj, "nodes", ctx), ctx, "nodes")
    if nodes != list(range(len(nodes))):
        raise format_error(ctx, f"field 'nodes': expected 0..n-1, got {nodes!r:.60}")
    edges = []
    for j, e in enumerate(obj_list_field(required_field(obj, "edges", ctx), ctx, "edges")):
        ectx = f"{ctx}: edges[{j}]"
        edges.append(
            {
                "u": int_field(required_field(e, "from", ectx), ectx, "from"),
                "v": int_field(required_field(e, "to", ectx), ectx, "to"),
                "weight": int_field(required_field(e, "weight", ectx), ectx, "weight"),
            }
        )
    meta: dict[str, Any] = {}
    for key in ("complexity_level", "replace_pos"):  # replace_pos: 4V's 8 replaced instances
        if isinstance(obj, dict) and key in obj:
            meta[key] = int_field(obj[key], ctx, key)
    data = {
        "num_nodes": len(nodes),
        "edges": edges,
        "start": nodes[0] if nodes else 0,
        "end": nodes[-1] if nodes else 0,
    }
    return data, meta


def _ksp(obj: Any, ctx: str) -> tuple[dict[str, Any], dict[str, Any]]:
    items = []
    for j, it in enumerate(obj_list_field(required_field(obj, "items", ctx), ctx, "items")):
        ictx = f"{ctx}: items[{j}]"
        items.append({k: int_field(required_field(it, k, ictx), ictx, k) for k in ("id", "weight", "value")})
    capacity = int_field(required_field(obj, "knapsack_capacity", ctx), ctx, "knapsack_capacity")
    return {"items": items, "capacity": capacity}, {}


def _msp(obj: Any, ctx: str) -> tuple[dict[str, Any], dict[str, Any]]:
    meetings = []
    for j, m in enumerate(obj_list_field(required_field(obj, "meetings", ctx), ctx, "meetings")):
        mctx = f"{ctx}: meetings[{j}]"
        meetings.append({k: int_field(required_field(m, k, mctx), mctx, k) for k in ("id", "duration")})
    raw = required_field(obj, "participants", ctx)
    if not isinstance(raw, dict):
        raise format_error(
            ctx, f"field 'participants': expected an object keyed by participant id, got {type(raw).__name__}"
        )
    participants = []
    for pid, p in raw.items():
        pctx = f"{ctx}: participants[{pid!r}]"
        try:
            pid_int = int(pid)
        except ValueError:
            raise format_error(pctx, "participant id is not an integer") from None
        participants.append(
            {
                "id": pid_int,
                "available_slots": int_list_field(required_field(p, "available_slots", pctx), pctx, "available_slots"),
                "meetings": int_list_field(required_field(p, "meetings", pctx), pctx, "meetings"),
            }
        )
    participants.sort(key=lambda p: p["id"])
    num_slots = int_field(required_field(obj, "time_slots", ctx), ctx, "time_slots")
    meta: dict[str, Any] = {}
    if "complexity_level" in obj:
        meta["complexity_level"] = int_field(obj["complexity_level"], ctx, "complexity_level")
    return {"num_slots": num_slots, "meetings": meetings, "participants": participants}, meta


_JSON_CONVERTERS = {"BSP": _bsp, "EDP": _edp, "SPP": _spp, "KSP": _ksp, "MSP": _msp}


def read_json_task(task: str, folder: Path, base: Path, common_meta: dict[str, Any]) -> list[PeerRecord]:
    path = folder / JSON_FILES[task]
    if not path.is_file():
        raise format_error(str(path), "file missing")
    items = load_json(path)
    if not isinstance(items, list):
        raise format_error(str(path), f"expected a JSON list, got {type(items).__name__}")
    if len(items) != PER_LEVEL * len(LEVELS):
        raise format_error(
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
                data=validate(task, data, ctx),
                source_file=rel,
                meta={**common_meta, **meta},
            )
        )
    return out
