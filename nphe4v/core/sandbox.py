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
* under rlimits (address space, CPU, processes, file size, open files, no core), a wall-clock timeout
  after which the whole namespace is killed, and an output cap read incrementally;
* with an environment built from nothing (no API keys) and `python -I -S -B` plus an audit hook that
  classifies attempts (forbidden_import, filesystem, network, signal) and refuses escape hatches.

"rlimits-only" is the weaker mode a user opts into by name where namespaces are unavailable: the same
limits, environment and audit hook, but the host's filesystem and network stay reachable.

The two helper scripts (`_sandbox_init.py`, `_sandbox_bootstrap.py`) run in separate interpreters and
are never imported.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import logging
import math
import os
import re
import secrets
import selectors
import shutil
import signal
import struct
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

log = logging.getLogger(__name__)

Isolation = Literal["strict", "rlimits-only"]

POT_ERRORS = ("timeout", "memory", "output_limit", "forbidden_import", "filesystem", "network",
              "process_limit", "signal", "syntax_error", "runtime_error", "killed")

# Refused by the audit hook: ways to leave the interpreter's checks (raw memory and syscalls, programs,
# interpreters without the hook). The kernel boundary holds without this list.
FORBIDDEN_MODULES = ("ctypes", "_ctypes", "cffi", "subprocess", "_posixsubprocess", "multiprocessing",
                     "_multiprocessing", "_posixshmem", "pty", "_xxsubinterpreters", "_xxinterpchannels",
                     "_testcapi", "_testinternalcapi", "_testbuffer", "_testmultiphase", "_ctypes_test",
                     "_testimportmultiple", "_testclinic", "_xxtestfuzz")
# Their extension files are also covered by an empty file inside the strict sandbox.
_HIDDEN_EXTENSIONS = ("_ctypes", "_ctypes_test", "_posixsubprocess", "_multiprocessing", "_posixshmem",
                      "_xxsubinterpreters", "_xxinterpchannels", "_testcapi", "_testinternalcapi",
                      "_testbuffer", "_testmultiphase", "_testimportmultiple", "_testclinic", "_xxtestfuzz")

WEAKER_NOTE = ("rlimits-only: no namespaces, so the program can read the user's files and reach the "
               "network; only rlimits, a cleared environment and the audit hook apply")
_OPT_IN = "or opt into the weaker mode by name: isolation='rlimits-only'"
_HERE = Path(__file__).resolve().parent
_INIT = _HERE / "_sandbox_init.py"
_BOOTSTRAP = _HERE / "_sandbox_bootstrap.py"
_RUN_UIDS = (2_000_000_000, 100_000_000)  # fresh unprivileged uids for strict runs as root: base, span


class SandboxUnavailable(Exception):
    """The isolation asked for is missing on this machine; str() is one line naming it and the opt-in."""


class SandboxLimits(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    timeout_s: float = Field(10.0, gt=0)  # wall clock, setup included; RLIMIT_CPU backs it
    memory_mb: int = Field(512, ge=64)  # RLIMIT_AS of each process
    max_output_bytes: int = Field(1_000_000, gt=0)  # stdout; the run is stopped past it
    max_processes: int = Field(16, ge=1)  # RLIMIT_NPROC (the program counts as one)
    max_file_mb: int = Field(16, ge=1)  # RLIMIT_FSIZE: largest file the program may write
    disk_mb: int = Field(64, ge=1)  # size of the sandbox's /tmp (strict mode)
    max_open_files: int = Field(64, ge=16)  # RLIMIT_NOFILE


class SandboxResult(BaseModel):
    ok: bool  # True iff the program exited 0 within limits
    stdout: str  # truncated to max_output_bytes (decoded utf-8, errors="replace")
    error: str | None  # classified pot_error reason, one of POT_ERRORS, None when ok
    detail: str  # short human-readable explanation (one line, no secrets, no host paths)
    returncode: int | None
    wall_s: float
    isolation: Isolation = "strict"
    note: str = ""  # WEAKER_NOTE when the run was not isolated by namespaces


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
            "strict sandbox unavailable: `unshare` (util-linux) was not found on PATH; install util-linux, "
            + _OPT_IN)
    _probe(unshare, os.geteuid())


DEFAULT_LIMITS = SandboxLimits()


