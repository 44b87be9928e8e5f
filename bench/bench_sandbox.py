"""Per-program cost of the sandbox for model-written programs (evalcore.sandbox).

Prints the median and minimum wall time, in ms, and the median CPU time (this process and its children:
the sandbox's setup, both interpreters, the supervisor's polling), of: a bare `python -I -S -c pass` (the floor: the sandbox
starts two interpreters), `run_program("pass")` in strict and rlimits-only mode, and a program that
imports networkx (what a PoT program does). Then the time limit under load: a networkx shortest-path program
sharing one core with 0, 2, 4 and 8 busy loops (each in its own session, as other work would be), with its
wall time, its CPU time and its verdict under `timeout_s=1` (a CPU-time limit), beside the verdict a
wall-clock limit of the same length would have given. Last, the bounds on a program's processes taken together
(issue 32): a chain of forked children spending 4 CPU s under a 1 s limit, the memfd hoarder (3 processes x 40 x
16 MiB under memory_mb 512) and two processes of 150 MB under memory_mb 256, each with the interpreter's layers
off (no audit hook, ctypes importable): verdict, the CPU s and peak memory the run's cgroup counted. Then what
reached past the program to the host before audit 2 (docs/sandbox.md): the scorer's CPU under a stderr flood,
the host memory held by AF_UNIX socket buffers without a cgroup and by POSIX record locks (which no cgroup
charges), the host's AIO contexts and dirty pages. Usage:

    PYTHONPATH=$PWD python bench/bench_sandbox.py [--runs 20] [--load-runs 3] [--no-load]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from evalcore.sandbox import SandboxLimits, check_isolation, run_program, totals_bound
from evalcore.sandbox.layout import python

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from cpu_load import busy_loops_on_one_core  # noqa: E402  (tests/cpu_load.py: the sandbox test's load too)


def _cpu() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _time(fn, runs: int) -> tuple[float, float, float]:
    """Median and minimum wall ms, median CPU ms (this process and every child it reaped)."""
    times, cpus = [], []
    for _ in range(runs):
        t, c = time.perf_counter(), _cpu()
        fn()
        times.append(time.perf_counter() - t)
        cpus.append(_cpu() - c)
    return statistics.median(times) * 1000, min(times) * 1000, statistics.median(cpus) * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--load-runs", type=int, default=3)
    ap.add_argument("--no-load", action="store_true", help="skip the runs beside busy loops")
    args = ap.parse_args()
    check_isolation("strict")
    py = python()
    cases = {
        "bare python -I -S -c pass": lambda: subprocess.run([py, "-I", "-S", "-c", "pass"], check=True),
        "strict: pass": lambda: run_program("pass"),
        "rlimits-only: pass": lambda: run_program("pass", isolation="rlimits-only"),
        "strict: import networkx": lambda: run_program("import networkx"),
    }
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; {args.runs} runs each")
    for name, fn in cases.items():
        med, low, cpu_ms = _time(fn, args.runs)
        print(f"{name:28s} wall median {med:7.0f} ms   min {low:7.0f} ms   CPU median {cpu_ms:6.0f} ms")
    if not args.no_load:
        under_load(args.load_runs)
    whole_program()
    host_reach()


PROGRAM = ("import networkx as nx\nG = nx.grid_2d_graph(60, 60)\n"
           "print(nx.shortest_path_length(G, (0, 0), (59, 59)))\n")


def under_load(runs: int) -> None:
    """Busy loops share the sandbox's core: the wall clock stretches, the CPU time and the verdict do not."""
    limits = SandboxLimits(timeout_s=1)
    print(f"\nunder load, one core, timeout_s={limits.timeout_s:g} (CPU); {runs} runs each")
    for k in (0, 2, 4, 8):
        rows = []
        with busy_loops_on_one_core(k):
            for _ in range(runs):
                t0 = resource.getrusage(resource.RUSAGE_CHILDREN)
                r = run_program(PROGRAM, limits=limits)
                t1 = resource.getrusage(resource.RUSAGE_CHILDREN)
                rows.append((r.wall_s, t1.ru_utime + t1.ru_stime - t0.ru_utime - t0.ru_stime, r.error or "ok"))
        wall = statistics.median(w for w, _, _ in rows)
        cpu_s = statistics.median(c for _, c, _ in rows)
        verdicts = ",".join(sorted({v for _, _, v in rows}))
        by_wall = "timeout" if max(w for w, _, _ in rows) > limits.timeout_s else "ok"
        print(f"{k} busy loops: wall median {wall:5.2f} s  CPU median {cpu_s:4.2f} s  verdict {verdicts:8s} "
              f"(a {limits.timeout_s:g} s wall clock: {by_wall})")


