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

from pathlib import Path

from cluster.tiny_models.internvl import CONFIG_CODE as INTERNVL_CONFIG_CODE
from cluster.tiny_models.internvl import build_internvl_format

# the same fields as InternVL's chat config, under NVLM-D's model type (as NVLM-D's own configuration code)
CONFIG_CODE = INTERNVL_CONFIG_CODE.replace("class InternVLChatConfig(", "class NVLM_D_Config(").replace(
    'model_type = "internvl_chat"', 'model_type = "NVLM_D"')

MAX_TILES = 2
SPECIALS = (["<|im_start|>", "<|im_end|>", "<Image>", "</Image>", "<|vision_pad|>", "<tile_global_thumbnail>"]
            + [f"<tile_{i}>" for i in range(1, MAX_TILES + 1)])


def build_nvlm_d(out: Path, seed: int) -> dict:
    return build_internvl_format(out, seed, SPECIALS, architecture="NVLM_D", model_type="NVLM_D",
                                 config_module="configuration_nvlm_d", config_class="NVLM_D_Config",
                                 config_code=CONFIG_CODE, template_name="chatml", max_tiles=MAX_TILES)
