"""Every model of the registry runs: the papers' configs plan with every key set, and one real request per
provider family of the registry goes through litellm over real HTTP to a local fake provider, images included.

The families are read from cluster/models.yaml, so a new provider in the registry is covered (or fails here)
without editing this test.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fake_provider import FakeProvider
from PIL import Image

from cluster.backends.litellm_api import LiteLLMBackend, client_options
from cluster.config import ModelSpec
from cluster.registry import load_registry
from evalcore import secrets
from evalcore.schema import ImageRef, ModelRequest, Prompt, SampleKey, SamplingParams

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

ROOT = Path(__file__).resolve().parents[1]
REG = load_registry()
API = [e for e in REG.models if e.backend == "litellm"]
# the providers' usual variables too: a config may name a model by litellm string alone
USUAL_KEYS = ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "XAI_API_KEY", "MOONSHOT_API_KEY",
              "DEEPSEEK_API_KEY", "DASHSCOPE_API_KEY", "TOGETHERAI_API_KEY", "MISTRAL_API_KEY"]
KEY_ENVS = sorted({e.api_key_env for e in API if e.api_key_env} | set(USUAL_KEYS))
# the wire format litellm speaks per provider prefix; every other provider is OpenAI-compatible
WIRE = {"anthropic": "anthropic", "gemini": "gemini"}


def family(model: str) -> str:
    return model.split("/", 1)[0]


def all_keys_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update({k: f"test-{k.lower()}-value" for k in KEY_ENVS})
    env["PYTHONPATH"] = str(ROOT)
    return env


# ------------------------------------------------------------------------------------------- planning


@pytest.mark.parametrize("config", ["paper-nphardeval4v", "paper-graphverse", "cpu-vllm", "demo"])
def test_config_plans_with_every_key_set(config, tmp_path):
    """What the project's before-stop hook checks: no model of a shipped config is refused by --plan."""
    out = subprocess.run(
        [sys.executable, "jobs/eval_all.py", "--config", f"configs/{config}.yaml", "--plan",
         "--data-root", str(tmp_path / "data")],
        cwd=ROOT, env=all_keys_env(), capture_output=True, text=True, timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    refused = [ln for ln in out.stdout.splitlines()
               if ln.strip().startswith('"model ') and "API key missing" not in ln]
    assert refused == []
    plan = json.loads(out.stdout)
    assert plan["models"], "the plan lists the config's models"
    for m in plan["models"]:
        assert m["missing_api_keys"] == [], (m["name"], m["missing_api_keys"])
    if config.startswith("paper-"):
        assert any(m["backend"] == "litellm" for m in plan["models"])


def test_every_registry_api_model_validates_with_its_options(monkeypatch):
    """Every option the registry sets on an API model is known to the one schema (no `extra` refusal)."""
    for k in KEY_ENVS:
        monkeypatch.setenv(k, "x")
    assert API
    for e in API:
        spec = REG.spec(e)
        opts = client_options(e.name, spec.options)
        assert opts.model == e.model
        assert opts.max_images == (None if e.text_only else e.max_images)
        if e.request_args.get("drop_params") is not None:
            assert opts.drop_params is e.request_args["drop_params"]


def test_every_registry_vllm_model_validates_and_its_options_reach_the_engine():
    """vLLM entries: every option the registry sets is known to the backend's schema and reaches vllm.LLM
    (trust_remote_code and hf_overrides were once dropped without a word), and the per-request image check
    is the engine's limit."""
    from cluster.backends.vllm_engine import engine_kwargs, parse_options

    entries = [e for e in REG.models if e.backend == "vllm"]
    assert entries
    for e in entries:
        spec = REG.spec(e)
        opts = parse_options(e.name, spec.options)
        assert opts.image_limit() == e.max_images
        kw = engine_kwargs(spec.options, on_cpu=False)
        assert kw["limit_mm_per_prompt"] == {"image": e.max_images}
        assert kw["tensor_parallel_size"] == e.gpus_per_replica
        assert kw.get("trust_remote_code", False) is e.trust_remote_code
        assert kw.get("hf_overrides") == e.hf_overrides
        for k, v in e.engine_args.items():
            assert kw[k] == v
    assert any(e.trust_remote_code for e in entries) and any(e.hf_overrides for e in entries)


def test_a_misspelt_vllm_option_is_refused_by_the_plan(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("datasets: [{generate: {version: v, per_level: 1, tasks: [BSP], levels: [1]}}]\n"
                   "models: [{name: big, backend: vllm, options: {model: some/model, tensor_paralel_size: 2}}]\n")
    out = subprocess.run([sys.executable, "jobs/eval_all.py", "--config", str(cfg), "--plan", "--data-root",
                          str(tmp_path / "data")], cwd=ROOT, env=all_keys_env(), capture_output=True, text=True,
                         timeout=120)
    # refused as a run refuses it (one line, exit 2), never listed as a missing key with exit 0
    assert out.returncode == 2 and out.stdout == "", out.stdout
    assert out.stderr.strip().splitlines() == [
        f"error: {cfg}: field models: model 'big': options.tensor_paralel_size: Extra inputs are not permitted"]


@pytest.mark.parametrize("options, fragment", [
    ({"model": "openai/x", "max_imagez": 2}, "options.max_imagez: Extra inputs are not permitted"),
    ({"model": "openai/x", "max_images": -1}, "options.max_images: Input should be greater than or equal to 0"),
    ({"model": "openai/x", "max_images": "two"}, "options.max_images: Input should be a valid integer"),
])
def test_unknown_or_bad_options_still_refused(options, fragment):
    with pytest.raises(ValueError) as e:
        client_options("m", options)
    assert fragment in str(e.value) and "\n" not in str(e.value)


def test_request_args_are_sampling_overrides():
    """A registry model's request_args lower the run's sampling (short-context models); unknown keys refused."""
    yi = REG.spec(REG.by_name["yi-34b"])
    assert yi.sampling_overrides().apply(0.0, 2048) == (0.0, 1024)
    with pytest.raises(ValueError, match="options.request_args.max_tokenz"):
        ModelSpec(name="m", backend="vllm", options={"request_args": {"max_tokenz": 5}})
    o1 = REG.spec(REG.by_name["o1"])
    assert o1.options["drop_params"] is True and "request_args" not in o1.options


def test_the_planner_applies_request_args(tmp_path):
    from cluster.config import DatasetSpec, RunConfig
    from cluster.plan import plan_model
    from evalcore.dataset import load_dataset
    from evalcore.schema import RECOGNITION_MODE
    from nphe4v.generate import generate_version

    generate_version(tmp_path / "ds", version="ra", seed=1, per_level=1, tasks=["BSP"], levels=[1], workers=1)
    ds = load_dataset(tmp_path / "ds")
    yi = REG.spec(REG.by_name["yi-34b"])  # request_args {max_tokens: 1024}, text-only
    cfg = RunConfig(datasets=[DatasetSpec(path=str(tmp_path / "ds"))], sampling={"max_tokens": 2048},
                    models=[yi, ModelSpec(name="oracle"), ModelSpec(name="g", backend="litellm",
                                                              options={"request_args": {"temperature": 0.5}})])
    got = {m.name: {(i.request.key.prompt_mode, i.request.sampling.max_tokens, i.request.sampling.temperature)
                    for i in plan_model(cfg, m, ds, "ra")} for m in cfg.models}
    assert got["yi-34b"] == {("full_text_only", 1024, 0.0)}
    assert {(t, temp) for mode, t, temp in got["oracle"] if mode != RECOGNITION_MODE} == {(2048, 0.0)}
    assert {(t, temp) for mode, t, temp in got["g"] if mode != RECOGNITION_MODE} == {(2048, 0.5)}
    assert {(t, temp) for mode, t, temp in got["g"] if mode == RECOGNITION_MODE} == {(256, 0.7)}


# ------------------------------------------------------------------------------------------- one request per family


def png(tmp_path: Path, name: str, color: tuple[int, int, int]) -> ImageRef:
    buf = io.BytesIO()
    Image.new("RGB", (8, 8), color).save(buf, format="PNG")
    (tmp_path / name).write_bytes(buf.getvalue())
    return ImageRef(path=name, sha256=hashlib.sha256(buf.getvalue()).hexdigest(), width=8, height=8)


def request(model: str, text: str, images: tuple[ImageRef, ...], root: Path) -> ModelRequest:
    key = SampleKey(model=model, benchmark="b", instance_id="i0", variant="v", prompt_mode="m", repeat=0)
    return ModelRequest(key=key, task="spp", level=1, sampling=SamplingParams(max_tokens=16, seed=1),
                        prompt=Prompt(text=text, images=images, template_version="t1"), image_root=str(root))


def representatives() -> dict[str, object]:
    """One registry model per provider family: an image model where the family has one, never a retired one
    while a served one exists."""
    out: dict[str, object] = {}
    for e in sorted(API, key=lambda e: (e.retired, e.text_only)):
        out.setdefault(family(e.model), e)
    return out


def test_registry_families_are_known():
    fams = representatives()
    assert {"openai", "anthropic", "gemini"} <= set(fams)
    # palm/ is decommissioned (litellm refuses the route); its only model is marked retired
    assert all(e.retired for e in API if family(e.model) == "palm")


@pytest.mark.parametrize("fam", sorted(f for f, e in representatives().items() if not e.retired))
def test_one_real_request_per_family(fam, tmp_path, monkeypatch):
    e = representatives()[fam]
    for k in KEY_ENVS:
        monkeypatch.setenv(k, f"sk-{k.lower()}-SECRET9")
    images = () if e.text_only else tuple(png(tmp_path, f"{i}.png", (40 * i, 0, 0)) for i in range(e.max_images))
    wire = WIRE.get(fam, "openai")
    with FakeProvider(lifetime_s=600) as fp:
        # the Anthropic client joins /v1/messages to its base; the others take a base ending in /v1
        api_base = fp.base_url.removesuffix("/v1") if wire == "anthropic" else fp.base_url
        # timeouts are safety nets, not the test: under load the first request of a family (litellm imports its
        # provider module then) took over 10 s, which litellm's Anthropic path reports as an InternalServerError
        options = {**REG.spec(e).options, "api_base": api_base, "limiter": "local", "timeout_s": 120.0,
                   "max_attempts": 1}
        b = LiteLLMBackend(e.name, options)
        [r] = asyncio.run(asyncio.wait_for(b.generate([request(e.name, f"hello {fam}", images, tmp_path)]), 300))
        assert (r.status, r.error) == ("ok", None), r.error
        assert r.text == f"ok hello {fam}"
        assert r.usage.prompt_tokens > 0 and r.usage.completion_tokens > 0
        [hit] = fp.hits
    assert hit.wire == wire
    assert hit.model == e.model.split("/", 1)[1]
    assert secrets.get_key(fam, e.api_key_env) in hit.auth  # the entry's own key variable was sent
    # every image reached the server byte for byte, in the order sent
    got = [base64.b64decode(u.split(",", 1)[1]) for u in hit.images]
    assert got == [(tmp_path / img.path).read_bytes() for img in images]
    assert all(u.startswith("data:image/png;base64,") for u in hit.images)


def test_more_images_than_the_model_accepts_is_a_model_error_without_a_call(tmp_path, monkeypatch):
    e = REG.by_name["gpt-4o"]
    monkeypatch.setenv(e.api_key_env, "sk-x")
    imgs = tuple(png(tmp_path, f"{i}.png", (i, i, i)) for i in range(e.max_images + 1))
    with FakeProvider(lifetime_s=60) as fp:
        b = LiteLLMBackend(e.name, {**REG.spec(e).options, "api_base": fp.base_url, "limiter": "local"})
        [r] = asyncio.run(asyncio.wait_for(b.generate([request(e.name, "too many", imgs, tmp_path)]), 30))
        assert fp.count == 0
    assert r.status == "model_error" and r.attempts == 0
    assert r.error == f"too many images: {e.max_images + 1} > max_images={e.max_images}"
