"""bench/bench_suite_cpu.py charges the machine's busy time to the tests that ran while it was spent: a test
that computes is charged its CPU, one that only waits (alone) next to nothing, across xdist workers."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(not Path("/proc/stat").is_file(), reason="the bench reads Linux's /proc/stat")
def test_busy_time_goes_to_the_test_that_computed(tmp_path):
    suite = tmp_path / "test_two.py"
    # the waiting test starts after the computing one ended (a file the first writes), so each second's busy
    # time has one test to go to; both run in one worker process (-n 1), which the plugin must follow. On a
    # machine other work saturates, the waiting test (1 s) is charged at most 2 core-s, the computing one at
    # least its own 3 s of CPU
    done = tmp_path / "computed"
    suite.write_text(textwrap.dedent(f"""
        import pathlib, time

        def test_a_computes():
            t = time.process_time()
            while time.process_time() - t < 3.0:
                sum(i * i for i in range(10_000))
            pathlib.Path({str(done)!r}).write_text("done")

        def test_b_waits():
            assert pathlib.Path({str(done)!r}).is_file()
            time.sleep(1.0)
    """))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    res = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_suite_cpu.py"), "--top", "10", "--",
                          "-q", "-n", "1", "-p", "no:cacheprovider", "--rootdir", str(tmp_path), str(suite)],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    charged = {m.group(2): float(m.group(1))
               for m in re.finditer(r"^\s+([\d.]+)\s+\S*::(test_\w+)$", res.stdout, re.M)}
    assert set(charged) == {"test_a_computes", "test_b_waits"}, res.stdout
    # 3 s of CPU on one core (the sampler's one-second grain and the machine's other work aside)
    assert charged["test_a_computes"] >= 2.0, res.stdout
    assert charged["test_b_waits"] < charged["test_a_computes"], res.stdout
    assert re.search(r"machine busy \d+ core-s, idle \d+ core-s", res.stdout), res.stdout