FORK_CHAIN = ("import os, time\nfor _ in range(5):\n    pid = os.fork()\n    if pid == 0:\n"
              "        t = time.process_time()\n        while time.process_time() - t < 0.8:\n            pass\n"
              "        os._exit(0)\n    os.waitpid(pid, 0)\nprint('done')\n")
MEMFD = ("import os\npids = [os.fork() for _ in range(2)]\nfds = []\nfor _ in range(40):\n"
         "    fd = os.memfd_create('hoard')\n    os.write(fd, b'x' * 2**24)\n    fds.append(fd)\nprint('held')\n")
TWO_BLOCKS = ("import os\nrelease_r, release_w = os.pipe()\nkids = []\nfor _ in range(2):\n"
              "    ready_r, ready_w = os.pipe()\n    pid = os.fork()\n    if pid == 0:\n        os.close(release_w)\n"
              "        block = b'x' * (150 * 2**20)\n        os.write(ready_w, b'1')\n        os.read(release_r, 1)\n"
              "        os._exit(0)\n    kids.append(pid)\n    os.close(ready_w)\n    os.read(ready_r, 1)\n"
              "os.close(release_w)\nends = [os.waitpid(p, 0)[1] for p in kids]\nassert ends == [0, 0], ends\n")


def whole_program() -> None:
    """The kernel's bounds on all of a program's processes together, with the interpreter's layers off."""
    print(f"\nwhole program: {totals_bound()}")
    for name, src, limits in (("fork chain, 5 x 0.8 CPU s", FORK_CHAIN, SandboxLimits(timeout_s=1)),
                              ("memfd 3 x 40 x 16 MiB", MEMFD, SandboxLimits(timeout_s=5, memory_mb=512)),
                              ("2 processes x 150 MB", TWO_BLOCKS, SandboxLimits(timeout_s=5, memory_mb=256))):
        r = run_program(src, limits=limits, audit_hook=False, hide_extensions=False)
        print(f"{name:28s} limits {limits.timeout_s:g} CPU s / {limits.memory_mb} MB: verdict {r.error or 'ok'}"
              f" (CPU {r.cpu_s} s, peak {r.memory_peak_mb} MB, wall {r.wall_s:.2f} s): {r.detail[:70]}")


SOCKETS = ("import os, socket, select\nfor _ in range(2):\n    if os.fork() == 0:\n        break\n"
           "queued, held, why = 0, [], ''\ntry:\n    while True:\n        a, b = socket.socketpair()\n"
           "        held += [a, b]\n        a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 30)\n"
           "        a.setblocking(False)\n        try:\n            while True:\n"
           "                queued += a.send(b'x' * 65536)\n        except BlockingIOError:\n            pass\n"
           "except OSError as e:\n    why = e.strerror\n"
           "print(queued >> 20, 'MiB queued', why, flush=True)\nselect.select([], [], [], 2)\n")
LOCKS = ("import os, fcntl, select\nme = 0\nfor i in range(15):\n    if os.fork() == 0:\n        me = i + 1\n"
         "        break\nheld, fds = 0, []\ntry:\n    for f in range(60):\n"
         "        fds.append(os.open(f'/tmp/l{me}_{f}', os.O_CREAT | os.O_RDWR))\n        for k in range(1999, -1, -1):\n"
         "            fcntl.lockf(fds[-1], fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 2 * k)\n            held += 1\n"
         "except OSError as e:\n    print(e.strerror, flush=True)\nselect.select([], [], [], 2)\n")
