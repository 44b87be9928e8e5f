"""Judge records: the step-level verdict (LLM judge and rule scorer alike), VGR-Score, the judgments table.

The GraphVerse paper (§4.4) describes VGR-Score (key steps checked against the graph evidence, plus whether
the final answer matches a valid gold answer) but its text gives no formula. Ours (`VGR_FORMULA`,
docs/judge.md), built so that padding cannot raise it:

    VGR = 100 * (c + F) / (c + E + 1),   c = min(C, CREDIT_CAP)

over the judge's steps after dropping repeated claims (same normalised text): C = correct inference steps
that bear on the question about the asked graph (for an LLM judge, also naming one of its nodes: `ground`), E = incorrect steps (any), F = 1 iff the exact verifier
accepted the final answer (the sample's verdict, never a judge's flag). Readings (restating an edge, colour,
degree or neighbour list of the drawn graph), irrelevant claims and repeats earn nothing; wrong ones cost.
A response without counted steps scores 100 * F. A `judge_error` row has no score (null) and is left out
of every mean.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Any, Literal

import polars as pl
from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    create_model,
    field_validator,
    model_validator,
)

from evalcore.records import KEY_COLUMNS
from evalcore.validation import first_error

ERROR_TYPES: tuple[str, ...] = ("perception", "visual_reasoning", "text_reasoning")
ErrorType = Literal["none", "perception", "visual_reasoning", "text_reasoning", "unlabelled"]
JudgeStatus = Literal["ok", "judge_error"]
# malformed: the judge answered but never with schema-valid JSON (within the bounded retries);
# infra: the call failed (rate limits exhausted, 5xx, timeouts); config: bad key/model/params.
JudgeErrorKind = Literal["malformed", "infra", "config"]

RULE_JUDGE = "rule-based"
VGR_FORMULA = "vgr-v2"  # recorded with every score; "v1" was 100*(C+F)/(S+1) over all steps, gameable
# v3 (judge.vgr3, docs/judge.md) credits only the critical facts of the closest optimum; v2 stays selectable
# (`vgr_version`) to rescore old runs as they were scored
VGR_VERSIONS = ("v2", "v3", "v4")
# v4 (judge.reader + judge.vgr4): a reader turns text into typed claims, a judge credits one candidate
DEFAULT_VGR_VERSION = "v4"
# At most this many correct inference steps earn: a wrong answer never scores above 100*8/9, however many
# distinct relevant results it lists, while a handful of right intermediate results still shows.
CREDIT_CAP = 8
StepKind = Literal["reading", "inference"]
MAX_STEPS_DEFAULT = 32
MAX_CLAIM_CHARS_DEFAULT = 240


# Structured facts of the grounded judge (template vgr_judge_v3): what a step states, checked by code against
# the graph with the rule scorer's checks (judge.grounding, the one fact checker).
# "none": the step states nothing of these forms.
FACT_TYPES: tuple[str, ...] = (
    "none", "edge", "non_edge", "distance", "path", "set", "neighbors", "mapping", "assign", "color", "degree",
)
FactType = Literal["none", "edge", "non_edge", "distance", "path", "set", "neighbors", "mapping", "assign", "color",
                   "degree"]


class Fact(BaseModel):
    """A step's fact in structured form: `nodes` in the order the fact names them (a mapping pair [a, x], x
    null for a deleted node), `value` a number (weight, distance, total, degree) or a word (set property,
    `complete`/`partial` neighbour list, colour class, drawn colour), `graph` 1 or 2 on paired tasks."""

    model_config = ConfigDict(extra="ignore")

    type: FactType = "none"
    graph: int | None = None
    nodes: list[str | None] = Field(default_factory=list)
    value: float | str | None = None

    @field_validator("nodes", mode="before")
    @classmethod
    def _nodes(cls, v: Any) -> Any:
        return [None if n is None else str(n).strip() for n in v][:64] if isinstance(v, list) else v


class JudgeStep(BaseModel):
    """One key reasoning step: what the response claims, and whether the evidence supports it."""

    model_config = ConfigDict(extra="ignore")

    claim: str = ""
    correct: bool
    error_type: ErrorType = "none"
    # reading: restates a fact of the drawn graph (edge, weight, colour, degree, neighbours);
    # inference: a result the response derives (path, distance, set, mapping, count, total)
    kind: StepKind = "inference"
    # about the graph the question is asked on and bearing on the question (v3: "leads_to_answer", the step
    # is used toward the final answer); a judge that does not say so earns nothing for the step
    relevant: bool = Field(False, validation_alias=AliasChoices("relevant", "leads_to_answer"))
    # grounded judge (v3): the response's own words for the step, and the fact in structured form
    quote: str | None = None
    fact: Fact | None = None

    @field_validator("claim", "quote", mode="before")
    @classmethod
    def _claim(cls, v: Any) -> Any:
        return v if not isinstance(v, str) else v.strip()[:2000]

    @model_validator(mode="after")
    def _consistent(self) -> JudgeStep:
        if not self.claim and self.quote:
            self.claim = self.quote  # v3 outputs carry the quote only
        # A correct step has no error type; an incorrect one labelled "none" is recorded as unlabelled.
        if self.correct and self.error_type != "none":
            self.error_type = "none"
        elif not self.correct and self.error_type == "none":
            self.error_type = "unlabelled"
        return self


class JudgeVerdict(BaseModel):
    """What a judge returns (LLM: parsed from its schema-constrained JSON; rule scorer: built directly).
    `final_answer_match` is the judge's own opinion: recorded for agreement studies, never scored."""

    model_config = ConfigDict(extra="ignore")

    steps: list[JudgeStep] = Field(default_factory=list)
    final_answer_match: bool

    @property
    def n_correct(self) -> int:
        return sum(1 for s in self.steps if s.correct)

    def error_counts(self) -> dict[str, int]:
        return error_counts(self.steps)


