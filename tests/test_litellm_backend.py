"""The litellm backend over REAL HTTP (loopback) against a scriptable fake provider, plus the rate limiter."""

from __future__ import annotations

import asyncio
import hashlib
import io
import logging
import os
import time
from pathlib import Path

import pytest
from fake_provider import FakeProvider
from PIL import Image

from cluster.backends.litellm_api import LiteLLMBackend, ensure_shared_limiter, preflight
from evalcore import secrets
from evalcore.llm_client import CallFailed, ClientOptions, GenerateConfig, LLMClient, retry_after_s
from evalcore.ratelimit import NAMESPACE, Limiter, LimitSettings, limiter_actor_name
from evalcore.schema import ImageRef, ModelRequest, Prompt, SampleKey, SamplingParams

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

KEY = "sk-test-SECRET123"
ENV = "NPHE4V_TEST_KEY"


@pytest.fixture
def fp(monkeypatch):
    monkeypatch.setenv(ENV, KEY)
    with FakeProvider(lifetime_s=120) as server:
        yield server


def backend(fp: FakeProvider, **opts) -> LiteLLMBackend:
    options = {
        "model": "openai/fake-model",
        "api_base": fp.base_url,
        "api_key_env": ENV,
        "backoff_base_s": 0.05,
        "max_concurrency": 8,
        "timeout_s": 5.0,
        "limiter": "local",
        **opts,
    }
    return LiteLLMBackend("fake", options)


def req(text: str, i: int = 0, images: tuple[ImageRef, ...] = (), root: str = "") -> ModelRequest:
    key = SampleKey(model="fake", benchmark="b", instance_id=f"i{i}", variant="v", prompt_mode="m", repeat=0)
    return ModelRequest(
        key=key,
        task="spp",
        level=1,
        sampling=SamplingParams(max_tokens=16, seed=1),
        prompt=Prompt(text=text, images=images, template_version="t1"),
        image_root=root,
    )


def run(b: LiteLLMBackend, reqs: list[ModelRequest]):
    return asyncio.run(asyncio.wait_for(b.generate(reqs), 60))


def png(tmp_path: Path) -> ImageRef:
    buf = io.BytesIO()
    Image.new("RGB", (8, 8), (255, 0, 0)).save(buf, format="PNG")
    (tmp_path / "img.png").write_bytes(buf.getvalue())
    return ImageRef(path="img.png", sha256=hashlib.sha256(buf.getvalue()).hexdigest(), width=8, height=8)


# ------------------------------------------------------------------------------------------- happy path


def test_ok_text_usage_key_and_image(fp, tmp_path):
    img = png(tmp_path)
    [r, r_img] = run(backend(fp), [req("hello"), req("look", 1, (img,), str(tmp_path))])
    assert (r.status, r.text, r.attempts, r.error) == ("ok", "ok hello", 1, None)
    assert r.usage.prompt_tokens > 0 and r.usage.completion_tokens > 0
    assert r.usage.cost_usd == 0.0  # a model litellm has no price for
    assert r.latency_s > 0
    assert r_img.status == "ok" and r_img.text == "ok look"
    hit = fp.hits_for("look")[0]
    assert hit.auth == f"Bearer {KEY}"
    assert len(hit.images) == 1 and hit.images[0].startswith("data:image/png;base64,")


def test_image_hash_mismatch_is_infra_error_without_a_call(fp, tmp_path):
    bad = png(tmp_path).model_copy(update={"sha256": "0" * 64})
    [r] = run(backend(fp), [req("x", images=(bad,), root=str(tmp_path))])
    assert r.status == "infra_error" and "sha256 mismatch" in r.error and r.attempts == 0
    assert fp.count == 0


# ------------------------------------------------------------------------------------------- failures


def test_429_retry_after_pauses_every_caller_of_the_key(fp):
    # two backends on the same key share the (in-process) limiter, like two replicas
    a, b = backend(fp), backend(fp)

    async def scenario():
        first = asyncio.create_task(a.generate([req("A [[script:429:1.0,ok]]")]))
        # Wait until A's client has *reported* the 429 to the shared limiter, not merely until the server sent
        # it: a request that leaves between the two cannot be held by anyone (CI once hit that 30 ms window).
        for _ in range(500):
            if b.limiter.stats()["paused_for_s"] > 0:
                break
            await asyncio.sleep(0.01)
        seen_paused = time.monotonic()
        others = await b.generate([req(f"B{i}", i) for i in range(3)])
        return await first, others, seen_paused

    [ra], others, seen_paused = asyncio.run(asyncio.wait_for(scenario(), 60))
    assert ra.status == "ok" and ra.attempts == 2
    assert all(o.status == "ok" and o.attempts == 1 for o in others)
    later = [h for h in fp.hits if not h.action.startswith("429")]
    assert len(later) == 4
    # the pause began at most one poll (10 ms) before `seen_paused` and lasts >= Retry-After (1.0 s)
    assert min(h.t for h in later) - seen_paused >= 0.98, "a caller went out during the Retry-After pause"


