"""The no-progress line (`Scheduler.stall_line`): how long nothing came back, and what waits for what —
answered batches waiting for a score task, CPUs free, which replicas hold how many CPUs on which node, which
replica is not placed. Its GCS questions are asked off the loop's thread, bounded (a head that dies meanwhile
would block them)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import ray

# What one score task asks (`cluster.pipeline.score_batch`): the reserve gives each model's batches room to be
# scored side by side.
SCORE_TASK_CPUS = 0.25


def stall_line(sched: Any, idle_s: float, states: dict[str, tuple[str, str]] | None = None) -> str:
    """`sched` is the `cluster.scheduler.Scheduler` (not imported: it imports this module).

    One line: how long nothing came back, and what waits for what."""
    parts: list[str] = []
    try:
        free, per_node = call(free_cpus)
    except Exception:
        free, per_node = None, {}
    cpu_note = f"{free:g} of {sched.total_cpus:g} CPUs free" if free is not None else \
        f"{sched.total_cpus:g} CPUs in the cluster"
    inflight = sum(len(j.pool.inflight) for j in sched.jobs)
    answered = 0
    for j in sched.jobs:
        if j.answered is not None and j.pool.inflight:
            with contextlib.suppress(Exception):
                answered += call(lambda j=j: j.answered(j.pool.refs()))
    if answered:
        parts.append(f"{answered} answered batch(es) wait for a score task "
                     f"({SCORE_TASK_CPUS:g} CPU each; {cpu_note})")
    if inflight - answered > 0:
        parts.append(f"{inflight - answered} batch(es) wait for their replica's answer")
    states = states or {}
    holders: dict[str, list[Any]] = {}
    if not states and any(j.live for j in sched.jobs):
        parts.append(f"{sum(len(j.live) for j in sched.jobs)} replica(s) live (their states could not be read)")
    for j in sched.jobs:
        for r in j.live:
            if not states:
                break
            state, node = states.get(actor_id(r.actor), ("", ""))
            if state == "ALIVE":
                holders.setdefault(node, []).append(r)
            else:
                what = f"{r.cpus:g} CPU" if r.gpus < 1 else f"{r.gpus:g} GPU(s)"
                parts.append(f"replica {r.index} of {j.name} ({what}) is "
                             f"{(state or 'not placed').lower().replace('_', ' ')}")
    for node, reps in holders.items():
        names = ", ".join(sorted({r.job.name for r in reps}))
        held = sum(r.cpus if r.gpus < 1 else r.gpus for r in reps)  # a GPU bundle holds a CPU per GPU
        gpus = sum(r.gpus for r in reps if r.gpus >= 1)
        where, room = per_node.get(node, (node[:8] or "?", None))
        free_there = f", {room:g} free" if room is not None else ""
        also = f" and {gpus:g} GPU(s)" if gpus else ""
        parts.append(f"replicas of {names} hold {held:g} CPUs{also} on node {where}{free_there}")
    for j in sched.jobs:
        if j.status in ("pending", "running") and j.batches and not j.live:
            need = f"{j.gpus:g} GPU(s)" if j.gpus >= 1 else f"{j.cpu_grant or 0:g} CPU"
            parts.append(f"{j.name} has no replica (one needs {need}; {sched._free_gpus():g} GPU(s) free)")
    busy_stages = sum(1 for st in sched.stages if not st.idle())
    if busy_stages:
        parts.append(f"{busy_stages} side stage(s) (the judge) not done")
    return f"no progress for {idle_s:.0f} s: " + ("; ".join(parts) or "nothing in flight")


def call(fn: Callable[[], Any]) -> Any:
    """A GCS question asked off the loop's thread, bounded (a head that dies meanwhile would block it)."""
    from cluster.head_watch import call_with_timeout

    return call_with_timeout(fn, 10.0)


def actor_id(actor: Any) -> str:
    try:
        return actor._actor_id.hex()
    except Exception:
        return ""


def actor_states(actors: list[Any]) -> dict[str, tuple[str, str]]:
    """actor id -> (state, node id) from the GCS's actor table (ALIVE, PENDING_CREATION, RESTARTING)."""
    from ray._private.state import state

    out: dict[str, tuple[str, str]] = {}
    for a in actors:
        aid = actor_id(a)
        if not aid:
            continue
        info = state.actor_table(aid) or {}
        out[aid] = (str(info.get("State", "")), str((info.get("Address") or {}).get("NodeID") or ""))
    return out


def free_cpus() -> tuple[float, dict[str, tuple[str, float]]]:
    """CPUs free in the cluster, and per live node id: (its address and id, as an operator finds it; free)."""
    from ray._private.state import state

    address = {n["NodeID"]: f"{n.get('NodeManagerAddress', '?')} ({n['NodeID'][:8]})" for n in ray.nodes()
               if n.get("Alive")}
    per_node = {nid: (address[nid], float(res.get("CPU", 0.0)))
                for nid, res in state.available_resources_per_node().items() if nid in address}
    return float(ray.available_resources().get("CPU", 0.0)), per_node
