"""Qwen vision-language families: Qwen2-VL (QVQ), Qwen2.5-VL, Qwen3-VL, Qwen3.5 (dense and MoE).

The real checkpoints' special tokens and ChatML template with the `<|vision_start|><|image_pad|><|vision_end|>`
image placeholder; the processor is the family's own (Qwen2VLProcessor / Qwen3VLProcessor) with a small
pixel budget (16-64 image tokens a picture); M-RoPE sections scaled to the tiny head size.
"""

from __future__ import annotations

from pathlib import Path

from cluster.tiny_models.common import (
    HIDDEN,
    chatml,
    save_random,
    special_ids,
    text_sizes,
    write_chat_template,
)
from cluster.tiny_models.tokenizer import TokenizerSpec, build_tokenizer

SPECIALS = ["<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>", "<|box_start|>",
            "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>", "<|vision_end|>",
            "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>", "<think>", "</think>"]
IMAGE = "<|vision_start|><|image_pad|><|vision_end|>"
MROPE = [4, 6, 6]  # sums to head_dim / 2 = 16 (the real [16, 24, 24] for 128)


def _tokenizer(out: Path, seed: int, think: bool = False, system: bool = True):
    template = chatml(IMAGE, think=think, system="You are a helpful assistant." if system else None)
    spec = TokenizerSpec(SPECIALS, eos="<|im_end|>", pad="<|endoftext|>", chat_template=template)
    return build_tokenizer(spec, out, seed), template


def _ids(tok) -> dict[str, int]:
    return special_ids(tok, image_token_id="<|image_pad|>", video_token_id="<|video_pad|>",
                       vision_start_token_id="<|vision_start|>", vision_end_token_id="<|vision_end|>")


def _processor(out: Path, tok, template: str, processor_cls: str, patch: int, merge: int = 2) -> None:
    import transformers

    side = patch * merge
    image_processor = transformers.Qwen2VLImageProcessor(
        min_pixels=side * side * 4, max_pixels=side * side * 16, patch_size=patch, merge_size=merge,
        temporal_patch_size=2,
    )
    video_cls = "Qwen3VLVideoProcessor" if processor_cls == "Qwen3VLProcessor" else "Qwen2VLVideoProcessor"
    video = getattr(transformers, video_cls)(patch_size=patch, merge_size=merge, temporal_patch_size=2)
    proc = getattr(transformers, processor_cls)(image_processor=image_processor, tokenizer=tok,
                                                video_processor=video, chat_template=template)
    proc.save_pretrained(out)
    write_chat_template(out, template)


def _text(tok, **over) -> dict:
    # bos as in the real configs (<|endoftext|>; the class default is an id past the tiny vocabulary)
    ids = special_ids(tok, bos_token_id="<|endoftext|>", eos_token_id="<|im_end|>", pad_token_id="<|endoftext|>")
    return {**text_sizes(**over), "vocab_size": len(tok), **ids}


def build_qwen2_vl(out: Path, seed: int) -> dict:
    import transformers

    tok, template = _tokenizer(out, seed)
    text = _text(tok, rope_parameters={"rope_type": "default", "rope_theta": 1e6, "mrope_section": MROPE})
    vision = {"depth": 1, "embed_dim": 32, "hidden_size": HIDDEN, "num_heads": 2, "mlp_ratio": 2,
              "patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2}
    config = transformers.Qwen2VLConfig(text_config=text, vision_config=vision, **_ids(tok))
    save_random(transformers.Qwen2VLForConditionalGeneration, config, out, seed)
    _processor(out, tok, template, "Qwen2VLProcessor", 14)
    return {}


def build_qwen2_5_vl(out: Path, seed: int) -> dict:
    import transformers

    tok, template = _tokenizer(out, seed)
    text = _text(tok, rope_parameters={"rope_type": "default", "rope_theta": 1e6, "mrope_section": MROPE})
    vision = {"depth": 2, "hidden_size": 32, "intermediate_size": 64, "num_heads": 2, "out_hidden_size": HIDDEN,
              "patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2, "window_size": 56,
              "fullatt_block_indexes": [1]}
    config = transformers.Qwen2_5_VLConfig(text_config=text, vision_config=vision, **_ids(tok))
    save_random(transformers.Qwen2_5_VLForConditionalGeneration, config, out, seed)
    _processor(out, tok, template, "Qwen2VLProcessor", 14)
    return {}


def _qwen3_vision(deepstack: bool = True) -> dict:
    return {"depth": 2, "hidden_size": 32, "intermediate_size": 64, "num_heads": 2, "out_hidden_size": HIDDEN,
            "patch_size": 16, "spatial_merge_size": 2, "temporal_patch_size": 2, "num_position_embeddings": 64,
            "deepstack_visual_indexes": [0] if deepstack else []}


def build_qwen3_vl(out: Path, seed: int) -> dict:
    import transformers

    tok, template = _tokenizer(out, seed, system=False)
    text = _text(tok, rope_parameters={"rope_type": "default", "rope_theta": 5e6, "mrope_section": MROPE,
                                       "mrope_interleaved": True})
    config = transformers.Qwen3VLConfig(text_config=text, vision_config=_qwen3_vision(), **_ids(tok))
    save_random(transformers.Qwen3VLForConditionalGeneration, config, out, seed)
    _processor(out, tok, template, "Qwen3VLProcessor", 16)
    return {}


# vLLM's cache of the linear-attention (Gated DeltaNet) layers requires chunked prefill, which the backend
# turns off on CPU (seeded sampling crashes a chunked step there; preflight samples greedily)
CHUNKED = {"enable_chunked_prefill": True}


def _qwen3_5_text(tok, **extra) -> dict:
    # hybrid layers as in the real model: Gated DeltaNet (linear attention) then full attention
    return _text(
        tok, num_hidden_layers=2, layer_types=["linear_attention", "full_attention"],
        linear_conv_kernel_dim=4, linear_key_head_dim=128, linear_value_head_dim=128, linear_num_key_heads=1,
        linear_num_value_heads=1,  # the CPU Gated DeltaNet kernel takes head size 128 (as in the real model)
        rope_parameters={"rope_type": "default", "rope_theta": 1e7, "partial_rotary_factor": 0.25,
                         "mrope_section": [2, 1, 1], "mrope_interleaved": True},
        **extra,
    )


def build_qwen3_5(out: Path, seed: int) -> dict:
    import transformers

    tok, template = _tokenizer(out, seed, think=True, system=False)
    config = transformers.Qwen3_5Config(text_config=_qwen3_5_text(tok), vision_config=_qwen3_vision(False),
                                        **_ids(tok))
    save_random(transformers.Qwen3_5ForConditionalGeneration, config, out, seed)
    _processor(out, tok, template, "Qwen3VLProcessor", 16)
    return CHUNKED


def build_qwen3_5_moe(out: Path, seed: int) -> dict:
    import transformers

    tok, template = _tokenizer(out, seed, think=True, system=False)
    text = _qwen3_5_text(tok, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
                         shared_expert_intermediate_size=32)
    config = transformers.Qwen3_5MoeConfig(text_config=text, vision_config=_qwen3_vision(False), **_ids(tok))
    save_random(transformers.Qwen3_5MoeForConditionalGeneration, config, out, seed)
    _processor(out, tok, template, "Qwen3VLProcessor", 16)
    return CHUNKED
