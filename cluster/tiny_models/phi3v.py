"""Phi-3.5-vision (`Phi3VForCausalLM`, remote-code format): a Phi-3 text model with a CLIP ViT-L/14-336 tower
and the HD transform (up to `num_crops` 336-px crops plus a global view, 144 tokens each plus separators).

The real checkpoint ships its configuration and processor code (`trust_remote_code`; neither transformers
nor vLLM has them); this folder ships small ones written here (`configuration_phi3_v.py`,
`processing_phi3_v.py`: the same fields, the same HD transform and token count) and the `auto_map`s to them,
so vLLM loads them exactly as it loads Microsoft's. vLLM builds the tower from a hard-coded CLIP-L config
(width 1024, 336 px); only its depth follows `img_processor.layer_idx`, so the tiny build keeps one CLIP
layer (`layer_idx: 0`; the real model reads layer -2 of 24). vLLM puts the image token id 32044 in the
prompt, so the text vocabulary is the real 32064 (the trained tokenizer covers the first ~1k ids). The
chat template is the real one (string content: vLLM puts `<|image_N|>` before the text). No transformers
model class exists for this format: the weights come from vLLM's `load_format: dummy`.
"""

from __future__ import annotations

import json
from pathlib import Path

from cluster.tiny_models.common import HEAD_DIM, HEADS, HIDDEN, MAX_POSITIONS, write_chat_template
from cluster.tiny_models.tokenizer import TokenizerSpec, build_tokenizer

VOCAB = 32064  # the real config's; vLLM's _IMAGE_TOKEN_ID 32044 must be inside it
TEMPLATE = (
    "{% for message in messages %}{{'<|' + message['role'] + '|>' + '\\n' + message['content'] + '<|end|>\\n' }}"
    "{% endfor %}{% if add_generation_prompt and messages[-1]['role'] != 'assistant' %}"
    "{{- '<|assistant|>\\n' -}}{% endif %}"
)
SPECIALS = ["<|assistant|>", "<|placeholder1|>", "<|placeholder2|>", "<|placeholder3|>", "<|placeholder4|>",
            "<|system|>", "<|end|>", "<|placeholder5|>", "<|placeholder6|>", "<|user|>"]

CONFIG_CODE = '''"""Phi3VConfig for a tiny offline test model (fields as in microsoft/Phi-3.5-vision-instruct)."""
from transformers import Phi3Config


class Phi3VConfig(Phi3Config):
    model_type = "phi3_v"

    def __init__(self, embd_layer=None, img_processor=None, **kwargs):
        self.embd_layer = embd_layer or {}
        self.img_processor = img_processor or {}
        super().__init__(**kwargs)
'''

