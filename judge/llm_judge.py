"""The LLM scoring agent (GraphVerse paper §4.4): any litellm model grades a response against the graph evidence.

Prompt: a versioned template file (judge/templates/<name>.txt plus task_instructions_<v>.yaml) filled in
one pass (substituted values are never re-scanned, so a response containing `{{gold}}` stays literal).
The model response is untrusted: `&`, `<`, `>` are escaped and it sits between an opening and a closing
tag that carry a nonce derived from its content, so injected closing tags cannot close the block.

Output: one pydantic reply model per prompt version (`judge.schema.output_model`) is the source of the JSON
schema the prompt shows and the request asks for (`response_format` json_schema, strict; vLLM structured outputs),
and of the check of the reply (`judge.schema.parse_verdict`, strict JSON types). Malformed output is retried
`max_malformed` times (each retry with another seed), then recorded as a typed `judge_error`
(`malformed`), never as a score. Every raw output is kept.

Calls: through the one LLM client (`evalcore.llm_client`: the provider key's shared limiter, which
honours Retry-After, backoff on 5xx/timeouts/bad bodies, usage and cost, redacted errors). What it gives up
on is a `judge_error`: `infra` when its retries are spent (not cached), `config` when the judge's request is
refused (bad key, unknown model, a 400).
"""

from __future__ import annotations

import asyncio
import hashlib
import html
import json
import re
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field

from evalcore import secrets
from evalcore.hashing import canonical_json, sha256_bytes
from evalcore.llm_client import (
    ERR_MAX,
    CallFailed,
    ClientOptions,
    GenerateConfig,
    LLMClient,
    clean_error,
    describe,
)
from evalcore.ratelimit import RateLimiter
from judge.schema import (
    MAX_CLAIM_CHARS_DEFAULT,
    MAX_STEPS_DEFAULT,
    JudgeErrorKind,
    JudgeVerdict,
    json_schema_of,
    output_model,
    parse_verdict,
)

TEMPLATE_DIR = Path(__file__).with_name("templates")
# v3: the grounded judge (verbatim quotes, structured facts checked by code, "leads to the answer"); v2 stays
# selectable (`template: vgr_judge_v2`) for old runs and their cached judgments
DEFAULT_TEMPLATE = "vgr_judge_v3"
_PLACEHOLDER = re.compile(r"\{\{([a-z_]+)\}\}")


# ------------------------------------------------------------------------------------------------ template


@dataclass(frozen=True)
class Template:
    name: str
    system: str
    user: str
    instructions: dict[str, str]
    schema: dict[str, Any]  # generated from `model` (judge.schema.json_schema_of)
    version: str  # "<name>#<sha256 of template, instructions and schema>[:12]"
    max_steps: int
    prompt_version: int  # the N of `_vN`: 3 and later ask for grounded steps (quote + structured fact)
    model: type[BaseModel]  # the reply's pydantic model: the schema's one source, and what validates a reply

    @property
    def grounded(self) -> bool:
        return self.prompt_version >= 3


@lru_cache(maxsize=16)
def load_template(
    name: str = DEFAULT_TEMPLATE,
    max_steps: int = MAX_STEPS_DEFAULT,
    max_claim_chars: int | None = MAX_CLAIM_CHARS_DEFAULT,
) -> Template:
    """Read a template family: `<name>.txt` (### system / ### user sections) and the task instructions
    file of the same version suffix (`task_instructions_<vN>.yaml`)."""
    path = TEMPLATE_DIR / f"{name}.txt"
    raw = path.read_text(encoding="utf-8")
    m = re.search(r"_(v\d+)$", name)
    if not m:
        raise ValueError(f"template name {name!r} must end with _v<N>")
    ipath = TEMPLATE_DIR / f"task_instructions_{m.group(1)}.yaml"
    iraw = ipath.read_text(encoding="utf-8")
    instructions = {str(k): " ".join(str(v).split()) for k, v in (yaml.safe_load(iraw) or {}).items()}
    parts = re.split(r"^### (system|user)\s*$", raw, flags=re.MULTILINE)
    sections = {parts[i]: parts[i + 1].strip("\n") for i in range(1, len(parts) - 1, 2)}
    if set(sections) != {"system", "user"}:
        raise ValueError(f"{path}: needs exactly one '### system' and one '### user' section")
    prompt_version = int(m.group(1)[1:])
    model = output_model(prompt_version, max_steps, max_claim_chars)
    schema = json_schema_of(model)
    digest = sha256_bytes((raw + "\x00" + iraw + "\x00" + canonical_json(schema)).encode())
    family = name.replace("_", "-")
    return Template(
        name=name, system=sections["system"], user=sections["user"], instructions=instructions,
        schema=schema, version=f"{family}#{digest[:12]}", max_steps=max_steps, prompt_version=prompt_version,
        model=model,
    )


