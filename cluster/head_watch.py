"""Is the Ray head there: a bounded probe of its GCS before joining, and a watch over it while a run goes on.

Why a probe before `ray.init`: given an address where no GCS answers, Ray 2.60 retries for minutes (829 s
measured), printing a C++ warning every few seconds, before it raises. `probe_gcs` asks the address one gRPC
question (the GCS's `GetClusterId`) with a bounded timeout, so a wrong `ray.address` fails in seconds with one
line. A refusal for want of a token still proves a GCS answered (token problems are `ray.init`'s to name).

Why a watch: when the head dies, every GCS call of the driver (`ray.cluster_resources`, `ray.kill`, creating
a named actor) blocks in Ray's C++ client, deaf to signals, until Ray's reconnect timeout (60 s by default,
`RAY_gcs_rpc_server_reconnect_timeout_s`) ends the process with Ray's own line. `HeadWatch` probes the GCS
port from a thread every second: the scheduler asks it (`reachable`) before any GCS call and reads the
cluster's resources from it (fetched by the watch's own thread, never by the loop). When the port has not
answered for `lost_after_s` (half Ray's reconnect timeout, at most 30 s), the watch stops the run
(`cluster.interrupts.stop_from_thread`): the driver saves what finished and ends with the project's line.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

T = TypeVar("T")

PROBE_TIMEOUT_S = 15.0  # one GCS question when joining (a connect and one gRPC call); whole probe <= 2x this
RESOURCES_EVERY_S = 5.0


def split_address(address: str) -> tuple[str, int] | None:
    """host and port of a `host:port` address (IPv6 in brackets), or None when it is not one."""
    host, sep, port = address.strip().rpartition(":")
    if not sep or not port.isdigit() or not host:
        return None
    return host.strip("[]"), int(port)


def bootstrap_address(address: str) -> str | None:
    """The `host:port` Ray would join for `address` ("auto": the cluster `ray start` recorded on this machine),
    or None when Ray decides elsewhere (Ray Client `ray://`, or "auto" with nothing recorded: `ray.init`
    then says so quickly)."""
    if address.startswith("ray://") or address == "local":
        return None
    if address == "auto":
        try:
            from ray._private.services import canonicalize_bootstrap_address

            return canonicalize_bootstrap_address(address)
        except Exception:
            return None
    return address


def call_with_timeout(fn: Callable[[], T], timeout_s: float) -> T:
    """`fn()` in a daemon thread, waited for at most `timeout_s` (TimeoutError then: the thread is left to
    end or block on its own; it never keeps the process alive)."""
    box: list[Any] = []

    def run() -> None:
        try:
            box.append((True, fn()))
        except BaseException as e:  # handed to the caller
            box.append((False, e))

    t = threading.Thread(target=run, daemon=True, name="nphe4v-bounded-call")
    t.start()
    t.join(timeout_s)
    if not box:
        raise TimeoutError(f"no answer in {timeout_s:g} s")
    ok, value = box[0]
    if not ok:
        raise value
    return value


def probe_gcs(address: str, timeout_s: float = PROBE_TIMEOUT_S) -> str | None:
    """None when a Ray GCS answers at `address` (host:port), else why not, in a few words."""
    parts = split_address(address)
    if parts is None:
        return f"{address!r} is not host:port"

    def ask() -> str | None:
        import grpc
        from ray.core.generated import gcs_service_pb2, gcs_service_pb2_grpc

        try:
            with socket.create_connection(parts, timeout=timeout_s):
                pass
        except socket.gaierror as e:
            return f"host {parts[0]!r} not found ({e.strerror or e})"
        except OSError as e:
            return f"nothing answers there ({e.strerror or type(e).__name__})"
        channel = grpc.insecure_channel(address)
        try:
            gcs_service_pb2_grpc.NodeInfoGcsServiceStub(channel).GetClusterId(
                gcs_service_pb2.GetClusterIdRequest(), timeout=timeout_s)
        except grpc.RpcError as e:
            code = e.code()
            if code in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED):
                return None  # a GCS that wants a token: it is there
            if code == grpc.StatusCode.UNIMPLEMENTED:
                return "a gRPC server answers there, but not a Ray GCS"
            detail = " ".join(str(e.details() or "").split())[:120]
            return f"no Ray GCS answers there ({code.name}: {detail})" if detail else f"no Ray GCS ({code.name})"
        finally:
            channel.close()
        return None

    try:
        return call_with_timeout(ask, 2 * timeout_s + 5)
    except TimeoutError:
        return f"no answer in {2 * timeout_s + 5:g} s"
    except Exception as e:
        return f"{type(e).__name__}: {' '.join(str(e).split())[:120]}"


def token_refused(address: str, timeout_s: float = PROBE_TIMEOUT_S) -> bool:
    """Whether the GCS at `address` (host:port) refuses the token this environment's `ray.init` would send (none
    when RAY_AUTH_MODE is set to anything but `token`, or no token is found). Ray's client retries a refused
    connection for ~20 s before it raises; asked first, the refusal takes one gRPC call. False whenever it
    cannot be told: `ray.init` then decides, as before."""

    def ask() -> bool:
        import grpc
        from ray._raylet import AuthenticationTokenLoader
        from ray.core.generated import gcs_service_pb2, gcs_service_pb2_grpc

        # Ray's rule (ray._private.authentication): an explicit mode is obeyed; unset, a token found turns it on
        mode = os.environ.get("RAY_AUTH_MODE")
        loader = AuthenticationTokenLoader.instance()
        sends = (mode is None or mode.lower() == "token") and loader.has_token(ignore_auth_mode=True)
        metadata = tuple(loader.get_token_for_http_header().items()) if sends else ()
        channel = grpc.insecure_channel(address)
        try:
            gcs_service_pb2_grpc.NodeInfoGcsServiceStub(channel).GetClusterId(
                gcs_service_pb2.GetClusterIdRequest(), timeout=timeout_s, metadata=metadata)
        except grpc.RpcError as e:
            return e.code() in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED)
        finally:
            channel.close()
        return False

    try:
        return call_with_timeout(ask, timeout_s + 5)
    except Exception:
        return False


def reconnect_timeout_s() -> float:
    """How long Ray's C++ client waits for a lost GCS before it ends the process."""
    try:
        return float(os.environ.get("RAY_gcs_rpc_server_reconnect_timeout_s", 60))
    except ValueError:
        return 60.0


