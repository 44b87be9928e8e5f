"""Provider API keys: read from the environment when needed, never logged, never stored.

* `key_env` / `get_key`: which environment variable holds a provider's key (overridable per model with
  `options.api_key_env`) and its value; `<VAR>_FILE` (a path) stands in for an unset `<VAR>` (the Docker /
  Kubernetes secret-file convention).
* `require_key`: called before any work; a missing key is one line naming the model and the variable.
* `redact`: the one redaction applied wherever a run writes (manifest, samples, judgments, reports, logs).
  On text it removes, by value, every known secret (the variables of every provider, of every `api_key_env`
  a config or the registry names, any `*_API_KEY` / `*_TOKEN` / `*_SECRET` ... variable, the files named by
  `*_FILE` variables, and every secret met so far) and, by shape, key-like tokens, URL query parameters
  (`?api_key=`, `&key=`, `token=`, `sig=` ...) and auth header values (`Authorization`, `api-key`,
  `x-api-key` ...). On a dict (a config) it also blanks fields named like a secret (`api_key`,
  `Authorization`, `X-Custom-Auth`), not those that merely contain the word (`max_tokens`; `api_key_env`
  holds a variable's name), and remembers every secret it found there (by field name or by shape, e.g. the
  key in an `api_base` query string), so that its later echoes (a provider repeating the key in a response)
  are removed by value too. Free text teaches nothing: a shape there may be a false positive.
* `redact_frame`: the same over a Polars frame's text columns, with a vectorised pre-filter (Parquet sinks).
* `key_id`: the limiter's id for a provider key, a hash of it: the key itself never leaves the process.
* `install_log_redaction`: a logging filter doing the same for litellm's, httpx's and our own log records.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
from collections.abc import Sequence
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

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
# Other credentials a run's environment commonly holds (cloud SDKs, hubs); redacted by value when set.
COMMON_SECRET_ENV = (
    "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AZURE_OPENAI_API_KEY",
    "GOOGLE_API_KEY", "VERTEXAI_API_KEY", "LITELLM_MASTER_KEY", "LITELLM_API_KEY", "WANDB_API_KEY",
    "GITHUB_TOKEN", "RAY_AUTH_TOKEN",
)
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

REDACTED = "[REDACTED]"  # in place of a secret inside text
FIELD_REDACTED = "<redacted>"  # the whole value of a field named like a secret
_MIN_SECRET_LEN = 8  # shorter values would also hit ordinary words and numbers when removed by value
_MAX_SECRET_FILE = 64 * 1024
_SECRET_ENV_SUFFIXES = ("_API_KEY", "_TOKEN", "_SECRET", "_SECRET_KEY", "_PASSWORD", "_ACCESS_KEY")
# The last word of a field name that makes its value a secret (api_key, Authorization, X-Custom-Auth,
# access_token, client_secret); `max_tokens` ends in `tokens` and `api_key_env` in `env`: both keep theirs.
_SECRET_WORDS = frozenset({
    "key", "apikey", "token", "secret", "password", "passwd", "pwd", "authorization", "auth", "credential",
    "credentials", "bearer", "signature", "sig", "cookie", "jwt",
})
# key-shaped tokens, redacted even when their value is unknown to this process. None can match inside
# base64 (images embedded in reports): base64 has no '-' or '_', and a Google key (AIza + 35) must end there.
_SHAPES = (
    r"(?-i:\b(?:sk-[A-Za-z0-9_\-]{6,}|xai-[A-Za-z0-9_\-]{10,}|AIza[0-9A-Za-z_\-]{35}\b|hf_[A-Za-z0-9]{20,}"
    r"|gsk_[A-Za-z0-9]{20,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}))"
)
# what a shape must start with, after a non-alphanumeric character: a superset of `\b` + shape, for the
# pre-filter (Rust regex) of `redact_frame` ("task-1" holds "sk-" but no shape)
_SHAPE_PREFILTER = r"(?:^|[^A-Za-z0-9])(?:sk-|xai-|AIza|hf_|gsk_|gh[pousr]_|github_pat_)"
# `Bearer <token>` anywhere (case-sensitive: "bearer" is an English word too)
_BEARER = r"(?-i:\bBearer)\s+(?P<bearer>[A-Za-z0-9._~+/=\-]{6,})"
# a URL query parameter named like a secret: ?api_key=..., &key=..., ;token=..., &sig=...
_QUERY_NAMES = ("key", "token", "sig", "signature", "secret", "password", "passwd", "auth", "credential",
                "credentials")
_QUERY = (r"(?P<qname>[?&;][A-Za-z0-9_.\-]*(?:" + "|".join(_QUERY_NAMES) + r")=)"
          r"(?P<query>[^&#\s'\"<>\\]+)")
# an auth header (or key field) written out in text: `Authorization: Bearer x`, `"x-api-key": "x"`,
# `'api_key': 'x'` (litellm's and the SDKs' error messages), `api-key=x`, also JSON-escaped (`\"`)
_HEADER_NAMES = ("proxy-authorization", "authorization", "x-goog-api-key", "x-api-key", "api-key", "api_key",
                 "apikey", "x-auth-token", "ocp-apim-subscription-key")
_HEADER = (r"\b(?P<hname>(?:" + "|".join(re.escape(h) for h in _HEADER_NAMES) + r")\\?[\"']?\s*[:=]\s*"
           r"\\?[\"']?(?!(?:(?:Bearer|Basic|Token)\s+)?(?:\[REDACTED\]|<redacted>))"  # redacted: as is
           r"(?:(?:Bearer|Basic|Token)\s+)?)(?P<header>[^\s'\",;}&\]\)\\]{4,})")
_PATTERN = re.compile("|".join((_HEADER, _QUERY, _BEARER, _SHAPES)), re.IGNORECASE)
# Literal substrings (ASCII case-insensitive) without which no pattern but the shapes can match: a text
# holding none of them, no shape start and no known secret is left as is without running the Python regex.
TRIGGERS = tuple(dict.fromkeys(("bearer", *(f"{n}=" for n in _QUERY_NAMES), *_HEADER_NAMES)))

_extra_env: set[str] = set()
_extra_values: set[str] = set()
_file_cache: dict[str, tuple[tuple[int, int], str]] = {}


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
    value = (os.environ.get(env, "") or _read_secret_file(os.environ.get(f"{env}_FILE", ""))) if env else ""
    if value:
        register_secret(value)
    return value or None


class MissingKey(ValueError):
    """A model's API key is not in this process's environment; `env` names the variable."""

    def __init__(self, model_name: str, env: str | None) -> None:
        super().__init__(f"model {model_name!r}: API key missing: set the environment variable {env}")
        self.model_name, self.env = model_name, env


def require_key(model_name: str, provider: str, api_key_env: str | None = None) -> None:
    """Raise MissingKey (one line naming the model and the variable) when the model's key is missing."""
    if get_key(provider, api_key_env) is None and (api_key_env or provider not in KEY_OPTIONAL):
        raise MissingKey(model_name, key_env(provider, api_key_env))


