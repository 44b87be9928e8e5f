"""Shared pieces of the tiny builders: text-model sizes, random weights, chat templates."""

from __future__ import annotations

from pathlib import Path
from typing import Any

HIDDEN = 64
HEADS = 2
KV_HEADS = 1
HEAD_DIM = 32  # a head size vLLM's CPU attention accepts
LAYERS = 1
MAX_POSITIONS = 32768  # >= every registry max_model_len, so the entry's own cap is what preflight checks


def text_sizes(**over: Any) -> dict[str, Any]:
    """A Llama-like text model's sizes (the keys most decoder configs share)."""
    base = {
        "hidden_size": HIDDEN, "intermediate_size": 2 * HIDDEN, "num_hidden_layers": LAYERS,
        "num_attention_heads": HEADS, "num_key_value_heads": KV_HEADS, "head_dim": HEAD_DIM,
        "max_position_embeddings": MAX_POSITIONS, "tie_word_embeddings": False,
    }
    base.update(over)
    return base


def special_ids(tokenizer, **roles: str | None) -> dict[str, int]:
    return {k: tokenizer.convert_tokens_to_ids(v) for k, v in roles.items() if v}


def save_random(model_cls: Any, config: Any, out: Path, seed: int, generation: dict[str, int] | None = None) -> None:
    """Random weights of `model_cls(config)` in bf16 to `out` (same seed, same weights)."""
    import torch

    torch.manual_seed(seed)
    model = model_cls(config).to(torch.bfloat16)
    for k, v in (generation or {}).items():
        setattr(model.generation_config, k, v)
    model.save_pretrained(out)


def write_chat_template(out: Path, template: str) -> None:
    (out / "chat_template.jinja").write_text(template)


# ChatML with OpenAI-style content parts; `image` renders the family's placeholder.
def chatml(image: str = "", think: bool = False, system: str | None = None) -> str:
    sys_block = (
        "{% if messages[0]['role'] != 'system' %}<|im_start|>system\n" + system + "<|im_end|>\n{% endif %}"
        if system else ""
    )
    return (
        sys_block
        + "{% for m in messages %}<|im_start|>{{ m['role'] }}\n"
        "{% if m['content'] is string %}{{ m['content'] }}{% else %}{% for p in m['content'] %}"
        "{% if p['type'] in ('image', 'image_url', 'image_pil') %}" + image
        + "{% elif p['type'] == 'text' %}{{ p['text'] }}{% endif %}{% endfor %}{% endif %}<|im_end|>\n"
        "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n"
        + ("<think>\n" if think else "")
        + "{% endif %}"
    )


def rename_weights(out: Path, rename) -> None:
    """Rewrite model.safetensors with `rename(key)` applied to every tensor name (checkpoint layouts that
    transformers 5 saves differently from the published checkpoints vLLM maps)."""
    from safetensors.torch import load_file, save_file

    path = out / "model.safetensors"
    tensors = load_file(str(path))
    save_file({rename(k): v for k, v in tensors.items()}, str(path), metadata={"format": "pt"})


def tower_layout(key: str) -> str:
    """transformers 5 saves a CLIP/SigLIP tower as vision_tower.embeddings...; the published checkpoints (and
    vLLM) have vision_tower.vision_model.embeddings..."""
    head, sep, tail = key.partition("vision_tower.")
    if sep and not tail.startswith("vision_model."):
        return f"{head}vision_tower.vision_model.{tail}"
    return key
