"""The one reading of a decision answer, shared by TSP-D and GCP-D.

Keys `Feasible` or `Answer` (any case and separators; `Feasible` first, `Answer` when Feasible is absent or unreadable); values yes / no /
true / false in any case, booleans, 1/0, or a sentence that starts with one of them ("Yes, such a tour
exists."). Other keys of the answer are ignored, so an unrequested key never makes it unparsable.
"""

from __future__ import annotations

from typing import Any

from evalcore.coerce import as_decision, get_key
from evalcore.schema import ParseError

DECISION_KEYS = ("Feasible", "Answer")


def read_decision(obj: Any) -> bool | ParseError:
    """True for YES, False for NO, or why the answer holds no decision."""
    if not isinstance(obj, dict):
        return ParseError(kind="not_a_mapping", detail=type(obj).__name__)
    unreadable: ParseError | None = None
    for key in DECISION_KEYS:
        found, raw = get_key(obj, key)
        if found:
            said = as_decision(raw)
            if said is not None:
                return said
            unreadable = unreadable or ParseError(kind="bad_value", detail=f"{key}={raw!r:.60}")
    return unreadable or ParseError(kind="missing_key", detail="Feasible")


def decision_answer(feasible: bool) -> dict[str, Any]:
    return {"Feasible": "YES" if feasible else "NO"}
