"""LLaVA families: LLaVA-1.5 (CLIP tower, Llama) and LLaVA-OneVision (SigLIP tower, Qwen2, anyres tiles).

llava-hf format with the family's processor (LlavaProcessor / LlavaOnevisionProcessor, small tiles) and
its prompt layouts: `USER: <image>\n... ASSISTANT:` (1.5) and ChatML with `<image>\n` (OneVision).
"""

from __future__ import annotations

from pathlib import Path

from cluster.tiny_models.common import (
    chatml,
    rename_weights,
    save_random,
    special_ids,
    text_sizes,
    tower_layout,
    write_chat_template,
)
from cluster.tiny_models.tokenizer import TokenizerSpec, build_tokenizer

LLAVA15_TEMPLATE = (
    "{% for m in messages %}{% if m['role'] == 'system' %}{{ m['content'] }}\n{% else %}"
    "{{ m['role'].upper() }}: {% if m['content'] is string %}{{ m['content'] }}{% else %}"
    "{% for p in m['content'] %}{% if p['type'] in ('image', 'image_url', 'image_pil') %}<image>\n"
    "{% elif p['type'] == 'text' %}{{ p['text'] }}{% endif %}{% endfor %}{% endif %}\n{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}ASSISTANT:{% endif %}"
)
VISION = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2,
          "image_size": 28, "patch_size": 14}


def build_llava(out: Path, seed: int) -> dict:
    import transformers

    tok = build_tokenizer(TokenizerSpec(["<image>"], bos="<s>", eos="</s>", pad="<pad>", unk="<unk>",
                                        chat_template=LLAVA15_TEMPLATE, add_bos=True), out, seed)
    ids = special_ids(tok, bos_token_id="<s>", eos_token_id="</s>", pad_token_id="<pad>")
    config = transformers.LlavaConfig(
        vision_config={"model_type": "clip_vision_model", **VISION, "projection_dim": 32},
        text_config={"model_type": "llama", **text_sizes(), "vocab_size": len(tok), **ids},
        image_token_index=tok.convert_tokens_to_ids("<image>"), vision_feature_layer=-2,
        vision_feature_select_strategy="default", **ids,
    )
    save_random(transformers.LlavaForConditionalGeneration, config, out, seed)
    rename_weights(out, tower_layout)
    image_processor = transformers.CLIPImageProcessor(size={"shortest_edge": 28}, crop_size={"height": 28, "width": 28})
    proc = transformers.LlavaProcessor(image_processor=image_processor, tokenizer=tok, patch_size=14,
                                       vision_feature_select_strategy="default", chat_template=LLAVA15_TEMPLATE,
                                       num_additional_image_tokens=1)
    proc.save_pretrained(out)
    write_chat_template(out, LLAVA15_TEMPLATE)
    return {}


def build_llava_onevision(out: Path, seed: int) -> dict:
    import transformers

    template = chatml("<image>\n", system="You are a helpful assistant.")
    tok = build_tokenizer(TokenizerSpec(["<|im_start|>", "<|im_end|>", "<image>", "<video>"], eos="<|im_end|>",
                                        pad="<|endoftext|>", chat_template=template), out, seed)
    ids = special_ids(tok, eos_token_id="<|im_end|>", pad_token_id="<|endoftext|>")
    pinpoints = [[28, 28], [28, 56], [56, 28], [56, 56]]
    config = transformers.LlavaOnevisionConfig(
        vision_config={"model_type": "siglip_vision_model", **VISION},
        text_config={"model_type": "qwen2", **text_sizes(), "vocab_size": len(tok), **ids},
        image_token_index=tok.convert_tokens_to_ids("<image>"),
        video_token_index=tok.convert_tokens_to_ids("<video>"),
        image_grid_pinpoints=pinpoints, vision_feature_select_strategy="full", vision_feature_layer=-1,
        vision_aspect_ratio="anyres_max_9", **ids,
    )
    save_random(transformers.LlavaOnevisionForConditionalGeneration, config, out, seed)
    rename_weights(out, tower_layout)
    image_processor = transformers.LlavaOnevisionImageProcessor(size={"height": 28, "width": 28},
                                                                image_grid_pinpoints=pinpoints)
    video = transformers.LlavaOnevisionVideoProcessor(size={"height": 28, "width": 28})
    proc = transformers.LlavaOnevisionProcessor(
        image_processor=image_processor, tokenizer=tok, video_processor=video, num_image_tokens=4,
        vision_feature_select_strategy="full", chat_template=template, vision_aspect_ratio="anyres_max_9",
    )
    proc.save_pretrained(out)
    write_chat_template(out, template)
    return {}
