"""A local Ray start that runs out of Ray's fixed 30 s start-up window (a busy machine: CI once failed a run this
way) is started again, after the processes the failed start left running are stopped; any other error is
raised at once. Ray's own timeout cannot be caused on demand, so `init` stands in for `ray.init`: it starts a
real child process, as Ray's failed start leaves its GCS and raylet, and raises Ray's error. The real start
is the path of every run test."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from evalcore.local_ray import STARTUP_TIMEOUT, start_local_ray


class FlakyInit:
    """Fails `failures` times the way Ray does (leaving a child process running), then starts."""

    def __init__(self, failures: int, message: str = f"{STARTUP_TIMEOUT}. This could happen because ..."):
        self.failures, self.message = failures, message
        self.calls: list[dict] = []
        self.left: list[subprocess.Popen] = []

    def __call__(self, **kw):
        self.calls.append(kw)
        if len(self.calls) <= self.failures:
            self.left.append(subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"]))
            raise Exception(self.message)


def _alive(p: subprocess.Popen) -> bool:
    return Path(f"/proc/{p.pid}").exists() and p.poll() is None


def test_start_up_timeout_starts_again_and_stops_what_the_failed_start_left(capfd):
    init = FlakyInit(failures=2)
    start_local_ray(2, log_to_driver=False, init=init)
    assert len(init.calls) == 3
    assert init.calls[-1] == {"address": "local", "num_cpus": 2, "include_dashboard": False, "log_to_driver": False}
    assert not any(_alive(p) for p in init.left), "a failed start's processes were left running"
    err = capfd.readouterr().err
    assert err.count("starting it again") == 2 and "(3/3)" in err


def test_gives_up_after_three_starts():
    init = FlakyInit(failures=5)
    with pytest.raises(Exception, match=STARTUP_TIMEOUT):
        start_local_ray(None, log_to_driver=True, init=init)
    assert len(init.calls) == 3
    for p in init.left:
        p.kill()
        p.wait()


def test_any_other_error_is_raised_at_once():
    init = FlakyInit(failures=1, message="Invalid argument: num_cpus")
    with pytest.raises(Exception, match="Invalid argument"):
        start_local_ray(2, log_to_driver=False, init=init)
    assert len(init.calls) == 1
    assert _alive(init.left[0]), "only a timed-out start's processes are stopped"
    init.left[0].kill()
    init.left[0].wait()
