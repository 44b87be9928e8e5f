"""Program-of-thought execution in the score stage: the programs of a batch's PoT responses, run in the sandbox
with bounded parallelism, before the batch is scored (`cluster.pipeline.score_batch`, `nphe4v grade`).

Bounds. A score task holding PoT samples asks Ray for `pot_task_cpus` (half a CPU, twice a plain score task:
the programs are CPU work) and runs at most `pot_workers` programs at once (threads, each waiting on one
sandboxed process); Ray runs only as many such tasks as the CPUs the scheduler keeps back for scoring allow, and
the scheduler bounds the batches in flight. So the programs running at once across the cluster are bounded by
(CPUs kept for scoring / the task's CPUs) x pot_workers. On a cluster of 2 CPUs or more the reserve is at least
one CPU, so half a CPU fits beside the judge's actors; on a smaller one the task asks what any score task asks,
so a PoT batch never waits for CPUs that only the models' replicas hold (they end only when every batch is
scored).
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from pydantic import BaseModel, Field

from evalcore.pot import PotOutcome, run_response
from evalcore.prompting import POT_MODE
from evalcore.schema import ModelRequest, ModelResponse

POT_TASK_CPUS = 0.5


def pot_task_cpus(total_cpus: float) -> float:
    """What a score task holding PoT samples asks Ray for, on a cluster of `total_cpus`."""
    from cluster.scheduler import SCORE_TASK_CPUS  # here: `nphe4v grade` runs programs without importing Ray

    return POT_TASK_CPUS if total_cpus >= 2 else SCORE_TASK_CPUS


class PotSettings(BaseModel):
    """How a run's (or a grading's) PoT programs are run."""

    isolation: str = "strict"
    timeout_s: float = Field(10.0, gt=0)
    workers: int = Field(2, ge=1)


def is_pot(request: ModelRequest, response: ModelResponse) -> bool:
    return request.key.prompt_mode == POT_MODE and response.status == "ok"


def has_pot(requests: Sequence[ModelRequest]) -> bool:
    return any(r.key.prompt_mode == POT_MODE for r in requests)


def run_pot(requests: Sequence[ModelRequest], responses: Sequence[ModelResponse],
            settings: PotSettings) -> list[PotOutcome | None]:
    """One outcome per request: what its program did for an ok PoT response, None for every other sample.
    Never raises for what a program does; each failure is a classified pot_error in its outcome."""
    from evalcore.sandbox import SandboxLimits

    limits = SandboxLimits(timeout_s=settings.timeout_s)
    todo = [i for i, (q, r) in enumerate(zip(requests, responses, strict=True)) if is_pot(q, r)]
    out: list[PotOutcome | None] = [None] * len(requests)
    if not todo:
        return out

    def one(i: int) -> PotOutcome:
        try:
            got = run_response(responses[i].text, limits=limits, isolation=settings.isolation)
        except Exception as e:  # the sandbox itself failed for this program: classified, the batch goes on
            got = PotOutcome(error="killed", detail=f"sandbox failure: {type(e).__name__}: {e}"[:300])
        return got

    with ThreadPoolExecutor(max_workers=min(settings.workers, len(todo)), thread_name_prefix="pot") as ex:
        for i, got in zip(todo, ex.map(one, todo), strict=True):
            out[i] = got
    return out
