"""Text-only baseline (GraphVerse §5.1): a caption model describes the image(s), a text-only model answers
from the caption. Both calls are kept in the response's `trace`; usage and latency are summed."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from cluster.backends.base import ModelBackend
from evalcore.schema import ModelRequest, ModelResponse, Prompt, Usage
from evalcore.validation import first_error

CAPTION_TEMPLATE_VERSION = "caption-v1"
CAPTION_PROMPT = (
    "Describe the image(s) completely and precisely so that someone who cannot see them can solve a "
    "problem about them: list every node or item with its label and colour, every edge or connection "
    "with its weight or label, and every number, table cell and title shown. Do not solve anything."
)


class ChainStep(BaseModel):
    """`options.captioner` / `options.solver` of a caption chain: a model of its own."""

    # unknown keys were always ignored here; kept so, since configs in use may carry some
    model_config = ConfigDict(extra="ignore")

    name: str
    backend: str = "baseline"
    baseline: str | None = None
    options: dict[str, Any] = Field(default_factory=dict)


class ChainOptions(BaseModel):
    """`options:` of a model with `backend: caption-chain`."""

    model_config = ConfigDict(extra="ignore")

    captioner: ChainStep
    solver: ChainStep
    caption_prompt: str = CAPTION_PROMPT


def parse_chain(name: str, options: dict[str, Any]) -> ChainOptions:
    """The chain's options; a step without a name is called `<name>:captioner` / `<name>:solver`."""
    for part in ("captioner", "solver"):
        if part not in options:
            raise ValueError(f"model {name!r}: caption-chain needs options.{part}")
    steps = {part: {"name": f"{name}:{part}", **options[part]} for part in ("captioner", "solver")}
    try:
        return ChainOptions.model_validate({**options, **steps})
    except ValidationError as e:
        loc, msg = first_error(e)
        raise ValueError(f"model {name!r}: options{'.' + loc if loc else ''}: {msg}") from None


class CaptionChainBackend:
    """Two backends in a row, built by `cluster.backends.factory` from `ChainOptions`; API steps call the
    one LLM client through their own backend (`LiteLLMBackend`), so retries, limits and cost are theirs."""

    def __init__(self, captioner: ModelBackend, solver: ModelBackend, caption_prompt: str = CAPTION_PROMPT) -> None:
        self.captioner = captioner
        self.solver = solver
        self.needs_reference = captioner.needs_reference or solver.needs_reference
        self.caption_prompt = caption_prompt

    async def generate(self, requests: list[ModelRequest]) -> list[ModelResponse]:
        cap_reqs = [
            r.model_copy(update={"prompt": Prompt(text=self.caption_prompt, images=r.prompt.images,
                                                  template_version=CAPTION_TEMPLATE_VERSION)})
            for r in requests
        ]
        captions = await self.captioner.generate(cap_reqs)
        out: list[ModelResponse | None] = [None] * len(requests)
        todo = []
        for i, (req, cap) in enumerate(zip(requests, captions, strict=True)):
            if cap.status != "ok":
                out[i] = cap.model_copy(update={"trace": (_step("caption", cap),)})
                continue
            text = req.prompt.text + "\n\nDescription of the image(s), written by another model:\n" + (cap.text or "")
            prompt = Prompt(text=text, images=(), template_version=req.prompt.template_version + "+" + CAPTION_TEMPLATE_VERSION)
            todo.append((i, req.model_copy(update={"prompt": prompt}), cap))
        answers = await self.solver.generate([r for _, r, _ in todo]) if todo else []
        for (i, _req, cap), ans in zip(todo, answers, strict=True):
            out[i] = ans.model_copy(update={
                "usage": Usage(
                    prompt_tokens=cap.usage.prompt_tokens + ans.usage.prompt_tokens,
                    completion_tokens=cap.usage.completion_tokens + ans.usage.completion_tokens,
                    cost_usd=cap.usage.cost_usd + ans.usage.cost_usd,
                ),
                "latency_s": cap.latency_s + ans.latency_s,
                "attempts": max(cap.attempts, ans.attempts),
                "trace": (_step("caption", cap), _step("answer", ans)),
            })
        return [r for r in out if r is not None]


def _step(stage: str, r: ModelResponse) -> dict[str, Any]:
    return {"stage": stage, "status": r.status, "text": r.text, "error": r.error,
            "prompt_tokens": r.usage.prompt_tokens, "completion_tokens": r.usage.completion_tokens,
            "latency_s": round(r.latency_s, 4)}
