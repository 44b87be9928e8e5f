"""NVLM-D (nvidia/NVLM-D-72B: `NVLM_D`, remote-code config; InternViT + a Qwen2 decoder).

vLLM 0.32 serves this architecture (`NVLM_D_Model` under the key `NVLM_D`) with its own processor: InternVL's
tiling, each tile introduced by `<tile_k>` (the thumbnail by `<tile_global_thumbnail>`), the picture between
`<Image>` and `</Image>` with `<|vision_pad|>` as the context token. The real checkpoint ships its
configuration code (`trust_remote_code`); this folder ships a small one with the same fields (InternVL's
chat config under NVLM-D's model type) and an `auto_map` to it. transformers has no model class for it, so the
weights come from vLLM's `load_format: dummy`; the MLP projector is sized from the decoder's intermediate size,
as NVLM-D's is.
"""

from __future__ import annotations

import json
from pathlib import Path

from cluster.tiny_models.common import HIDDEN, chatml, special_ids, text_sizes, write_chat_template
from cluster.tiny_models.internvl import CONFIG_CODE as INTERNVL_CONFIG_CODE
from cluster.tiny_models.tokenizer import TokenizerSpec, build_tokenizer

# the same fields as InternVL's chat config, under NVLM-D's model type (as NVLM-D's own configuration code)
CONFIG_CODE = INTERNVL_CONFIG_CODE.replace("class InternVLChatConfig(", "class NVLM_D_Config(").replace(
    'model_type = "internvl_chat"', 'model_type = "NVLM_D"')

MAX_TILES = 2
SPECIALS = (["<|im_start|>", "<|im_end|>", "<Image>", "</Image>", "<|vision_pad|>", "<tile_global_thumbnail>"]
            + [f"<tile_{i}>" for i in range(1, MAX_TILES + 1)])


def build_nvlm_d(out: Path, seed: int) -> dict:
    template = chatml("<image>\n", system="You are a helpful assistant.")
    tok = build_tokenizer(TokenizerSpec(SPECIALS, eos="<|im_end|>", pad="<|endoftext|>",
                                        chat_template=template), out, seed)
    ids = special_ids(tok, eos_token_id="<|im_end|>", pad_token_id="<|endoftext|>")
    llm = {"model_type": "qwen2", "architectures": ["Qwen2ForCausalLM"], "vocab_size": len(tok), **ids,
           **text_sizes()}
    config = {
        "architectures": ["NVLM_D"], "model_type": "NVLM_D",
        "auto_map": {"AutoConfig": "configuration_nvlm_d.NVLM_D_Config"},
        "vision_config": {"image_size": 56, "patch_size": 14, "hidden_size": 32, "intermediate_size": 64,
                          "num_attention_heads": 2, "num_hidden_layers": 1, "architectures": ["InternVisionModel"]},
        "llm_config": llm, "select_layer": -1, "force_image_size": 56, "downsample_ratio": 0.5,
        "template": "chatml", "dynamic_image_size": True, "use_thumbnail": True, "ps_version": "v2",
        "min_dynamic_patch": 1, "max_dynamic_patch": MAX_TILES, "torch_dtype": "bfloat16",
        "hidden_size": HIDDEN, "eos_token_id": ids["eos_token_id"],
    }
    (out / "config.json").write_text(json.dumps(config, indent=1) + "\n")
    (out / "configuration_nvlm_d.py").write_text(CONFIG_CODE)
    write_chat_template(out, template)
    return {"load_format": "dummy"}
