"""Turn one model response into one sample record: extract, parse, verify. Pure; never raises.

Used by the live pipeline's score stage and by `nphe4v grade`, so both score identically. An NPHardEval4V answer
is graded twice: by our tolerant extractor and exact verifier (verdict, parsed_answer), and as the original
NPHardEval4V code graded it (verdict_paper, parsed_paper; `score_answer_paper`, `nphe4v.paper_check`).
"""

from __future__ import annotations

import json
from typing import Any

from evalcore.extract import extract_final_answer, extract_final_answer_text, extract_yes_no
from evalcore.hashing import sha256_bytes
from evalcore.pot import MAX_STORED_STDOUT, PotOutcome
from evalcore.prompting import POT_MODE
from evalcore.schema import (
    RECOGNITION_MODE,
    Instance,
    ModelRequest,
    ModelResponse,
    ParseError,
    SampleRecord,
    Verdict,
    VerdictKind,
)
from nphe4v.paper_check import HARD_TASKS, PAPER_TASKS, paper_correct, paper_parse
from nphe4v.paper_parse import hard_literal, parse_hard

PAPER_BENCHMARK = "nphardeval4v"


def prompt_examples(prompt: Any) -> tuple[Any, ...]:
    """The answer examples a `prompts: paper` prompt shows (nphe4v.paper_prompts.format_examples); our own
    prompts' placeholder examples are recognised by the extractor itself."""
    from nphe4v.paper_prompts import PAPER_TEMPLATE_VERSION, format_examples

    if not str(getattr(prompt, "template_version", "")).startswith(PAPER_TEMPLATE_VERSION):
        return ()
    return format_examples(prompt.text)


def score_answer(instance: Instance, text: str | None, ignore: tuple[Any, ...] = ()) -> tuple[Verdict, str | None]:
    """Verdict for an answer to `instance`, and the canonical parsed answer as JSON (None if unparsable).
    `ignore`: the prompt's format examples (values or their text), skipped when a model restates them."""
    from evalcore.benchmarks import task_for

    spec = task_for(instance.benchmark, instance.task)
    # A benchmark whose parser reads bare values, lists and unquoted names gets whatever the final answer
    # holds; the others get the mapping only.
    extracted = (extract_final_answer_text(text, ignore) if spec.bare_answers
                 else extract_final_answer(text, ignore))
    if isinstance(extracted, ParseError):
        return _parse_error(extracted), None
    try:
        canonical = spec.parse(extracted)
    except Exception as e:  # a task parser bug must not lose the sample; it is recorded as such
        return Verdict(verdict="parse_error", reason=f"parser_crash: {type(e).__name__}: {e}"[:300]), None
    if isinstance(canonical, ParseError):
        return _parse_error(canonical), None
    parsed = json.dumps(canonical, sort_keys=True, default=str)
    try:
        data = spec.load(instance.data)
        return spec.verify(data, instance.gold, canonical), parsed
    except Exception as e:
        return Verdict(verdict="wrong", reason=f"verifier_crash: {type(e).__name__}: {e}"[:300]), parsed


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
    as_json = None if isinstance(shown, ParseError) else json.dumps(shown, sort_keys=True, default=str)[:2000]
    return ("correct" if correct else "wrong"), as_json


def score_recognition(is_match: bool, text: str | None) -> tuple[Verdict, str | None]:
    said = extract_yes_no(text)
    if isinstance(said, ParseError):
        return _parse_error(said), None
    truth = "YES" if is_match else "NO"
    if said == is_match:
        return Verdict(verdict="correct", reason=f"answered {truth}"), json.dumps(said)
    return Verdict(verdict="wrong", reason=f"answered {'YES' if said else 'NO'}, truth {truth}"), json.dumps(said)


def _parse_error(err: ParseError) -> Verdict:
    return Verdict(verdict="parse_error", reason=f"{err.kind}: {err.detail}"[:300])


def score_pot(instance: Instance, outcome: PotOutcome | None) -> tuple[Verdict, str | None]:
    """A program-of-thought sample: graded on what its program printed, exactly as a direct answer's text is;
    a program that could not give an output is a parse error whose reason names the classified pot_error."""
    if outcome is None:  # a caller that did not run the program: a bug, recorded rather than lost
        return Verdict(verdict="parse_error", reason="pot_error: not_run: the program was not executed"), None
    if outcome.error is not None:
        return Verdict(verdict="parse_error", reason=f"pot_error: {outcome.error}: {outcome.detail}"[:300]), None
    return score_answer(instance, outcome.stdout)


def score_sample(
    run_id: str, version: str, instance: Instance, request: ModelRequest, response: ModelResponse,
    pot: PotOutcome | None = None,
) -> SampleRecord:
    """`pot`: for a POT_MODE sample whose response is ok, what its program did (`evalcore.pot.run_response`,
    run by the caller: scoring stays pure)."""
    key = request.key
    paper: tuple[VerdictKind | None, str | None] = (None, None)
    is_pot = key.prompt_mode == POT_MODE and response.status == "ok"
    if response.status == "infra_error":
        verdict: Verdict | None = None
        parsed = None
    elif response.status == "model_error":
        verdict, parsed = Verdict(verdict="parse_error", reason=f"model_error: {response.error}"[:300]), None
        if instance.benchmark == PAPER_BENCHMARK:
            paper = ("parse_error", None)
    elif key.prompt_mode == RECOGNITION_MODE:
        verdict, parsed = score_recognition(key.variant == "match", response.text)
    elif is_pot:
        verdict, parsed = score_pot(instance, pot)
    else:
        # the papers' prompts show their own examples ('TARGET_POSITION', ...): a restated one is not the answer
        verdict, parsed = score_answer(instance, response.text, prompt_examples(request.prompt))
        paper = score_answer_paper(instance, response.text)
    return SampleRecord(
        run_id=run_id,
        model=key.model,
        benchmark=key.benchmark,
        version=version,
        task=instance.task,
        level=instance.level,
        instance_id=instance.instance_id,
        variant=key.variant,
        prompt_mode=key.prompt_mode,
        repeat=key.repeat,
        status=response.status,
        verdict=verdict.verdict if verdict else None,
        reason=verdict.reason if verdict else (response.error or ""),
        raw_response=response.text,
        parsed_answer=parsed,
        gold_value=instance.gold.value,
        error=response.error,
        prompt_sha256=sha256_bytes(request.prompt.text.encode()),
        image_sha256=",".join(r.sha256 for r in request.prompt.images),
        template_version=request.prompt.template_version,
        latency_s=response.latency_s,
        prompt_tokens=response.usage.prompt_tokens,
        completion_tokens=response.usage.completion_tokens,
        cost_usd=response.usage.cost_usd,
        attempts=response.attempts,
        trace=json.dumps(list(response.trace), default=str) if response.trace else None,
        witness_valid=verdict.witness_valid if verdict else None,
        value_consistent=verdict.value_consistent if verdict else None,
        parsed_paper=paper[1],
        verdict_paper=paper[0],
        pot_stdout=pot.stdout[:MAX_STORED_STDOUT] if is_pot and pot is not None and pot.stdout is not None else None,
        pot_error=(pot.error if pot is not None else "not_run") if is_pot else None,
    )


def record_row(record: SampleRecord) -> dict[str, Any]:
    return record.model_dump()
