"""A sandbox for model-written Python programs (GraphVerse's program-of-thought answers).

`run_program(source)` runs one program and returns a `SandboxResult`: what it printed (capped) and, when
it failed, one of `POT_ERRORS` with a one-line reason. It never raises for anything the program does.
`check_isolation()` raises `SandboxUnavailable` (one line) when the machine cannot give the isolation
asked for. The threat model, the layers and the limits are in docs/sandbox.md; in short, in "strict"
mode the program runs

* in new mount, pid, network, IPC, UTS and cgroup namespaces (util-linux `unshare`; plus a user namespace
  when not root), in a root that holds only the Python installation, the C library, networkx, its input
  and a fresh size-limited /tmp: the host's files (run folders, datasets, ~/.ray, /etc) do not exist;
* with no network device but a loopback that is down, so nothing, 127.0.0.1 included, is reachable;
* as a fresh unprivileged uid (root) or with no capabilities (user namespace), with no_new_privs;
* under rlimits (address space, CPU time, processes, file size, open files, no core), a wall-clock
  backstop for a program that waits, after which the whole namespace is killed, and an output cap read
  incrementally;
* under a seccomp filter (libseccomp) refusing what a graph program never needs (shared memory, memfd,
  namespaces, mounts, io_uring, perf_event_open, bpf, ptrace, keyrings, host facts such as sysinfo);
* in a cgroup of its own where one can be made (root): memory, processes and CPU of all its processes
  together, bounded by the kernel and read back by the supervisor;
* in a time namespace (the host's uptime is not visible) and with its own host name;
* with an environment built from nothing (no API keys) and `python -I -S -B` plus an audit hook that
  classifies attempts (forbidden_import, filesystem, network, signal) and refuses escape hatches.

How the program ended comes from the supervisor only (init's wait4 on a pipe the program never holds, the
cgroup's counters, the host's clocks and output cap); what the program writes is data.

"rlimits-only" is the weaker mode a user opts into by name where namespaces are unavailable: the same
limits, environment and audit hook, but the host's filesystem and network stay reachable.

Modules: `models` (the API's types), `layout` (what the sandbox is built from), `cgroup` (the run's control
group), `seccomp_filter` (the system calls refused), `launch` (one run and its classification);
`init_script` and `bootstrap_script` run in separate interpreters and import only the standard library.
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import sys

from evalcore.sandbox import cgroup, seccomp_filter
from evalcore.sandbox.launch import run_once
from evalcore.sandbox.models import (
    DEFAULT_LIMITS,
    POT_ERRORS,
    WEAKER_NOTE,
    Isolation,
    SandboxLimits,
    SandboxResult,
    SandboxUnavailable,
)

__all__ = ["DEFAULT_LIMITS", "POT_ERRORS", "WEAKER_NOTE", "Isolation", "SandboxLimits", "SandboxResult",
           "SandboxUnavailable", "check_isolation", "run_program", "totals_bound"]

log = logging.getLogger(__name__)
_OPT_IN = "or opt into the weaker mode by name: isolation='rlimits-only'"


def check_isolation(isolation: Isolation = "strict", *, tool_path: str | None = None) -> None:
    """Raise SandboxUnavailable (one line) unless `isolation` can be given here.

    `tool_path` is the PATH searched for `unshare` (default: the process's PATH, then the usual system
    folders). Strict mode is probed once per process by building a real sandbox and running `pass` in it.
    """
    if not sys.platform.startswith("linux"):
        raise SandboxUnavailable(f"the sandbox needs Linux (rlimits, namespaces); this is {sys.platform}")
    if isolation == "rlimits-only":
        return
    if isolation != "strict":
        raise SandboxUnavailable(f"unknown isolation {isolation!r}: use 'strict' or 'rlimits-only'")
    unshare = _find_unshare(tool_path)
    if unshare is None:
        raise SandboxUnavailable(
            "strict sandbox unavailable: `unshare` (util-linux) was not found on PATH; install util-linux", _OPT_IN)
    why = seccomp_filter.check()
    if why:
        raise SandboxUnavailable(f"strict sandbox unavailable: {why}", _OPT_IN)
    _probe(unshare, os.geteuid())


def totals_bound(limits: SandboxLimits = DEFAULT_LIMITS) -> str:
    """How the memory and CPU of a program's processes taken together are bounded on this machine."""
    why = cgroup.probe()
    if not why:
        return (f"cgroup: {limits.memory_mb} MB of memory, {limits.max_processes} processes and "
                f"{limits.timeout_s:g} CPU s for all the program's processes together")
    return (f"no cgroup ({why}): in strict mode init sums the CPU time and proportional memory of the "
            f"program's processes every 0.1 s and ends the run past {limits.timeout_s:g} CPU s or "
            f"{limits.memory_mb} MB; besides, each process has {limits.memory_mb} MB of address space and "
            f"{limits.cpu_limit_s} CPU s, at most {limits.max_processes} processes")


def run_program(source: str, *, stdin: str = "", limits: SandboxLimits = DEFAULT_LIMITS,
                isolation: Isolation = "strict", tool_path: str | None = None,
                audit_hook: bool = True, hide_extensions: bool = True) -> SandboxResult:
    """Run `source` in the sandbox; every failure of the program is a classified SandboxResult.

    Raises SandboxUnavailable only for what is not the program's doing: the isolation is missing, or the
    sandbox of this run could not be built (the caller records that as an infrastructure error).

    `audit_hook=False` leaves out the interpreter-level layer, so tests can show that the kernel layer
    alone stops each attack (the error is then classified from what the kernel answered: a missing
    file, an unreachable network, a module that cannot load). `hide_extensions=False` also leaves `_ctypes`
    and the other escape-hatch extensions importable: with both off the program can make any system call,
    as code that got past the interpreter (a crafted code object, say) could, and only the kernel's layers
    (namespaces, seccomp, cgroup, rlimits, no capabilities, noexec) stand. Callers keep the defaults.
    """
    check_isolation(isolation, tool_path=tool_path)
    unshare = _find_unshare(tool_path) if isolation == "strict" else None
    if cgroup.probe():
        _warn_no_cgroup(cgroup.probe())
    result = run_once(source, stdin, limits, isolation, unshare, audit_hook, hide_extensions,
                      cgroup=not cgroup.probe())
    if isolation == "rlimits-only":
        _warn_weaker()
    return result


@functools.cache
def _warn_no_cgroup(why: str) -> None:
    log.warning("sandbox: no cgroup for the program's processes together (%s); per-process limits only", why)


@functools.cache
def _warn_weaker() -> None:
    log.warning("sandbox: %s", WEAKER_NOTE)


def _find_unshare(tool_path: str | None) -> str | None:
    if tool_path is None:
        tool_path = os.pathsep.join([os.environ.get("PATH", ""), "/usr/bin", "/bin", "/usr/sbin", "/sbin"])
    return shutil.which("unshare", path=tool_path)


@functools.cache
def _probe(unshare: str, euid: int) -> None:  # noqa: ARG001 - euid keys the cache
    try:
        result = run_once("pass", "", SandboxLimits(timeout_s=30), "strict", unshare)
    except SandboxUnavailable as e:
        raise SandboxUnavailable(f"strict sandbox unavailable: {e}", _OPT_IN) from None
    if not result.ok:
        raise SandboxUnavailable(f"strict sandbox unavailable: a trivial program failed "
                                 f"({result.error}: {result.detail})", _OPT_IN)
