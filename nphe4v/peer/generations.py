"""The raw generations NPHardEval4V published for its five open models (`Open/ablation/`, figure+full_text):
what each model answered, in canonical instance order, with the prompt echo cut off.

Layout (`../shared/peers/MANIFEST.md` §2): `<TASK>_<model>_Results_benchmarks.json` (Kosmos-2's SPP file is
`spp_kosmos2_…`) starts with a JSON list of >= 100 records, sometimes followed by more data; record i is
instance i (level i // 10 + 1). A record is a list whose first element is the decoded output, a string or a
one-element list of strings, often with the prompt echoed in front of the answer: LLaVA's answer follows the
last "ASSISTANT:", Fuyu-8B's the last "\\x04"; Qwen-VL, BLIP-2 and Kosmos-2 hold the answer itself.
Used by the papers'-parser reproduction (`bench/paper_parser_published.py`, tests) to grade the same outputs
the papers graded.
"""

from __future__ import annotations

import json
from pathlib import Path

from nphe4v.peer.formats import PER_LEVEL, TASK_FOLDERS, PeerFormatError

MODELS: tuple[str, ...] = ("blip2", "fuyu_8b", "kosmos2", "llava", "qwen_vl")
MODEL_NAMES: dict[str, str] = {
    "blip2": "BLIP-2", "fuyu_8b": "Fuyu-8B", "kosmos2": "Kosmos-2", "llava": "LLaVA", "qwen_vl": "Qwen-VL"}
N_RECORDS = 10 * PER_LEVEL
# where each model's answer starts in its decoded output (after the echoed prompt); None: the output is the answer
_ANSWER_AFTER: dict[str, str | None] = {
    "llava": "ASSISTANT:", "fuyu_8b": "\x04", "qwen_vl": None, "blip2": None, "kosmos2": None}


def generations_file(ablation_dir: Path, task: str, model: str) -> Path:
    folder = TASK_FOLDERS[task]
    path = Path(ablation_dir) / f"{folder}_{model}_Results_benchmarks.json"
    if not path.is_file() and task == "SPP":  # Kosmos-2's SPP file is spelt in lower case
        alt = Path(ablation_dir) / f"spp_{model}_Results_benchmarks.json"
        path = alt if alt.is_file() else path
    return path


def answer_text(model: str, record: object) -> str:
    """The model's answer in one published record (the echoed prompt cut off); "" when the record holds none."""
    out = record[0] if isinstance(record, list) and record else record
    if isinstance(out, list):
        out = out[0] if out else ""
    if not isinstance(out, str):
        return ""
    marker = _ANSWER_AFTER.get(model)
    if marker is not None and marker in out:
        out = out[out.rindex(marker) + len(marker):]
    return out


def read_generations(ablation_dir: Path, task: str, model: str) -> list[str]:
    """The 100 answers of `model` on `task`, instance order. A missing or malformed file raises
    `PeerFormatError` / `FileNotFoundError` with one line naming the file."""
    path = generations_file(ablation_dir, task, model)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no published generations for {task} / {model}")
    try:
        records, _end = json.JSONDecoder().raw_decode(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise PeerFormatError(f"{path}: not a JSON list at the start: {type(e).__name__}") from None
    if not isinstance(records, list) or len(records) < N_RECORDS:
        raise PeerFormatError(f"{path}: expected a list of >= {N_RECORDS} records")
    return [answer_text(model, r) for r in records[:N_RECORDS]]
