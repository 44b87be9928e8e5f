"""InternVL (InternVL2.5 / 3 / 3.5 in the OpenGVLab format: `InternVLChatModel`, remote-code config).

The real checkpoints ship their configuration code (`trust_remote_code`); this folder ships a small one
written here (`configuration_internvl_chat.py`, the same fields) and an `auto_map` to it, so vLLM loads it
exactly as it loads theirs. vLLM has its own InternVL processor (it tiles pictures and expands `<image>`
to `<img><IMG_CONTEXT>...</img>`); the tokenizer holds those tokens and a ChatML template. transformers has
no model class for this format, so the weights come from vLLM's `load_format: dummy`.
"""

from __future__ import annotations

import json
from pathlib import Path

from cluster.tiny_models.common import HIDDEN, chatml, special_ids, text_sizes, write_chat_template
from cluster.tiny_models.tokenizer import TokenizerSpec, build_tokenizer

CONFIG_CODE = '''"""InternVLChatConfig for a tiny offline test model (fields as in OpenGVLab's InternVL configs)."""
from transformers import PretrainedConfig
from transformers.models.auto import CONFIG_MAPPING


class InternVisionConfig(PretrainedConfig):
    model_type = "intern_vit_6b"

    def __init__(self, num_channels=3, patch_size=14, image_size=56, qkv_bias=True, hidden_size=32,
                 num_attention_heads=2, intermediate_size=64, qk_normalization=False, num_hidden_layers=1,
                 use_flash_attn=False, hidden_act="gelu", norm_type="layer_norm", layer_norm_eps=1e-6,
                 dropout=0.0, drop_path_rate=0.0, attention_dropout=0.0, initializer_range=0.02,
                 initializer_factor=1.0, **kwargs):
        super().__init__(**kwargs)
        self.num_channels, self.patch_size, self.image_size = num_channels, patch_size, image_size
        self.qkv_bias, self.hidden_size, self.num_attention_heads = qkv_bias, hidden_size, num_attention_heads
        self.intermediate_size, self.qk_normalization = intermediate_size, qk_normalization
        self.num_hidden_layers, self.use_flash_attn, self.hidden_act = num_hidden_layers, use_flash_attn, hidden_act
        self.norm_type, self.layer_norm_eps, self.dropout = norm_type, layer_norm_eps, dropout
        self.drop_path_rate, self.attention_dropout = drop_path_rate, attention_dropout
        self.initializer_range, self.initializer_factor = initializer_range, initializer_factor


class InternVLChatConfig(PretrainedConfig):
    model_type = "internvl_chat"
    is_composition = True

    def __init__(self, vision_config=None, llm_config=None, use_backbone_lora=0, use_llm_lora=0,
                 select_layer=-1, force_image_size=None, downsample_ratio=0.5, template=None,
                 dynamic_image_size=False, use_thumbnail=False, ps_version="v1", min_dynamic_patch=1,
                 max_dynamic_patch=6, **kwargs):
        super().__init__(**kwargs)
        self.vision_config = InternVisionConfig(**(vision_config or {}))
        llm = dict(llm_config or {"architectures": ["Qwen2ForCausalLM"]})
        self.llm_config = CONFIG_MAPPING[llm.pop("model_type", "qwen2")](**llm)
        self.use_backbone_lora, self.use_llm_lora = use_backbone_lora, use_llm_lora
        self.select_layer, self.force_image_size = select_layer, force_image_size
        self.downsample_ratio, self.template, self.ps_version = downsample_ratio, template, ps_version
        self.dynamic_image_size, self.use_thumbnail = dynamic_image_size, use_thumbnail
        self.min_dynamic_patch, self.max_dynamic_patch = min_dynamic_patch, max_dynamic_patch

    def to_dict(self):
        out = super().to_dict()
        out["vision_config"] = self.vision_config.to_dict()
        out["llm_config"] = self.llm_config.to_dict()
        return out
'''

SPECIALS = ["<|im_start|>", "<|im_end|>", "<img>", "</img>", "<IMG_CONTEXT>", "<quad>", "</quad>", "<ref>",
            "</ref>", "<box>", "</box>", "<think>", "</think>"]


def build_internvl_chat(out: Path, seed: int) -> dict:
    return build_internvl_format(out, seed, SPECIALS, architecture="InternVLChatModel", model_type="internvl_chat",
                                 config_module="configuration_internvl_chat", config_class="InternVLChatConfig",
                                 config_code=CONFIG_CODE, template_name="internvl2_5")


def build_internvl_format(out: Path, seed: int, specials: list[str], *, architecture: str, model_type: str,
                          config_module: str, config_class: str, config_code: str, template_name: str,
                          max_tiles: int = 2) -> dict:
    """A folder in OpenGVLab's InternVL format (InternViT + a Qwen2 decoder, a remote-code config), which NVLM-D
    shares under its own architecture and model type."""
    template = chatml("<image>\n", system="You are a helpful assistant.")
    tok = build_tokenizer(TokenizerSpec(specials, eos="<|im_end|>", pad="<|endoftext|>",
                                        chat_template=template), out, seed)
    ids = special_ids(tok, eos_token_id="<|im_end|>", pad_token_id="<|endoftext|>")
    llm = {"model_type": "qwen2", "architectures": ["Qwen2ForCausalLM"], "vocab_size": len(tok), **ids,
           **text_sizes()}
    config = {
        "architectures": [architecture], "model_type": model_type,
        "auto_map": {"AutoConfig": f"{config_module}.{config_class}"},
        "vision_config": {"image_size": 56, "patch_size": 14, "hidden_size": 32, "intermediate_size": 64,
                          "num_attention_heads": 2, "num_hidden_layers": 1, "architectures": ["InternVisionModel"]},
        "llm_config": llm, "select_layer": -1, "force_image_size": 56, "downsample_ratio": 0.5,
        "template": template_name, "dynamic_image_size": True, "use_thumbnail": True, "ps_version": "v2",
        "min_dynamic_patch": 1, "max_dynamic_patch": max_tiles, "torch_dtype": "bfloat16",
        "hidden_size": HIDDEN, "eos_token_id": ids["eos_token_id"],
    }
    (out / "config.json").write_text(json.dumps(config, indent=1) + "\n")
    (out / f"{config_module}.py").write_text(config_code)
    write_chat_template(out, template)
    return {"load_format": "dummy"}
