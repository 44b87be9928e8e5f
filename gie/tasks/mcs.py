"""MCS: maximum common induced subgraph of two molecules (elements ignored, need not be connected)."""

from __future__ import annotations

from typing import Any

from gie.tasks.common import Nouns, TaskConfig, build_spec


def _text(n: Nouns, q: dict[str, Any]) -> str:
    return ("Find a maximum common subgraph of the two molecules: a largest set of atoms in the first and "
            "an equally large set in the second, matched one to one, such that two atoms of the first are "
            "bonded exactly when their matches in the second are bonded. Elements are ignored and the "
            "common part need not be connected.")


CONFIG = TaskConfig(
    name="MCS",
    complexity="NPH",
    sources=(("nci-molecules", 1.0),),
    edits=("none", "patch", "composition", "focus", "recolor"),
    task_text=_text,
    focus_min=3,
    paired=True,
)
TASK = build_spec(CONFIG)