_SPACE = re.compile(r"\s+")


def claim_key(claim: str) -> str:
    """What makes two stated claims the same claim: case, spacing and a closing full stop aside
    (`A -> B, total 3` == `a->b, total 3.`); symbols stay, so an edge `A--B` is not the mapping `A -> B`."""
    return _SPACE.sub("", claim.casefold()).rstrip(".;,")


def distinct_steps(steps: Iterable[Any]) -> list[Any]:
    """The steps without repeats (first occurrence kept): a claim stated twice is checked once. Steps that
    carry a semantic `key` (the rule scorer's) are told apart by it, others by `claim_key`."""
    seen: set[Any] = set()
    out = []
    for s in steps:
        k = getattr(s, "key", None) or claim_key(s.claim)
        if k in seen:
            continue
        seen.add(k)
        out.append(s)
    return out


_WORD = re.compile(r"[0-9A-Za-z_]+")


def ground(steps: Iterable[JudgeStep], names: Iterable[str]) -> list[JudgeStep]:
    """An LLM judge's steps with credit only where the claim is about the asked graph: a step the judge
    calls a correct relevant inference earns only if its text names at least one node of the graph the
    question is asked on (`names`); otherwise it is kept as not relevant. So a judge that endorses
    `i + i = 2i` or claims about distractor nodes cannot lift a score."""
    plain = {n.casefold() for n in names if _WORD.fullmatch(n)}
    odd = [n.casefold() for n in names if not _WORD.fullmatch(n)]
    out = []
    for st in steps:
        if st.correct and st.relevant and st.kind == "inference":
            text = st.claim.casefold()
            if not (plain & set(_WORD.findall(text)) or any(n in text for n in odd)):
                st = st.model_copy(update={"relevant": False})
        out.append(st)
    return out


def counts(steps: Iterable[Any]) -> tuple[int, int]:
    """(credited, errors) of a step list: credited = distinct correct relevant inference steps, capped at
    CREDIT_CAP; errors = distinct incorrect steps."""
    credited = errors = 0
    for s in distinct_steps(steps):
        if not s.correct:
            errors += 1
        elif s.relevant and s.kind == "inference":
            credited += 1
    return min(credited, CREDIT_CAP), errors


def error_counts(steps: Iterable[Any]) -> dict[str, int]:
    out = {k: 0 for k in ERROR_TYPES}
    for s in distinct_steps(steps):
        if not s.correct and s.error_type in out:
            out[s.error_type] += 1
    return out


