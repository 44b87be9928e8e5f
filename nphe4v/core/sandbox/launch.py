"""One run: build the input folder, start init (under `unshare` in strict mode), read the program's output
within the limits, kill what is left, and classify how the program ended."""

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

from nphe4v.core.sandbox import layout
from nphe4v.core.sandbox.models import (
    POT_ERRORS,
    WEAKER_NOTE,
    Isolation,
    SandboxLimits,
    SandboxResult,
    SandboxUnavailable,
)

_HERE = Path(__file__).resolve().parent
_INIT = _HERE / "init_script.py"
_BOOTSTRAP = _HERE / "bootstrap_script.py"


def run_once(source: str, stdin: str, limits: SandboxLimits, isolation: Isolation,
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
    nx = layout.networkx_dir()
    if strict:
        inside_in, site, workdir = "/sandbox/in", "/sandbox/site", "/tmp"
        (hostdir / "root").mkdir()
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

    report_r, report_w = os.pipe()
    life_r, life_w = os.pipe()
    python = layout.python()
    root_run = strict and os.geteuid() == 0
    cfg = {
        "mode": isolation, "newroot": str(hostdir / "root"), "indir": str(indir), "prefix": sys.base_prefix,
        "python": python, "lib_paths": layout.lib_paths(python) if strict else [], "hide_dirs": hidden,
        "hide_files": layout.hidden_files(), "networkx_dir": nx, "disk_mb": limits.disk_mb, "disk_inodes": 8192,
        "report_fd": report_w, "lifeline_fd": life_r, "workdir": workdir,
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
    deadline = start + limits.wall_limit_s
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
    cpu_line = next((ln for ln in reversed(lines) if ln.startswith("cpu ")), None)
    cpu = float(cpu_line.split()[1]) if cpu_line else None  # the program's CPU s (init's wait4), when it ended

    def clean(text: str) -> str:  # one line, without the host's paths (the install's is mirrored inside)
        for path, name in ((str(hostdir), "<sandbox>"), (os.path.realpath(sys.base_prefix), "<python>"),
                           (layout.networkx_dir() or "<networkx>", "<networkx>")):
            text = text.replace(path, name)
        return text.replace("\n", " ").strip()[:300]

    def res(error: str | None, detail: str, returncode: int | None = rc) -> SandboxResult:
        return SandboxResult(ok=error is None, stdout=stdout, error=error, detail=clean(detail),
                             returncode=returncode, wall_s=round(wall, 4), isolation=isolation,
                             note=WEAKER_NOTE if isolation == "rlimits-only" else "")

    if overflow:
        return res("output_limit", f"the program printed more than {limits.max_output_bytes} bytes")
    if timed_out:
        return res("timeout", f"the program ran longer than the {limits.wall_limit_s:g} s wall-clock limit "
                              f"(its CPU limit is {limits.timeout_s:g} s)")
    if setup and status is None:
        raise SandboxUnavailable(f"sandbox setup failed: {clean(setup.partition(' ')[2])}")
    err_lines = [ln for ln in err.decode("utf-8", "replace").splitlines() if ln.strip()]
    if not lines and err_lines and err_lines[-1].startswith("unshare:"):
        # unshare itself failed (namespaces denied by the kernel or a container): not the program's doing.
        raise SandboxUnavailable(f"namespaces could not be created ({clean(err_lines[-1])})")
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
        if sig == signal.SIGXCPU or (sig == signal.SIGKILL and cpu is not None and cpu >= limits.cpu_limit_s):
            # SIGKILL past the soft limit: the hard limit, for a program that caught or ignored SIGXCPU
            return res("timeout", f"the program used more than {limits.timeout_s:g} s of CPU time", -sig)
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
