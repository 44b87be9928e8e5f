"""Gemma 3 (vision): SigLIP tower pooled to `mm_tokens_per_image` soft tokens, Gemma 3 text model with
sliding and global layers, the Gemma turn markers and `<start_of_image>` placeholder, Gemma3Processor."""

from __future__ import annotations

from pathlib import Path

from cluster.tiny_models.common import (
    HEAD_DIM,
    rename_weights,
    save_random,
    special_ids,
    text_sizes,
    tower_layout,
    write_chat_template,
)
from cluster.tiny_models.tokenizer import TokenizerSpec, build_tokenizer

TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<start_of_turn>{{ 'model' if m['role'] == 'assistant' else 'user' }}\n"
    "{% if m['content'] is string %}{{ m['content'] }}{% else %}{% for p in m['content'] %}"
    "{% if p['type'] in ('image', 'image_url', 'image_pil') %}<start_of_image>"
    "{% elif p['type'] == 'text' %}{{ p['text'] }}{% endif %}{% endfor %}{% endif %}<end_of_turn>\n"
    "{% endfor %}{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}"
)
EXTRA = {"boi_token": "<start_of_image>", "eoi_token": "<end_of_image>", "image_token": "<image_soft_token>"}
TOKENS_PER_IMAGE = 4


def build_gemma3(out: Path, seed: int) -> dict:
    import transformers

    spec = TokenizerSpec(["<start_of_turn>", "<end_of_turn>"], bos="<bos>", eos="<eos>", pad="<pad>",
                         unk="<unk>", chat_template=TEMPLATE, extra=EXTRA, add_bos=False,
                         added=["\n" * k for k in range(1, 5)])  # single tokens in Gemma's vocabulary
    tok = build_tokenizer(spec, out, seed)
    ids = special_ids(tok, bos_token_id="<bos>", eos_token_id="<eos>", pad_token_id="<pad>")
    text = {**text_sizes(num_hidden_layers=2), "vocab_size": len(tok), **ids, "query_pre_attn_scalar": HEAD_DIM,
            "sliding_window": 64, "layer_types": ["sliding_attention", "full_attention"]}
    config = transformers.Gemma3Config(
        text_config=text,
        vision_config={"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 2,
                       "image_size": 56, "patch_size": 14},
        mm_tokens_per_image=TOKENS_PER_IMAGE, boi_token_index=tok.convert_tokens_to_ids("<start_of_image>"),
        eoi_token_index=tok.convert_tokens_to_ids("<end_of_image>"),
        image_token_index=tok.convert_tokens_to_ids("<image_soft_token>"), **ids,
    )
    save_random(transformers.Gemma3ForConditionalGeneration, config, out, seed)
    rename_weights(out, tower_layout)
    image_processor = transformers.Gemma3ImageProcessor(size={"height": 56, "width": 56})
    proc = transformers.Gemma3Processor(image_processor=image_processor, tokenizer=tok, chat_template=TEMPLATE,
                                        image_seq_length=TOKENS_PER_IMAGE)
    proc.save_pretrained(out)
    write_chat_template(out, TEMPLATE)
    return {}
