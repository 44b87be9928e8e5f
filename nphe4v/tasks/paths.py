"""The one parser of a path or tour written by a model, shared by SPP and TSP.

Accepted: a list of ids ([0, 2, 3], ["0", "2"]), the asked form "0->2->3" (also "→", commas, spaces), and
dashed or fat-arrow forms "0-2-3", "0 - 2 - 3", "0=>2=>3", "0—2—3": unambiguous because ids are non-negative
integers, though not the asked form.
"""

from __future__ import annotations

import re
from typing import Any

from evalcore.coerce import as_int_list

_DASHED_PATH = re.compile(r"\s*\d+(?:\s*(?:-+>?|=+>|[–—>])\s*\d+)+\s*")
# Longer strings are not a path of at most a few dozen nodes; the regex must not scan megabytes.
_MAX_CHARS = 10_000


def parse_node_path(raw: Any) -> list[int] | None:
    """The node ids in order, or None if `raw` is not a path."""
    if isinstance(raw, str) and len(raw) < _MAX_CHARS and _DASHED_PATH.fullmatch(raw):
        return as_int_list(re.findall(r"\d+", raw))
    return as_int_list(raw)
