"""Typed records shared by every benchmark and every stage of a run.

Field order is part of the on-disk format (Parquet columns follow it): append new fields, never reorder.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_VERSION = "1"

PromptMode = Literal["figure+limited_text", "full_text_only", "figure+full_text"]
PROMPT_MODES: tuple[PromptMode, ...] = ("figure+limited_text", "full_text_only", "figure+full_text")
RECOGNITION_MODE = "recognition"

Status = Literal["ok", "model_error", "infra_error"]
VerdictKind = Literal["correct", "wrong", "parse_error"]
ComplexityClass = Literal["P", "NPC", "NPH"]


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ImageRef(Frozen):
    """A PNG on disk, relative to the dataset folder, pinned by its content hash."""

    path: str
    sha256: str
    width: int
    height: int


class Gold(Frozen):
    """The exact answer: `answer` in the task's final-answer shape, `value` its optimal objective."""

    answer: dict[str, Any]
    value: float | None = None


class Instance(Frozen):
    instance_id: str
    benchmark: str
    task: str
    level: int
    index: int
    data: dict[str, Any]
    gold: Gold
    images: tuple[ImageRef, ...] = ()
    seed: int | None = None
    peer_index: int | None = None
    meta: dict[str, Any] = Field(default_factory=dict)


class Prompt(Frozen):
    text: str
    images: tuple[ImageRef, ...] = ()
    template_version: str


class SamplingParams(Frozen):
    temperature: float = 0.0
    max_tokens: int = 1024
    seed: int | None = None


class SampleKey(Frozen):
    """Identity of one sample; a run never writes the same key twice."""

    model: str
    benchmark: str
    instance_id: str
    variant: str
    prompt_mode: str
    repeat: int

    def as_str(self) -> str:
        return "|".join(
            [self.model, self.benchmark, self.instance_id, self.variant, self.prompt_mode, str(self.repeat)]
        )


class ModelRequest(Frozen):
    """One chat turn sent to a model backend. `task`/`instance_id` travel with it so that built-in
    baselines (oracle, greedy) can answer; real models only see `prompt` and `sampling`."""

    key: SampleKey
    task: str
    level: int
    prompt: Prompt
    sampling: SamplingParams
    # Absolute folder that ImageRef paths are relative to.
    image_root: str = ""
    # {"data": ..., "gold": ..., "variant": ...}: filled only for built-in baselines (oracle, greedy, ...)
    # that declare they need it; a real model backend never receives it.
    reference: dict[str, Any] | None = None


class Usage(Frozen):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0


class ModelResponse(Frozen):
    text: str | None
    status: Status
    error: str | None = None
    usage: Usage = Usage()
    latency_s: float = 0.0
    attempts: int = 1
    # intermediate calls of a composite model (e.g. caption -> text-only answer), each a small dict
    trace: tuple[dict[str, Any], ...] = ()


class ParseError(Frozen):
    """Why a response could not be turned into an answer. `kind` is a short stable code."""

    kind: Literal[
        "empty",
        "no_final_answer",
        "bad_literal",
        "not_a_mapping",
        "missing_key",
        "bad_value",
        "too_large",
    ]
    detail: str = ""


class ParsedAnswer(Frozen):
    value: dict[str, Any] | None = None
    error: ParseError | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


class Verdict(Frozen):
    verdict: VerdictKind
    reason: str = ""
    # Whether the path / set / tour / mapping the answer gives is valid, apart from the verdict (GraphVerse
    # scores some tasks by their value alone); None when no witness was given or the task has none.
    witness_valid: bool | None = None
    # Whether a value the answer states (a length, total, size, count) agrees with the value its own witness
    # (path, tour, selection, set, colouring, schedule) has. The witness decides the verdict; this only reports
    # the stated value. None when no value was stated, there is no witness, or the witness is not feasible.
    value_consistent: bool | None = None


class SampleRecord(BaseModel):
    """One row of a run's per-sample table."""

    model_config = ConfigDict(extra="forbid")

    run_id: str
    model: str
    benchmark: str
    version: str
    task: str
    level: int
    instance_id: str
    variant: str
    prompt_mode: str
    repeat: int
    status: Status
    verdict: VerdictKind | None
    reason: str
    raw_response: str | None
    parsed_answer: str | None
    gold_value: float | None
    error: str | None
    prompt_sha256: str
    image_sha256: str
    template_version: str
    latency_s: float
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    attempts: int
    schema_version: str = SCHEMA_VERSION
    trace: str | None = None
    witness_valid: bool | None = None
    # Appended in issue 19 (older runs read back with them null): `Verdict.value_consistent`, and the
    # papers' parser's reading of the same response (`nphe4v.paper_parse`) with the verdict it leads to.
    value_consistent: bool | None = None
    parsed_paper: str | None = None
    verdict_paper: VerdictKind | None = None
    # Appended in issue 21 (older runs read back with them null): a program-of-thought sample's program output
    # and the classified reason it gave none (`evalcore.pot`); null for every other sample.
    pot_stdout: str | None = None
    pot_error: str | None = None