def test_500_then_ok_is_retried(fp):
    [r] = run(backend(fp), [req("x [[script:500,ok]]")])
    assert (r.status, r.attempts) == ("ok", 2)
    assert fp.actions() == ["500", "ok"]


def test_persistent_500_is_infra_error(fp):
    [r] = run(backend(fp, max_attempts=3), [req("x [[script:500]]")])
    assert (r.status, r.attempts, fp.count) == ("infra_error", 3, 3)
    assert "InternalServerError" in r.error


def test_timeout_is_infra_error_after_max_attempts(fp):
    t0 = time.monotonic()
    [r] = run(backend(fp, timeout_s=1.0, max_attempts=2), [req("x [[script:slow:10]]")])
    assert (r.status, r.attempts) == ("infra_error", 2)
    # on a loaded machine a retry can time out on the client before the server has seen it
    assert 1 <= fp.count <= 2
    assert "Timeout" in r.error
    assert time.monotonic() - t0 < 15  # two 1 s timeouts, not two 10 s sleeps


def test_truncated_json_retried_then_infra_error(fp):
    b = backend(fp, max_attempts=2)
    [once, always] = run(b, [req("x [[script:trunc,ok]]"), req("y [[script:trunc]]", 1)])
    assert (once.status, once.attempts, once.text) == ("ok", 2, "ok x [[script:trunc,ok]]")
    assert (always.status, always.attempts) == ("infra_error", 2)


def test_400_context_window_is_model_error_without_retry(fp):
    [r] = run(backend(fp), [req("x [[script:400ctx]]")])
    assert (r.status, r.attempts, fp.count) == ("model_error", 1, 1)
    assert "ContextWindowExceeded" in r.error


def test_content_filter_is_model_error(fp):
    [r] = run(backend(fp), [req("x [[script:filter]]")])
    assert (r.status, r.attempts) == ("model_error", 1)


def test_http_200_with_null_content_is_infra_error_never_a_wrong_answer(fp):
    """`content: null` in a 200 is the provider failing: retried, then infra_error (never an empty answer that
    the scorer would count as wrong); one null then an answer is the answer."""
    gone, late = run(backend(fp, max_attempts=2), [req("a [[script:null]]"), req("b [[script:null,ok]]", 1)])
    assert (gone.status, gone.attempts, gone.text) == ("infra_error", 2, None)
    assert "content: null" in gone.error
    assert (late.status, late.text, late.attempts) == ("ok", "ok b [[script:null,ok]]", 2)


def test_a_response_over_the_body_cap_is_cut_recorded_and_not_scored(fp):
    """A text past `max_response_bytes` (default 1 MB) is kept up to the cap (whole UTF-8 characters), the
    sample says so naming the cap, and it is an infra_error (not scored); a text within the cap is untouched."""
    small, big = run(backend(fp, max_response_bytes=1001), [req("s [[script:big:1000]]"), req("b [[script:big:5000]]", 1)])
    assert small.status == "ok" and len(small.text.encode()) == 1000 and small.text.endswith(" END")
    assert big.status == "infra_error" and big.error == (
        "response of 5000 bytes is over max_response_bytes=1001: its first 1001 bytes are kept, not scored")
    assert big.text == "é" * 500  # 1000 bytes: the character cut by the 1001st byte is dropped
    [default] = run(backend(fp), [req("d [[script:big:3000000]]", 2)])
    assert default.status == "infra_error" and "max_response_bytes=1000000" in default.error
    assert 999_998 <= len(default.text.encode()) <= 1_000_000


def test_concurrency_never_exceeds_max(fp):
    b = backend(fp, max_concurrency=3)
    out = run(b, [req(f"<q{i}> [[script:slow:0.2]]", i) for i in range(15)])
    assert all(r.status == "ok" for r in out)
    assert fp.max_in_flight == 3
    assert b.limiter.stats()["max_in_flight"] == 3


