"""One run: build the input folder and the run's cgroup, start init (under `unshare` in strict mode), read the
program's output within the limits, kill what is left, and classify how the program ended.

The verdict comes only from what the program cannot write: init's status pipe (wait4's status and CPU time;
the program never holds that pipe), the run's cgroup (CPU time of all its processes, out-of-memory kills,
refused forks) and the host's own clocks and output cap. The program's bytes (stdout, stderr, and the
bootstrap's description of a failure on fd 3) are data: they can describe a failure the supervisor saw, never
make one a success, and reach `detail` only sanitised (printable characters, one line)."""

from __future__ import annotations

import marshal
import os
import secrets
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from evalcore.sandbox import layout, seccomp_filter
from evalcore.sandbox.cgroup import RunCgroup
from evalcore.sandbox.models import (
    WEAKER_NOTE,
    Isolation,
    SandboxLimits,
    SandboxResult,
    SandboxUnavailable,
)

_HERE = Path(__file__).resolve().parent
_INIT = _HERE / "init_script.py"
_BOOTSTRAP = _HERE / "bootstrap_script.py"


# What the program may say about its own failure (on fd 3): the classes it can cause itself. The others
# (timeout, output_limit, killed) are the supervisor's findings only.
_DESCRIBED = {"memory", "process_limit", "filesystem", "forbidden_import", "network", "syntax_error",
              "runtime_error", "signal"}
VIOLATION_EXIT = 86  # bootstrap_script.VIOLATION_EXIT (that script is never imported)
_HINT_KEEP = 4096  # the last bytes of fd 3 kept: the bootstrap writes its line last
_POLL_S = 0.1  # how often the run's cgroup CPU time is read while the program runs


def run_once(source: str, stdin: str, limits: SandboxLimits, isolation: Isolation,
            unshare: str | None, audit_hook: bool = True, hide_extensions: bool = True,
            cgroup: bool = True) -> SandboxResult:
    hostdir = Path(tempfile.mkdtemp(prefix="nphe4v-sandbox-"))
    group = None
    if cgroup:
        group, _ = RunCgroup.create(limits.memory_mb, limits.max_processes)
    try:
        return _launch_in(hostdir, source, stdin, limits, isolation, unshare, audit_hook, hide_extensions, group)
    finally:
        if group is not None:
            group.remove()
        shutil.rmtree(hostdir, ignore_errors=True)


