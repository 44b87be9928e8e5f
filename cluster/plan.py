"""Plan a run: every (model x instance x prompt mode x repeat) and every recognition ask, as requests.

Planning is pure and cheap (string assembly); the model and score stages run on Ray. It is also lazy: a run's
~500k requests (each with its prompt) are never all in the driver at once. `count_work` walks only the sample
keys (what the scheduler needs up front: how much work each model has), and `plan_batches` makes the requests
batch by batch as the scheduler takes them. Both walk the same `_groups`, so they agree by construction.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from cluster.backends.base import needs_reference
from cluster.config import ModelSpec, RunConfig
from evalcore import benchmarks
from evalcore.benchmark import AssetsMissing
from evalcore.benchmarks import task_for
from evalcore.dataset import Dataset
from evalcore.prompting import TaskText, build_prompt, build_recognition_prompt
from evalcore.recognition import control_gaps, mismatch_partners
from evalcore.rng import derive_seed
from evalcore.schema import (
    PROMPT_MODES,
    RECOGNITION_MODE,
    Instance,
    ModelRequest,
    Prompt,
    SampleKey,
    SamplingParams,
)


@dataclass(frozen=True)
class WorkItem:
    request: ModelRequest
    instance_id: str

    @property
    def key(self) -> str:
        return self.request.key.as_str()


@dataclass(frozen=True)
class WorkCount:
    """How much of a model's plan is still to do over one dataset (no request is built to know it)."""

    planned: int
    skipped: int  # already written (resume)
    batches: int  # of the rest, in batches of the model's batch size

    @property
    def todo(self) -> int:
        return self.planned - self.skipped


@dataclass(frozen=True)
class _Group:
    """Samples sharing one prompt: the repeats of an (instance, mode), or the asks of a recognition pair."""

    inst: Instance
    text_id: str  # whose problem text the prompt carries (the partner's, for a mismatched control)
    mode: str  # a prompt mode, or RECOGNITION_MODE
    variant: str
    keys: tuple[SampleKey, ...]


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


def _paper_benchmarks(cfg: RunConfig) -> list[Any]:
    """The run's benchmarks that have paper prompts (`Benchmark.paper_prompts`), once each, in config order."""
    found = {b.name: b for d in cfg.datasets if (b := d.bench()).paper_prompts}
    return list(found.values())


def prompt_set_label(cfg: RunConfig) -> str:
    """What the prompts of this run are, for the manifest and the report."""
    from evalcore.prompting import TEMPLATE_VERSION

    benches = _paper_benchmarks(cfg)
    # Benchmarks without a paper prompt set send their own prompts whatever `prompts:` says; naming another
    # benchmark's paper files for them put NPHardEval4V's set in a GraphVerse run's manifest and report.
    own = ", ".join(sorted({d.benchmark for d in cfg.datasets} - {b.name for b in benches}))
    if not benches:
        return f"own prompts of {own} (no paper prompt set; `prompts:` does not apply)"
    paper = [b.paper_prompts_label() for b in benches if b.sends_paper_prompts(cfg.options_for(b))]
    label = "; ".join(paper) or f"rewritten ({TEMPLATE_VERSION})"
    return f"{label}; own prompts of {own}" if own else label


def wants_paper_prompts(cfg: RunConfig) -> bool:
    return any(b.sends_paper_prompts(cfg.options_for(b)) for b in _paper_benchmarks(cfg))


def paper_prompt_set(cfg: RunConfig, bench: Any, download: bool = True) -> Any:
    """The paper prompt files of `bench` (a Benchmark) for a config that sends them (fetched once into the cache
    when `download`), else None. Raises AssetsMissing (one line saying how to get them): the run checks this
    before any model starts (`check_prompt_assets`)."""
    opts = cfg.options_for(bench)
    if not (bench.paper_prompts and bench.sends_paper_prompts(opts)):
        return None
    return bench.load_paper_prompts(bench.prompt_assets(opts), download)


def check_prompt_assets(cfg: RunConfig, download: bool = True) -> str | None:
    """None when the config's prompts can be built, else the one line saying how to get what is missing."""
    try:
        for bench in _paper_benchmarks(cfg):
            paper_prompt_set(cfg, bench, download)
    except AssetsMissing as e:
        return str(e)
    return None


