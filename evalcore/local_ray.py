"""Starting a private local Ray, once more when Ray's fixed start-up window runs out on a busy machine.

Ray waits a hard-coded 30 s (`ray/_private/node.py`) for its raylet to register with the GCS. On a small
machine whose cores are busy (a laptop running other work, a CI box running tests side by side) the GCS can
answer late and `ray.init` raises "The current node timed out during startup", although nothing is wrong.
That one error is worth a new start; every other error is raised as it is. The processes the failed start
left running (GCS, raylet, agents: this process's children) are stopped first.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

STARTUP_TIMEOUT = "The current node timed out during startup"
MAX_STARTS = 3


def _children() -> set[int]:
    """This process's child pids (Linux /proc; empty elsewhere, where a failed start is not cleaned up)."""
    me = os.getpid()
    out: set[int] = set()
    proc = Path("/proc")
    if not proc.is_dir():
        return out
    for d in proc.iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
        except OSError:
            continue
        # the field after the parenthesised command name: state, then ppid
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 1 and int(fields[1]) == me:
            out.add(int(d.name))
    return out


def _stop(pids: set[int], grace_s: float = 5.0) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + grace_s
    for pid in pids:  # reap them: no zombies left behind by a long-lived driver
        while time.monotonic() < deadline:
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                break
            if done:
                break
            time.sleep(0.05)


def start_local_ray(num_cpus: int | None, *, log_to_driver: bool, starts: int = MAX_STARTS,
                    init: Callable[..., Any] | None = None) -> None:
    """`ray.init(address="local", ...)`: a new private cluster (never one already running on the machine),
    without the dashboard. Started again, up to `starts` times in all, when Ray's start-up window runs out.
    `init` is `ray.init` (replaceable so that the retry itself can be tested)."""
    if init is None:
        import ray

        init = ray.init
    for attempt in range(1, starts + 1):
        before = _children()
        try:
            init(address="local", num_cpus=num_cpus, include_dashboard=False, log_to_driver=log_to_driver)
            return
        except Exception as e:
            if STARTUP_TIMEOUT not in str(e) or attempt == starts:
                raise
            _stop(_children() - before)
            print(f"Ray's local start-up timed out (its fixed 30 s window; the machine is busy): starting it "
                  f"again ({attempt + 1}/{starts})", file=sys.stderr, flush=True)
