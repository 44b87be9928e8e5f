"""The recognition experiment's controls: which other instance of the same task each instance is paired with
when the model is asked whether a text matches a figure it does not describe."""

from __future__ import annotations

from collections import defaultdict

from pydantic import BaseModel, ConfigDict, Field

from evalcore.dataset import Dataset
from evalcore.rng import rng_for


def mismatch_partners(dataset: Dataset, seed: int) -> dict[str, str]:
    """For each instance, another instance of the same task (the recognition control): of the same level when
    the level has two or more instances, otherwise of the nearest other level (ties: any of them), so that a
    dataset with one instance per level (``per_level: 1``) still gets controls. An instance whose task has no
    other instance gets none (``control_gaps`` says so)."""
    levels: dict[str, dict[int, list[str]]] = defaultdict(lambda: defaultdict(list))
    for inst in dataset.instances:
        levels[inst.task][inst.level].append(inst.instance_id)
    partners = {}
    for by_level in levels.values():
        for level, ids in by_level.items():
            for iid in ids:
                others = [o for o in ids if o != iid]
                if not others:
                    dist = sorted({abs(lv - level) for lv in by_level if lv != level})
                    near = dist[0] if dist else None
                    others = sorted(o for lv, oids in by_level.items() if abs(lv - level) == near and lv != level
                                    for o in oids)
                if others:
                    partners[iid] = rng_for(seed, "mismatch", iid).choice(others)
    return partners


def control_gaps(dataset: Dataset, partners: dict[str, str] | None = None) -> str | None:
    """One line saying which instances cannot get a mismatched recognition control (their task has no other
    instance in the dataset), or None when every instance has one."""
    partners = mismatch_partners(dataset, 0) if partners is None else partners
    alone: dict[str, int] = defaultdict(int)
    for inst in dataset.instances:
        if inst.instance_id not in partners:
            alone[inst.task] += 1
    if not alone:
        return None
    tasks = ", ".join(f"{t} ({n})" for t, n in sorted(alone.items()))
    return (f"recognition controls: none for {sum(alone.values())} instance(s) of {dataset.manifest.version!r} "
            f"whose task has no other instance to pair with: {tasks}; RA_corrected stays blank there")



# Caps named by the error that refuses a value past them (as the run config's own caps): far above what a run
# needs, they keep a mistyped value from planning for hours
MAX_ASKS = 100
MAX_TEMPERATURE = 10.0


class RecognitionSpec(BaseModel):
    """The recognition experiment's settings in a run (`recognition:` of a run config, for a benchmark with
    `Benchmark.recognition`): the cluster plans the asks with them for any such benchmark."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    asks: int = Field(5, ge=1, le=MAX_ASKS, description="asks per pair, each with its own seed")
    controls: bool = Field(True, description="also ask mismatched pairs (another instance, same task and level)")
    temperature: float = Field(0.7, ge=0, le=MAX_TEMPERATURE, allow_inf_nan=False)