PROCESSOR_CODE = '''"""Phi3VProcessor / Phi3VImageProcessor for a tiny offline test model: the HD transform and token count of
microsoft/Phi-3.5-vision-instruct's processing code (PIL and torch only)."""
import math
import re
from collections.abc import Sequence

import numpy as np
import torch
from PIL import Image
from transformers import BatchFeature
from transformers.image_processing_utils import BaseImageProcessor
from transformers.processing_utils import ProcessorMixin

CLIP_MEAN = [0.48145466, 0.4578275, 0.40821073]
CLIP_STD = [0.26862954, 0.26130258, 0.27577711]


def calc_hd_transform_size(width, height, hd_num):
    transposed = width < height
    if transposed:
        width, height = height, width
    ratio = width / height
    scale = 1
    while scale * math.ceil(scale / ratio) <= hd_num:
        scale += 1
    scale -= 1
    new_w = int(scale * 336)
    new_h = int(new_w / ratio)
    padded_h = int(math.ceil(new_h / 336) * 336)
    return (padded_h, new_w) if transposed else (new_w, padded_h)


def hd_transform(img, hd_num):
    width, height = img.size
    transposed = width < height
    if transposed:
        img = img.transpose(Image.TRANSPOSE)
        width, height = img.size
    ratio = width / height
    scale = 1
    while scale * math.ceil(scale / ratio) <= hd_num:
        scale += 1
    scale -= 1
    new_w = int(scale * 336)
    new_h = int(new_w / ratio)
    img = img.resize((new_w, new_h), Image.BILINEAR)
    target = int(math.ceil(new_h / 336) * 336)
    top = (target - new_h) // 2
    canvas = Image.new("RGB", (new_w, target), (255, 255, 255))
    canvas.paste(img, (0, top))
    return canvas.transpose(Image.TRANSPOSE) if transposed else canvas


class Phi3VImageProcessor(BaseImageProcessor):
    model_input_names = ["pixel_values"]

    def __init__(self, num_crops=1, image_mean=CLIP_MEAN, image_std=CLIP_STD, do_convert_rgb=True, **kwargs):
        super().__init__(**kwargs)
        self.num_crops = num_crops
        self.image_mean, self.image_std, self.do_convert_rgb = image_mean, image_std, do_convert_rgb
        self.num_img_tokens = 144

    def calc_num_image_tokens_from_image_size(self, width, height):
        w, h = calc_hd_transform_size(width, height, self.num_crops)
        return int((h // 336 * w // 336 + 1) * 144 + 1 + (h // 336 + 1) * 12)

    def _tensor(self, img):
        arr = np.asarray(img, dtype=np.float32) / 255.0
        arr = (arr - np.array(self.image_mean, dtype=np.float32)) / np.array(self.image_std, dtype=np.float32)
        return torch.from_numpy(arr).permute(2, 0, 1).contiguous()

    def preprocess(self, images, return_tensors=None, **kwargs):
        if not isinstance(images, (list, tuple)):
            images = [images]
        images = [im.convert("RGB") for im in images]
        hd = [self._tensor(hd_transform(im, self.num_crops)) for im in images]
        glb = [torch.nn.functional.interpolate(t.unsqueeze(0), size=(336, 336), mode="bicubic") for t in hd]
        shapes = [[t.size(1), t.size(2)] for t in hd]
        num_img_tokens = [int((h // 336 * w // 336 + 1) * 144 + 1 + (h // 336 + 1) * 12) for h, w in shapes]
        crops = [t.reshape(1, 3, h // 336, 336, w // 336, 336).permute(0, 2, 4, 1, 3, 5).reshape(-1, 3, 336, 336)
                 for t, (h, w) in zip(hd, shapes)]
        stacked = []
        for g, c in zip(glb, crops):
            x = torch.cat([g, c], dim=0)
            if x.shape[0] < self.num_crops + 1:  # pad to num_crops + 1 views
                x = torch.cat([x, x.new_zeros(self.num_crops + 1 - x.shape[0], 3, 336, 336)], dim=0)
            stacked.append(x)
        data = {"pixel_values": torch.stack(stacked), "image_sizes": torch.tensor(shapes),
                "num_img_tokens": num_img_tokens}
        return BatchFeature(data=data)


class _ImageTags(Sequence):
    """`<|image_1|>`, `<|image_2|>`, ... (the real processor materialises a million of them)."""

    def __len__(self):
        return 1_000_000

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [f"<|image_{k + 1}|>" for k in range(*i.indices(len(self)))]
        return f"<|image_{i + 1}|>"


class Phi3VProcessor(ProcessorMixin):
    attributes = ["image_processor", "tokenizer"]
    image_processor_class = "AutoImageProcessor"
    tokenizer_class = "AutoTokenizer"
    special_image_token = "<|image|>"

    def __init__(self, image_processor=None, tokenizer=None, chat_template=None, **kwargs):
        super().__init__(image_processor, tokenizer, chat_template=chat_template)
        self.num_img_tokens = image_processor.num_img_tokens
        self.img_tokens = _ImageTags()

    def calc_num_image_tokens_from_image_size(self, width, height):
        return self.image_processor.calc_num_image_tokens_from_image_size(width, height)

    def __call__(self, text=None, images=None, return_tensors="pt", **kwargs):
        image_inputs = self.image_processor.preprocess(images) if images is not None else {}
        if isinstance(text, list):
            text = text[0] if text else ""
        text = text or ""
        if not image_inputs:
            return BatchFeature(data=dict(self.tokenizer(text)))
        pattern = r"<\\|image_\\d+\\|>"
        chunks = [self.tokenizer(c).input_ids for c in re.split(pattern, text)]
        tags = [int(s.split("|")[1].split("_")[-1]) for s in re.findall(pattern, text)]
        pads = [[-i] * image_inputs["num_img_tokens"][i - 1] for i in tags]
        ids = []
        for k, chunk in enumerate(chunks):
            ids += chunk + (pads[k] if k < len(pads) else [])
        input_ids = torch.tensor([ids], dtype=torch.long)
        return BatchFeature(data={"input_ids": input_ids, "attention_mask": (input_ids > -1000000).long(),
                                  "pixel_values": image_inputs["pixel_values"],
                                  "image_sizes": image_inputs["image_sizes"]})
'''


def build_phi3v(out: Path, seed: int) -> dict:
    tok = build_tokenizer(TokenizerSpec(SPECIALS, bos="<s>", eos="<|endoftext|>", pad="<|endoftext|>", unk="<unk>",
                                        chat_template=TEMPLATE, add_bos=True), out, seed)
    ids = {k: tok.convert_tokens_to_ids(v) for k, v in (("bos_token_id", "<s>"), ("eos_token_id", "<|endoftext|>"),
                                                        ("pad_token_id", "<|endoftext|>"))}
    config = {
        "architectures": ["Phi3VForCausalLM"], "model_type": "phi3_v",
        "auto_map": {"AutoConfig": "configuration_phi3_v.Phi3VConfig"},
        "vocab_size": VOCAB, "hidden_size": HIDDEN, "intermediate_size": 2 * HIDDEN, "num_hidden_layers": 1,
        "num_attention_heads": HEADS, "num_key_value_heads": HEADS, "head_dim": HEAD_DIM, "hidden_act": "silu",
        "max_position_embeddings": MAX_POSITIONS, "original_max_position_embeddings": MAX_POSITIONS,
        "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
        "embd_layer": {"embedding_cls": "image", "hd_transform_order": "sub_glb", "projection_cls": "mlp",
                       "use_hd_transform": True, "with_learnable_separator": True},
        "img_processor": {"image_dim_out": 1024, "model_name": "openai/clip-vit-large-patch14-336",
                          "name": "clip_vision_model", "num_img_tokens": 144, "layer_idx": 0,
                          "type_feature": "patch"},
        **ids,
    }
    (out / "config.json").write_text(json.dumps(config, indent=1) + "\n")
    (out / "configuration_phi3_v.py").write_text(CONFIG_CODE)
    (out / "processing_phi3_v.py").write_text(PROCESSOR_CODE)
    auto = {"AutoProcessor": "processing_phi3_v.Phi3VProcessor",
            "AutoImageProcessor": "processing_phi3_v.Phi3VImageProcessor"}
    (out / "preprocessor_config.json").write_text(json.dumps(
        {"auto_map": auto, "num_crops": 4, "image_processor_type": "Phi3VImageProcessor",
         "processor_class": "Phi3VProcessor"}, indent=1) + "\n")
    (out / "processor_config.json").write_text(json.dumps(
        {"auto_map": {"AutoProcessor": auto["AutoProcessor"]}, "processor_class": "Phi3VProcessor"}, indent=1) + "\n")
    write_chat_template(out, TEMPLATE)
    return {"load_format": "dummy"}
