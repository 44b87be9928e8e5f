"""Training exports of a GraphVerse dataset folder (`nphe4v export --format sft|trl|verl`), with the filters of
the paper's ablations (§5.3, Table 11) and the train/test guard.

* `sft`: chat messages (the user turn is the exact prompt a live run sends, the images go in `images`; the
  assistant turn is the reference solution, `gie.training.reference`) as a `datasets.save_to_disk` folder and
  as `sft.jsonl` (images copied under `images/`, paths relative to the export folder).
* `trl`: GRPOTrainer's layout, a `datasets` folder: `prompt` (conversational: one user message), `images`
  (PIL images once loaded; TRL inserts them before the text), and `ground_truth`, the column the rewards of
  `gie.training.reward` read (TRL passes every column but the prompt to reward functions as keyword arguments).
* `verl`: `<split>.parquet` with `data_source` ("graphverse"), `prompt` (one user message: an `<image>`
  placeholder per image, then the text), `images` (`{bytes, path}` structs), `ability`,
  `reward_model` `{style: "rule", ground_truth}` and `extra_info`; `gie/training/reward.py` is verl's
  `custom_reward_function.path` (function `compute_score`, or `compute_score_strict`).

Filters (`edits`): `all`; `gie`: the edited rows only; `none`: the un-edited rows, sampled to the GIE rows'
task mix and, as far as the split's un-edited rows allow, their size (a note says when smaller); an edit name
(`patch`, `composition`, `focus`, `recolor`): that edit only. `limit` keeps N rows of the selection with its
task mix (largest remainder per task, seeded sample), so `--edits gie --limit N` matches a no-GIE export of N.

Train and test stay disjoint: a dataset of the test stream (full, testmini) is refused unless
`allow_test_split`.
"""

from __future__ import annotations

import json
import random
import shutil
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evalcore.dataset import Dataset
from evalcore.hashing import sha256_json
from evalcore.hf_save import save_rows
from evalcore.prompting import VISION_MODE, build_prompt
from evalcore.schema import Instance
from gie.catalogue import EDIT_KINDS, TASK_NAMES
from gie.tasks import get_task
from gie.training.reference import reference_solution
from gie.training.reward import DATA_SOURCE, ground_truth_json

FORMATS = ("sft", "trl", "verl")
EDIT_FILTERS = ("all", "gie", *EDIT_KINDS)
TRAIN_SPLIT = "train"  # gie.dataset's name of the train split (stream "graphverse-train")
ABILITY = "visual_graph_reasoning"
SFT_JSONL = "sft.jsonl"
CARD = "README.md"


class TrainingExportError(ValueError):
    """A training export that cannot be written; one line naming the folder or the option."""


# ------------------------------------------------------------------------------------------------ guard, filters


def split_of(dataset: Dataset) -> str:
    """The split a GraphVerse dataset folder holds: the manifest's, else its instances' stream."""
    split = dataset.manifest.extra.get("split")
    if isinstance(split, str):
        return split
    streams = {str(i.meta.get("stream", "")) for i in dataset.instances}
    return TRAIN_SPLIT if streams == {"graphverse-train"} else "test"


def check_trainable(dataset: Dataset, allow_test_split: bool) -> str:
    if dataset.manifest.benchmark != "graphverse":
        raise TrainingExportError(f"{dataset.root}: benchmark {dataset.manifest.benchmark}; training exports "
                                  "(sft, trl, verl) are for GraphVerse datasets")
    split = split_of(dataset)
    test_rows = [i.instance_id for i in dataset.instances if i.meta.get("stream") not in (None, "graphverse-train")]
    if (split != TRAIN_SPLIT or test_rows) and not allow_test_split:
        raise TrainingExportError(f"{dataset.root}: the {split} split is test data and training on it would leak "
                                  "the test set; export the train split, or pass --allow-test-split")
    return split


def _edit(inst: Instance) -> str:
    return str(inst.meta.get("edit") or (inst.data.get("edit") or {}).get("kind") or "none")


def _task_order(task: str) -> int:
    return TASK_NAMES.index(task) if task in TASK_NAMES else len(TASK_NAMES)


def _allocate(total: int, sizes: dict[str, int]) -> dict[str, int]:
    """Largest-remainder split of `total` proportional to `sizes` (ties: task order)."""
    whole = sum(sizes.values())
    quotas = {t: total * n / whole for t, n in sizes.items()}
    out = {t: int(q) for t, q in quotas.items()}
    for t in sorted(sizes, key=lambda t: (-(quotas[t] - out[t]), _task_order(t)))[: total - sum(out.values())]:
        out[t] += 1
    return out


