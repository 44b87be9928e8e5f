"""The transformers backend (cluster.backends.transformers_engine): its options, decoding and token accounting
rules, the registry entries it serves and their GPU placement (fast); a real tiny model answering through a
`ModelActor` on Ray, and `nphe4v preflight --tiny` booting one transformers family (slow)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from cluster.backends.factory import check_options
from cluster.backends.transformers_engine import _until_eos, parse_options, sampling_kwargs
from cluster.config import ModelSpec
from cluster.preflight import PreflightRow, summary
from cluster.registry import ModelEntry, load_registry
from cluster.replicas import gpus_per_replica, one_process
from cluster.tiny_models import BUILDERS

ROOT = Path(__file__).resolve().parent.parent
TRANSFORMERS_FAMILIES = {"MllamaForConditionalGeneration", "MptForCausalLM", "Blip2ForConditionalGeneration",
                         "FuyuForCausalLM", "Kosmos2ForConditionalGeneration"}


def test_options_are_checked_in_one_line():
    parse_options("m", {"model": "x", "max_images": 2, "max_model_len": 4096, "dtype": "bfloat16"})
    with pytest.raises(ValueError) as e:
        check_options("transformers", "m", {"model": "x", "tensor_parallel_size": 2})
    assert str(e.value).startswith("model 'm': options.tensor_parallel_size:") and "\n" not in str(e.value)
    with pytest.raises(ValueError, match="options.model"):
        check_options("transformers", "m", {})


class _Gen:
    def __init__(self, eos, pad=None):
        self.eos_token_id, self.pad_token_id = eos, pad


def test_decoding_is_the_runs_sampling_not_the_checkpoints_defaults():
    greedy = sampling_kwargs(0.0, 64, _Gen(eos=[7, 9]))
    assert greedy["do_sample"] is False and greedy["max_new_tokens"] == 64 and greedy["num_beams"] == 1
    assert greedy["pad_token_id"] == 7  # no pad id in the checkpoint: the first EOS pads
    sampled = sampling_kwargs(0.7, 0, _Gen(eos=2, pad=0))
    # plain sampling at the run's temperature: the checkpoint's top_p / top_k / repetition penalty overridden
    assert (sampled["do_sample"], sampled["temperature"], sampled["top_p"], sampled["top_k"]) == (True, 0.7, 1.0, 0)
    assert sampled["repetition_penalty"] == 1.0 and sampled["max_new_tokens"] == 1 and sampled["pad_token_id"] == 0


def test_completion_tokens_count_up_to_and_including_eos():
    assert _until_eos([5, 6, 2, 0, 0], 2) == [5, 6, 2]
    assert _until_eos([5, 6, 9, 1], [2, 9]) == [5, 6, 9]
    # a sequence cut by max_new_tokens keeps every token, padding id or not (one sequence: nothing is padding)
    assert _until_eos([0, 0, 0], 2) == [0, 0, 0]
    assert _until_eos([], None) == []


def test_registry_entries_on_the_transformers_backend():
    reg = load_registry()
    mine = [e for e in reg.models if e.backend == "transformers"]
    assert {e.architecture for e in mine} == TRANSFORMERS_FAMILIES
    for e in mine:
        assert e.no_tiny_build is None and e.architecture in BUILDERS and not e.trust_remote_code, e.name
        spec = reg.spec(e)
        # the options the backend takes (a registry field it would refuse fails here, not on a cluster)
        check_options("transformers", e.name, spec.options)
        assert spec.num_gpus == e.gpus_per_replica and spec.options["model"] == e.repo
        assert spec.options["max_images"] == (0 if e.text_only else e.max_images)
    by = reg.by_name
    assert reg.spec(by["llama-3.2-90b-vision"]).num_gpus == 4
    assert "<grounding> " in reg.spec(by["kosmos-2"]).options["chat_template"]  # as the authors prompted it
    assert "chat_template" not in reg.spec(by["blip2-flan-t5-xxl"]).options  # the raw prompt, as the authors
    # remote code cannot run offline and is not what this backend is for
    with pytest.raises(ValueError, match="remote code"):
        ModelEntry(name="x", title="x", backend="transformers", repo="a/b", gpus_per_replica=1, access="open",
                   trust_remote_code=True)


def test_a_transformers_replica_holds_all_its_gpus_in_one_process():
    spec = ModelSpec(name="m", backend="transformers", num_gpus=4, options={"model": "x"})
    assert one_process(spec) and gpus_per_replica(spec) == 4
    vllm = ModelSpec(name="v", backend="vllm", num_gpus=4, options={"model": "x", "tensor_parallel_size": 4})
    assert not one_process(vllm)


def test_preflight_summary_counts_each_local_backend():
    def row(backend, status):
        return PreflightRow(model=f"{backend}-{status}", backend=backend, architecture="a", images_tested="1",
                            status=status)

    text = summary([row("vllm", "ok"), row("vllm", "fail"), row("transformers", "ok"), row("litellm", "skipped")])
    assert text == ("4 models: 2 ok, 1 fail, 1 skipped; vllm entries ok: 1/2 (50 %); "
                    "transformers entries ok: 1/1 (100 %)")
    assert "transformers" not in summary([row("vllm", "ok")])


@pytest.mark.slow(reason="imports torch and transformers in a Ray actor and builds a tiny Fuyu (~15 s CPU)")
def test_tiny_fuyu_answers_through_a_model_actor(ray_local, tmp_path):
    from cluster.pipeline import ModelActor
    from cluster.preflight import probe_requests, write_probe_files
    from cluster.tiny_models import build_tiny

    path = build_tiny("FuyuForCausalLM", ROOT / "data/models/tiny/FuyuForCausalLM")
    root = write_probe_files(tmp_path)
    actor = ModelActor.options(num_cpus=0.5).remote("transformers", "fuyu", None,
                                                    {"model": str(path), "max_images": 2, "max_model_len": 4096})
    try:
        assert ray_local.get(actor.ready.remote(), timeout=300)
        reqs = probe_requests("fuyu", ["text", "1", "2"], root)
        text, one, two = ray_local.get(actor.generate.remote(reqs), timeout=300)
    finally:
        ray_local.kill(actor)
    for r in (text, one):
        assert r.status == "ok" and r.text is not None and r.latency_s > 0, r
        assert 1 <= r.usage.completion_tokens <= 8  # the probes' max_tokens
    # the figure's patches are prompt tokens (one per 14 px patch, a newline per row), as vLLM counts them
    assert one.usage.prompt_tokens > text.usage.prompt_tokens + 4
    # Fuyu takes one image per prompt: two are the request's fault, said in one line, not a crash
    assert two.status == "model_error" and "one image per prompt" in two.error
    # a model that cannot load: the replica says why once, and each request is an infra_error (never counted)
    missing = ModelActor.options(num_cpus=0.25).remote("transformers", "gone", None,
                                                       {"model": str(tmp_path / "no-such-model")})
    try:
        with pytest.raises(Exception, match="model failed to load"):
            ray_local.get(missing.ready.remote(), timeout=300)
        (lost,) = ray_local.get(missing.generate.remote(reqs[:1]), timeout=300)
    finally:
        ray_local.kill(missing)
    assert lost.status == "infra_error" and lost.error.startswith("model failed to load") and lost.text is None


@pytest.mark.slow(reason="nphe4v preflight --tiny in a subprocess: torch + transformers, one Mllama replica (~20 s)")
def test_preflight_tiny_boots_a_transformers_family(tmp_path):
    config = {
        "name": "preflight-transformers",
        "datasets": [{"benchmark": "nphardeval4v", "generate": {"version": "pf", "seed": 1, "per_level": 1}},
                     {"benchmark": "graphverse", "generate": {"version": "graphverse-testmini", "seed": 1}}],
        "models": [{"use": "llama-3.2-90b-vision", "options": {"max_images": 2}}],
        "prompts": "rewritten",
    }
    cfg_path = tmp_path / "pf.yaml"
    cfg_path.write_text(yaml.safe_dump(config))
    out = tmp_path / "rows.json"
    proc = subprocess.run(
        [sys.executable, "-m", "nphe4v_cli", "preflight", str(cfg_path), "--tiny", "--json", str(out),
         "--tiny-root", str(ROOT / "data/models/tiny")],
        cwd=ROOT, env=dict(os.environ), capture_output=True, text=True, timeout=900,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (row,) = json.loads(out.read_text())
    assert (row["backend"], row["architecture"], row["status"]) == ("transformers", "MllamaForConditionalGeneration",
                                                                     "ok"), row
    # every request shape the two benchmarks send: text only, one figure, the paired figures, recognition
    assert row["images_tested"] == "text,1,2,recognition"
    assert "transformers entries ok: 1/1 (100 %)" in proc.stdout
