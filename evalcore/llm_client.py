"""The one LLM client: a litellm chat completion under one retry policy, the provider key's shared limiter,
token and cost accounting, timeouts and redacted errors. Model backends and the LLM judge both call it.

Shape (after inspect_ai's `ModelAPI`): one method, `generate(messages, config) -> Completion`; what still
fails after the policy raises `CallFailed` with the failure's kind, never a litellm exception.

The retry policy, per call (litellm and the OpenAI SDK run with `num_retries=0, max_retries=0`, so that
every 429 reaches the per-key limiter, `evalcore.ratelimit`, which pauses all callers of the key):

* 429                                  -> report to the limiter (with Retry-After), wait out the key's pause,
                                          retry; `max_rate_limited` of them -> kind `infra`
* 5xx, timeout, connection, bad body   -> retry after an exponential backoff with jitter (seeded); after
  (an HTTP 200 with `content: null`)      `max_attempts` tries -> kind `infra`
* 400, context window, content policy  -> kind `model` (the request's or the model's fault), no retry
* 401/403/404/402, unsupported params  -> kind `config`, no retry

A text longer than `max_response_bytes` (default 1 MB) is cut there and reported (`Completion.over_cap`).
`attempts` counts every HTTP call, 429s included. Every error message is redacted (`evalcore.secrets`)
before it leaves this module. Cancellation propagates.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import random
import time
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from evalcore import secrets
from evalcore.ratelimit import (
    LimitSettings,
    RateLimiter,
    SharedLimiter,
    get_or_create_limiter_actor,
    in_ray_actor,
    local_limiter,
)
from evalcore.schema import Usage

log = logging.getLogger(__name__)

ERR_MAX = 500  # characters of an error kept in a record
# A response's text is kept up to this many bytes: a provider answering 10 MB to a 1,024-token request would
# otherwise store it whole in every sample (and the scorers would read it).
MAX_RESPONSE_BYTES = 1_000_000

Verdict = Literal["rate_limited", "transient", "model", "config"]
FailureKind = Literal["model", "config", "infra"]


class ClientOptions(BaseModel):
    """Where to call and how hard to try: the callers map their own config (a model's `options:`, a judge
    spec) onto these fields."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str = Field(description="litellm model string, e.g. 'openai/gpt-4o'")
    api_base: str | None = None
    api_key_env: str | None = None
    # every count and time is finite and capped (the cap named by the error): `timeout_s: .inf` or a
    # million attempts would make one bad call hang or retry for ever
    max_concurrency: int = Field(8, ge=1, le=4096, description="calls in flight per provider key, all processes")
    rpm: float | None = Field(None, gt=0, le=1_000_000, allow_inf_nan=False,
                              description="requests per minute per provider key")
    timeout_s: float = Field(120.0, gt=0, le=3600, allow_inf_nan=False, description="per HTTP call")
    max_attempts: int = Field(3, ge=1, le=100, description="tries on transient errors (5xx, timeout, bad body)")
    max_rate_limited: int = Field(30, ge=1, le=10_000, description="429s tolerated per call before giving up")
    backoff_base_s: float = Field(1.0, ge=0, le=3600, allow_inf_nan=False)
    backoff_max_s: float = Field(60.0, ge=0, le=3600, allow_inf_nan=False)
    max_response_bytes: int = Field(
        MAX_RESPONSE_BYTES, ge=1, le=1 << 30,
        description="most bytes of a response's text kept (UTF-8); a longer one is cut here and the call "
        "reported `over_cap` (the backend records it as infra_error naming this cap)")
    limiter: Literal["auto", "shared", "local"] = Field(
        "auto", description="shared = one Ray actor per key; auto = shared inside a Ray actor, else local"
    )
    drop_params: bool = Field(True, description="let litellm drop sampling params a provider rejects")
    seed: int = Field(0, ge=-(2**63), le=2**63 - 1, description="seed of the retry jitter")
    extra: dict[str, Any] = Field(default_factory=dict, description="passed to litellm.acompletion as is")