def _sample(rows: Sequence[Instance], quotas: dict[str, int], seed: int, tag: str) -> list[Instance]:
    """`quotas[task]` rows of each task, a seeded sample, kept in dataset order."""
    keep: set[str] = set()
    for task, k in quotas.items():
        ids = [i.instance_id for i in rows if i.task == task]
        keep.update(random.Random(f"{seed}:{tag}:{task}").sample(ids, k))
    return [i for i in rows if i.instance_id in keep]


def select(instances: Sequence[Instance], edits: str = "all", *, limit: int | None = None, seed: int = 0
           ) -> tuple[list[Instance], list[str]]:
    """The rows of an ablation set and notes for the user (a no-GIE set smaller than the GIE set it matches)."""
    if edits not in EDIT_FILTERS:
        raise TrainingExportError(f"--edits {edits}: expected one of {', '.join(EDIT_FILTERS)}")
    notes: list[str] = []
    gie = [i for i in instances if _edit(i) != "none"]
    if edits == "all":
        rows = list(instances)
    elif edits == "gie":
        rows = gie
    elif edits == "none":
        plain = [i for i in instances if _edit(i) == "none"]
        if not gie:
            raise TrainingExportError("--edits none: the dataset has no GIE rows whose size and task mix to match")
        mix = Counter(i.task for i in gie)
        have = Counter(i.task for i in plain)
        size = min(len(gie), len(plain))
        while size > 0 and any(q > have[t] for t, q in _allocate(size, dict(mix)).items()):
            size -= 1
        rows = _sample(plain, _allocate(size, dict(mix)), seed, "none") if size else []
        if size < len(gie):
            notes.append(f"no-GIE set: {size} rows with the GIE set's task mix; the GIE set has {len(gie)} rows and "
                         f"the split holds no more un-edited rows in that mix (match it with --edits gie --limit {size})")
    else:
        rows = [i for i in instances if _edit(i) == edits]
    if limit is not None and limit < len(rows):
        rows = _sample(rows, _allocate(limit, dict(Counter(i.task for i in rows))), seed, f"limit{limit}")
    if not rows:
        raise TrainingExportError(f"--edits {edits}: no rows of the dataset match")
    return rows, notes


# ------------------------------------------------------------------------------------------------ rows


def prompt_text(inst: Instance) -> str:
    """The exact text a live run sends (`cluster.plan` builds it the same way; the tests compare them)."""
    spec = get_task(inst.task)
    return build_prompt(spec.text(spec.load(inst.data)), VISION_MODE, inst.images).text


def _png(dataset: Dataset, inst: Instance) -> list[bytes]:
    return [(dataset.root / r.path).read_bytes() for r in inst.images]


def _about(inst: Instance, split: str) -> dict[str, Any]:
    return {"instance_id": inst.instance_id, "task": inst.task, "level": inst.level, "edit": _edit(inst),
            "split": split}


def sft_row(dataset: Dataset, inst: Instance, split: str) -> dict[str, Any]:
    return {**_about(inst, split),
            "messages": [{"role": "user", "content": prompt_text(inst)},
                         {"role": "assistant", "content": reference_solution(inst)}],
            "images": _png(dataset, inst)}


def trl_row(dataset: Dataset, inst: Instance, split: str) -> dict[str, Any]:
    return {**_about(inst, split), "prompt": [{"role": "user", "content": prompt_text(inst)}],
            "images": _png(dataset, inst), "ground_truth": ground_truth_json(inst)}


def verl_row(dataset: Dataset, inst: Instance, split: str, index: int) -> dict[str, Any]:
    pngs = _png(dataset, inst)
    return {
        "data_source": DATA_SOURCE,
        "prompt": [{"role": "user", "content": "<image>" * len(pngs) + prompt_text(inst)}],
        "images": [{"bytes": b, "path": None} for b in pngs],
        "ability": ABILITY,
        "reward_model": {"style": "rule", "ground_truth": ground_truth_json(inst)},
        "extra_info": {**_about(inst, split), "index": index},
    }


# ------------------------------------------------------------------------------------------------ writers


def _save_hf(rows: list[dict[str, Any]], out: Path, fingerprint: str, features: dict[str, Any]) -> None:
    save_rows(rows, out, features, fingerprint)


