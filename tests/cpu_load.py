"""Load on one core for tests and benches that must see a busy machine: busy loops pinned to one core, with
the calling thread pinned there too, so whatever it starts (a sandboxed program) shares that core."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def busy_loops_on_one_core(k: int) -> Iterator[int]:
    """`k` busy loops and this thread on the lowest core of this process's set; yields that core. Each loop
    runs in a session of its own, like the sandbox and other work: with autogroup scheduling a session
    shares a core as one, so k loops in the caller's session would take half of it, not k / (k + 1)."""
    cpu = min(os.sched_getaffinity(0))
    before = os.sched_getaffinity(0)
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True) for _ in range(k)]
    try:
        for p in loops:
            os.sched_setaffinity(p.pid, {cpu})
        os.sched_setaffinity(0, {cpu})
        try:
            yield cpu
        finally:
            os.sched_setaffinity(0, before)
    finally:
        for p in loops:
            p.kill()
            p.wait()