def test_mixed_batch_nothing_lost_nothing_duplicated(fp):
    faults = ["500,ok", "429:0.2,ok", "trunc,ok", "500", "slow:10", "ok", "ok", "ok"]
    reqs = [req(f"<q{i}> [[script:{faults[i % 8]}]]", i) for i in range(40)]
    b = backend(fp, max_attempts=2, timeout_s=1.0)
    out = run(b, reqs)
    assert len(out) == 40
    for i, (rq, r) in enumerate(zip(reqs, out, strict=True)):
        assert r.status in ("ok", "infra_error")
        if r.status == "ok":
            assert r.text == f"ok {rq.prompt.text}", "a response crossed to another request"
        assert r.attempts == len(fp.hits_for(f"<q{i}>"))
    statuses = [r.status for r in out]
    assert statuses.count("ok") == 30 and statuses.count("infra_error") == 10
    assert {i % 8 for i, r in enumerate(out) if r.status == "infra_error"} == {3, 4}
    assert fp.count == 15 * 2 + 10 * 2 + 15
    # client side: a timed-out call may linger on the server until it notices the disconnect
    assert b.limiter.stats()["max_in_flight"] <= 8


def test_refused_key_is_infra_error_without_retry(fp):
    [r] = run(backend(fp), [req("x [[script:401]]")])
    assert (r.status, r.attempts, fp.count) == ("infra_error", 1, 1)
    assert "AuthenticationError" in r.error


def test_client_policy_kinds_and_accounting(fp):
    """The one LLM client on its own: what each failure becomes, and what the client counts."""
    client = LLMClient("fake", ClientOptions(model="openai/fake-model", api_base=fp.base_url, api_key_env=ENV,
                                             backoff_base_s=0.05, timeout_s=5.0, max_attempts=2, limiter="local"))
    cfg = GenerateConfig(max_tokens=16, seed=1)

    def msgs(text: str) -> list[dict[str, str]]:
        return [{"role": "user", "content": text}]

    async def go():
        a = await client.generate(msgs("a [[script:500,ok]]"), cfg)
        b = await client.generate(msgs("b [[script:429:0.1,ok]]"), cfg)
        fails = {}
        for tag, script in (("model", "400ctx"), ("config", "401"), ("infra", "500")):
            with pytest.raises(CallFailed) as e:
                await client.generate(msgs(f"{tag} [[script:{script}]]"), cfg)
            fails[tag] = e.value
        return a, b, fails

    a, b, fails = asyncio.run(asyncio.wait_for(go(), 60))
    assert (a.text, a.attempts, a.finish_reason) == ("ok a [[script:500,ok]]", 2, "stop")
    assert (b.text, b.attempts) == ("ok b [[script:429:0.1,ok]]", 2) and a.served_model
    assert {k: (e.kind, e.attempts) for k, e in fails.items()} == {
        "model": ("model", 1), "config": ("config", 1), "infra": ("infra", 2)}
    assert fails["infra"].message.startswith("after 2 tries: InternalServerError")
    assert client.calls == 2 + 2 + 1 + 1 + 2 == fp.count
    assert client.usage.prompt_tokens == a.usage.prompt_tokens + b.usage.prompt_tokens > 0
    assert client.usage.completion_tokens == a.usage.completion_tokens + b.usage.completion_tokens > 0
    assert client.limiter.stats()["rate_limited"] >= 1


# ------------------------------------------------------------------------------------------- secrets


def test_key_never_in_errors_or_logs(fp, caplog, capsys):
    caplog.set_level(logging.DEBUG)
    for name in ("LiteLLM", "cluster.backends.litellm_api", "evalcore.llm_client", "evalcore.ratelimit", "httpx",
                 "openai"):
        caplog.set_level(logging.DEBUG, logger=name)
    b = backend(fp, max_attempts=2)
    out = run(
        b, [req("a [[script:400key]]"), req("b [[script:500]]", 1), req("c [[script:429:0.1,400key]]", 2)]
    )
    assert [r.status for r in out] == ["model_error", "infra_error", "model_error"]
    assert "[REDACTED]" in out[0].error
    captured = capsys.readouterr()
    for text in [r.error or "" for r in out] + [caplog.text, captured.out, captured.err]:
        assert "SECRET123" not in text
    assert caplog.records, "expected some log records to check"


