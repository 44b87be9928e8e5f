"""NPHardEval4V's second reading of an answer: as the original NPHardEval4V code graded it (verdict_paper,
parsed_paper; `nphe4v.paper_check`), and the format examples the papers' prompts show. The plug-in
(`nphe4v.benchmark`) hands both to the shared scorer (`evalcore.scoring`), which this module re-exports for its
older importers (tests, bench scripts).
"""

from __future__ import annotations

from typing import Any

from evalcore.literals import literal_json
from evalcore.schema import Instance, ParseError, VerdictKind
from evalcore.scoring import record_row, score_answer, score_pot, score_recognition, score_sample
from nphe4v.paper_check import HARD_TASKS, PAPER_TASKS, paper_correct, paper_parse
from nphe4v.paper_parse import hard_literal, parse_hard

PAPER_BENCHMARK = "nphardeval4v"

__all__ = ["prompt_examples", "record_row", "score_answer", "score_answer_paper", "score_pot", "score_recognition",
           "score_sample"]


def prompt_examples(prompt: Any) -> tuple[Any, ...]:
    """The answer examples a `prompts: paper` prompt shows (nphe4v.paper_prompts.format_examples); our own
    prompts' placeholder examples are recognised by the extractor itself."""
    from nphe4v.paper_prompts import PAPER_TEMPLATE_VERSION, format_examples

    if not str(getattr(prompt, "template_version", "")).startswith(PAPER_TEMPLATE_VERSION):
        return ()
    return format_examples(prompt.text)


def score_answer_paper(instance: Instance, text: str | None) -> tuple[VerdictKind | None, str | None]:
    """The original NPHardEval4V code's decision on an answer (`nphe4v.paper_check`: its per-task parser and
    checker, quirks included): (parse_error | correct | wrong, what its parser read, as JSON). (None, None)
    for another benchmark."""
    if instance.benchmark != PAPER_BENCHMARK or instance.task not in PAPER_TASKS:
        return None, None
    parsable, parsed = paper_parse(instance.task, text)
    if not parsable:
        return "parse_error", None
    correct = paper_correct(instance.task, instance.data, parsed, instance.instance_id)
    shown = hard_literal(parse_hard(text)) if instance.task in HARD_TASKS else parsed
    as_json = None if isinstance(shown, ParseError) else literal_json(shown)[:2000]
    return ("correct" if correct else "wrong"), as_json
