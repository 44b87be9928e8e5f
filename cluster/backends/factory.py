"""A model backend from its config: the one place that knows every backend.

Composite backends (the caption chain) get their parts built here and handed to them, so no backend
module imports the factory back.
"""

from __future__ import annotations

from typing import Any

from cluster.backends.base import ModelBackend
from cluster.backends.baseline import BaselineBackend
from cluster.backends.caption_chain import CaptionChainBackend, parse_chain
from cluster.backends.litellm_api import LiteLLMBackend
from cluster.backends.simulated import SimulatedBackend
from cluster.backends.transformers_engine import TransformersBackend
from cluster.backends.vllm_chat import VLLMChatClient
from cluster.backends.vllm_engine import VLLMBackend


def make_backend(backend: str, name: str, baseline: str | None, options: dict[str, Any]) -> ModelBackend:
    if backend == "baseline":
        return BaselineBackend(baseline or name, latency_s=float(options.get("latency_s", 0.0)))
    if backend == "vllm":
        return VLLMBackend(options, name)
    if backend == "transformers":
        return TransformersBackend(options, name)
    if backend == "litellm":
        return LiteLLMBackend(name, options)
    if backend == "caption-chain":
        chain = parse_chain(name, options)
        steps = [make_backend(s.backend, s.name, s.baseline, s.options) for s in (chain.captioner, chain.solver)]
        return CaptionChainBackend(*steps, caption_prompt=chain.caption_prompt)
    if backend == "simulated":  # bench/bench_schedule.py only; refused without options.benchmark_only
        return SimulatedBackend(name, options)
    raise ValueError(f"model {name!r}: unknown backend {backend!r}")


def chat_client(backend: ModelBackend) -> Any:
    """The backend as an LLM client for chats the caller writes (`generate(messages, config) -> Completion`):
    what the LLM judge calls on a model replica (`cluster.judge_stage`). A vLLM replica's engine, or an API
    model's client; other backends cannot judge (ValueError)."""
    if isinstance(backend, VLLMBackend):
        return VLLMChatClient(backend)
    if isinstance(backend, LiteLLMBackend):
        return backend.client
    raise ValueError(f"backend {type(backend).__name__} cannot serve a judge (a vllm or litellm model can)")


def check_options(backend: str, name: str, options: dict[str, Any], *, keys: bool = True) -> None:
    """Validate a model's backend options against its backend's one schema, in the driver, before any work;
    a bad option is one ValueError line. API keys are checked too (`litellm_api.preflight`) unless `keys` is
    False (`--plan` refuses a bad option but lists a missing key)."""
    if backend == "baseline":
        latency = options.get("latency_s", 0.0)
        # simulated latency slept per batch: finite and capped, or one bad value hangs every batch
        if isinstance(latency, bool) or not isinstance(latency, int | float) or not 0 <= latency <= 600:
            raise ValueError(f"model {name!r}: options.latency_s: {latency!r} is not a number of seconds in 0..600")
    elif backend == "litellm":
        from cluster.backends.litellm_api import preflight

        preflight(name, options, keys=keys)
    elif backend == "vllm":
        from cluster.backends.vllm_engine import parse_options

        parse_options(name, options)
    elif backend == "transformers":
        from cluster.backends.transformers_engine import parse_options as parse_transformers_options

        parse_transformers_options(name, options)
    elif backend == "caption-chain":
        chain = parse_chain(name, options)
        for s in (chain.captioner, chain.solver):
            check_options(s.backend, s.name, s.options, keys=keys)
