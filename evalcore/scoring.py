"""Turn one model response into one sample record: extract, parse, verify. Pure; never raises.

Used by the live pipeline's score stage and by `nphe4v grade`, so both score identically, for every benchmark:
the extractor and the task's exact verifier (verdict, parsed_answer). A benchmark may read an answer a second
way (verdict_paper, parsed_paper: `Benchmark.paper_verdict`, e.g. as its original code graded it) and name the
format examples its prompts show, which an answer restating them does not give (`Benchmark.answer_examples`).
"""

from __future__ import annotations

import json
from typing import Any

from evalcore import benchmarks
from evalcore.extract import extract_final_answer, extract_final_answer_text, extract_yes_no
from evalcore.hashing import sha256_bytes
from evalcore.literals import literal_json
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
    parsed = literal_json(canonical)
    try:
        data = spec.load(instance.data)
        return spec.verify(data, instance.gold, canonical), parsed
    except Exception as e:
        return Verdict(verdict="wrong", reason=f"verifier_crash: {type(e).__name__}: {e}"[:300]), parsed


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
    bench = benchmarks.get(instance.benchmark)
    paper: tuple[VerdictKind | None, str | None] = (None, None)
    is_pot = key.prompt_mode == POT_MODE and response.status == "ok"
    if response.status == "infra_error":
        verdict: Verdict | None = None
        parsed = None
    elif response.status == "model_error":
        verdict, parsed = Verdict(verdict="parse_error", reason=f"model_error: {response.error}"[:300]), None
        paper = bench.paper_verdict(instance, None, model_error=True)
    elif key.prompt_mode == RECOGNITION_MODE:
        verdict, parsed = score_recognition(key.variant == "match", response.text)
    elif is_pot:
        verdict, parsed = score_pot(instance, pot)
    else:
        # e.g. the papers' prompts show their own examples ('TARGET_POSITION', ...): a restated one is not the answer
        verdict, parsed = score_answer(instance, response.text, bench.answer_examples(request.prompt))
        paper = bench.paper_verdict(instance, response.text)
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
