"""A byte-level BPE tokenizer trained offline for a tiny model, with its family's special tokens.

The vocabulary is learnt from the synthetic corpus of `cluster.tiny_vlm` (the words of the benchmarks'
prompts and answers), so prompts tokenize to realistic lengths; the family's special tokens (chat markers,
image placeholders) come first, each one token, as in the real tokenizers. Training takes well under a
second; the same seed gives the same vocabulary.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

VOCAB_SIZE = 1024


@dataclass
class TokenizerSpec:
    """What a family's tokenizer must hold: its special tokens and the roles some of them play."""

    specials: list[str]
    bos: str | None = None
    eos: str | None = None
    pad: str | None = None
    unk: str | None = None
    chat_template: str | None = None
    extra: dict[str, str] = field(default_factory=dict)  # named special tokens (image_token=..., ...)
    added: list[str] = field(default_factory=list)  # plain (non-special) whole tokens, e.g. Gemma's "\n\n"
    model_max_length: int = 32768
    add_bos: bool = False  # prepend bos when encoding (Llama-style tokenizers)


def build_tokenizer(spec: TokenizerSpec, out: Path | None = None, seed: int = 0):
    """A `PreTrainedTokenizerFast` for `spec`, saved to `out` when given."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    from cluster.tiny_vlm import _corpus

    roles = [spec.bos, spec.eos, spec.pad, spec.unk]
    specials = list(dict.fromkeys([t for t in roles if t] + spec.specials + list(spec.extra.values())))
    tok = Tokenizer(models.BPE(unk_token=None, byte_fallback=False))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    if spec.add_bos and spec.bos:
        tok.post_processor = processors.TemplateProcessing(
            single=f"{spec.bos} $A", pair=f"{spec.bos} $A {spec.bos} $B",
            special_tokens=[(spec.bos, 0)],
        )
    else:
        tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE + len(specials), special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False,
    )
    tok.train_from_iterator(_corpus(seed), trainer=trainer)
    if spec.added:
        from tokenizers import AddedToken

        tok.add_tokens([AddedToken(t, normalized=False, special=False) for t in spec.added])
    if spec.add_bos and spec.bos:  # the template's id must be the trained one
        tok.post_processor = processors.TemplateProcessing(
            single=f"{spec.bos} $A", pair=f"{spec.bos} $A {spec.bos} $B",
            special_tokens=[(spec.bos, tok.token_to_id(spec.bos))],
        )
    named = {k: v for k, v in (("bos_token", spec.bos), ("eos_token", spec.eos), ("pad_token", spec.pad),
                               ("unk_token", spec.unk)) if v}
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        additional_special_tokens=[t for t in specials if t not in roles],
        model_max_length=spec.model_max_length,
        clean_up_tokenization_spaces=False,
        **({"extra_special_tokens": dict(spec.extra)} if spec.extra else {}),
        **named,
    )
    if spec.chat_template:
        fast.chat_template = spec.chat_template
    if out is not None:
        fast.save_pretrained(out)
    return fast


def ids(tokenizer, *tokens: str) -> list[int]:
    return [tokenizer.convert_tokens_to_ids(t) for t in tokens]
