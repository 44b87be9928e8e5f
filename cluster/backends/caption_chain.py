"""Text-only baseline (GraphVerse §5.1): a caption model describes the image(s), a text-only model answers
from the caption. Both calls are kept in the response's `trace`; usage and latency are summed."""

from __future__ import annotations

from typing import Any

from nphe4v.core.schema import ModelRequest, ModelResponse, Prompt, Usage

CAPTION_TEMPLATE_VERSION = "caption-v1"
CAPTION_PROMPT = (
    "Describe the image(s) completely and precisely so that someone who cannot see them can solve a "
    "problem about them: list every node or item with its label and colour, every edge or connection "
    "with its weight or label, and every number, table cell and title shown. Do not solve anything."
)


class CaptionChainBackend:
    def __init__(self, name: str, options: dict[str, Any]) -> None:
        from cluster.backends.base import make_backend

        try:
            cap, sol = options["captioner"], options["solver"]
        except KeyError as e:
            raise ValueError(f"model {name!r}: caption-chain needs options.{e.args[0]}") from None
        self.captioner = make_backend(cap.get("backend", "baseline"), cap.get("name", name + ":captioner"),
                                      cap.get("baseline"), cap.get("options", {}))
        self.solver = make_backend(sol.get("backend", "baseline"), sol.get("name", name + ":solver"),
                                   sol.get("baseline"), sol.get("options", {}))
        self.needs_reference = self.captioner.needs_reference or self.solver.needs_reference
        self.caption_prompt = options.get("caption_prompt", CAPTION_PROMPT)

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
