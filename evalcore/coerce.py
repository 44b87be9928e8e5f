"""Lenient coercion of values found in a model's final answer. Never raises: returns None instead.

Models quote numbers ('3'), write floats for ints (3.0), spell paths as '0->1->2' or [0, 1, 2]:
all of those are accepted; anything ambiguous (3.5 for an int, 'abc') is None.
"""

from __future__ import annotations

import math
import re
from typing import Any

_NUM = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")
_MAX_ITEMS = 10_000


def as_number(v: Any) -> float | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int | float):
        f = float(v)
        return f if math.isfinite(f) else None
    if isinstance(v, str):
        s = v.strip().replace(",", "")
        if len(s) > 64 or not _NUM.match(s):
            return None
        f = float(s)
        return f if math.isfinite(f) else None
    return None


def as_int(v: Any) -> int | None:
    f = as_number(v)
    if f is None or f != int(f) or abs(f) > 2**53:
        return None
    return int(f)


def as_yes_no(v: Any) -> bool | None:
    if isinstance(v, bool):
        return v
    if isinstance(v, int) and v in (0, 1):
        return bool(v)
    if isinstance(v, str):
        s = v.strip().strip(".!").lower()
        if s in ("yes", "y", "true", "feasible"):
            return True
        if s in ("no", "n", "false", "infeasible", "not feasible"):
            return False
    return None


# yes/no/true/false as the first word of a sentence ("Yes, such a tour exists."), after quotes or markdown;
# "yes or no" / "yes/no" (a restated placeholder) decides nothing, nor do "yesterday", "not", "none".
_LEADING_WORD = re.compile(r"[\s*_\"'`(\[]*(yes|no|true|false)\b(?!\s*(?:or|/)\s*(?:yes|no|true|false)\b)",
                           re.IGNORECASE)


def as_decision(v: Any) -> bool | None:
    """A decision answer: whatever `as_yes_no` reads, or a sentence whose first word is yes/no/true/false."""
    said = as_yes_no(v)
    if said is not None or not isinstance(v, str):
        return said
    m = _LEADING_WORD.match(v[:200])
    return None if m is None else m.group(1).lower() in ("yes", "true")


def as_int_list(v: Any) -> list[int] | None:
    """[1, 2], ['1', '2'], '1, 2', '[1, 2]', '1->2', '1 -> 2', (1, 2) -> [1, 2]."""
    if isinstance(v, str):
        s = v.strip().strip("[](){}")
        if not s:
            return []
        parts = re.split(r"\s*(?:->|→|,|;|\s)\s*", s)
        parts = [p for p in parts if p]
        if len(parts) > _MAX_ITEMS:
            return None
        out = [as_int(p.strip("'\"")) for p in parts]
        return None if any(x is None for x in out) else out  # type: ignore[return-value]
    if isinstance(v, list | tuple):
        if len(v) > _MAX_ITEMS:
            return None
        out = [as_int(x) for x in v]
        return None if any(x is None for x in out) else out  # type: ignore[return-value]
    single = as_int(v)
    return None if single is None else [single]


def get_key(mapping: dict[str, Any], *names: str) -> tuple[bool, Any]:
    """Look a key up case- and separator-insensitively ('TotalValue', 'total_value', 'total value').
    Never raises: a key whose str() fails (a hostile object) simply matches nothing."""
    def norm(k: object) -> str:
        try:
            return re.sub(r"[\s_\-]", "", str(k)).lower()
        except Exception:
            return "\x00"

    wanted = {norm(n) for n in names}
    for k, val in mapping.items():
        if norm(k) in wanted:
            return True, val
    return False, None


def colour_label(v: Any) -> str | None:
    """A colour label as a comparable string: 1, '1', 1.0 are one colour; 'Red' and 'red ' are one colour."""
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, int | float):
        i = as_int(v)
        return None if i is None else str(i)
    if isinstance(v, str):
        s = v.strip().lower()
        if not s or len(s) > 64:
            return None
        i = as_int(s)
        return str(i) if i is not None else s
    return None

