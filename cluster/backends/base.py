"""The model backend contract: one method, a typed status per request, never an exception per sample.

A backend decides its own retries (rate limit vs transient vs permanent); what still fails after them is
returned as `infra_error` (excluded from accuracy) or `model_error` (the model's fault: counted as an
unparsable answer), never raised.

This module is the contract and knows no backend; `cluster.backends.factory.make_backend` builds one from a
model's config.
"""

from __future__ import annotations

from typing import Protocol

from evalcore.schema import ModelRequest, ModelResponse


class ModelBackend(Protocol):
    # True only for built-in baselines: the pipeline then attaches the instance data and gold.
    needs_reference: bool

    async def generate(self, requests: list[ModelRequest]) -> list[ModelResponse]: ...


def needs_reference(backend: str, options: dict) -> bool:
    """Whether requests must carry the instance data and gold: only built-in baselines read them.
    Decided from the config alone, so the planner need not construct a backend."""
    if backend == "baseline":
        return True
    if backend == "caption-chain":
        return any(needs_reference(options.get(k, {}).get("backend", "baseline"), options.get(k, {}).get("options", {}))
                   for k in ("captioner", "solver"))
    return False