def register_secret(value: str) -> None:
    """Also redact this value (e.g. a key read from a file) from now on."""
    if value and len(value) >= _MIN_SECRET_LEN:
        _extra_values.add(value)


def register_env(name: str) -> None:
    """Also redact the value of this environment variable (and of the file its `_FILE` twin names)."""
    if name:
        _extra_env.add(name)


def _read_secret_file(path: str) -> str:
    """The stripped content of a secret file, '' when unreadable; cached on (mtime, size)."""
    if not path:
        return ""
    try:
        st = os.stat(path)
        stamp = (st.st_mtime_ns, st.st_size)
        hit = _file_cache.get(path)
        if hit and hit[0] == stamp:
            return hit[1]
        value = Path(path).read_bytes()[:_MAX_SECRET_FILE].decode("utf-8", "replace").strip() if st.st_size else ""
    except (OSError, ValueError):
        return ""
    _file_cache[path] = (stamp, value)
    return value


@lru_cache(maxsize=1)
def _registry_env() -> frozenset[str]:
    """Every `api_key_env` the model registry (cluster/models.yaml) names: read as text, so that redaction
    never depends on the registry being valid. Found as package data by name (not imported): the core knows
    no module above it."""
    try:
        text = (resources.files("cluster") / "models.yaml").read_text(encoding="utf-8")
    except (OSError, ModuleNotFoundError):
        return frozenset()
    return frozenset(re.findall(r"^\s*api_key_env:\s*['\"]?([A-Z][A-Z0-9_]*)", text, flags=re.MULTILINE))


def known_env_names() -> set[str]:
    """The environment variables whose values are secrets (set or not)."""
    names = set(PROVIDER_KEY_ENV.values()) | set(COMMON_SECRET_ENV) | _registry_env() | _extra_env
    names |= {k for k in os.environ if k.upper().endswith(_SECRET_ENV_SUFFIXES)}
    return names


def _known_values() -> list[str]:
    names = known_env_names()
    values = {os.environ.get(n, "") for n in names} | _extra_values
    files = {os.environ.get(f"{n}_FILE", "") for n in names}
    files |= {v for k, v in os.environ.items() if k.upper().endswith(tuple(f"{s}_FILE" for s in _SECRET_ENV_SUFFIXES))}
    values |= {_read_secret_file(p) for p in files if p}
    values = {v.strip() for v in values}
    # a key may be echoed URL-encoded (from a query string) as well as plain
    values |= {quote(v, safe="") for v in values}
    # longest first, so a key containing another key is removed whole
    return sorted((v for v in values if len(v) >= _MIN_SECRET_LEN), key=lambda v: (-len(v), v))


@lru_cache(maxsize=8)
def _values_pattern(values: tuple[str, ...]) -> re.Pattern[str] | None:
    return re.compile("|".join(map(re.escape, values))) if values else None


def _learn(value: str) -> None:
    value = value.strip()
    if not any(c.isspace() for c in value):
        register_secret(value)
        register_secret(unquote(value))


