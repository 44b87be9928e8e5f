"""Families the papers ran with Hugging Face transformers and this vLLM cannot serve: BLIP-2 with a FLAN-T5
decoder, Fuyu, Kosmos-2, MPT (text) and Mllama (Llama 3.2 Vision). Served by `cluster.backends.transformers_engine`.

Each folder is what `AutoProcessor` / `AutoTokenizer` and `AutoModelForImageTextToText` /
`AutoModelForCausalLM` load from a real checkpoint: the transformers config class, random weights, a tokenizer
trained here with the family's special tokens, the family's processor with small image sizes, and the prompt
layout the family's checkpoints use (Llama 3.2's header turns for Mllama, ChatML for MPT-30B-Chat; BLIP-2, Fuyu
and Kosmos-2 checkpoints ship no chat template, so the registry entry carries their prompt format).
"""

from __future__ import annotations

from pathlib import Path

from cluster.tiny_models.common import save_random, special_ids, text_sizes, write_chat_template
from cluster.tiny_models.tokenizer import TokenizerSpec, build_tokenizer

TOWER = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 2,
         "image_size": 28, "patch_size": 14}
CLIP_SIZE = {"size": {"height": 28, "width": 28}}


def build_mpt(out: Path, seed: int) -> dict:
    # MPT-30B-Chat: GPT-NeoX-style tokenizer with <|endoftext|>, ChatML turns (registry: chat_template chatml);
    # ALiBi attention, no positional embedding, as the real configs
    import transformers

    spec = TokenizerSpec(["<|im_start|>", "<|im_end|>"], bos="<|endoftext|>", eos="<|endoftext|>",
                         unk="<|endoftext|>")
    tok = build_tokenizer(spec, out, seed)
    ids = special_ids(tok, bos_token_id="<|endoftext|>", eos_token_id="<|endoftext|>")
    config = transformers.MptConfig(d_model=64, n_heads=2, n_layers=1, expansion_ratio=2, max_seq_len=8192,
                                    vocab_size=len(tok), learned_pos_emb=False, norm_type="low_precision_layernorm",
                                    attn_config={"alibi": True, "attn_impl": "torch"}, use_cache=True, **ids)
    save_random(transformers.MptForCausalLM, config, out, seed, ids)
    return {}


def build_blip2_t5(out: Path, seed: int) -> dict:
    # BLIP-2 FLAN-T5: ViT -> Q-Former -> T5 encoder-decoder; the processor puts `num_query_tokens` <image>
    # tokens before the text (the checkpoints' processor layout), the T5 decoder starts from <pad>
    import transformers

    # the checkpoints' tokenizer names no image token: the processor adds <image> itself (as here)
    tok = build_tokenizer(TokenizerSpec([], eos="</s>", pad="<pad>", unk="<unk>"), None, seed)
    queries = 4
    proc = transformers.Blip2Processor(image_processor=transformers.BlipImageProcessor(**CLIP_SIZE), tokenizer=tok,
                                       num_query_tokens=queries)
    tok = proc.tokenizer
    ids = special_ids(tok, eos_token_id="</s>", pad_token_id="<pad>")
    config = transformers.Blip2Config(
        vision_config={**TOWER, "layer_norm_eps": 1e-6},
        qformer_config={"hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 64,
                        "encoder_hidden_size": 32, "vocab_size": 64},
        text_config={"model_type": "t5", "vocab_size": len(tok), "d_model": 64, "d_kv": 32, "d_ff": 128,
                     "num_layers": 1, "num_decoder_layers": 1, "num_heads": 2, "feed_forward_proj": "gated-gelu",
                     "decoder_start_token_id": ids["pad_token_id"], "tie_word_embeddings": False, **ids},
        num_query_tokens=queries, image_token_index=tok.convert_tokens_to_ids("<image>"),
    )
    save_random(transformers.Blip2ForConditionalGeneration, config, out, seed,
                {**ids, "decoder_start_token_id": ids["pad_token_id"]})
    proc.save_pretrained(out)
    return {}


def build_fuyu(out: Path, seed: int) -> dict:
    # Fuyu: no vision tower; image patches (30 px in the real model, 14 here) are linear-projected into the
    # decoder; the processor writes one |SPEAKER| per patch, |NEWLINE| per row, then <s>, the text and <0x04>
    import transformers

    tok = _fuyu_tokenizer(seed)
    tok.save_pretrained(out)
    ids = special_ids(tok, bos_token_id="<s>", eos_token_id="|ENDOFTEXT|")
    patch = 14
    config = transformers.FuyuConfig(
        vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=1, num_attention_heads=2,
        max_position_embeddings=8192, image_size=patch * 4, patch_size=patch,
        image_token_id=tok.convert_tokens_to_ids("|SPEAKER|"), pad_token_id=0,
        text_config={"model_type": "persimmon", "vocab_size": len(tok), "hidden_size": 64, "intermediate_size": 128,
                     "num_hidden_layers": 1, "num_attention_heads": 2, "max_position_embeddings": 8192, **ids},
        **ids,
    )
    save_random(transformers.FuyuForCausalLM, config, out, seed, ids)
    image_processor = transformers.FuyuImageProcessor(size={"height": patch * 4, "width": patch * 4},
                                                      patch_size={"height": patch, "width": patch})
    transformers.FuyuProcessor(image_processor=image_processor, tokenizer=tok).save_pretrained(out)
    return {}


FUYU_PLACEHOLDERS = ("|SPEAKER|", "|NEWLINE|", "<0x04>")


