"""What a model is asked for one dataset instance in one prompt mode, for `nphe4v show`.

Built with the calls the run planner (`cluster.plan.plan_model`) and `nphe4v grade` make: the task's
`text` on the stored instance data, then `nphe4v.core.prompting.build_prompt` with the stored images.
"""

from __future__ import annotations

from pathlib import Path

from nphe4v.core.benchmarks import task_for
from nphe4v.core.dataset import INSTANCES, Dataset
from nphe4v.core.prompting import GRAPHVERSE_MODES, build_prompt
from nphe4v.core.schema import PROMPT_MODES, Instance, Prompt


class ShowError(ValueError):
    """An instance or mode that cannot be shown; one line naming the file and field."""


def modes_for(benchmark: str) -> tuple[str, ...]:
    return GRAPHVERSE_MODES if benchmark == "graphverse" else tuple(PROMPT_MODES)


def instance_prompt(inst: Instance, mode: str) -> Prompt:
    spec = task_for(inst.benchmark, inst.task)
    return build_prompt(spec.text(spec.load(inst.data)), mode, inst.images)


def show_instance(dataset: Dataset, instance_id: str, mode: str | None) -> str:
    """The prompt text exactly as sent, between marker lines, then the absolute image paths."""
    by_id = dataset.by_id()
    if instance_id not in by_id:
        raise ShowError(f"{dataset.root / INSTANCES}: field instance_id: no instance {instance_id!r}")
    inst = by_id[instance_id]
    allowed = modes_for(inst.benchmark)
    mode = mode or allowed[0]
    if mode not in allowed:
        raise ShowError(f"--mode {mode}: expected one of {', '.join(allowed)} for {inst.benchmark}")
    prompt = instance_prompt(inst, mode)
    root = Path(dataset.root).resolve()
    lines = [
        f"=== prompt: {inst.instance_id} [{mode}] {prompt.template_version} ===",
        prompt.text,
        f"=== images: {len(prompt.images)} ===",
        *(str(root / ref.path) for ref in prompt.images),
    ]
    return "\n".join(lines)