def prompt_version_of(template_version: str | None) -> int:
    """The prompt version N of a recorded template version (`vgr-judge-v3#<hash>` -> 3; 0 if none)."""
    m = re.search(r"-v(\d+)(?:#|$)", template_version or "")
    return int(m.group(1)) if m else 0


def escape_untrusted(text: str) -> str:
    """`&`, `<`, `>` escaped: no tag inside the response can open or close a block of the prompt."""
    return html.escape(text, quote=False)


def nonce_for(response: str, bundle_sha: str) -> str:
    """Delimiter id of the response block: a hash of the content itself, so a response cannot contain
    the id of its own block (that would need a hash fixed point) and the prompt stays deterministic."""
    return hashlib.sha256(f"{bundle_sha}\x00{response}".encode()).hexdigest()[:16]


def _fill(text: str, values: dict[str, str]) -> str:
    def sub(m: re.Match[str]) -> str:
        key = m.group(1)
        if key not in values:
            raise KeyError(f"template placeholder {{{{{key}}}}} has no value")
        return values[key]

    return _PLACEHOLDER.sub(sub, text)


@dataclass(frozen=True)
class JudgeItem:
    """Everything the judge sees about one response."""

    task: str
    evidence: str
    gold: str
    question: str
    response: str
    repeat: int = 0

    @property
    def bundle_sha(self) -> str:
        """Hash of the trusted inputs (task, evidence, gold set, question)."""
        return sha256_bytes(canonical_json([self.task, self.evidence, self.gold, self.question]).encode())

    @property
    def response_sha(self) -> str:
        return sha256_bytes(self.response.encode())


def render_messages(t: Template, item: JudgeItem) -> list[dict[str, str]]:
    nonce = nonce_for(item.response, item.bundle_sha)
    instr = t.instructions.get("common", "") + "\n" + t.instructions.get(item.task.upper(), "")
    values = {
        "nonce": nonce,
        "task_instructions": instr.strip(),
        "question": item.question.strip() or "(not available)",
        "evidence": item.evidence.strip(),
        "gold": item.gold.strip(),
        "response": escape_untrusted(item.response),
        "max_steps": str(t.max_steps),
        # the schema the reply is validated against, as the request's response_format sends it
        "output_schema": json.dumps(t.schema, ensure_ascii=False),
    }
    return [
        {"role": "system", "content": _fill(t.system, values)},
        {"role": "user", "content": _fill(t.user, values)},
    ]


# ------------------------------------------------------------------------------------------------ settings