def _fuyu_tokenizer(seed: int):
    """Fuyu's tokenizer is SentencePiece: a text starts with "▁", and its placeholders are ordinary pieces.
    FuyuProcessor relies on both (it drops the first id of the encoded placeholder run, the "▁"), so this
    one prepends "▁" and learns each placeholder as one piece (the generic byte-level tokenizer has neither)."""
    from tokenizers import (
        Regex,
        Tokenizer,
        decoders,
        models,
        normalizers,
        pre_tokenizers,
        processors,
        trainers,
    )
    from transformers import PreTrainedTokenizerFast

    from cluster.tiny_models.tokenizer import VOCAB_SIZE
    from cluster.tiny_vlm import _corpus

    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.Prepend("▁")
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex("|".join(p.replace("|", r"\|") for p in FUYU_PLACEHOLDERS)), "isolated"),
        pre_tokenizers.Split(Regex(r"\s+"), "merged_with_next"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.Sequence([decoders.ByteLevel(), decoders.Replace("▁", "")])
    specials = ["<s>", "|ENDOFTEXT|", "<unk>"]
    trainer = trainers.BpeTrainer(vocab_size=VOCAB_SIZE + 64, special_tokens=specials, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    # the placeholders often enough in the corpus that each one is learnt whole
    tok.train_from_iterator([*_corpus(seed), *["".join(FUYU_PLACEHOLDERS * 50)] * 50], trainer=trainer)
    bos = tok.token_to_id("<s>")
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", pair="<s> $A <s> $B",
                                                       special_tokens=[("<s>", bos)])
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="|ENDOFTEXT|",
                                   unk_token="<unk>", model_max_length=32768, clean_up_tokenization_spaces=False)


def build_kosmos2(out: Path, seed: int) -> dict:
    # Kosmos-2: CLIP tower resampled to 64 latent queries, a Magneto decoder; the processor adds its grounding
    # tags and 1024 <patch_index_*> tokens to the tokenizer and writes <image> + 64 image ids + </image> first
    import transformers

    spec = TokenizerSpec([], bos="<s>", eos="</s>", pad="<pad>", unk="<unk>", add_bos=True)
    tok = build_tokenizer(spec, None, seed)
    image_processor = transformers.CLIPImageProcessor(size={"shortest_edge": 28}, crop_size={"height": 28, "width": 28})
    proc = transformers.Kosmos2Processor(image_processor=image_processor, tokenizer=tok)
    ids = special_ids(proc.tokenizer, bos_token_id="<s>", eos_token_id="</s>", pad_token_id="<pad>")
    config = transformers.Kosmos2Config(
        text_config={"vocab_size": len(proc.tokenizer), "embed_dim": 64, "layers": 1, "ffn_dim": 128,
                     "attention_heads": 2, "max_position_embeddings": 8192, **ids},
        vision_config={**TOWER, "image_size": 28}, latent_query_num=64, **ids,
    )
    save_random(transformers.Kosmos2ForConditionalGeneration, config, out, seed, ids)
    proc.save_pretrained(out)
    return {}


# Llama 3.2 Vision Instruct's turn layout, an <|image|> per figure before the text (the real template also
# writes a dated system header; the placeholders and turn markers are what serving depends on)
MLLAMA_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<|start_header_id|>{{ m['role'] }}<|end_header_id|>\n\n"
    "{% if m['content'] is string %}{{ m['content'] }}{% else %}{% for p in m['content'] %}"
    "{% if p['type'] in ('image', 'image_url', 'image_pil') %}<|image|>"
    "{% elif p['type'] == 'text' %}{{ p['text'] }}{% endif %}{% endfor %}{% endif %}<|eot_id|>"
    "{% endfor %}{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}"
)


def build_mllama(out: Path, seed: int) -> dict:
    # Mllama: a tiled ViT whose features reach the text model through cross-attention layers (not as
    # placeholder tokens); one <|image|> token per figure marks where the cross-attention mask starts
    import transformers

    spec = TokenizerSpec(["<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>", "<|image|>",
                          "<|python_tag|>", "<|finetune_right_pad_id|>"],
                         bos="<|begin_of_text|>", eos="<|eot_id|>", pad="<|finetune_right_pad_id|>",
                         chat_template=MLLAMA_TEMPLATE)
    tok = build_tokenizer(spec, out, seed)
    ids = special_ids(tok, bos_token_id="<|begin_of_text|>", eos_token_id="<|eot_id|>",
                      pad_token_id="<|finetune_right_pad_id|>")
    tiles = 2
    config = transformers.MllamaConfig(
        vision_config={"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_global_layers": 1,
                       "attention_heads": 2, "vision_output_dim": 64, "image_size": 28, "patch_size": 14,
                       "max_num_tiles": tiles, "intermediate_layers_indices": [0],
                       "supported_aspect_ratios": [[1, 1], [1, 2], [2, 1]]},
        text_config={**text_sizes(num_hidden_layers=2), "num_key_value_heads": 1, "vocab_size": len(tok),
                     "cross_attention_layers": [1], **ids},
        image_token_index=tok.convert_tokens_to_ids("<|image|>"),
    )
    save_random(transformers.MllamaForConditionalGeneration, config, out, seed, ids)
    image_processor = transformers.MllamaImageProcessor(size={"height": 28, "width": 28}, max_image_tiles=tiles)
    transformers.MllamaProcessor(image_processor=image_processor, tokenizer=tok,
                                 chat_template=MLLAMA_TEMPLATE).save_pretrained(out)
    write_chat_template(out, MLLAMA_TEMPLATE)
    return {}
