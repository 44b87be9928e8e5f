"""Text-only decoders of the registry: Llama (Yi), Mistral, Qwen2 (Qwen2.5, QwQ), Phi (Phi-1.5, Phi-2)."""

from __future__ import annotations

from pathlib import Path

from cluster.tiny_models.common import chatml, save_random, special_ids, text_sizes, write_chat_template
from cluster.tiny_models.tokenizer import TokenizerSpec, build_tokenizer

# Mistral-Instruct v0.1: [INST] turns, no system role (the real template raises on one)
MISTRAL_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}"
    "{% if m['role'] == 'system' %}{{ raise_exception('system role not supported') }}{% endif %}"
    "{% if m['role'] == 'user' %}[INST] {% if m['content'] is string %}{{ m['content'] }}{% else %}"
    "{% for p in m['content'] %}{% if p['type'] == 'text' %}{{ p['text'] }}{% endif %}{% endfor %}{% endif %}"
    " [/INST]{% else %}{{ m['content'] }}{{ eos_token }}{% endif %}{% endfor %}"
)


def _causal(out: Path, seed: int, cls_name: str, config_name: str, spec: TokenizerSpec, **sizes) -> dict:
    import transformers

    tok = build_tokenizer(spec, out, seed)
    ids = special_ids(tok, bos=spec.bos, eos=spec.eos, pad=spec.pad)
    config = getattr(transformers, config_name)(
        vocab_size=len(tok), bos_token_id=ids.get("bos"), eos_token_id=ids.get("eos"),
        pad_token_id=ids.get("pad"), **text_sizes(**sizes),
    )
    save_random(getattr(transformers, cls_name), config, out, seed,
                {k + "_token_id": v for k, v in ids.items()})
    if spec.chat_template:
        write_chat_template(out, spec.chat_template)
    return {}


def build_llama(out: Path, seed: int) -> dict:
    # Yi-34B-Chat: Llama architecture, ChatML turns, <|startoftext|> / <|endoftext|>
    spec = TokenizerSpec(["<|im_start|>", "<|im_end|>", "<|im_sep|>"], bos="<|startoftext|>",
                         eos="<|im_end|>", pad="<unk>", unk="<unk>", chat_template=chatml())
    return _causal(out, seed, "LlamaForCausalLM", "LlamaConfig", spec)


def build_mistral(out: Path, seed: int) -> dict:
    spec = TokenizerSpec(["[INST]", "[/INST]"], bos="<s>", eos="</s>", unk="<unk>",
                         chat_template=MISTRAL_TEMPLATE, add_bos=False)
    return _causal(out, seed, "MistralForCausalLM", "MistralConfig", spec, sliding_window=4096)


def build_qwen2(out: Path, seed: int) -> dict:
    spec = TokenizerSpec(["<|im_start|>", "<|im_end|>", "<think>", "</think>"], eos="<|im_end|>",
                         pad="<|endoftext|>", chat_template=chatml(system="You are a helpful assistant."))
    return _causal(out, seed, "Qwen2ForCausalLM", "Qwen2Config", spec)


def build_phi(out: Path, seed: int) -> dict:
    # Phi-1.5 / Phi-2: CodeGen tokenizer with <|endoftext|>, no chat template (the registry gives one);
    # partial rotary as in the real configs
    spec = TokenizerSpec([], bos="<|endoftext|>", eos="<|endoftext|>", unk="<|endoftext|>")
    return _causal(out, seed, "PhiForCausalLM", "PhiConfig", spec, partial_rotary_factor=0.5,
                   num_key_value_heads=2)  # Phi has no grouped-query attention
