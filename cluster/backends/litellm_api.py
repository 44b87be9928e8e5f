"""API models (and OpenAI-compatible servers) as a model backend, through the one LLM client.

The calls, their retry policy, the shared per-key limiter, usage and cost and the redaction of errors are
`evalcore.llm_client`'s; this backend turns requests into chat messages and the client's outcome into
typed responses:

* image missing or sha256 mismatch     -> infra_error before any call
* more images than `max_images`        -> model_error before any call (the model's limit, as with vLLM)
* client kind `model` (400, context window, content policy), finish_reason content_filter -> model_error
* client kind `config` (401/403/404/402, unsupported params) or `infra` (retries spent, an HTTP 200 with
  `content: null` included) -> infra_error
* a text longer than `max_response_bytes` (default 1 MB) -> infra_error, its first bytes kept and the cap named

`attempts` counts every HTTP call, 429s included. `generate` never raises (except on cancellation).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import logging
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError

from evalcore import llm_client, ratelimit, secrets
from evalcore.llm_client import CallFailed, ClientOptions, GenerateConfig, LLMClient, clean_error
from evalcore.ratelimit import RateLimiter
from evalcore.schema import ModelRequest, ModelResponse
from evalcore.validation import first_error

log = logging.getLogger(__name__)


class LiteLLMOptions(ClientOptions):
    """`options:` of a model with `backend: litellm`: the LLM client's fields (`ClientOptions`, unknown fields
    refused) plus what only a model backend needs. These are every option the registry (cluster/registry.py)
    sets on an API model; the one schema, used by the driver's preflight and by the replica alike."""

    max_images: int | None = Field(
        None, ge=0, description="most images one request may carry (the provider's limit); more -> model_error "
        "before any call; None: no limit of ours"
    )
    request_args: dict[str, Any] | None = Field(
        None, description="sampling overrides (max_tokens, temperature), applied by the planner to every "
        "request (cluster.config.SamplingOverrides); validated with the ModelSpec"
    )


def client_options(name: str, options: dict[str, Any]) -> LiteLLMOptions:
    """The options of a model with `backend: litellm` (`LiteLLMOptions`), the model string defaulting to the
    model's name; a bad option is one ValueError line."""
    try:
        return LiteLLMOptions.model_validate({**options, "model": options.get("model") or name})
    except ValidationError as e:
        loc, msg = first_error(e)
        raise ValueError(f"model {name!r}: options{'.' + loc if loc else ''}: {msg}") from None


def preflight(name: str, options: dict[str, Any], *, keys: bool = True) -> None:
    """Validate a litellm model's options and (`keys`) check its key; call in the driver before any work."""
    opts = client_options(name, options)
    if keys:
        secrets.require_key(name, secrets.provider_of(opts.model), opts.api_key_env)


def ensure_shared_limiter(name: str, options: dict[str, Any]) -> str:
    """Create the model's per-key limiter actor from the driver (after Ray is up, before the replicas), so it
    lives as long as the driver rather than the first replica. Returns the key id."""
    return llm_client.ensure_shared_limiter(client_options(name, options))


def forget_replica(name: str, options: dict[str, Any], actor: Any) -> None:
    """The driver ended `actor`, a replica of this model: its key's limiter frees the slots it held and refuses
    the calls it left waiting, rather than letting each lapse a lease TTL later (a run that lost a node
    ends its replicas by the dozen)."""
    ratelimit.forget_holder(llm_client.limit_key(client_options(name, options))[0], actor)


class ImageError(Exception):
    pass


@lru_cache(maxsize=128)
def _data_uri(path: str, sha256: str) -> str:
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise ImageError(f"image unreadable: {path}: {e.strerror or e}") from None
    got = hashlib.sha256(data).hexdigest()
    if got != sha256:
        raise ImageError(f"image sha256 mismatch: {path}: expected {sha256[:12]}, found {got[:12]}")
    return "data:image/png;base64," + base64.b64encode(data).decode("ascii")


def build_messages(req: ModelRequest) -> list[dict[str, Any]]:
    """OpenAI-style chat messages: the images (as data: URIs, hash-checked) then the prompt text."""
    if not req.prompt.images:
        return [{"role": "user", "content": req.prompt.text}]
    root = Path(req.image_root)
    content: list[dict[str, Any]] = [
        {"type": "image_url", "image_url": {"url": _data_uri(str(root / img.path), img.sha256)}}
        for img in req.prompt.images
    ]
    content.append({"type": "text", "text": req.prompt.text})
    return [{"role": "user", "content": content}]


class LiteLLMBackend:
    needs_reference = False

    def __init__(self, name: str, options: dict[str, Any]) -> None:
        self.name = name
        self.opts = client_options(name, options)
        self.client = LLMClient(name, self.opts)
        self.model = self.client.opts.model
        self.key_id = self.client.key_id

    @property
    def limiter(self) -> RateLimiter:
        return self.client.limiter

    async def generate(self, requests: list[ModelRequest]) -> list[ModelResponse]:
        return list(await asyncio.gather(*(self._safe_one(r) for r in requests)))

    async def _safe_one(self, req: ModelRequest) -> ModelResponse:
        try:
            return await self._one(req)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # a bug of ours or litellm's: never lose the sample, never raise
            return self._fail("infra_error", f"unexpected: {llm_client.describe(e)}", attempts=1)

    async def _one(self, req: ModelRequest) -> ModelResponse:
        n_images, limit = len(req.prompt.images), self.opts.max_images
        if limit is not None and n_images > limit:
            return self._fail("model_error", f"too many images: {n_images} > max_images={limit}", attempts=0)
        try:
            messages = build_messages(req)
        except ImageError as e:
            return self._fail("infra_error", str(e), attempts=0)
        s = req.sampling
        config = GenerateConfig(temperature=s.temperature, max_tokens=s.max_tokens, seed=s.seed)
        try:
            c = await self.client.generate(messages, config)
        except CallFailed as e:
            return self._fail("model_error" if e.kind == "model" else "infra_error", e.message, e.attempts)
        if c.finish_reason == "content_filter":
            return ModelResponse(
                text=c.text or None,
                status="model_error",
                error="content_filter: output blocked",
                usage=c.usage,
                latency_s=c.latency_s,
                attempts=c.attempts,
            )
        if c.over_cap:  # the text kept is a cut one: it is recorded, with the cap, and never scored
            cap = self.opts.max_response_bytes
            return ModelResponse(
                text=c.text, status="infra_error", usage=c.usage, latency_s=c.latency_s, attempts=c.attempts,
                error=f"response of {c.over_cap} bytes is over max_response_bytes={cap}: its first {cap} bytes "
                "are kept, not scored")
        return ModelResponse(text=c.text, status="ok", usage=c.usage, latency_s=c.latency_s, attempts=c.attempts)

    def _fail(self, status: Literal["model_error", "infra_error"], msg: str, attempts: int) -> ModelResponse:
        err = clean_error(msg)
        if status == "infra_error":
            log.warning("%s: infra_error after %d attempt(s): %s", self.name, attempts, err)
        return ModelResponse(text=None, status=status, error=err, attempts=attempts)