class HeadWatch:
    """Probes the GCS port every `every_s` from a daemon thread; stops the run once it has been unreachable
    for `lost_after_s`. `resources` is the cluster's latest totals (fetched from a second thread while the
    head answers), `reachable` whether the last probe got through."""

    def __init__(self, gcs_address: str, *, lost_after_s: float | None = None, every_s: float = 1.0,
                 on_lost: Callable[[str], None] | None = None, ray_up: Callable[[], bool] | None = None,
                 on_stuck: Callable[[str], None] | None = None, stuck_after_s: float | None = None) -> None:
        self.address = gcs_address
        self.lost_after_s = lost_after_s if lost_after_s is not None else min(30.0, reconnect_timeout_s() / 2)
        self.every_s = every_s
        self.reachable = True
        self.lost = False
        self.resources: dict[str, float] | None = None
        self._down_since: float | None = None
        self._on_lost = on_lost or _stop_run
        # the main thread did not act on the stop (it was inside a GCS call when the head died, deaf to
        # signals): before Ray's own exit, leave with the project's line anyway
        self._on_stuck = on_stuck or _leave_now
        self.stuck_after_s = (stuck_after_s if stuck_after_s is not None
                              else max(1.0, reconnect_timeout_s() - self.lost_after_s - 5.0))
        self._ray_up = ray_up or _ray_initialized  # a shut-down Ray is not a lost head: the watch ends
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._probe_loop, daemon=True, name="nphe4v-head-watch"),
                         threading.Thread(target=self._resources_loop, daemon=True, name="nphe4v-cluster-view")]

    def start(self) -> HeadWatch:
        for t in self._threads:
            t.start()
        return self

    def close(self) -> None:
        self._stop.set()

    def _port_answers(self) -> bool:
        parts = split_address(self.address)
        if parts is None:
            return True  # nothing to probe: never declared lost
        try:
            with socket.create_connection(parts, timeout=max(0.5, self.every_s)):
                return True
        except OSError:
            return False

    def _probe_loop(self) -> None:
        while not self._stop.is_set() and self._ray_up():
            up = self._port_answers()
            now = time.monotonic()
            self.reachable = up
            if up:
                self._down_since = None
            else:
                self._down_since = self._down_since or now
                if not self.lost and now - self._down_since >= self.lost_after_s:
                    self.lost = True
                    reason = (f"the Ray head is lost (its GCS at {self.address} has not answered for "
                              f"{now - self._down_since:.0f} s; start the cluster again)")
                    self._on_lost(reason)
                    if not self._stop.wait(self.stuck_after_s):  # closed once the run has left its loop
                        self._on_stuck(reason)
                    return
            self._stop.wait(self.every_s)

    def _resources_loop(self) -> None:
        import ray

        while not self._stop.is_set():
            if self.reachable:
                with contextlib.suppress(Exception):
                    self.resources = {k: float(v) for k, v in ray.cluster_resources().items()
                                      if k in ("CPU", "GPU")}
            self._stop.wait(RESOURCES_EVERY_S)


def _ray_initialized() -> bool:
    import ray

    return ray.is_initialized()


def _leave_now(reason: str) -> None:
    """The last resort: the samples already on disk are whole (shards are written atomically); the manifest
    still says `running`, and a rerun resumes all the same."""
    import sys

    print(f"{reason}; the driver could not save its state (a call to the lost head blocked); the samples "
          "already written are kept; rerun the same command to resume", file=sys.stderr, flush=True)
    from cluster import interrupts

    os._exit(interrupts.STOPPED_EXIT)


def _stop_run(reason: str) -> None:
    from cluster import interrupts

    interrupts.stop_from_thread(reason, cluster_gone=True)


@contextmanager
def watching(gcs_address: str | None = None) -> Iterator[HeadWatch | None]:
    """A watch over this driver's Ray head (its GCS address asked of Ray when not given) for the block: a run's
    scheduling loop. None when Ray names no GCS address."""
    if gcs_address is None:
        import ray

        try:
            gcs_address = ray.get_runtime_context().gcs_address
        except Exception:
            gcs_address = None
    if not gcs_address:
        yield None
        return
    from cluster import interrupts

    interrupts.clear_stop()  # an earlier run's stop in this process is not this one's
    w = HeadWatch(gcs_address).start()
    try:
        yield w
    finally:
        w.close()
