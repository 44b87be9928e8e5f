"""Attacks on the sandbox for model-written programs (evalcore.sandbox); real processes, no mocks.

Each attack must end as a classified error with the host unchanged. Where it matters, an attack runs
twice: with the audit hook (the classification) and without it (`audit_hook=False`), to show that the
kernel layer alone (namespaces, rlimits, no capabilities) stops it.
"""

import os
import select
import socket
import subprocess
import sys
import tempfile
import time
import tracemalloc

import pytest
from cpu_load import busy_loops_on_one_core

from evalcore.sandbox import (
    POT_ERRORS,
    WEAKER_NOTE,
    SandboxLimits,
    SandboxResult,
    SandboxUnavailable,
    check_isolation,
    run_program,
)
from evalcore.sandbox.layout import RUN_UIDS

LAYERS = [pytest.param(True, id="hook"), pytest.param(False, id="kernel-only")]
FAST = SandboxLimits(timeout_s=5)


@pytest.fixture(scope="module", autouse=True)
def strict_available():
    check_isolation("strict")  # the machine the suite runs on must give strict isolation


def attacked(r: SandboxResult, hook: bool, kind: str) -> None:
    """The attempt is classified as `kind`: by the hook, or from what the kernel answered without it."""
    assert not r.ok, r
    assert r.error == kind, (hook, r)
    assert "\n" not in r.detail


def test_networkx_program_prints_the_shortest_path():
    src = (
        "import networkx as nx\n"
        "G = nx.Graph()\n"
        "G.add_weighted_edges_from([('A', 'B', 1), ('B', 'C', 2), ('A', 'C', 5), ('C', 'D', 1)])\n"
        "print(nx.shortest_path(G, 'A', 'D', weight='weight'))\n"
    )
    r = run_program(src)
    assert r.ok and r.error is None and r.detail == "" and r.returncode == 0, r
    assert r.stdout == "['A', 'B', 'C', 'D']\n"
    assert r.isolation == "strict" and r.note == ""


def test_stdin_reaches_the_program_and_tmp_is_writable():
    src = ("import sys\n"
           "data = sys.stdin.read()\n"
           "open('scratch.txt', 'w').write(data.upper())\n"
           "print(open('/tmp/scratch.txt').read())\n")
    r = run_program(src, stdin="a b\n", limits=FAST)
    assert r.ok, r
    assert r.stdout == "A B\n\n"


@pytest.mark.parametrize("hook", LAYERS)
def test_reading_host_files_fails(tmp_path, hook):
    secret = "run-folder-secret-7f3a"
    run_file = tmp_path / "runs" / "samples.jsonl"
    run_file.parent.mkdir()
    run_file.write_text(secret)
    for path in ("/etc/passwd", str(run_file), os.path.expanduser("~/.ray/session_latest/x")):
        r = run_program(f"print(open({path!r}).read())", limits=FAST, audit_hook=hook)
        attacked(r, hook, "filesystem")
        assert "root:" not in r.stdout and secret not in r.stdout
    # Without an audited call: the host's files do not exist in the sandbox's mount namespace at all.
    r = run_program(f"import os\nprint(os.path.exists('/etc/passwd'), os.path.exists({str(run_file)!r}),"
                    f" os.path.exists('/work'), os.path.exists(os.path.expanduser('~root')))",
                    limits=FAST, audit_hook=hook)
    assert r.ok and r.stdout == "False False False False\n", r


@pytest.mark.parametrize("hook", LAYERS)
def test_writing_outside_fails_and_the_host_is_unchanged(tmp_path, hook):
    victim = tmp_path / "victim.txt"
    victim.write_text("original")
    new = tmp_path / "new.txt"
    before = sorted(p.name for p in tmp_path.iterdir())
    for src in (f"open({str(victim)!r}, 'w').write('pwned')",
                f"open({str(new)!r}, 'w').write('pwned')",
                "open('/etc/evil', 'w').write('x')",
                f"import os\nos.remove({str(victim)!r})",
                "import os\nos.mkdir('/sandbox/x')"):
        attacked(run_program(src, limits=FAST, audit_hook=hook), hook, "filesystem")
    assert victim.read_text() == "original"
    assert sorted(p.name for p in tmp_path.iterdir()) == before


@pytest.mark.parametrize("hook", LAYERS)
def test_no_connection_reaches_a_loopback_listener(hook):
    with socket.socket() as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen(8)
        port = srv.getsockname()[1]
        src = ("import socket\n"
               f"s = socket.create_connection(('127.0.0.1', {port}), timeout=2)\n"
               "s.sendall(b'leak')\nprint('connected')\n")
        r = run_program(src, limits=FAST, audit_hook=hook)
        attacked(r, hook, "network")
        assert "connected" not in r.stdout
        # A connect() that succeeded would sit in the backlog by now (connect returns after the handshake).
        readable, _, _ = select.select([srv], [], [], 0.2)
        assert readable == []


def test_fork_bomb_hits_the_process_limit():
    # the limit is reached after a few hundred forks; with one core busy-looped that once took over 5 s, so
    # the clock here is only a safety net
    limits = SandboxLimits(timeout_s=60)
    r = run_program("import os\nwhile True:\n    os.fork()\n", limits=limits)
    assert r.error == "process_limit", r
    assert r.wall_s < limits.timeout_s


