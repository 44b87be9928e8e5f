"""Which run is the baseline of which: the spec of the improvement tables (GraphVerse Tables 3 / 8, 11, 13).

An **arm** is what a table row measures: a model name as the runs hold it and a GraphVerse prompt mode
(``vision`` = direct inference, ``pot`` = program of thought, ...). A fine-tuned checkpoint is just another
model name; the description -> LLM baseline is a ``caption-chain`` model. In YAML an arm is a model name
(direct inference) or a mapping ``{model: NAME, prompt_mode: MODE, label: TEXT}``.

```yaml
improvements:            # Tables 3 (Acc) and 8 (VGR-S): each variant against the direct inference of its base
  - base: qwen3-vl-8b
    variants:
      - {model: qwen3-vl-8b-sft, label: SFT w/ GIE}
      - {model: qwen3-vl-8b, prompt_mode: pot, label: PoT}
gie_ablation:            # Table 11: a model trained with one edit type each, against one trained without
  - without: qwen3-vl-8b-rl-nogie
    with: {patch: qwen3-vl-8b-rl-patch, recolor: qwen3-vl-8b-rl-recolor}
description:             # Table 13: the visual model against the MLLM description -> LLM pipeline
  - {label: Qwen3-VL-8B RL, visual: qwen3-vl-8b-rl, description: caption-gpt5.2+qwen3-8b-rl}
```

``parse_comparisons(raw, source)`` validates a loaded mapping; every problem is one ``ComparisonError`` line
naming the file and the field. ``missing_arms(spec, present)`` names, the same way, an arm the runs do not
hold. Without a spec, ``auto_comparisons`` compares each model's other prompt modes (PoT) with its own direct
inference.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from evalcore import report_section
from evalcore.prompting import VISION_MODE

DIRECT_MODE = VISION_MODE
"""GraphVerse's direct inference: images + question, answer directly (the runs' ``vision`` prompt mode)."""
MODEL_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:@/+-]*$"  # a run config's model names (cluster.config)
PROMPT_MODE_PATTERN = r"^[a-z][a-z0-9_+.-]*$"
GieEdit = Literal["patch", "composition", "focus", "recolor"]


# the shared core's: the report's command line catches it for every benchmark's spec
ComparisonError = report_section.ComparisonError


class Arm(BaseModel):
    """One row's samples: a model and a prompt mode; ``label`` is what the table shows (default: the model,
    with the prompt mode when it is not direct inference)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str = Field(pattern=MODEL_NAME_PATTERN)
    prompt_mode: str = Field(DIRECT_MODE, pattern=PROMPT_MODE_PATTERN)
    label: str | None = Field(None, min_length=1, max_length=120)

    @model_validator(mode="before")
    @classmethod
    def _from_name(cls, v: Any) -> Any:
        return {"model": v} if isinstance(v, str) else v

    @property
    def key(self) -> tuple[str, str]:
        return self.model, self.prompt_mode

    @property
    def shown(self) -> str:
        if self.label:
            return self.label
        return self.model if self.prompt_mode == DIRECT_MODE else f"{self.model} ({self.prompt_mode})"


class Improvement(BaseModel):
    """Tables 3 / 8: ``variants`` (PoT, SFT, RL, ... checkpoints) each against ``base``, the direct inference of
    the model they improve."""

    model_config = ConfigDict(extra="forbid")

    base: Arm
    variants: list[Arm] = Field(min_length=1)

    @model_validator(mode="after")
    def _distinct(self) -> Improvement:
        seen: set[tuple[str, str]] = set()
        for i, v in enumerate(self.variants):
            if v.key == self.base.key:
                raise ValueError(f"variants.{i} is the base itself ({v.model}, {v.prompt_mode})")
            if v.key in seen or v.shown in {w.shown for w in self.variants[:i]}:
                raise ValueError(f"variants.{i} repeats an earlier variant ({v.shown})")
            seen.add(v.key)
        return self