def run_program(source: str, *, stdin: str = "", limits: SandboxLimits = DEFAULT_LIMITS,
                isolation: Isolation = "strict", tool_path: str | None = None,
                audit_hook: bool = True) -> SandboxResult:
    """Run `source` in the sandbox; every failure of the program is a classified SandboxResult.

    `audit_hook=False` leaves out the interpreter-level layer, so tests can show that the kernel layer
    alone stops each attack (the program then fails with a plain runtime_error instead of a classified
    attempt). Callers keep the default.
    """
    check_isolation(isolation, tool_path=tool_path)
    unshare = _find_unshare(tool_path) if isolation == "strict" else None
    result = _launch(source, stdin, limits, isolation, unshare, audit_hook)
    if isolation == "rlimits-only":
        _warn_weaker()
    return result


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
        result = _launch("pass", "", SandboxLimits(timeout_s=30), "strict", unshare)
    except SandboxUnavailable as e:
        raise SandboxUnavailable(f"strict sandbox unavailable: {e}; {_OPT_IN}") from None
    if not result.ok:
        raise SandboxUnavailable(f"strict sandbox unavailable: a trivial program failed "
                                 f"({result.error}: {result.detail}); {_OPT_IN}")


# ---------------------------------------------------------------- what the sandbox is built from


def _python() -> str:
    exe = getattr(sys, "_base_executable", None) or sys.executable
    return os.path.realpath(exe)


def _stdlib() -> str:
    return os.path.realpath(sysconfig.get_paths(vars={"base": sys.base_prefix,
                                                      "platbase": sys.base_prefix})["stdlib"])


def _hidden_dirs() -> list[str]:
    std = _stdlib()
    return [os.path.join(std, "site-packages"), os.path.join(std, "dist-packages")]


def _hidden_files() -> list[str]:
    dyn = os.path.join(_stdlib(), "lib-dynload")
    if not os.path.isdir(dyn):
        return []
    return sorted(os.path.join(dyn, f) for f in os.listdir(dyn) if f.split(".")[0] in _HIDDEN_EXTENSIONS)


def _networkx_dir() -> str | None:
    spec = importlib.util.find_spec("networkx")
    if spec is None or not spec.submodule_search_locations:
        return None
    return os.path.realpath(list(spec.submodule_search_locations)[0])


def _lib_paths(python: str) -> list[str]:
    """The C library's folder (as this process mapped it) and the ELF interpreter, as the binary names it."""
    paths: list[str] = []
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split(maxsplit=5)
            if len(parts) == 6 and re.fullmatch(r"libc(\.so.*|-[\d.]+\.so)", os.path.basename(parts[5].strip())):
                d = os.path.dirname(parts[5].strip())
                if d not in paths:
                    paths.append(d)
    interp = _elf_interpreter(python)
    if interp:
        paths.append(interp)
    return paths


def _elf_interpreter(path: str) -> str | None:
    with open(path, "rb") as f:
        head = f.read(64)
        if head[:4] != b"\x7fELF":
            return None
        end = "<" if head[5] == 1 else ">"
        if head[4] == 2:
            (phoff,) = struct.unpack_from(end + "Q", head, 0x20)
            phentsize, phnum = struct.unpack_from(end + "HH", head, 0x36)
        else:
            (phoff,) = struct.unpack_from(end + "I", head, 0x1C)
            phentsize, phnum = struct.unpack_from(end + "HH", head, 0x2A)
        for i in range(phnum):
            f.seek(phoff + i * phentsize)
            ph = f.read(phentsize)
            if struct.unpack_from(end + "I", ph, 0)[0] == 3:  # PT_INTERP
                off, size = (struct.unpack_from(end + "QxxxxxxxxxxxxxxxxQ", ph, 8) if head[4] == 2
                             else struct.unpack_from(end + "IxxxxxxxxI", ph, 4))
                f.seek(off)
                return f.read(size).rstrip(b"\0").decode()
    return None


def _cap_last_cap() -> int:
    try:
        return int(Path("/proc/sys/kernel/cap_last_cap").read_text())
    except (OSError, ValueError):
        return 63


# ---------------------------------------------------------------- one run


def _launch(source: str, stdin: str, limits: SandboxLimits, isolation: Isolation,
            unshare: str | None, audit_hook: bool = True) -> SandboxResult:
    hostdir = Path(tempfile.mkdtemp(prefix="nphe4v-sandbox-"))
    try:
        return _launch_in(hostdir, source, stdin, limits, isolation, unshare, audit_hook)
    finally:
        shutil.rmtree(hostdir, ignore_errors=True)


