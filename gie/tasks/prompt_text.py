"""The question text of an instance: scenario, task sentence, the edit's account, answer format."""

from __future__ import annotations

from collections.abc import Sequence

from evalcore.prompting import example_literal
from evalcore.task import TaskText
from gie.tasks.config import TaskConfig
from gie.tasks.instance import GVData
from gie.tasks.scenarios import (
    GENERIC_SCENARIO,
    MOLECULE_DATABASES,
    PAIRED_SCENARIO,
    SCENARIO_TEXT,
    WEIGHT_SENTENCE,
    Nouns,
)

DIRECTION_WORDS = {"left": "to the left of", "right": "to the right of", "above": "above", "below": "below"}


def _pair_list(edges: Sequence[Sequence[str]], weights: Sequence[int] | None) -> str:
    if weights is None:
        return ", ".join(f"{u}–{v}" for u, v in edges)
    return ", ".join(f"{u}–{v} ({w} km)" for (u, v), w in zip(edges, weights, strict=True))


def _which(cfg: TaskConfig, logical: int) -> str:
    return f"the picture of Graph {logical + 1}" if cfg.paired else "the picture"


def edit_sentences(cfg: TaskConfig, data: GVData, nouns: Nouns) -> list[str]:
    """The question's account of the edit: what changed and which graph the question is about."""
    e = data.edit
    out: list[str] = []
    for li, meta in zip(e["targets"], e["details"], strict=True):
        where = _which(cfg, li)
        subject = f"molecule of Graph {li + 1}" if cfg.paired else nouns.network
        if e["kind"] == "patch":
            if meta["op"] == "flip":
                out.append(f"In {where}, one rectangular patch has been mirrored. Undo this in your mind and "
                           f"read the {subject} as it was originally drawn.")
            else:
                out.append(f"In {where}, two rectangular patches have been swapped with each other. Undo this "
                           f"in your mind and read the {subject} as it was originally drawn.")
        elif e["kind"] == "composition":
            ab = "two pictures, Part A and Part B" if not cfg.paired else (
                f"two pictures, Graph {li + 1}, part A and Graph {li + 1}, part B")
            links = _pair_list(meta["cross_edges"], meta.get("cross_weights"))
            out.append(
                f"The {subject} is split across {ab}; the following {nouns.edges} join {nouns.nodes} of "
                f"part A to {nouns.nodes} of part B and are not drawn: {links}. "
                f"Answer about the whole {subject}: both parts together with these {nouns.edges}."
            )
        elif e["kind"] == "focus":
            c = meta["color"]
            out.append(
                f"In {where}, look at the {nouns.nodes} drawn in {c}: answer only about the largest connected "
                f"group of {c} {nouns.nodes} and the {nouns.edges} among them. Ignore all other "
                f"{nouns.nodes}, including smaller {c} groups."
            )
        elif e["kind"] == "recolor":
            c = meta["new_color"]
            out.append(
                f"In {where}, every {nouns.node} {DIRECTION_WORDS[meta['direction']]} {meta['anchor']} "
                f"(comparing the centres of the circles) has been recoloured {c}; the other {nouns.nodes}, "
                f"{meta['anchor']} included, keep their original colours."
            )
            if meta["mode"] == "avoid":
                out.append(
                    f"The {nouns.nodes} now drawn in {c} (recoloured or {c} already) are excluded: remove them "
                    f"and their {nouns.edges}, and answer about what remains."
                )
            else:
                out.append(
                    f"Answer only about the {nouns.nodes} now drawn in {c} (recoloured or {c} already) and "
                    f"the {nouns.edges} among them; ignore every {nouns.node} of another colour."
                )
    return out


def task_text(cfg: TaskConfig, data: GVData) -> TaskText:
    src = data.source.name
    if cfg.paired:
        scenario = PAIRED_SCENARIO.replace("the NCI compound database", MOLECULE_DATABASES.get(src, "a database"))
        nouns = SCENARIO_TEXT["nci-molecules"][1]
    else:
        scenario, nouns = SCENARIO_TEXT.get(src, GENERIC_SCENARIO)
        if cfg.weighted:
            scenario += " " + (cfg.weight_sentence or WEIGHT_SENTENCE)
    if data.edit["kind"] == "composition" and not cfg.paired:
        scenario = scenario.replace("The picture shows", "The two pictures show", 1)
    question = " ".join([cfg.task_text(nouns, data.query), *edit_sentences(cfg, data, nouns)])
    return TaskText(
        intro=scenario,
        question=question,
        output=cfg.answer_instruction + " Use the node labels exactly as drawn.",
        example=example_literal(cfg.answer_example),
        data_lines=(),
    )