def _groups(cfg: RunConfig, model: ModelSpec, dataset: Dataset) -> Iterator[_Group]:
    bench = benchmarks.get(dataset.manifest.benchmark)
    modes = bench.prompt_modes(cfg.prompt_modes, model.modes_for(bench), model.text_only)

    def keys(inst: Instance, variant: str, mode: str, n: int) -> tuple[SampleKey, ...]:
        return tuple(SampleKey(model=model.name, benchmark=inst.benchmark, instance_id=inst.instance_id,
                               variant=variant, prompt_mode=mode, repeat=r) for r in range(n))

    for inst in dataset.instances:
        variant = bench.variant(inst)  # GraphVerse: the image edit; NPHardEval4V: none
        for mode in modes:
            yield _Group(inst, inst.instance_id, mode, variant, keys(inst, variant, mode, cfg.repeats))
    rec = bench.recognition_settings(cfg.options_for(bench)) if bench.recognition else None
    if model.text_only or rec is None or not rec.enabled:
        return
    partners = mismatch_partners(dataset, cfg.sampling.seed)
    if rec.controls:
        _report_control_gaps(dataset, partners)
    for inst in dataset.instances:
        pairs = [("match", inst.instance_id)]
        if rec.controls and inst.instance_id in partners:
            pairs.append(("mismatch", partners[inst.instance_id]))
        for variant, text_id in pairs:
            yield _Group(inst, text_id, RECOGNITION_MODE, variant, keys(inst, variant, RECOGNITION_MODE, rec.asks))


def plan_model(cfg: RunConfig, model: ModelSpec, dataset: Dataset, version: str,
               skip: Callable[[str], bool] | None = None) -> Iterator[WorkItem]:
    """The model's requests over the dataset, lazily, in plan order; `skip(key)` true leaves a sample out
    (already written) without building its prompt."""
    by_id = dataset.by_id()
    image_root = str(dataset.root.resolve())
    with_reference = needs_reference(model.backend, model.options)
    overrides = model.sampling_overrides()  # the registry's request_args (e.g. short-context max_tokens)
    bench = benchmarks.get(dataset.manifest.benchmark)
    rec = bench.recognition_settings(cfg.options_for(bench))

    def text(iid: str) -> TaskText:
        # built when needed, not kept: a cache of every instance's text per model would live as long as the plan
        inst = by_id[iid]
        spec = task_for(inst.benchmark, inst.task)
        return spec.text(spec.load(inst.data))

    paper = paper_prompt_set(cfg, bench)
    kind = bench.paper_prompt_kind(model.backend) if paper is not None else ""

    def task_prompt(inst: Instance, mode: str) -> Prompt:
        if paper is not None and mode in PROMPT_MODES:
            return bench.build_paper_prompt(paper, inst, mode, kind)
        return build_prompt(text(inst.instance_id), mode, inst.images)

    for g in _groups(cfg, model, dataset):
        todo = [k for k in g.keys if skip is None or not skip(k.as_str())]
        if not todo:
            continue
        inst = g.inst
        recognition = g.mode == RECOGNITION_MODE
        # the recognition question stays ours in both sets (docs/deviations.md)
        prompt = (build_recognition_prompt(text(g.text_id), inst.images) if recognition
                  else task_prompt(inst, g.mode))
        ref = {"data": inst.data, "gold": inst.gold.answer, "variant": g.variant} if with_reference else None
        for key in todo:
            if recognition:
                assert rec is not None  # recognition groups are planned only with its settings
                sampling = SamplingParams(temperature=rec.temperature, max_tokens=256,
                                          seed=derive_seed(cfg.sampling.seed, version, key.as_str()))
            else:
                seed = (derive_seed(cfg.sampling.seed, version, key.as_str()) if cfg.repeats > 1
                        else cfg.sampling.seed)
                temperature, max_tokens = overrides.apply(cfg.sampling.temperature, cfg.sampling.max_tokens)
                sampling = SamplingParams(temperature=temperature, max_tokens=max_tokens, seed=seed)
            yield WorkItem(
                ModelRequest(key=key, task=inst.task, level=inst.level, prompt=prompt, sampling=sampling,
                             image_root=image_root, reference=ref),
                inst.instance_id,
            )


def count_work(cfg: RunConfig, model: ModelSpec, dataset: Dataset,
               skip: Callable[[str], bool] | None = None) -> WorkCount:
    """How many samples the model's plan over the dataset has, how many `skip` leaves out, and in how many
    batches the rest goes: sample keys only, no prompt is built."""
    planned = skipped = 0
    for g in _groups(cfg, model, dataset):
        planned += len(g.keys)
        if skip is not None:
            skipped += sum(1 for k in g.keys if skip(k.as_str()))
    todo = planned - skipped
    return WorkCount(planned, skipped, -(-todo // model.batch_size))


def plan_batches(cfg: RunConfig, model: ModelSpec, datasets: list[Dataset], versions: list[str],
                 skip: Callable[[str], bool] | None = None) -> Iterator[tuple[int, list[WorkItem]]]:
    """(dataset index, requests) in batches of the model's batch size, dataset after dataset (a batch never
    mixes datasets), made only as they are taken."""
    for d, ds in enumerate(datasets):
        batch: list[WorkItem] = []
        for item in plan_model(cfg, model, ds, versions[d], skip):
            batch.append(item)
            if len(batch) == model.batch_size:
                yield d, batch
                batch = []
        if batch:
            yield d, batch