class JudgeSpec(BaseModel):
    """A judge: any litellm model string (or `rule-based`), with call and schema settings."""

    model_config = ConfigDict(extra="forbid")

    model: str = Field(description="litellm model string, e.g. 'openai/gpt-5.1'; 'rule-based' for the rule scorer")
    snapshot: str | None = Field(None, description="pinned model snapshot recorded and used in cache keys")
    api_base: str | None = None
    api_key_env: str | None = None
    template: str = DEFAULT_TEMPLATE
    # finite and capped, the cap named by the error (the same caps as the LLM client's options)
    temperature: float = Field(0.0, ge=0, le=10, allow_inf_nan=False)
    max_tokens: int = Field(4096, ge=16, le=1_000_000)
    max_steps: int = Field(MAX_STEPS_DEFAULT, ge=1, le=256)
    max_claim_chars: int | None = Field(MAX_CLAIM_CHARS_DEFAULT, ge=8, le=1_000_000)
    max_malformed: int = Field(3, ge=1, le=100, description="judge answers tried per judgment before judge_error")
    timeout_s: float = Field(300.0, gt=0, le=3600, allow_inf_nan=False)
    max_attempts: int = Field(4, ge=1, le=100, description="tries on transient errors (5xx, timeout, bad body)")
    max_rate_limited: int = Field(50, ge=1, le=10_000)
    max_concurrency: int = Field(8, ge=1, le=4096, description="calls in flight per provider key, all judge actors")
    rpm: float | None = Field(None, gt=0, le=1_000_000, allow_inf_nan=False)
    backoff_base_s: float = Field(1.0, ge=0, le=3600, allow_inf_nan=False)
    backoff_max_s: float = Field(60.0, ge=0, le=3600, allow_inf_nan=False)
    limiter: Literal["auto", "shared", "local"] = "auto"
    extra: dict[str, Any] = Field(default_factory=dict, description="passed to litellm.acompletion as is")

    @property
    def is_rule(self) -> bool:
        return self.model == "rule-based"

    @property
    def identity(self) -> str:
        return self.model

    @property
    def pinned(self) -> str:
        return self.snapshot or self.model

    def template_obj(self) -> Template:
        return load_template(self.template, self.max_steps, self.max_claim_chars)

    def cache_identity(self) -> list[Any]:
        """Judge settings that change its output, for the cache key. Without a pinned snapshot the
        endpoint is part of the judge's identity (a local server's model name says little)."""
        return [self.pinned, None if self.snapshot else self.api_base,
                {"temperature": self.temperature, "max_tokens": self.max_tokens, "max_steps": self.max_steps,
                 "max_claim_chars": self.max_claim_chars, "extra": {k: v for k, v in sorted(self.extra.items())}}]


def cache_key(spec: JudgeSpec, template_version: str, item: JudgeItem) -> str:
    """Content address of a judgment: (judge snapshot, endpoint and sampling settings, template version
    (prompt, task instructions and output schema), evidence bundle (task, evidence, gold set, question),
    response, judge repeat index, which sets the sampling seed)."""
    return sha256_bytes(canonical_json(
        [spec.cache_identity(), template_version, item.bundle_sha, item.response_sha, int(item.repeat)]
    ).encode())


def client_options(spec: JudgeSpec) -> ClientOptions:
    """The LLM client's options of a judge: its endpoint and retry settings; judges always let litellm drop
    sampling parameters a provider rejects, and jitter their retries from seed 0."""
    return ClientOptions(
        model=spec.model, api_base=spec.api_base, api_key_env=spec.api_key_env,
        max_concurrency=spec.max_concurrency, rpm=spec.rpm, timeout_s=spec.timeout_s,
        max_attempts=spec.max_attempts, max_rate_limited=spec.max_rate_limited,
        backoff_base_s=spec.backoff_base_s, backoff_max_s=spec.backoff_max_s, limiter=spec.limiter,
        drop_params=True, seed=0, extra=spec.extra,
    )


# ------------------------------------------------------------------------------------------------ calling


@dataclass
class JudgeResult:
    status: Literal["ok", "judge_error"]
    verdict: JudgeVerdict | None = None
    error_kind: JudgeErrorKind | None = None
    error: str | None = None
    raw_outputs: list[str] = field(default_factory=list)
    calls: int = 0
    served_model: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0

    @property
    def cacheable(self) -> bool:
        # only successful judgments: a malformed answer usually means a misconfigured judge (server flags,
        # token budget), and once that is fixed the rerun must ask again instead of replaying the failure
        return self.status == "ok"

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "verdict": None if self.verdict is None else self.verdict.model_dump(),
            "error_kind": self.error_kind,
            "error": self.error,
            "raw_outputs": self.raw_outputs,
            "calls": self.calls,
            "served_model": self.served_model,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cost_usd": self.cost_usd,
            "latency_s": self.latency_s,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> JudgeResult:
        v = d.get("verdict")
        return cls(
            status=d["status"], verdict=None if v is None else JudgeVerdict.model_validate(v),
            error_kind=d.get("error_kind"), error=d.get("error"), raw_outputs=list(d.get("raw_outputs") or []),
            calls=int(d.get("calls") or 0), served_model=d.get("served_model"),
            prompt_tokens=int(d.get("prompt_tokens") or 0), completion_tokens=int(d.get("completion_tokens") or 0),
            cost_usd=float(d.get("cost_usd") or 0.0), latency_s=float(d.get("latency_s") or 0.0),
        )


