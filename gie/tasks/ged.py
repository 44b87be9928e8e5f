"""GED: graph edit distance between two molecules shown in two pictures (element = node label)."""

from __future__ import annotations

from typing import Any

from gie.tasks.common import Nouns, TaskConfig, build_spec


def _text(n: Nouns, q: dict[str, Any]) -> str:
    return ("Find the graph edit distance from the first molecule to the second: the smallest total cost "
            "of edits that turn the first graph into the second, where deleting or inserting an atom costs "
            "1, changing an atom's element costs 1, and deleting or inserting a bond costs 1. Give it with "
            "the node mapping of an optimal edit.")


CONFIG = TaskConfig(
    name="GED",
    complexity="NPH",
    sources=(("nci-molecules", 1.0),),
    edits=("none", "patch", "composition", "focus", "recolor"),
    task_text=_text,
    focus_min=3,
    paired=True,
)
TASK = build_spec(CONFIG)
