"""A tiny random-weight Idefics3 (SmolVLM architecture) model folder, built offline in seconds.

It exists to exercise the real vLLM engine path (multimodal chat, batching, sampling, token accounting)
on machines without network or GPU: the answers are gibberish, the plumbing is real.

    python -m cluster.tiny_vlm data/models/tiny-idefics3

Shape: Llama text model (hidden 128, 2 layers, 4 heads / 2 KV heads: head_dim 32, which vLLM's CPU attention
accepts), a SigLIP-style vision tower (2 layers, width 64, 64 px tiles of 16 px patches, pixel shuffle 2 ->
4 image tokens per tile), a byte-level BPE tokenizer trained on a synthetic corpus, and a chat template
written here. Weights come from `torch.manual_seed(seed)`: the same seed gives the same weights.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

TILE = 64  # vision tower input size (px) = the image processor's max_image_size
PATCH = 16
SCALE = 2
IMAGE_SEQ_LEN = (TILE // PATCH) ** 2 // SCALE**2  # <image> tokens per tile
VOCAB_SIZE = 1024
MAX_POSITIONS = 8192

BOS, EOS, PAD, UNK = "<|begin_of_text|>", "<end_of_utterance>", "<|pad|>", "<|unk|>"
IMAGE, FAKE_IMAGE, GLOBAL_IMAGE = "<image>", "<fake_token_around_image>", "<global-img>"
SPECIAL_TOKENS = [BOS, EOS, PAD, UNK, FAKE_IMAGE, IMAGE, GLOBAL_IMAGE] + [
    f"<row_{i}_col_{j}>" for i in range(1, 7) for j in range(1, 7)
]

# OpenAI-style content (a list of {"type": "text"|"image"} parts) or a plain string, Idefics3 layout.
CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "{{ message['role'] | capitalize }}:"
    "{% if message['content'] is string %}"
    " {{ message['content'] }}"
    "{% else %}"
    "{% for part in message['content'] %}"
    "{% if part['type'] == 'image' %}<image>"
    "{% elif part['type'] == 'text' %} {{ part['text'] }}"
    "{% endif %}"
    "{% endfor %}"
    "{% endif %}"
    "<end_of_utterance>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}Assistant:{% endif %}"
)

# what a complete folder holds; a folder missing any of these is rebuilt
REQUIRED = (
    "config.json",
    "model.safetensors",
    "tokenizer.json",
    "tokenizer_config.json",
    "processor_config.json",
    "chat_template.jinja",
    ".complete",
)

_WORDS = """
the a an of to in on at by for with from and or not is are be this that each every which what find
graph node nodes edge edges vertex vertices weight weights path shortest cost total distance minimum maximum
city cities route tour salesman color colors coloring colour graph-coloring knapsack item items capacity
value values subset sum target meeting schedule participants time slot slots problem instance answer
question reasoning final_answer root description image figure shown below above given list connected
between start end source destination true false yes no feasible optimal step steps first then next
return output format JSON example Path TotalDistance Feasible TotalValue SelectedItems Coloring
Assistant User System please think carefully write whole answer inside put your step-by-step and
""".split()


def _corpus(seed: int) -> list[str]:
    rng = random.Random(seed)
    lines = []
    for _ in range(1500):
        words = [rng.choice(_WORDS) for _ in range(rng.randint(4, 16))]
        nums = [str(rng.randint(0, 999)) for _ in range(rng.randint(0, 6))]
        parts = words + nums
        rng.shuffle(parts)
        lines.append(" ".join(parts))
        lines.append(
            "{" + ", ".join(f"'{rng.choice(_WORDS)}': {rng.randint(0, 99)}" for _ in range(rng.randint(1, 3))) + "}"
        )
        lines.append(f"<root><reasoning>{' '.join(words)}</reasoning><final_answer>{nums}</final_answer></root>")
    lines.append("".join(chr(c) for c in range(32, 127)))
    return lines


def _build_tokenizer(out: Path, seed: int):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token=None, byte_fallback=False))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_corpus(seed), trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token=BOS,
        eos_token=EOS,
        pad_token=PAD,
        unk_token=UNK,
        additional_special_tokens=[t for t in SPECIAL_TOKENS if t not in (BOS, EOS, PAD, UNK)],
        model_max_length=MAX_POSITIONS,
        clean_up_tokenization_spaces=False,
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(out)
    return fast


def _build_model(out: Path, seed: int, tokenizer) -> None:
    import torch
    from transformers import Idefics3Config, Idefics3ForConditionalGeneration, Idefics3Processor
    from transformers.models.idefics3.image_processing_pil_idefics3 import Idefics3ImageProcessorPil

    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in (BOS, EOS, PAD, IMAGE)}
    text_config = {
        "model_type": "llama",
        "vocab_size": len(tokenizer),
        "hidden_size": 128,
        "intermediate_size": 256,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 32,
        "max_position_embeddings": MAX_POSITIONS,
        "rms_norm_eps": 1e-5,
        "rope_theta": 10000.0,
        "bos_token_id": ids[BOS],
        "eos_token_id": ids[EOS],
        "pad_token_id": ids[PAD],
        "tie_word_embeddings": False,
    }
    vision_config = {
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "image_size": TILE,
        "patch_size": PATCH,
    }
    config = Idefics3Config(
        text_config=text_config,
        vision_config=vision_config,
        scale_factor=SCALE,
        image_token_id=ids[IMAGE],
        pad_token_id=ids[PAD],
        tie_word_embeddings=False,
    )
    config.bos_token_id, config.eos_token_id = ids[BOS], ids[EOS]
    torch.manual_seed(seed)
    model = Idefics3ForConditionalGeneration(config).to(torch.bfloat16)
    model.generation_config.bos_token_id = ids[BOS]
    model.generation_config.eos_token_id = ids[EOS]
    model.generation_config.pad_token_id = ids[PAD]
    model.save_pretrained(out)

    # the PIL backend: the default one needs torchvision, which the CPU vLLM install lacks
    image_processor = Idefics3ImageProcessorPil(
        do_image_splitting=True,
        size={"longest_edge": 2 * TILE},  # a picture becomes at most 2 x 2 tiles + the global view
        max_image_size={"longest_edge": TILE},
        resample=3,
    )
    processor = Idefics3Processor(
        image_processor=image_processor, tokenizer=tokenizer, image_seq_len=IMAGE_SEQ_LEN,
        chat_template=CHAT_TEMPLATE,
    )
    processor.save_pretrained(out)


def is_complete(path: Path) -> bool:
    return all((path / f).exists() for f in REQUIRED)


def publish(tmp: Path, out: Path, complete: Callable[[Path], bool]) -> Path:
    """Move a finished build folder into place; when another builder finished first (`complete(out)`), its
    folder is kept. Builds happen in a temporary sibling so a reader never sees a half-written model."""
    if out.exists():
        if complete(out):  # another builder won the race
            return out
        shutil.rmtree(out)
    try:
        os.replace(tmp, out)
    except OSError:
        if not complete(out):
            raise
    return out


def build_tiny_idefics3(out_dir: Path | str, seed: int = 0) -> Path:
    """Build (or reuse, when already complete) the tiny model folder at `out_dir`; return its path.

    The folder is assembled in a sibling temp dir and renamed into place, so concurrent builders and
    interrupted builds never leave a half-written model that looks complete.
    """
    out = Path(out_dir).resolve()
    if is_complete(out):
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    tmp.chmod(0o755)
    try:
        _build_model(tmp, seed, _build_tokenizer(tmp, seed))
        (tmp / "chat_template.jinja").write_text(CHAT_TEMPLATE)
        (tmp / ".complete").write_text(json.dumps({"builder": "cluster.tiny_vlm", "seed": seed}) + "\n")
        missing = [f for f in REQUIRED if not (tmp / f).exists()]
        if missing:
            raise RuntimeError(f"tiny model build did not write {', '.join(missing)}")
        publish(tmp, out, is_complete)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return out


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] in ("-h", "--help"):
        print("usage: python -m cluster.tiny_vlm OUT_DIR [SEED]", file=sys.stderr)
        return 2
    path = build_tiny_idefics3(Path(args[0]), seed=int(args[1]) if len(args) > 1 else 0)
    print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
