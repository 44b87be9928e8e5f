"""A control group per sandboxed run: the kernel's bound on the memory, CPU time and processes of the program
as a whole (every process it forks), read back by the supervisor after the run.

The group is made under the cgroup the calling process is already in (a child of it, so whatever bounds the
caller has still hold) in each hierarchy that has the controller: cgroup v1 (`memory`, `cpu`, `cpuacct`,
`pids`, each mounted on its own or together) or cgroup v2 (one hierarchy, where the parent delegates
`memory`, `cpu` and `pids`). Only root can usually do this; elsewhere `create` returns None with the reason,
and the sandbox falls back to per-process rlimits (docs/sandbox.md, "Totals").

Limits written: the memory of the whole group (anonymous memory, page cache, tmpfs and shared memory pages all
count) at `memory_mb`, the number of processes and threads at `max_processes`, and a CPU bandwidth of one
CPU (the group's processes together never run faster than one core, so the CPU they spend is at most the
wall time). The CPU time they spend together is read by the supervisor while the run goes on
(`cpu_s`), which stops the run past the limit: no kernel knob bounds a group's total CPU time.
"""

from __future__ import annotations

import functools
import os
import secrets
import signal
import time
from pathlib import Path

_V1_CONTROLLERS = ("memory", "cpu", "cpuacct", "pids")
_V2_CONTROLLERS = ("memory", "cpu", "pids")
_PERIOD_US = 100_000
_PREFIX = "nphe4v-sandbox-"


@functools.cache
def _mounts() -> tuple[dict[str, str], str | None]:
    """v1 controller -> mount point, and the v2 mount point (None when there is none)."""
    v1: dict[str, str] = {}
    v2 = None
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return v1, v2
    for line in lines:
        pre, _, post = line.partition(" - ")
        fields, after = pre.split(), post.split()
        if len(fields) < 5 or len(after) < 3:
            continue
        point = fields[4].replace("\\040", " ")
        if after[0] == "cgroup2" and v2 is None:
            v2 = point
        elif after[0] == "cgroup":
            for opt in after[2].split(","):
                if opt in _V1_CONTROLLERS:
                    v1.setdefault(opt, point)
    return v1, v2


def _own_paths() -> dict[str, str]:
    """hierarchy key ("memory", ..., or "" for v2) -> this process's cgroup path in it."""
    out: dict[str, str] = {}
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return out
    for line in lines:
        _, names, path = line.split(":", 2)
        for name in names.split(",") if names else [""]:
            out[name] = path
    return out


def _write(path: Path, value: str) -> None:
    path.write_text(value)