def _launch_in(hostdir: Path, source: str, stdin: str, limits: SandboxLimits, isolation: Isolation,
               unshare: str | None, audit_hook: bool, hide_extensions: bool,
               group: RunCgroup | None) -> SandboxResult:
    strict = isolation == "strict"
    indir = hostdir / "in"
    indir.mkdir()
    (indir / "program.py").write_text(source, encoding="utf-8", errors="replace")
    shutil.copyfile(_BOOTSTRAP, indir / "bootstrap.py")
    nx = layout.networkx_dir()
    if strict:
        inside_in, site, workdir = "/sandbox/in", "/sandbox/site", "/tmp"
        (hostdir / "root").mkdir()
        if group is None:
            (hostdir / "proc").mkdir()
    else:
        inside_in, site, workdir = str(indir), str(hostdir / "site"), str(hostdir / "work")
        os.mkdir(site)
        os.mkdir(workdir)
        if nx:
            os.symlink(nx, os.path.join(site, "networkx"))
    hidden = layout.hidden_dirs()
    (indir / "config.marshal").write_bytes(marshal.dumps({
        "program": f"{inside_in}/program.py", "indir": inside_in, "site": site, "workdir": workdir, "hidden": hidden,
        "forbidden_modules": list(layout.FORBIDDEN_MODULES), "audit": audit_hook}))
    for p in [indir, *indir.iterdir()]:
        p.chmod(0o755 if p.is_dir() else 0o644)  # readable by the fresh uid the program runs as

    report_r, report_w = os.pipe()  # init's status: the program never holds it
    hint_r, hint_w = os.pipe()  # the program's fd 3: the bootstrap's description of a failure (data)
    life_r, life_w = os.pipe()
    python = layout.python()
    root_run = strict and os.geteuid() == 0
    cfg = {
        "mode": isolation, "newroot": str(hostdir / "root"), "indir": str(indir), "prefix": sys.base_prefix,
        "python": python, "lib_paths": layout.lib_paths(python) if strict else [], "hide_dirs": hidden,
        "hide_files": layout.hidden_files() if hide_extensions else [], "networkx_dir": nx,
        "disk_mb": limits.disk_mb, "disk_inodes": 8192,
        "status_fd": report_w, "hint_fd": hint_w, "lifeline_fd": life_r, "workdir": workdir,
        "cgroup_procs": group.procs_files() if group is not None else [],
        # without a cgroup, init watches the totals itself on a proc of its own mounted here (strict mode)
        "procdir": str(hostdir / "proc") if strict and group is None else None,
        "seccomp": _seccomp(isolation),
        "run_uid": layout.RUN_UIDS[0] + secrets.randbelow(layout.RUN_UIDS[1]) if root_run else None,
        "cap_last_cap": layout.cap_last_cap(), "bootstrap": f"{inside_in}/bootstrap.py",
        "bootstrap_config": f"{inside_in}/config.marshal",
        "env": {"HOME": workdir, "TMPDIR": workdir, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"},
        "limits": {"memory_mb": limits.memory_mb, "cpu_s": limits.cpu_limit_s,
                   "max_processes": limits.max_processes, "max_file_mb": limits.max_file_mb,
                   "max_open_files": limits.max_open_files},
    }
    # marshal, read by the same interpreter version: the scripts start faster than with json
    (hostdir / "init.marshal").write_bytes(marshal.dumps(cfg))
    argv = [python, "-I", "-S", "-B", str(_INIT), str(hostdir / "init.marshal")]
    if strict:
        assert unshare is not None
        ns = ["--mount", "--net", "--pid", "--ipc", "--uts", "--cgroup", "--fork", "--kill-child=SIGKILL",
              "--propagation", "private", *_time_namespace()]
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
            pass_fds=(report_w, hint_w, life_r), env={"LC_ALL": "C.UTF-8"}, cwd=hostdir,
            start_new_session=True)
    except OSError as e:
        for fd in (report_r, report_w, hint_r, hint_w, life_r, life_w):
            os.close(fd)
        raise SandboxUnavailable(f"could not start the sandbox: {e.strerror}") from None
    finally:
        if stdin_file:
            stdin_file.close()
    os.close(report_w)
    os.close(hint_w)
    os.close(life_r)
    try:
        got = _collect(proc, report_r, hint_r, limits, start, group)
    finally:
        os.close(report_r)
        os.close(hint_r)
        os.close(life_w)  # init's lifeline: its end tells the sandbox to die if we had not killed it
        _kill(proc)
    wall = time.monotonic() - start
    facts = _Facts(*got, rc=proc.returncode)
    if group is not None:
        facts.oom_kills, facts.forks_refused = group.oom_kills(), group.forks_refused()
        facts.group_cpu_s = max(facts.group_cpu_s, group.cpu_s())
        facts.peak_mb = group.peak_mb()
    return _result(facts, wall, limits, isolation, hostdir, group is not None)


class _Facts:
    """What the supervisor knows of a run: the program's bytes apart from the findings it cannot write."""

    def __init__(self, out: bytes, err: bytes, status: bytes, hint: bytes, timed_out: bool, overflow: str,
                 over_cpu: bool, group_cpu_s: float, rc: int | None) -> None:
        self.out, self.err, self.status, self.hint = out, err, status, hint
        self.timed_out, self.overflow, self.over_cpu, self.group_cpu_s, self.rc = (
            timed_out, overflow, over_cpu, group_cpu_s, rc)
        self.oom_kills = self.forks_refused = 0
        self.peak_mb: float | None = None


def _seccomp(isolation: Isolation) -> bytes:
    """The filter's BPF; strict mode refuses to run without it, the weaker mode goes on without."""
    try:
        return seccomp_filter.bpf_program()
    except seccomp_filter.FilterUnavailable as e:
        if isolation == "strict":
            raise SandboxUnavailable(f"strict sandbox unavailable: {e}") from None
        return b""


def _time_namespace() -> list[str]:
    """A time namespace whose monotonic and boot clocks start near 0: the host's uptime stays unknown."""
    if not os.path.exists("/proc/self/ns/time"):  # kernels before 5.6: the clocks stay the host's
        return []
    mono = int(time.clock_gettime(time.CLOCK_MONOTONIC))
    boot = int(time.clock_gettime(time.CLOCK_BOOTTIME))
    return ["--time", "--monotonic", str(-mono), "--boottime", str(-boot)]


