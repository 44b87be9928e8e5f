"""Where the test suite's CPU goes: busy core-seconds per test and per file, not wall seconds.

On a machine the suite saturates (2 cores, three xdist workers), `--durations` ranks tests by how long they
waited, not by what they cost: a test that waits on a server beside two busy ones looks slow and costs
little. What shortens the README's test command is less CPU, so this script runs pytest (the README's
arguments unless others are given) with a small plugin that records, per worker, the test it is running, and
samples the whole machine's busy time (/proc/stat, every process: Ray clusters, vLLM servers and
subprocesses a test starts are all counted) every second. Each second's busy time is split equally among
the tests running in it; the time no test ran (collection, start-up, the end) is shown as one line.

The split is an estimate: a test that only waits beside a busy one is charged half of that second. Summed
over a file or a run it is close; per test, read it as "this much CPU happened while it ran". Linux only.

    PYTHONPATH=$PWD .venv/bin/python bench/bench_suite_cpu.py [--top 40] [-- PYTEST_ARGS ...]

Prints the wall time, the machine's busy core-seconds (and idle ones: a gap there is a scheduling tail),
then the files and the tests costing most.
"""

from __future__ import annotations

import argparse
import collections
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README_ARGS = ["-q", "-n", "3", "--dist", "loadfile", "--no-loadscope-reorder", "--durations=25"]
NO_TEST = "(no test running: collection, start-up, teardown)"

# The plugin pytest loads in every worker (`-p suite_cpu_plugin`, from a temp dir on PYTHONPATH): it writes
# the running test's node id to one file per worker process and empties it when the test ends.
PLUGIN = '''
import os
import pytest

_DIR = os.environ["SUITE_CPU_DIR"]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    path = os.path.join(_DIR, str(os.getpid()))
    with open(path, "w") as f:
        f.write(item.nodeid)
    yield
    with open(path, "w") as f:
        f.write("")
'''


def busy_idle_ticks() -> tuple[int, int]:
    with open("/proc/stat") as f:
        v = list(map(int, f.readline().split()[1:]))
    idle = v[3] + v[4]  # idle + iowait
    return sum(v[:8]) - idle, idle


def running(state: Path) -> list[str]:
    out = []
    for p in state.iterdir():
        try:
            nodeid = p.read_text().strip()
        except OSError:
            continue
        if nodeid:
            out.append(nodeid)
    return out


def sample(state: Path, stop: threading.Event, acc: collections.Counter, every_s: float = 1.0) -> None:
    clk = os.sysconf("SC_CLK_TCK")
    prev, _ = busy_idle_ticks()
    while not stop.wait(every_s):
        now, _ = busy_idle_ticks()
        tests = running(state) or [NO_TEST]
        share = (now - prev) / clk / len(tests)
        for t in tests:
            acc[t] += share
        prev = now


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--top", type=int, default=40, help="tests to list (files: half as many)")
    ap.add_argument("pytest_args", nargs="*", help="after --: pytest's arguments (default: the README's)")
    args = ap.parse_args()
    if not Path("/proc/stat").is_file():
        sys.exit("bench_suite_cpu: needs Linux's /proc/stat")
    pytest_args = args.pytest_args or README_ARGS
    acc: collections.Counter = collections.Counter()
    clk = os.sysconf("SC_CLK_TCK")
    with tempfile.TemporaryDirectory(prefix="suite-cpu-") as tmp:
        plugin_dir, state = Path(tmp, "plugin"), Path(tmp, "state")
        plugin_dir.mkdir()
        state.mkdir()
        (plugin_dir / "suite_cpu_plugin.py").write_text(PLUGIN)
        env = {**os.environ, "SUITE_CPU_DIR": str(state),
               "PYTHONPATH": os.pathsep.join(filter(None, [str(plugin_dir), os.environ.get("PYTHONPATH")]))}
        stop = threading.Event()
        sampler = threading.Thread(target=sample, args=(state, stop, acc), daemon=True)
        busy0, idle0 = busy_idle_ticks()
        t0 = time.monotonic()
        sampler.start()
        rc = subprocess.call([sys.executable, "-m", "pytest", "-p", "suite_cpu_plugin", *pytest_args], cwd=ROOT,
                             env=env)
        stop.set()
        sampler.join()
        wall = time.monotonic() - t0
        busy1, idle1 = busy_idle_ticks()
    busy, idle = (busy1 - busy0) / clk, (idle1 - idle0) / clk
    print(f"\npytest exit {rc}; wall {wall:.0f} s; machine busy {busy:.0f} core-s, idle {idle:.0f} core-s "
          f"({os.cpu_count()} cores)")
    files: collections.Counter = collections.Counter()
    for t, v in acc.items():
        files[t.split("::")[0]] += v
    print(f"\nbusy core-seconds by file (top {args.top // 2}):")
    for f, v in files.most_common(args.top // 2):
        print(f"{v:8.1f}  {f}")
    print(f"\nbusy core-seconds by test (top {args.top}):")
    for t, v in acc.most_common(args.top):
        print(f"{v:8.1f}  {t}")
    sys.exit(rc)


if __name__ == "__main__":
    main()