class GenerateConfig(BaseModel):
    """The sampling settings of one call."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    temperature: float = 0.0
    max_tokens: int = 1024
    seed: int | None = None
    response_format: dict[str, Any] | None = None


@dataclass(frozen=True)
class Completion:
    """The model's first choice and what it cost."""

    text: str
    finish_reason: str | None
    served_model: str | None
    usage: Usage
    latency_s: float  # of the successful try (its wait for a slot included)
    attempts: int
    over_cap: int = 0  # bytes of the text when it was longer than `max_response_bytes` (then cut there), else 0


class CallFailed(Exception):
    """A call the retry policy gave up on; `message` is already redacted."""

    def __init__(self, kind: FailureKind, message: str, attempts: int) -> None:
        super().__init__(message)
        self.kind: FailureKind = kind
        self.message = message
        self.attempts = attempts


def clean_error(msg: str) -> str:
    """An error message as records keep it: redacted, then cut to `ERR_MAX` characters."""
    return (secrets.redact(msg) or "")[:ERR_MAX]


def describe(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


# ------------------------------------------------------------------------------------------- the policy


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


def classify(exc: BaseException) -> Verdict:
    """Which branch of the retry policy an exception of a call takes."""
    if isinstance(exc, _BadBody):
        return "transient"
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


def backoff_s(n: int, base_s: float, max_s: float, rng: random.Random) -> float:
    """Sleep before the n-th retry of a transient error: exponential, capped, with jitter in its upper half."""
    d = min(base_s * 2 ** (n - 1), max_s)
    return d / 2 + rng.uniform(0, d / 2)


# ------------------------------------------------------------------------------------------- the limiter


def limit_key(opts: ClientOptions) -> tuple[str, LimitSettings]:
    """The limiter key of the options' provider key and endpoint (a hash, never the key) and its settings."""
    provider = secrets.provider_of(opts.model)
    key = secrets.get_key(provider, opts.api_key_env)
    settings = LimitSettings(
        max_concurrency=opts.max_concurrency,
        rpm=opts.rpm,
        backoff_base_s=max(opts.backoff_base_s, 0.01),
        backoff_max_s=opts.backoff_max_s,
        seed=opts.seed,
    )
    return secrets.key_id(provider, key, opts.api_base), settings


def ensure_shared_limiter(opts: ClientOptions) -> str:
    """Create the key's limiter actor from the driver (after Ray is up, before any client in an actor), so
    it lives as long as the driver. Returns the key id."""
    key, settings = limit_key(opts)
    get_or_create_limiter_actor(key, settings)
    return key


# ------------------------------------------------------------------------------------------- the client


def _litellm() -> Any:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True  # no "Give Feedback" banners on stdout
    secrets.install_log_redaction()
    if not any(isinstance(f, secrets.RedactingFilter) for f in log.filters):
        log.addFilter(secrets.RedactingFilter())
    return litellm


class _BadBody(Exception):
    pass


class LLMClient:
    """One client per process and model (or judge); shares the limiter of its provider key."""

    def __init__(self, name: str, opts: ClientOptions, limiter: RateLimiter | None = None) -> None:
        """`name` names the model in errors and logs. `limiter` replaces the key's own (tests)."""
        self.name = name
        self.opts = opts
        secrets.learn(opts.model_dump())  # keys inline in api_base or headers: redacted by value too
        self.provider = secrets.provider_of(opts.model)
        secrets.require_key(name, self.provider, opts.api_key_env)
        self._api_key = secrets.get_key(self.provider, opts.api_key_env)
        self.key_id, settings = limit_key(opts)
        if limiter is None:
            shared = opts.limiter == "shared" or (opts.limiter == "auto" and in_ray_actor())
            limiter = SharedLimiter(self.key_id, settings) if shared else local_limiter(self.key_id, settings)
        self.limiter = limiter
        self._rng = random.Random(opts.seed)
        self._ll = _litellm()
        # accounting of this client: HTTP calls (retries included) and what the successful ones cost
        self.calls = 0
        self.usage = Usage()

    async def generate(self, messages: list[dict[str, Any]], config: GenerateConfig) -> Completion:
        transient = limited = attempts = 0
        while True:
            attempts += 1
            self.calls += 1
            t0 = time.monotonic()
            try:
                async with self.limiter.slot():
                    try:
                        resp = await asyncio.wait_for(self._call(messages, config), self.opts.timeout_s + 15)
                    except self._ll.RateLimitError as e:
                        await self.limiter.report_rate_limited(retry_after_s(e))
                        raise
                out = self._completion(resp, attempts, t0)
            except asyncio.CancelledError:
                raise
            except Exception as e:
                kind = classify(e)
                msg = describe(e)
                if kind == "rate_limited":
                    limited += 1
                    if limited >= self.opts.max_rate_limited:
                        raise CallFailed("infra", clean_error(f"rate limited {limited} times: {msg}"), attempts) from None
                    continue  # the next slot() waits out the key's pause
                if kind in ("model", "config"):
                    raise CallFailed(kind, clean_error(msg), attempts) from None
                transient += 1
                if transient >= self.opts.max_attempts:
                    raise CallFailed("infra", clean_error(f"after {transient} tries: {msg}"), attempts) from None
                log.info("%s: transient error (try %d): %s", self.name, transient, secrets.redact(msg))
                await asyncio.sleep(backoff_s(transient, self.opts.backoff_base_s, self.opts.backoff_max_s, self._rng))
                continue
            self.usage = Usage(
                prompt_tokens=self.usage.prompt_tokens + out.usage.prompt_tokens,
                completion_tokens=self.usage.completion_tokens + out.usage.completion_tokens,
                cost_usd=self.usage.cost_usd + out.usage.cost_usd,
            )
            return out

    async def _call(self, messages: list[dict[str, Any]], config: GenerateConfig) -> Any:
        kw: dict[str, Any] = {
            "temperature": config.temperature,
            "max_tokens": config.max_tokens,
            "drop_params": self.opts.drop_params,
        }
        if config.seed is not None:
            kw["seed"] = config.seed
        if config.response_format is not None:
            kw["response_format"] = config.response_format
        if self.opts.api_base:
            kw["api_base"] = self.opts.api_base
        if self._api_key:
            kw["api_key"] = self._api_key
        kw.update(self.opts.extra)
        # never let an option re-enable the client's own retries: 429s must reach the limiter
        kw.update(
            model=self.opts.model, messages=messages, timeout=self.opts.timeout_s, num_retries=0, max_retries=0
        )
        return await self._ll.acompletion(**kw)

    def _completion(self, resp: Any, attempts: int, t0: float) -> Completion:
        choices = getattr(resp, "choices", None)
        if not choices:
            raise _BadBody("response without choices")
        choice = choices[0]
        content = getattr(choice.message, "content", None)
        finish = getattr(choice, "finish_reason", None)
        if content is None and finish != "content_filter":
            # an HTTP 200 without an answer is the provider's failure, not a wrong answer: retried, then infra
            raise _BadBody(f"HTTP 200 without content (content: null, finish_reason {finish!r})")
        if not isinstance(content, str):  # structured content: kept as JSON text
            content = json.dumps(content) if content is not None else ""
        over_cap = 0
        cap = self.opts.max_response_bytes
        if len(content) > cap // 4:  # cheap test first: a str of n characters is at most 4n UTF-8 bytes
            raw = content.encode("utf-8", "surrogatepass")
            if len(raw) > cap:
                over_cap = len(raw)
                content = raw[:cap].decode("utf-8", "ignore")  # a character cut in half is dropped
        usage = getattr(resp, "usage", None)
        u = Usage(
            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            cost_usd=self._cost(resp),
        )
        served = getattr(resp, "model", None)
        return Completion(
            text=content, finish_reason=finish,
            served_model=str(served) if served else None, usage=u, latency_s=time.monotonic() - t0,
            attempts=attempts, over_cap=over_cap,
        )

    def _cost(self, resp: Any) -> float:
        hidden = getattr(resp, "_hidden_params", None) or {}
        cost = hidden.get("response_cost")
        if cost is None:
            try:
                cost = self._ll.completion_cost(completion_response=resp)
            except Exception:  # model not in litellm's price map (local servers): unknown, recorded as 0
                cost = 0.0
        return float(cost or 0.0)