AIO = ("import ctypes, select\nlibc = ctypes.CDLL(None, use_errno=True)\nheld = 0\nfor n in (16384, 1024, 64, 1):\n"
       "    while libc.syscall(206, n, ctypes.byref(ctypes.c_ulong(0))) == 0:\n        held += n\n"
       "print(held, 'AIO events held', flush=True)\nselect.select([], [], [], 2)\n")


def _meminfo(key: str) -> int:
    with open("/proc/meminfo") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(key + ":"))


def _during(run, probe) -> tuple[object, object]:
    """Run the sandbox in a thread; `probe()` on the host every 0.05 s while it runs (the last and the max)."""
    import threading

    out: dict = {}
    t = threading.Thread(target=lambda: out.setdefault("r", run()))
    t.start()
    seen = []
    while t.is_alive():
        seen.append(probe())
        time.sleep(0.05)
    t.join()
    return out["r"], seen


def host_reach() -> None:
    """What reached past the program to the host before audit 2, each with the interpreter's layers off."""
    import ctypes
    import shutil

    from evalcore.sandbox.launch import run_once

    print("\nhost reach (audit 2)")
    kernel = {"audit_hook": False, "hide_extensions": False}
    flood = "import os\nchunk = b'e' * 65536\nwhile True:\n    os.write(2, chunk)\n"
    c = time.process_time()
    r = run_program(flood, limits=SandboxLimits(timeout_s=3), **kernel)
    print(f"stderr flood, timeout_s 3: verdict {r.error} ({r.detail[:60]}), wall {r.wall_s:.1f} s, "
          f"scorer CPU {time.process_time() - c:.2f} s")
    base = _meminfo("MemTotal") - _meminfo("MemAvailable")
    r, used = _during(lambda: run_once(SOCKETS, "", SandboxLimits(timeout_s=5, memory_mb=512), "strict",
                                       shutil.which("unshare"), cgroup=False, **kernel),
                      lambda: _meminfo("MemTotal") - _meminfo("MemAvailable") - base)
    print(f"AF_UNIX buffers, 3 processes, no cgroup, memory_mb 512: verdict {r.error or 'ok'}, host memory "
          f"+{max(used, default=0) >> 10} MiB at most; {r.stdout.split(chr(10))[0][:60]}")
    base = _meminfo("Slab")
    r, slab = _during(lambda: run_program(LOCKS, limits=SandboxLimits(timeout_s=10, memory_mb=512), **kernel),
                      lambda: _meminfo("Slab") - base)
    print(f"POSIX locks, 16 processes x 60 files x 2,000, memory_mb 512: verdict {r.error or 'ok'}, host slab "
          f"+{max(slab, default=0) >> 10} MiB at most, the cgroup's peak {r.memory_peak_mb} MB")
    libc = ctypes.CDLL(None, use_errno=True)

    def host_io_setup() -> int:
        ctx = ctypes.c_ulong(0)
        if libc.syscall(206, 128, ctypes.byref(ctx)) != 0:
            return ctypes.get_errno()
        libc.syscall(207, ctx)
        return 0

    r, errs = _during(lambda: run_program(AIO, limits=SandboxLimits(timeout_s=5), **kernel), host_io_setup)
    print(f"AIO contexts: {r.stdout.strip() or r.detail[:60]}; the host's io_setup(128) failed in "
          f"{sum(1 for e in errs if e)} of {len(errs)} tries during the run")
    scratch = Path(tempfile_dir()) / "bench-sandbox-dirty.bin"
    try:
        scratch.write_bytes(os.urandom(2**20) * 100)
        before = _meminfo("Dirty")
        run_program("import os\nos.sync()", limits=SandboxLimits(timeout_s=5), **kernel)
        print(f"os.sync(): host dirty pages {before >> 10} MiB before, {_meminfo('Dirty') >> 10} MiB after")
    finally:
        scratch.unlink(missing_ok=True)


def tempfile_dir() -> str:
    """A folder on the disk (not a tmpfs, whose pages are never dirty), for the dirty-page probe."""
    return str(Path(__file__).resolve().parent)


if __name__ == "__main__":
    main()
