"""Attacks on the sandbox for model-written programs (nphe4v.core.sandbox); real processes, no mocks.

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

from nphe4v.core.sandbox import (
    POT_ERRORS,
    WEAKER_NOTE,
    SandboxLimits,
    SandboxResult,
    SandboxUnavailable,
    check_isolation,
    run_program,
)
from nphe4v.core.sandbox.layout import RUN_UIDS

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
