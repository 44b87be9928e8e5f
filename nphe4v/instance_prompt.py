"""What a model is asked for one dataset instance in one prompt mode, for `nphe4v show`.

Built with the calls the run planner (`cluster.plan.plan_model`) makes: with `prompts="rewritten"` the task's
`text` on the stored instance data, then `evalcore.prompting.build_prompt`; with `prompts="paper"` the
papers' text from the authors' pinned files (`nphe4v.paper_prompts`, for the open-weights or the API prompt
file), with the stored images.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from evalcore import benchmarks
from evalcore.benchmarks import task_for
from evalcore.dataset import INSTANCES, Dataset
from evalcore.prompting import build_prompt
from evalcore.schema import PROMPT_MODES, Instance, Prompt
from nphe4v.paper_prompts import (
    PAPER_INPUTS,
    PaperPromptError,
    PromptFile,
    build_paper_prompt,
    load_prompt_set,
)
from nphe4v.upstream_assets import AssetsMissing, AssetSource, resolve_assets

PromptSet = Literal["paper", "rewritten"]


class ShowError(ValueError):
    """An instance or mode that cannot be shown; one line naming the file and field."""


def default_prompt_set() -> str:
    """As a run config without `prompts:` (cluster.config): paper, unless the site sets NPHE4V_PROMPTS."""
    return os.environ.get("NPHE4V_PROMPTS", "").strip() or "paper"


def modes_for(benchmark: str) -> tuple[str, ...]:
    return tuple(benchmarks.get(benchmark).all_prompt_modes())


def instance_prompt(inst: Instance, mode: str, prompts: str = "rewritten", kind: PromptFile = "open",
                    prompt_assets: str | None = None, download: bool = True) -> Prompt:
    spec = task_for(inst.benchmark, inst.task)
    data = spec.load(inst.data)
    if prompts == "paper" and inst.benchmark == "nphardeval4v" and mode in PROMPT_MODES:
        try:
            src = AssetSource.from_config(prompt_assets)
            if not download:  # e.g. a report: look in the checkout or the cache, never on the network
                src = AssetSource(local=src.local, download=False)
            ps = load_prompt_set(resolve_assets(src).resolve())
            return build_paper_prompt(ps, inst.task, PAPER_INPUTS[inst.task](data), mode, inst.images, kind)
        except (AssetsMissing, PaperPromptError) as e:
            raise ShowError(str(e)) from None
    return build_prompt(spec.text(data), mode, inst.images)


def show_instance(dataset: Dataset, instance_id: str, mode: str | None, prompts: str | None = None,
                  kind: PromptFile = "open", prompt_assets: str | None = None) -> str:
    """The prompt text exactly as sent, between marker lines, then the absolute image paths."""
    by_id = dataset.by_id()
    if instance_id not in by_id:
        raise ShowError(f"{dataset.root / INSTANCES}: field instance_id: no instance {instance_id!r}")
    inst = by_id[instance_id]
    allowed = modes_for(inst.benchmark)
    mode = mode or allowed[0]
    if mode not in allowed:
        raise ShowError(f"--mode {mode}: expected one of {', '.join(allowed)} for {inst.benchmark}")
    prompts = prompts or default_prompt_set()
    if prompts not in ("paper", "rewritten"):
        raise ShowError(f"--prompts {prompts}: expected paper or rewritten")
    if kind not in ("open", "api"):
        raise ShowError(f"--model-kind {kind}: expected open or api")
    prompt = instance_prompt(inst, mode, prompts, kind, prompt_assets)
    root = Path(dataset.root).resolve()
    lines = [
        f"=== prompt: {inst.instance_id} [{mode}] {prompt.template_version} ===",
        prompt.text,
        f"=== images: {len(prompt.images)} ===",
        *(str(root / ref.path) for ref in prompt.images),
    ]
    return "\n".join(lines)
