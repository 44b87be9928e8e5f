"""What a model is asked for one dataset instance in one prompt mode, for `nphe4v show` (and the report's rebuild
of a paper prompt).

Built with the calls the run planner (`cluster.plan.plan_model`) makes: with `prompts="rewritten"` the task's
`text` on the stored instance data, then `evalcore.prompting.build_prompt`; with `prompts="paper"`, for a
benchmark with paper prompts, its plug-in's `load_paper_prompts` and `build_paper_prompt` (e.g. NPHardEval4V's
authors' pinned files, for the open-weights or the API prompt file), with the stored images.
"""

from __future__ import annotations

import os
from pathlib import Path

from evalcore import benchmarks
from evalcore.benchmark import AssetsMissing
from evalcore.dataset import INSTANCES, Dataset
from evalcore.prompting import build_prompt
from evalcore.schema import PROMPT_MODES, Instance, Prompt


class ShowError(ValueError):
    """An instance or mode that cannot be shown; one line naming the file and field."""


def default_prompt_set() -> str:
    """As a run config without `prompts:` (cluster.config): paper, unless the site sets NPHE4V_PROMPTS."""
    return os.environ.get("NPHE4V_PROMPTS", "").strip() or "paper"


def modes_for(benchmark: str) -> tuple[str, ...]:
    return tuple(benchmarks.get(benchmark).all_prompt_modes())


def paper_prompt_kinds() -> tuple[str, ...]:
    """The prompt file kinds (`--model-kind`) of every registered benchmark with paper prompts."""
    kinds = [k for b in benchmarks.registry().values() if b.paper_prompts for k in b.paper_prompt_kinds]
    return tuple(dict.fromkeys(kinds))


def instance_prompt(inst: Instance, mode: str, prompts: str = "rewritten", kind: str = "open",
                    prompt_assets: str | None = None, download: bool = True) -> Prompt:
    bench = benchmarks.get(inst.benchmark)
    if prompts == "paper" and bench.paper_prompts and mode in PROMPT_MODES:
        try:
            # download=False, e.g. a report: look in the checkout or the cache, never on the network
            return bench.build_paper_prompt(bench.load_paper_prompts(prompt_assets, download), inst, mode, kind)
        except (AssetsMissing, ValueError) as e:  # the files' own problems (a plug-in's ValueError) in one line
            raise ShowError(str(e)) from None
    spec = bench.task(inst.task)
    return build_prompt(spec.text(spec.load(inst.data)), mode, inst.images)


def show_instance(dataset: Dataset, instance_id: str, mode: str | None, prompts: str | None = None,
                  kind: str = "open", prompt_assets: str | None = None) -> str:
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
    kinds = paper_prompt_kinds()
    if kind not in kinds:
        raise ShowError(f"--model-kind {kind}: expected {' or '.join(kinds)}")
    prompt = instance_prompt(inst, mode, prompts, kind, prompt_assets)
    root = Path(dataset.root).resolve()
    lines = [
        f"=== prompt: {inst.instance_id} [{mode}] {prompt.template_version} ===",
        prompt.text,
        f"=== images: {len(prompt.images)} ===",
        *(str(root / ref.path) for ref in prompt.images),
    ]
    return "\n".join(lines)
