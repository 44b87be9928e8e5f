"""Checked accessors for peer files: each failure is a `PeerFormatError` naming the file and item (`ctx`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from nphe4v.peer.formats import LEVELS, PeerFormatError
from nphe4v.tasks import get_task


def format_error(ctx: str, msg: str) -> PeerFormatError:
    return PeerFormatError(f"{ctx}: {msg}".replace("\n", " "))


def required_field(obj: Any, key: str, ctx: str) -> Any:
    if not isinstance(obj, dict):
        raise format_error(ctx, f"expected an object, got {type(obj).__name__}")
    if key not in obj:
        raise format_error(ctx, f"missing field {key!r}")
    return obj[key]


def int_field(value: Any, ctx: str, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise format_error(ctx, f"field {name!r}: expected an integer, got {value!r:.40}")
    if isinstance(value, float) and not value.is_integer():
        raise format_error(ctx, f"field {name!r}: expected an integer, got {value!r}")
    return int(value)


def int_list_field(value: Any, ctx: str, name: str) -> list[int]:
    if not isinstance(value, list):
        raise format_error(ctx, f"field {name!r}: expected a list, got {type(value).__name__}")
    return [int_field(v, ctx, f"{name}[{i}]") for i, v in enumerate(value)]


def obj_list_field(value: Any, ctx: str, name: str) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        raise format_error(ctx, f"field {name!r}: expected a list, got {type(value).__name__}")
    for i, v in enumerate(value):
        if not isinstance(v, dict):
            raise format_error(ctx, f"field {name!r}[{i}]: expected an object, got {type(v).__name__}")
    return value


def str_field(value: Any, ctx: str, name: str) -> str:
    if not isinstance(value, str):
        raise format_error(ctx, f"field {name!r}: expected a string, got {type(value).__name__}")
    return value


def load_json(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise format_error(str(path), f"not UTF-8 text ({e.reason})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise format_error(str(path), f"line {e.lineno}: invalid JSON: {e.msg}") from None


def validate(task: str, data: dict[str, Any], ctx: str) -> dict[str, Any]:
    """Validate against our data model; return its JSON-shaped dump (so `load` round-trips)."""
    try:
        model = get_task(task).load(data)
    except ValidationError as e:
        first = e.errors()[0]
        loc = ".".join(str(p) for p in first["loc"]) or "data"
        more = f" (+{e.error_count() - 1} more)" if e.error_count() > 1 else ""
        raise format_error(ctx, f"does not fit the {task} data model: {loc}: {first['msg']}{more}") from None
    return model.model_dump(mode="json")


def level_of(numbers: set[int], where: Path) -> int:
    """Offset turning file level numbers into levels 1..10: 0..9 (4V, V0) -> +1, 1..10 (V1, V2) -> 0."""
    if numbers == set(range(10)):
        return 1
    if numbers == set(LEVELS):
        return 0
    raise format_error(str(where), f"file level numbers {sorted(numbers)} are neither 0..9 nor 1..10")
