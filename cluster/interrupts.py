"""SIGINT and SIGTERM end a run the same way: a KeyboardInterrupt the run turns into a clean stop.

Ray's `ray.init` installs its own SIGTERM handler (`sys.exit`), which would skip the run's bookkeeping;
`install` is called again after Ray starts. During the final bookkeeping both signals are held back, so a
second Ctrl-C cannot cut the manifest write in half.

The run may also stop itself (`Stopped`): no progress for `ray.stall_timeout_s`, or the Ray head lost. It is
handled as an interrupt (what finished is saved, the manifest says `interrupted`, a rerun resumes), with its
reason said first on the run's last line and its own exit code (`STOPPED_EXIT`, 75: EX_TEMPFAIL, "try again").
A watcher thread asks for it with `stop_from_thread`, which interrupts the main thread as Ctrl-C does: Ray's
blocking waits in the main thread check for signals, so the stop lands within one wait.
"""

from __future__ import annotations

import _thread
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C so one handler covers both."""


STOPPED_EXIT = 75


class Stopped(KeyboardInterrupt):
    """The run stopped itself; `reason` is one line. `cluster_gone`: Ray's head is lost, so nothing may ask
    it anything on the way out (each call would wait for Ray's own reconnect timeout)."""

    def __init__(self, reason: str, *, cluster_gone: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.cluster_gone = cluster_gone


# A stop asked for by a watcher thread: (reason, cluster_gone); the SIGINT handler raises it as `Stopped`.
_stop: list[tuple[str, bool]] = []


def stop_from_thread(reason: str, *, cluster_gone: bool = False) -> None:
    """Stop the run from another thread: the main thread raises `Stopped(reason)` (through its SIGINT handler,
    so a wait that Ctrl-C would end ends too)."""
    if not _stop:
        _stop.append((reason, cluster_gone))
    _thread.interrupt_main(signal.SIGINT)


def clear_stop() -> None:
    """Forget a stop asked for earlier in this process (a new run starts watching)."""
    _stop.clear()


def stopped(e: BaseException) -> Stopped | None:
    """The run's own stop behind an interrupt, if it was one (Ray may re-raise it as a plain KeyboardInterrupt)."""
    if isinstance(e, Stopped):
        return e
    if _stop:
        return Stopped(_stop[0][0], cluster_gone=_stop[0][1])
    return None


# The signal that ended the run: Ray's blocking calls may turn the handler's exception into a plain
# KeyboardInterrupt, so the exception's type alone cannot tell SIGTERM from SIGINT.
_received: list[int] = []


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    _received.append(signum)
    raise Terminated()


def _on_sigint(signum: int, frame: FrameType | None) -> None:
    if _stop:  # not a signal from outside: a watcher thread stopping the run (`stop_from_thread`)
        raise Stopped(_stop[0][0], cluster_gone=_stop[0][1])
    _received.append(signum)
    raise KeyboardInterrupt()


def install() -> None:
    """SIGTERM raises Terminated and SIGINT KeyboardInterrupt in the main thread (a no-op elsewhere)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _on_sigterm)
        signal.signal(signal.SIGINT, _on_sigint)


@contextmanager
def deferred() -> Iterator[None]:
    """Ignore SIGINT and SIGTERM for the block (the last writes of an interrupted run)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def exit_code(e: BaseException) -> int:
    """The shell's convention: 128 + the signal number; a stop the run decided itself: STOPPED_EXIT."""
    if stopped(e) is not None and not _received:
        return STOPPED_EXIT
    if _received:
        return 128 + _received[0]
    return 128 + (signal.SIGTERM if isinstance(e, Terminated) else signal.SIGINT)
