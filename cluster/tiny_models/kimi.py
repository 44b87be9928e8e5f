"""Kimi-K2.5 (`KimiK25ForConditionalGeneration`): MoonViT3d tower + a DeepSeek-V3 text model (MLA, MoE).

The config is transformers' own `Kimi_K25Config` (vLLM reads it too). The image processor is the format
of the real `preprocessor_config.json` (`media_proc_cfg`), which vLLM reads with its own Kimi-K2.5 processor
(`KimiK25FusedVisionProcessor`, numba), so the patch budget here is small. The tokenizer holds Kimi's turn
markers (`<|im_user|>user<|im_middle|>...<|im_end|>`) and media markers (`<|media_begin|>image
<|media_content|><|media_pad|><|media_end|>`). MLA sizes keep the latent at 512 + 64 (the only head size
vLLM's CPU MLA kernel takes), as in the real model. transformers' model class saves a layout vLLM does not
map (fused experts), so the weights come from vLLM's `load_format: dummy`.
"""

from __future__ import annotations

import json
from pathlib import Path

from cluster.tiny_models.common import HIDDEN, MAX_POSITIONS, write_chat_template
from cluster.tiny_models.tokenizer import TokenizerSpec, build_tokenizer

MEDIA = "<|media_begin|>image<|media_content|><|media_pad|><|media_end|>"
SPECIALS = ["<|im_system|>", "<|im_user|>", "<|im_assistant|>", "<|im_middle|>", "<|im_end|>",
            "<|media_begin|>", "<|media_content|>", "<|media_end|>", "<|media_pad|>",
            "<|kimi_k25_video_placeholder|>", "<think>", "</think>"]
# Kimi's turns; thinking on (the registry entry is the thinking variant): the answer opens with <think>
TEMPLATE = (
    "{% if messages[0]['role'] != 'system' %}<|im_system|>system<|im_middle|>You are Kimi, an AI assistant "
    "created by Moonshot AI.<|im_end|>{% endif %}"
    "{% for m in messages %}<|im_{{ m['role'] }}|>{{ m['role'] }}<|im_middle|>"
    "{% if m['content'] is string %}{{ m['content'] }}{% else %}{% for p in m['content'] %}"
    "{% if p['type'] in ('image', 'image_url', 'image_pil') %}" + MEDIA
    + "{% elif p['type'] == 'text' %}{{ p['text'] }}{% endif %}{% endfor %}{% endif %}<|im_end|>"
    "{% endfor %}{% if add_generation_prompt %}<|im_assistant|>assistant<|im_middle|><think>{% endif %}"
)


def build_kimi_k25(out: Path, seed: int) -> dict:
    import transformers

    tok = build_tokenizer(TokenizerSpec(SPECIALS, bos="[BOS]", eos="<|im_end|>", pad="[PAD]", unk="[UNK]",
                                        chat_template=TEMPLATE), out, seed)
    ids = {k: tok.convert_tokens_to_ids(v) for k, v in (("bos_token_id", "[BOS]"), ("eos_token_id", "<|im_end|>"),
                                                        ("pad_token_id", "[PAD]"))}
    text = {
        "model_type": "deepseek_v3", "vocab_size": len(tok), "hidden_size": HIDDEN, "intermediate_size": 2 * HIDDEN,
        "moe_intermediate_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 2,
        "n_routed_experts": 4, "num_experts_per_tok": 2, "n_shared_experts": 1, "first_k_dense_replace": 0,
        "n_group": 1, "topk_group": 1, "routed_scaling_factor": 2.5, "topk_method": "noaux_tc",
        "scoring_func": "sigmoid", "norm_topk_prob": True,
        "q_lora_rank": 32, "kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 32, "v_head_dim": 32,
        "max_position_embeddings": MAX_POSITIONS, "rope_parameters": {"rope_type": "default", "rope_theta": 50000.0},
        "tie_word_embeddings": False, **ids,
    }
    vision = {"patch_size": 14, "pos_emb_height": 8, "pos_emb_width": 8, "pos_emb_time": 4,
              "num_attention_heads": 2, "num_hidden_layers": 1, "hidden_size": 64, "intermediate_size": 128,
              "merge_kernel_size": [2, 2]}
    config = transformers.Kimi_K25Config(
        text_config=text, vision_config=vision, projection_hidden_size=64, tie_word_embeddings=False,
        image_token_id=tok.convert_tokens_to_ids("<|media_pad|>"),
        video_token_id=tok.convert_tokens_to_ids("<|kimi_k25_video_placeholder|>"),
        vision_start_token_id=tok.convert_tokens_to_ids("<|media_begin|>"),
        vision_end_token_id=tok.convert_tokens_to_ids("<|media_end|>"),
        architectures=["KimiK25ForConditionalGeneration"], use_unified_vision_chunk=True, **ids,
    )
    config.save_pretrained(out)
    media = {"in_patch_limit": 64, "patch_size": 14, "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5],
             "merge_kernel_size": 2, "fixed_output_tokens": None, "patch_limit_on_one_side": 16,
             "in_patch_limit_each_frame": 64, "in_patch_limit_video": None, "sample_fps": 2.0,
             "max_num_frames_each_video": None, "temporal_merge_kernel_size": 4, "timestamp_mode": "hh:mm:ss.fff",
             "config_type": "media_proc"}
    (out / "preprocessor_config.json").write_text(json.dumps({"media_proc_cfg": media}, indent=1) + "\n")
    write_chat_template(out, TEMPLATE)
    return {"load_format": "dummy"}
