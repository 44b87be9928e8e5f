"""The sandbox's bootstrap: runs inside the sandbox, before the model's program, in `python -I -S -B`.

Never imported by the project; `evalcore.sandbox` copies it into the sandbox's input folder. It uses
only the standard library, and

* installs an audit hook (PEP 578) that refuses, fatally and with a classified reason written to fd 3,
  imports outside the standard library and networkx or of escape hatches (ctypes, subprocess,
  multiprocessing, sub-interpreters), opening files outside the allowed folders, writing outside the
  working folder, sockets and name lookups, running other programs and signalling other processes;
* classifies the program's own end (MemoryError -> memory, a failed fork -> process_limit, a file over
  the size limit or a full disk -> filesystem, a SyntaxError -> syntax_error, any other exception ->
  runtime_error) on fd 3, so the host never parses tracebacks. fd 3 is the program's as much as ours: the
  host reads it as a description of a failure that init's status (on a pipe the program never holds)
  confirms, never as the verdict.

The hook is defence in depth and the classifier of attempts; the boundary is the kernel's (namespaces,
rlimits, no capabilities), which holds even for code that gets past the hook.
"""

import _signal  # not signal: its enum import doubles the start-up time
import errno
import marshal
import os
import sys

REPORT_FD = 3
VIOLATION_EXIT = 86

_DEVICES = ("/dev/null", "/dev/zero", "/dev/urandom", "/dev/random")
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
# The policy, set by _configure from the run's config before the hook is installed.
_READ: tuple[str, ...] = ()
_WRITE: tuple[str, ...] = ()
_HIDDEN: tuple[str, ...] = ()
_FORBIDDEN_MODULES: frozenset[str] = frozenset()


def _configure(cfg: dict) -> None:
    global _READ, _WRITE, _HIDDEN, _FORBIDDEN_MODULES
    # -I -S leaves the standard library alone on sys.path; networkx's folder is the only addition.
    stdlib = tuple(os.path.realpath(p) for p in sys.path if p)
    sys.path.append(cfg["site"])
    _HIDDEN = tuple(os.path.realpath(p) for p in cfg["hidden"])
    _READ = stdlib + tuple(os.path.realpath(p) for p in (cfg["site"], cfg["workdir"], cfg["indir"]))
    # In rlimits-only mode networkx is a symlink in the site folder; reads resolve to where it really is.
    _READ += tuple(os.path.realpath(os.path.join(cfg["site"], e)) for e in os.listdir(cfg["site"]))
    _WRITE = (os.path.realpath(cfg["workdir"]),)
    _FORBIDDEN_MODULES = frozenset(cfg["forbidden_modules"])


def _report(kind: str, detail: str) -> None:
    line = f"{kind} {detail}".replace("\n", " ")[:400] + "\n"
    try:
        os.write(REPORT_FD, line.encode("utf-8", "replace"))
    except OSError:
        pass


def _violation(kind: str, detail: str) -> None:
    _report(f"violation {kind}", detail)
    try:
        sys.stdout.flush()
    except Exception:  # noqa: BLE001 - leaving anyway
        pass
    os._exit(VIOLATION_EXIT)


def _within(path, roots) -> bool:
    if isinstance(path, int):
        return True  # an already open descriptor
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    p = os.path.realpath(os.path.join(os.getcwd(), os.fspath(path)))
    if any(p == h or p.startswith(h + "/") for h in _HIDDEN):
        return False
    return any(p == r or p.startswith(r + "/") for r in roots)


def _check_read(path) -> None:
    if path is None or _within(path, _READ) or str(path) in _DEVICES:
        return
    name = os.fsdecode(path) if isinstance(path, bytes) else str(path)
    if name.endswith((".py", ".pyc", ".so")):
        _violation("forbidden_import", f"loading {name}: only the standard library and networkx")
    _violation("filesystem", f"reading {name}: outside the sandbox's folders")


def _check_write(path, what: str) -> None:
    if path is None or _within(path, _WRITE) or str(path) == "/dev/null":
        return
    _violation("filesystem", f"{what} {path}: writing outside the working folder")


_PATH_WRITES = {"os.mkdir", "os.remove", "os.rmdir", "os.chmod", "os.chown", "os.truncate", "os.utime",
                "os.chflags", "os.lchflags", "os.setxattr", "os.removexattr", "os.mkfifo", "os.mknod"}
_PAIR_WRITES = {"os.rename", "os.link", "os.symlink"}
_PROGRAMS = {"os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.forkpty", "subprocess.Popen",
             "pty.spawn", "os.startfile"}