class RunCgroup:
    """The groups of one run (one directory per v1 hierarchy, or one v2 directory)."""

    def __init__(self, dirs: dict[str, Path], v2: bool) -> None:
        self.dirs = dirs  # controller -> directory ("unified" for v2)
        self.v2 = v2

    # -------------------------------------------------------------------- made, joined, removed

    @classmethod
    def create(cls, memory_mb: int, max_processes: int) -> tuple[RunCgroup | None, str]:
        """The run's group with its limits, or (None, why not)."""
        if os.geteuid() != 0:
            return None, "not root: a cgroup of our own needs root (or a delegated cgroup v2 subtree)"
        v1, v2 = _mounts()
        own = _own_paths()
        # the creator's pid in the name: a group left by a scorer that was SIGKILLed is swept by the next one
        name = f"{_PREFIX}{os.getpid()}-{secrets.token_hex(4)}"
        made: dict[str, Path] = {}
        try:
            if all(c in v1 for c in _V1_CONTROLLERS):
                group = cls({}, v2=False)
                for c in _V1_CONTROLLERS:
                    parent = Path(v1[c] + own.get(c, "/"))
                    d = parent / name
                    if d in made.values():  # co-mounted (cpu,cpuacct): one directory serves both
                        made[c] = d
                        continue
                    d.mkdir()
                    made[c] = d
                group.dirs = made
            elif v2 is not None:
                parent = Path(v2 + own.get("", "/"))
                ctl = (parent / "cgroup.subtree_control").read_text().split()
                missing = [c for c in _V2_CONTROLLERS if c not in ctl]
                if missing:
                    try:
                        _write(parent / "cgroup.subtree_control", " ".join(f"+{c}" for c in missing))
                    except OSError as e:
                        return None, (f"cgroup v2: the controllers {', '.join(missing)} are not delegated to "
                                      f"{parent} ({e.strerror})")
                d = parent / name
                d.mkdir()
                made["unified"] = d
                group = cls(made, v2=True)
            else:
                return None, "no cgroup hierarchy with the memory, cpu and pids controllers is mounted"
            group._limit(memory_mb, max_processes)
            _sweep(tuple(sorted({str(d.parent) for d in made.values()})))
            return group, ""
        except OSError as e:
            RunCgroup(made, v2=v2 is not None and "unified" in made).remove()
            return None, f"a cgroup could not be made here ({e.strerror}: {e.filename})"

    def _limit(self, memory_mb: int, max_processes: int) -> None:
        mem = memory_mb * 1024 * 1024
        if self.v2:
            d = self.dirs["unified"]
            _write(d / "memory.max", str(mem))
            if (d / "memory.swap.max").exists():
                _write(d / "memory.swap.max", "0")
            _write(d / "pids.max", str(max_processes))
            _write(d / "cpu.max", f"{_PERIOD_US} {_PERIOD_US}")
            return
        m = self.dirs["memory"]
        _write(m / "memory.limit_in_bytes", str(mem))
        if (m / "memory.memsw.limit_in_bytes").exists():  # swap too, where swap is accounted
            _write(m / "memory.memsw.limit_in_bytes", str(mem))
        _write(self.dirs["pids"] / "pids.max", str(max_processes))
        _write(self.dirs["cpu"] / "cpu.cfs_period_us", str(_PERIOD_US))
        _write(self.dirs["cpu"] / "cpu.cfs_quota_us", str(_PERIOD_US))

    def procs_files(self) -> list[str]:
        """The files a process writes "0" to, to join the group (every hierarchy)."""
        return sorted({str(d / "cgroup.procs") for d in self.dirs.values()})

    def remove(self) -> None:
        """Kill what is left in the group, then remove it (the kernel reaps killed processes asynchronously:
        a bounded wait for the group to empty)."""
        deadline = time.monotonic() + 5
        for d in set(self.dirs.values()):
            while d.exists():
                for pid in self._pids(d):
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                try:
                    d.rmdir()
                except FileNotFoundError:
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        break  # left behind: named in no result, harmless (empty soon), removed by nobody
                    time.sleep(0.005)

    @staticmethod
    def _pids(d: Path) -> list[int]:
        try:
            return [int(p) for p in (d / "cgroup.procs").read_text().split()]
        except (OSError, ValueError):
            return []

    # -------------------------------------------------------------------- what the kernel counted

    def cpu_s(self) -> float:
        """CPU time spent by every process of the group so far (seconds)."""
        try:
            if self.v2:
                for line in (self.dirs["unified"] / "cpu.stat").read_text().splitlines():
                    if line.startswith("usage_usec "):
                        return int(line.split()[1]) / 1e6
                return 0.0
            return int((self.dirs["cpuacct"] / "cpuacct.usage").read_text()) / 1e9
        except (OSError, ValueError):
            return 0.0

    def _counter(self, controller: str, file: str, key: str) -> int:
        try:
            for line in (self.dirs[controller] / file).read_text().splitlines():
                k, _, v = line.partition(" ")
                if k == key:
                    return int(v)
        except (OSError, ValueError, KeyError):
            pass
        return 0

    def oom_kills(self) -> int:
        """Processes the kernel killed because the group reached its memory limit."""
        if self.v2:
            return self._counter("unified", "memory.events", "oom_kill")
        return self._counter("memory", "memory.oom_control", "oom_kill")

    def memory_limit_hits(self) -> int:
        """Times an allocation of the group met the memory limit (v1: failcnt; v2: memory.events max)."""
        if self.v2:
            return self._counter("unified", "memory.events", "max")
        try:
            return int((self.dirs["memory"] / "memory.failcnt").read_text())
        except (OSError, ValueError):
            return 0

    def forks_refused(self) -> int:
        """Forks and threads the kernel refused at the group's process limit."""
        return self._counter("unified" if self.v2 else "pids", "pids.events", "max")

    def peak_mb(self) -> float | None:
        f = (self.dirs["unified"] / "memory.peak") if self.v2 else (self.dirs["memory"] / "memory.max_usage_in_bytes")
        try:
            return int(f.read_text()) / 2**20
        except (OSError, ValueError):
            return None


@functools.cache
def _sweep(parents: tuple[str, ...]) -> None:
    """Once per process: remove the groups of scorers that died without removing theirs (their pid is gone)."""
    for parent in parents:
        try:
            names = [n for n in os.listdir(parent) if n.startswith(_PREFIX)]
        except OSError:
            continue
        for n in names:
            pid = n[len(_PREFIX):].partition("-")[0]
            if not pid.isdigit() or os.path.exists(f"/proc/{pid}"):
                continue
            d = Path(parent) / n
            if not RunCgroup._pids(d):  # empty: its processes are gone too (never kill from here)
                try:
                    d.rmdir()
                except OSError:
                    pass


@functools.cache
def probe() -> str:
    """'' when a run's cgroup can be made here, else the reason (checked once per process)."""
    group, why = RunCgroup.create(64, 4)
    if group is not None:
        group.remove()
    return why
