"""Built-in baselines as a backend, so they travel the exact path a real model does."""

from __future__ import annotations

import asyncio
import time

from evalcore.baselines import BaselineKind, baseline_answer
from evalcore.schema import ModelRequest, ModelResponse, Usage


class BaselineBackend:
    needs_reference = True

    def __init__(self, kind: str, latency_s: float = 0.0) -> None:
        self.kind: BaselineKind = kind  # type: ignore[assignment]
        # simulated per-batch model latency (benchmarks and fault tests); 0 for real use
        self.latency_s = latency_s

    async def generate(self, requests: list[ModelRequest]) -> list[ModelResponse]:
        if self.latency_s:
            await asyncio.sleep(self.latency_s)
        out = []
        for req in requests:
            t0 = time.perf_counter()
            try:
                text = baseline_answer(self.kind, req)
            except Exception as e:  # a baseline bug is the "model's" fault, not the infrastructure's
                out.append(ModelResponse(text=None, status="model_error", error=f"{type(e).__name__}: {e}"))
                continue
            out.append(
                ModelResponse(
                    text=text,
                    status="ok",
                    usage=Usage(prompt_tokens=len(req.prompt.text) // 4, completion_tokens=len(text) // 4),
                    latency_s=time.perf_counter() - t0,
                )
            )
        return out