def test_require_key_one_line(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ValueError) as e:
        secrets.require_key("gpt4o", "openai")
    msg = str(e.value)
    assert "\n" not in msg and "OPENAI_API_KEY" in msg and "gpt4o" in msg
    with pytest.raises(ValueError, match="MY_KEY"):
        preflight("m", {"model": "openai/gpt-4o", "api_key_env": "MY_KEY"})
    with pytest.raises(ValueError, match="options.max_concurency"):
        preflight("m", {"model": "openai/gpt-4o", "max_concurency": 3})
    secrets.require_key("local", "hosted_vllm")  # local servers need no key


def test_redact_and_key_id(monkeypatch):
    monkeypatch.setenv("XAI_API_KEY", "zzz-plain-value-42")
    text = "key zzz-plain-value-42 and Bearer abcdefgh123 and sk-live-abcdef123456"
    clean = secrets.redact(text)
    assert "zzz-plain" not in clean and "abcdefgh123" not in clean and "sk-live" not in clean
    kid = secrets.key_id("openai", KEY, "http://x")
    assert KEY not in kid and kid == secrets.key_id("openai", KEY, "http://x") != secrets.key_id(
        "openai", "o", None
    )


def test_retry_after_forms():
    class E(Exception):
        def __init__(self, h):
            self.litellm_response_headers = h

    assert retry_after_s(E({"retry-after": "2"})) == 2.0
    assert retry_after_s(E({"retry-after-ms": "1500"})) == 1.5
    assert retry_after_s(E({"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"})) == 0.0
    assert retry_after_s(E({})) is None


# ------------------------------------------------------------------------------------------- limiter


def test_limiter_aimd_and_backoff():
    lim = Limiter(LimitSettings(max_concurrency=8, increase_every=2, backoff_base_s=0.05, seed=3))

    async def go():
        p1 = await lim.report_rate_limited(None)
        p2 = await lim.report_rate_limited(None)  # same burst: no second cut, longer backoff
        assert 0.025 <= p1 <= 0.05 and p2 > 0
        assert lim.stats()["limit"] == 4
        t0 = time.monotonic()
        async with lim.slot():
            assert time.monotonic() - t0 >= p2 - 0.01
        async with lim.slot():
            pass
        assert lim.stats()["limit"] == 5  # additive increase after `increase_every` successes

    asyncio.run(go())


def test_limiter_rpm_bucket():
    lim = Limiter(LimitSettings(max_concurrency=2, rpm=600))  # burst 2, then one per 0.1 s

    async def go():
        t0 = time.monotonic()
        for _ in range(6):
            async with lim.slot():
                pass
        return time.monotonic() - t0

    assert 0.35 <= asyncio.run(go()) < 10.0


# ------------------------------------------------------------------------------------------- Ray


@pytest.mark.ray
def test_shared_limiter_sees_429s_from_two_model_actors(fp, ray_local):
    ray = ray_local
    from cluster.pipeline import ModelActor

    options = {
        "model": "openai/fake-model",
        "api_base": fp.base_url,
        "api_key_env": ENV,
        "max_concurrency": 4,
        "backoff_base_s": 0.05,
        "timeout_s": 10.0,
    }
    # the driver creates the key's limiter first (so it outlives any replica), as cluster.run should
    kid = ensure_shared_limiter("fake", options)
    assert kid == secrets.key_id("openai", KEY, fp.base_url)
    env = {"env_vars": {ENV: KEY, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}}
    actors = [
        ModelActor.options(num_cpus=0.25, runtime_env=env).remote("litellm", "fake", None, options)
        for _ in range(2)
    ]
    try:
        refs = [
            a.generate.remote([req(f"<a{j}r{i}> [[script:429:0.3,ok]]", i) for i in range(3)])
            for j, a in enumerate(actors)
        ]
        outs = ray.get(refs, timeout=600)  # a safety net only: two actors start (imports) on a possibly loaded machine
        assert all(r.status == "ok" and r.attempts == 2 for out in outs for r in out)
        lim = ray.get_actor(limiter_actor_name(kid), namespace=NAMESPACE)
        stats = ray.get(lim.stats.remote(), timeout=30)
        assert stats["rate_limited"] == 6 == sum(h.action.startswith("429") for h in fp.hits)
        assert len(stats["sources"]) == 2, stats["sources"]
        assert fp.max_in_flight <= 4
    finally:
        for a in actors:
            ray.kill(a)
        ray.kill(ray.get_actor(limiter_actor_name(kid), namespace=NAMESPACE))