def vgr_score(credited: int, errors: int, final_match: bool) -> float:
    """100 * (credited + F) / (credited + errors + 1), in [0, 100] (see the module docstring)."""
    if credited < 0 or errors < 0 or credited > CREDIT_CAP:
        raise ValueError(f"bad step counts: {credited} credited (cap {CREDIT_CAP}), {errors} errors")
    return 100.0 * (credited + (1 if final_match else 0)) / (credited + errors + 1)


def vgr_of(steps: Iterable[Any], final_match: bool) -> float:
    """VGR-Score of a step list (`JudgeStep`s or the rule scorer's steps) and the verifier's verdict."""
    return vgr_score(*counts(steps), final_match)


# ----------------------------------------------------------------------------------- what the judge must answer
#
# The judge's output schema is generated from these pydantic models (one source of truth): the prompt shows it, the
# request's `response_format` sends it, and the reply is validated with the same model (`parse_verdict`). Every key
# is required and none may be added (strict mode of OpenAI-compatible APIs; vLLM structured outputs); keys a judge
# adds anyway (its own "score") are ignored, never read. `maxLength` on the quote / claim is a budget for the
# decoder only: a longer one is kept (the quote check decides about it), so it is in the schema, not a rule of the
# model.


class _Wire(BaseModel):
    # strict: a value is what the schema says or refused (no `true` read as the graph 1, no "3" as a number)
    model_config = ConfigDict(extra="ignore", strict=True, json_schema_extra={"additionalProperties": False})


_ErrorLabel = Literal["none", "perception", "visual_reasoning", "text_reasoning"]


class FactOut(_Wire):
    type: FactType
    graph: int | None
    nodes: list[str | None] = Field(json_schema_extra={"maxItems": 64})
    value: float | str | None


def _text(description: str, max_chars: int | None) -> Any:
    extra = {"maxLength": int(max_chars)} if max_chars is not None else None
    return Field(description=description, json_schema_extra=extra)


@lru_cache(maxsize=64)
def output_model(prompt_version: int = 3, max_steps: int = MAX_STEPS_DEFAULT,
                 max_chars: int | None = MAX_CLAIM_CHARS_DEFAULT) -> type[BaseModel]:
    """The model of a judge's reply for prompt version `prompt_version` (3 and later: grounded steps, a verbatim
    `quote` and a structured `fact`; 2: `claim`, `kind`, `relevant`), at most `max_steps` steps."""
    if prompt_version >= 3:
        step: type[BaseModel] = create_model(
            "GroundedStepOut", __base__=_Wire,
            quote=(str, _text("the response's own words for the step, verbatim", max_chars)),
            fact=(FactOut, ...), kind=(StepKind, ...), leads_to_answer=(bool, ...), correct=(bool, ...),
            error_type=(_ErrorLabel, ...))
    else:
        step = create_model(
            "StepOut", __base__=_Wire,
            claim=(str, _text("the step as the response states it, briefly", max_chars)),
            kind=(StepKind, ...), relevant=(bool, ...), correct=(bool, ...), error_type=(_ErrorLabel, ...))
    return create_model("VerdictOut", __base__=_Wire,
                        steps=(list[step], Field(max_length=int(max_steps))),  # type: ignore[valid-type]
                        final_answer_match=(bool, ...))


def validate_reply(model: type[BaseModel], obj: Any) -> BaseModel:
    """A decoded reply validated with its model as JSON (strict JSON types, as the schema states them)."""
    return model.model_validate_json(json.dumps(obj))


