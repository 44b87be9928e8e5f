"""Where model replicas go: one Ray actor per replica, and for GPU models one placement group per replica.

A GPU replica with tensor parallelism `tp` reserves `tp` bundles of {"GPU": 1, "CPU": 1} (PACK: on one node
when it fits). The ModelActor takes bundle 0:
  - tp == 1: the actor holds the GPU itself (vLLM's in-process executor);
  - tp > 1: the actor holds only the CPU of bundle 0 and vLLM's Ray executor starts one GPU worker per
    bundle of the *same* placement group (captured as the current placement group of the actor).
Ending the actor and removing its placement group (`release`) is what frees the GPUs.

CPU models (num_gpus == 0) just ask for `num_cpus`. A transformers replica (cluster.backends.transformers_engine)
spreads one model over all its GPUs in its own process: its placement group is one bundle of {"GPU": n, "CPU": 1}
and the actor holds all n.
"""

from __future__ import annotations

import math
from typing import Any

import ray
from ray.util.placement_group import PlacementGroup, placement_group, remove_placement_group
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

from cluster.config import ModelSpec

AUTO = "auto"


def tensor_parallel_size(spec: ModelSpec) -> int:
    return max(1, int(spec.options.get("tensor_parallel_size", 1) or 1))


def gpus_per_replica(spec: ModelSpec) -> float:
    """GPUs one replica needs: 0 for CPU models, a fraction when sharing a GPU, else the TP size."""
    if spec.num_gpus <= 0:
        return 0.0
    tp = tensor_parallel_size(spec)
    if tp == 1 and spec.num_gpus < 1:
        return float(spec.num_gpus)  # fractional GPU (several small replicas on one card)
    return float(max(tp, math.ceil(spec.num_gpus)))


def uses_placement_group(spec: ModelSpec) -> bool:
    return gpus_per_replica(spec) >= 1


def _alive_nodes() -> list[dict[str, Any]]:
    return [n for n in ray.nodes() if n.get("Alive", n.get("alive", False))]


def free_gpus() -> int:
    """Whole GPUs currently unclaimed in the cluster (needs ray.init)."""
    return int(ray.available_resources().get("GPU", 0))


def replica_count(spec: ModelSpec) -> int:
    """`spec.replicas`, or for "auto" as many replicas as the free GPUs hold now (1 for a CPU model).

    An upper bound only: a run's scheduler (cluster.scheduler) sizes `auto` by the model's share of the work."""
    if spec.replicas != AUTO:
        return int(spec.replicas)
    per = gpus_per_replica(spec)
    if per <= 0:
        return 1
    n = int(free_gpus() // per) if per >= 1 else int(free_gpus() / per)
    if n < 1:
        raise ValueError(
            f"model {spec.name}: replicas=auto but only {free_gpus()} GPU(s) are free, "
            f"one replica needs {per:g}"
        )
    return n


def check_fits(spec: ModelSpec) -> None:
    """Raise ValueError (one line) when one replica needs more GPUs than any single node has."""
    per = gpus_per_replica(spec)
    if per <= 0:
        return
    nodes = _alive_nodes()
    most = max((float(n.get("Resources", {}).get("GPU", 0)) for n in nodes), default=0.0)
    if per > most:
        raise ValueError(
            f"model {spec.name}: one replica needs {per:g} GPU(s) (tensor_parallel_size="
            f"{tensor_parallel_size(spec)}) but the largest node has {most:g} of {len(nodes)} node(s)"
        )


def one_process(spec: ModelSpec) -> bool:
    """The replica's own process uses every GPU of the replica (transformers' layer split across cards)."""
    return spec.backend == "transformers"


def replica_placement_group(spec: ModelSpec, replica: int = 0) -> PlacementGroup:
    tp = int(gpus_per_replica(spec))
    if one_process(spec):
        return placement_group([{"GPU": tp, "CPU": 1}], strategy="STRICT_PACK", name=f"nphe4v/{spec.name}/{replica}")
    return placement_group(
        [{"GPU": 1, "CPU": 1} for _ in range(tp)],
        strategy="PACK",
        name=f"nphe4v/{spec.name}/{replica}",
    )


def actor_options(spec: ModelSpec, replica: int = 0, *, wait_s: float | None = 600.0,
                  num_cpus: float | None = None) -> dict[str, Any]:
    """Keyword arguments for `ModelActor.options(...)` for one replica of `spec`.

    For GPU models this creates the replica's placement group (and waits up to `wait_s` for it to be
    placed, raising TimeoutError with one line otherwise); pass the result to `release` after the actor ends.
    CPU models ask for `num_cpus` when given (the run scheduler's grant, which keeps CPUs back for the score
    tasks: `cluster.scheduler`), else `spec.num_cpus`; GPU replicas hold their placement group's CPUs.
    """
    if not uses_placement_group(spec):
        return {"num_cpus": spec.num_cpus if num_cpus is None else num_cpus, "num_gpus": spec.num_gpus}
    check_fits(spec)
    pg = replica_placement_group(spec, replica)
    if wait_s is not None:
        ready, _ = ray.wait([pg.ready()], timeout=wait_s)
        if not ready:
            remove_placement_group(pg)
            raise TimeoutError(
                f"model {spec.name}: placement group for replica {replica} "
                f"({int(gpus_per_replica(spec))} x GPU+CPU) not placed in {wait_s:g} s"
            )
    tp = tensor_parallel_size(spec)
    return {
        "num_cpus": 1,
        # tp == 1: the actor runs the engine on its GPU; tp > 1: vLLM's Ray workers take the bundles' GPUs;
        # a transformers replica holds its one bundle's GPUs itself
        "num_gpus": int(gpus_per_replica(spec)) if one_process(spec) else (1 if tp == 1 else 0),
        "scheduling_strategy": PlacementGroupSchedulingStrategy(
            placement_group=pg, placement_group_bundle_index=0, placement_group_capture_child_tasks=True
        ),
    }


def release(options: dict[str, Any]) -> None:
    """Remove the placement group an `actor_options` result reserved (after the actor was killed)."""
    strategy = options.get("scheduling_strategy")
    if isinstance(strategy, PlacementGroupSchedulingStrategy) and strategy.placement_group is not None:
        remove_placement_group(strategy.placement_group)
