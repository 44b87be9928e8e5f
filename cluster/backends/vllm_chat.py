"""A vLLM replica's running engine as an LLM client: what the LLM judge calls when a model replica of the
cluster serves it (`cluster.judge_stage`; `cluster.backends.factory.chat_client` hands it out).

The client has the one LLM client's contract (`evalcore.llm_client.LLMClient.generate(messages, config) ->
Completion`, raising `CallFailed`), so the judge asks a replica's engine exactly as it asks an API.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from cluster.backends.vllm_engine import DEFAULT_TINY_PATH, VLLMBackend, _engine_dead, _first_line
from evalcore.llm_client import CallFailed, Completion
from evalcore.schema import Usage


class VLLMChatClient:
    """The LLM client's contract (`evalcore.llm_client.LLMClient.generate`) over a replica's running engine, for
    chats the caller wrote (the judge's system and user messages, text only): one request, its sampling
    settings, a JSON-schema `response_format` as vLLM structured outputs (xgrammar, as `vllm serve` applies
    it), the output as a `Completion`; what fails raises `CallFailed` (kind `model` for a request the engine
    refuses, e.g. a prompt over max_model_len; `infra` for an engine that failed to start or died). No HTTP
    and no rate limiter: the engine batches the calls of every batch in flight itself."""

    provider = "vllm"
    key_id = None
    limiter = None

    def __init__(self, backend: VLLMBackend) -> None:
        self.backend = backend
        self.model = str(backend.options.get("model") or DEFAULT_TINY_PATH)  # recorded as judge_served_model
        self.calls = 0

    async def generate(self, messages: list[dict[str, Any]], config: Any) -> Any:
        self.calls += 1
        b = self.backend
        if not b._thread.is_alive():
            raise CallFailed("infra", "engine loop gone", 1)
        fut = asyncio.run_coroutine_threadsafe(self._complete(messages, config), b._loop)
        return await asyncio.wrap_future(fut)

    async def _complete(self, messages: list[dict[str, Any]], config: Any) -> Any:
        """On the engine loop: one chat through the engine, its final output as a Completion."""
        from vllm import SamplingParams
        from vllm.sampling_params import StructuredOutputsParams

        b = self.backend
        err = await b._ensure_engine()
        if err is not None:
            raise CallFailed("infra", err, 1)
        fmt = config.response_format or {}
        schema = (fmt.get("json_schema") or {}).get("schema") if fmt.get("type") == "json_schema" else None
        # a weak model under a JSON grammar otherwise loops on whitespace until max_tokens (docs/vllm-cpu.md)
        structured = StructuredOutputsParams(json=schema, disable_any_whitespace=True) if schema else None
        sp = SamplingParams(temperature=config.temperature, max_tokens=config.max_tokens, seed=config.seed,
                            structured_outputs=structured)
        t0 = time.perf_counter()
        b.inflight += 1
        b.peak_inflight = max(b.peak_inflight, b.inflight)
        try:
            (prompt,) = await b._render([messages])
            out = await b._run_one(prompt, sp)
        except Exception as e:
            dead = _engine_dead(e)
            if dead:
                b._drop_engine()  # a new engine for the next call
            raise CallFailed("infra" if dead else "model", f"{type(e).__name__}: {_first_line(e)}", 1) from None
        finally:
            b.inflight -= 1
        if out is None or not out.outputs:
            raise CallFailed("infra", "the engine returned no output", 1)
        comp = out.outputs[0]
        return Completion(
            text=comp.text or "", finish_reason=comp.finish_reason, served_model=self.model,
            usage=Usage(prompt_tokens=len(out.prompt_token_ids or ()), completion_tokens=len(comp.token_ids)),
            latency_s=time.perf_counter() - t0, attempts=1)