def json_schema_of(model: type[BaseModel]) -> dict[str, Any]:
    """`model.model_json_schema()` written as strict-mode APIs and structured-output decoders read it most widely:
    nested models inlined (no `$ref`), titles dropped, `anyOf` of plain types as one type list
    (`{"type": ["integer", "null"]}`). The content is the model's."""
    raw = model.model_json_schema()
    defs = raw.pop("$defs", {})

    def tidy(node: Any) -> Any:
        if isinstance(node, list):
            return [tidy(x) for x in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            return tidy(defs[node["$ref"].rsplit("/", 1)[-1]])
        out = {k: tidy(v) for k, v in node.items() if k != "title"}
        alts = out.get("anyOf")
        if alts and all(set(a) == {"type"} and isinstance(a["type"], str) for a in alts):
            out.pop("anyOf")
            out["type"] = [a["type"] for a in alts]
        return out

    return tidy(raw)


def parse_verdict(content: str | None, max_steps: int | None = None,
                  model: type[BaseModel] | None = None) -> JudgeVerdict:
    """Strictly parse a judge's message content: the whole content must be one JSON object (one
    surrounding code fence is tolerated) that validates against the reply model the judge was asked for
    (`model`, from `output_model`: every key of its schema present and well typed), then as a JudgeVerdict
    (without `model`: JudgeVerdict only, which reads old recorded outputs). Nothing is searched for
    inside surrounding prose, so text the judge merely quotes can never become the verdict.
    Raises ValueError with a short reason (one line: where and what)."""
    if content is None:
        raise ValueError("empty judge output")
    s = content.strip()
    if s.startswith("```"):
        first_nl = s.find("\n")
        if first_nl < 0 or not s.endswith("```"):
            raise ValueError("unterminated code fence")
        s = s[first_nl + 1 : -3].strip()
    if not s:
        raise ValueError("empty judge output")
    try:
        # strict=False: raw control characters inside strings (some constrained decoders emit them)
        obj = json.loads(s, strict=False)
    except json.JSONDecodeError as e:
        raise ValueError(f"not JSON: {e.msg} at char {e.pos}") from None
    if not isinstance(obj, dict):
        raise ValueError(f"JSON {type(obj).__name__}, expected an object")
    try:
        if model is not None:
            obj = validate_reply(model, obj).model_dump()
        verdict = JudgeVerdict.model_validate(obj)
    except ValidationError as e:  # one line: the field's path and what is wrong
        where, what = first_error(e, "reply")
        raise ValueError(f"schema: {where}: {what}") from None
    if max_steps is not None and len(verdict.steps) > max_steps:
        raise ValueError(f"schema: {len(verdict.steps)} steps, at most {max_steps} allowed")
    return verdict


# --------------------------------------------------------------------------------------------- the table

JUDGE_KEY_COLUMNS: list[str] = [*KEY_COLUMNS, "judge", "judge_template", "judge_repeat"]

JUDGMENT_SCHEMA: dict[str, pl.DataType] = {
    "run_id": pl.String(),
    "model": pl.String(),
    "benchmark": pl.String(),
    "instance_id": pl.String(),
    "variant": pl.String(),
    "prompt_mode": pl.String(),
    "repeat": pl.Int64(),
    "task": pl.String(),
    "judge": pl.String(),  # judge identity: "rule-based" or the litellm model string
    "judge_snapshot": pl.String(),  # the pinned snapshot used in the cache key (default: the model string)
    "judge_served_model": pl.String(),  # what the API reported serving (null for the rule scorer)
    "judge_template": pl.String(),  # template version incl. content hash
    "judge_repeat": pl.Int64(),
    "status": pl.String(),  # ok | judge_error
    "error_kind": pl.String(),
    "error": pl.String(),
    "vgr_score": pl.Float64(),
    "n_steps": pl.Int64(),
    "n_correct": pl.Int64(),
    "n_credited": pl.Int64(),  # correct relevant inference steps that earned (capped at CREDIT_CAP)
    "n_errors": pl.Int64(),
    "n_perception": pl.Int64(),
    "n_visual_reasoning": pl.Int64(),
    "n_text_reasoning": pl.Int64(),
    "n_dropped": pl.Int64(),  # grounded judge: steps dropped (quote not in the response, fact not in its quote)
    "final_answer_match": pl.Boolean(),  # the exact verifier's verdict (what F is), not the judge's
    "judge_final_match": pl.Boolean(),  # what the judge said about the final answer (never scored)
    "vgr_formula": pl.String(),
    "steps": pl.String(),  # JSON list of {claim, kind, relevant, correct, error_type} (+ grounded: quote, fact, ...)
    "raw_output": pl.String(),  # JSON list: the judge's raw message content of every attempt
    "attempts": pl.Int64(),  # judge calls behind this judgment (HTTP calls incl. retries)
    "calls": pl.Int64(),  # HTTP calls made for this row in this run (0 when served from the cache)
    "cached": pl.Boolean(),
    "evidence_sha256": pl.String(),
    "response_sha256": pl.String(),
    "cache_key": pl.String(),
    "sample_verdict": pl.String(),  # the sample's verifier verdict, for cross-checks
    "prompt_tokens": pl.Int64(),
    "completion_tokens": pl.Int64(),
    "cost_usd": pl.Float64(),
    "latency_s": pl.Float64(),
}


class Judgment(BaseModel):
    """One row of RUN_DIR/judgments/: one judge's verdict on one sample (for one judge repeat)."""

    model_config = ConfigDict(extra="forbid")

    run_id: str
    model: str
    benchmark: str
    instance_id: str
    variant: str
    prompt_mode: str
    repeat: int
    task: str
    judge: str
    judge_snapshot: str
    judge_served_model: str | None = None
    judge_template: str
    judge_repeat: int = 0
    status: JudgeStatus
    error_kind: JudgeErrorKind | None = None
    error: str | None = None
    vgr_score: float | None = None
    n_steps: int | None = None
    n_correct: int | None = None
    n_credited: int | None = None
    n_errors: int | None = None
    n_perception: int | None = None
    n_visual_reasoning: int | None = None
    n_text_reasoning: int | None = None
    n_dropped: int | None = None
    final_answer_match: bool | None = None
    judge_final_match: bool | None = None
    vgr_formula: str | None = None
    steps: str | None = None
    raw_output: str | None = None
    attempts: int = 0
    calls: int = 0
    cached: bool = False
    evidence_sha256: str
    response_sha256: str
    cache_key: str
    sample_verdict: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0

    def key(self) -> str:
        d = self.model_dump(include=set(JUDGE_KEY_COLUMNS))
        return "|".join(str(d[c]) for c in JUDGE_KEY_COLUMNS)


assert list(JUDGMENT_SCHEMA) == list(Judgment.model_fields), "judgment schema out of step with Judgment"


def verdict_fields(verdict: Any, final_match: bool) -> dict[str, Any]:
    """The score columns of a Judgment from a verdict (`JudgeVerdict` or the rule scorer's `RuleVerdict`)
    and the exact verifier's verdict on the final answer (`final_match`), which alone is F."""
    steps = distinct_steps(verdict.steps)
    credited, errors = counts(steps)
    by_type = error_counts(steps)
    formula, score = VGR_FORMULA, vgr_score(credited, errors, final_match)
    v3 = getattr(verdict, "v3", None)
    if v3 is not None:  # VGR v3: credited = critical facts stated (K), errors = distinct false atoms (E)
        formula, score, credited, errors = "vgr-v3", v3.vgr, v3.n_stated, v3.n_errors
    v4 = getattr(verdict, "v4", None)
    extra: dict[str, Any] = {}
    if v4 is not None:  # VGR v4: K of the credited candidate, E distinct false claims; None = unreadable
        formula, score, credited, errors = "vgr-v4", v4.vgr, v4.n_stated, v4.n_errors
        if v4.reason:
            extra["error"] = (f"{v4.reason}: the reasoning states nothing the claim reader can parse"
                              if v4.reason == "unreadable" else
                              f"{v4.reason}: a critical fact is missing and statements about the optimum's nodes "
                              "are in a form the claim reader has none for")
    return {
        **extra,
        "vgr_score": score,
        "n_steps": len(steps),
        "n_correct": sum(1 for s in steps if s.correct),
        "n_credited": credited,
        "n_errors": errors,
        "n_perception": by_type["perception"],
        "n_visual_reasoning": by_type["visual_reasoning"],
        "n_text_reasoning": by_type["text_reasoning"],
        "final_answer_match": bool(final_match),
        "judge_final_match": bool(verdict.final_answer_match),
        "vgr_formula": formula,
        "steps": json.dumps(
            [{"claim": s.claim, "kind": s.kind, "relevant": s.relevant, "correct": s.correct,
              "error_type": s.error_type} for s in steps],
            ensure_ascii=False,
        ),
    }
