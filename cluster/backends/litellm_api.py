"""API models (and OpenAI-compatible servers) through litellm, with our own retries and a shared limiter.

litellm and the OpenAI SDK run with `num_retries=0, max_retries=0`: every 429 reaches the per-key limiter
(`nphe4v.core.ratelimit`), which pauses all callers of the key until Retry-After. Per request:

* 429                                  -> report to the limiter, wait for its pause, retry (up to `max_rate_limited`)
* 5xx, timeout, connection, bad JSON   -> retry with exponential backoff, `max_attempts` tries, then infra_error
* 400, context window, content policy  -> model_error (the model's fault), no retry
* 401/403/404/402, unsupported params  -> infra_error (configuration), no retry
* image missing or sha256 mismatch     -> infra_error before any call

`attempts` counts every HTTP call, 429s included. Error strings are redacted (no key ever leaves). `generate`
never raises (except on cancellation).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import logging
import os
import random
import time
from email.utils import parsedate_to_datetime
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from nphe4v.core import secrets
from nphe4v.core.ratelimit import LimitSettings, RateLimiter, SharedLimiter, in_ray_actor, local_limiter
from nphe4v.core.schema import ModelRequest, ModelResponse, Usage

log = logging.getLogger(__name__)

_ERR_MAX = 500


class LiteLLMOptions(BaseModel):
    """`options:` of a model with `backend: litellm`."""

    model_config = ConfigDict(extra="forbid")

    model: str | None = Field(
        None, description="litellm model string, e.g. 'openai/gpt-4o'; default: the name"
    )
    api_base: str | None = Field(None, description="endpoint, e.g. http://host:8000/v1 for hosted_vllm/...")
    api_key_env: str | None = Field(None, description="environment variable holding the key")
    max_concurrency: int = Field(8, ge=1, description="requests in flight per provider key, all replicas")
    rpm: float | None = Field(None, gt=0, description="requests per minute per provider key")
    timeout_s: float = Field(120.0, gt=0, description="per HTTP call")
    max_attempts: int = Field(3, ge=1, description="tries on transient errors (5xx, timeout, bad JSON)")
    max_rate_limited: int = Field(30, ge=1, description="429s tolerated per request before infra_error")
    backoff_base_s: float = Field(1.0, ge=0)
    backoff_max_s: float = Field(60.0, ge=0)
    limiter: Literal["auto", "shared", "local"] = Field(
        "auto", description="shared = one Ray actor per key; auto = shared inside a Ray actor, else local"
    )
    drop_params: bool = Field(True, description="let litellm drop sampling params a provider rejects")
    seed: int = Field(0, description="seed of the retry jitter")
    extra: dict[str, Any] = Field(default_factory=dict, description="passed to litellm.acompletion as is")


def parse_options(name: str, options: dict[str, Any]) -> LiteLLMOptions:
    try:
        opts = LiteLLMOptions.model_validate(options)
    except ValidationError as e:
        err = e.errors()[0]
        loc = ".".join(str(p) for p in err["loc"]) or "options"
        raise ValueError(f"model {name!r}: options.{loc}: {err['msg']}") from None
    if opts.model is None:
        opts = opts.model_copy(update={"model": name})
    return opts


def preflight(name: str, options: dict[str, Any]) -> None:
    """Validate a litellm model's options and check its key; call in the driver before any work."""
    opts = parse_options(name, options)
    assert opts.model is not None
    secrets.require_key(name, secrets.provider_of(opts.model), opts.api_key_env)


def _limit_key(opts: LiteLLMOptions, model: str) -> tuple[str, LimitSettings]:
    provider = secrets.provider_of(model)
    key = secrets.get_key(provider, opts.api_key_env)
    settings = LimitSettings(
        max_concurrency=opts.max_concurrency,
        rpm=opts.rpm,
        backoff_base_s=max(opts.backoff_base_s, 0.01),
        backoff_max_s=opts.backoff_max_s,
        seed=opts.seed,
    )
    return secrets.key_id(provider, key, opts.api_base), settings


