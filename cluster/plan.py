"""Plan a run: every (model x instance x prompt mode x repeat) and every recognition ask, as requests.

Planning is pure and cheap (string assembly); the model and score stages run on Ray.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass

from cluster.backends.base import needs_reference
from cluster.config import ModelSpec, RunConfig
from nphe4v.core.benchmarks import task_for
from nphe4v.core.dataset import Dataset
from nphe4v.core.prompting import VISION_MODE, build_prompt, build_recognition_prompt
from nphe4v.core.rng import derive_seed
from nphe4v.core.schema import RECOGNITION_MODE, Instance, ModelRequest, SampleKey, SamplingParams
from nphe4v.recognition import control_gaps, mismatch_partners


@dataclass(frozen=True)
class WorkItem:
    request: ModelRequest
    instance_id: str

    @property
    def key(self) -> str:
        return self.request.key.as_str()


_REPORTED_GAPS: set[tuple[str, str]] = set()


def _report_control_gaps(dataset: Dataset, partners: dict[str, str]) -> None:
    # once per dataset and process, not once per model
    key = (str(dataset.root), dataset.manifest.version)
    if key in _REPORTED_GAPS:
        return
    _REPORTED_GAPS.add(key)
    line = control_gaps(dataset, partners)
    if line:
        print(line, file=sys.stderr)


def plan_model(cfg: RunConfig, model: ModelSpec, dataset: Dataset, version: str) -> Iterator[WorkItem]:
    by_id = dataset.by_id()
    partners = mismatch_partners(dataset, cfg.sampling.seed)
    image_root = str(dataset.root.resolve())
    modes: list[str] = ["full_text_only"] if model.text_only else list(cfg.prompt_modes)
    if dataset.manifest.benchmark == "graphverse":
        # GraphVerse has one prompt shape (images + question) and no recognition experiment
        modes = [VISION_MODE]
    texts = {}
    for inst in dataset.instances:
        spec = task_for(inst.benchmark, inst.task)
        texts[inst.instance_id] = spec.text(spec.load(inst.data))

    with_reference = needs_reference(model.backend, model.options)

    def request(inst: Instance, key: SampleKey, prompt, sampling: SamplingParams, variant: str) -> WorkItem:
        ref = None
        if with_reference:
            ref = {"data": inst.data, "gold": inst.gold.answer, "variant": variant}
        return WorkItem(
            ModelRequest(
                key=key, task=inst.task, level=inst.level, prompt=prompt, sampling=sampling,
                image_root=image_root, reference=ref,
            ),
            inst.instance_id,
        )

    for inst in dataset.instances:
        variant = str(inst.meta.get("edit", ""))  # GraphVerse: the image edit; NPHardEval4V: none
        for mode in modes:
            prompt = build_prompt(texts[inst.instance_id], mode, inst.images)
            for r in range(cfg.repeats):
                key = SampleKey(
                    model=model.name, benchmark=inst.benchmark, instance_id=inst.instance_id,
                    variant=variant, prompt_mode=mode, repeat=r,
                )
                seed = derive_seed(cfg.sampling.seed, version, key.as_str()) if cfg.repeats > 1 else cfg.sampling.seed
                sampling = SamplingParams(
                    temperature=cfg.sampling.temperature, max_tokens=cfg.sampling.max_tokens, seed=seed
                )
                yield request(inst, key, prompt, sampling, variant)
    if model.text_only or not cfg.recognition.enabled or dataset.manifest.benchmark != "nphardeval4v":
        return
    rec = cfg.recognition
    if rec.controls:
        _report_control_gaps(dataset, partners)
    for inst in dataset.instances:
        pairs = [("match", inst.instance_id)]
        if rec.controls and inst.instance_id in partners:
            pairs.append(("mismatch", partners[inst.instance_id]))
        for variant, text_id in pairs:
            prompt = build_recognition_prompt(texts[text_id], inst.images)
            for r in range(rec.asks):
                key = SampleKey(
                    model=model.name, benchmark=inst.benchmark, instance_id=inst.instance_id,
                    variant=variant, prompt_mode=RECOGNITION_MODE, repeat=r,
                )
                sampling = SamplingParams(
                    temperature=rec.temperature, max_tokens=256,
                    seed=derive_seed(cfg.sampling.seed, version, key.as_str()),
                )
                yield request(by_id[inst.instance_id], key, prompt, sampling, variant)