def _hook(event: str, args: tuple) -> None:
    if event == "open":
        path, mode, flags = args
        if (isinstance(mode, str) and any(c in mode for c in "wax+")) or (flags or 0) & _WRITE_FLAGS:
            _check_write(path, "open")
        else:
            _check_read(path)
    elif event == "import":
        name = args[0]
        if name in _FORBIDDEN_MODULES or name.partition(".")[0] in _FORBIDDEN_MODULES:
            _violation("forbidden_import", f"import {name} is not allowed")
    elif event in ("os.listdir", "os.scandir"):
        _check_read(args[0] if args and args[0] not in (None, "", b"") else ".")
    elif event in _PATH_WRITES:
        _check_write(args[0], event)
    elif event in _PAIR_WRITES:
        _check_write(args[0] if event != "os.symlink" else args[1], event)
        if event != "os.symlink":
            _check_write(args[1], event)
    elif event.startswith("socket."):
        _violation("network", f"{event}: no network in the sandbox")
    elif event.startswith("ctypes."):
        _violation("forbidden_import", f"{event}: ctypes is not allowed")
    elif event in _PROGRAMS:
        _violation("process_limit", f"{event}: running other programs is not allowed")
    elif event == "os.kill":
        if args[0] != os.getpid():
            _violation("signal", f"os.kill({args[0]}, {args[1]}): signalling other processes")
    elif event == "os.killpg":
        _violation("signal", f"os.killpg({args[0]}, {args[1]}): signalling other processes")


def _classify(exc: BaseException) -> tuple[str, str]:
    text = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, MemoryError):
        return "memory", "MemoryError: the memory limit was reached"
    if isinstance(exc, BlockingIOError) and exc.errno == errno.EAGAIN:
        return "process_limit", f"{text} (the process limit was reached)"
    if isinstance(exc, RuntimeError) and "can't start new thread" in str(exc):
        return "process_limit", "a thread could not start: the process limit was reached"
    if isinstance(exc, OSError) and exc.errno in (errno.EFBIG, errno.ENOSPC, errno.EDQUOT):
        return "filesystem", f"{text} (the file size or disk limit was reached)"
    # What the kernel layer answers when the hook is not there (or was got past): the host's files do
    # not exist and the root is read-only; no route leads anywhere; the module is not installed.
    if isinstance(exc, OSError) and exc.filename is not None and exc.errno in _FS_ERRNOS:
        return "filesystem", text
    if isinstance(exc, OSError) and (exc.errno in _NET_ERRNOS or type(exc).__name__ == "gaierror"):
        return "network", text
    if isinstance(exc, ImportError):
        return "forbidden_import", f"{text} (only the standard library and networkx are importable)"
    return "runtime_error", text


_FS_ERRNOS = {errno.ENOENT, errno.EACCES, errno.EPERM, errno.EROFS, errno.EISDIR, errno.ENOTDIR,
              errno.EEXIST, errno.EXDEV, errno.ELOOP, errno.ENXIO}
_NET_ERRNOS = {errno.ENETUNREACH, errno.EHOSTUNREACH, errno.ENETDOWN, errno.ECONNREFUSED,
               errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT}


def main() -> None:
    with open(sys.argv[1], "rb") as f:
        cfg = marshal.load(f)  # not json: importing json (and re) costs more than the rest
    with open(cfg["program"], encoding="utf-8", errors="replace") as f:
        source = f.read()
    _configure(cfg)
    # A file over RLIMIT_FSIZE raises EFBIG instead of killing the program with SIGXFSZ.
    _signal.signal(_signal.SIGXFSZ, _signal.SIG_IGN)
    try:
        code = compile(source, "<program>", "exec")
    except (SyntaxError, ValueError) as e:
        line = getattr(e, "lineno", None)
        _report("error syntax_error", f"line {line}: {getattr(e, 'msg', e)}" if line else str(e))
        sys.exit(1)
    if cfg["audit"]:
        sys.addaudithook(_hook)
    main_module = type(sys)("__main__")
    main_module.__dict__["__builtins__"] = __builtins__
    sys.modules["__main__"] = main_module
    try:
        exec(code, main_module.__dict__)
    except SystemExit:
        raise
    except BaseException as e:  # noqa: BLE001 - every end of the program is classified
        kind, detail = _classify(e)
        _report(f"error {kind}", detail)
        try:  # imported only now: it costs a third of the bootstrap's start-up
            import traceback

            traceback.print_exception(e)
        except BaseException:  # noqa: BLE001 - out of memory while printing
            pass
        sys.exit(1)
    finally:
        try:
            sys.stdout.flush()
        except BaseException:  # noqa: BLE001 - a closed pipe is not the program's error
            pass


if __name__ == "__main__":
    main()