class GieAblation(BaseModel):
    """Table 11: ``without`` trained with no GIE data; ``with`` maps an edit type to the model trained with that
    edit type alone."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    label: str | None = Field(None, min_length=1, max_length=120)
    without: Arm
    with_: dict[GieEdit, Arm] = Field(alias="with", min_length=1)


class DescriptionPair(BaseModel):
    """Table 13: ``visual`` sees the images; ``description`` answers from an MLLM's description of them (a
    caption-chain model)."""

    model_config = ConfigDict(extra="forbid")

    label: str | None = Field(None, min_length=1, max_length=120)
    visual: Arm
    description: Arm

    @model_validator(mode="after")
    def _distinct(self) -> DescriptionPair:
        if self.visual.key == self.description.key:
            raise ValueError("visual and description are the same model and prompt mode")
        return self

    @property
    def shown(self) -> str:
        return self.label or self.visual.shown


class Comparisons(BaseModel):
    model_config = ConfigDict(extra="forbid")

    improvements: list[Improvement] = Field(default_factory=list)
    gie_ablation: list[GieAblation] = Field(default_factory=list)
    description: list[DescriptionPair] = Field(default_factory=list)

    @field_validator("improvements", "gie_ablation", "description", mode="before")
    @classmethod
    def _none_is_empty(cls, v: Any) -> Any:
        return [] if v is None else v

    @property
    def empty(self) -> bool:
        return not (self.improvements or self.gie_ablation or self.description)

    def arms(self) -> list[tuple[str, Arm]]:
        """Every arm with its field path, in spec order."""
        out: list[tuple[str, Arm]] = []
        for i, imp in enumerate(self.improvements):
            out.append((f"improvements.{i}.base", imp.base))
            out += [(f"improvements.{i}.variants.{j}", v) for j, v in enumerate(imp.variants)]
        for i, ab in enumerate(self.gie_ablation):
            out.append((f"gie_ablation.{i}.without", ab.without))
            out += [(f"gie_ablation.{i}.with.{e}", a) for e, a in ab.with_.items()]
        for i, d in enumerate(self.description):
            out += [(f"description.{i}.visual", d.visual), (f"description.{i}.description", d.description)]
        return out


def parse_comparisons(raw: Any, source: str = "comparisons") -> Comparisons:
    """The spec in ``raw`` (a loaded YAML mapping); a problem is one ``ComparisonError`` line
    ``SOURCE: field F: what is wrong``."""
    if not isinstance(raw, Mapping):
        raise ComparisonError(f"{source}: the top level must be a mapping with improvements / gie_ablation / "
                              "description")
    try:
        return Comparisons.model_validate(dict(raw))
    except ValidationError as e:
        err = e.errors()[0]
        loc = ".".join(str(p) for p in err["loc"] if p not in ("function-after[_distinct()]",)) or "(top level)"
        msg = str(err["msg"]).removeprefix("Value error, ")
        raise ComparisonError(f"{source}: field {loc}: {msg}") from None


def missing_arms(spec: Comparisons, present: Iterable[tuple[str, str]], source: str = "comparisons") -> list[str]:
    """One line per arm of ``spec`` without GraphVerse samples among ``present`` (model, prompt mode) pairs."""
    have = set(present)
    shown = ", ".join(f"{m}/{p}" for m, p in sorted(have)) or "none"
    return [f"{source}: field {path}: no GraphVerse samples of model {arm.model!r} in prompt mode "
            f"{arm.prompt_mode!r} in these runs (they hold: {shown})"
            for path, arm in spec.arms() if arm.key not in have]


def auto_comparisons(present: Iterable[tuple[str, str]]) -> Comparisons:
    """The default without a spec: each model that has direct-inference samples and samples in other prompt
    modes (PoT) gets those modes as variants of its direct inference; nothing else is guessed."""
    modes: dict[str, set[str]] = {}
    for model, mode in present:
        modes.setdefault(model, set()).add(mode)
    imps = [Improvement(base=Arm(model=m), variants=[Arm(model=m, prompt_mode=p) for p in sorted(ms - {DIRECT_MODE})])
            for m, ms in sorted(modes.items()) if DIRECT_MODE in ms and len(ms) > 1]
    return Comparisons(improvements=imps)