def _collect(proc: subprocess.Popen, report_r: int, hint_r: int, limits: SandboxLimits, start: float,
             group: RunCgroup | None):
    """Read stdout, stderr, init's status and the program's hint as they come, within the time, output and
    (with a cgroup) whole-program CPU limits.

    Every byte the program writes costs the scorer a read, outside the program's cgroup: stderr and fd 3 are
    bounded like stdout, each at `max_output_bytes`, past which the run ends (`overflow` names the channel).
    Before, a program writing stderr or fd 3 without end for its 3 CPU s cost the scorer 9 CPU s (a cgroup
    read per chunk): the cgroup's CPU time is now read at most every `_POLL_S` here, and `_result` reads the
    final count, so a program that went past the limit just before it ended is a timeout however the polls fell.

    The run has ended when init's status pipe closes (only init, and `unshare` above it, hold it): what the
    program wrote is drained then, without waiting for every other holder of stdout to close it. In the weaker
    mode an orphan the program left (in init's process group) held stdout until the wall-clock limit and then
    outlived the run; `_kill` now ends the group, before `proc` is reaped."""
    assert proc.stdout is not None and proc.stderr is not None
    fds = {proc.stdout.fileno(): "out", proc.stderr.fileno(): "err", report_r: "report", hint_r: "hint"}
    bufs = {"out": bytearray(), "err": bytearray(), "report": bytearray(), "hint": bytearray()}
    sel = selectors.DefaultSelector()
    for fd in fds:
        os.set_blocking(fd, False)
        sel.register(fd, selectors.EVENT_READ)
    deadline = start + limits.wall_limit_s
    timed_out = over_cpu = False
    overflow = ""  # the channel that went past its bound
    sizes = {"out": 0, "err": 0, "hint": 0}
    group_cpu = 0.0
    next_poll = 0.0
    ended = False  # init's status pipe closed: init has exited, what is left in the pipes is drained
    try:
        while sel.get_map() and not overflow:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                timed_out = True
                break
            if group is not None and time.monotonic() >= next_poll:
                next_poll = time.monotonic() + _POLL_S
                group_cpu = group.cpu_s()
                if group_cpu > limits.cpu_limit_s:  # all the program's processes together
                    over_cpu = True
                    break
            ready = sel.select(0 if ended else min(remaining, _POLL_S) if group is not None else remaining)
            if ended and not ready:
                break
            for key, _ in ready:
                try:
                    chunk = os.read(key.fd, 65536)
                except BlockingIOError:
                    continue
                if not chunk:
                    sel.unregister(key.fd)
                    ended = ended or fds[key.fd] == "report"
                    continue
                name = fds[key.fd]
                buf = bufs[name]
                if name in sizes:
                    sizes[name] += len(chunk)
                    if sizes[name] > limits.max_output_bytes:
                        overflow = {"out": "stdout", "err": "stderr", "hint": "fd 3"}[name]
                        if name == "out":
                            buf += chunk
                        break
                if name == "out":
                    buf += chunk
                elif name == "err":
                    buf += chunk
                    del buf[:-8192]  # the tail is all the detail needs
                elif name == "hint":
                    buf += chunk
                    del buf[:-_HINT_KEEP]  # the program may write here: only the tail is kept
                elif len(buf) < 65536:  # init's few lines
                    buf += chunk
    finally:
        sel.close()
    return (bytes(bufs["out"]), bytes(bufs["err"]), bytes(bufs["report"]), bytes(bufs["hint"]), timed_out, overflow,
            over_cpu, group_cpu)


def _kill(proc: subprocess.Popen) -> None:
    if proc.returncode is None:  # not reaped yet, so its pid still names the session's process group
        try:  # unshare, whose death kills init (--kill-child) and so the namespace; in the weaker mode init
            os.killpg(proc.pid, signal.SIGKILL)  # and whatever the program left running (setsid is refused)
        except ProcessLookupError:
            pass
    proc.wait()
    for f in (proc.stdout, proc.stderr):
        if f is not None:
            f.close()


def sanitise(text: str) -> str:
    """One line of printable characters: control and format characters (escape sequences, bidi overrides,
    NULs, newlines) become spaces."""
    return "".join(c if c.isprintable() else " " for c in text)


