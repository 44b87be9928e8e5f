"""Provider API keys: read from the environment when needed, never logged, never stored.

* `key_env` / `get_key`: which environment variable holds a provider's key (overridable per model with
  `options.api_key_env`) and its value.
* `require_key`: called before any work; a missing key is one line naming the model and the variable.
* `redact`: removes every known key value (and key-shaped tokens) from a string before it is logged or stored.
* `key_id`: the limiter's id for a provider key, a hash of it: the key itself never leaves the process.
* `install_log_redaction`: a logging filter doing the same for litellm's, httpx's and our own log records.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re

PROVIDER_KEY_ENV: dict[str, str] = {
    "openai": "OPENAI_API_KEY",
    "text-completion-openai": "OPENAI_API_KEY",
    "azure": "AZURE_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "gemini": "GEMINI_API_KEY",
    "dashscope": "DASHSCOPE_API_KEY",
    "xai": "XAI_API_KEY",
    "mistral": "MISTRAL_API_KEY",
    "deepseek": "DEEPSEEK_API_KEY",
    "groq": "GROQ_API_KEY",
    "together_ai": "TOGETHERAI_API_KEY",
    "fireworks_ai": "FIREWORKS_AI_API_KEY",
    "openrouter": "OPENROUTER_API_KEY",
    "moonshot": "MOONSHOT_API_KEY",
    "deepinfra": "DEEPINFRA_API_KEY",
    "nvidia_nim": "NVIDIA_NIM_API_KEY",
    "perplexity": "PERPLEXITYAI_API_KEY",
    "cohere": "COHERE_API_KEY",
    "volcengine": "VOLCENGINE_API_KEY",
    "hosted_vllm": "HOSTED_VLLM_API_KEY",
}
# Local OpenAI-compatible servers: a key is optional (used when its variable is set).
KEY_OPTIONAL = frozenset({"hosted_vllm", "ollama", "ollama_chat", "lm_studio", "llamafile"})

# Bare model names litellm maps to a provider without a prefix.
_BARE_PREFIXES = (
    ("gpt-", "openai"),
    ("o1", "openai"),
    ("o3", "openai"),
    ("o4", "openai"),
    ("chatgpt", "openai"),
    ("claude", "anthropic"),
    ("gemini", "gemini"),
    ("grok", "xai"),
    ("qwen", "dashscope"),
)

_REDACTED = "[REDACTED]"
_MIN_SECRET_LEN = 8
# key-shaped tokens, redacted even when their value is unknown to this process
_PATTERNS = re.compile(
    r"(?:\bsk-[A-Za-z0-9_\-]{6,}|\bxai-[A-Za-z0-9_\-]{10,}|\bAIza[0-9A-Za-z_\-]{20,}"
    r"|(?<=Bearer )[^\s'\",]{6,}|(?<=api[_-]key=)[^\s'\",&]{6,})",
    re.IGNORECASE,
)
_extra_env: set[str] = set()
_extra_values: set[str] = set()


def provider_of(model: str) -> str:
    """The litellm provider of a model string: the prefix of 'provider/model', else known bare names."""
    if "/" in model:
        return model.split("/", 1)[0]
    low = model.lower()
    for prefix, provider in _BARE_PREFIXES:
        if low.startswith(prefix):
            return provider
    raise ValueError(f"cannot tell the provider of model {model!r}; write it as 'provider/model'")


def key_env(provider: str, api_key_env: str | None = None) -> str | None:
    """The environment variable holding the key (None: the provider needs none and none is configured)."""
    if api_key_env:
        _extra_env.add(api_key_env)
        return api_key_env
    return PROVIDER_KEY_ENV.get(provider, f"{provider.upper()}_API_KEY")


def get_key(provider: str, api_key_env: str | None = None) -> str | None:
    env = key_env(provider, api_key_env)
    value = os.environ.get(env, "") if env else ""
    if value:
        register_secret(value)
    return value or None


def require_key(model_name: str, provider: str, api_key_env: str | None = None) -> None:
    """Raise ValueError (one line naming the model and the variable) when the model's key is missing."""
    if get_key(provider, api_key_env) is None and (api_key_env or provider not in KEY_OPTIONAL):
        env = key_env(provider, api_key_env)
        raise ValueError(f"model {model_name!r}: API key missing: set the environment variable {env}")


def register_secret(value: str) -> None:
    """Also redact this value (e.g. a key read from a file) from now on."""
    if value and len(value) >= _MIN_SECRET_LEN:
        _extra_values.add(value)


def _known_values() -> list[str]:
    names = set(PROVIDER_KEY_ENV.values()) | _extra_env
    names |= {k for k in os.environ if k.endswith(("_API_KEY", "_TOKEN", "_SECRET", "_SECRET_KEY"))}
    values = {os.environ.get(n, "") for n in names} | _extra_values
    # longest first, so a key containing another key is removed whole
    return sorted((v for v in values if len(v) >= _MIN_SECRET_LEN), key=len, reverse=True)


def redact(text: str | None) -> str | None:
    """`text` with every known key value and key-shaped token replaced by [REDACTED]."""
    if not text:
        return text
    for value in _known_values():
        if value in text:
            text = text.replace(value, _REDACTED)
    return _PATTERNS.sub(_REDACTED, text)


def key_id(provider: str, key: str | None, api_base: str | None = None) -> str:
    """Stable id of a provider key (plus endpoint) for limiter names and logs: a hash, never the key."""
    h = hashlib.sha256(f"{provider}\x00{api_base or ''}\x00{key or ''}".encode()).hexdigest()
    return f"{provider}-{h[:16]}"


class RedactingFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        try:
            msg = record.getMessage()
        except Exception:  # a malformed record is not ours to fix
            return True
        clean = redact(msg)
        if clean != msg:
            record.msg, record.args = clean, None
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        return True


_FILTER = RedactingFilter()
# filters act only on records logged to that very logger (not its children), so each is named
_LOGGERS = (
    "LiteLLM",
    "LiteLLM Router",
    "LiteLLM Proxy",
    "litellm",
    "httpx",
    "httpcore",
    "openai",
    "openai._base_client",
    "aiohttp.client",
    "cluster.backends.litellm_api",
    "cluster.ratelimit",
)


def install_log_redaction() -> None:
    """Attach the redacting filter to litellm's, the HTTP clients' and our own loggers (idempotent)."""
    for name in _LOGGERS:
        lg = logging.getLogger(name)
        if _FILTER not in lg.filters:
            lg.addFilter(_FILTER)
