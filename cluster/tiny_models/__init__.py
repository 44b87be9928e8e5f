"""Tiny random-weight model folders, one per vLLM or transformers architecture of cluster/models.yaml, built offline.

Each builder writes what a real checkpoint folder holds: `config.json` (a transformers config class, or the
configuration code the family ships), weights (`model.safetensors`, random from `torch.manual_seed`; for
the few families transformers has no model class for, vLLM's `load_format: dummy` fills the weights and
the folder says so), a byte-level BPE tokenizer trained on the spot with the family's special tokens
(`cluster.tiny_models.tokenizer`), the family's processor (image processor with small sizes) and its chat
template. Sizes: text hidden 64, 1-2 layers, 2 heads of 32 (a head size vLLM's CPU attention takes),
vision towers of width 32-64 with 1-2 layers; a folder is 0.3-3 MB and builds in about a second.

    python -m cluster.tiny_models ARCHITECTURE OUT_DIR      # or: --list
    build_tiny(architecture, out_dir) -> Path                # reused when already complete

`tiny.json` in the folder records the architecture, the builder, the seed and `engine`: the vllm.LLM
arguments a tiny build needs on top of the registry entry's (e.g. `load_format: dummy`).
The answers are gibberish; what a tiny build proves is the serving path of its architecture: config,
processor, chat template, image placeholders, multi-image prompts, token accounting.
"""

from __future__ import annotations

import importlib
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from cluster.tiny_vlm import publish

DEFAULT_ROOT = Path("data/models/tiny")

# vLLM architecture -> (module of cluster.tiny_models, builder function, family name shown in tables)
BUILDERS: dict[str, tuple[str, str, str]] = {
    "LlamaForCausalLM": ("text", "build_llama", "llama"),
    "MistralForCausalLM": ("text", "build_mistral", "mistral"),
    "Qwen2ForCausalLM": ("text", "build_qwen2", "qwen2"),
    "PhiForCausalLM": ("text", "build_phi", "phi"),
    "Qwen2VLForConditionalGeneration": ("qwen_vl", "build_qwen2_vl", "qwen2-vl"),
    "Qwen2_5_VLForConditionalGeneration": ("qwen_vl", "build_qwen2_5_vl", "qwen2.5-vl"),
    "Qwen3VLForConditionalGeneration": ("qwen_vl", "build_qwen3_vl", "qwen3-vl"),
    "Qwen3_5ForConditionalGeneration": ("qwen_vl", "build_qwen3_5", "qwen3.5"),
    "Qwen3_5MoeForConditionalGeneration": ("qwen_vl", "build_qwen3_5_moe", "qwen3.5-moe"),
    "Idefics3ForConditionalGeneration": ("idefics3", "build_idefics3", "idefics3"),
    "InternVLChatModel": ("internvl", "build_internvl_chat", "internvl"),
    "NVLM_D": ("nvlm_d", "build_nvlm_d", "nvlm-d"),
    "Glm4vForConditionalGeneration": ("glm", "build_glm4v", "glm-4.1v"),
    "Glm4vMoeForConditionalGeneration": ("glm", "build_glm4v_moe", "glm-4.5v"),
    "GLM4VForCausalLM": ("glm", "build_chatglm4v", "glm-4v"),
    "LlavaForConditionalGeneration": ("llava", "build_llava", "llava-1.5"),
    "LlavaOnevisionForConditionalGeneration": ("llava", "build_llava_onevision", "llava-onevision"),
    "Gemma3ForConditionalGeneration": ("gemma3", "build_gemma3", "gemma3"),
    # served by the transformers backend (architectures this vLLM lacks)
    "MllamaForConditionalGeneration": ("transformers_families", "build_mllama", "mllama"),
    "MptForCausalLM": ("transformers_families", "build_mpt", "mpt"),
    "Blip2ForConditionalGeneration": ("transformers_families", "build_blip2_t5", "blip2-flan-t5"),
    "FuyuForCausalLM": ("transformers_families", "build_fuyu", "fuyu"),
    "Kosmos2ForConditionalGeneration": ("transformers_families", "build_kosmos2", "kosmos-2"),
    "KimiK25ForConditionalGeneration": ("kimi", "build_kimi_k25", "kimi-k2.5"),
    "Phi3VForCausalLM": ("phi3v", "build_phi3v", "phi-3.5-vision"),
    "Ovis": ("ovis", "build_ovis", "ovis2"),
    "DeepseekVLV2ForCausalLM": ("deepseek_vl2", "build_deepseek_vl2", "deepseek-vl2"),
}


def architectures() -> list[str]:
    return list(BUILDERS)


def family(architecture: str) -> str:
    return BUILDERS[architecture][2] if architecture in BUILDERS else architecture


def is_complete(path: Path) -> bool:
    return (path / "tiny.json").is_file() and (path / "config.json").is_file()


def tiny_info(path: Path | str) -> dict[str, Any]:
    return json.loads((Path(path) / "tiny.json").read_text())


def build_tiny(architecture: str, out_dir: Path | str | None = None, seed: int = 0) -> Path:
    """Build (or reuse, when complete) the tiny folder of `architecture`; return its path. Raises KeyError
    for an architecture without a builder. Assembled in a sibling temp folder and renamed into place, so
    concurrent and interrupted builds never leave a half-written folder that looks complete."""
    if architecture not in BUILDERS:
        raise KeyError(f"no tiny build for architecture {architecture!r}")
    out = Path(out_dir if out_dir is not None else DEFAULT_ROOT / architecture).resolve()
    if is_complete(out):
        return out
    module, func, fam = BUILDERS[architecture]
    builder = getattr(importlib.import_module(f"cluster.tiny_models.{module}"), func)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    tmp.chmod(0o755)
    try:
        engine = builder(tmp, seed) or {}
        info = {"architecture": architecture, "family": fam, "builder": f"cluster.tiny_models.{module}.{func}",
                "seed": seed, "engine": engine}
        (tmp / "tiny.json").write_text(json.dumps(info, indent=1) + "\n")
        publish(tmp, out, is_complete)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return out


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["--list"]:
        for arch in BUILDERS:
            print(f"{arch}\t{family(arch)}")
        return 0
    if len(args) < 1 or args[0] in ("-h", "--help"):
        print("usage: python -m cluster.tiny_models ARCHITECTURE [OUT_DIR] [SEED] | --list", file=sys.stderr)
        return 2
    try:
        path = build_tiny(args[0], args[1] if len(args) > 1 else None, int(args[2]) if len(args) > 2 else 0)
    except KeyError as e:
        print(f"tiny_models: {e.args[0]}", file=sys.stderr)
        return 2
    print(path)
    return 0
