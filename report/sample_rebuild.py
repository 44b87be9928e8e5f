"""A sample's prompt, image files and gold answer, rebuilt from its dataset (the per-sample record keeps only
the prompt's hash): for the report's sample browser and the explorer."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from evalcore import benchmarks
from evalcore.schema import PROMPT_MODES, RECOGNITION_MODE
from report import analysis


class DatasetIndex:
    """Per (run, benchmark, version): the dataset, its task texts and recognition partners (for prompts)."""

    def __init__(self, runs: Sequence[analysis.Run]) -> None:
        self.by_key: dict[tuple[str, str, str], tuple[Any, dict[str, Any]]] = {}
        # per run: its NPHardEval4V prompt set (runs before the option sent the rewritten one), where its paper
        # prompt files were read from, and each model's backend (which prompt file the papers used for it)
        self.prompts: dict[str, tuple[str, str | None, dict[str, str]]] = {}
        for run in runs:
            self.prompts[run.label] = (
                str(run.config.get("prompts") or "rewritten"), run.config.get("prompt_assets"),
                {str(m.get("name")): str(m.get("backend") or "baseline") for m in run.config.get("models") or []
                 if isinstance(m, dict)})
            seed = int(((run.config.get("sampling") or {}).get("seed")) or 0)
            for entry, ds in analysis.run_datasets(run):
                if ds is None:
                    continue
                self.by_key[(run.label, str(entry.get("benchmark")), str(entry.get("version")))] = (
                    ds, {"seed": seed, "partners": None, "texts": {}, "by_id": ds.by_id()}
                )

    def get(self, run: str, bench: str, version: str) -> tuple[Any, dict[str, Any]] | None:
        hit = self.by_key.get((run, bench, version))
        if hit is None:  # the same dataset version referenced by another run
            for (_r, b, v), val in self.by_key.items():
                if (b, v) == (bench, version):
                    return val
        return hit

    @staticmethod
    def text(ds: Any, info: dict[str, Any], iid: str):
        from evalcore.benchmarks import task_for

        if iid not in info["texts"]:
            inst = info["by_id"][iid]
            spec = task_for(inst.benchmark, inst.task)
            info["texts"][iid] = spec.text(spec.load(inst.data))
        return info["texts"][iid]


def rebuild_sample(row: dict, index: DatasetIndex) -> dict[str, Any]:
    """Prompt text, image files, gold for one sample, rebuilt from its dataset; notes say what could not be."""
    from evalcore.prompting import IMAGE_ONLY_MODES, VISION_MODE, build_prompt, build_recognition_prompt

    out: dict[str, Any] = {"prompt": None, "images": [], "gold": None, "note": ""}
    hit = index.get(row["run"], row["benchmark"], row["version"])
    if hit is None:
        out["note"] = "dataset not found: prompt, images and gold unavailable"
        return out
    ds, info = hit
    inst = info["by_id"].get(row["instance_id"])
    if inst is None:
        out["note"] = f"instance {row['instance_id']} not in the dataset"
        return out
    try:
        if row["prompt_mode"] == RECOGNITION_MODE:
            text_id = inst.instance_id
            if row["variant"] == "mismatch":
                if info["partners"] is None:
                    info["partners"] = benchmarks.get(inst.benchmark).recognition_partners(ds, info["seed"])
                text_id = info["partners"].get(inst.instance_id, inst.instance_id)
            prompt = build_recognition_prompt(DatasetIndex.text(ds, info, text_id), inst.images)
            out["gold"] = ("YES: the figure and the text show the same instance" if row["variant"] == "match"
                           else f"NO: the text describes another instance ({text_id})")
        else:
            mode = row["prompt_mode"]
            prompts, assets, backends = index.prompts.get(row["run"], ("rewritten", None, {}))
            plugin = benchmarks.get(inst.benchmark)
            if prompts == "paper" and plugin.paper_prompts and mode in PROMPT_MODES:
                prompt = plugin.paper_prompt(inst, mode, backends.get(str(row.get("model")), "baseline"), assets)
            else:
                prompt = build_prompt(DatasetIndex.text(ds, info, inst.instance_id),
                                      mode if mode in (*PROMPT_MODES, *IMAGE_ONLY_MODES) else VISION_MODE,
                                      inst.images)
            gold = json.dumps(inst.gold.answer, ensure_ascii=False, sort_keys=True)
            out["gold"] = gold + ("" if inst.gold.value is None else f"  (optimal value {inst.gold.value:g})")
    except Exception as e:  # a task that cannot rebuild its text must not sink the whole report
        out["note"] = f"prompt not rebuilt ({type(e).__name__}: {e})"
        return out
    out["prompt"] = prompt.text
    out["images"] = [(ds.root / ref.path, ref.sha256) for ref in prompt.images]
    sent = row.get("prompt_sha256") or ""
    if sent and hashlib.sha256(prompt.text.encode()).hexdigest() != sent:
        out["note"] = "the rebuilt prompt differs from the one sent (prompt_sha256 mismatch: template changed?)"
    return out