def _shape_sub(learn: bool) -> Any:
    def sub(m: re.Match[str]) -> str:
        for group, keep in (("header", "hname"), ("query", "qname"), ("bearer", None)):
            value = m.group(group)
            if value is not None:
                if learn:
                    _learn(value)
                head = m.group(keep) if keep else m.group(0)[: m.start(group) - m.start()]
                return head + REDACTED
        if learn:
            _learn(m.group(0))
        return REDACTED

    return sub


_SUB, _SUB_LEARN = _shape_sub(False), _shape_sub(True)


def _redact_text(text: str, values: list[str], learn: bool = False) -> str:
    """Known values, then shapes. `learn` (config strings only, never free text such as responses, where
    a shape may be a false positive) remembers what the shapes found."""
    pattern = _values_pattern(tuple(values))
    if pattern is not None:
        text = pattern.sub(REDACTED, text)
    return _PATTERN.sub(_SUB_LEARN if learn else _SUB, text)


def is_secret_field(name: object) -> bool:
    """True for a field (or header) name whose value is a secret: its last word is key, token, auth, ..."""
    words = re.split(r"[^a-z0-9]+", re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", str(name)).lower())
    words = [w for w in words if w]
    return bool(words) and words[-1] in _SECRET_WORDS


def learn(obj: Any) -> None:
    """Remember the secrets a config holds (fields named like a secret, key-shaped parts of its strings, the
    variables its `api_key_env` fields name) without redacting anything: for processes that write samples
    or logs of a config they did not write the manifest of (model and judge actors)."""
    redact(obj)


def redact(obj: Any) -> Any:
    """`obj` with every secret removed (see the module docstring): a string, or a JSON-like dict / list
    (e.g. a config dump) whose secret-named fields become '<redacted>'. Other values are returned as is."""
    if isinstance(obj, str):
        return _redact_text(obj, _known_values()) if obj else obj
    if isinstance(obj, dict | list | tuple):
        _register_env_names(obj)
        values = _known_values()
        return _redact_tree(obj, values)
    return obj


def _register_env_names(obj: Any) -> None:
    if isinstance(obj, dict):
        for k, v in obj.items():
            if str(k).lower().replace("-", "_").endswith("key_env") and isinstance(v, str):
                register_env(v)
            else:
                _register_env_names(v)
    elif isinstance(obj, list | tuple):
        for v in obj:
            _register_env_names(v)


def _redact_tree(obj: Any, values: list[str]) -> Any:
    if isinstance(obj, str):
        return _redact_text(obj, values, learn=True) if obj else obj
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            if is_secret_field(k) and v not in (None, "") and not isinstance(v, bool):
                _learn_leaves(v)
                out[k] = FIELD_REDACTED
            else:
                out[k] = _redact_tree(v, values)
        return out
    if isinstance(obj, list | tuple):
        return [_redact_tree(v, values) for v in obj]
    return obj


def _learn_leaves(obj: Any) -> None:
    if isinstance(obj, str):
        _learn(obj)
        # `Authorization: Bearer <key>`: the key alone is the secret that may be echoed back
        _learn(obj.split()[-1] if obj.split() else obj)
    elif isinstance(obj, dict):
        for v in obj.values():
            _learn_leaves(v)
    elif isinstance(obj, list | tuple):
        for v in obj:
            _learn_leaves(v)


def redact_frame(frame: Any, keep: Sequence[str] = ()) -> Any:
    """A Polars DataFrame with `redact` applied to every text column but `keep` (a sink's key columns,
    which must stay as they were for resume to find them). Only cells holding a known secret or a trigger
    of the patterns (found by a vectorised Aho-Corasick scan and one Rust regex) go through Python."""
    import polars as pl

    cols = [c for c, t in frame.schema.items() if t == pl.String() and c not in keep]
    if frame.is_empty() or not cols:
        return frame
    values = _known_values()
    needles = list(dict.fromkeys((*values, *TRIGGERS)))
    updates = []
    for c in cols:
        s = frame.get_column(c)
        mask = (s.str.contains_any(needles, ascii_case_insensitive=True) | s.str.contains(_SHAPE_PREFILTER))
        mask = mask.fill_null(False)
        if not mask.any():
            continue
        cells = s.to_list()
        for i in mask.arg_true().to_list():
            cells[i] = _redact_text(cells[i], values)
        updates.append(pl.Series(c, cells, dtype=pl.String()))
    return frame.with_columns(updates) if updates else frame


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
    "evalcore.ratelimit",
    "judge.llm_judge",
)


def install_log_redaction() -> None:
    """Attach the redacting filter to litellm's, the HTTP clients' and our own loggers, and to the root
    logger's handlers (a handler's filter sees every record it writes, from any logger) (idempotent)."""
    for name in _LOGGERS:
        lg = logging.getLogger(name)
        if _FILTER not in lg.filters:
            lg.addFilter(_FILTER)
    for handler in logging.getLogger().handlers:
        if _FILTER not in handler.filters:
            handler.addFilter(_FILTER)