def _hf_features(kind: str) -> dict[str, Any]:
    import datasets

    s = datasets.Value("string")
    about = {"instance_id": s, "task": s, "level": datasets.Value("int64"), "edit": s, "split": s}
    turn = datasets.List({"role": s, "content": s})
    images = datasets.List(datasets.Image())
    if kind == "sft":
        return {**about, "messages": turn, "images": images}
    return {**about, "prompt": turn, "images": images, "ground_truth": s}


def _hf_images(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # bytes only: `datasets` keeps just a path (no bytes) when given a path it can see
    return [{**r, "images": [{"bytes": b, "path": None} for b in r["images"]]} for r in rows]


def _write_sft_jsonl(dataset: Dataset, rows: list[dict[str, Any]], chosen: list[Instance], out: Path) -> None:
    lines = []
    for row, inst in zip(rows, chosen, strict=True):
        paths = []
        for ref in inst.images:
            target = out / ref.path
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(dataset.root / ref.path, target)
            paths.append(ref.path)
        lines.append(json.dumps({**row, "images": paths}, ensure_ascii=False))
    (out / SFT_JSONL).write_text("".join(x + "\n" for x in lines), encoding="utf-8")


def _write_verl(rows: list[dict[str, Any]], out: Path, split: str) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{split}.parquet"
    s = pa.string()
    schema = pa.schema([
        ("data_source", s),
        ("prompt", pa.list_(pa.struct([("role", s), ("content", s)]))),
        ("images", pa.list_(pa.struct([("bytes", pa.binary()), ("path", s)]))),
        ("ability", s),
        ("reward_model", pa.struct([("style", s), ("ground_truth", s)])),
        ("extra_info", pa.struct([("instance_id", s), ("task", s), ("level", pa.int64()), ("edit", s), ("split", s),
                                  ("index", pa.int64())])),
    ])
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)
    return path


def card(dataset: Dataset, fmt: str, edits: str, split: str, n: int, notes: Sequence[str]) -> str:
    m = dataset.manifest
    what = {
        "sft": "`messages` (user: the prompt a live run sends; assistant: the reference solution from the exact "
               "solver's certificate) and `images`; also `sft.jsonl` with image paths relative to this folder. "
               "Load with `datasets.load_from_disk(PATH)`.",
        "trl": "`prompt` (one user message), `images`, `ground_truth` (what the reward needs). Load with "
               "`datasets.load_from_disk(PATH)` and train with `GRPOTrainer(reward_funcs=[graphverse_reward])` "
               "(`from gie.training.reward import graphverse_reward`).",
        "verl": f"`{split}.parquet` with `data_source`, `prompt`, `images`, `ability`, `reward_model` "
                "`{style, ground_truth}`, `extra_info`; reward: `custom_reward_function.path` = "
                "`gie/training/reward.py`, name `compute_score` (or `compute_score_strict`).",
    }[fmt]
    lines = [f"# GraphVerse `{m.version}` for training (`nphe4v export --format {fmt} --edits {edits}`)", "",
             f"{n} rows of the `{split}` split (seed {m.seed}, dataset_sha256 `{m.dataset_sha256}`).", "",
             what, "", *notes, "", "See docs/training.md.", ""]
    return "\n".join(lines)



def export_training(dataset: Dataset, out: Path, fmt: str, *, edits: str = "all", limit: int | None = None,
                    allow_test_split: bool = False, seed: int = 0) -> tuple[int, list[str]]:
    """Write `dataset` for training in `fmt` (sft, trl, verl) to the new folder `out`; (rows, notes)."""
    if fmt not in FORMATS:
        raise TrainingExportError(f"--format {fmt}: expected one of {', '.join(FORMATS)}")
    if limit is not None and limit < 1:
        raise TrainingExportError(f"--limit {limit}: must be at least 1")
    split = check_trainable(dataset, allow_test_split)
    chosen, notes = select(dataset.instances, edits, limit=limit, seed=seed)
    fingerprint = sha256_json([dataset.manifest.dataset_sha256, fmt, edits, limit, seed, "train-export-v1"])[:16]
    if fmt == "sft":
        rows = [sft_row(dataset, i, split) for i in chosen]
        _save_hf(_hf_images(rows), out, fingerprint, _hf_features("sft"))
        _write_sft_jsonl(dataset, rows, chosen, out)
    elif fmt == "trl":
        rows = [trl_row(dataset, i, split) for i in chosen]
        _save_hf(_hf_images(rows), out, fingerprint, _hf_features("trl"))
    else:
        _write_verl([verl_row(dataset, i, split, k) for k, i in enumerate(chosen)], out, split)
    (out / CARD).write_text(card(dataset, fmt, edits, split, len(chosen), notes), encoding="utf-8")
    return len(chosen), notes