class LLMJudge:
    """One judge client (one per actor); `judge` never raises except on cancellation.

    `client`: anything with the LLM client's `generate(messages, config) -> Completion` (raising `CallFailed`),
    e.g. the chat client of the model replica that serves the judge (a vLLM engine: `cluster.judge_stage`);
    default: the one LLM client (litellm) with the spec's endpoint and retry settings."""

    def __init__(self, spec: JudgeSpec, limiter: RateLimiter | None = None, client: Any = None) -> None:
        if spec.is_rule:
            raise ValueError("LLMJudge needs a model; use judge.rule_scorer for 'rule-based'")
        self.spec = spec
        self.template = spec.template_obj()
        self.client = client if client is not None else LLMClient(spec.model, client_options(spec), limiter)
        self.provider = getattr(self.client, "provider", None)
        self.key_id = getattr(self.client, "key_id", None)
        self.limiter = getattr(self.client, "limiter", None)

    @property
    def calls(self) -> int:
        """HTTP calls made by this judge (tests and benches read it)."""
        return self.client.calls

    def response_format(self) -> dict[str, Any]:
        return {"type": "json_schema",
                "json_schema": {"name": "vgr_judgment", "schema": self.template.schema, "strict": True}}

    async def judge_many(self, items: list[JudgeItem]) -> list[JudgeResult]:
        return list(await asyncio.gather(*(self.judge(i) for i in items)))

    async def judge(self, item: JudgeItem) -> JudgeResult:
        try:
            return await self._judge(item)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # a bug of ours or litellm's: typed error, never a score
            return JudgeResult(status="judge_error", error_kind="infra",
                               error=clean_error(f"unexpected: {describe(e)}"))

    async def _judge(self, item: JudgeItem) -> JudgeResult:
        messages = render_messages(self.template, item)
        res = JudgeResult(status="judge_error")
        t0 = time.monotonic()
        problems = []
        for attempt in range(self.spec.max_malformed):
            # each answer asked again gets another seed: the same seed would repeat a malformed answer
            config = GenerateConfig(temperature=self.spec.temperature, max_tokens=self.spec.max_tokens,
                                    seed=int(item.repeat) * 1000 + attempt, response_format=self.response_format())
            try:
                c = await self.client.generate(messages, config)
            except CallFailed as e:
                res.calls += e.attempts
                # a request the judge model rejects is the judge's configuration, not the graded model's fault
                res.error_kind = "infra" if e.kind == "infra" else "config"
                res.error = clean_error(e.message)
                res.latency_s = time.monotonic() - t0
                return res
            res.calls += c.attempts
            res.prompt_tokens += c.usage.prompt_tokens
            res.completion_tokens += c.usage.completion_tokens
            res.cost_usd += c.usage.cost_usd
            res.raw_outputs.append(secrets.redact(c.text) or "")
            res.served_model = c.served_model or res.served_model
            try:
                if c.finish_reason == "length":
                    raise ValueError("output cut at max_tokens")
                verdict = parse_verdict(c.text, self.template.max_steps, self.template.model)
            except ValueError as e:
                problems.append(f"attempt {attempt + 1}: {e}")
                continue
            res.status, res.verdict = "ok", verdict
            res.latency_s = time.monotonic() - t0
            return res
        res.error_kind = "malformed"
        res.error = ("; ".join(problems))[:ERR_MAX]
        res.latency_s = time.monotonic() - t0
        return res