def ensure_shared_limiter(name: str, options: dict[str, Any]) -> str:
    """Create the model's per-key limiter actor from the driver (after Ray is up, before the replicas), so it
    lives as long as the driver rather than the first replica. Returns the key id."""
    from nphe4v.core.ratelimit import get_or_create_limiter_actor

    opts = parse_options(name, options)
    key, settings = _limit_key(opts, opts.model or name)
    get_or_create_limiter_actor(key, settings)
    return key


def _litellm() -> Any:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True  # no "Give Feedback" banners on stdout
    secrets.install_log_redaction()
    return litellm


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


def retry_after_s(exc: BaseException) -> float | None:
    """Retry-After of a rate-limit error, in seconds (header forms: seconds, HTTP date, retry-after-ms)."""
    sources = [getattr(exc, "litellm_response_headers", None), getattr(exc, "headers", None)]
    resp = getattr(exc, "response", None)
    sources.append(getattr(resp, "headers", None))
    for headers in sources:
        if not headers:
            continue
        try:
            h = {str(k).lower().removeprefix("llm_provider-"): str(v) for k, v in dict(headers).items()}
        except Exception:
            continue
        if "retry-after-ms" in h:
            try:
                return max(0.0, float(h["retry-after-ms"]) / 1000.0)
            except ValueError:
                pass
        if "retry-after" in h:
            v = h["retry-after"].strip()
            try:
                return max(0.0, float(v))
            except ValueError:
                try:
                    return max(0.0, parsedate_to_datetime(v).timestamp() - time.time())
                except (TypeError, ValueError):
                    pass
    return None


Verdict = Literal["rate_limited", "transient", "model", "config"]


def classify(exc: BaseException) -> Verdict:
    ll = _litellm()
    if isinstance(exc, ll.RateLimitError):
        return "rate_limited"
    if isinstance(exc, ll.ContextWindowExceededError | ll.ContentPolicyViolationError):
        return "model"
    config = (
        ll.AuthenticationError,
        ll.PermissionDeniedError,
        ll.NotFoundError,
        ll.UnsupportedParamsError,
        ll.BudgetExceededError,
        getattr(ll.exceptions, "PaymentRequiredError", ll.AuthenticationError),
        getattr(ll.exceptions, "LiteLLMUnknownProvider", ll.AuthenticationError),
    )
    if isinstance(exc, config):
        return "config"
    if isinstance(exc, ll.BadRequestError | ll.UnprocessableEntityError):
        return "model"
    # 5xx, timeouts, connection errors, unparsable bodies, anything unexpected: worth another try
    return "transient"


