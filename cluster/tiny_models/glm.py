"""GLM vision-language families: GLM-4.6V (Glm4vMoe), GLM-4.6V-Flash / GLM-4.1V (Glm4v).

The real tokenizers' markers (`[gMASK]<sop>`, `<|user|>`, `<|begin_of_image|><|image|><|end_of_image|>`,
`<think>`), the GLM-4.6V processor (Glm46VProcessor: Glm4v image processor with a small pixel budget) and
M-RoPE sections scaled to the tiny head (partial rotary 0.5 as in the real configs).
"""

from __future__ import annotations

from pathlib import Path

from cluster.tiny_models.common import HIDDEN, save_random, special_ids, text_sizes, write_chat_template
from cluster.tiny_models.tokenizer import TokenizerSpec, build_tokenizer

SPECIALS = ["[gMASK]", "<sop>", "<|system|>", "<|user|>", "<|assistant|>", "<|observation|>",
            "<|begin_of_image|>", "<|end_of_image|>", "<|begin_of_video|>", "<|end_of_video|>", "<|image|>",
            "<|video|>", "<think>", "</think>", "<|begin_of_box|>", "<|end_of_box|>"]
TEMPLATE = (
    "[gMASK]<sop>{% for m in messages %}<|{{ m['role'] }}|>\n"
    "{% if m['content'] is string %}{{ m['content'] }}{% else %}{% for p in m['content'] %}"
    "{% if p['type'] in ('image', 'image_url', 'image_pil') %}<|begin_of_image|><|image|><|end_of_image|>"
    "{% elif p['type'] == 'text' %}{{ p['text'] }}{% endif %}{% endfor %}{% endif %}"
    "{% endfor %}{% if add_generation_prompt %}<|assistant|>\n<think>{% endif %}"
)


def _build(out: Path, seed: int, moe: bool) -> dict:
    import transformers

    tok = build_tokenizer(TokenizerSpec(SPECIALS, eos="<|endoftext|>", pad="<|endoftext|>",
                                        chat_template=TEMPLATE), out, seed)
    ids = special_ids(tok, image_token_id="<|image|>", video_token_id="<|video|>",
                      image_start_token_id="<|begin_of_image|>", image_end_token_id="<|end_of_image|>",
                      video_start_token_id="<|begin_of_video|>", video_end_token_id="<|end_of_video|>")
    eos = special_ids(tok, eos_token_id="<|endoftext|>", pad_token_id="<|endoftext|>")
    rope = {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [2, 3, 3],
            "partial_rotary_factor": 0.5}
    text = {**text_sizes(rope_parameters=rope, partial_rotary_factor=0.5), "vocab_size": len(tok), **eos}
    vision = {"depth": 1, "hidden_size": 32, "intermediate_size": 64, "num_heads": 2, "out_hidden_size": HIDDEN,
              "patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2, "image_size": 56}
    if moe:
        text.update(n_routed_experts=4, num_experts_per_tok=2, moe_intermediate_size=32, n_shared_experts=1,
                    first_k_dense_replace=0, attention_bias=True, n_group=1, topk_group=1, use_qk_norm=False)
        config = transformers.Glm4vMoeConfig(text_config=text, vision_config=vision, **ids)
        model_cls = transformers.Glm4vMoeForConditionalGeneration
    else:
        config = transformers.Glm4vConfig(text_config=text, vision_config=vision, **ids)
        model_cls = transformers.Glm4vForConditionalGeneration
    save_random(model_cls, config, out, seed)
    side = 28
    image_processor = transformers.Glm4vImageProcessor(
        size={"shortest_edge": side * side * 4, "longest_edge": side * side * 16}, patch_size=14, merge_size=2,
        temporal_patch_size=2,
    )
    video = transformers.Glm4vVideoProcessor(patch_size=14, merge_size=2, temporal_patch_size=2)
    proc = transformers.Glm46VProcessor(image_processor=image_processor, tokenizer=tok, video_processor=video,
                                        chat_template=TEMPLATE)
    proc.save_pretrained(out)
    write_chat_template(out, TEMPLATE)
    return {}


def build_glm4v(out: Path, seed: int) -> dict:
    return _build(out, seed, moe=False)


def build_glm4v_moe(out: Path, seed: int) -> dict:
    return _build(out, seed, moe=True)


# GLM-4V-9B (THUDM/zai-org glm-4v-9b): ChatGLM text model + EVA2-CLIP tower, remote-code format; vLLM ships
# its config class (chatglm) and its processor, and serves it as GLM4VForCausalLM (the registry's
# hf_overrides). An image is <|begin_of_image|><|endoftext|><|end_of_image|> in the prompt.
CHATGLM_TEMPLATE = (
    "[gMASK]<sop>{% for m in messages %}<|{{ m['role'] }}|>\n"
    "{% if m['content'] is string %}{{ m['content'] }}{% else %}{% for p in m['content'] %}"
    "{% if p['type'] in ('image', 'image_url', 'image_pil') %}<|begin_of_image|><|endoftext|><|end_of_image|>"
    "{% elif p['type'] == 'text' %}{{ p['text'] }}{% endif %}{% endfor %}{% endif %}"
    "{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


def build_chatglm4v(out: Path, seed: int) -> dict:
    import json

    tok = build_tokenizer(TokenizerSpec(SPECIALS, eos="<|endoftext|>", pad="<|endoftext|>",
                                        chat_template=CHATGLM_TEMPLATE), out, seed)
    ids = special_ids(tok, boi_token_id="<|begin_of_image|>", eoi_token_id="<|end_of_image|>",
                      pad_token_id="<|endoftext|>", eos_token_id="<|endoftext|>")
    config = {
        "architectures": ["ChatGLMModel"], "model_type": "chatglm", "num_layers": 1,
        "padded_vocab_size": len(tok), "hidden_size": HIDDEN, "ffn_hidden_size": 2 * HIDDEN, "kv_channels": 32,
        "num_attention_heads": 2, "seq_length": 32768, "multi_query_attention": True, "multi_query_group_num": 1,
        "add_qkv_bias": True, "add_bias_linear": False, "rmsnorm": True, "post_layer_norm": True,
        "layernorm_epsilon": 1.5625e-07, "original_rope": True, "rope_ratio": 1, "torch_dtype": "bfloat16",
        "tie_word_embeddings": False,
        "vision_config": {"dropout_prob": 0.0, "hidden_act": "gelu", "in_channels": 3, "num_hidden_layers": 1,
                          "hidden_size": 32, "patch_size": 14, "num_heads": 2, "intermediate_size": 64,
                          "layer_norm_eps": 1e-6, "num_positions": 17, "image_size": 56, "scaling_factor": 8},
        **ids,
    }
    (out / "config.json").write_text(json.dumps(config, indent=1) + "\n")
    write_chat_template(out, CHATGLM_TEMPLATE)
    return {"load_format": "dummy"}
