"""cluster.backends.vllm_cpu.quiet_resource_tracker: a child killed with a semaphore still registered (as a CPU
engine core is after its second's grace) makes multiprocessing's resource tracker print "leaked semaphore objects"
at exit; with the filter in place before the tracker starts, it prints nothing, and the semaphore is still
unlinked (the tracker cleans it up either way)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import PROJECT

SCRIPT = textwrap.dedent("""
    import multiprocessing as mp
    import os
    import signal
    import sys

    def child(conn):
        sem = mp.get_context("spawn").Semaphore(1)  # registered with the parent's tracker
        conn.send(sem._semlock.name)
        signal.pause()

    if __name__ == "__main__":
        if sys.argv[1] == "quiet":
            from cluster.backends.vllm_cpu import quiet_resource_tracker
            quiet_resource_tracker()
        ctx = mp.get_context("spawn")
        mine, theirs = ctx.Pipe()
        p = ctx.Process(target=child, args=(theirs,))
        p.start()
        name = mine.recv().lstrip("/")
        print(name, os.path.exists(f"/dev/shm/sem.{name}"), flush=True)  # the semaphore while the child lives
        os.kill(p.pid, signal.SIGKILL)  # no cleanup in the child, as a killed engine core
        p.join()
""")


@pytest.mark.parametrize("mode", ["loud", "quiet"])
def test_a_killed_childs_semaphore_is_cleaned_up_and_reported_only_without_the_filter(tmp_path, mode):
    script = tmp_path / "kill_child.py"
    script.write_text(SCRIPT)
    done = subprocess.run([sys.executable, str(script), mode], cwd=PROJECT, capture_output=True, text=True,
                          timeout=120, env={"PYTHONPATH": str(PROJECT), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr[-2000:]
    name, alive = done.stdout.strip().splitlines()[-1].split()
    leaked = "leaked semaphore" in done.stderr
    assert leaked == (mode == "loud"), done.stderr[-2000:]
    # cleaned up either way: a POSIX named semaphore lives under /dev/shm as sem.<name> (there while the child was)
    if sys.platform.startswith("linux"):
        assert alive == "True"
        assert not Path(f"/dev/shm/sem.{name}").exists()