class LiteLLMBackend:
    needs_reference = False

    def __init__(self, name: str, options: dict[str, Any]) -> None:
        self.name = name
        self.opts = parse_options(name, options)
        secrets.learn(options)  # keys inline in api_base or headers: this process redacts them by value too
        self.model: str = self.opts.model or name
        self.provider = secrets.provider_of(self.model)
        secrets.require_key(name, self.provider, self.opts.api_key_env)
        self._api_key = secrets.get_key(self.provider, self.opts.api_key_env)
        self.key_id, settings = _limit_key(self.opts, self.model)
        self._rng = random.Random(self.opts.seed)
        shared = self.opts.limiter == "shared" or (self.opts.limiter == "auto" and in_ray_actor())
        self.limiter: RateLimiter = (
            SharedLimiter(self.key_id, settings) if shared else local_limiter(self.key_id, settings)
        )
        self._ll = _litellm()

    async def generate(self, requests: list[ModelRequest]) -> list[ModelResponse]:
        return list(await asyncio.gather(*(self._safe_one(r) for r in requests)))

    async def _safe_one(self, req: ModelRequest) -> ModelResponse:
        try:
            return await self._one(req)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # a bug of ours or litellm's: never lose the sample, never raise
            return self._fail("infra_error", f"unexpected: {type(e).__name__}: {e}", attempts=1)

    async def _one(self, req: ModelRequest) -> ModelResponse:
        try:
            messages = build_messages(req)
        except ImageError as e:
            return self._fail("infra_error", str(e), attempts=0)
        attempts = transient = limited = 0
        while True:
            attempts += 1
            t0 = time.monotonic()
            try:
                async with self.limiter.slot():
                    try:
                        resp = await asyncio.wait_for(self._call(messages, req), self.opts.timeout_s + 15)
                    except self._ll.RateLimitError as e:
                        await self.limiter.report_rate_limited(retry_after_s(e))
                        raise
                out = self._response(resp, attempts, time.monotonic() - t0)
            except asyncio.CancelledError:
                raise
            except Exception as e:
                kind = classify(e)
                msg = _describe(e)
                if kind == "rate_limited":
                    limited += 1
                    if limited >= self.opts.max_rate_limited:
                        return self._fail("infra_error", f"rate limited {limited} times: {msg}", attempts)
                    continue  # the next slot() waits out the key's pause
                if kind == "model":
                    return self._fail("model_error", msg, attempts)
                if kind == "config":
                    return self._fail("infra_error", msg, attempts)
                transient += 1
                if transient >= self.opts.max_attempts:
                    return self._fail("infra_error", f"after {transient} tries: {msg}", attempts)
                log.info("%s: transient error (try %d): %s", self.name, transient, secrets.redact(msg))
                await asyncio.sleep(self._backoff(transient))
                continue
            return out

    async def _call(self, messages: list[dict[str, Any]], req: ModelRequest) -> Any:
        s = req.sampling
        kw: dict[str, Any] = {
            "temperature": s.temperature,
            "max_tokens": s.max_tokens,
            "drop_params": self.opts.drop_params,
        }
        if s.seed is not None:
            kw["seed"] = s.seed
        if self.opts.api_base:
            kw["api_base"] = self.opts.api_base
        if self._api_key:
            kw["api_key"] = self._api_key
        kw.update(self.opts.extra)
        # never let an option re-enable the client's own retries: 429s must reach the limiter
        kw.update(
            model=self.model, messages=messages, timeout=self.opts.timeout_s, num_retries=0, max_retries=0
        )
        return await self._ll.acompletion(**kw)

    def _response(self, resp: Any, attempts: int, latency: float) -> ModelResponse:
        choices = getattr(resp, "choices", None)
        if not choices:
            raise _BadResponse("response without choices")
        choice = choices[0]
        text = getattr(choice.message, "content", None) or ""
        usage = getattr(resp, "usage", None)
        u = Usage(
            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            cost_usd=self._cost(resp),
        )
        if choice.finish_reason == "content_filter":
            return ModelResponse(
                text=text or None,
                status="model_error",
                error="content_filter: output blocked",
                usage=u,
                latency_s=latency,
                attempts=attempts,
            )
        return ModelResponse(text=text, status="ok", usage=u, latency_s=latency, attempts=attempts)

    def _cost(self, resp: Any) -> float:
        hidden = getattr(resp, "_hidden_params", None) or {}
        cost = hidden.get("response_cost")
        if cost is None:
            try:
                cost = self._ll.completion_cost(completion_response=resp)
            except Exception:  # model not in litellm's price map (local servers): unknown, recorded as 0
                cost = 0.0
        return float(cost or 0.0)

    def _backoff(self, n: int) -> float:
        d = min(self.opts.backoff_base_s * 2 ** (n - 1), self.opts.backoff_max_s)
        return d / 2 + self._rng.uniform(0, d / 2)

    def _fail(self, status: Literal["model_error", "infra_error"], msg: str, attempts: int) -> ModelResponse:
        err = (secrets.redact(msg) or "")[:_ERR_MAX]
        if status == "infra_error":
            log.warning("%s: infra_error after %d attempt(s): %s", self.name, attempts, err)
        return ModelResponse(text=None, status=status, error=err, attempts=attempts)


class _BadResponse(Exception):
    pass


def _describe(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return f"{type(e).__name__}: {text}" if text else type(e).__name__