def _launch_in(hostdir: Path, source: str, stdin: str, limits: SandboxLimits, isolation: Isolation,
               unshare: str | None, audit_hook: bool) -> SandboxResult:
    strict = isolation == "strict"
    indir = hostdir / "in"
    indir.mkdir()
    (indir / "program.py").write_text(source, encoding="utf-8", errors="replace")
    shutil.copyfile(_BOOTSTRAP, indir / "bootstrap.py")
    nx = _networkx_dir()
    if strict:
        inside_in, site, workdir = "/sandbox/in", "/sandbox/site", "/tmp"
        (hostdir / "root").mkdir()
    else:
        inside_in, site, workdir = str(indir), str(hostdir / "site"), str(hostdir / "work")
        os.mkdir(site)
        os.mkdir(workdir)
        if nx:
            os.symlink(nx, os.path.join(site, "networkx"))
    hidden = _hidden_dirs()
    (indir / "config.json").write_text(json.dumps({
        "program": f"{inside_in}/program.py", "indir": inside_in, "site": site, "workdir": workdir, "hidden": hidden,
        "forbidden_modules": list(FORBIDDEN_MODULES), "audit": audit_hook}))
    for p in [indir, *indir.iterdir()]:
        p.chmod(0o755 if p.is_dir() else 0o644)  # readable by the fresh uid the program runs as

    report_r, report_w = os.pipe()
    life_r, life_w = os.pipe()
    python = _python()
    root_run = strict and os.geteuid() == 0
    cfg = {
        "mode": isolation, "newroot": str(hostdir / "root"), "indir": str(indir), "prefix": sys.base_prefix,
        "python": python, "lib_paths": _lib_paths(python) if strict else [], "hide_dirs": hidden,
        "hide_files": _hidden_files(), "networkx_dir": nx, "disk_mb": limits.disk_mb, "disk_inodes": 8192,
        "report_fd": report_w, "lifeline_fd": life_r, "workdir": workdir,
        "run_uid": _RUN_UIDS[0] + secrets.randbelow(_RUN_UIDS[1]) if root_run else None,
        "cap_last_cap": _cap_last_cap(), "bootstrap": f"{inside_in}/bootstrap.py",
        "bootstrap_config": f"{inside_in}/config.json",
        "env": {"HOME": workdir, "TMPDIR": workdir, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"},
        "limits": {"memory_mb": limits.memory_mb, "cpu_s": math.ceil(limits.timeout_s) + 1,
                   "max_processes": limits.max_processes, "max_file_mb": limits.max_file_mb,
                   "max_open_files": limits.max_open_files},
    }
    (hostdir / "init.json").write_text(json.dumps(cfg))
    argv = [python, "-I", "-S", "-B", str(_INIT), str(hostdir / "init.json")]
    if strict:
        assert unshare is not None
        ns = ["--mount", "--net", "--pid", "--ipc", "--uts", "--cgroup", "--fork", "--kill-child=SIGKILL",
              "--propagation", "private"]
        if not root_run:
            ns = ["--user", "--map-root-user", *ns]
        argv = [unshare, *ns, "--", *argv]
    stdin_file = None
    if stdin:
        (hostdir / "stdin").write_text(stdin, encoding="utf-8")
        stdin_file = open(hostdir / "stdin", "rb")  # noqa: SIM115 - closed below
    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            argv, stdin=stdin_file or subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            pass_fds=(report_w, life_r), env={"LC_ALL": "C.UTF-8"}, cwd=hostdir, start_new_session=True)
    except OSError as e:
        for fd in (report_r, report_w, life_r, life_w):
            os.close(fd)
        raise SandboxUnavailable(f"could not start the sandbox: {e.strerror}") from None
    finally:
        if stdin_file:
            stdin_file.close()
    os.close(report_w)
    os.close(life_r)
    try:
        out, err, report, timed_out, overflow = _collect(proc, report_r, limits, start)
    finally:
        os.close(report_r)
        os.close(life_w)  # init's lifeline: its end tells the sandbox to die if we had not killed it
        _kill(proc)
    wall = time.monotonic() - start
    return _result(out, err, report, timed_out, overflow, proc.returncode, wall, limits, isolation, hostdir)


