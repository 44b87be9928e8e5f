"""Prompt assembly for the three prompt modes and the recognition question.

Wording is ours (the peer prompts are paraphrased, not copied). Any change to the wording must bump
TEMPLATE_VERSION: it is part of every sample record and every generation cache key.
"""

from __future__ import annotations

import json
from typing import Any

from evalcore.schema import ImageRef, Prompt
from evalcore.task import TaskText

TEMPLATE_VERSION = "nphe4v-prompt-v3"
RECOGNITION_TEMPLATE_VERSION = "nphe4v-recognition-v1"
# The image-only modes: the data is only in the image(s), the question only in the text. VISION_MODE asks for
# reasoning and an answer; POT_MODE, program-of-thought (GraphVerse paper §5.3, "training-free"), for a program
# that prints the final answer, which the score stage runs in the sandbox (`evalcore.pot`). A benchmark asks in
# them by listing them in its `all_prompt_modes` / `prompt_modes`.
VISION_MODE = "vision"
POT_MODE = "pot"
IMAGE_ONLY_MODES: tuple[str, ...] = (VISION_MODE, POT_MODE)

# VISION_MODE keeps its wording and concrete examples; its prompts are unchanged since v1.
VISION_TEMPLATE_VERSION = "nphe4v-prompt-v1"
POT_TEMPLATE_VERSION = "nphe4v-pot-v1"
ENVELOPE = (
    "Write your whole answer inside <root></root>. Inside it, put your step-by-step reasoning in "
    "<reasoning></reasoning> and then the final answer in <final_answer></final_answer> as one JSON "
    "object with exactly these keys, for example:\n"
    "<root><reasoning>...</reasoning><final_answer>{example}</final_answer></root>"
)
# NPHardEval4V examples are placeholders ("<POSITION>"), never a parseable answer: a model that restates
# the format after answering must not be graded on the example (evalcore.extract.is_format_example).
ENVELOPE_PLACEHOLDERS = (
    "Write your whole answer inside <root></root>. Inside it, put your step-by-step reasoning in "
    "<reasoning></reasoning> and then the final answer in <final_answer></final_answer> as one JSON "
    "object with exactly these keys, in this form, where each <...> stands for your value and ... for "
    "more entries:\n"
    "<root><reasoning>...</reasoning><final_answer>{example}</final_answer></root>"
)

# The paper gives no PoT prompt (it names Chen et al. 2022); the wording is ours. The program reads the graph
# from the picture through the model's eyes: it must write the graph down as data, so the transcription is
# part of the response (and checkable), and print only the answer object.
POT_INSTRUCTIONS = (
    "Answer with a Python 3 program that solves this task. First write down, as data in the program, the graph "
    "you read from the picture(s) (its nodes, edges and any weights or colours that matter), then compute the "
    "answer from that data. The program may use only the Python standard library and networkx; it gets no "
    "input, no files and no network, and runs under a time limit of a few seconds. It must print exactly one line: the final "
    "answer as one JSON object with exactly these keys, for example:\n{example}\n"
    "Put the whole program in one ```python fenced code block; if you write several, the last one is run."
)

FIGURE_LIMITED = "The data of this problem is shown in the figure."
FULL_TEXT_HEADER = "The data of this problem:"
FIGURE_AND_TEXT = (
    "The text above gives the instructions; the data is given both in the text and in the figure, "
    "and they describe the same problem."
)


def build_prompt(text: TaskText, mode: str, images: tuple[ImageRef, ...]) -> Prompt:
    """`mode` is one of PROMPT_MODES or IMAGE_ONLY_MODES (the evidence is only in the image(s), the question
    only in the text; VISION_MODE asks for reasoning and an answer, POT_MODE for a program that prints it)."""
    if mode == VISION_MODE:
        parts = [text.intro, text.question, text.output, ENVELOPE.format(example=text.example)]
        return Prompt(
            text="\n\n".join(p for p in parts if p), images=images, template_version=VISION_TEMPLATE_VERSION
        )
    if mode == POT_MODE:
        pot = POT_INSTRUCTIONS.format(example=text.example)
        parts = [text.intro, text.question, text.output, pot]
        return Prompt(text="\n\n".join(p for p in parts if p), images=images, template_version=POT_TEMPLATE_VERSION)
    question = text.question
    if mode == "figure+limited_text" and text.limited_question is not None:
        question = text.limited_question
    parts = [text.intro, question, text.output, ENVELOPE_PLACEHOLDERS.format(example=text.example)]
    if mode == "figure+limited_text":
        parts.insert(2, FIGURE_LIMITED)
    else:
        parts.append("\n".join([FULL_TEXT_HEADER, *text.data_lines]))
    if mode == "figure+full_text":
        parts.append(FIGURE_AND_TEXT)
    return Prompt(
        text="\n\n".join(p for p in parts if p),
        images=() if mode == "full_text_only" else images,
        template_version=TEMPLATE_VERSION,
    )


def build_recognition_prompt(text: TaskText, images: tuple[ImageRef, ...]) -> Prompt:
    """Ask whether the full-text description and the figure describe the same problem instance."""
    description = "\n\n".join(
        [text.intro, text.question, "\n".join([FULL_TEXT_HEADER, *text.data_lines])]
    )
    body = (
        "You are given a figure and the following text description of a problem.\n\n"
        "<description>\n" + description + "\n</description>\n\n"
        "Check carefully whether the figure shows exactly the same problem instance as the description "
        "(the same numbers, labels, items and connections). Reply with YES or NO as the first word, then "
        "explain your check briefly."
    )
    return Prompt(text=body, images=images, template_version=RECOGNITION_TEMPLATE_VERSION)


def format_response(answer: dict[str, Any], reasoning: str = "") -> str:
    """The envelope a well-behaved model returns; used by the built-in baselines."""
    return (
        "<root><reasoning>" + reasoning + "</reasoning><final_answer>"
        + json.dumps(answer, ensure_ascii=False)
        + "</final_answer></root>"
    )


def format_program(answer: dict[str, Any], note: str = "") -> str:
    """The program a well-behaved PoT model returns for `answer` (the baselines' PoT response): it prints the
    answer object, as POT_INSTRUCTIONS asks."""
    comment = f"# {note}\n" if note else ""
    return f"```python\n{comment}print({json.dumps(answer, ensure_ascii=False)!r})\n```"


def example_literal(example: dict[str, Any]) -> str:
    return json.dumps(example, ensure_ascii=False)
