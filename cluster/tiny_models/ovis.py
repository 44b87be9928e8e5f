"""Ovis2 (`Ovis`, AIDC-AI's remote-code format): a Qwen2 text model and a *visual tokenizer* (an AIMv2 tower
whose patches become soft distributions over a visual vocabulary, embedded by `vte`).

vLLM ships this format's configuration (`OvisConfig`, model_type `ovis`) and its processor (`OvisProcessor`:
partitions a picture into up to 9 crops plus the whole, pads each crop square, and expands `<image>` into
`<|image_pad|>` runs between the image indicator tokens), so the folder needs only `config.json`, the image
processor's settings (CLIP normalisation, 56-px crops: 16 patches, 2x2 merged -> 4 tokens per crop) and a
Qwen2 tokenizer with `<image>` and `<|image_pad|>`. The chat template is Qwen2's ChatML with `<image>` before
the text. No transformers class loads this layout: the weights come from vLLM's `load_format: dummy`.
"""

from __future__ import annotations

import json
from pathlib import Path

from cluster.tiny_models.common import HIDDEN, chatml, special_ids, text_sizes, write_chat_template
from cluster.tiny_models.tokenizer import TokenizerSpec, build_tokenizer

SIDE = 56  # crop side in pixels (the real AIMv2 tower: 448)
CLIP_MEAN = [0.48145466, 0.4578275, 0.40821073]
CLIP_STD = [0.26862954, 0.26130258, 0.27577711]


def build_ovis(out: Path, seed: int) -> dict:
    template = chatml("<image>\n", system="You are a helpful assistant.")
    tok = build_tokenizer(TokenizerSpec(["<|im_start|>", "<|im_end|>", "<image>", "<|image_pad|>"],
                                        eos="<|im_end|>", pad="<|endoftext|>", chat_template=template), out, seed)
    ids = special_ids(tok, eos_token_id="<|im_end|>", pad_token_id="<|endoftext|>")
    config = {
        "architectures": ["Ovis"], "model_type": "ovis", "hidden_size": HIDDEN, "multimodal_max_length": 32768,
        "conversation_formatter_class": "QwenConversationFormatter", "torch_dtype": "bfloat16",
        "llm_config": {"model_type": "qwen2", "architectures": ["Qwen2ForCausalLM"], "vocab_size": len(tok),
                       **ids, **text_sizes()},
        "visual_tokenizer_config": {
            "model_type": "aimv2_visual_tokenizer", "vocab_size": 64, "tokenize_function": "softmax", "tau": 1.0,
            "hidden_stride": 2, "drop_cls_token": False, "depths": None,
            "backbone_config": {"model_type": "aimv2", "hidden_size": 32, "intermediate_size": 64,
                                "num_hidden_layers": 1, "num_attention_heads": 2, "num_channels": 3,
                                "image_size": SIDE, "patch_size": 14, "rms_norm_eps": 1e-5, "qkv_bias": False,
                                "mlp_bias": False},
        },
        **ids,
    }
    (out / "config.json").write_text(json.dumps(config, indent=1) + "\n")
    (out / "preprocessor_config.json").write_text(json.dumps({
        "image_processor_type": "CLIPImageProcessor", "size": {"height": SIDE, "width": SIDE},
        "crop_size": {"height": SIDE, "width": SIDE}, "do_center_crop": False, "do_resize": True,
        "do_rescale": True, "rescale_factor": 1 / 255, "do_normalize": True, "image_mean": CLIP_MEAN,
        "image_std": CLIP_STD, "do_convert_rgb": True, "resample": 3,
    }, indent=1) + "\n")
    write_chat_template(out, template)
    return {"load_format": "dummy"}
