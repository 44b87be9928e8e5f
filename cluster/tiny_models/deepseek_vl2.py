"""DeepSeek-VL2 (`DeepseekVLV2ForCausalLM`): a SigLIP-SO400M tower (built by timm), a downsampling MLP
projector and a DeepSeek-V2 MoE text model with multi-head latent attention.

vLLM ships this format's configuration (`DeepseekVLV2Config`, model_type `deepseek_vl_v2`) and processor
(`DeepseekVLV2Processor`, named by `processor_config.json` as in the real repo): it tiles a picture into the
best `candidate_resolutions` grid plus a global view and expands `<image>` to rows of image tokens. vLLM
builds the tower with `timm.create_model("vit_so400m_patch14_siglip_384.webli")` whatever the config says
(timm must be installed: the `vllm-cpu` extra has it), so only the tile size shrinks here: 56-px tiles (16
patches, 2x2 downsampled -> 4 tokens per tile, the real model 384 px). MLA keeps the latent at 512 + 64 (the
head size vLLM's CPU MLA kernel takes, as in the real model). Like the real checkpoint the tokenizer has no
chat template (the registry entry names one, `chat_templates.deepseek-vl2`). The weights come from vLLM's
`load_format: dummy`.
"""

from __future__ import annotations

import json
from pathlib import Path

from cluster.tiny_models.common import HIDDEN, MAX_POSITIONS
from cluster.tiny_models.tokenizer import TokenizerSpec, build_tokenizer

TILE = 56
BOS, EOS, PAD = "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>", "<｜▁pad▁｜>"
SPECIALS = ["<image>", "<|ref|>", "<|/ref|>", "<|det|>", "<|/det|>", "<|grounding|>", "<|User|>", "<|Assistant|>"]


def build_deepseek_vl2(out: Path, seed: int) -> dict:
    tok = build_tokenizer(TokenizerSpec(SPECIALS, bos=BOS, eos=EOS, pad=PAD, add_bos=True), out, seed)
    ids = {k: tok.convert_tokens_to_ids(v) for k, v in (("bos_token_id", BOS), ("eos_token_id", EOS),
                                                        ("pad_token_id", PAD))}
    resolutions = [[TILE * h, TILE * w] for h in (1, 2) for w in (1, 2)]
    language = {
        "model_type": "deepseek_v2", "architectures": ["DeepseekV2ForCausalLM"], "vocab_size": len(tok),
        "hidden_size": HIDDEN, "intermediate_size": 2 * HIDDEN, "moe_intermediate_size": 32,
        "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 2, "n_routed_experts": 4,
        "num_experts_per_tok": 2, "n_shared_experts": 1, "first_k_dense_replace": 0, "n_group": 1,
        "topk_group": 1, "topk_method": "greedy", "routed_scaling_factor": 1.0, "norm_topk_prob": False,
        "q_lora_rank": 32, "kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 32, "v_head_dim": 32,
        "max_position_embeddings": MAX_POSITIONS, "rms_norm_eps": 1e-6, "tie_word_embeddings": False,
        "torch_dtype": "bfloat16", **ids,
    }
    config = {
        "architectures": ["DeepseekVLV2ForCausalLM"], "model_type": "deepseek_vl_v2", "tile_tag": "2D",
        "global_view_pos": "head", "candidate_resolutions": resolutions, "torch_dtype": "bfloat16",
        "language_config": language,
        "projector_config": {"projector_type": "downsample_mlp_gelu", "input_dim": 1152, "n_embed": HIDDEN,
                             "depth": 2, "mlp_ratio": 1, "downsample_ratio": 2, "model_type": "mlp_projector"},
        "vision_config": {"model_name": "siglip_so400m_patch14_384", "image_size": TILE, "patch_size": 14,
                          "width": 1152, "layers": 27, "heads": 16, "mlp_ratio": 3.7362, "global_pool": "map",
                          "ignore_head": True, "class_token": False, "num_classes": 0, "model_type": "vision"},
    }
    (out / "config.json").write_text(json.dumps(config, indent=1) + "\n")
    (out / "processor_config.json").write_text(json.dumps({
        "processor_class": "DeepseekVLV2Processor", "candidate_resolutions": resolutions, "patch_size": 14,
        "downsample_ratio": 2, "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5], "normalize": True,
        "image_token": "<image>", "pad_token": PAD, "add_special_token": False, "sft_format": "deepseek",
        "mask_prompt": False, "ignore_id": -100,
    }, indent=1) + "\n")
    return {"load_format": "dummy"}