def _result(f: _Facts, wall: float, limits: SandboxLimits, isolation: Isolation, hostdir: Path,
            counted: bool) -> SandboxResult:
    stdout = f.out[: limits.max_output_bytes].decode("utf-8", errors="replace")
    lines = f.status.decode("utf-8", errors="replace").splitlines()  # init's: trusted
    status = next((ln for ln in reversed(lines) if ln.startswith("status ")), None)
    setup = next((ln for ln in lines if ln.startswith("init-error")), None)
    cpu_line = next((ln for ln in reversed(lines) if ln.startswith("cpu ")), None)
    limit = next((ln.split() for ln in lines if ln.startswith("limit ")), None)  # init's own watch (no cgroup)
    cpu = float(cpu_line.split()[1]) if cpu_line else None  # the program's CPU s (init's wait4), when it ended
    # the program's own description of a failure: its last complete line on fd 3, data only
    hint_lines = [ln for ln in f.hint.decode("utf-8", errors="replace").split("\n")[:-1] if ln.strip()]
    hint = hint_lines[-1] if hint_lines else ""

    def clean(text: str) -> str:  # one line, printable, without the host's paths (the install's is mirrored inside)
        for path, name in ((str(hostdir), "<sandbox>"), (os.path.realpath(sys.base_prefix), "<python>"),
                           (layout.networkx_dir() or "<networkx>", "<networkx>")):
            text = text.replace(path, name)
        return " ".join(sanitise(text).split())[:300]

    def res(error: str | None, detail: str, returncode: int | None = f.rc) -> SandboxResult:
        return SandboxResult(ok=error is None, stdout=stdout, error=error, detail=clean(detail),
                             returncode=returncode, wall_s=round(wall, 4), isolation=isolation,
                             note=WEAKER_NOTE if isolation == "rlimits-only" else "",
                             cpu_s=round(f.group_cpu_s, 3) if counted else None,
                             memory_peak_mb=round(f.peak_mb, 1) if f.peak_mb is not None else None)

    if f.overflow:
        where = "" if f.overflow == "stdout" else f" to {f.overflow}"
        return res("output_limit", f"the program printed more than {limits.max_output_bytes} bytes{where}")
    if f.over_cpu:
        return res("timeout", f"the program's processes together used more than {limits.timeout_s:g} s of CPU "
                              f"time ({f.group_cpu_s:.1f} s)")
    if f.timed_out:
        return res("timeout", f"the program ran longer than the {limits.wall_limit_s:g} s wall-clock limit "
                              f"(its CPU limit is {limits.timeout_s:g} s)")
    if limit is not None and limit[1] == "cpu":
        return res("timeout", f"the program's processes together used more than {limits.timeout_s:g} s of CPU "
                              f"time ({float(limit[2]):.1f} s)")
    if limit is not None:
        return res("memory", f"the program's processes together held more than {limits.memory_mb} MB "
                             f"({float(limit[2]):.0f} MB)")
    if setup and status is None:
        raise SandboxUnavailable(f"sandbox setup failed: {clean(setup.partition(' ')[2])}")
    err_lines = [ln for ln in f.err.decode("utf-8", "replace").splitlines() if ln.strip()]
    if not lines and err_lines and err_lines[-1].startswith("unshare:"):
        # unshare itself failed (namespaces denied by the kernel or a container): not the program's doing.
        raise SandboxUnavailable(f"namespaces could not be created ({clean(err_lines[-1])})")
    if status is None:
        if f.rc is not None and f.rc < 0:
            return res("killed", f"the sandbox was killed by signal {-f.rc}")
        return res("killed", f"the sandbox ended without the program's status (exit {f.rc})")
    _, kind, value = status.split(" ", 2)
    code, sig = (int(value), None) if kind == "exit" else (None, int(value))
    if f.oom_kills and (sig is not None or code):
        return res("memory", f"the program's processes together reached the {limits.memory_mb} MB memory limit "
                             f"({f.oom_kills} killed)", code if code is not None else -sig)
    if sig is not None:
        name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else f"signal {sig}"
        if sig == signal.SIGXCPU or (sig == signal.SIGKILL and cpu is not None and cpu >= limits.cpu_limit_s):
            # SIGKILL past the soft limit: the hard limit, for a program that caught or ignored SIGXCPU
            return res("timeout", f"the program used more than {limits.timeout_s:g} s of CPU time", -sig)
        if f.group_cpu_s > limits.cpu_limit_s:
            return res("timeout", f"the program's processes together used more than {limits.timeout_s:g} s of "
                                  f"CPU time", -sig)
        if sig == signal.SIGXFSZ:
            return res("filesystem", "the file size limit was reached", -sig)
        if sig == signal.SIGSYS:  # what the seccomp filter does to a system call of another ABI
            return res("signal", "killed by SIGSYS (a forbidden system call)", -sig)
        if sig == signal.SIGKILL:
            return res("killed", "killed by SIGKILL", -sig)
        return res("signal", f"the program died of {name}", -sig)
    if counted and f.group_cpu_s > limits.cpu_limit_s:  # the final count: past the limit between two polls
        return res("timeout", f"the program's processes together used more than {limits.timeout_s:g} s of CPU "
                              f"time ({f.group_cpu_s:.1f} s)", code)
    if code == 0:
        return res(None, "", 0)  # the program's bytes cannot change this, nor make any other end a success
    # A failure the supervisor saw; the program's own line may say which kind (a class it can cause itself),
    # when it agrees with the exit status: the audit hook's refusals exit 86, the bootstrap's errors 1.
    source, _, rest = hint.partition(" ")
    described, _, said = rest.partition(" ")
    if (source, code) not in (("violation", VIOLATION_EXIT), ("error", 1)):
        described = said = ""
    if f.forks_refused and described in ("", "runtime_error", "process_limit"):
        return res("process_limit", f"the program reached the {limits.max_processes}-process limit "
                                    f"({f.forks_refused} forks refused)", code)
    if described in _DESCRIBED:
        return res(described, said, code)
    last = err_lines[-1] if err_lines else ""
    return res("runtime_error", f"exit status {code}" + (f": {last}" if last else ""), code)