def _collect(proc: subprocess.Popen, report_r: int, limits: SandboxLimits, start: float):
    """Read stdout, stderr and the report pipe as they come, within the time and output limits."""
    assert proc.stdout is not None and proc.stderr is not None
    fds = {proc.stdout.fileno(): "out", proc.stderr.fileno(): "err", report_r: "report"}
    bufs = {"out": bytearray(), "err": bytearray(), "report": bytearray()}
    sel = selectors.DefaultSelector()
    for fd in fds:
        os.set_blocking(fd, False)
        sel.register(fd, selectors.EVENT_READ)
    deadline = start + limits.timeout_s
    timed_out = overflow = False
    try:
        while sel.get_map() and not overflow:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                timed_out = True
                break
            for key, _ in sel.select(remaining):
                try:
                    chunk = os.read(key.fd, 65536)
                except BlockingIOError:
                    continue
                if not chunk:
                    sel.unregister(key.fd)
                    continue
                name = fds[key.fd]
                buf = bufs[name]
                if name == "out":
                    buf += chunk
                    if len(buf) > limits.max_output_bytes:
                        overflow = True
                        break
                elif name == "err":
                    buf += chunk
                    del buf[:-8192]  # the tail is all the detail needs
                elif len(buf) < 65536:
                    buf += chunk
        if not timed_out and not overflow:
            try:
                proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                timed_out = True
    finally:
        sel.close()
    return bytes(bufs["out"]), bytes(bufs["err"]), bytes(bufs["report"]), timed_out, overflow


def _kill(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        try:  # the session's group: unshare, whose death kills init (--kill-child) and so the namespace
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait()
    for f in (proc.stdout, proc.stderr):
        if f is not None:
            f.close()


def _result(out: bytes, err: bytes, report: bytes, timed_out: bool, overflow: bool, rc: int | None,
            wall: float, limits: SandboxLimits, isolation: Isolation, hostdir: Path) -> SandboxResult:
    stdout = out[: limits.max_output_bytes].decode("utf-8", errors="replace")
    lines = report.decode("utf-8", errors="replace").splitlines()
    status = next((ln for ln in reversed(lines) if ln.startswith("status ")), None)
    problem = next((ln for ln in lines if ln.startswith(("violation ", "error "))), None)
    setup = next((ln for ln in lines if ln.startswith("init-error")), None)

    def clean(text: str) -> str:
        text = text.replace(str(hostdir), "<sandbox>").replace("\n", " ").strip()
        return text[:300]

    def res(error: str | None, detail: str, returncode: int | None = rc) -> SandboxResult:
        return SandboxResult(ok=error is None, stdout=stdout, error=error, detail=clean(detail),
                             returncode=returncode, wall_s=round(wall, 4), isolation=isolation,
                             note=WEAKER_NOTE if isolation == "rlimits-only" else "")

    if overflow:
        return res("output_limit", f"the program printed more than {limits.max_output_bytes} bytes")
    if timed_out:
        return res("timeout", f"the program ran longer than {limits.timeout_s:g} s")
    if setup and status is None:
        raise SandboxUnavailable(f"sandbox setup failed: {clean(setup.partition(' ')[2])}")
    code: int | None = None
    sig: int | None = None
    if status:
        _, kind, value = status.split(" ", 2)
        code, sig = (int(value), None) if kind == "exit" else (None, int(value))
    if problem:
        _, kind, detail = (problem.split(" ", 2) + ["", ""])[:3]
        return res(kind if kind in POT_ERRORS else "runtime_error", detail, code)
    if sig is not None:
        name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else f"signal {sig}"
        if sig == signal.SIGXCPU:
            return res("timeout", "the CPU time limit was reached", -sig)
        if sig == signal.SIGXFSZ:
            return res("filesystem", "the file size limit was reached", -sig)
        if sig == signal.SIGKILL:
            return res("killed", "killed by SIGKILL (perhaps out of memory)", -sig)
        return res("signal", f"the program died of {name}", -sig)
    if code == 0:
        return res(None, "", 0)
    last = next((ln for ln in reversed(err.decode("utf-8", "replace").splitlines()) if ln.strip()), "")
    if code is not None:
        return res("runtime_error", f"exit status {code}" + (f": {last}" if last else ""), code)
    if rc is not None and rc < 0:
        return res("killed", f"the sandbox was killed by signal {-rc}")
    return res("killed", f"the sandbox ended without the program's status (exit {rc})" +
               (f": {last}" if last else ""))
