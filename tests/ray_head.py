"""A throwaway `ray start --head` for tests: every port chosen free, its own temp dir, stopped by process group.

Other Ray clusters may run on the same machine (the session's own, other users'): nothing here uses a
default port or the default temp dir, and nothing stops a process this helper did not start.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

BIN = Path(sys.executable).parent


def free_port() -> int:
    return free_ports(1)[0]


def free_ports(count: int) -> list[int]:
    """`count` distinct free ports. The sockets stay bound until all are chosen: probing one at a time can hand
    the same port out twice, and `ray start` then refuses two components on one port (seen once in the suite:
    the dashboard agent's and the runtime-env agent's)."""
    with contextlib.ExitStack() as stack:
        socks = [stack.enter_context(socket.socket()) for _ in range(count)]
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]


@dataclass
class Head:
    proc: subprocess.Popen
    gcs_port: int
    dashboard_port: int
    temp_root: str  # RAY_TMPDIR of the head: a driver with the same value auto-detects this cluster
    argv: list[str] = field(default_factory=list)  # the `ray start` command without its ports (for a restart)
    env: dict[str, str] = field(default_factory=dict)
    starts: int = 1

    @property
    def gcs_address(self) -> str:
        return f"127.0.0.1:{self.gcs_port}"

    @property
    def dashboard_url(self) -> str:
        return f"http://127.0.0.1:{self.dashboard_port}"


def port_flags() -> tuple[int, int, list[str]]:
    gcs, dash, agent, agent_grpc, client, metrics, rt_env = free_ports(7)
    return gcs, dash, [
        f"--port={gcs}", f"--dashboard-port={dash}", f"--dashboard-agent-listen-port={agent}",
        f"--dashboard-agent-grpc-port={agent_grpc}", f"--ray-client-server-port={client}",
        f"--metrics-export-port={metrics}", f"--runtime-env-agent-port={rt_env}",
    ]


def start_head(env: dict[str, str], command: list[str] | None = None, num_cpus: int = 2) -> Head:
    """Start a head (`command` is the `ray start --head ...` to run, ports and --block appended)."""
    gcs, dash, ports = port_flags()
    # Ray's unix sockets live under the temp dir and must stay under 107 bytes
    temp_root = tempfile.mkdtemp(prefix="rh", dir="/tmp")
    env = {**env, "RAY_TMPDIR": temp_root}
    env.pop("RAY_ADDRESS", None)
    cmd = command or [str(BIN / "ray"), "start", "--head", "--dashboard-host=127.0.0.1"]
    argv = [*cmd, "--block", "--node-ip-address=127.0.0.1", f"--num-cpus={num_cpus}", "--disable-usage-stats"]
    proc = subprocess.Popen([*argv, *ports], env=env, start_new_session=True, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    return Head(proc, gcs, dash, temp_root, argv, env)


# Ray gives a starting node a hard-coded 30 s to register with its GCS (ray/_private/node.py); on a machine
# loaded past ~15 (a full test run beside other work on 2 cores) a head or worker sometimes misses it and
# `ray start` exits with this line. Nothing about the code under test: the node is started again, as the
# product starts its local Ray again (evalcore.local_ray, whose line and bound these are).
from evalcore.local_ray import MAX_STARTS, STARTUP_TIMEOUT  # noqa: E402


def _restarted(head: Head) -> bool:
    """When the head exited because Ray's start-up window closed, start it again on fresh ports (same temp
    dir) and say so; False when it exited for another reason or has had its starts."""
    out = head.proc.stdout.read() if head.proc.stdout else ""
    if STARTUP_TIMEOUT not in out or head.starts >= MAX_STARTS:
        raise RuntimeError(out or "head exited")
    gcs, dash, ports = port_flags()
    head.proc = subprocess.Popen([*head.argv, *ports], env=head.env, start_new_session=True,
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    head.gcs_port, head.dashboard_port, head.starts = gcs, dash, head.starts + 1
    return True


def _port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def wait_for_jobs_api(head: Head, env: dict[str, str], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        # the dashboard's port first (a connect, every 0.2 s): each `ray job list` below is a new Python
        # importing Ray (~2 CPU s), and the head takes 10-30 s to come up on a loaded machine
        if not _port_open(head.dashboard_port):
            if head.proc.poll() is not None and _restarted(head):
                continue
            time.sleep(0.2)
            continue
        probe = subprocess.run([str(BIN / "ray"), "job", "list", "--address", head.dashboard_url],
                               env=env, capture_output=True, text=True, timeout=60)
        if probe.returncode == 0:
            return
        if head.proc.poll() is not None and _restarted(head):
            continue
        time.sleep(2)
    raise TimeoutError(f"ray head did not answer on {head.dashboard_url} in {timeout} s")


def wait_for_gcs(head: Head, timeout: float = 600) -> None:
    """Until `ray start` has written the cluster's address file (after the head node is fully up). The bound
    is a safety net: with one core busy-looped, a head once took over 180 s to come up."""
    address_file = Path(head.temp_root, "ray", "ray_current_cluster")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if address_file.is_file() and address_file.read_text().strip():
            return
        if head.proc.poll() is not None and _restarted(head):
            continue
        time.sleep(1)
    raise TimeoutError(f"ray head on {head.gcs_address} did not come up in {timeout} s")


def stop_head(head: Head) -> None:
    """SIGKILL the head's process group: every Ray process of the head is in it (`ray start` leads the
    session, its reaper kills the group, workers exit with their raylet), and nothing of a throwaway head needs
    to be saved. SIGTERM made `ray start --block` stop its processes one by one, gracefully: 34 s of a test's
    wall on a loaded machine, for a cluster whose temp dir is deleted next."""
    try:
        os.killpg(head.proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    head.proc.wait(timeout=60)
    import shutil

    shutil.rmtree(head.temp_root, ignore_errors=True)
