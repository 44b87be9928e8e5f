"""Judge records: the step-level verdict (LLM judge and rule scorer alike), VGR-Score, the judgments table.

VGR-Score of one response (docs/judge.md):

    VGR = 100 * (C + F) / (S + 1)

S = number of key reasoning steps the judge extracted, C = how many of them are correct against the
evidence, F = 1 if the final answer matches a valid gold answer, else 0. A response without steps scores
100 * F (its VGR equals its accuracy). A `judge_error` row has no score (null) and is left out of every mean.
"""

from __future__ import annotations

import json
from typing import Any, Literal

import polars as pl
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from cluster.sink import KEY_COLUMNS

ERROR_TYPES: tuple[str, ...] = ("perception", "visual_reasoning", "text_reasoning")
ErrorType = Literal["none", "perception", "visual_reasoning", "text_reasoning", "unlabelled"]
JudgeStatus = Literal["ok", "judge_error"]
# malformed: the judge answered but never with schema-valid JSON (within the bounded retries);
# infra: the call failed (rate limits exhausted, 5xx, timeouts); config: bad key/model/params.
JudgeErrorKind = Literal["malformed", "infra", "config"]

RULE_JUDGE = "rule-based"
MAX_STEPS_DEFAULT = 32
MAX_CLAIM_CHARS_DEFAULT = 240


class JudgeStep(BaseModel):
    """One key reasoning step: what the response claims, and whether the evidence supports it."""

    model_config = ConfigDict(extra="ignore")

    claim: str
    correct: bool
    error_type: ErrorType = "none"

    @field_validator("claim", mode="before")
    @classmethod
    def _claim(cls, v: Any) -> Any:
        return v if not isinstance(v, str) else v.strip()[:2000]

    @model_validator(mode="after")
    def _consistent(self) -> JudgeStep:
        # A correct step has no error type; an incorrect one labelled "none" is recorded as unlabelled.
        if self.correct and self.error_type != "none":
            self.error_type = "none"
        elif not self.correct and self.error_type == "none":
            self.error_type = "unlabelled"
        return self


class JudgeVerdict(BaseModel):
    """What a judge returns (LLM: parsed from its schema-constrained JSON; rule scorer: built directly)."""

    model_config = ConfigDict(extra="ignore")

    steps: list[JudgeStep] = Field(default_factory=list)
    final_answer_match: bool

    @property
    def n_correct(self) -> int:
        return sum(1 for s in self.steps if s.correct)

    def error_counts(self) -> dict[str, int]:
        out = {k: 0 for k in ERROR_TYPES}
        for s in self.steps:
            if not s.correct and s.error_type in out:
                out[s.error_type] += 1
        return out

    @property
    def vgr(self) -> float:
        return vgr_score(len(self.steps), self.n_correct, self.final_answer_match)


def vgr_score(n_steps: int, n_correct: int, final_match: bool) -> float:
    """100 * (correct steps + final-answer match) / (steps + 1), in [0, 100]."""
    if n_steps < 0 or not 0 <= n_correct <= n_steps:
        raise ValueError(f"bad step counts: {n_correct} correct of {n_steps}")
    return 100.0 * (n_correct + (1 if final_match else 0)) / (n_steps + 1)


def output_schema(max_steps: int = MAX_STEPS_DEFAULT, max_claim_chars: int | None = MAX_CLAIM_CHARS_DEFAULT
                  ) -> dict[str, Any]:
    """The JSON schema the judge must answer in (litellm `response_format` json_schema, strict mode;
    vLLM structured outputs). `max_claim_chars=None` leaves claim length open (providers whose strict
    mode rejects maxLength)."""
    claim: dict[str, Any] = {"type": "string", "description": "the step as the response states it, briefly"}
    if max_claim_chars is not None:
        claim["maxLength"] = int(max_claim_chars)
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["steps", "final_answer_match"],
        "properties": {
            "steps": {
                "type": "array",
                "maxItems": int(max_steps),
                "items": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["claim", "correct", "error_type"],
                    "properties": {
                        "claim": claim,
                        "correct": {"type": "boolean"},
                        "error_type": {"type": "string", "enum": ["none", *ERROR_TYPES]},
                    },
                },
            },
            "final_answer_match": {"type": "boolean"},
        },
    }


def parse_verdict(content: str | None, max_steps: int | None = None) -> JudgeVerdict:
    """Strictly parse a judge's message content: the whole content must be one JSON object (one
    surrounding code fence is tolerated) that validates against JudgeVerdict. Nothing is searched for
    inside surrounding prose, so text the judge merely quotes can never become the verdict.
    Raises ValueError with a short reason."""
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
        verdict = JudgeVerdict.model_validate(obj)
    except Exception as e:  # pydantic ValidationError: one line
        raise ValueError(f"schema: {str(e).splitlines()[0]}: {_first_error(e)}") from None
    if max_steps is not None and len(verdict.steps) > max_steps:
        raise ValueError(f"schema: {len(verdict.steps)} steps, at most {max_steps} allowed")
    return verdict


def _first_error(e: Exception) -> str:
    errors = getattr(e, "errors", None)
    if callable(errors):
        try:
            err = errors()[0]
            return f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}"
        except Exception:
            pass
    return ""


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
    "n_perception": pl.Int64(),
    "n_visual_reasoning": pl.Int64(),
    "n_text_reasoning": pl.Int64(),
    "final_answer_match": pl.Boolean(),
    "steps": pl.String(),  # JSON list of {claim, correct, error_type}
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
    n_perception: int | None = None
    n_visual_reasoning: int | None = None
    n_text_reasoning: int | None = None
    final_answer_match: bool | None = None
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


def verdict_fields(verdict: Any) -> dict[str, Any]:
    """The score columns of a Judgment from a verdict (`JudgeVerdict` or the rule scorer's `RuleVerdict`)."""
    counts = verdict.error_counts()
    return {
        "vgr_score": verdict.vgr,
        "n_steps": len(verdict.steps),
        "n_correct": verdict.n_correct,
        "n_perception": counts["perception"],
        "n_visual_reasoning": counts["visual_reasoning"],
        "n_text_reasoning": counts["text_reasoning"],
        "final_answer_match": verdict.final_answer_match,
        "steps": json.dumps(
            [{"claim": s.claim, "correct": s.correct, "error_type": s.error_type} for s in verdict.steps],
            ensure_ascii=False,
        ),
    }