def test_memory_bomb_hits_the_memory_limit():
    r = run_program("chunks = []\nwhile True:\n    chunks.append(bytearray(50 * 2**20))\n", limits=FAST)
    assert r.error == "memory", r


def test_disk_fill_hits_the_file_size_limit():
    r = run_program("with open('big', 'wb') as f:\n    for _ in range(100):\n        f.write(b'x' * 2**20)\n",
                    limits=FAST)
    assert r.error == "filesystem" and "limit" in r.detail, r


def _sandbox_uid_processes(only: int | None = None) -> set[int]:
    """Processes running as a sandbox's fresh uid (`only`: that one)."""
    base, span = (only, 1) if only is not None else RUN_UIDS
    found = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/status") as f:
                uid = next(int(ln.split()[1]) for ln in f if ln.startswith("Uid:"))
        except (OSError, StopIteration):
            continue
        if base <= uid < base + span:
            found.add(int(pid))
    return found


def test_infinite_loop_times_out_and_nothing_outlives_it(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where the run's host folder goes
    src = ("import os, time\n"
           "print(os.getuid(), flush=True)\n"
           "if os.fork() == 0:\n"
           "    os.setsid()\n"
           "    time.sleep(1000)\n"
           "while True:\n    pass\n")
    limits = SandboxLimits(timeout_s=1.5)
    r = run_program(src, limits=limits)
    assert r.error == "timeout" and "1.5 s of CPU time" in r.detail, r
    assert r.wall_s < limits.wall_limit_s  # the busy loop's CPU limit ended it, not the backstop
    if os.geteuid() == 0:  # the program ran as a fresh uid of its own: none of its processes may be left
        uid = int(r.stdout.split()[0])  # (other tests' sandboxes, running beside this one, have other uids)
        deadline = time.monotonic() + 10  # the kernel reaps the killed namespace's processes asynchronously
        while _sandbox_uid_processes(uid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _sandbox_uid_processes(uid) == set()
    assert list(tmp_path.iterdir()) == []  # the run's host folder is gone
    with open("/proc/self/mountinfo") as f:  # and none of its mounts reached the host
        assert str(tmp_path) not in f.read()


def test_the_time_limit_is_cpu_time_so_a_loaded_machine_changes_no_verdict():
    """A program needing ~0.5 s of CPU under a 1 s limit passes while four busy loops share its core and
    stretch its wall clock past that limit (a wall-clock limit made such programs `timeout` under load)."""
    with busy_loops_on_one_core(4):  # this thread too, so the sandbox it starts shares the loops' core
        r = run_program("print(sum(i * i for i in range(6 * 10**6)))", limits=SandboxLimits(timeout_s=1))
    assert r.ok and r.stdout.strip() == str(sum(i * i for i in range(6 * 10**6))), r
    assert r.wall_s > 1, r  # the load did stretch it past the limit: the property was exercised


def test_a_program_that_ignores_sigxcpu_or_waits_is_a_timeout():
    ignores = "import signal\nsignal.signal(signal.SIGXCPU, signal.SIG_IGN)\nwhile True:\n    pass\n"
    r = run_program(ignores, limits=SandboxLimits(timeout_s=1))
    assert r.error == "timeout" and "1 s of CPU time" in r.detail, r  # SIGKILL at the hard limit
    r = run_program("import time\ntime.sleep(60)\n", limits=SandboxLimits(timeout_s=1, wall_timeout_s=2))
    assert r.error == "timeout" and "2 s wall-clock limit" in r.detail and r.wall_s < 30, r
    assert SandboxLimits(timeout_s=10).wall_limit_s == 40  # the default backstop: 3 x the CPU limit + 10 s


def test_output_flood_is_capped_and_the_parent_stays_small():
    limits = SandboxLimits(timeout_s=20, max_output_bytes=1_000_000)
    tracemalloc.start()
    try:
        r = run_program("import sys\nchunk = 'x' * 2**20\nfor _ in range(100):\n    sys.stdout.write(chunk)\n",
                        limits=limits)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert r.error == "output_limit", r
    assert len(r.stdout) == limits.max_output_bytes
    assert peak < 8 * limits.max_output_bytes  # bounded by the cap, not by the 100 MB printed


@pytest.mark.parametrize("hook", LAYERS)
def test_signalling_the_parent_or_everyone_leaves_the_host_alone(hook):
    bystander = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        for src in (f"import os, signal\nos.kill({os.getpid()}, signal.SIGKILL)",
                    f"import os, signal\nos.kill({bystander.pid}, signal.SIGKILL)",
                    "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)",
                    "import os, signal\nos.kill(-1, signal.SIGKILL)",
                    f"import os, signal\nos.killpg({os.getpgid(0)}, signal.SIGKILL)"):
            r = run_program(src + "\nprint('survived')", limits=FAST, audit_hook=hook)
            if hook:
                assert r.error == "signal", r
            else:  # the pids are not in the sandbox's pid namespace, or are its own processes
                assert r.error in POT_ERRORS or r.ok
        assert bystander.poll() is None  # the test process is alive too, or we would not be here
    finally:
        bystander.kill()
        bystander.wait()


@pytest.mark.parametrize("hook", LAYERS)
def test_ctypes_is_refused(hook):
    for src in ("import ctypes\nctypes.CDLL(None).kill(-1, 9)", "import _ctypes"):
        r = run_program(src, limits=FAST, audit_hook=hook)
        attacked(r, hook, "forbidden_import")
        assert sys.base_prefix not in r.detail  # no host path in the detail


def test_subprocess_and_exec_are_refused():
    assert run_program("import subprocess", limits=FAST).error == "forbidden_import"
    r = run_program("import os, sys\nos.execv(sys.executable, [sys.executable, '-c', 'print(1)'])", limits=FAST)
    assert r.error == "process_limit", r


@pytest.mark.parametrize("hook", LAYERS)
def test_environment_holds_no_secret(monkeypatch, hook):
    monkeypatch.setenv("NPHE4V_SANDBOX_TEST_SECRET", "sk-test-5e1b")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-test-5e1b")
    r = run_program("import os\nprint(dict(os.environ))", limits=FAST, audit_hook=hook)
    assert r.ok, r
    assert "5e1b" not in r.stdout and "NPHE4V_SANDBOX_TEST_SECRET" not in r.stdout


def test_program_errors_are_classified():
    assert run_program("def f(:\n", limits=FAST).error == "syntax_error"
    r = run_program("print('partial')\n1/0\n", limits=FAST)
    assert (r.error, r.stdout, r.returncode) == ("runtime_error", "partial\n", 1)
    assert r.detail.startswith("ZeroDivisionError")
    assert run_program("raise SystemExit(3)", limits=FAST).returncode == 3
    r = run_program("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)", limits=FAST)
    assert r.error == "signal" and "SIGSEGV" in r.detail, r
    assert run_program("import numpy", limits=FAST).error == "forbidden_import"  # stdlib + networkx only


def test_missing_isolation_refuses_in_one_line(tmp_path):
    empty = str(tmp_path)  # a PATH with no unshare on it
    with pytest.raises(SandboxUnavailable) as e:
        check_isolation("strict", tool_path=empty)
    msg = str(e.value)
    assert "\n" not in msg and "unshare" in msg and "isolation='rlimits-only'" in msg
    # what is missing and the opt-in apart: a config or a command line names the opt-in in its own words
    assert "unshare" in e.value.reason and "rlimits-only" not in e.value.reason and "rlimits-only" in e.value.hint
    with pytest.raises(SandboxUnavailable):
        run_program("print(1)", tool_path=empty)


def test_denied_namespaces_refuse_in_one_line(tmp_path):
    # An unshare that fails as it does where a container's seccomp profile denies namespaces.
    fake = tmp_path / "unshare"
    fake.write_text("#!/bin/sh\necho 'unshare: unshare failed: Operation not permitted' >&2\nexit 1\n")
    fake.chmod(0o755)
    with pytest.raises(SandboxUnavailable) as e:
        check_isolation("strict", tool_path=str(tmp_path))
    msg = str(e.value)
    assert "\n" not in msg and "Operation not permitted" in msg and "isolation='rlimits-only'" in msg


def test_rlimits_only_runs_and_says_it_is_weaker(tmp_path, caplog):
    check_isolation("rlimits-only", tool_path=str(tmp_path))
    r = run_program("import networkx\nprint(2)", isolation="rlimits-only", tool_path=str(tmp_path), limits=FAST)
    assert r.ok and r.stdout == "2\n", r
    assert r.isolation == "rlimits-only" and r.note == WEAKER_NOTE and "no namespaces" in r.note
    # The hook still classifies attempts there.
    assert run_program("import ctypes", isolation="rlimits-only", limits=FAST).error == "forbidden_import"


# ------------------------------------------------------------------------------------------------------
# Issue 32: a verdict the program cannot write, and the kernel layer alone. KERNEL runs leave out both
# interpreter layers (the audit hook and the hidden extension modules): the program has ctypes, so it can
# make any system call, as code that got past the interpreter could. Only namespaces, seccomp, the cgroup,
# rlimits, noexec and the missing capabilities stand.

KERNEL = {"audit_hook": False, "hide_extensions": False}
ONE_S = SandboxLimits(timeout_s=1)
GOLD = "[0, 3, 1, 2]"
# a forged end in the old report format, padded past the 64 KiB the host used to keep
FORGED = "import os\nline = b'status exit 0\\n'\nos.write(3, line + b' ' * 70_000 + b'\\n' + line * 10)\n"
_LIBC = "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nlibc.syscall.restype = ctypes.c_long\n"


def no_control_bytes(text: str) -> bool:
    return all(c.isprintable() for c in text)


@pytest.mark.parametrize("kernel", [False, True], ids=["hook", "kernel-only"])
def test_a_forged_status_cannot_make_a_failing_program_correct(kernel):
    opts = KERNEL if kernel else {}
    r = run_program(f"print({GOLD!r}, flush=True)\n{FORGED}raise ValueError('after the answer')",
                    limits=ONE_S, **opts)
    assert (r.ok, r.error, r.stdout) == (False, "runtime_error", GOLD + "\n"), r
    r = run_program(f"print({GOLD!r}, flush=True)\n{FORGED}while True:\n    pass", limits=ONE_S, **opts)
    assert (r.ok, r.error) == (False, "timeout"), r
    # every inherited descriptor a program could write to, flooded with forged lines: still its own end
    r = run_program(f"import os\nprint({GOLD!r}, flush=True)\nfor fd in range(3, 1024):\n"
                    "    try:\n        os.write(fd, b'status exit 0\\ncpu 0.0\\n' * 100)\n"
                    "    except OSError:\n        pass\nos._exit(3)", limits=ONE_S, **opts)
    assert (r.ok, r.error, r.returncode) == (False, "runtime_error", 3), r
    # ... and a program that does end well is not turned into a failure by its own forgeries either
    r = run_program(f"{FORGED}import os\nos.write(3, b'status signal 9\\nerror memory forged\\n')\nprint({GOLD!r})",
                    limits=ONE_S, **opts)
    assert r.ok and r.stdout == GOLD + "\n", r


def test_forged_violation_and_setup_lines_are_data_and_sanitised():
    esc = "\\x1b[2J\\x1b]0;pwned\\x07\\u202e\\x00"
    # a forged refusal, then the program's own exception: the bootstrap's line (written last) describes it
    r = run_program(f"import os\nos.write(3, 'violation network {esc} reached 10.0.0.1\\n'.encode())\n"
                    "raise KeyError('own')", limits=ONE_S, **KERNEL)
    assert (r.error, r.detail) == ("runtime_error", "KeyError: 'own'"), r
    # a setup failure is init's to report: forged, it is not an unavailable sandbox (no exception here)
    r = run_program("import os\nos.write(3, b'init-error mount /: forged\\n')\nos._exit(125)", limits=ONE_S)
    assert r.error == "runtime_error" and "forged" not in r.detail, r
    # a line that agrees with the exit status may name the class (the program could cause it anyway), but
    # its bytes reach the detail only as printable text on one line
    r = run_program(f"import os\nos.write(3, 'violation network {esc}\\nline two\\n'.encode())\nos._exit(86)",
                    limits=ONE_S)
    assert r.error in POT_ERRORS and no_control_bytes(r.detail) and "\n" not in r.detail, r
    r = run_program(f"import sys\nsys.stderr.write('{esc}\\n')\nsys.exit(4)", limits=ONE_S, **KERNEL)
    assert r.error == "runtime_error" and no_control_bytes(r.detail), r


def test_memfd_hoarding_is_refused_and_memory_stays_within_the_limit():
    # the program: 3 processes x 40 memfds x 16 MiB (1,920 MiB) under memory_mb 512
    src = ("import os\n"
           "pids = [os.fork() for _ in range(2)]\n"
           "fds = []\n"
           "for _ in range(40):\n"
           "    fd = os.memfd_create('hoard')\n"
           "    os.write(fd, b'x' * 2**24)\n"
           "    fds.append(fd)\n"
           f"print({GOLD!r})\n")
    for opts in ({}, KERNEL):
        r = run_program(src, limits=SandboxLimits(timeout_s=5, memory_mb=512), **opts)
        assert r.error == "runtime_error" and "Operation not permitted" in r.detail, r
        assert r.memory_peak_mb is None or r.memory_peak_mb < 512, r


def test_sysv_shared_memory_is_refused():
    src = (_LIBC + "IPC_PRIVATE, IPC_CREAT = 0, 0o1000\n"
           "shm = libc.shmget(IPC_PRIVATE, 2**30, IPC_CREAT | 0o600)\n"
           "if shm < 0:\n    raise OSError(ctypes.get_errno(), 'shmget')\n"
           "addr = libc.shmat(shm, None, 0)\nprint('attached', addr)\n")
    r = run_program(src, limits=ONE_S, **KERNEL)
    assert r.error == "runtime_error" and "Errno 1" in r.detail and "attached" not in r.stdout, r


def test_rebinding_the_audit_hook_leaves_the_kernel_layer():
    """With the hook installed, the program rebinds what it checks (the bootstrap's globals, reached from its
    frame); the hook then lets everything through, and the kernel layer still refuses."""
    src = ("import sys\n"
           "g = sys._getframe(1).f_globals\n"
           "g['_hook'].__code__ = (lambda event, args: None).__code__\n"
           "g['_FORBIDDEN_MODULES'] = frozenset()\n"
           "import os\n"
           "os.system('echo escaped')\n"  # no shell in the sandbox's root
           "print(open('/etc/passwd').read())\n")
    r = run_program(src, limits=ONE_S)
    assert r.error == "filesystem" and "root:" not in r.stdout and "escaped" not in r.stdout, r
    assert "No such file" in r.detail, r  # the kernel's answer: the hook no longer refused anything
    r = run_program("import sys\nsys._getframe(1).f_globals['_FORBIDDEN_MODULES'] = frozenset()\nimport ctypes\n",
                    limits=ONE_S)
    assert r.error == "forbidden_import" and "not allowed" not in r.detail, r  # the extension is an empty file


def test_a_c_extension_or_an_interpreter_written_to_tmp_cannot_run():
    import _ctypes

    with open(_ctypes.__file__, "rb") as f:
        import base64

        blob = base64.b64encode(f.read()).decode()
    name = os.path.basename(_ctypes.__file__)
    load = ("import base64, sys\n"
            f"open('/tmp/{name}', 'wb').write(base64.b64decode(sys.stdin.read()))\n"
            "sys.path.insert(0, '/tmp')\n"
            "import _ctypes\nprint('loaded', _ctypes)\n")
    r = run_program(load, stdin=blob, limits=ONE_S, audit_hook=False)  # hidden _ctypes, no hook: /tmp is the way
    assert r.error == "forbidden_import" and "loaded" not in r.stdout, r
    assert "failed to map segment" in r.detail or "Operation not permitted" in r.detail, r
    r = run_program(load, stdin=blob, limits=ONE_S)  # the hook refuses loading code from /tmp
    assert r.error == "forbidden_import", r
    r = run_program("import os, shutil, sys\nshutil.copy(sys.executable, '/tmp/py')\nos.chmod('/tmp/py', 0o755)\n"
                    "os.execv('/tmp/py', ['/tmp/py', '-c', 'print(1)'])", limits=ONE_S, **KERNEL)
    assert r.error == "runtime_error" and "Permission denied" in r.detail, r


def test_namespaces_mounts_and_kernel_interfaces_are_refused_by_seccomp():
    """Each call a graph program never needs, made directly (ctypes): the kernel's answer, with the hook off."""
    calls = {  # name: (syscall number on x86_64, arguments)
        "unshare(NEWUSER|NEWNS)": (272, "0x10000000 | 0x20000"),
        "clone(NEWUSER)": (56, "0x10000000 | 17, None, None, None, None"),
        "setns": (308, "0, 0"),
        "mount(tmpfs)": (165, "b'none', b'/tmp', b'tmpfs', 0, None"),
        "io_uring_setup": (425, "8, ctypes.create_string_buffer(120)"),
        "perf_event_open": (298, "ctypes.create_string_buffer(128), 0, -1, -1, 0"),
        "bpf": (321, "0, ctypes.create_string_buffer(128), 128"),
        "userfaultfd": (323, "0"),
        "ptrace(ATTACH, 1)": (101, "16, 1, None, None"),
        "process_vm_writev(1)": (311, "1, None, 0, None, 0, 0"),
        "add_key": (248, "b'user', b'k', b'v', 1, -3"),
        "keyctl": (250, "0, -3, 0"),
        "memfd_create": (319, "b'x', 0"),
        "shmget": (29, "0, 2**20, 0o1600"),
        "sysinfo": (99, "ctypes.create_string_buffer(128)"),
        "prctl(PR_SET_MM)": (157, "35, 1, 0, 0, 0"),
        "personality(READ_IMPLIES_EXEC)": (135, "0x0400000"),
        "clone3": (435, "ctypes.create_string_buffer(88), 88"),
    }
    got = _syscalls(calls)
    import errno

    for name in calls:
        want = errno.ENOSYS if name == "clone3" else errno.EPERM
        assert got[name] == [-1, want], (name, got[name])


def _syscalls(calls: dict[str, tuple[int, str]]) -> dict[str, list[int]]:
    """Each system call (x86_64 number, arguments as Python source) made once inside the kernel-only sandbox:
    {name: [return value, errno]}. Skips the test on another architecture."""
    import json

    if os.uname().machine != "x86_64":
        pytest.skip("the syscall numbers below are x86_64's")
    src = _LIBC + "import json, os\nout = {}\n"
    for name, (nr, args) in calls.items():
        src += f"r = libc.syscall({nr}{', ' if args else ''}{args})\nout[{name!r}] = [r, ctypes.get_errno()]\n"
    src += "print(json.dumps(out))\n"
    r = run_program(src, limits=ONE_S, **KERNEL)
    assert r.ok, r
    return json.loads(r.stdout)


def test_a_system_call_of_another_abi_kills_the_program():
    # x32 numbering (bit 30) of memfd_create: a filter written for x86_64 alone would let it through
    if os.uname().machine != "x86_64":
        pytest.skip("x86_64's x32 ABI")
    r = run_program(_LIBC + "print(libc.syscall(0x40000000 | 319, b'x', 0))", limits=ONE_S, **KERNEL)
    assert (r.error, r.returncode, r.stdout) == ("signal", -31, ""), r


def test_a_fork_chain_is_bounded_by_the_cpu_time_of_all_its_processes():
    """Each child spends 0.8 s (under the per-process 1 s) and the parent waits for it: 4 s in all."""
    src = ("import os, time\n"
           "for _ in range(5):\n"
           "    pid = os.fork()\n"
           "    if pid == 0:\n"
           "        t = time.process_time()\n"
           "        while time.process_time() - t < 0.8:\n"
           "            pass\n"
           "        os._exit(0)\n"
           "    os.waitpid(pid, 0)\n"
           f"print({GOLD!r})\n")
    r = run_program(src, limits=ONE_S, **KERNEL)
    assert r.error == "timeout" and "together" in r.detail and GOLD not in r.stdout, r
    assert r.cpu_s is not None and r.cpu_s < 2, r  # stopped near the limit, not after 4 s


def test_memory_is_bounded_for_all_the_programs_processes_together():
    # two processes of 150 MB each fit their own 256 MB address space, not the 256 MB of the whole: each
    # holds its block (until `release` closes) and says so on a pipe of its own (EOF if it was killed)
    src = ("import os\n"
           "release_r, release_w = os.pipe()\n"
           "kids = []\n"
           "for _ in range(2):\n"
           "    ready_r, ready_w = os.pipe()\n"
           "    pid = os.fork()\n"
           "    if pid == 0:\n"
           "        os.close(release_w)\n"
           "        block = b'x' * (150 * 2**20)\n"
           "        os.write(ready_w, b'1')\n"
           "        os.read(release_r, 1)\n"
           "        os._exit(0)\n"
           "    kids.append(pid)\n"
           "    os.close(ready_w)\n"
           "    os.read(ready_r, 1)\n"
           "os.close(release_w)\n"
           "ends = [os.waitpid(p, 0)[1] for p in kids]\n"
           "assert ends == [0, 0], ends\n"
           f"print({GOLD!r})\n")
    r = run_program(src, limits=SandboxLimits(timeout_s=5, memory_mb=256), **KERNEL)
    assert r.error == "memory" and "together" in r.detail, r
    assert r.memory_peak_mb is not None and r.memory_peak_mb <= 256 + 1, r


@pytest.mark.parametrize("kernel", [False, True], ids=["hook", "kernel-only"])
def test_host_facts_are_not_visible(kernel):
    src = ("import os, time, json\n"
           "facts = {'node': os.uname().nodename, 'mono': time.monotonic(),\n"
           "         'boot': time.clock_gettime(time.CLOCK_BOOTTIME), 'elapsed': os.times().elapsed}\n"
           "for f in ('/proc/uptime', '/proc/loadavg', '/proc/meminfo', '/etc/hostname', '/sys'):\n"
           "    facts[f] = os.path.exists(f)\n"
           "try:\n    facts['ram'] = os.sysconf('SC_PHYS_PAGES')\nexcept (OSError, ValueError):\n"
           "    facts['ram'] = None\n"
           "print(json.dumps(facts))\n")
    r = run_program(src, limits=ONE_S, **(KERNEL if kernel else {}))
    assert r.ok, r
    import json

    facts = json.loads(r.stdout)
    assert facts["node"] == "sandbox" != socket.gethostname()
    assert facts["mono"] < 60 and facts["boot"] < 60  # the sandbox's clocks start near 0
    assert abs(facts["elapsed"] - os.times().elapsed) > 60
    assert not any(facts[f] for f in ("/proc/uptime", "/proc/loadavg", "/proc/meminfo", "/etc/hostname", "/sys"))
    # sysinfo is refused, so the C library cannot count the RAM (it returns an error or noise)
    assert facts["ram"] != os.sysconf("SC_PHYS_PAGES"), facts


def test_signalling_the_supervisor_leaves_the_verdict_to_it():
    """The program tries to end init (pid 1 of its namespace) or every process it can see, then fails: the
    supervisor still sees that failure."""
    src = ("import os, signal\n"
           "for sig in (signal.SIGKILL, signal.SIGTERM, signal.SIGSTOP):\n"
           "    for pid in (1, -1, 0):\n"
           "        try:\n            os.kill(pid, sig) if pid != 0 else None\n        except OSError:\n"
           "            pass\n"
           "raise SystemExit(5)\n")
    r = run_program(src, limits=ONE_S, **KERNEL)
    assert (r.ok, r.error, r.returncode) == (False, "runtime_error", 5), r


def test_proc_self_mem_cannot_be_mounted_or_written():
    src = (_LIBC + "import os\nprint(os.path.exists('/proc/self/mem'))\n"
           "os.makedirs('/tmp/proc', exist_ok=True)\n"
           "r = libc.mount(b'proc', b'/tmp/proc', b'proc', 0, None)\nprint(r, ctypes.get_errno())\n"
           "open('/proc/self/mem', 'r+b')\n")
    r = run_program(src, limits=ONE_S, **KERNEL)
    assert r.stdout == "False\n-1 1\n" and r.error == "filesystem", r


def test_rlimits_only_also_gets_the_filter_and_the_cgroup():
    r = run_program("import os\nos.memfd_create('x')", isolation="rlimits-only", limits=ONE_S, **KERNEL)
    assert r.error == "runtime_error" and "Operation not permitted" in r.detail, r
    r = run_program("print(1)", isolation="rlimits-only", limits=ONE_S)
    assert r.ok and (r.cpu_s is not None) == (os.geteuid() == 0), r


def _no_cgroup(src: str, limits: SandboxLimits) -> SandboxResult:
    """A strict run without the cgroup, as where none can be made (kernel layer alone, ctypes available)."""
    import shutil

    from evalcore.sandbox.launch import run_once

    return run_once(src, "", limits, "strict", shutil.which("unshare"), audit_hook=False, hide_extensions=False,
                    cgroup=False)


CHAIN = ("import os, time\nfor _ in range(5):\n    pid = os.fork()\n    if pid == 0:\n"
         "        t = time.process_time()\n        while time.process_time() - t < 0.8:\n            pass\n"
         "        os._exit(0)\n    os.waitpid(pid, 0)\n" f"print({GOLD!r})\n")


@pytest.mark.parametrize("userns", [False, True], ids=["root", "user-namespace"])
def test_without_a_cgroup_init_bounds_the_totals(monkeypatch, userns):
    """The fallback (no cgroup: not root, or no controller): init sums the CPU time and the proportional memory
    of the namespace's processes from a proc only it holds, and ends the run past either limit. `userns` takes
    the unprivileged path (a user namespace, as a non-root user gets) while running as root."""
    if userns:
        monkeypatch.setattr(os, "geteuid", lambda: 1000)
    r = _no_cgroup(CHAIN, ONE_S)
    assert r.error == "timeout" and "together" in r.detail and r.cpu_s is None, r
    held = ("import os, select\nkids = []\nfor _ in range(2):\n    r, w = os.pipe()\n    pid = os.fork()\n"
            "    if pid == 0:\n        block = b'x' * (150 * 2**20)\n        os.write(w, b'1')\n"
            "        select.select([], [], [], 30)\n        os._exit(0)\n    os.close(w)\n    os.read(r, 1)\n"
            "select.select([], [], [], 30)\n")
    r = _no_cgroup(held, SandboxLimits(timeout_s=5, memory_mb=256))
    assert r.error == "memory" and "together" in r.detail, r
    r = _no_cgroup(f"print({GOLD!r}, flush=True)\n{FORGED}raise ValueError('after')", ONE_S)
    assert (r.error, r.stdout) == ("runtime_error", GOLD + "\n"), r
    r = _no_cgroup("import os\nprint(os.uname().nodename, os.path.exists('/proc'))", ONE_S)
    assert r.ok and r.stdout == "sandbox False\n", r  # init's proc is not the program's


def test_groups_left_by_a_dead_scorer_are_swept_and_a_run_leaves_none():
    from evalcore.sandbox import cgroup

    if cgroup.probe():
        pytest.skip(f"no cgroup here: {cgroup.probe()}")
    group, _ = cgroup.RunCgroup.create(64, 4)
    assert group is not None
    parents = sorted({d.parent for d in group.dirs.values()})
    group.remove()
    dead = next(p for p in range(4_000_000, 4_100_000) if not os.path.exists(f"/proc/{p}"))
    stale = [p / f"nphe4v-sandbox-{dead}-0" for p in parents]
    alive = [p / f"nphe4v-sandbox-{os.getpid()}-0" for p in parents]
    try:
        for d in stale + alive:
            d.mkdir()
        cgroup._sweep.__wrapped__(tuple(str(p) for p in parents))
        assert not any(d.exists() for d in stale) and all(d.exists() for d in alive)
    finally:
        for d in stale + alive:
            if d.exists():
                d.rmdir()
    mine = f"nphe4v-sandbox-{os.getpid()}-"  # other processes' runs may be going on beside this one
    assert run_program("print(1)", limits=ONE_S).ok
    assert [n for p in parents for n in os.listdir(p) if n.startswith(mine)] == []


@pytest.mark.parametrize("fd", [2, 3], ids=["stderr", "fd3"])
def test_a_flood_of_stderr_or_fd3_is_capped_and_costs_the_scorer_little(fd):
    """stderr and fd 3 are read by the scorer, outside the program's cgroup. Unbounded, a program writing either
    without end for its 3 CPU s cost the scorer 9 CPU s (and a timeout 12 s later); they are capped like stdout."""
    limits = SandboxLimits(timeout_s=5, max_output_bytes=200_000)
    before = time.process_time()
    r = run_program(f"import os\nchunk = b'e' * 65536\nwhile True:\n    os.write({fd}, chunk)\n", limits=limits)
    spent = time.process_time() - before
    assert r.error == "output_limit" and r.detail.endswith("to " + ("stderr" if fd == 2 else "fd 3")), r
    assert spent < 1.0, spent


def test_host_wide_kernel_resources_and_filesystem_sizes_are_refused():
    """io_setup draws on one host-wide count (fs.aio-max-nr: a program held all 65,536 events and every io_setup
    on the host failed); sync/syncfs write back the host's dirty pages (200 MB flushed by one os.sync()); inotify
    instances are 128 per user, the caller's in a user namespace (a program took them all);
    statfs shows the host disk's size and free space, and /dev's devtmpfs size, half the RAM."""
    calls = {"io_setup": (206, "128, ctypes.byref(ctypes.c_ulong(0))"), "sync": (162, ""),
             "syncfs": (306, "os.open('/usr', os.O_RDONLY)"),
             "statfs(/dev/null)": (137, "b'/dev/null', ctypes.create_string_buffer(120)"),
             "fstatfs": (138, "0, ctypes.create_string_buffer(120)"), "ustat": (136, "0, ctypes.create_string_buffer(32)"),
             "inotify_init1": (294, "0")}
    import errno

    assert _syscalls(calls) == {name: [-1, errno.EPERM] for name in calls}


def test_devices_and_rlimits_reveal_neither_the_boot_time_nor_the_ram():
    """The host's /dev/null carries the time its devtmpfs was made (the boot) and RLIMIT_SIGPENDING's inherited
    default is the RAM / 256 KiB (96,369 on a 24 GB host): fresh device nodes, a fixed limit."""
    src = ("import json, os, resource, time\n"
           "st = os.stat('/dev/null')\n"
           "print(json.dumps({'age': time.time() - st.st_ctime, 'sigpending': resource.getrlimit(resource.RLIMIT_SIGPENDING),"
           " 'null': open('/dev/null', 'wb').write(b'x'), 'zero': len(open('/dev/zero', 'rb').read(4)),"
           " 'urandom': len(open('/dev/urandom', 'rb').read(4))}))\n")
    r = run_program(src, limits=ONE_S, **KERNEL)
    assert r.ok, r
    import json

    facts = json.loads(r.stdout)
    assert facts["sigpending"] == [1024, 1024] and (facts["null"], facts["zero"], facts["urandom"]) == (1, 4, 4), facts
    if os.geteuid() == 0:  # fresh nodes need root; in a user namespace the host's are bound
        assert abs(facts["age"]) < 60, facts


def test_a_program_cannot_end_init_with_a_signal_in_a_user_namespace(monkeypatch):
    """In a user namespace the program is uid 0 like init, and Python's SIGINT handler made init's pid-1
    protection moot: kill(1, SIGINT) ended init, and the run ended as `killed` instead of the program's own end."""
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    r = _no_cgroup("import os, signal\nfor s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):\n    os.kill(1, s)\n"
                   "raise SystemExit(5)\n", ONE_S)
    assert (r.error, r.returncode) == ("runtime_error", 5), r


def test_in_the_weaker_mode_nothing_the_program_left_outlives_the_run():
    """rlimits-only without a cgroup (a user who is not root): a child that tries to leave the process group and
    then lives on holding stdout. It used to hold the run until the wall-clock limit (`timeout`) and then
    outlive it; setsid is refused, the run ends with the program, and the supervisor kills the group."""
    import shutil

    from evalcore.sandbox.launch import run_once

    src = ("import os, select\nr, w = os.pipe()\nif os.fork() == 0:\n    try:\n        os.setsid()\n"
           "        said = 'left'\n    except OSError as e:\n        said = str(e.errno)\n"
           "    os.write(w, f'{said} {os.getpid()}'.encode())\n    select.select([], [], [], 60)\n    os._exit(0)\n"
           "print(os.read(r, 64).decode(), flush=True)\n")
    r = run_once(src, "", SandboxLimits(timeout_s=1, wall_timeout_s=5), "rlimits-only", shutil.which("unshare"),
                 audit_hook=False, hide_extensions=False, cgroup=False)
    said, pid = r.stdout.split()
    try:
        assert r.ok and said == "1", r  # EPERM
        try:
            fd = os.pidfd_open(int(pid))
        except ProcessLookupError:
            return  # already gone
        try:
            assert select.select([fd], [], [], 5)[0], "the orphan is still alive"
        finally:
            os.close(fd)
    finally:
        try:
            os.kill(int(pid), 9)
        except ProcessLookupError:
            pass


@pytest.mark.parametrize("cgroup", [True, False], ids=["cgroup", "no-cgroup"])
def test_unix_sockets_are_refused_so_their_buffers_hold_nothing(cgroup):
    """Data queued on AF_UNIX sockets is kernel memory that only a cgroup counts: without one (init watches the
    proportional set size), 3 processes held 1,410 MiB of socket buffers under a 512 MB limit, verdict ok."""
    import shutil

    from evalcore.sandbox.launch import run_once

    src = "import socket\na, b = socket.socketpair(socket.AF_UNIX)\nprint('made')\n"
    r = run_once(src, "", ONE_S, "strict", shutil.which("unshare"), audit_hook=False, hide_extensions=False,
                 cgroup=cgroup)
    assert (r.error, r.stdout) == ("network", ""), r
    assert "Address family not supported" in r.detail, r


@pytest.mark.parametrize("hook", LAYERS)
def test_record_locks_are_refused_so_they_hold_no_uncharged_memory(hook):
    """POSIX record locks have no count limit and the memory cgroup does not charge them (Linux reverted that
    in 6.3): 16 processes held 1.92 million, 359 MiB of kernel slab, under a 512 MB limit (the cgroup saw
    15 MB; verdict ok). They answer ENOLCK; flock, one lock per open file, stays."""
    src = ("import fcntl, os\nfd = os.open('/tmp/f', os.O_CREAT | os.O_RDWR)\nfcntl.flock(fd, fcntl.LOCK_EX)\n"
           "for lock in (lambda: fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 0),\n"
           "             lambda: fcntl.fcntl(fd, 37, bytes(32))):  # F_OFD_SETLK\n"
           "    try:\n        lock()\n        print('locked')\n    except OSError as e:\n        print(e.errno)\n")
    r = run_program(src, limits=ONE_S, **({} if hook else KERNEL))
    assert r.ok and r.stdout == "37\n37\n", r  # ENOLCK
